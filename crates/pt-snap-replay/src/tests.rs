use super::*;
use pt_snap_model::{Block, Segment};

/// Every row a replay emits; shared with the stepwise replay's tests. Every replay of the
/// tests also checks that no block row comes unannounced by [`RowSink::expect_blocks`].
#[derive(Debug, Default)]
pub(crate) struct Rows {
    pub(crate) trace: Vec<TraceRow>,
    pub(crate) blocks: Vec<BlockRow>,
    /// The block rows announced so far, counted from the first.
    announced: usize,
}

impl RowSink for Rows {
    type Error = std::convert::Infallible;
    fn trace_row(&mut self, row: &TraceRow) -> Result<(), Self::Error> {
        self.trace.push(*row);
        Ok(())
    }
    fn block_row(&mut self, row: &BlockRow) -> Result<(), Self::Error> {
        self.blocks.push(*row);
        assert!(
            self.blocks.len() <= self.announced,
            "block row {} of {} announced",
            self.blocks.len(),
            self.announced
        );
        Ok(())
    }
    fn expect_blocks(&mut self, n: usize) {
        self.announced = self.announced.max(self.blocks.len() + n);
    }
}

pub(crate) fn event(action: Action, addr: i64, size: i64) -> TraceEvent {
    TraceEvent {
        action,
        addr,
        size,
        stream: 0,
        frames: StackId::EMPTY,
        id: None,
        time_low: 0,
    }
}

pub(crate) fn block(address: i64, size: i64, state: BlockState) -> Block {
    Block {
        address,
        size,
        requested_size: size,
        state,
        frames: StackId::EMPTY,
    }
}

/// A device-0 segment holding `blocks`, its counters summed from them.
pub(crate) fn segment(address: i64, total_size: i64, blocks: Vec<Block>) -> Segment {
    let live = |s: BlockState| -> i64 {
        blocks
            .iter()
            .filter(|b| {
                b.state != BlockState::Inactive && (s == BlockState::Inactive || b.state == s)
            })
            .map(|b| b.size)
            .sum()
    };
    Segment {
        device: 0,
        address,
        total_size,
        stream: 0,
        segment_type: "small".into(),
        allocated_size: live(BlockState::ActiveAllocated),
        active_size: live(BlockState::Inactive),
        is_expandable: false,
        pool_id: None,
        frames: StackId::EMPTY,
        blocks,
    }
}

/// A device-0 segment that is one free (inactive) block.
fn free_segment(address: i64, total_size: i64) -> Segment {
    segment(
        address,
        total_size,
        vec![block(address, total_size, BlockState::Inactive)],
    )
}

fn replay(snapshot: &Snapshot, device: usize) -> Result<Rows, String> {
    let mut rows = Rows::default();
    replay_device(snapshot, device, Mode::Strict, &mut rows, &mut |_| {})
        .map_err(|e| e.to_string())?;
    Ok(rows)
}

/// The worked example of the reference's spec (appendix A, `synth_small_1dev.pkl`).
fn worked_example() -> Snapshot {
    use Action::*;
    use BlockState::*;
    let (a, b, c) = (4294967296, 4295032832, 4295098368);
    Snapshot {
        segments: vec![
            segment(
                a,
                4096,
                vec![
                    block(a, 512, ActiveAllocated),
                    block(a + 512, 3584, Inactive),
                ],
            ),
            segment(
                b,
                8192,
                vec![
                    block(b, 512, ActiveAllocated),
                    block(b + 512, 512, Inactive),
                    block(b + 1024, 2048, ActiveAllocated),
                    block(b + 3072, 1024, Inactive),
                    block(b + 4096, 1024, ActivePendingFree),
                    block(b + 5120, 3072, Inactive),
                ],
            ),
        ],
        device_traces: vec![vec![
            event(SegmentAlloc, b, 8192),
            event(Alloc, b, 1024),
            event(Alloc, b + 1024, 2048),
            event(FreeRequested, b, 1024),
            event(FreeCompleted, b, 1024),
            event(FreeRequested, a + 512, 256),
            event(FreeCompleted, a + 512, 256),
            event(Alloc, b, 512),
            event(Oom, -1, 1 << 40),
            event(Other(0), 0, 0),
            event(Alloc, b + 4096, 1024),
            event(FreeRequested, b + 4096, 1024),
            event(SegmentAlloc, c, 2048),
            event(Alloc, c, 2048),
            event(FreeRequested, c, 2048),
            event(FreeCompleted, c, 2048),
            event(SegmentFree, c, 2048),
        ]],
        other_actions: vec!["snapshot".into()],
        ..Snapshot::default()
    }
}

