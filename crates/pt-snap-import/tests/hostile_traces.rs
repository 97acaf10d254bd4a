//! Property test: random traces, hostile ones included — huge and negative sizes, reversed
//! order, duplicate frees, frees of unknown addresses, overlapping allocs, segments missing
//! from the dump, dropped and swapped events, stray segment events — imported in both replay
//! modes from the bytes a user would give (JSON through the decoder), and the database held
//! to what an import promises:
//!
//! * strict: refused with a replay or decode error, or imported with the invariants below;
//! * lenient: imported whenever the dump itself is a state (a dump that is none is refused
//!   by both modes), with the invariants below, its issues listed, and the strict database
//!   exactly when the strict replay accepts the trace;
//! * on every imported database, `report peak-memory` (each metric, by callstack and by
//!   category), `report oom`, the memory tree at the peak and the templates `ranks` reads
//!   run without error.
//!
//! Invariants: those of [`pt_snap_testkit::counters_hold`] (every row `0 ≤ allocated ≤
//! active ≤ reserved`, `active` the bytes of the block rows live at the row's event, every
//! block freed after its alloc, …).
//!
//! Deterministic: a seeded SplitMix64 and a fixed number of cases. A failure names the case's
//! seed and prints its snapshot.

use pt_snap_gen::rng::Rng;
use pt_snap_import::{import_snapshot, ImportRequest, ReplayMode};
use pt_snap_query::rusqlite::Connection;
use pt_snap_query::{Analyzer, QueryError};
use pt_snap_report::categories::Rules;
use pt_snap_report::{
    memory_tree, oom_report, peak_memory, ranks, Grouping, Metric, OomRequest, PeakRequest, Stacks,
    TreeRequest,
};
use pt_snap_testkit::{counters_hold, Replay};
use serde_json::{json, Value};

const CASES: u64 = 256;
const BASE: i64 = 1 << 32;
const SEGMENT_STRIDE: i64 = 1 << 24;

/// A block of the forward simulation: `(address, size, pending a free)`.
type Live = (i64, i64, bool);

struct Segment {
    address: i64,
    size: i64,
    stream: i64,
    live: Vec<Live>,
}

impl Segment {
    /// The first gap of `size` bytes, first fit.
    fn gap(&self, size: i64) -> Option<i64> {
        let mut live = self.live.clone();
        live.sort_unstable();
        let mut at = self.address;
        for (a, s, _) in live {
            if a - at >= size {
                return Some(at);
            }
            at = a + s;
        }
        (self.address + self.size - at >= size).then_some(at)
    }

    /// The dump's view: every block, free ones too, tiling the segment.
    fn to_json(&self, device: i64, rng: &mut Rng) -> Value {
        let mut live = self.live.clone();
        live.sort_unstable();
        let mut blocks = Vec::new();
        let mut at = self.address;
        let inactive = |address: i64, size: i64| {
            json!({"address": address, "size": size, "requested_size": 0,
                   "state": "inactive", "frames": []})
        };
        let (mut allocated, mut active) = (0, 0);
        for (a, s, pending) in live {
            if a > at {
                blocks.push(inactive(at, a - at));
            }
            let state = if pending {
                "active_pending_free"
            } else {
                allocated += s;
                "active_allocated"
            };
            active += s;
            blocks.push(
                json!({"address": a, "size": s, "requested_size": s - 8 * (s > 8) as i64,
                               "state": state, "frames": frames(rng)}),
            );
            at = a + s;
        }
        if at < self.address + self.size {
            blocks.push(inactive(at, self.address + self.size - at));
        }
        json!({"device": device, "address": self.address, "total_size": self.size,
               "stream": self.stream, "segment_type": "small", "allocated_size": allocated,
               "active_size": active, "is_expandable": false, "frames": frames(rng),
               "blocks": blocks})
    }
}

