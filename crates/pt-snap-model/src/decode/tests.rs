//! Decoder tests: hand-built snapshot pickles, then every shared fixture.

use super::*;
use crate::{Action, BlockState, StackId};

/// A tiny pickle writer (protocol 2 opcodes), enough to express memo sharing.
enum P {
    I(i64),
    /// LONG1 payload: little-endian two's complement.
    Big(Vec<u8>),
    S(&'static str),
    B(bool),
    L(Vec<P>),
    D(Vec<(&'static str, P)>),
    /// The value, then BINPUT into that memo slot.
    Put(u8, Box<P>),
    /// BINGET of a memo slot.
    Get(u8),
    /// A float (BINFLOAT).
    F(f64),
    /// These opcodes (leaving the stack as it was), then the value.
    Ops(Vec<u8>, Box<P>),
    /// A 2-tuple (TUPLE2).
    T2(Box<P>, Box<P>),
}

impl P {
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            P::I(i) => {
                out.push(0x8a);
                out.push(8);
                out.extend_from_slice(&i.to_le_bytes());
            }
            P::Big(b) => {
                out.push(0x8a);
                out.push(b.len() as u8);
                out.extend_from_slice(b);
            }
            P::S(s) => {
                out.push(b'X');
                out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
            P::B(b) => out.push(if *b { 0x88 } else { 0x89 }),
            P::L(items) => {
                out.push(b']');
                for x in items {
                    x.write(out);
                    out.push(b'a');
                }
            }
            P::D(items) => {
                out.push(b'}');
                for (k, x) in items {
                    P::S(k).write(out);
                    x.write(out);
                    out.push(b's');
                }
            }
            P::Put(i, x) => {
                x.write(out);
                out.extend_from_slice(&[b'q', *i]);
            }
            P::Get(i) => out.extend_from_slice(&[b'h', *i]),
            P::F(f) => {
                out.push(b'G');
                out.extend_from_slice(&f.to_be_bytes());
            }
            P::Ops(ops, x) => {
                out.extend_from_slice(ops);
                x.write(out);
            }
            P::T2(a, b) => {
                a.write(out);
                b.write(out);
                out.push(0x86);
            }
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = vec![0x80, 2];
        self.write(&mut out);
        out.push(b'.');
        out
    }
}

fn frame(file: &'static str, line: i64) -> P {
    P::D(vec![
        ("filename", P::S(file)),
        ("line", P::I(line)),
        ("name", P::S("f")),
    ])
}

fn event(action: &'static str, addr: i64, frames: P) -> P {
    P::D(vec![
        ("action", P::S(action)),
        ("addr", P::I(addr)),
        ("size", P::I(512)),
        ("stream", P::I(0)),
        ("frames", frames),
    ])
}

fn block(address: i64, size: i64, frames: P) -> P {
    P::D(vec![
        ("address", P::I(address)),
        ("size", P::I(size)),
        ("requested_size", P::I(size - 1)),
        ("state", P::S("active_allocated")),
        ("frames", frames),
    ])
}

/// A segment of 1024 bytes holding `blocks`, its `allocated_size`/`active_size` their sums.
fn segment(address: i64, blocks: Vec<P>) -> P {
    let (mut allocated, mut active) = (0, 0);
    for b in &blocks {
        let P::D(items) = b else { continue };
        let field = |k: &str| items.iter().find(|(key, _)| *key == k).map(|(_, v)| v);
        let (Some(P::I(size)), Some(P::S(state))) = (field("size"), field("state")) else {
            continue;
        };
        allocated += if *state == "active_allocated" {
            *size
        } else {
            0
        };
        active += if *state == "inactive" { 0 } else { *size };
    }
    P::D(vec![
        ("device", P::I(0)),
        ("address", P::I(address)),
        ("total_size", P::I(1024)),
        ("stream", P::I(0)),
        ("segment_type", P::S("small")),
        ("allocated_size", P::I(allocated)),
        ("active_size", P::I(active)),
        ("blocks", P::L(blocks)),
    ])
}

fn snapshot(segments: Vec<P>, traces: Vec<Vec<P>>) -> P {
    P::D(vec![
        ("segments", P::L(segments)),
        (
            "device_traces",
            P::L(traces.into_iter().map(P::L).collect()),
        ),
    ])
}

fn schema_err(p: P) -> String {
    match decode_slice(&p.bytes()) {
        Err(DecodeError::Schema(m)) => m,
        other => panic!("expected a schema error, got {other:?}"),
    }
}

#[test]
fn a_frame_list_shared_through_the_memo_is_one_stack() {
    let frames = P::Put(1, Box::new(P::L(vec![frame("a.py", 1), frame("b.py", 2)])));
    let snap = snapshot(
        vec![segment(4096, vec![block(4096, 1024, frames)])],
        vec![vec![
            event("alloc", 4096, P::Get(1)),
            event("free_requested", 4096, P::Get(1)),
        ]],
    );
    let s = decode_slice(&snap.bytes()).unwrap();
    let ev = &s.device_traces[0];
    assert_eq!(ev[0].frames, ev[1].frames);
    assert_eq!(ev[0].frames, s.segments[0].blocks[0].frames);
    assert_ne!(ev[0].frames, StackId::EMPTY);
    assert_eq!(s.stacks.stack_count(), 2);
    assert_eq!(s.stacks.render(ev[0].frames), "b.py:2 f\na.py:1 f");
    assert_eq!(s.segments[0].blocks[0].requested_size, 1023);
    assert_eq!(ev[1].action, Action::FreeRequested);
}

#[test]
fn a_frame_dict_repeated_inside_one_list_decodes() {
    // Recursion: the same frame dict twice in one stack, fetched before the list is attached.
    let frames = P::L(vec![P::Put(3, Box::new(frame("r.py", 7))), P::Get(3)]);
    let s = decode_slice(&snapshot(vec![], vec![vec![event("alloc", 1, frames)]]).bytes()).unwrap();
    let st = s.device_traces[0][0].frames;
    assert_eq!(s.stacks.stack(st).len(), 2);
    assert_eq!(s.stacks.frame_count(), 1);
}

#[test]
fn bad_frames_are_reported_with_their_path_only_where_used() {
    let bad = P::D(vec![
        ("filename", P::S("x.py")),
        ("line", P::S("12")),
        ("name", P::S("g")),
    ]);
    let snap = snapshot(
        vec![],
        vec![vec![
            event("alloc", 1, P::L(vec![])),
            event("alloc", 2, P::L(vec![frame("a.py", 1), bad])),
        ]],
    );
    assert_eq!(
        schema_err(snap),
        "device_traces[0][1].frames[1].line: expected int, got str"
    );
    let bool_line = P::D(vec![
        ("filename", P::S("x.py")),
        ("line", P::B(true)),
        ("name", P::S("g")),
    ]);
    let snap = snapshot(vec![], vec![vec![event("alloc", 1, P::L(vec![bool_line]))]]);
    assert!(schema_err(snap).ends_with("frames[0].line: expected int, got bool"));
    // The same malformed frame where the importer never looks is not an error.
    let unused = P::D(vec![
        ("segments", P::L(vec![])),
        (
            "external_annotations",
            P::L(vec![P::D(vec![
                ("filename", P::S("x.py")),
                ("line", P::S("12")),
                ("name", P::S("g")),
            ])]),
        ),
    ]);
    assert!(decode_slice(&unused.bytes()).is_ok());
}

#[test]
fn pointers_up_to_two_to_the_64_are_twos_complement_and_beyond_is_an_error() {
    let mut two63_plus5 = vec![5, 0, 0, 0, 0, 0, 0, 0x80, 0];
    let ev = |addr: P| {
        P::D(vec![
            ("action", P::S("alloc")),
            ("addr", addr),
            (
                "stream",
                P::Big(vec![0xff; 8].into_iter().chain([0]).collect()),
            ),
        ])
    };
    let s = decode_slice(&snapshot(vec![], vec![vec![ev(P::Big(two63_plus5.clone()))]]).bytes())
        .unwrap();
    let e = s.device_traces[0][0];
    assert_eq!(e.addr, i64::MIN + 5);
    assert_eq!(e.stream, -1);
    assert_eq!((e.size, e.id), (0, None));
    two63_plus5.push(1); // now ≥ 2^64
    assert_eq!(
        schema_err(snapshot(vec![], vec![vec![ev(P::Big(two63_plus5))]])),
        "device_traces[0][0].addr: integer does not fit in 64 bits"
    );
    let big_size = P::D(vec![
        ("action", P::S("alloc")),
        ("size", P::Big(vec![0, 0, 0, 0, 0, 0, 0, 0x80, 0])),
    ]);
    assert!(schema_err(snapshot(vec![], vec![vec![big_size]]))
        .starts_with("device_traces[0][0].size: integer does not fit"));
}

#[test]
fn torch_2_0_blocks_get_derived_addresses_and_history_frames() {
    let legacy_block = |size: i64, history: Option<P>| {
        let mut items = vec![("size", P::I(size)), ("state", P::S("inactive"))];
        if let Some(h) = history {
            items.push(("history", h));
        }
        P::D(items)
    };
    let history = P::L(vec![
        P::D(vec![
            ("addr", P::I(1)),
            ("real_size", P::I(2)),
            ("frames", P::L(vec![frame("first.py", 1)])),
        ]),
        P::D(vec![
            ("addr", P::I(1)),
            ("real_size", P::I(2)),
            ("frames", P::L(vec![frame("second.py", 2)])),
        ]),
    ]);
    let seg = segment(
        1 << 40,
        vec![
            legacy_block(256, None),
            legacy_block(512, Some(history)),
            legacy_block(256, Some(P::L(vec![]))),
        ],
    );
    let s = decode_slice(&snapshot(vec![seg], vec![]).bytes()).unwrap();
    let b = &s.segments[0].blocks;
    let addrs: Vec<i64> = b.iter().map(|b| b.address).collect();
    assert_eq!(addrs, [1 << 40, (1 << 40) + 256, (1 << 40) + 768]);
    assert_eq!(b[0].requested_size, 256, "pre-2.0 blocks: requested = size");
    assert_eq!(b[1].state, BlockState::Inactive);
    assert_eq!(s.stacks.render(b[1].frames), "first.py:1 f");
    assert_eq!(b[2].frames, StackId::EMPTY);
    // Only referenced stacks survive: history[1] is never used.
    assert_eq!(s.stacks.stack_count(), 2);
    assert_eq!(s.stacks.frame_count(), 1);
}

#[test]
fn a_bare_segment_list_is_the_segment_list_layout() {
    let p = P::L(vec![
        segment(4096, vec![block(4096, 1024, P::L(vec![]))]),
        segment(8192, vec![]),
    ]);
    let s = decode_slice(&p.bytes()).unwrap();
    assert_eq!(s.layout, TopLevel::SegmentList);
    assert_eq!(s.segments.len(), 2);
    assert!(s.device_traces.is_empty());
}

#[test]
fn actions_ids_and_defaults() {
    let bare = |action: &'static str| P::D(vec![("action", P::S(action))]);
    let with_id = P::D(vec![("action", P::S("alloc")), ("id", P::I(105))]);
    let p = snapshot(
        vec![],
        vec![
            vec![],
            vec![
                bare("snapshot"),
                bare("free"),
                bare("weird"),
                bare("snapshot"),
                with_id,
            ],
        ],
    );
    let mut last = None;
    let s = decode(&p.bytes()[..], &mut |pr| last = Some(pr)).unwrap();
    assert_eq!(s.devices_with_events(), [1]);
    let ev = &s.device_traces[1];
    let actions: Vec<Action> = ev.iter().map(|e| e.action).collect();
    assert_eq!(
        actions,
        [
            Action::Other(0),
            Action::Free,
            Action::Other(1),
            Action::Other(0),
            Action::Alloc
        ]
    );
    assert_eq!(
        &*s.other_actions,
        [Box::from("snapshot"), Box::from("weird")]
    );
    assert_eq!((ev[0].addr, ev[0].size, ev[0].stream), (-1, 0, 0));
    assert_eq!((ev[0].id, ev[4].id), (None, Some(105)));
    let last = last.expect("a final progress report");
    assert_eq!(last.events, 5);
    assert_eq!(last.bytes_read, p.bytes().len() as u64);
}

#[test]
fn wrong_shapes_name_their_path() {
    assert_eq!(
        schema_err(P::I(3)),
        "top level is a int, expected a dict or a list of segments"
    );
    let no_blocks = P::D(vec![(
        "segments",
        P::L(vec![P::D(vec![("address", P::I(1)), ("blocks", P::I(1))])]),
    )]);
    assert_eq!(
        schema_err(no_blocks),
        "segments[0]: segment has no 'total_size'"
    );
    let bad_blocks = P::L(vec![segment(
        0,
        vec![P::D(vec![("size", P::I(1)), ("state", P::S("lost"))])],
    )]);
    assert_eq!(
        schema_err(bad_blocks),
        "[0].blocks[0].state: unknown block state 'lost'"
    );
    let traces_not_list = P::D(vec![("device_traces", P::S("x"))]);
    assert_eq!(
        schema_err(traces_not_list),
        "device_traces: expected a list of per-device lists, got str"
    );
    let no_action = snapshot(vec![], vec![vec![P::D(vec![("addr", P::I(1))])]]);
    assert_eq!(
        schema_err(no_action),
        "device_traces[0][0]: trace entry has no 'action'"
    );
}

#[test]
fn one_event_object_in_two_lists_is_refused_not_duplicated_silently() {
    let p = P::D(vec![(
        "device_traces",
        P::L(vec![
            P::L(vec![P::Put(9, Box::new(event("alloc", 1, P::L(vec![]))))]),
            P::L(vec![P::Get(9)]),
        ]),
    )]);
    assert!(schema_err(p).contains("also appears elsewhere"));
}

#[test]
fn unsafe_and_corrupt_pickles_keep_their_category() {
    let od = b"\x80\x04\x95\"\x00\x00\x00\x00\x00\x00\x00\x8c\x0bcollections\x94\x8c\x0bOrderedDict\x94\x93\x94)R\x94.";
    let e = decode_slice(od).unwrap_err();
    assert!(matches!(e, DecodeError::Unsafe(_)));
    assert_eq!(
        e.to_string(),
        "Unsafe pickle: global 'collections.OrderedDict' is not allowed. Only basic Python types are permitted for security."
    );
    assert!(matches!(
        decode_slice(b""),
        Err(DecodeError::Unrecognized(_))
    ));
    assert!(matches!(
        decode_slice(b"\x80\x04}"),
        Err(DecodeError::Pickle(_))
    ));
}

mod fixtures {

    use super::*;

    /// Counts computed independently with CPython's `pickle.load` (script in the commit
    /// message of this test): file, segments, blocks, events per device list, distinct
    /// stacks (the empty one included), distinct frames, wrapping sum of block addresses
    /// (derived for torch 2.0 blocks), wrapping sum of `addr + size` over all events.
    type Counts = (
        &'static str,
        usize,
        usize,
        &'static [usize],
        usize,
        usize,
        i64,
        i64,
    );

    #[rustfmt::skip]
    const EXPECTED: &[Counts] = &[
        ("real/cuda_attention__memory_139k.pickle", 370, 3019, &[0, 0], 4, 67, 388625728255751168, 0),
        ("real/cuda_code_location__memory_snapshot_OOM.pickle", 12, 790, &[6445, 596, 882, 0], 267, 825, 143996631574528, 996926738230913),
        ("real/cuda_cs336_kkaitlyn111__memory_ctx256_fullstep_.pickle", 1021, 1711, &[20128], 180, 561, 240584304806216192, 2830124351746587446),
        ("real/cuda_cs336_kkaitlyn111__memory_ctx512_forward.pickle", 649, 991, &[4152], 807, 1034, 138830354536368128, 581627309587930264),
        ("real/cuda_cs336_kkaitlyn111__memory_snapshot.pickle", 1457, 1912, &[0], 7, 127, 268735047624778240, 0),
        ("real/cuda_cs336_magma27__memory_snapshot.pickle", 216, 455, &[5163], 55, 55, 23544421935616, 274866275276861),
        ("real/cuda_cs336_nothanmin__memory_snapshot.pickle", 999, 1987, &[19464], 181, 558, 279205509497956864, 2734876661840417863),
        ("real/cuda_cs336_silmont2000__mem_snapshot.pickle", 9, 20, &[97], 43, 245, 2795605274132992, 13558642906372892),
        ("real/cuda_cs336_wedsonlin__medium_512_training_memory_snapshot.pickle", 400, 1041, &[22332], 189, 538, 36395061929984, 800929065890195),
        ("real/cuda_diffusion__my_snapshot.pickle", 7, 168, &[1], 11, 27, 13726405838848, 81708937216),
        ("real/cuda_eor_nn__snapshot.pickle", 10, 54, &[5803], 82, 449, 7556334209497600, 810765840249333626),
        ("real/cuda_ftcourse__memory_snapshot.pickle", 215, 1079, &[10307], 153, 551, 150988537833271296, 1442282167795774652),
        ("real/cuda_hitsbe__my_snapshot_EMPTY.pickle", 0, 0, &[0], 1, 0, 0, 0),
        ("real/cuda_layoutediting__dump_snapshot_495k.pickle", 673, 6644, &[1, 1], 52, 79, 933223338530592768, 140453836488704),
        ("real/cuda_layoutediting__memory_snapshot_LIST.pkl", 255, 2140, &[], 12, 34, 299579581136900096, 0),
        ("real/cuda_legacy_flexgen__1.3b_snapshot_a228.pickle", 266, 791, &[1], 35, 49, 110494787188033536, 139686146242560),
        ("real/cuda_legacy_flexgen__oom_snapshot.pickle", 176, 463, &[1], 4, 12, 64841741203128320, 11840159744),
        ("real/cuda_octree_nca__cuda_single_step.pickle", 2, 79, &[5], 4, 81, 10718784099313152, 678395171307520),
        ("real/cuda_octree_nca__my_snapshot_266k.pickle", 22, 97, &[902], 51, 164, 12707473974486528, 118034376933008888),
        ("real/cuda_octree_nca__my_snapshot_988k.pickle", 51, 452, &[3797], 108, 358, 59308514874302464, 498228465567531048),
        ("real/cuda_select_n__snapshot_10k.pickle", 40, 213, &[0, 0, 0, 0], 1, 0, 29742157137397760, 0),
        ("real/cuda_sqattn__cuda_memory_snapshot.pickle", 4, 10, &[9576, 0, 0, 0], 150, 302, 1399992078171136, 1340510040322486272),
        ("real/npu_memsnapdump__snapshot_expandable.pkl", 2, 717, &[8092, 0, 0, 0, 0, 0, 0, 0], 60, 62, 14797650930652672, 167042512665864552),
        ("real/npu_memsnapdump__snapshot_with_empty_cache.pkl", 34, 685, &[8180, 0, 0, 0, 0, 0, 0, 0], 61, 67, 14122686177667584, 168648723005635944),
        ("real/npu_memsnapdump__snapshot_with_empty_cache_expandable.pkl", 3, 718, &[8132, 0, 0, 0, 0, 0, 0, 0], 61, 67, 14818274312934912, 167868487286677864),
        ("synthetic/caseA_legacy_free.pkl", 1, 1, &[3], 3, 2, 4294967296, 12884907008),
        ("synthetic/caseB_expandable.pkl", 1, 2, &[7], 6, 5, 8589935616, 30081561600),
        ("synthetic/caseC2_workspace.pkl", 2, 3, &[5], 4, 3, 12901679616, 21525197312),
        ("synthetic/caseC_workspace.pkl", 1, 1, &[5], 3, 2, 4311744512, 21558763520),
        ("synthetic/caseD_inconsistent.pkl", 0, 0, &[1], 1, 0, 0, 4294967312),
        ("synthetic/caseE_devices.pkl", 1, 0, &[2, 0], 1, 0, 0, 8589942784),
        ("synthetic/synth_small_1dev.pkl", 2, 8, &[17], 9, 19, 34360145920, 1163937353727),
        ("synthetic/synth_small_2dev.pkl", 4, 16, &[17, 17], 9, 19, 584116367360, 3294242349054),
        ("synthetic/synth_small_2dev_oom.pkl", 4, 16, &[16, 16], 9, 19, 584116367360, 3294242349054),
        ("upstream-pkg/snapshots/snapshot_1768383987920985470.pkl", 52, 52, &[9700], 66, 67, 1072094179753984, 199986299087510648),
        ("upstream-pkg/snapshots/snapshot_expandable.pkl", 2, 717, &[8092, 0, 0, 0, 0, 0, 0, 0], 60, 62, 14797650930652672, 167042512665864552),
        ("upstream-pkg/snapshots/snapshot_with_empty_cache.pkl", 34, 685, &[8180, 0, 0, 0, 0, 0, 0, 0], 61, 67, 14122686177667584, 168648723005635944),
        ("upstream-pkg/snapshots/snapshot_with_empty_cache_expandable.pkl", 3, 718, &[8132, 0, 0, 0, 0, 0, 0, 0], 61, 67, 14818274312934912, 167868487286677864),
        ("upstream-pkg/snapshots/snapshot_with_multi_devices.pkl", 55, 770, &[8132, 9700, 0, 0, 0, 0, 0, 0], 126, 78, 15890368492688896, 367854786374188512),
    ];

    #[test]
    fn every_fixture_decodes_to_the_counts_cpython_sees() {
        let Some(root) = pt_snap_testkit::shared_fixtures() else {
            return;
        };
        for &(file, segs, blocks, events, stacks, frames, addr_sum, ev_sum) in EXPECTED {
            let f = std::fs::File::open(root.join(file)).expect(file);
            let len = f.metadata().expect(file).len();
            let s = decode_sized(f, len, &mut |_| {}).unwrap_or_else(|e| panic!("{file}: {e}"));
            let got_blocks: usize = s.segments.iter().map(|g| g.blocks.len()).sum();
            let got_events: Vec<usize> = s.device_traces.iter().map(Vec::len).collect();
            let got_addr = (s.segments.iter().flat_map(|g| &g.blocks))
                .fold(0i64, |a, b| a.wrapping_add(b.address));
            let got_ev = (s.device_traces.iter().flatten())
                .fold(0i64, |a, e| a.wrapping_add(e.addr).wrapping_add(e.size));
            assert_eq!(
                (s.segments.len(), got_blocks, &got_events[..]),
                (segs, blocks, events),
                "{file}"
            );
            assert_eq!(
                (s.stacks.stack_count(), s.stacks.frame_count()),
                (stacks, frames),
                "{file}"
            );
            assert_eq!((got_addr, got_ev), (addr_sum, ev_sum), "{file}");
            let want_layout = if file.ends_with("_LIST.pkl") {
                TopLevel::SegmentList
            } else {
                TopLevel::Dict
            };
            assert_eq!(s.layout, want_layout, "{file}");
        }
    }

    /// Times computed independently with CPython's `pickle.load`: trace entries whose
    /// `time_us` is an int (not a bool) within 64 bits, and the wrapping sum over every
    /// device of `time_us * (position + 1)`.
    #[rustfmt::skip]
    const TIMES: &[(&str, usize, i64)] = &[
        ("real/cuda_attention__memory_139k.pickle", 0, 0),
        ("real/cuda_code_location__memory_snapshot_OOM.pickle", 7923, -3247515995230085351),
        ("real/cuda_cs336_kkaitlyn111__memory_ctx256_fullstep_.pickle", 20128, 3926161980969483051),
        ("real/cuda_cs336_kkaitlyn111__memory_ctx512_forward.pickle", 4152, 3712063561725289186),
        ("real/cuda_cs336_kkaitlyn111__memory_snapshot.pickle", 0, 0),
        ("real/cuda_cs336_magma27__memory_snapshot.pickle", 5163, -3607341364462295990),
        ("real/cuda_cs336_nothanmin__memory_snapshot.pickle", 19464, -4243917649469045500),
        ("real/cuda_cs336_silmont2000__mem_snapshot.pickle", 97, 8425589357752923245),
        ("real/cuda_cs336_wedsonlin__medium_512_training_memory_snapshot.pickle", 22332, 2088496545350769365),
        ("real/cuda_diffusion__my_snapshot.pickle", 1, 1709895075849930),
        ("real/cuda_eor_nn__snapshot.pickle", 5803, 6611335787562605803),
        ("real/cuda_ftcourse__memory_snapshot.pickle", 0, 0),
        ("real/cuda_hitsbe__my_snapshot_EMPTY.pickle", 0, 0),
        ("real/cuda_layoutediting__dump_snapshot_495k.pickle", 2, 3416374059120926),
        ("real/cuda_layoutediting__memory_snapshot_LIST.pkl", 0, 0),
        ("real/cuda_legacy_flexgen__1.3b_snapshot_a228.pickle", 0, 0),
        ("real/cuda_legacy_flexgen__oom_snapshot.pickle", 0, 0),
        ("real/cuda_octree_nca__cuda_single_step.pickle", 5, 25973076043767539),
        ("real/cuda_octree_nca__my_snapshot_266k.pickle", 902, 4053331572213355391),
        ("real/cuda_octree_nca__my_snapshot_988k.pickle", 3797, -8879612111966234467),
        ("real/cuda_select_n__snapshot_10k.pickle", 0, 0),
        ("real/cuda_sqattn__cuda_memory_snapshot.pickle", 9576, -4280502286248681966),
        ("real/npu_memsnapdump__snapshot_expandable.pkl", 0, 0),
        ("real/npu_memsnapdump__snapshot_with_empty_cache.pkl", 0, 0),
        ("real/npu_memsnapdump__snapshot_with_empty_cache_expandable.pkl", 0, 0),
        ("synthetic/caseA_legacy_free.pkl", 0, 0),
        ("synthetic/caseB_expandable.pkl", 0, 0),
        ("synthetic/caseC2_workspace.pkl", 0, 0),
        ("synthetic/caseC_workspace.pkl", 0, 0),
        ("synthetic/caseD_inconsistent.pkl", 0, 0),
        ("synthetic/caseE_devices.pkl", 0, 0),
        ("synthetic/synth_small_1dev.pkl", 17, 154785),
        ("synthetic/synth_small_2dev.pkl", 34, 309570),
        ("synthetic/synth_small_2dev_oom.pkl", 32, 275174),
        ("upstream-pkg/snapshots/snapshot_1768383987920985470.pkl", 0, 0),
        ("upstream-pkg/snapshots/snapshot_expandable.pkl", 0, 0),
        ("upstream-pkg/snapshots/snapshot_with_empty_cache.pkl", 0, 0),
        ("upstream-pkg/snapshots/snapshot_with_empty_cache_expandable.pkl", 0, 0),
        ("upstream-pkg/snapshots/snapshot_with_multi_devices.pkl", 0, 0),
    ];

    #[test]
    fn every_fixture_keeps_the_times_cpython_sees() {
        let Some(root) = pt_snap_testkit::shared_fixtures() else {
            return;
        };
        assert_eq!(TIMES.len(), EXPECTED.len());
        for &(file, timed, sum) in TIMES {
            let f = std::fs::File::open(root.join(file)).expect(file);
            let len = f.metadata().expect(file).len();
            let s = decode_sized(f, len, &mut |_| {}).unwrap_or_else(|e| panic!("{file}: {e}"));
            let (mut n, mut got) = (0, 0i64);
            for d in 0..s.device_traces.len() {
                assert!(s.times(d).runs() <= 2, "{file}: one clock, one or two runs");
                for (i, t) in s.times(d).iter(&s.device_traces[d]).enumerate() {
                    if let Some(t) = t {
                        n += 1;
                        got = got.wrapping_add(t.wrapping_mul(i as i64 + 1));
                    }
                }
            }
            assert_eq!((n, got), (timed, sum), "{file}");
        }
    }

    #[test]
    fn every_fixture_in_the_corpus_is_listed() {
        let Some(root) = pt_snap_testkit::shared_fixtures() else {
            return;
        };
        for dir in ["real", "upstream-pkg/snapshots", "synthetic"] {
            for e in std::fs::read_dir(root.join(dir)).unwrap() {
                let name = e.unwrap().file_name().into_string().unwrap();
                if name.ends_with(".pkl") || name.ends_with(".pickle") {
                    let rel = format!("{dir}/{name}");
                    assert!(
                        EXPECTED.iter().any(|x| x.0 == rel),
                        "{rel} has no expected counts"
                    );
                }
            }
        }
    }

    #[test]
    fn legacy_fixtures_have_contiguous_derived_block_addresses() {
        let Some(root) = pt_snap_testkit::shared_fixtures() else {
            return;
        };
        for file in [
            "real/cuda_legacy_flexgen__1.3b_snapshot_a228.pickle",
            "real/cuda_legacy_flexgen__oom_snapshot.pickle",
        ] {
            let s = decode_slice(&std::fs::read(root.join(file)).unwrap()).unwrap();
            for seg in &s.segments {
                let mut at = seg.address;
                for b in &seg.blocks {
                    assert_eq!(b.address, at, "{file}");
                    at += b.size;
                }
                assert_eq!(at, seg.address + seg.total_size, "{file}");
            }
            let with_frames = (s.segments.iter().flat_map(|g| &g.blocks))
                .filter(|b| b.frames != StackId::EMPTY)
                .count();
            assert!(with_frames > 0, "{file}: history frames were read");
        }
    }
}

#[test]
fn an_oom_keeps_its_device_free_and_a_value_that_is_no_byte_count_is_unknown() {
    let oom = |free: P| {
        P::D(vec![
            ("action", P::S("oom")),
            ("size", P::I(1 << 20)),
            ("device_free", free),
        ])
    };
    let p = snapshot(
        vec![],
        vec![vec![
            oom(P::I(4096)),
            oom(P::S("n/a")),
            oom(P::Big([0xff; 8].into_iter().chain([0x7f]).collect())),
            // No `size_t` is negative.
            oom(P::I(-4096)),
        ]],
    );
    let s = decode(&p.bytes()[..], &mut |_| {}).expect("the reference ignores device_free");
    assert_eq!(s.device_traces[0].len(), 4);
    let kept: Vec<(usize, i64)> = s
        .oom_device_free
        .iter()
        .map(|f| (f.position, f.device_free))
        .collect();
    assert_eq!(kept, [(0, 4096)]);
}

fn timed(action: &'static str, time: P) -> P {
    P::D(vec![
        ("action", P::S(action)),
        ("addr", P::I(4096)),
        ("size", P::I(512)),
        ("time_us", time),
    ])
}

fn times(s: &crate::Snapshot, device: usize) -> Vec<Option<i64>> {
    s.times(device).iter(&s.device_traces[device]).collect()
}

#[test]
fn times_are_kept_and_a_value_that_is_no_int_is_none() {
    const T: i64 = 1_757_253_255_215_904;
    let p = snapshot(
        vec![],
        vec![
            vec![
                timed("alloc", P::I(T)),
                timed("free_requested", P::I(T + 7)),
                event("free_completed", 4096, P::L(vec![])),
                timed("alloc", P::S("n/a")),
                timed("alloc", P::F(1.5)),
                timed("alloc", P::B(true)),
                timed(
                    "alloc",
                    P::Big([0xff; 8].into_iter().chain([0x7f]).collect()),
                ),
                timed("alloc", P::I(-3)),
            ],
            vec![],
            // Across a multiple of 2^32 µs, and back.
            vec![
                timed("alloc", P::I((9 << 32) - 1)),
                timed("alloc", P::I(9 << 32)),
                timed("alloc", P::I((9 << 32) - 2)),
            ],
            vec![event("alloc", 4096, P::L(vec![]))],
        ],
    );
    let s = decode(&p.bytes()[..], &mut |_| {}).expect("the reference ignores time_us");
    let t = times(&s, 0);
    assert_eq!(
        t,
        [Some(T), Some(T + 7), None, None, None, None, None, Some(-3)]
    );
    assert_eq!(s.event_time(0, 1), Some(T + 7));
    assert!(s.times(1).is_empty());
    assert_eq!(
        times(&s, 2),
        [Some((9 << 32) - 1), Some(9 << 32), Some((9 << 32) - 2)]
    );
    assert!(s.times(3).is_empty() && s.times(7).is_empty());
    assert_eq!(s.event_time(3, 0), None);
    // JSON snapshots keep them the same way.
    let json = br#"{"device_traces": [[{"action": "alloc", "addr": 1, "size": 512, "time_us": 1757253255215904},
        {"action": "alloc", "addr": 2, "size": 512, "time_us": 1.5e15},
        {"action": "alloc", "addr": 3, "size": 512, "time_us": 99999999999999999999}]]}"#;
    let s = decode_slice(json).unwrap();
    assert_eq!(times(&s, 0), [Some(T), None, None]);
}

