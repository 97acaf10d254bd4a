//! Work on the files of a set, a few at a time: each of `jobs` scoped threads takes the next
//! file not yet taken, so one large file does not hold up the rest, and a panic (a bug)
//! fails its own file only, so the other ranks of a large set still get their answers.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use pt_snap_contract::Failure;

/// `work(i, item)` for every item on `jobs` threads (default: one per core), the answers in
/// the items' order; `done(n)` is told, on the calling thread, each time `n` answers are in.
pub fn run<I: Sync, T: Send>(
    items: &[I],
    jobs: Option<usize>,
    done: impl Fn(usize),
    work: impl Fn(usize, &I) -> T + Sync,
) -> Vec<T> {
    if items.is_empty() {
        return Vec::new();
    }
    let jobs = jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, items.len());
    let mut answers: Vec<Option<T>> = (0..items.len()).map(|_| None).collect();
    let next = AtomicUsize::new(0);
    let (sender, results) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let sender = sender.clone();
            let (next, work) = (&next, &work);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                if sender.send((i, work(i, item))).is_err() {
                    break;
                }
            });
        }
        drop(sender);
        for (n, (i, answer)) in results.iter().enumerate() {
            answers[i] = Some(answer);
            done(n + 1);
        }
    });
    answers
        .into_iter()
        .map(|a| a.expect("every worker answers every item it takes"))
        .collect()
}

/// `work`, where a panic becomes an internal failure naming what was being done
/// (`internal error while <doing>: <panic>`) rather than ending the whole command.
pub fn panic_as_failure<T>(
    doing: &str,
    work: impl FnOnce() -> Result<T, Failure>,
) -> Result<T, Failure> {
    std::panic::catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("a panic");
        Err(Failure::new(
            pt_snap_contract::ErrorCode::Other,
            format!("internal error while {doing}: {what}"),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_keep_the_items_order_and_a_panic_fails_one_item() {
        let items: Vec<u32> = (0..20).collect();
        let seen = std::cell::Cell::new(0);
        let answers = run(
            &items,
            Some(3),
            |n| seen.set(n),
            |i, &x| {
                panic_as_failure(&format!("item {i}"), || {
                    assert!(x != 7, "seven");
                    Ok(x * 2)
                })
            },
        );
        assert_eq!(seen.get(), 20);
        for (i, a) in answers.iter().enumerate() {
            match a {
                Ok(v) => assert_eq!(*v, 2 * i as u32),
                Err(e) => {
                    assert_eq!(i, 7);
                    assert_eq!(e.message, "internal error while item 7: seven");
                }
            }
        }
        assert!(run(&Vec::<u32>::new(), None, |_| {}, |_, _| 0).is_empty());
    }
}
