//! Grouping a batch (SPEC §4): consecutive concurrent calls share a group, capped at
//! `max_concurrency`; any other call closes the current group and runs alone. Pure.

use std::ops::Range;

/// How one call may be scheduled (`shared` or `alone` in a plan).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Concurrency {
    /// May share a group with other concurrent calls.
    Shared,
    /// Runs alone.
    Alone,
}

impl Concurrency {
    /// `shared` or `alone`.
    pub fn as_str(self) -> &'static str {
        match self {
            Concurrency::Shared => "shared",
            Concurrency::Alone => "alone",
        }
    }

    /// The scheduling class of a call from its contract flags: `destructive` → alone; else
    /// `concurrent_safe` decides. A call whose tool is unknown is `Shared`: it must not split
    /// a group, and it fails at lookup anyway.
    pub fn from_flags(known: bool, destructive: bool, concurrent_safe: bool) -> Self {
        match (known, destructive, concurrent_safe) {
            (false, _, _) => Concurrency::Shared,
            (true, true, _) => Concurrency::Alone,
            (true, false, true) => Concurrency::Shared,
            (true, false, false) => Concurrency::Alone,
        }
    }
}

/// Splits a batch into groups, in the model's order. Each group is a range of call indices.
///
/// INVARIANT: the ranges are contiguous, non-empty, in order, cover `0..calls.len()`
/// exactly once, and none is longer than `max(max_concurrency, 1)`.
pub fn group(calls: &[Concurrency], max_concurrency: usize) -> Vec<Range<usize>> {
    let cap = max_concurrency.max(1);
    let mut groups = Vec::new();
    let mut start = 0;
    for (index, class) in calls.iter().enumerate() {
        match class {
            Concurrency::Shared => {
                if index - start == cap {
                    groups.push(start..index);
                    start = index;
                }
            }
            Concurrency::Alone => {
                if start < index {
                    groups.push(start..index);
                }
                groups.push(index..index + 1);
                start = index + 1;
            }
        }
    }
    if start < calls.len() {
        groups.push(start..calls.len());
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::Concurrency::{Alone as A, Shared as S};
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_spec_example() {
        // Read a, Read b, Edit c, WebFetch d, Bash e, Read f → [a,b] [c] [d] [e] [f]
        assert_eq!(
            group(&[S, S, A, A, A, S], 10),
            vec![0..2, 2..3, 3..4, 4..5, 5..6]
        );
    }

    type Case = (&'static [Concurrency], usize, &'static [(usize, usize)]);

    #[test]
    fn table() {
        let cases: &[Case] = &[
            (&[], 10, &[]),
            (&[S], 10, &[(0, 1)]),
            (&[A], 10, &[(0, 1)]),
            (&[S, S, S], 2, &[(0, 2), (2, 3)]),
            (&[S, S, S, S], 2, &[(0, 2), (2, 4)]),
            (&[A, S, S, A], 10, &[(0, 1), (1, 3), (3, 4)]),
            (&[S, S, S], 0, &[(0, 1), (1, 2), (2, 3)]),
            (&[A, A], 1, &[(0, 1), (1, 2)]),
        ];
        for (calls, cap, expected) in cases {
            let got: Vec<(usize, usize)> = group(calls, *cap)
                .iter()
                .map(|r| (r.start, r.end))
                .collect();
            assert_eq!(&got, expected, "{calls:?} cap {cap}");
        }
    }

    #[test]
    fn flags_decide_the_class() {
        assert_eq!(Concurrency::from_flags(true, true, true), A);
        assert_eq!(Concurrency::from_flags(true, false, true), S);
        assert_eq!(Concurrency::from_flags(true, false, false), A);
        assert_eq!(Concurrency::from_flags(false, false, false), S);
    }

    proptest! {
        #[test]
        fn groups_cover_every_call_once_in_order(
            calls in proptest::collection::vec(prop_oneof![Just(S), Just(A)], 0..200),
            cap in 0usize..16,
        ) {
            let groups = group(&calls, cap);
            let mut next = 0;
            for range in &groups {
                prop_assert_eq!(range.start, next);
                prop_assert!(!range.is_empty());
                prop_assert!(range.len() <= cap.max(1));
                if range.len() > 1 {
                    prop_assert!(calls[range.clone()].iter().all(|c| *c == S));
                }
                next = range.end;
            }
            prop_assert_eq!(next, calls.len());
            // Maximality: two consecutive shared groups exist only because of the cap.
            for pair in groups.windows(2) {
                let (a, b) = (&pair[0], &pair[1]);
                if calls[a.clone()].iter().all(|c| *c == S) && calls[b.clone()].iter().all(|c| *c == S) {
                    prop_assert_eq!(a.len(), cap.max(1));
                }
            }
        }
    }
}
