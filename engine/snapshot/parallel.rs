//! A small order-preserving parallel map for the independent, CPU-bound steps of a load
//! (reading, parsing and schema-checking each file, compiling each rule and each input
//! schema). (Planning a large batch has its own split, in `executor::plan`, which moves less.)
//! Plain `std::thread::scope` workers take items from a shared counter (so one slow item does
//! not idle the other workers) and the results come back in input order, so diagnostics and
//! compiled values stay deterministic. [`for_each_in_order`] hands the results, in order, to
//! a fold on the calling thread while the rest are still being computed (the merge of a
//! load's files overlaps their parsing).

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

/// Below this many items a load runs on the calling thread: spawning costs more than it saves.
const MIN_ITEMS_PER_THREAD: usize = 8;

/// How many threads `len` items get: one per core, as long as each gets `min_per_thread`.
fn threads_for(len: usize, min_per_thread: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    cores.min(len / min_per_thread.max(1)).max(1)
}

/// `items.iter().map(f).collect()`, on up to as many threads as the machine has cores.
pub fn map<T, R, F>(items: &[T], f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    map_chunks(items, 1, MIN_ITEMS_PER_THREAD, f)
}

/// Like [`map`], for many cheap items: workers claim `chunk` items at a time (one atomic
/// operation per chunk rather than per item), and the work stays on the calling thread
/// unless every thread gets at least `min_per_thread` items.
pub fn map_chunks<T, R, F>(items: &[T], chunk: usize, min_per_thread: usize, f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    let chunk = chunk.max(1);
    let threads = threads_for(items.len(), min_per_thread);
    if threads == 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done: Vec<(usize, Vec<R>)> = Vec::new();
        loop {
            let index = next.fetch_add(1, Ordering::Relaxed);
            let start = index.saturating_mul(chunk);
            let Some(slice) = items.get(start..items.len().min(start.saturating_add(chunk))) else {
                return done;
            };
            if slice.is_empty() {
                return done;
            }
            done.push((index, slice.iter().map(&f).collect()));
        }
    };
    let mut results: Vec<(usize, Vec<R>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut all = work();
        for worker in workers {
            // A worker only panics if `f` does; re-raise it here rather than lose items.
            match worker.join() {
                Ok(done) => all.extend(done),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    });
    results.sort_unstable_by_key(|(index, _)| *index);
    let mut out = Vec::with_capacity(items.len());
    for (_, chunk) in results {
        out.extend(chunk);
    }
    out
}

/// `for (index, item) in items.iter().enumerate() { consume(index, f(item)) }`, with `f` run
/// on up to as many threads as the machine has cores and `consume` run on the calling
/// thread, in input order, as soon as a result and every one before it are ready. The
/// calling thread consumes between its own items, so an ordered fold of the results (the
/// merge of a load's files) overlaps the parallel work instead of waiting for all of it.
pub fn for_each_in_order<T, R, F, C>(items: &[T], f: F, mut consume: C)
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
    C: FnMut(usize, R),
{
    let threads = threads_for(items.len(), MIN_ITEMS_PER_THREAD);
    if threads == 1 {
        for (index, item) in items.iter().enumerate() {
            consume(index, f(item));
        }
        return;
    }
    let slots: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    let take = |index: usize| {
        slots
            .get(index)
            .and_then(|slot| slot.lock().unwrap_or_else(PoisonError::into_inner).take())
    };
    let next = AtomicUsize::new(0);
    // Runs the next unclaimed item into its slot; false when none is left.
    let run_one = || {
        let index = next.fetch_add(1, Ordering::Relaxed);
        let Some(item) = items.get(index) else {
            return false;
        };
        let result = f(item);
        if let Some(slot) = slots.get(index) {
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(result);
        }
        true
    };
    let mut consumed = 0;
    let mut drain = |consumed: &mut usize| {
        while let Some(result) = take(*consumed) {
            consume(*consumed, result);
            *consumed += 1;
        }
    };
    std::thread::scope(|scope| {
        let workers: Vec<_> = (1..threads)
            .map(|_| scope.spawn(|| while run_one() {}))
            .collect();
        while run_one() {
            drain(&mut consumed);
        }
        for worker in workers {
            // A worker only panics if `f` does; re-raise it here rather than lose items.
            if let Err(panic) = worker.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
    drain(&mut consumed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_order_of_the_input() {
        for len in [0, 1, 7, 8, 100, 1000] {
            let items: Vec<usize> = (0..len).collect();
            let squared = map(&items, |x| x * x);
            assert_eq!(squared, items.iter().map(|x| x * x).collect::<Vec<_>>());
            for chunk in [1, 3, 64, 5000] {
                let doubled = map_chunks(&items, chunk, 2, |x| x * 2);
                assert_eq!(doubled, items.iter().map(|x| x * 2).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn consumes_in_the_order_of_the_input() {
        for len in [0, 1, 7, 8, 100, 1000] {
            let items: Vec<usize> = (0..len).collect();
            let mut seen = Vec::new();
            // Uneven work, so that later items often finish first.
            for_each_in_order(
                &items,
                |x| {
                    if x % 7 == 0 {
                        std::thread::yield_now();
                    }
                    x * 3
                },
                |index, tripled| seen.push((index, tripled)),
            );
            let expected: Vec<(usize, usize)> = items.iter().map(|x| (*x, x * 3)).collect();
            assert_eq!(seen, expected);
        }
    }
}
