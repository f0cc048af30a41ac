//! Max-min water-fill: how the batch finalizer shares one budget among many text slots
//! (SPEC §8.3 step 2). Pure and synchronous.
//!
//! # Unweighted ([`allocate`])
//! Exactly the SPEC's rounds: `remaining = budget`, all slots active. Each round,
//! `share = floor(remaining / active)`; every active slot whose length ≤ share keeps its full
//! length and leaves (all of them in the same round). When no active slot fits, each gets
//! `share` and the leftover `remaining − share × active` goes one unit at a time to the
//! earliest active slots. The result sums to `min(total, budget)`.
//!
//! Implemented over the slots sorted by length: the slots that leave in a round are always
//! the shortest active ones, so every round removes a prefix of the sorted order and the whole
//! allocation costs O(n log n) instead of O(n²).
//!
//! # Weighted ([`allocate_weighted`])
//! Each slot has a `weight` (default 1; 0 is read as 1) and a `min_share` (default 0).
//! The allocation is the max-min fair one with floors: there is a water level λ, and
//! `alloc_i = clamp(floor(λ · weight_i), floor_i, length_i)` where
//! `floor_i = min(min_share_i, length_i)`. So shares grow in proportion to weight, a slot
//! never gets more than its length, and `min_share` is a floor, not a bonus: a slot whose
//! fair share is already above its minimum gets its fair share.
//!
//! In integers: λ runs over multiples of `1 / W` (W = the sum of all weights), so a slot's
//! share at step k is `floor(k · weight_i / W)`; the largest k whose clamped allocations fit
//! the budget is found by binary search. Each step raises a slot by at most one unit, so the
//! leftover is smaller than the number of slots still on the level (above their floor, below
//! their length), and it goes one unit each to the earliest of them.
//!
//! When the floors alone do not fit the budget (`Σ floor_i > budget`), the minimums cannot
//! all be honoured: the budget is then water-filled (weighted) over the floors themselves, so
//! every slot gets a fair part of what it asked for as a minimum.
//!
//! With all weights 1 and no minimums this is exactly [`allocate`]: with W = n the share at
//! step k is `floor(k / n)`, the largest level whose allocations fit is the final `share` of
//! the rounds, and the slots on that level are exactly the rounds' last active set (tested
//! by a property test below).

use std::cmp::Ordering;

/// One slot's demand for the weighted allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Demand {
    /// The slot's full length in the budget unit.
    pub length: u64,
    /// Relative share of the budget; 0 is read as 1.
    pub weight: u32,
    /// The allocation the slot gets before any slot grows past it, when the budget allows.
    pub min_share: u64,
}

impl Demand {
    #[cfg(test)]
    /// A demand with weight 1 and no minimum.
    pub fn new(length: u64) -> Self {
        Self {
            length,
            weight: 1,
            min_share: 0,
        }
    }
}

#[cfg(test)]
/// Max-min water-fill of `budget` over slots of `lengths` (SPEC §8.3 step 2).
///
/// Returns one allocation per slot, in input order; each ≤ its length, summing to
/// `min(Σ lengths, budget)`.
pub fn allocate(lengths: &[u64], budget: u64) -> Vec<u64> {
    let total = lengths
        .iter()
        .fold(0u64, |acc, &len| acc.saturating_add(len));
    if total <= budget {
        return lengths.to_vec();
    }
    let mut alloc = vec![0u64; lengths.len()];
    // Indices sorted by length (ties by index): the slots leaving a round are a prefix.
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&i| (lengths[i], i));
    let mut remaining = budget;
    let mut first_active = 0;
    while first_active < order.len() {
        let active = to_u64(order.len() - first_active);
        let share = remaining / active;
        let leaving = order[first_active..]
            .iter()
            .take_while(|&&i| lengths[i] <= share)
            .count();
        if leaving == 0 {
            let mut active_slots: Vec<usize> = order[first_active..].to_vec();
            active_slots.sort_unstable();
            let leftover = remaining - share * active;
            for (rank, &i) in active_slots.iter().enumerate() {
                alloc[i] = share + u64::from(to_u64(rank) < leftover);
            }
            return alloc;
        }
        for &i in &order[first_active..first_active + leaving] {
            alloc[i] = lengths[i];
            // INVARIANT: lengths[i] ≤ share ≤ remaining / active, so this never underflows.
            remaining -= lengths[i];
        }
        first_active += leaving;
    }
    alloc
}