#[test]
fn worked_example_counters_are_the_totals_right_after_each_event() {
    let rows = replay(&worked_example(), 0).unwrap();
    let mut got: Vec<_> = rows
        .trace
        .iter()
        .map(|r| (r.id, r.allocated, r.active, r.reserved))
        .collect();
    got.sort();
    let expected = vec![
        (-1, 768, 768, 4096),
        (0, 768, 768, 12288),
        (1, 1792, 1792, 12288),
        (2, 3840, 3840, 12288),
        (3, 2816, 3840, 12288),
        (4, 2816, 2816, 12288),
        (5, 2560, 2816, 12288),
        (6, 2560, 2560, 12288),
        (7, 3072, 3072, 12288),
        (8, 3072, 3072, 12288),
        (9, 3072, 3072, 12288),
        (10, 4096, 4096, 12288),
        (11, 3072, 4096, 12288),
        (12, 3072, 4096, 14336),
        (13, 5120, 6144, 14336),
        (14, 3072, 6144, 14336),
        (15, 3072, 4096, 14336),
        (16, 3072, 4096, 12288),
    ];
    assert_eq!(got, expected);
    // Rows come last event first, the synthetic segment event last.
    assert_eq!(rows.trace.first().unwrap().id, 16);
    assert_eq!(rows.trace.last().unwrap().id, -1);
    assert_eq!(rows.trace.last().unwrap().action, Action::SegmentAlloc);
}

#[test]
fn worked_example_block_lifetimes() {
    let rows = replay(&worked_example(), 0).unwrap();
    let mut got: Vec<_> = rows
        .blocks
        .iter()
        .map(|b| {
            (
                b.id,
                b.address,
                b.size,
                b.state.code(),
                b.alloc_event_id,
                b.free_event_id,
            )
        })
        .collect();
    got.sort();
    let expected = vec![
        (-2, 4294967808, 256, 1, -1, 6),
        (-1, 4294967296, 512, 1, -1, -1),
        (1, 4295032832, 1024, 1, 1, 4),
        (2, 4295033856, 2048, 1, 2, -1),
        (7, 4295032832, 512, 1, 7, -1),
        (10, 4295036928, 1024, 1, 10, -1),
        (13, 4295098368, 2048, 1, 13, 15),
    ];
    assert_eq!(got, expected);
}

#[test]
fn a_strict_replay_announces_its_block_rows_exactly_before_the_first() {
    // The dump's live blocks plus those the frees bring back: 4 + 3 in the worked example.
    let rows = replay(&worked_example(), 0).unwrap();
    assert_eq!(rows.blocks.len(), 7);
    assert_eq!(rows.announced, 7);
}

#[test]
fn negative_ids_restart_for_every_device() {
    let mut snap = worked_example();
    let mut second = snap.segments.clone();
    for s in &mut second {
        s.device = 1;
    }
    snap.segments.extend(second);
    snap.device_traces.push(snap.device_traces[0].clone());
    let d0 = replay(&snap, 0).unwrap();
    let d1 = replay(&snap, 1).unwrap();
    assert_eq!(d0.trace, d1.trace);
    assert_eq!(d0.blocks, d1.blocks);
}

#[test]
fn a_free_of_an_unknown_block_fails_with_the_event_named() {
    let snap = Snapshot {
        device_traces: vec![vec![event(Action::FreeCompleted, 4096, 512)]],
        ..Snapshot::default()
    };
    let err = replay(&snap, 0).unwrap_err();
    assert!(err.contains("event 0"), "{err}");
    assert!(err.contains("free_completed"), "{err}");
}

