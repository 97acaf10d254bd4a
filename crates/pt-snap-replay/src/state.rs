//! The allocator state of one device during the backward replay.

use pt_snap_model::{Action, BlockState, PoolId, Snapshot, StackId, TraceEvent};

use crate::SegmentClass;

/// `a + b`, or why the replay must stop. The reference's Python integers never wrap; SQLite's
/// INTEGER columns hold 64 bits, so a count past that is a file no allocator wrote, and must
/// fail the import rather than wrap into negative sizes and counters.
pub(crate) fn add(a: i64, b: i64) -> Result<i64, String> {
    a.checked_add(b)
        .ok_or_else(|| format!("{a} + {b} {OVERFLOWS}"))
}

/// `a - b`, checked like [`add`].
pub(crate) fn sub(a: i64, b: i64) -> Result<i64, String> {
    a.checked_sub(b)
        .ok_or_else(|| format!("{a} - {b} {OVERFLOWS}"))
}

const OVERFLOWS: &str = "overflows a 64-bit integer";

/// `[segment active, device active, device allocated]` with `block`'s size counted in
/// (`step` = [`add`]) or out ([`sub`]). Computed before anything changes, so an overflow
/// leaves the state as it was.
fn block_counted(
    step: fn(i64, i64) -> Result<i64, String>,
    [seg_active, active, allocated]: [i64; 3],
    block: &LiveBlock,
) -> Result<[i64; 3], String> {
    Ok([
        step(seg_active, block.size)?,
        step(active, block.size)?,
        if block.state == BlockState::ActiveAllocated {
            step(allocated, block.size)?
        } else {
            allocated
        },
    ])
}

/// Whether a replay failure is one of [`add`]'s or [`sub`]'s.
pub(crate) fn is_overflow(reason: &str) -> bool {
    reason.ends_with(OVERFLOWS)
}

const TOO_MANY_LIFETIMES: &str = "more than 2^32 block lifetimes on one device";

