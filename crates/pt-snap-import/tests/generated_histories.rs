//! Property test: random allocator histories from the generator (any seed, streams,
//! expandable mode, ring-buffer truncation, several devices) import, and every replayed
//! state obeys the allocator's invariants.

use proptest::prelude::*;
use pt_snap_import::{import_snapshot, ImportRequest};
use rusqlite::Connection;

fn config() -> impl Strategy<Value = pt_snap_gen::Config> {
    (
        any::<u64>(),
        1u32..=2,
        1u8..=4,
        any::<bool>(),
        prop::option::of(200u64..1500),
    )
        .prop_map(|(seed, devices, streams, expandable, max_entries)| {
            let mut cfg = pt_snap_gen::Config::small(seed);
            cfg.events_per_device = 2_000;
            cfg.devices = devices;
            cfg.streams = streams;
            cfg.expandable = expandable;
            cfg.max_entries = max_entries;
            cfg.sites = 40;
            cfg
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn replayed_states_are_consistent(cfg in config()) {
        let mut bytes = Vec::new();
        pt_snap_gen::generate(&cfg, &mut bytes).unwrap();
        let snapshot = pt_snap_model::decode_slice(&bytes).unwrap();
        let conn = Connection::open_in_memory().unwrap();
        let request = ImportRequest::new(
            "generated.pickle",
            pt_snap_import::sha256_hex(&bytes[..]).unwrap(),
            bytes.len() as u64,
            "2026-12-02T00:00:00.000000+00:00",
        );
        let summary = import_snapshot(&snapshot, &conn, &request, &mut |_| {}).unwrap();
        prop_assert_eq!(summary.devices.len(), cfg.devices as usize);
        for d in &summary.devices {
            // Totals never negative and always ordered: allocated ≤ active ≤ reserved.
            let bad: i64 = conn.query_row(
                &format!("SELECT count(*) FROM trace_entry_{d} WHERE NOT (0 <= allocated AND allocated <= active AND active <= reserved)"),
                [], |r| r.get(0)).unwrap();
            prop_assert_eq!(bad, 0);
            // The totals after the last event are the dump state's sums.
            let dump: (i64, i64, i64) = snapshot.segments.iter().filter(|s| s.device == *d as i64).fold((0, 0, 0), |a, s| (a.0 + s.allocated_size, a.1 + s.active_size, a.2 + s.total_size));
            let last: (i64, i64, i64) = conn.query_row(
                &format!("SELECT allocated, active, reserved FROM trace_entry_{d} ORDER BY id DESC LIMIT 1"),
                [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap();
            prop_assert_eq!(last, dump);
            // Block lifetimes: freed after allocated, sizes positive.
            let bad_blocks: i64 = conn.query_row(
                &format!("SELECT count(*) FROM block_{d} WHERE size <= 0 OR (allocEventId >= 0 AND freeEventId >= 0 AND freeEventId < allocEventId)"),
                [], |r| r.get(0)).unwrap();
            prop_assert_eq!(bad_blocks, 0);
        }
    }
}