#[test]
fn expandable_map_and_unmap_split_and_merge_ranges() {
    use Action::*;
    let mb2 = 2 << 20;
    let base = 1 << 32;
    // Forward: map [0,2M), map [2M,4M), alloc at 2M, free it, unmap [2M,4M).
    let mut seg = free_segment(base, mb2);
    seg.is_expandable = true;
    let snap = Snapshot {
        segments: vec![seg],
        device_traces: vec![vec![
            event(SegmentMap, base, mb2),
            event(SegmentMap, base + mb2, mb2),
            event(Alloc, base + mb2, 4096),
            event(FreeRequested, base + mb2, 4096),
            event(FreeCompleted, base + mb2, 4096),
            event(SegmentUnmap, base + mb2, mb2),
        ]],
        ..Snapshot::default()
    };
    let rows = replay(&snap, 0).unwrap();
    let reserved: Vec<_> = rows.trace.iter().map(|r| (r.id, r.reserved)).collect();
    assert_eq!(
        reserved,
        vec![
            (5, mb2),
            (4, 2 * mb2),
            (3, 2 * mb2),
            (2, 2 * mb2),
            (1, 2 * mb2),
            (0, mb2)
        ]
    );
    assert_eq!(rows.blocks.len(), 1);
    assert_eq!(rows.blocks[0].free_event_id, 4);
}

/// Every way a replay may stop, in order: the stepwise replay and the full one must give the
/// same answer (the audit's sharded imports panicked where the single-DB import refused).
fn stepwise(snapshot: &Snapshot, device: usize) -> Result<usize, String> {
    let mut replayer = Replayer::new(snapshot, device).map_err(|e| e.to_string())?;
    let mut steps = 0;
    while let Some(step) = replayer.undo_last() {
        step.map_err(|e| e.to_string())?;
        steps += 1;
    }
    Ok(steps)
}

fn both(snapshot: &Snapshot) -> Result<usize, String> {
    let full = replay(snapshot, 0).map(|rows| rows.trace.iter().filter(|r| r.id >= 0).count());
    assert_eq!(full, stepwise(snapshot, 0), "the two paths disagree");
    full
}

#[test]
fn frees_of_size_zero_give_the_same_answer_stepwise_and_whole() {
    use Action::*;
    let base = 1 << 32;
    for size in [0, 512] {
        let snap = Snapshot {
            segments: vec![free_segment(base, 4096)],
            device_traces: vec![vec![
                event(Alloc, base, 512),
                event(FreeRequested, base, 512),
                event(FreeCompleted, base, size),
            ]],
            ..Snapshot::default()
        };
        let answer = both(&snap);
        if size == 0 {
            let err = answer.unwrap_err();
            assert!(err.contains("no live block"), "{err}");
        } else {
            assert_eq!(answer, Ok(3));
        }
    }
}

#[test]
fn sums_past_64_bits_fail_the_replay_instead_of_wrapping() {
    use Action::*;
    let base = 1 << 32;
    let big = i64::MAX - 4095;
    let live = |size| {
        segment(
            base,
            size,
            vec![block(base, size, BlockState::ActiveAllocated)],
        )
    };
    let cases: Vec<(&str, Snapshot)> = vec![
        // The dump's own totals: two segments whose sizes add past i64::MAX.
        (
            "dump-time state",
            Snapshot {
                segments: vec![live(big), segment(base << 8, big, vec![])],
                device_traces: vec![vec![event(Oom, -1, 0)]],
                ..Snapshot::default()
            },
        ),
        // Undoing a free re-creates a block that pushes `allocated` (the dump's own figure,
        // as the reference takes it) past i64::MAX.
        (
            "+",
            Snapshot {
                segments: vec![Segment {
                    allocated_size: big,
                    ..segment(base, 8192, vec![])
                }],
                device_traces: vec![vec![event(Free, base, 4096)]],
                ..Snapshot::default()
            },
        ),
        // A mapped range whose end is past i64::MAX.
        (
            "+",
            Snapshot {
                segments: vec![segment(i64::MAX - 10, 10, vec![])],
                device_traces: vec![vec![event(SegmentMap, i64::MAX - 10, 4096)]],
                ..Snapshot::default()
            },
        ),
        // Undoing an unmap re-creates a segment: `reserved` goes past i64::MAX.
        (
            "+",
            Snapshot {
                segments: vec![segment(base, big, vec![])],
                device_traces: vec![vec![event(SegmentUnmap, base << 8, big)]],
                ..Snapshot::default()
            },
        ),
    ];
    for (want, snap) in cases {
        let err = both(&snap).unwrap_err();
        assert!(err.contains("overflows a 64-bit integer"), "{err}");
        assert!(err.contains(want), "{err}");
    }
}

