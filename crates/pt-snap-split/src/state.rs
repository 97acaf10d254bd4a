//! The allocator state a slice starts from, rebuilt the way the reference rebuilds it.
//!
//! The import replay (`pt-snap-replay`) only needs device totals and block lifetimes, so it
//! keeps neither a segment's `segment_type`, its own `allocated_size`, nor the frame lists as
//! written. A slice must carry all of them exactly as pt-snap-cli 0.4.1 writes them
//! (spec §10.1), including its quirks: a segment re-created by undoing `segment_free` or
//! `segment_unmap` has an empty `segment_type` and the event's frames, a run re-mapped in
//! front of another takes over the attributes of the new run, and per-segment counters
//! start from the dump's fields. This module is that simulation (the reference's
//! `simulate/` package), with frames kept as the decoded pickle values so a slice writes the
//! original frame dicts back, whatever keys they hold.

use pt_snap_model::{Action, BlockState, Snapshot, TraceEvent};
use pt_snap_pickle::Val;

/// A frame list as written in the source: the decoded value, or `None` where the source had
/// no `frames` key (written as an empty list, as the reference's `.get("frames", [])`).
pub(crate) type Frames = Option<Val>;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Blk {
    pub address: i64,
    pub size: i64,
    pub requested_size: i64,
    pub state: BlockState,
    pub frames: Frames,
}

impl Blk {
    fn end(&self) -> i64 {
        self.address + self.size
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Seg<'a> {
    pub address: i64,
    pub total_size: i64,
    pub stream: i64,
    pub segment_type: &'a str,
    pub allocated_size: i64,
    pub active_size: i64,
    pub is_expandable: bool,
    pub frames: Frames,
    /// Live blocks, ascending by address.
    pub blocks: Vec<Blk>,
}

impl Seg<'_> {
    fn end(&self) -> i64 {
        self.address + self.total_size
    }

    fn recount(&mut self) {
        self.allocated_size = self
            .blocks
            .iter()
            .filter(|b| b.state == BlockState::ActiveAllocated)
            .map(|b| b.size)
            .sum();
        self.active_size = self.blocks.iter().map(|b| b.size).sum();
    }
}

/// Raw frame values of the source, parallel to the model's records.
pub(crate) struct RawFrames<'r> {
    /// Per model segment (all devices, file order): the segment's frames and its blocks'.
    pub segments: &'r [(Frames, Vec<Frames>)],
    /// Per event of the device being split.
    pub events: &'r [Frames],
}

pub(crate) struct State<'a> {
    /// Sorted by `(address, stream)`.
    pub segs: Vec<Seg<'a>>,
    /// The trace starts with torch_npu workspace events: some inconsistencies are tolerated.
    workspace: bool,
}

impl<'a> State<'a> {
    /// The dump-time state of `device` (inactive blocks left out), with torch_npu's workspace
    /// pools adapted, as the reference has it before its first undo.
    pub fn at_dump(snapshot: &'a Snapshot, raw: &RawFrames<'_>, device: usize) -> Self {
        let mut segs: Vec<Seg<'a>> = snapshot
            .segments
            .iter()
            .zip(raw.segments)
            .filter(|(s, _)| s.device == device as i64)
            .map(|(s, (seg_frames, block_frames))| Seg {
                address: s.address,
                total_size: s.total_size,
                stream: s.stream,
                segment_type: &s.segment_type,
                allocated_size: s.allocated_size,
                active_size: s.active_size,
                is_expandable: s.is_expandable,
                frames: *seg_frames,
                blocks: s
                    .blocks
                    .iter()
                    .zip(block_frames)
                    .filter(|(b, _)| b.state != BlockState::Inactive)
                    .map(|(b, f)| Blk {
                        address: b.address,
                        size: b.size,
                        requested_size: b.requested_size,
                        state: b.state,
                        frames: *f,
                    })
                    .collect(),
            })
            .collect();
        // Stable, like Python's sort: equal keys keep file order.
        segs.sort_by_key(|s| (s.address, s.stream));
        let events = &snapshot.device_traces[device];
        let mut state = State {
            segs,
            workspace: events.first().map(|e| e.action) == Some(Action::WorkspaceSnapshot),
        };
        if state.workspace {
            state.adapt_workspace(events);
        }
        state
    }