fn frames(rng: &mut Rng) -> Value {
    const SITES: [(&str, &str); 5] = [
        ("model.py", "forward"),
        ("optim.py", "step"),
        ("train.py", "backward"),
        ("torch/nn/modules/linear.py", "forward"),
        ("data.py", "collate"),
    ];
    let (file, name) = *rng.pick(&SITES);
    json!([{"filename": file, "line": rng.range(1, 40), "name": name},
           {"filename": "train.py", "line": 7, "name": "main"}])
}

fn event(rng: &mut Rng, action: &str, addr: i64, size: i64, stream: i64) -> Value {
    json!({"action": action, "addr": addr, "size": size, "stream": stream,
           "frames": frames(rng)})
}

/// A consistent history of one device: an allocator run forward, its trace and its dump.
fn history(rng: &mut Rng, device: i64) -> (Vec<Value>, Vec<Value>) {
    let base = BASE + device * (SEGMENT_STRIDE << 8);
    let mut segments: Vec<Segment> = Vec::new();
    let mut next_segment = 0;
    let mut new_segment = |rng: &mut Rng, at_least: i64| {
        let size = (512 * rng.range(4, 32) as i64).max(at_least);
        next_segment += 1;
        Segment {
            address: base + next_segment * SEGMENT_STRIDE,
            size,
            stream: rng.below(2) as i64,
            live: Vec::new(),
        }
    };
    for _ in 0..rng.range(0, 3) {
        let s = new_segment(rng, 0);
        segments.push(s);
    }
    let mut trace = Vec::new();
    for _ in 0..rng.range(4, 60) {
        let roll = rng.below(100);
        let all_live: Vec<(usize, usize)> = (segments.iter().enumerate())
            .flat_map(|(i, s)| (0..s.live.len()).map(move |j| (i, j)))
            .collect();
        match roll {
            0..=44 => {
                let size = 512 * rng.range(1, 6) as i64;
                let found =
                    (segments.iter().enumerate()).find_map(|(i, s)| Some((i, s.gap(size)?)));
                let (i, addr) = match found {
                    Some(f) => f,
                    None => {
                        let s = new_segment(rng, size);
                        trace.push(event(rng, "segment_alloc", s.address, s.size, s.stream));
                        segments.push(s);
                        (segments.len() - 1, segments.last().unwrap().address)
                    }
                };
                let stream = segments[i].stream;
                trace.push(event(rng, "alloc", addr, size, stream));
                segments[i].live.push((addr, size, false));
            }
            45..=84 if !all_live.is_empty() => {
                let (i, j) = *rng.pick(&all_live);
                let (addr, size, pending) = segments[i].live[j];
                let stream = segments[i].stream;
                if !pending {
                    if rng.chance(0.05) {
                        trace.push(event(rng, "free", addr, size, stream));
                        segments[i].live.remove(j);
                        continue;
                    }
                    trace.push(event(rng, "free_requested", addr, size, stream));
                    if rng.chance(0.15) {
                        segments[i].live[j].2 = true;
                        continue;
                    }
                }
                trace.push(event(rng, "free_completed", addr, size, stream));
                segments[i].live.remove(j);
            }
            85..=92 => {
                if let Some(i) = segments.iter().position(|s| s.live.is_empty()) {
                    let s = segments.remove(i);
                    trace.push(event(rng, "segment_free", s.address, s.size, s.stream));
                }
            }
            _ => {
                let size = 512 * rng.range(1, 1 << 12) as i64;
                let mut oom = event(rng, "oom", -1, size, 0);
                // Mostly what the allocator read; sometimes nothing, or what none reads.
                oom["device_free"] = match rng.below(8) {
                    0 => json!(i64::MAX),
                    1 => json!(-4096),
                    2 => json!("n/a"),
                    _ => json!(rng.range(0, 1 << 20)),
                };
                trace.push(oom);
            }
        }
    }
    // A ring buffer that wrapped: the trace starts late, the dump is what it was.
    if rng.chance(0.3) {
        let cut = rng.below(trace.len() as u64 / 2 + 1) as usize;
        trace.drain(..cut);
    }
    let dump = segments.iter().map(|s| s.to_json(device, rng)).collect();
    (dump, trace)
}