/// An entry dict filled through the memo after its list was built is decoded in the final
/// pass, beside entries the stream compacted: both keep their times, in list order.
#[test]
fn times_survive_entries_decoded_late_and_lists_claimed_out_of_order() {
    const T: i64 = 1_700_000_000_000_000;
    let fill = |slot: u8, items: Vec<(&'static str, P)>, pop: bool| {
        let mut ops = vec![b'h', slot, b'('];
        for (k, v) in items {
            P::S(k).write(&mut ops);
            v.write(&mut ops);
        }
        ops.push(b'u');
        if pop {
            ops.push(b'0');
        }
        ops
    };
    let late = || {
        vec![
            ("action", P::S("alloc")),
            ("addr", P::I(4096)),
            ("size", P::I(512)),
            ("time_us", P::I(T)),
        ]
    };
    for pop in [true, false] {
        // pop: the filled dict is never attached again and stays raw (the final pass reads
        // it); otherwise it is attached to the root under "z" and compacted after the
        // entries that follow it in the list (claimed by index, out of order).
        let filler = if pop {
            P::Ops(fill(1, late(), true), Box::new(P::I(0)))
        } else {
            P::Ops(fill(1, late(), false), Box::new(P::I(0)))
        };
        let root = P::D(vec![
            (
                "device_traces",
                P::L(vec![P::L(vec![
                    P::Put(1, Box::new(P::D(vec![]))),
                    timed("free_requested", P::I(T + 1)),
                    event("free_completed", 4096, P::L(vec![])),
                    timed("alloc", P::I(T + 3)),
                ])]),
            ),
            ("z", filler),
        ]);
        let mut bytes = root.bytes();
        if !pop {
            // Replace the "z" value's int by the dict itself: drop the int, keep the dict.
            let int_at = bytes.len() - 1 - 1 - 10;
            bytes.drain(int_at..int_at + 10);
        }
        let s = decode_slice(&bytes).unwrap_or_else(|e| panic!("pop={pop}: {e}"));
        assert_eq!(s.device_traces[0].len(), 4, "pop={pop}");
        assert_eq!(
            times(&s, 0),
            [Some(T), Some(T + 1), None, Some(T + 3)],
            "pop={pop}"
        );
    }
}