/// A trace with the traits of memviz-neo's test generator: no segments and no segment
/// events, and addresses that overlap live blocks.
fn trace_without_segments() -> Snapshot {
    use Action::*;
    let base = 1 << 32;
    let mut trace = Vec::new();
    // Blocks of 512 bytes every 256 bytes: each overlaps the one before it.
    for i in 0..6 {
        trace.push(event(Alloc, base + 256 * i, 512));
        if i >= 2 {
            let old = base + 256 * (i - 2);
            trace.push(event(FreeRequested, old, 512));
            trace.push(event(FreeCompleted, old, 512));
        }
    }
    trace.push(event(Oom, -1, 1 << 30));
    Snapshot {
        device_traces: vec![trace],
        ..Snapshot::default()
    }
}

fn replay_lenient(snapshot: &Snapshot) -> (Rows, Replayed) {
    let mut rows = Rows::default();
    let replayed = replay_device(snapshot, 0, Mode::Lenient, &mut rows, &mut |_| {}).unwrap();
    (rows, replayed)
}

#[test]
fn a_lenient_replay_counts_what_the_trace_alone_says() {
    let snap = trace_without_segments();
    assert!(replay(&snap, 0).is_err(), "the strict replay refuses it");
    let (rows, replayed) = replay_lenient(&snap);
    // Its first pass counted the block rows.
    assert_eq!(rows.announced, rows.blocks.len());
    // Counters from the trace alone: running sums of the events' own sizes from zero, each
    // block in a reservation of its own size (the dump has no segments).
    let events = &snap.device_traces[0];
    let (mut allocated, mut active) = (0, 0);
    let mut want = Vec::new();
    for (id, e) in events.iter().enumerate() {
        match e.action {
            Action::Alloc => {
                allocated += e.size;
                active += e.size;
            }
            Action::FreeRequested => allocated -= e.size,
            Action::FreeCompleted => active -= e.size,
            _ => {}
        }
        want.push((id as i64, allocated, active, active));
    }
    let mut got: Vec<_> = rows
        .trace
        .iter()
        .filter(|r| r.id >= 0)
        .map(|r| (r.id, r.allocated, r.active, r.reserved))
        .collect();
    got.sort();
    assert_eq!(got, want);
    // Every lifetime keeps both of its ends, paired by address.
    let mut lifetimes: Vec<_> = rows
        .blocks
        .iter()
        .map(|b| (b.address, b.alloc_event_id, b.free_event_id))
        .collect();
    lifetimes.sort();
    let base = 1 << 32;
    assert_eq!(lifetimes[0], (base, 0, 4));
    assert_eq!(lifetimes[1], (base + 256, 1, 7));
    assert_eq!(
        lifetimes.iter().filter(|l| l.2 == -1).count(),
        2,
        "{lifetimes:?}"
    );
    // What was set aside is listed: the allocs with no segment, and the shift to zero.
    let kinds: Vec<_> = replayed.issues.iter().map(|i| i.kind).collect();
    assert!(kinds.contains(&IssueKind::NoSegment), "{kinds:?}");
    assert_eq!(kinds.first(), Some(&IssueKind::DumpStateShort));
    assert!(replayed.issues.iter().all(|i| !i.message.is_empty()));
}

#[test]
fn a_lenient_replay_of_a_consistent_trace_is_the_strict_one() {
    let snap = worked_example();
    let strict = replay(&snap, 0).unwrap();
    let (lenient, replayed) = replay_lenient(&snap);
    assert_eq!(strict.trace, lenient.trace);
    assert_eq!(strict.blocks, lenient.blocks);
    assert!(replayed.issues.is_empty());
}