fn size_of(e: &Value) -> i64 {
    e["size"].as_i64().unwrap_or(0)
}

fn is_block_event(e: &Value) -> bool {
    matches!(
        e["action"].as_str(),
        Some("alloc" | "free_requested" | "free_completed" | "free")
    )
}

/// What the hostile mutations did, for the failure message.
fn mutate(rng: &mut Rng, dump: &mut Vec<Value>, trace: &mut Vec<Value>) -> Vec<&'static str> {
    let mut done = Vec::new();
    for _ in 0..rng.range(0, 3) {
        if trace.is_empty() {
            break;
        }
        let n = trace.len();
        let any = |rng: &mut Rng| rng.below(n as u64) as usize;
        match rng.below(13) {
            0 => {
                done.push("huge sizes");
                for _ in 0..rng.range(1, 4) {
                    let i = any(rng);
                    let huge = [1i64 << 62, i64::MAX, 1 << 40, (1 << 62) + 512];
                    trace[i]["size"] = json!(*rng.pick(&huge));
                }
            }
            1 => {
                done.push("every alloc 2^62");
                for e in trace.iter_mut().filter(|e| e["action"] == "alloc") {
                    e["size"] = json!(1i64 << 62);
                }
            }
            2 => {
                done.push("negative sizes");
                for _ in 0..rng.range(1, 4) {
                    let i = any(rng);
                    trace[i]["size"] = json!(-size_of(&trace[i]) - 1);
                }
            }
            3 => {
                done.push("every alloc negated");
                for e in trace.iter_mut().filter(|e| e["action"] == "alloc") {
                    e["size"] = json!(-size_of(e));
                }
            }
            4 => {
                done.push("reversed");
                trace.reverse();
            }
            5 => {
                done.push("duplicate free");
                let frees: Vec<usize> = (0..n)
                    .filter(|&i| {
                        matches!(trace[i]["action"].as_str(), Some("free_completed" | "free"))
                    })
                    .collect();
                if let Some(&i) = frees.get(rng.below(frees.len() as u64 + 1) as usize) {
                    let copy = trace[i].clone();
                    let at = i + 1 + rng.below((n - i) as u64) as usize;
                    trace.insert(at, copy);
                }
            }
            6 => {
                done.push("free of an unknown address");
                let action = *rng.pick(&["free_completed", "free_requested", "free", "alloc"]);
                let inside = BASE + 256 * rng.range(0, 1 << 12) as i64;
                let addr = *rng.pick(&[16, inside, -1]);
                let size = 512 * rng.range(1, 4) as i64;
                let e = event(rng, action, addr, size, 0);
                trace.insert(any(rng), e);
            }
            7 => {
                done.push("overlapping alloc");
                let allocs: Vec<usize> =
                    (0..n).filter(|&i| trace[i]["action"] == "alloc").collect();
                if !allocs.is_empty() {
                    let i = *rng.pick(&allocs);
                    let mut e = trace[i].clone();
                    e["addr"] = json!(e["addr"].as_i64().unwrap() + 256);
                    e["size"] = json!(1024);
                    trace.insert(i + 1, e);
                }
            }
            8 => {
                done.push("segments missing from the dump");
                if rng.chance(0.5) {
                    dump.clear();
                } else if !dump.is_empty() {
                    dump.remove(rng.below(dump.len() as u64) as usize);
                }
            }
            9 => {
                done.push("events dropped");
                for _ in 0..rng.range(1, 5) {
                    if !trace.is_empty() {
                        trace.remove(rng.below(trace.len() as u64) as usize);
                    }
                }
            }
            10 => {
                done.push("events swapped");
                let (i, j) = (any(rng), any(rng));
                trace.swap(i, j);
            }
            11 => {
                done.push("stray segment event");
                let action = *rng.pick(&[
                    "segment_alloc",
                    "segment_free",
                    "segment_map",
                    "segment_unmap",
                ]);
                let addr =
                    BASE + SEGMENT_STRIDE * rng.range(0, 4) as i64 + 512 * rng.range(0, 8) as i64;
                let size = *rng.pick(&[512, 4096, 1 << 20, 1 << 62, i64::MAX, -4096]);
                let stream = rng.below(2) as i64;
                let e = event(rng, action, addr, size, stream);
                trace.insert(any(rng), e);
            }
            _ => {
                done.push("block events on another stream");
                let i = any(rng);
                if is_block_event(&trace[i]) {
                    trace[i]["stream"] = json!(7);
                }
            }
        }
    }
    done
}