#[test]
fn a_trace_of_known_length_is_stored_as_planned_and_claimed_without_a_copy() {
    // Entries of ~1 KiB, so that the first chunk's bytes are measured to within the
    // decoder's 64 KiB reads.
    let note: &'static str = Box::leak("n".repeat(1000).into_boxed_str());
    let entries = (0..4096)
        .map(|i| {
            P::D(vec![
                ("action", P::S("alloc")),
                ("addr", P::I(i)),
                ("note", P::S(note)),
            ])
        })
        .collect();
    let bytes = snapshot(vec![], vec![entries]).bytes();
    let copies = || tables::COPIES.with(|c| c.get());
    let before = copies();
    let planned = decode_sized(&bytes[..], bytes.len() as u64, &mut |_| {}).unwrap();
    assert_eq!(
        copies(),
        before,
        "a planned trace is claimed as it was stored"
    );
    let unplanned = decode(&bytes[..], &mut |_| {}).unwrap();
    assert_eq!(
        copies(),
        before + 1,
        "without the length, the chunks are copied once"
    );
    assert_eq!(planned.device_traces, unplanned.device_traces);
    assert_eq!(planned.device_traces[0].len(), 4096);
}

fn pooled(action: &'static str, pool: P) -> P {
    P::D(vec![
        ("action", P::S(action)),
        ("addr", P::I(4096)),
        ("size", P::I(512)),
        ("pool_id", pool),
    ])
}