    /// torch_npu dumps each live workspace pool as an empty segment and puts a
    /// `workspace_snapshot, segment_alloc, alloc` triplet for it at the front of the trace;
    /// give each matching segment the one allocated block the triplet's undo will remove.
    fn adapt_workspace(&mut self, events: &[TraceEvent]) {
        for triplet in events.chunks_exact(3) {
            let [ws, seg_alloc, alloc] = triplet else {
                unreachable!("chunks_exact(3)")
            };
            if ws.action != Action::WorkspaceSnapshot
                || seg_alloc.action != Action::SegmentAlloc
                || alloc.action != Action::Alloc
            {
                return;
            }
            if seg_alloc.addr != ws.addr
                || seg_alloc.size != ws.size
                || alloc.addr != ws.addr
                || alloc.size != ws.size
            {
                return;
            }
            let Some(i) = self.segment_at(ws.addr, ws.stream) else {
                return;
            };
            let seg = &mut self.segs[i];
            if seg.total_size != ws.size || !seg.blocks.is_empty() {
                return;
            }
            seg.allocated_size = seg.total_size;
            seg.active_size = seg.total_size;
            seg.blocks.push(Blk {
                address: seg.address,
                size: seg.total_size,
                requested_size: seg.total_size,
                state: BlockState::ActiveAllocated,
                frames: seg.frames,
            });
        }
    }

    /// The reference's `find_overlapping_segment`: binary search by range, then a scan of
    /// the neighbours for the stream when the hit is on another stream.
    fn overlapping(&self, addr: i64, stream: i64) -> Option<usize> {
        let segs = &self.segs;
        let mid = range_search(segs.len(), addr, |i| (segs[i].address, segs[i].end()))?;
        if segs[mid].stream == stream {
            return Some(mid);
        }
        for i in (0..mid).rev() {
            if addr < segs[i].address {
                break;
            }
            if addr < segs[i].end() && segs[i].stream == stream {
                return Some(i);
            }
        }
        for (i, s) in segs.iter().enumerate().skip(mid + 1) {
            if addr < s.address {
                break;
            }
            if addr < s.end() && s.stream == stream {
                return Some(i);
            }
        }
        None
    }

    /// The segment that holds the block of event `e`, or the reference's complaint.
    fn segment_of_block(&self, e: &TraceEvent) -> Result<usize, String> {
        self.overlapping(e.addr, e.stream)
            .ok_or_else(|| format!("cannot find segment for block (addr={})", e.addr))
    }

    /// The segment starting exactly at `addr` on `stream`.
    fn segment_at(&self, addr: i64, stream: i64) -> Option<usize> {
        self.overlapping(addr, stream)
            .filter(|&i| self.segs[i].address == addr)
    }

    fn insert_sorted(&mut self, seg: Seg<'a>) -> usize {
        let key = (seg.address, seg.stream);
        let i = self.segs.partition_point(|s| (s.address, s.stream) < key);
        self.segs.insert(i, seg);
        i
    }