/// A dump that is no allocator state: both modes refuse it as they decode.
fn break_dump(rng: &mut Rng, dump: &mut [Value]) -> Option<&'static str> {
    let seg = rng.below(dump.len() as u64) as usize;
    let blocks = dump[seg]["blocks"].as_array_mut()?;
    let b = rng.below(blocks.len() as u64) as usize;
    Some(match rng.below(4) {
        0 => {
            blocks[b]["size"] = json!(i64::MAX);
            "a block of 2^63 - 1 bytes"
        }
        1 => {
            blocks[b]["size"] = json!(-512);
            "a negative block size"
        }
        2 => {
            let address = blocks[b]["address"].as_i64().unwrap();
            blocks[b]["address"] = json!(address + 256);
            "a block out of place"
        }
        _ => {
            dump[seg]["allocated_size"] = json!(i64::MAX);
            "allocated_size not its blocks' sum"
        }
    })
}

fn request(mode: ReplayMode) -> ImportRequest {
    ImportRequest {
        replay: mode,
        ..ImportRequest::new("case.json", "0".repeat(64), 1, "2026-12-02T00:00:00+00:00")
    }
}

fn ints<const N: usize>(conn: &Connection, sql: &str) -> Vec<[i64; N]> {
    let mut stmt = conn.prepare(sql).unwrap();
    let rows = stmt
        .query_map([], |r| {
            let mut row = [0; N];
            for (i, v) in row.iter_mut().enumerate() {
                *v = r.get(i)?;
            }
            Ok(row)
        })
        .unwrap();
    rows.map(Result::unwrap).collect()
}

/// Every report and every template `ranks` reads, on the imported database.
fn reports(conn: Connection) -> Result<(), String> {
    let db = pt_snap_db::SnapshotDb::from_connection(conn).map_err(|e| e.to_string())?;
    let analyzer = Analyzer::new(db).map_err(|e| e.to_string())?;
    fn failed(what: &'static str) -> impl Fn(QueryError) -> String {
        move |e| format!("{what}: {e}")
    }
    for metric in [Metric::Active, Metric::Allocated, Metric::Reserved] {
        ranks::summarize(&analyzer, None, metric).map_err(failed("ranks"))?;
        let mut requests = vec![PeakRequest {
            metric,
            ..PeakRequest::default()
        }];
        if metric == Metric::Active {
            requests.push(PeakRequest {
                by: Grouping::Category(Rules::default()),
                ..PeakRequest::default()
            });
        }
        for request in requests {
            let report = peak_memory(&analyzer, &request).map_err(failed("peak-memory"))?;
            report.to_json();
            report.to_text_stacks(Stacks::All);
            report.to_text_stacks(Stacks::Python);
            let Some(event_id) = report.event_id.filter(|_| metric == Metric::Active) else {
                continue;
            };
            let tree = TreeRequest {
                device: Some(report.device_id),
                event_id,
                include_static: true,
                min_size: 0,
            };
            let tree = memory_tree(&analyzer, &tree).map_err(failed("memory-tree"))?;
            tree.to_json(None);
            // An incomplete tree is an answer (the text says so), not a failure.
            let _ = tree.to_text();
        }
    }
    let request = OomRequest {
        device: None,
        top_n: 5,
        category_rules: Rules::default(),
    };
    let db = analyzer.db();
    let report = oom_report(&analyzer, &request, &|d| {
        db.oom_device_free(d as usize)
            .map_err(|e| QueryError::ReadFailed(e.to_string()))
    })
    .map_err(failed("oom"))?;
    report.json_fields();
    report.to_text_stacks(Stacks::All);
    Ok(())
}