fn pair(a: i64, b: i64) -> P {
    P::T2(Box::new(P::I(a)), Box::new(P::I(b)))
}

/// pytorch#177717's `pool_id` of trace entries and the segments' `segment_pool_id` are
/// kept; a value that is no pair of ints is none, never a reason to refuse the file.
#[test]
fn pool_ids_are_kept_and_a_value_that_is_no_pair_is_none() {
    let mut seg = segment(0, vec![block(0, 512, P::L(vec![]))]);
    if let P::D(items) = &mut seg {
        items.push(("segment_pool_id", pair(1, 2)));
    }
    let p = snapshot(
        vec![seg],
        vec![
            vec![
                pooled("segment_alloc", pair(0, 0)),
                pooled("alloc", pair(1, 2)),
                event("free_requested", 4096, P::L(vec![])),
                pooled("free_completed", P::S("(1, 2)")),
                pooled("alloc", P::L(vec![P::I(3), P::I(4)])),
                pooled("alloc", P::T2(Box::new(P::I(3)), Box::new(P::S("x")))),
            ],
            vec![event("alloc", 4096, P::L(vec![]))],
        ],
    );
    let s = decode(&p.bytes()[..], &mut |_| {}).unwrap();
    let pools: Vec<_> = s.pools(0).iter(6).collect();
    assert_eq!(
        pools,
        [Some((0, 0)), Some((1, 2)), None, None, Some((3, 4)), None]
    );
    assert_eq!(s.event_pool(0, 1), Some((1, 2)));
    assert!(s.pools(1).is_empty() && s.pools(9).is_empty());
    assert_eq!(s.segments[0].pool_id, Some((1, 2)));
    let json = br#"{"segments": [], "device_traces": [[{"action": "alloc", "addr": 1, "size": 512, "pool_id": [0, 7]}]]}"#;
    assert_eq!(decode_slice(json).unwrap().event_pool(0, 0), Some((0, 7)));
}

