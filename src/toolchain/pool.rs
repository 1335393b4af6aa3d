//! A fixed number of worker threads over a list of jobs (runner builds, twin runs, compiler
//! checks): each worker takes the next job until none is left; the results come back in the
//! jobs' order, whatever order they finished in.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `run` over every item on `workers` threads (at least one, at most one per item); the
/// results in the items' order.
pub fn map_in_order<T: Sync, R: Send>(items: &[T], workers: usize, run: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..workers.clamp(1, items.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let result = run(item);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(result);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every item is run by a worker"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_the_items_order_on_any_worker_count() {
        let items: Vec<u64> = (0..50).collect();
        for workers in [0, 1, 3, 64] {
            // Later items finish first: the order must not follow completion.
            let out = map_in_order(&items, workers, |&i| {
                std::thread::sleep(std::time::Duration::from_micros(50 * (50 - i)));
                i * i
            });
            assert_eq!(out, items.iter().map(|i| i * i).collect::<Vec<_>>(), "{workers} workers");
        }
        assert!(map_in_order(&[] as &[u8], 2, |_| 0).is_empty());
    }
}