/// All rows of a device's tables, for comparing two imports.
fn rows_of(conn: &Connection, d: usize) -> (Vec<[i64; 8]>, Vec<[i64; 7]>) {
    (
        ints(
            conn,
            &format!(
                "SELECT id, CAST(action AS INTEGER), address, size, stream, allocated, active,
                        reserved FROM trace_entry_{d} ORDER BY id"
            ),
        ),
        ints(
            conn,
            &format!(
                "SELECT id, address, size, requestedSize, state, allocEventId, freeEventId
                 FROM block_{d} ORDER BY id"
            ),
        ),
    )
}

enum Imported {
    Refused(String),
    Db(Connection, Vec<usize>),
}

fn import(snapshot: &pt_snap_model::Snapshot, mode: ReplayMode) -> Imported {
    let conn = Connection::open_in_memory().unwrap();
    match import_snapshot(snapshot, &conn, &request(mode), &mut |_| {}) {
        Ok(summary) => Imported::Db(conn, summary.devices),
        Err(e) => Imported::Refused(e.to_string()),
    }
}

/// Which way a case went.
#[derive(Clone, Copy)]
enum Path {
    /// A dump that is no state, refused by both modes as they decode.
    BrokenDump,
    /// A trace the strict replay refuses and the lenient one imports.
    StrictRefused,
    /// A trace both replays import, alike.
    Accepted,
}

/// One case: `Err` explains the broken promise.
fn run_case(seed: u64) -> Result<Path, String> {
    let mut rng = Rng::new(seed);
    let (mut dump, mut traces) = (Vec::new(), Vec::new());
    let mut mutations = Vec::new();
    for device in 0..rng.range(1, 2) as i64 {
        let (mut segments, mut trace) = history(&mut rng, device);
        if rng.chance(0.75) {
            mutations.extend(mutate(&mut rng, &mut segments, &mut trace));
        }
        dump.extend(segments);
        traces.push(trace);
    }
    let broken = match rng.chance(0.05) && !dump.is_empty() {
        true => break_dump(&mut rng, &mut dump),
        false => None,
    };
    let snapshot = json!({"segments": dump, "device_traces": traces});
    let bytes = serde_json::to_vec(&snapshot).unwrap();
    let context = || format!("seed {seed}, {mutations:?}, {broken:?}: {snapshot}");
    let model = match pt_snap_model::decode_slice(&bytes) {
        Ok(model) if broken.is_none() => model,
        Ok(_) => return Err(format!("a broken dump decoded; {}", context())),
        Err(e) if broken.is_some() => {
            let e = e.to_string();
            return match e.starts_with("not a memory snapshot: segments[") {
                true => Ok(Path::BrokenDump),
                false => Err(format!("refused as {e}; {}", context())),
            };
        }
        Err(e) => return Err(format!("decode: {e}; {}", context())),
    };
    let strict = import(&model, ReplayMode::Strict);
    let lenient = import(&model, ReplayMode::Lenient);
    let strict_rows = match &strict {
        Imported::Db(conn, devices) => {
            for &d in devices {
                counters_hold(conn, d, Replay::Strict)
                    .map_err(|e| format!("strict: {e}; {}", context()))?;
            }
            Some(
                devices
                    .iter()
                    .map(|&d| rows_of(conn, d))
                    .collect::<Vec<_>>(),
            )
        }
        Imported::Refused(e) if e.contains("replay of device") => None,
        Imported::Refused(e) => return Err(format!("strict refused: {e}; {}", context())),
    };
    let Imported::Db(conn, devices) = lenient else {
        let Imported::Refused(e) = lenient else {
            unreachable!()
        };
        return Err(format!("lenient refused: {e}; {}", context()));
    };
    for &d in &devices {
        counters_hold(&conn, d, Replay::Lenient)
            .map_err(|e| format!("lenient: {e}; {}", context()))?;
    }
    let issues: i64 = conn
        .query_row("SELECT count(*) FROM pt_snap_x_replay_issues", [], |r| {
            r.get(0)
        })
        .unwrap();
    match strict_rows {
        // What the strict replay accepts, the lenient one imports the same, with no issue.
        Some(rows) => {
            let lenient_rows: Vec<_> = devices.iter().map(|&d| rows_of(&conn, d)).collect();
            if rows != lenient_rows || issues != 0 {
                return Err(format!(
                    "lenient differs from strict ({issues} issues); {}",
                    context()
                ));
            }
        }
        None if issues == 0 => {
            return Err(format!(
                "strict refused, lenient saw no issue; {}",
                context()
            ))
        }
        None => {}
    }
    // Where the strict replay imported, the two databases are equal: one is read.
    if !devices.is_empty() {
        reports(conn).map_err(|e| format!("report: {e}; {}", context()))?;
    }
    Ok(match strict {
        Imported::Db(..) => Path::Accepted,
        Imported::Refused(_) => Path::StrictRefused,
    })
}