/// `allocator_settings`' ring-buffer fields (pytorch#179276), one value for every device or
/// one per device; anything else says nothing.
#[test]
fn the_trace_buffer_settings_are_read_for_every_device_or_each() {
    let with = |settings: P| {
        let p = P::D(vec![
            ("segments", P::L(vec![])),
            (
                "device_traces",
                P::L(vec![P::L(vec![event("alloc", 1, P::L(vec![]))])]),
            ),
            ("allocator_settings", settings),
        ]);
        decode(&p.bytes()[..], &mut |_| {}).unwrap().trace_buffer
    };
    let all = with(P::D(vec![
        ("expandable_segments", P::B(false)),
        ("trace_alloc_overflowed", P::B(true)),
        ("trace_alloc_max_entries", P::I(100_000)),
    ]));
    assert_eq!(
        (all.overflowed(0), all.overflowed(3)),
        (Some(true), Some(true))
    );
    assert_eq!(all.max_entries(5), Some(100_000));
    let each = with(P::D(vec![
        (
            "trace_alloc_overflowed",
            P::L(vec![P::B(false), P::B(true)]),
        ),
        ("trace_alloc_max_entries", P::S("lots")),
    ]));
    assert_eq!(
        (each.overflowed(0), each.overflowed(1), each.overflowed(2)),
        (Some(false), Some(true), None)
    );
    assert_eq!(each.max_entries(0), None);
    assert_eq!(with(P::D(vec![])), crate::TraceBuffer::default());
    assert_eq!(with(P::I(3)), crate::TraceBuffer::default());
    let json = br#"{"device_traces": [[]], "allocator_settings": {"trace_alloc_overflowed": {"1": true}}}"#;
    // JSON object keys are strings: not a device ordinal this reads.
    assert_eq!(decode_slice(json).unwrap().trace_buffer.overflowed(1), None);
}