/// Weighted max-min water-fill with per-slot floors; see the module documentation.
///
/// Returns one allocation per demand, in input order; each ≤ its length, summing to
/// `min(Σ lengths, budget)`.
pub fn allocate_weighted(demands: &[Demand], budget: u64) -> Vec<u64> {
    let total = demands
        .iter()
        .fold(0u64, |acc, d| acc.saturating_add(d.length));
    if total <= budget {
        return demands.iter().map(|d| d.length).collect();
    }
    let floors_total = demands
        .iter()
        .fold(0u64, |acc, d| acc.saturating_add(d.min_share.min(d.length)));
    if floors_total > budget {
        // The minimums cannot all be honoured: share the budget over the minimums alone.
        let over_floors: Vec<Demand> = demands
            .iter()
            .map(|d| Demand {
                length: d.min_share.min(d.length),
                weight: d.weight,
                min_share: 0,
            })
            .collect();
        return level_fill(&over_floors, budget);
    }
    level_fill(demands, budget)
}

/// The level search behind [`allocate_weighted`]. Precondition: the floors fit the budget
/// and the lengths do not.
fn level_fill(demands: &[Demand], budget: u64) -> Vec<u64> {
    let weight_sum: u128 = demands.iter().map(|d| u128::from(weight(d))).sum();
    if weight_sum == 0 {
        return Vec::new();
    }
    // At k_max every slot's level reaches its length, so the answer lies in [0, k_max].
    let k_max = demands
        .iter()
        .map(|d| (u128::from(d.length) * weight_sum).div_ceil(u128::from(weight(d))))
        .max()
        .unwrap_or(0);
    let fits = |k: u128| sum_at(demands, k, weight_sum) <= u128::from(budget);
    // Largest k with fits(k); fits(0) holds because the floors fit.
    let (mut lo, mut hi) = (0u128, k_max);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let k = lo;
    let mut alloc: Vec<u64> = demands
        .iter()
        .map(|d| clamped(d, level(d, k, weight_sum)))
        .collect();
    let used: u64 = alloc.iter().fold(0u64, |acc, &a| acc.saturating_add(a));
    let mut leftover = budget.saturating_sub(used);
    for (slot, d) in alloc.iter_mut().zip(demands) {
        if leftover == 0 {
            break;
        }
        let on_level = level(d, k, weight_sum);
        let floor = d.min_share.min(d.length);
        // Slots on the level: not held up by their floor, not yet at their length.
        if on_level >= u128::from(floor) && on_level < u128::from(d.length) {
            *slot += 1;
            leftover -= 1;
        }
    }
    alloc
}

fn weight(d: &Demand) -> u32 {
    d.weight.max(1)
}

/// The level of a slot at step k: `floor(k · weight / W)`.
fn level(d: &Demand, k: u128, weight_sum: u128) -> u128 {
    k.saturating_mul(u128::from(weight(d))) / weight_sum
}

fn clamped(d: &Demand, level: u128) -> u64 {
    let floor = d.min_share.min(d.length);
    let capped = match level.cmp(&u128::from(d.length)) {
        Ordering::Less => u64::try_from(level).unwrap_or(d.length),
        Ordering::Equal | Ordering::Greater => d.length,
    };
    capped.max(floor)
}

fn sum_at(demands: &[Demand], k: u128, weight_sum: u128) -> u128 {
    demands
        .iter()
        .map(|d| u128::from(clamped(d, level(d, k, weight_sum))))
        .sum()
}