#[test]
fn hostile_traces_import_with_sane_counters_in_both_modes() {
    let mut seen = [0usize; 3];
    let mut failures = Vec::new();
    for seed in 0..CASES {
        match std::panic::catch_unwind(|| run_case(seed)) {
            Ok(Ok(path)) => seen[path as usize] += 1,
            Ok(Err(e)) => failures.push(e),
            Err(_) => failures.push(format!("seed {seed} panicked (its message is above)")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {CASES} cases failed; the first:\n{}",
        failures.len(),
        failures[0]
    );
    // The cases reach every path, or the test proves less than it says.
    let [broken, refused, accepted] = seen;
    eprintln!(
        "{broken} broken dumps, {refused} traces the strict replay refused, {accepted} it took"
    );
    assert!(
        broken >= 5 && refused >= CASES as usize / 4 && accepted >= CASES as usize / 8,
        "broken dumps {broken}, refused by the strict replay {refused}, accepted {accepted}"
    );
}

#[test]
fn a_lenient_database_keeping_absurd_segment_events_still_reports() {
    // A lenient database keeps the sizes of the segment events it could not apply: `report
    // oom`, which rebuilds the segments from those events, overflowed on them.
    let event = |action: &str, addr: i64, size: i64| json!({"action": action, "addr": addr, "size": size, "stream": 0});
    let mut oom = event("oom", -1, i64::MAX);
    oom["device_free"] = json!(i64::MAX);
    let snapshot = json!({"segments": [], "device_traces": [[
        event("segment_alloc", BASE, i64::MAX),
        event("alloc", BASE, 512),
        event("segment_map", 2 * BASE, i64::MAX),
        event("segment_unmap", 2 * BASE, i64::MAX - 5),
        oom,
    ]]});
    let model = pt_snap_model::decode_slice(&serde_json::to_vec(&snapshot).unwrap()).unwrap();
    let Imported::Db(conn, devices) = import(&model, ReplayMode::Lenient) else {
        panic!("a lenient import of a dump that is a state succeeds");
    };
    counters_hold(&conn, devices[0], Replay::Lenient).unwrap();
    reports(conn).unwrap();
}
