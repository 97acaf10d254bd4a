//! memory_viz's main view, the allocation timeline: every live block a band stacked over
//! event ids. A window of millions of events holds more blocks than pixels, so, like
//! memory_viz's detail slider, the `top` largest blocks live in the window are kept exactly
//! and the rest fold into one band per key (a category, or "other blocks").
//!
//! Columns divide the window as the counter timeline's buckets do
//! ([`pt_snap_query::bucket_index`]). A block is in every column holding an event after
//! which it is live, so a column many events wide stacks every block live at some event of
//! it: at one event per column the stack's height is exactly the live bytes there, the
//! `active` counter (a block is live until its free completes).

use pt_snap_query::{bucket_index, Lifetime};
use serde::{Deserialize, Serialize};

/// What a band's colour tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Colour {
    /// The allocation site: one colour per callstack, the folded blocks in one band.
    Site,
    /// The memory category of the allocation stack (`pt_snap_query::category`), the folded
    /// blocks in one band per category.
    Category,
}

/// Which window, how finely, and how many blocks to keep exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocationRequest {
    /// Inclusive event ids; the device's whole trace when `None`.
    pub window: Option<(i64, i64)>,
    pub columns: usize,
    pub top: usize,
}

/// One block kept exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Band {
    pub block: Lifetime,
    /// Its colour class (an index of [`Allocations::keys`]).
    pub key: u16,
    /// The first and last column it is live in.
    pub columns: (u32, u32),
}

/// What fills one column, bottom up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    /// The folded blocks of a key.
    Rest(u16),
    /// A kept block (an index of [`Allocations::bands`]).
    Band(usize),
}

/// The window's blocks, ready to stack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Allocations {
    /// The device's first and last real events.
    pub bounds: Option<(i64, i64)>,
    /// The window drawn; `None` when the device has no event.
    pub window: Option<(i64, i64)>,
    pub columns: usize,
    /// The names of the colour classes.
    pub keys: Vec<String>,
    /// The kept blocks in stacking order: allocation order, blocks from before the trace
    /// first.
    pub bands: Vec<Band>,
    /// Per key, the folded blocks' bytes in each column.
    pub rest: Vec<Vec<i64>>,
    /// Blocks live somewhere in the window, kept or folded.
    pub live_blocks: u64,
}

/// Cuts `blocks` to the window: the `top` largest kept (ties to the lower block id), the
/// rest folded per `key_of`.
pub fn allocations(
    blocks: &[Lifetime],
    bounds: Option<(i64, i64)>,
    req: &AllocationRequest,
    keys: Vec<String>,
    key_of: impl Fn(&Lifetime) -> u16,
) -> Allocations {
    let mut out = Allocations {
        bounds,
        window: None,
        columns: req.columns,
        rest: vec![Vec::new(); keys.len()],
        keys,
        bands: Vec::new(),
        live_blocks: 0,
    };
    let Some((first, last)) = bounds else {
        return out;
    };
    let (lo, hi) = req
        .window
        .map_or((first, last), |(a, b)| (a.max(first), b.min(last)));
    if lo > hi || req.columns == 0 {
        return out;
    }
    out.window = Some((lo, hi));
    let column = |e: i64| bucket_index((lo, hi), req.columns, e).unwrap_or(0) as u32;
    let span = |b: &Lifetime| {
        let end = if b.free == -1 {
            hi
        } else {
            (b.free - 1).min(hi)
        };
        let start = if b.alloc == -1 { lo } else { b.alloc.max(lo) };
        (column(start), column(end))
    };
    let mut live: Vec<&Lifetime> = blocks.iter().filter(|b| b.overlaps(lo, hi)).collect();
    out.live_blocks = live.len() as u64;
    let by_size = |a: &&Lifetime, b: &&Lifetime| b.size.cmp(&a.size).then(a.block.cmp(&b.block));
    let kept = req.top.min(live.len());
    if kept < live.len() {
        live.select_nth_unstable_by(kept, by_size);
    }
    let (top, folded) = live.split_at(kept);
    let mut bands: Vec<Band> = top
        .iter()
        .map(|b| Band {
            block: **b,
            key: key_of(b),
            columns: span(b),
        })
        .collect();
    bands.sort_by_key(|b| (b.block.alloc, b.block.block));
    out.bands = bands;
    let mut diff = vec![vec![0i64; req.columns + 1]; out.keys.len()];
    for b in folded {
        let key = usize::from(key_of(b)).min(out.keys.len().saturating_sub(1));
        if let Some(d) = diff.get_mut(key) {
            let (c0, c1) = span(b);
            d[c0 as usize] += b.size;
            d[c1 as usize + 1] -= b.size;
        }
    }
    out.rest = diff
        .into_iter()
        .map(|d| {
            let mut sum = 0;
            d[..req.columns]
                .iter()
                .map(|x| {
                    sum += x;
                    sum
                })
                .collect()
        })
        .collect();
    out
}