    /// Undoes one event; `Err` is the reason the reference's replay would stop.
    pub fn undo(&mut self, e: &TraceEvent, frames: Frames) -> Result<(), String> {
        match e.action {
            Action::Free | Action::FreeCompleted => {
                let state = if e.action == Action::Free {
                    BlockState::ActiveAllocated
                } else {
                    BlockState::ActivePendingFree
                };
                let (s, at) = self.gap_for(e.addr, e.size, e.stream).ok_or_else(|| {
                    format!(
                        "cannot find gap for block (addr={}, size={})",
                        e.addr, e.size
                    )
                })?;
                let seg = &mut self.segs[s];
                seg.blocks.insert(
                    at,
                    Blk {
                        address: e.addr,
                        size: e.size,
                        requested_size: e.size,
                        state,
                        frames,
                    },
                );
                seg.active_size += e.size;
                if state == BlockState::ActiveAllocated {
                    seg.allocated_size += e.size;
                }
                Ok(())
            }
            Action::FreeRequested => {
                let s = self.segment_of_block(e)?;
                let seg = &mut self.segs[s];
                let b = block_at(&seg.blocks, e.addr)
                    .ok_or_else(|| format!("cannot find block (addr={})", e.addr))?;
                let block = &mut seg.blocks[b];
                if block.state != BlockState::ActivePendingFree {
                    if self.workspace {
                        return Ok(());
                    }
                    return Err(format!(
                        "block (addr={}) is not in active_pending_free state, current state: {}",
                        e.addr,
                        block.state.name()
                    ));
                }
                block.state = BlockState::ActiveAllocated;
                seg.allocated_size += block.size;
                Ok(())
            }
            Action::Alloc => {
                let s = self.segment_of_block(e)?;
                let seg = &mut self.segs[s];
                let Some(b) = block_at(&seg.blocks, e.addr) else {
                    if self.workspace {
                        return Ok(());
                    }
                    return Err(format!("cannot find block (addr={})", e.addr));
                };
                let block = seg.blocks[b];
                if block.size < e.size {
                    return Err(format!(
                        "block size ({}) < event size ({})",
                        block.size, e.size
                    ));
                }
                seg.active_size -= block.size;
                if block.state == BlockState::ActiveAllocated {
                    seg.allocated_size -= block.size;
                }
                seg.blocks.remove(b);
                Ok(())
            }
            Action::SegmentFree | Action::SegmentUnmap => {
                // The reference also gives a re-created segment device 0 (its bug, spec
                // §15.1.2); the encoder writes the slice's device for every segment instead.
                let seg = Seg {
                    address: e.addr,
                    total_size: e.size,
                    stream: e.stream,
                    segment_type: "",
                    allocated_size: 0,
                    active_size: 0,
                    is_expandable: e.action == Action::SegmentUnmap,
                    frames,
                    blocks: Vec::new(),
                };
                if e.action == Action::SegmentFree {
                    self.insert_sorted(seg);
                } else {
                    self.map(seg)?;
                }
                Ok(())
            }
            Action::SegmentAlloc => {
                let s = self.segment_at(e.addr, e.stream).ok_or_else(|| {
                    format!("cannot found segment(addr={}, stream={})", e.addr, e.stream)
                })?;
                let seg = &self.segs[s];
                if seg.total_size != e.size {
                    return Err(format!(
                        "cannot free segment(addr={}, size={}) in exist segment(addr={}, size={})",
                        e.addr, e.size, seg.address, seg.total_size
                    ));
                }
                if seg.active_size > 0 {
                    return Err("cannot free a segment that still has active allocations.".into());
                }
                self.segs.remove(s);
                Ok(())
            }
            Action::SegmentMap => self.unmap(e),
            Action::WorkspaceSnapshot | Action::Oom | Action::Other(_) => Ok(()),
        }
    }