/// Where a range `[address, address + size)` ends, exactly: range tests never wrap.
fn range_end(address: i64, size: i64) -> i128 {
    i128::from(address) + i128::from(size)
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct LiveBlock {
    pub address: i64,
    pub size: i64,
    pub requested: i64,
    pub state: BlockState,
    /// The event that freed this block, once the undo of that free re-created it.
    pub free_event: i64,
    /// Identity of this block lifetime within the device's replay (unique, never reused):
    /// sharded imports follow one lifetime across slices by it.
    pub uid: u32,
}

impl LiveBlock {
    fn end(&self) -> i128 {
        range_end(self.address, self.size)
    }
}

#[derive(Debug, Clone)]
pub(crate) struct SegState {
    pub address: i64,
    pub total_size: i64,
    pub stream: i64,
    pub is_expandable: bool,
    pub frames: StackId,
    /// What the file says of its pool: the dump's `segment_type` and `segment_pool_id`, or
    /// the `pool_id` of the trace entry that re-created it.
    pub class: SegmentClass,
    /// Bytes of live blocks; starts from the dump's `active_size`, like the reference.
    pub active: i64,
    /// The dump's `allocated_size`; only the workspace adaptation reads it.
    pub allocated: i64,
    /// Live (non-inactive) blocks, ascending by address.
    pub blocks: Vec<LiveBlock>,
}

impl SegState {
    /// The empty segment a `segment_free` or `segment_unmap` entry released, as undoing it
    /// re-creates it: the entry's range, stream and frames, of the pool the entry names
    /// (the trace says nothing of its type).
    pub fn released_by(e: &TraceEvent, is_expandable: bool, pool: Option<PoolId>) -> SegState {
        SegState {
            address: e.addr,
            total_size: e.size,
            stream: e.stream,
            is_expandable,
            frames: e.frames,
            class: SegmentClass {
                large: None,
                pool_id: pool,
            },
            active: 0,
            allocated: 0,
            blocks: Vec::new(),
        }
    }

    fn end(&self) -> i128 {
        range_end(self.address, self.total_size)
    }

    fn contains(&self, addr: i64) -> bool {
        self.address <= addr && i128::from(addr) < self.end()
    }

    /// Index of the live block whose range contains `addr`.
    pub fn block_at(&self, addr: i64) -> Option<usize> {
        let i = self.blocks.partition_point(|b| b.address <= addr);
        (i > 0 && i128::from(addr) < self.blocks[i - 1].end()).then(|| i - 1)
    }
}

pub(crate) struct DeviceState {
    /// Segments sorted by `(address, stream)`.
    pub segments: Vec<SegState>,
    pub allocated: i64,
    pub active: i64,
    pub reserved: i64,
    /// The next [`LiveBlock::uid`] to hand out.
    pub next_uid: u32,
}

impl DeviceState {
    /// The dump-time state of `device`: its segments with their live blocks, and totals taken
    /// from the segments' own `allocated_size`/`active_size`/`total_size` fields (as the
    /// reference does; in real files they equal the block sums).
    pub fn at_dump(snapshot: &Snapshot, device: i64) -> Result<Self, String> {
        let mut segments: Vec<SegState> = snapshot
            .segments
            .iter()
            .filter(|s| s.device == device)
            .map(|s| SegState {
                address: s.address,
                total_size: s.total_size,
                stream: s.stream,
                is_expandable: s.is_expandable,
                frames: s.frames,
                class: SegmentClass {
                    large: match &*s.segment_type {
                        "large" => Some(true),
                        "small" => Some(false),
                        _ => None,
                    },
                    pool_id: s.pool_id,
                },
                active: s.active_size,
                allocated: s.allocated_size,
                blocks: s
                    .blocks
                    .iter()
                    .filter(|b| b.state != BlockState::Inactive)
                    .map(|b| LiveBlock {
                        address: b.address,
                        size: b.size,
                        requested: b.requested_size,
                        state: b.state,
                        free_event: -1,
                        uid: 0,
                    })
                    .collect(),
            })
            .collect();
        // Stable, so equal keys keep file order, as Python's sort does.
        segments.sort_by_key(|s| (s.address, s.stream));
        let total =
            |field: fn(&SegState) -> i64| segments.iter().try_fold(0, |sum, s| add(sum, field(s)));
        let mut state = DeviceState {
            allocated: total(|s| s.allocated)?,
            active: total(|s| s.active)?,
            reserved: total(|s| s.total_size)?,
            segments,
            next_uid: 0,
        };
        let mut uid = 0u32;
        for seg in &mut state.segments {
            seg.blocks.sort_by_key(|b| b.address);
            for b in &mut seg.blocks {
                b.uid = uid;
                uid = uid.checked_add(1).ok_or(TOO_MANY_LIFETIMES)?;
            }
        }
        state.next_uid = uid;
        Ok(state)
    }

    /// A new block lifetime's identity.
    pub fn take_uid(&mut self) -> Result<u32, String> {
        let uid = self.next_uid;
        self.next_uid = uid.checked_add(1).ok_or(TOO_MANY_LIFETIMES)?;
        Ok(uid)
    }

    /// torch_npu puts its workspace allocator's history at the front of a device's trace as
    /// `workspace_snapshot, segment_alloc, alloc` triplets whose segments the dump reports as
    /// empty. Fill each such segment with the one block it really holds, so that undoing the
    /// triplet balances. Returns whether the trace starts with such a triplet, in which case
    /// the replay tolerates some inconsistencies the workspace allocator causes.
    pub fn adapt_workspace(
        &mut self,
        events: &[TraceEvent],
        warnings: &mut Vec<String>,
    ) -> Result<bool, String> {
        if events.first().map(|e| e.action) != Some(Action::WorkspaceSnapshot) {
            return Ok(false);
        }
        for triplet in events.chunks_exact(3) {
            let [ws, seg_alloc, alloc] = triplet else {
                unreachable!()
            };
            if ws.action != Action::WorkspaceSnapshot {
                break;
            }
            let same = seg_alloc.action == Action::SegmentAlloc
                && alloc.action == Action::Alloc
                && ws.addr == seg_alloc.addr
                && ws.addr == alloc.addr
                && ws.size == seg_alloc.size
                && ws.size == alloc.size;
            let seg = self.segments.iter_mut().find(|s| {
                s.address == ws.addr && s.stream == seg_alloc.stream && s.total_size == ws.size
            });
            match seg {
                Some(seg) if same && seg.blocks.is_empty() => {
                    self.allocated = add(self.allocated, sub(ws.size, seg.allocated)?)?;
                    self.active = add(self.active, sub(ws.size, seg.active)?)?;
                    seg.allocated = ws.size;
                    seg.active = ws.size;
                    // `seg` borrows the segments only, so the counter is taken by hand.
                    let uid = self.next_uid;
                    seg.blocks.push(LiveBlock {
                        address: seg.address,
                        size: ws.size,
                        requested: ws.size,
                        state: BlockState::ActiveAllocated,
                        free_event: -1,
                        uid,
                    });
                    self.next_uid = uid.checked_add(1).ok_or(TOO_MANY_LIFETIMES)?;
                }
                _ => {
                    warnings.push(format!(
                        "workspace triplet at {:#x} does not match the dump state; stopped adapting",
                        ws.addr
                    ));
                    break;
                }
            }
        }
        Ok(true)
    }

    /// Index of the segment on `stream` whose range contains `addr`.
    pub fn find_segment(&self, addr: i64, stream: i64) -> Option<usize> {
        let upper = self.segments.partition_point(|s| s.address <= addr);
        self.segments[..upper]
            .iter()
            .rposition(|s| s.stream == stream && s.contains(addr))
    }

    /// Index of the segment starting exactly at `addr` on `stream`.
    pub fn segment_at(&self, addr: i64, stream: i64) -> Option<usize> {
        let i = self
            .segments
            .partition_point(|s| (s.address, s.stream) < (addr, stream));
        let seg = self.segments.get(i)?;
        (seg.address == addr && seg.stream == stream).then_some(i)
    }

    /// `(segment, block)` indices of the live block containing `addr` on `stream`.
    pub fn find_block(&self, addr: i64, stream: i64) -> Option<(usize, usize)> {
        let s = self.find_segment(addr, stream)?;
        Some((s, self.segments[s].block_at(addr)?))
    }

    pub fn insert_segment(&mut self, seg: SegState) {
        let key = (seg.address, seg.stream);
        let i = self
            .segments
            .partition_point(|s| (s.address, s.stream) <= key);
        self.segments.insert(i, seg);
    }

    /// Puts `block` back into segment `s`, in the gap that holds it.
    pub fn attach(&mut self, s: usize, block: LiveBlock) -> Result<(), String> {
        let seg = &mut self.segments[s];
        let i = seg.blocks.partition_point(|b| b.address < block.address);
        let after_prev = i == 0 || seg.blocks[i - 1].end() <= i128::from(block.address);
        let before_next = i == seg.blocks.len() || block.end() <= i128::from(seg.blocks[i].address);
        if !(after_prev && before_next && block.end() <= seg.end()) {
            return Err(format!(
                "block {:#x}+{} does not fit in a free gap of segment {:#x}+{}",
                block.address, block.size, seg.address, seg.total_size
            ));
        }
        let [seg_active, active, allocated] =
            block_counted(add, [seg.active, self.active, self.allocated], &block)?;
        seg.blocks.insert(i, block);
        seg.active = seg_active;
        (self.active, self.allocated) = (active, allocated);
        Ok(())
    }

    /// Takes block `b` out of segment `s`: its allocation is being undone.
    pub fn detach(&mut self, s: usize, b: usize) -> Result<LiveBlock, String> {
        let seg = &mut self.segments[s];
        let block = seg.blocks[b];
        let [seg_active, active, allocated] =
            block_counted(sub, [seg.active, self.active, self.allocated], &block)?;
        seg.blocks.remove(b);
        seg.active = seg_active;
        (self.active, self.allocated) = (active, allocated);
        Ok(block)
    }

    /// Undo of `segment_map`: the range was not mapped before, so cut it out of the segment
    /// that holds it (shrinking an edge, removing the segment, or splitting it in two).
    /// Returns that segment's class: the map's.
    pub fn unmap_range(&mut self, e: &TraceEvent) -> Result<SegmentClass, String> {
        let (start, end) = (e.addr, add(e.addr, e.size)?);
        let s = self
            .find_segment(start, e.stream)
            .ok_or_else(|| format!("no mapped segment contains {start:#x}"))?;
        let seg = &mut self.segments[s];
        if i128::from(end) > seg.end() {
            return Err(format!(
                "range {start:#x}..{end:#x} exceeds segment {:#x}..{:#x}",
                seg.address,
                seg.end()
            ));
        }
        // The reference refuses a live block inside an edge cut and drops one in a middle
        // cut without touching the totals; either way the counters would hold a block no
        // segment holds (`active` past `reserved`). A consistent trace has none: the blocks
        // of a mapped range are allocated after its map, so undone before it.
        let overlaps =
            |b: &&LiveBlock| i128::from(b.address) < i128::from(end) && b.end() > i128::from(start);
        if let Some(b) = seg.blocks.iter().find(overlaps) {
            return Err(format!(
                "live block {:#x}+{} overlaps the range {start:#x}..{end:#x} being unmapped",
                b.address, b.size
            ));
        }
        let class = seg.class;
        let at_left = start == seg.address;
        let at_right = i128::from(end) == seg.end();
        match (at_left, at_right) {
            (true, true) => {
                self.segments.remove(s);
            }
            (true, false) => {
                let mut seg = self.segments.remove(s);
                seg.address = end;
                seg.total_size = sub(seg.total_size, e.size)?;
                self.insert_segment(seg);
            }
            (false, true) => seg.total_size = sub(seg.total_size, e.size)?,
            (false, false) => {
                let mut right = SegState {
                    address: end,
                    // Below the segment's end, which is `address + total_size` of i64s.
                    total_size: i64::try_from(seg.end() - i128::from(end))
                        .map_err(|_| format!("segment {:#x} ends past 2^63", seg.address))?,
                    stream: seg.stream,
                    is_expandable: seg.is_expandable,
                    frames: seg.frames,
                    class: seg.class,
                    active: 0,
                    allocated: 0,
                    blocks: Vec::new(),
                };
                seg.total_size = sub(start, seg.address)?;
                let blocks = std::mem::take(&mut seg.blocks);
                // None overlaps the range (checked above).
                for b in blocks {
                    if b.end() <= i128::from(start) {
                        seg.blocks.push(b);
                    } else {
                        right.active = add(right.active, b.size)?;
                        right.blocks.push(b);
                    }
                }
                seg.active = seg.blocks.iter().try_fold(0, |sum, b| add(sum, b.size))?;
                self.insert_segment(right);
            }
        }
        Ok(class)
    }

    /// Undo of `segment_unmap`: the range was mapped before, so re-create it, merged with the
    /// mapped runs it touches on the same stream (a run of its own has the class of `pool`,
    /// the unmap's pool id).
    pub fn map_range(&mut self, e: &TraceEvent, pool: Option<PoolId>) -> Result<(), String> {
        let (start, end) = (e.addr, add(e.addr, e.size)?);
        if self
            .segments
            .iter()
            .any(|s| s.stream == e.stream && s.address < end && i128::from(start) < s.end())
        {
            return Err(format!(
                "range {start:#x}..{end:#x} being re-mapped overlaps a mapped segment"
            ));
        }
        let left = self
            .segments
            .iter()
            .position(|s| s.stream == e.stream && s.end() == i128::from(start));
        let right = self
            .segments
            .iter()
            .position(|s| s.stream == e.stream && s.address == end);
        match (left, right) {
            (Some(l), Some(r)) => {
                let right = self.segments.remove(r);
                let l = if r < l { l - 1 } else { l };
                let seg = &mut self.segments[l];
                seg.total_size = add(add(seg.total_size, e.size)?, right.total_size)?;
                seg.active = add(seg.active, right.active)?;
                seg.blocks.extend(right.blocks);
            }
            (Some(l), None) => {
                let seg = &mut self.segments[l];
                seg.total_size = add(seg.total_size, e.size)?;
            }
            (None, Some(r)) => {
                let mut seg = self.segments.remove(r);
                seg.address = start;
                seg.total_size = add(seg.total_size, e.size)?;
                self.insert_segment(seg);
            }
            (None, None) => self.insert_segment(SegState::released_by(e, true, pool)),
        }
        Ok(())
    }
}
