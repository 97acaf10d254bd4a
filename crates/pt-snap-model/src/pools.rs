//! The memory pools trace entries name, and how the trace was buffered.
//!
//! PyTorch ≥ 2.12 (pytorch#177717) writes each trace entry's `pool_id`, the `(owner, id)`
//! pair its segments have long carried as `segment_pool_id`: `(0, 0)` is the default pool,
//! anything else a private pool (a CUDA graph's, a `MemPool`'s). A trace runs in one pool
//! for long stretches, so the ids are kept as runs of trace positions, like the times
//! ([`crate::EventTimes`]), and cost the 56-byte events nothing.

/// A memory pool: `(owner, id)`, as `segment_pool_id` and `pool_id` write it.
pub type PoolId = (i64, i64);

/// Which trace entries of one device carry a `pool_id`, and which.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventPools {
    /// `(first position, pool)`: from that position up to the next run's, entries carry
    /// this pool id, or none (`None`). Positions before the first run carry none;
    /// consecutive runs differ, and the first is never `None`. Empty: no entry has one.
    runs: Vec<(usize, Option<PoolId>)>,
}

impl EventPools {
    /// No entry has a pool id.
    pub const NONE: EventPools = EventPools { runs: Vec::new() };

    /// Whether no entry has a pool id (every trace before pytorch#177717).
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The pool id of the entry at `position`, if it has one.
    pub fn get(&self, position: usize) -> Option<PoolId> {
        let k = self.runs.partition_point(|r| r.0 <= position);
        k.checked_sub(1).and_then(|k| self.runs[k].1)
    }

    /// Every entry's pool id in trace order, for a trace of `len` entries.
    pub fn iter(&self, len: usize) -> impl Iterator<Item = Option<PoolId>> + '_ {
        let mut next_run = 0;
        let mut pool = None;
        (0..len).map(move |position| {
            while let Some(&(start, p)) = self.runs.get(next_run) {
                if start > position {
                    break;
                }
                pool = p;
                next_run += 1;
            }
            pool
        })
    }
}

/// Builds the [`EventPools`] of a trace one entry at a time.
#[derive(Debug, Default)]
pub struct EventPoolsBuilder {
    runs: Vec<(usize, Option<PoolId>)>,
    len: usize,
}

impl EventPoolsBuilder {
    pub fn push(&mut self, pool: Option<PoolId>) {
        if pool != self.runs.last().and_then(|r| r.1) {
            self.runs.push((self.len, pool));
        }
        self.len += 1;
    }

    pub fn finish(self) -> EventPools {
        EventPools { runs: self.runs }
    }
}

/// What `allocator_settings` says about the trace's ring buffer (pytorch#179276):
/// `trace_alloc_overflowed` (older entries were overwritten, so the trace starts mid-way
/// through the run) and `trace_alloc_max_entries` (the buffer's length). PyTorch's
/// `process_alloc_data.js` reads both from `allocator_settings`; the pull request calls them
/// per device, so each is read either as one value for every device or as a list indexed
/// by device (or a dict keyed by it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceBuffer {
    pub overflowed: Option<PerDevice<bool>>,
    pub max_entries: Option<PerDevice<i64>>,
}

/// One value for every device, or one per device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PerDevice<T> {
    All(T),
    /// Indexed by device ordinal; `None` where the file gives no usable value.
    Each(Vec<Option<T>>),
}

impl<T: Copy> PerDevice<T> {
    pub fn get(&self, device: usize) -> Option<T> {
        match self {
            PerDevice::All(v) => Some(*v),
            PerDevice::Each(v) => v.get(device).copied().flatten(),
        }
    }
}

impl TraceBuffer {
    /// Whether the file says `device`'s ring buffer overflowed; `None` when it does not say.
    pub fn overflowed(&self, device: usize) -> Option<bool> {
        self.overflowed.as_ref().and_then(|o| o.get(device))
    }

    pub fn max_entries(&self, device: usize) -> Option<i64> {
        self.max_entries.as_ref().and_then(|m| m.get(device))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_round_trip_by_position_and_in_order() {
        let cases: Vec<Vec<Option<PoolId>>> = vec![
            vec![],
            vec![None, None],
            vec![Some((0, 0)); 5],
            vec![
                None,
                Some((0, 0)),
                Some((1, 2)),
                Some((1, 2)),
                None,
                Some((0, 0)),
            ],
        ];
        for pools in cases {
            let mut b = EventPoolsBuilder::default();
            pools.iter().for_each(|p| b.push(*p));
            let built = b.finish();
            assert_eq!(built.iter(pools.len()).collect::<Vec<_>>(), pools);
            let by_position: Vec<_> = (0..pools.len()).map(|p| built.get(p)).collect();
            assert_eq!(by_position, pools);
            assert_eq!(built.is_empty(), pools.iter().all(Option::is_none));
        }
        let mut b = EventPoolsBuilder::default();
        (0..1000).for_each(|_| b.push(Some((0, 0))));
        assert_eq!(b.finish().runs.len(), 1);
    }

    #[test]
    fn a_setting_is_for_every_device_or_by_ordinal() {
        let all = TraceBuffer {
            overflowed: Some(PerDevice::All(true)),
            max_entries: Some(PerDevice::Each(vec![Some(10), None])),
        };
        assert_eq!(
            (all.overflowed(0), all.overflowed(7)),
            (Some(true), Some(true))
        );
        assert_eq!(
            (all.max_entries(0), all.max_entries(1), all.max_entries(2)),
            (Some(10), None, None)
        );
        assert_eq!(TraceBuffer::default().overflowed(0), None);
    }
}
