//! `report segments`' state is the import's replay, event for event: on every fixture of
//! the repository and, where present, the real captures and synthetic cases of `../shared`,
//! at every event of every device the live blocks' sizes add up to the counters (allocated
//! blocks to `allocated`, those and the pending frees to `active`) and the segments to
//! `reserved`; at a spread of events the map's blocks tile each segment; after the last
//! event the segments and blocks are the dump's own. A replay resumed from checkpoints
//! gives the states a replay from the start gives.

use std::path::{Path, PathBuf};

use pt_snap_import::ImportRequest;
use pt_snap_model::{BlockState as DumpState, Snapshot};
use pt_snap_query::Analyzer;
use pt_snap_report::segments::{map_of, segment_lifetimes, BlockState, Replay, SegmentMap};
use pt_snap_testkit::{pickles_in, shared_dir, FIXTURE_DIRS};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixtures() -> Vec<PathBuf> {
    let mut out = pickles_in(&root(), &FIXTURE_DIRS);
    assert!(out.len() >= 5, "the repository's fixtures are missing");
    for dir in ["fixtures/real", "fixtures/synthetic"] {
        if let Some(d) = shared_dir(dir) {
            out.extend(pickles_in(&d, &["."]));
        }
    }
    out
}

/// The database an import writes of `snapshot`, or `None` where the strict replay refuses it.
fn imported(snapshot: &Snapshot, len: usize) -> Option<Analyzer> {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    let request = ImportRequest::new("x", "0".repeat(64), len as u64, "now");
    pt_snap_import::import_snapshot(snapshot, &conn, &request, &mut |_| {}).ok()?;
    let db = pt_snap_db::SnapshotDb::from_connection(conn).unwrap();
    Some(Analyzer::new(db).unwrap())
}

/// The map's own sums and tiling.
fn check_map(map: &SegmentMap, what: &str) {
    assert_eq!(
        map.bytes_in(BlockState::ActiveAllocated),
        map.allocated,
        "{what}: allocated"
    );
    assert_eq!(
        map.bytes_in(BlockState::ActiveAllocated) + map.bytes_in(BlockState::ActivePendingFree),
        map.active,
        "{what}: active"
    );
    let reserved: i64 = map.segments.iter().map(|s| s.total_size).sum();
    assert_eq!(reserved, map.reserved, "{what}: reserved");
    assert!(
        map.outside_segments.is_empty(),
        "{what}: blocks outside segments"
    );
    for s in &map.segments {
        let mut at = s.address;
        for b in &s.blocks {
            assert_eq!(b.address, at, "{what}: blocks of {:#x} tile it", s.address);
            at += b.size;
        }
        assert_eq!(
            at,
            s.address + s.total_size,
            "{what}: {:#x} is tiled",
            s.address
        );
    }
    let total_free: i64 = map.pools.iter().map(|p| p.free_bytes).sum();
    assert_eq!(
        total_free,
        map.bytes_in(BlockState::Inactive),
        "{what}: free"
    );
    for p in &map.pools {
        if let Some(f) = p.fragmentation {
            assert!((0.0..1.0).contains(&f), "{what}: fragmentation {f}");
            assert!(
                (f - (1.0 - p.largest_free_block_bytes as f64 / p.free_bytes as f64)).abs() < 1e-12
            );
        }
    }
}

/// After the last event, the map is the dump: its segments (address, size, stream, kind,
/// pool) and, where the dump lists its free blocks, every block; where it lists live
/// blocks only, those. torch_npu's workspace segments are the exception the replay makes
/// on purpose (`DeviceState::adapt_workspace`): the dump reports them empty, the replay
/// holds the one block the trace's leading `workspace_snapshot` triplet allocated there.
fn check_last(snapshot: &Snapshot, device: usize, map: &SegmentMap, what: &str) -> usize {
    let trace = &snapshot.device_traces[device];
    let workspace: Vec<i64> = (trace.iter())
        .filter(|e| e.action == pt_snap_model::Action::WorkspaceSnapshot)
        .map(|e| e.addr)
        .collect();
    let mut dump: Vec<&pt_snap_model::Segment> = (snapshot.segments.iter())
        .filter(|s| s.device == device as i64)
        .collect();
    dump.sort_by_key(|s| s.address);
    assert_eq!(
        dump.len(),
        map.segments.len(),
        "{what}: segments after the last event"
    );
    let mut blocks = 0;
    for (d, m) in dump.iter().zip(&map.segments) {
        let at = format!("{what}: segment {:#x}", d.address);
        assert_eq!(
            (d.address, d.total_size, d.stream, d.is_expandable),
            (m.address, m.total_size, m.stream, m.is_expandable),
            "{at}"
        );
        let kind = match &*d.segment_type {
            "large" => Some("large"),
            "small" => Some("small"),
            _ => None,
        };
        if let Some(kind) = kind {
            assert_eq!((m.pool.name(), m.pool_recorded), (kind, true), "{at}: pool");
        }
        assert_eq!(m.segment_pool_id, d.pool_id, "{at}: pool id");
        let tiles = d.blocks.iter().map(|b| b.size).sum::<i64>() == d.total_size;
        let dumped: Vec<(i64, i64, &str, Option<i64>)> = (d.blocks.iter())
            .filter(|b| tiles || b.state != DumpState::Inactive)
            .map(|b| {
                let live = b.state != DumpState::Inactive;
                (
                    b.address,
                    b.size,
                    b.state.name(),
                    live.then_some(b.requested_size),
                )
            })
            .collect();
        if (!tiles && dumped.is_empty()) || workspace.contains(&d.address) {
            continue; // A workspace segment (above).
        }
        let mapped: Vec<(i64, i64, &str, Option<i64>)> = (m.blocks.iter())
            .filter(|b| tiles || b.state != BlockState::Inactive)
            .map(|b| (b.address, b.size, b.state.name(), b.requested_size))
            .collect();
        assert_eq!(dumped, mapped, "{at}: blocks");
        blocks += mapped.len();
    }
    blocks
}

