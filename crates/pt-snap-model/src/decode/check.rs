//! The dump-time segments as an allocator can hold them, checked on the way in.
//!
//! The replay starts from the segments' own `allocated_size`/`active_size`/`total_size` (as
//! the reference does) and takes every live block's size as given. A segment whose figures
//! no allocator could hold — a negative size, a block past its segment's end, blocks that
//! overlap, totals that are not its blocks' — would become counters that cannot be true on
//! every row (a block of 2^63 − 1 bytes puts them near `i64::MIN`). What PyTorch writes
//! (`CUDACachingAllocator::snapshot`, torch_npu's twin) is one segment per `cudaMalloc` or
//! mapped run of an expandable segment, listing every block of it, free ones too: the blocks
//! tile the segment, contiguous from its address, their sizes adding up to `total_size`, and
//! the segment's `allocated_size`/`active_size` are the sizes of its `active_allocated` and
//! of its live blocks. So:
//!
//! * every size is a byte count: never negative; a live block's `requested_size` is at most
//!   its size (an inactive block's is stale, and never read); a segment ends below 2^63 (the
//!   database's addresses are signed 64-bit: pointers past 2^63 are stored negative);
//! * blocks lie inside their segment, in address order, without overlapping;
//! * a list that holds a free (`inactive`) block lists them all, and must tile the segment
//!   (torch 2.0 blocks have no address: theirs are the sizes before them, so only their sum
//!   is checked); a list of live blocks only (split slices, which the reference writes that
//!   way) or no list at all (torch_npu's workspace segments) need not;
//! * `allocated_size` and `active_size` are the sums of their blocks.

use crate::{BlockState, Segment};