#[cfg(test)]
fn to_u64(value: usize) -> u64 {
    u64::try_from(value).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn published_examples() {
        let table: [(&[u64], u64, &[u64]); 3] = [
            (&[1000, 2], 100, &[98, 2]),
            (&[7048, 7048], 10_000, &[5000, 5000]),
            (&[4000, 4000, 4000], 3000, &[1000, 1000, 1000]),
        ];
        for (lengths, budget, want) in table {
            assert_eq!(allocate(lengths, budget), want, "{lengths:?} / {budget}");
            let demands: Vec<Demand> = lengths.iter().map(|&l| Demand::new(l)).collect();
            assert_eq!(allocate_weighted(&demands, budget), want);
        }
    }

    #[test]
    fn allocation_table() {
        let table: [(&[u64], u64, &[u64]); 9] = [
            (&[], 10, &[]),
            (&[5, 5], 100, &[5, 5]),
            (&[5, 5], 10, &[5, 5]),
            (&[10, 10, 10], 10, &[4, 3, 3]),
            (&[10, 1, 10], 10, &[5, 1, 4]),
            (&[3, 100, 4, 100], 20, &[3, 7, 4, 6]),
            (&[0, 50], 10, &[0, 10]),
            (&[50, 50], 0, &[0, 0]),
            // Slots that fit leave in the same round, which frees budget for the rest.
            (&[2, 2, 100, 100], 10, &[2, 2, 3, 3]),
        ];
        for (lengths, budget, want) in table {
            assert_eq!(allocate(lengths, budget), want, "{lengths:?} / {budget}");
        }
    }

    #[test]
    fn weighted_table() {
        let d = |length, weight, min_share| Demand {
            length,
            weight,
            min_share,
        };
        let table: Vec<(Vec<Demand>, u64, Vec<u64>)> = vec![
            // Shares grow in proportion to weight.
            (vec![d(100, 1, 0), d(100, 3, 0)], 40, vec![10, 30]),
            (vec![d(100, 1, 0), d(100, 3, 0)], 10, vec![2, 8]),
            // A satisfied slot frees budget for the others.
            (
                vec![d(5, 1, 0), d(100, 1, 0), d(100, 2, 0)],
                35,
                vec![5, 10, 20],
            ),
            // The minimum is a floor, not a bonus.
            (vec![d(100, 1, 30), d(100, 1, 0)], 40, vec![30, 10]),
            (vec![d(100, 1, 10), d(100, 1, 0)], 40, vec![20, 20]),
            // A minimum never exceeds the slot's length.
            (vec![d(5, 1, 30), d(100, 1, 0)], 40, vec![5, 35]),
            // Minimums that do not fit are water-filled among themselves.
            (
                vec![d(100, 1, 30), d(100, 1, 30), d(100, 1, 0)],
                40,
                vec![20, 20, 0],
            ),
            // Weight 0 counts as 1.
            (vec![d(100, 0, 0), d(100, 1, 0)], 10, vec![5, 5]),
        ];
        for (demands, budget, want) in table {
            assert_eq!(
                allocate_weighted(&demands, budget),
                want,
                "{demands:?} / {budget}"
            );
        }
    }

    fn lengths() -> impl Strategy<Value = Vec<u64>> {
        prop::collection::vec(
            prop_oneof![0u64..10, 0u64..1000, 0u64..100_000, Just(u64::MAX / 8)],
            0..12,
        )
    }

    fn check(lengths: &[u64], budget: u64, alloc: &[u64]) -> Result<(), TestCaseError> {
        prop_assert_eq!(alloc.len(), lengths.len());
        let total: u128 = lengths.iter().map(|&l| u128::from(l)).sum();
        let sum: u128 = alloc.iter().map(|&a| u128::from(a)).sum();
        prop_assert_eq!(sum, total.min(u128::from(budget)));
        for (a, l) in alloc.iter().zip(lengths) {
            prop_assert!(a <= l);
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn allocations_sum_to_the_smaller_of_total_and_budget(
            lengths in lengths(), budget in prop_oneof![0u64..50, 0u64..200_000],
        ) {
            let alloc = allocate(&lengths, budget);
            check(&lengths, budget, &alloc)?;
            // A slot no longer than the smallest allocation is untouched.
            if let Some(&smallest) = alloc.iter().min() {
                for (a, l) in alloc.iter().zip(&lengths) {
                    if *l <= smallest {
                        prop_assert_eq!(a, l);
                    }
                }
            }
            // Max-min: a cut slot gets at least as much as any other slot, minus one unit.
            let max = alloc.iter().copied().max().unwrap_or(0);
            for (a, l) in alloc.iter().zip(&lengths) {
                if a < l {
                    prop_assert!(a + 1 >= max);
                }
            }
        }

        #[test]
        fn weighted_with_weights_one_is_unweighted(
            lengths in lengths(), budget in prop_oneof![0u64..50, 0u64..200_000],
        ) {
            let demands: Vec<Demand> = lengths.iter().map(|&l| Demand::new(l)).collect();
            prop_assert_eq!(allocate_weighted(&demands, budget), allocate(&lengths, budget));
        }

        #[test]
        fn weighted_allocations_hold_their_invariants(
            demands in prop::collection::vec(
                (0u64..5000, 0u32..5, prop_oneof![Just(0u64), 0u64..3000])
                    .prop_map(|(length, weight, min_share)| Demand { length, weight, min_share }),
                0..10,
            ),
            budget in 0u64..20_000,
        ) {
            let alloc = allocate_weighted(&demands, budget);
            let lengths: Vec<u64> = demands.iter().map(|d| d.length).collect();
            check(&lengths, budget, &alloc)?;
            let floors: u64 = demands.iter().map(|d| d.min_share.min(d.length)).sum();
            if floors <= budget {
                for (a, d) in alloc.iter().zip(&demands) {
                    prop_assert!(*a >= d.min_share.min(d.length));
                }
            }
        }
    }
}