/// The pinned host allocator's `host_segments` and `host_traces` (torch ≥ 2.14 with
/// `record_pinned_host_memory=True`, pytorch#182407) are not read: their layout is not
/// published where we could check it. Segment- and entry-shaped dicts under them stream
/// through the same compaction as the device's; the device's data decodes the same.
#[test]
fn host_memory_keys_leave_the_device_data_as_it_was() {
    let device = || {
        (
            vec![segment(
                0,
                vec![block(0, 512, P::L(vec![frame("a.py", 1)]))],
            )],
            vec![vec![
                event("segment_alloc", 0, P::L(vec![])),
                event("alloc", 0, P::L(vec![frame("a.py", 1)])),
            ]],
        )
    };
    let (segments, traces) = device();
    let plain = decode(&snapshot(segments, traces).bytes()[..], &mut |_| {}).unwrap();
    for host_first in [true, false] {
        let (segments, traces) = device();
        let host = vec![
            (
                "host_segments",
                P::L(vec![segment(
                    1 << 20,
                    vec![block(1 << 20, 512, P::L(vec![]))],
                )]),
            ),
            (
                "host_traces",
                P::L(vec![
                    event("segment_alloc", 1 << 20, P::L(vec![])),
                    event("alloc", 1 << 20, P::L(vec![frame("b.py", 2)])),
                ]),
            ),
        ];
        let device_keys = vec![
            ("segments", P::L(segments)),
            (
                "device_traces",
                P::L(traces.into_iter().map(P::L).collect()),
            ),
        ];
        let items = if host_first {
            host.into_iter().chain(device_keys).collect()
        } else {
            device_keys.into_iter().chain(host).collect()
        };
        let s = decode(&P::D(items).bytes()[..], &mut |_| {}).unwrap();
        assert_eq!(s.segments, plain.segments, "host first: {host_first}");
        assert_eq!(
            s.device_traces, plain.device_traces,
            "host first: {host_first}"
        );
    }
}