    /// The reference's `find_gap_for_alloc_block`: the segment and insertion index of a free
    /// gap that holds `[addr, addr + size)`.
    fn gap_for(&self, addr: i64, size: i64, stream: i64) -> Option<(usize, usize)> {
        let s = self.overlapping(addr, stream)?;
        let seg = &self.segs[s];
        let blocks = &seg.blocks;
        let end = addr + size;
        if blocks.is_empty() {
            return (seg.address <= addr && end <= seg.end()).then_some((s, 0));
        }
        if blocks[0].address >= end {
            return (seg.address <= addr).then_some((s, 0));
        }
        // The last block starting at or before `addr` (blocks[0] does, given the test above
        // and that the search below only moves right of it).
        let (mut lo, mut hi) = (0usize, blocks.len() - 1);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if blocks[mid].address <= addr {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let gap_start = blocks[lo].end();
        let gap_end = blocks.get(lo + 1).map_or(seg.end(), |b| b.address);
        (gap_start <= addr && end <= gap_end).then_some((s, lo + 1))
    }

    /// Undo of `segment_unmap`: the run was mapped before; merge it with same-stream runs
    /// that touch it (`merge_mapped_segment`).
    fn map(&mut self, new: Seg<'a>) -> Result<(), String> {
        let (start, end) = (new.address, new.end());
        let left = self
            .segs
            .iter()
            .rposition(|s| s.stream == new.stream && s.end() == start);
        let right = self
            .segs
            .iter()
            .rposition(|s| s.stream == new.stream && s.address == end);
        match (left, right) {
            (None, None) => {
                self.insert_sorted(new);
            }
            (Some(l), right) => {
                self.segs[l].total_size += new.total_size;
                if let Some(r) = right {
                    let src = self.segs.remove(r);
                    let l = if r < l { l - 1 } else { l };
                    let target = &mut self.segs[l];
                    target.total_size += src.total_size;
                    target.allocated_size += src.allocated_size;
                    target.active_size += src.active_size;
                    target.blocks.extend(src.blocks);
                }
            }
            (None, Some(r)) => {
                // The new run is the lower one, so the merged segment keeps its attributes.
                let src = self.segs.remove(r);
                let mut merged = new;
                merged.total_size += src.total_size;
                merged.allocated_size += src.allocated_size;
                merged.active_size += src.active_size;
                merged.blocks.extend(src.blocks);
                self.insert_sorted(merged);
            }
        }
        Ok(())
    }

    /// Undo of `segment_map`: the run was not mapped before; shrink or split the segment
    /// that holds it (`unmap_segment`, `split_or_shrink_segment`).
    fn unmap(&mut self, e: &TraceEvent) -> Result<(), String> {
        let (start, end) = (e.addr, e.addr + e.size);
        let s = self
            .overlapping(start, e.stream)
            .ok_or_else(|| format!("cannot found segment(addr={start})"))?;
        let seg = &self.segs[s];
        if !(start >= seg.address && end <= seg.end()) {
            return Err(format!(
                "cannot unmap segment(addr={start}, unmap_size={}) in exist segment(addr={}, total_size={})",
                e.size, seg.address, seg.total_size
            ));
        }
        if start == seg.address {
            if let Some(b) = seg.blocks.iter().find(|b| b.end() <= end) {
                return Err(format!(
                    "active block [{}, {}) in shrink range [{start}, {end})",
                    b.address,
                    b.end()
                ));
            }
            let mut seg = self.segs.remove(s);
            seg.total_size = seg.end() - end;
            seg.address = end;
            seg.blocks.retain(|b| b.address >= end);
            seg.recount();
            if seg.total_size != 0 {
                self.insert_sorted(seg);
            }
        } else if end == seg.end() {
            if let Some(b) = seg.blocks.iter().find(|b| b.address >= start) {
                return Err(format!(
                    "active block [{}, {}) in shrink range [{start}, {end})",
                    b.address,
                    b.end()
                ));
            }
            let seg = &mut self.segs[s];
            seg.blocks.retain(|b| b.end() <= start);
            seg.total_size = start - seg.address;
            seg.recount();
            if seg.total_size == 0 {
                self.segs.remove(s);
            }
        } else {
            let orig = self.segs.remove(s);
            let mut left = Seg {
                total_size: start - orig.address,
                blocks: Vec::new(),
                ..orig.clone()
            };
            let mut right = Seg {
                address: end,
                total_size: orig.end() - end,
                blocks: Vec::new(),
                ..orig.clone()
            };
            for b in orig.blocks {
                if b.end() <= start {
                    left.blocks.push(b);
                } else if b.address >= end {
                    right.blocks.push(b);
                }
                // A block straddling the cut is dropped, as the reference drops it.
            }
            left.recount();
            right.recount();
            self.insert_sorted(left);
            self.insert_sorted(right);
        }
        Ok(())
    }
}

/// The reference's `find_block`: binary search for the block containing `addr`.
fn block_at(blocks: &[Blk], addr: i64) -> Option<usize> {
    range_search(blocks.len(), addr, |i| (blocks[i].address, blocks[i].end()))
}

/// The reference's binary search by range over `len` items sorted by address, the `i`-th
/// spanning `range(i)` = `[start, end)`: the first probe that contains `addr`. It probes in
/// the reference's order, so where ranges overlap it hits the same item.
fn range_search(len: usize, addr: i64, range: impl Fn(usize) -> (i64, i64)) -> Option<usize> {
    let (mut lo, mut hi) = (0isize, len as isize - 1);
    while lo <= hi {
        let mid = (lo + hi) / 2;
        let (start, end) = range(mid as usize);
        if addr < start {
            hi = mid - 1;
        } else if addr >= end {
            lo = mid + 1;
        } else {
            return Some(mid as usize);
        }
    }
    None
}