/// Why `seg` cannot be an allocator's segment: the block at fault (its index in the list)
/// if one is, and what is wrong.
pub(super) fn segment(seg: &Segment) -> Result<(), (Option<usize>, String)> {
    let whole = |m: String| Err((None, m));
    for (field, value) in [
        ("total_size", seg.total_size),
        ("allocated_size", seg.allocated_size),
        ("active_size", seg.active_size),
    ] {
        if value < 0 {
            return whole(format!("{field} {value} is negative"));
        }
    }
    let start = i128::from(seg.address);
    let end = start + i128::from(seg.total_size);
    let span = |address: i128, size: i128| format!("{:#x}+{size}", address as i64);
    if end > i128::from(i64::MAX) {
        return whole(format!(
            "segment {} ends past 2^63 - 1",
            span(start, end - start)
        ));
    }
    let mut previous_end = start;
    let (mut allocated, mut active) = (0i128, 0i128);
    let mut complete = false;
    for (i, b) in seg.blocks.iter().enumerate() {
        let at = |m: String| Err((Some(i), m));
        let (address, size) = (i128::from(b.address), i128::from(b.size));
        if size < 0 {
            return at(format!("block size {size} is negative"));
        }
        let live = b.state != BlockState::Inactive;
        if live && !(0..=b.size).contains(&b.requested_size) {
            return at(format!(
                "requested_size {} of a block of {size} bytes is not between 0 and its size",
                b.requested_size
            ));
        }
        if address < previous_end {
            return at(if i == 0 {
                format!(
                    "block {} starts before its segment {}",
                    span(address, size),
                    span(start, end - start)
                )
            } else {
                format!(
                    "block {} starts before the previous block ends at {:#x}",
                    span(address, size),
                    previous_end as i64
                )
            });
        }
        if address + size > end {
            return at(format!(
                "block {} runs past the end of its segment {}",
                span(address, size),
                span(start, end - start)
            ));
        }
        match b.state {
            BlockState::ActiveAllocated => allocated += size,
            BlockState::Inactive => complete = true,
            BlockState::ActivePendingFree => {}
        }
        if live {
            active += size;
        }
        previous_end = address + size;
    }
    if complete {
        // Inside and in order, so contiguous from the start exactly when they add up.
        let covered: i128 = seg.blocks.iter().map(|b| i128::from(b.size)).sum();
        if covered != end - start {
            return whole(format!(
                "its blocks cover {covered} of its {} bytes; an allocator's blocks tile their segment",
                seg.total_size
            ));
        }
    }
    for (field, value, sum, which) in [
        (
            "allocated_size",
            seg.allocated_size,
            allocated,
            "active_allocated",
        ),
        ("active_size", seg.active_size, active, "live"),
    ] {
        if i128::from(value) != sum {
            return whole(format!(
                "{field} {value} is not the {sum} bytes of its {which} blocks"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Block, StackId};

    fn block(address: i64, size: i64, state: BlockState) -> Block {
        Block {
            address,
            size,
            requested_size: size,
            state,
            frames: StackId::EMPTY,
        }
    }

    fn seg(total_size: i64, blocks: Vec<Block>) -> Segment {
        let sum = |f: fn(&Block) -> bool| blocks.iter().filter(|b| f(b)).map(|b| b.size).sum();
        Segment {
            device: 0,
            address: 4096,
            total_size,
            stream: 0,
            segment_type: "small".into(),
            allocated_size: sum(|b| b.state == BlockState::ActiveAllocated),
            active_size: sum(|b| b.state != BlockState::Inactive),
            is_expandable: false,
            pool_id: None,
            frames: StackId::EMPTY,
            blocks,
        }
    }

    use BlockState::{ActiveAllocated as Allocated, ActivePendingFree as Pending, Inactive};

    fn fault(s: &Segment) -> (Option<usize>, String) {
        segment(s).expect_err("refused")
    }

    #[test]
    fn what_pytorch_writes_passes() {
        // A full listing that tiles, live blocks only with gaps, no blocks at all.
        let tiled = seg(
            2048,
            vec![
                block(4096, 512, Allocated),
                block(4608, 512, Inactive),
                block(5120, 1024, Pending),
            ],
        );
        assert_eq!(segment(&tiled), Ok(()));
        let live_only = seg(
            2048,
            vec![block(4096, 512, Allocated), block(5120, 512, Pending)],
        );
        assert_eq!(segment(&live_only), Ok(()));
        assert_eq!(segment(&seg(4096, vec![])), Ok(()));
        // An inactive block's requested size is stale, and never read.
        let mut stale = tiled.clone();
        stale.blocks[1].requested_size = 1 << 40;
        assert_eq!(segment(&stale), Ok(()));
    }

    #[test]
    fn a_block_of_2_pow_63_minus_1_is_refused_where_it_is() {
        let mut s = seg(
            2048,
            vec![block(4096, 1024, Allocated), block(5120, 1024, Inactive)],
        );
        s.blocks[0].size = i64::MAX;
        s.blocks[0].requested_size = i64::MAX;
        let (at, why) = fault(&s);
        assert_eq!(at, Some(0));
        assert!(why.contains("runs past the end of its segment"), "{why}");
    }

    #[test]
    fn negative_sizes_are_refused() {
        let mut s = seg(2048, vec![block(4096, 512, Allocated)]);
        s.blocks[0].size = -512;
        let (at, why) = fault(&s);
        assert_eq!((at, why.as_str()), (Some(0), "block size -512 is negative"));
        let (at, why) = fault(&seg(-1, vec![]));
        assert_eq!((at, why.as_str()), (None, "total_size -1 is negative"));
        let (at, why) = fault(&seg(i64::MAX - 4095, vec![]));
        assert_eq!(at, None);
        assert!(why.ends_with("ends past 2^63 - 1"), "{why}");
        let mut s = seg(2048, vec![block(4096, 512, Allocated)]);
        s.blocks[0].requested_size = -1;
        assert_eq!(fault(&s).0, Some(0));
        s.blocks[0].requested_size = 513;
        assert!(fault(&s).1.contains("not between 0 and its size"));
    }

    #[test]
    fn overlapping_or_outside_blocks_are_refused() {
        let overlapping = seg(
            2048,
            vec![block(4096, 1024, Allocated), block(4608, 512, Allocated)],
        );
        let (at, why) = fault(&overlapping);
        assert_eq!(at, Some(1));
        assert!(why.contains("before the previous block ends"), "{why}");
        let (at, why) = fault(&seg(2048, vec![block(0, 512, Allocated)]));
        assert_eq!(at, Some(0));
        assert!(why.contains("starts before its segment"), "{why}");
    }

    #[test]
    fn a_full_listing_must_tile_its_segment() {
        // A gap in a listing that holds free blocks: not what an allocator lists.
        let gap = seg(
            2048,
            vec![block(4096, 512, Inactive), block(5120, 512, Allocated)],
        );
        let (at, why) = fault(&gap);
        assert_eq!(at, None);
        assert!(why.contains("cover 1024 of its 2048 bytes"), "{why}");
    }

    #[test]
    fn totals_must_be_the_blocks_sums() {
        let mut s = seg(2048, vec![block(4096, 2048, Allocated)]);
        s.allocated_size = i64::MAX;
        let (at, why) = fault(&s);
        assert_eq!(at, None);
        assert!(
            why.contains("allocated_size 9223372036854775807 is not the 2048 bytes"),
            "{why}"
        );
        let mut s = seg(2048, vec![block(4096, 2048, Pending)]);
        s.active_size = 0;
        assert!(fault(&s).1.starts_with("active_size 0 is not"));
    }
}