#[test]
fn every_state_adds_up_and_the_last_is_the_dump() {
    let (mut files, mut events, mut maps, mut last_blocks) = (0, 0usize, 0, 0);
    let mut timeline = 0usize;
    for path in fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        let Ok(snapshot) = pt_snap_model::decode(&bytes[..], &mut |_| {}) else {
            continue;
        };
        let Some(analyzer) = imported(&snapshot, bytes.len()) else {
            continue;
        };
        files += 1;
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        for device in snapshot.devices_with_events() {
            let what = format!("{name} device {device}");
            let mut replay = Replay::start(&analyzer, Some(device as i64)).unwrap();
            let (first, last) = replay.bounds;
            let span = last - first;
            let spread: Vec<i64> = (0..=8).map(|k| first + span * k / 8).collect();
            // The segment timeline's bands add up to `reserved` too, checked every few events.
            let (bands, _) = segment_lifetimes(&analyzer.segment_events(device as i64).unwrap());
            let every = (span / 200).max(1);
            let mut sampled = Vec::new();
            replay
                .for_each_state(&analyzer, &mut |state| {
                    let e = state.event.unwrap();
                    assert_eq!(state.sums(), state.counters, "{what} event {e}");
                    events += 1;
                    if (e - first) % every == 0 || e == last {
                        let reserved: i64 = (bands.iter())
                            .filter(|b| b.live_at(e))
                            .map(|b| b.size)
                            .sum();
                        assert_eq!(reserved, state.counters.2, "{what} event {e}: timeline");
                        timeline += 1;
                    }
                    if spread.contains(&e) {
                        sampled.push(state.clone());
                    }
                })
                .unwrap();
            assert_eq!(
                sampled.last().and_then(|s| s.event),
                Some(last),
                "{what}: replayed to its last event"
            );
            for state in &sampled {
                let map = map_of(&analyzer, &replay, state).unwrap();
                check_map(&map, &format!("{what} event {}", map.event.id));
                maps += 1;
                // Resumed from the checkpoints the full replay kept: the same state.
                let resumed = replay.state_at(&analyzer, map.event.id, true).unwrap();
                let again = map_of(&analyzer, &replay, &resumed).unwrap();
                assert_eq!(again, map, "{what} event {}: resumed", map.event.id);
            }
            let end = map_of(&analyzer, &replay, sampled.last().unwrap()).unwrap();
            last_blocks += check_last(&snapshot, device, &end, &what);
        }
    }
    eprintln!(
        "segments: {files} files, {events} events checked, {maps} maps tiled, {last_blocks} dump blocks matched, {timeline} timeline columns"
    );
    assert!(files >= 10, "only {files} fixtures imported");
    assert!(events > 1000, "only {events} events checked");
}

#[test]
fn an_event_outside_the_device_is_refused_with_its_range() {
    let path = root().join("fixtures/synthetic/synth_small_2dev_oom.pkl");
    let bytes = std::fs::read(&path).unwrap();
    let snapshot = pt_snap_model::decode(&bytes[..], &mut |_| {}).unwrap();
    let analyzer = imported(&snapshot, bytes.len()).unwrap();
    let mut replay = Replay::start(&analyzer, Some(1)).unwrap();
    let (first, last) = replay.bounds;
    for bad in [first - 1, last + 1] {
        let err = replay.state_at(&analyzer, bad, false).unwrap_err();
        assert_eq!(err.code(), "INVALID_PARAMETER");
        assert!(
            err.to_string().contains(&format!("{first}..{last}")),
            "{err}"
        );
    }
}