impl Allocations {
    /// Column `c`'s stack, bottom up: each folded key, then the kept blocks live there, each
    /// with the bytes it spans (`[from, to)`).
    pub fn stack_at(&self, c: usize) -> Vec<(Item, i64, i64)> {
        let mut out = Vec::new();
        let mut at = 0;
        for (k, rest) in self.rest.iter().enumerate() {
            let bytes = rest.get(c).copied().unwrap_or(0);
            if bytes > 0 {
                out.push((Item::Rest(k as u16), at, at + bytes));
                at += bytes;
            }
        }
        for (i, b) in self.bands.iter().enumerate() {
            if (b.columns.0 as usize..=b.columns.1 as usize).contains(&c) {
                out.push((Item::Band(i), at, at + b.block.size));
                at += b.block.size;
            }
        }
        out
    }

    /// Every column's stack at once: `f(column, item, from, to)` for each item of each
    /// column, bottom up within a column as [`Allocations::stack_at`] gives it (columns
    /// interleaved). One pass over the bands, each over its own run of columns, so a chart
    /// costs the items it draws rather than every band for every column. Gives the highest
    /// stack.
    pub fn each_stacked(&self, mut f: impl FnMut(usize, Item, i64, i64)) -> i64 {
        let mut at = vec![0i64; self.columns];
        for (k, rest) in self.rest.iter().enumerate() {
            for (c, &bytes) in rest.iter().enumerate().take(self.columns) {
                if bytes > 0 {
                    f(c, Item::Rest(k as u16), at[c], at[c] + bytes);
                    at[c] += bytes;
                }
            }
        }
        for (i, b) in self.bands.iter().enumerate() {
            let first = b.columns.0 as usize;
            let last = (b.columns.1 as usize).min(self.columns.saturating_sub(1));
            for (c, height) in at.iter_mut().enumerate().take(last + 1).skip(first) {
                f(c, Item::Band(i), *height, *height + b.block.size);
                *height += b.block.size;
            }
        }
        at.into_iter().max().unwrap_or(0)
    }

    /// The highest stack of any column: the chart's scale.
    pub fn top(&self) -> i64 {
        self.each_stacked(|_, _, _, _| {})
    }