/// `0 ≤ allocated ≤ active ≤ reserved` on every row.
fn ordered(rows: &Rows) -> bool {
    (rows.trace.iter())
        .all(|r| 0 <= r.allocated && r.allocated <= r.active && r.active <= r.reserved)
}

#[test]
fn a_negative_size_is_refused_strictly_and_only_listed_leniently() {
    use Action::*;
    let base = 1 << 32;
    let snap = Snapshot {
        segments: vec![segment(
            base,
            4096,
            vec![
                block(base, 512, BlockState::ActiveAllocated),
                block(base + 512, 3584, BlockState::Inactive),
            ],
        )],
        // The reference took this alloc: a block of 512 bytes holds -512 of them.
        device_traces: vec![vec![event(Alloc, base, -512)]],
        ..Snapshot::default()
    };
    let err = replay(&snap, 0).unwrap_err();
    assert!(
        err.contains("failed at event 0 (alloc") && err.contains("size -512 is negative"),
        "{err}"
    );
    let (rows, replayed) = replay_lenient(&snap);
    let kinds: Vec<_> = replayed.issues.iter().map(|i| i.kind).collect();
    assert_eq!(kinds, [IssueKind::NegativeSize]);
    // Not applied: the dump's block was live before the trace, and the counters stay.
    assert!(ordered(&rows));
    assert_eq!(rows.trace[0].allocated, 512);
    assert_eq!(rows.blocks.len(), 1);
    assert_eq!(rows.blocks[0].alloc_event_id, -1);
}

#[test]
fn unmapping_a_range_under_a_live_block_is_refused() {
    use Action::*;
    let base = 1 << 32;
    // A live block over the whole mapped segment; undoing the map of its first half would
    // leave the block sticking out of what is reserved (active 4096 against reserved 2048).
    let mut seg = segment(
        base,
        4096,
        vec![block(base, 4096, BlockState::ActiveAllocated)],
    );
    seg.is_expandable = true;
    for (start, size) in [(base, 2048), (base + 1024, 2048), (base + 2048, 2048)] {
        let snap = Snapshot {
            segments: vec![seg.clone()],
            device_traces: vec![vec![event(SegmentMap, start, size)]],
            ..Snapshot::default()
        };
        let err = replay(&snap, 0).unwrap_err();
        assert!(err.contains("overlaps the range"), "{err}");
        let (rows, replayed) = replay_lenient(&snap);
        assert!(ordered(&rows), "{:?}", rows.trace);
        assert_eq!(replayed.issues[0].kind, IssueKind::SegmentMismatch);
    }
}

#[test]
fn a_lenient_replay_never_counts_past_64_bits_or_below_zero() {
    use Action::*;
    let base = 1 << 32;
    // Allocs of nearly 2^62 bytes the dump has no block for, and a reversed free/alloc pair.
    let huge = (1 << 62) - (1 << 20);
    let snap = Snapshot {
        segments: vec![free_segment(base, 4096)],
        device_traces: vec![vec![
            event(Alloc, base << 4, huge),
            event(Alloc, base << 5, huge),
            event(Alloc, base << 6, huge),
            event(FreeCompleted, base, 1024),
            event(FreeRequested, base, 1024),
            event(Alloc, base, 1024),
        ]],
        ..Snapshot::default()
    };
    let (rows, replayed) = replay_lenient(&snap);
    assert!(ordered(&rows), "{:?}", rows.trace);
    // Two of the three fit below 2^63 beside the segment and the small block: the third is
    // listed, not counted.
    let last = rows.trace.iter().find(|r| r.id == 5).unwrap();
    assert_eq!(last.reserved, 4096 + 2 * huge + 1024);
    let short = &replayed.issues[0];
    assert_eq!(short.kind, IssueKind::DumpStateShort);
    assert!(
        short.message.contains("1 more would take"),
        "{}",
        short.message
    );
    // Every lifetime's free after its alloc.
    assert!(rows.blocks.iter().all(|b| b.alloc_event_id < 0
        || b.free_event_id < 0
        || b.free_event_id > b.alloc_event_id));
}