    /// The events column `c` covers.
    pub fn column_events(&self, c: usize) -> Option<(i64, i64)> {
        let (lo, hi) = self.window?;
        let span = (hi - lo + 1) as i128;
        let n = self.columns as i128;
        // The first event of a column is the smallest e with (e - lo)·n / span ≥ c.
        let first = |c: i128| lo as i128 + (c * span + n - 1) / n;
        let (a, b) = (first(c as i128), first(c as i128 + 1) - 1);
        (a <= b).then_some((a as i64, b as i64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(block: i64, size: i64, alloc: i64, free: i64) -> Lifetime {
        Lifetime {
            block,
            address: block * 1000,
            size,
            alloc,
            free,
            callstack: Some(block % 2),
            state: None,
        }
    }

    #[test]
    fn the_largest_are_kept_and_the_rest_fold_per_key() {
        let blocks = [
            block(1, 100, -1, -1),
            block(2, 10, 0, 5),
            block(3, 50, 2, 8),
            block(4, 7, 3, -1),
            block(5, 1000, 12, 14),
        ];
        let req = AllocationRequest {
            window: None,
            columns: 10,
            top: 2,
        };
        let a = allocations(
            &blocks,
            Some((0, 9)),
            &req,
            vec!["even".into(), "odd".into()],
            |b| (b.block % 2) as u16,
        );
        assert_eq!(a.window, Some((0, 9)));
        assert_eq!(a.live_blocks, 4, "block 5 is after the window");
        let kept: Vec<i64> = a.bands.iter().map(|b| b.block.block).collect();
        assert_eq!(kept, [1, 3], "the two largest, in allocation order");
        assert_eq!(a.bands[1].columns, (2, 7), "live after events 2..=7");
        // Folded: block 2 (even) at columns 0..=4, block 4 (even) from 3 on.
        assert_eq!(a.rest[0], [10, 10, 10, 17, 17, 7, 7, 7, 7, 7]);
        assert_eq!(a.rest[1], [0; 10]);
        // One event per column: each stack is the live bytes after that event.
        for c in 0..10 {
            let (e, _) = a.column_events(c).unwrap();
            let live: i64 = blocks.iter().filter(|b| b.live_at(e)).map(|b| b.size).sum();
            assert_eq!(a.stack_at(c).last().map_or(0, |s| s.2), live, "column {c}");
        }
        assert_eq!(a.top(), 100 + 50 + 17);
    }

    #[test]
    fn columns_cover_the_window_without_gaps() {
        let a = allocations(
            &[],
            Some((5, 104)),
            &AllocationRequest {
                window: Some((10, 40)),
                columns: 7,
                top: 1,
            },
            vec!["other".into()],
            |_| 0,
        );
        let mut next = 10;
        for c in 0..7 {
            let (x, y) = a.column_events(c).unwrap();
            assert_eq!(x, next);
            for e in x..=y {
                assert_eq!(bucket_index((10, 40), 7, e), Some(c));
            }
            next = y + 1;
        }
        assert_eq!(next, 41);
        for outside in [9, 41, -1] {
            assert_eq!(bucket_index((10, 40), 7, outside), None, "{outside}");
        }
    }

    #[test]
    fn every_stack_at_once_is_each_column_stacked() {
        let blocks: Vec<Lifetime> = (0..40)
            .map(|i| {
                block(
                    i,
                    10 + (i * 37) % 90,
                    (i * 7) % 30 - 3,
                    [-1, 35, 12][i as usize % 3],
                )
            })
            .collect();
        for top in [0, 5, 100] {
            let req = AllocationRequest {
                window: None,
                columns: 17,
                top,
            };
            let a = allocations(
                &blocks,
                Some((0, 39)),
                &req,
                vec!["a".into(), "b".into()],
                |b| (b.block % 2) as u16,
            );
            let mut columns = vec![Vec::new(); a.columns];
            let top_at_once = a.each_stacked(|c, item, from, to| columns[c].push((item, from, to)));
            for (c, stack) in columns.iter().enumerate() {
                assert_eq!(stack, &a.stack_at(c), "top {top}, column {c}");
            }
            let highest = (0..a.columns)
                .map(|c| a.stack_at(c).last().map_or(0, |s| s.2))
                .max();
            assert_eq!(Some(top_at_once), highest.or(Some(0)), "top {top}");
            assert!(
                columns.iter().any(|s| s.len() >= 2),
                "top {top}: the case stacks something: {columns:?}"
            );
        }
    }
}
