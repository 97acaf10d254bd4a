//! The outside audit's reproducers (`../shared/fixtures/hostile/`, and equivalents made here
//! so the checks run without them): every one ends with a documented error envelope (exit 1)
//! or imports with correct numbers, within 30 s and 1 GiB, and leaves no file behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;

use common::{fixture_json, write_pickle};

const TIME_LIMIT: Duration = Duration::from_secs(30);
const MEMORY_LIMIT_KIB: i64 = 1 << 20;

struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `pt-snap ARGS` in `dir`; fails the test past the time or memory limit.
// The child is reaped by `wait4`, which std cannot see.
#[allow(clippy::zombie_processes)]
fn run_bounded(dir: &Path, args: &[&str]) -> Outcome {
    let out = tempfile::tempdir().unwrap();
    let (stdout_path, stderr_path) = (out.path().join("out"), out.path().join("err"));
    let child = Command::new(env!("CARGO_BIN_EXE_pt-snap"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("PT_SNAP_DB_PATH")
        .env_remove("PT_SNAP_QUERY_TIMEOUT")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let start = Instant::now();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: polls our own child; both out-pointers are valid.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        assert!(r >= 0, "wait4 failed");
        if r == pid {
            break;
        }
        if start.elapsed() > TIME_LIMIT {
            // SAFETY: signals our own, still unreaped child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("pt-snap {args:?} ran past {TIME_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        libc::WIFEXITED(status),
        "pt-snap {args:?} died (status {status}): a panic or abort"
    );
    assert!(
        usage.ru_maxrss <= MEMORY_LIMIT_KIB,
        "pt-snap {args:?} peaked at {} KiB",
        usage.ru_maxrss
    );
    Outcome {
        code: libc::WEXITSTATUS(status),
        stdout: std::fs::read_to_string(stdout_path).unwrap(),
        stderr: std::fs::read_to_string(stderr_path).unwrap(),
    }
}

/// Exit 1 with an envelope carrying one of `codes`.
fn refused(o: &Outcome, codes: &[&str], what: &str) -> String {
    assert_eq!(
        o.code, 1,
        "{what}: exit {}\n{}\n{}",
        o.code, o.stdout, o.stderr
    );
    let env: Value = serde_json::from_str(&o.stderr)
        .unwrap_or_else(|e| panic!("{what}: stderr is not an envelope ({e}): {}", o.stderr));
    let code = env["error"]["code"].as_str().unwrap_or_default();
    assert!(codes.contains(&code), "{what}: {env}");
    env["error"]["message"].as_str().unwrap().to_owned()
}

/// Nothing but the inputs is left in `dir` (no temp DB, stage or dataset).
fn only_inputs(dir: &Path, inputs: &[&str]) {
    let mut left: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !inputs.contains(&n.as_str()) && n != ".pt-snap")
        .collect();
    left.sort();
    assert!(left.is_empty(), "left behind: {left:?}");
}

const IMPORT_MODES: [&[&str]; 3] = [
    &[],
    &["--events-per-slice", "2000"],
    &["--format", "msinsight"],
];

/// Imports `name` in every mode; each must be refused as `IMPORT_FAILED` without a trace.
fn import_is_refused(dir: &Path, name: &str) -> Vec<String> {
    IMPORT_MODES
        .iter()
        .map(|mode| {
            let mut args = vec!["import", name, "--no-focus", "--json"];
            args.extend_from_slice(mode);
            let o = run_bounded(dir, &args);
            let message = refused(&o, &["IMPORT_FAILED"], &format!("{name} {mode:?}"));
            only_inputs(dir, &[name]);
            message
        })
        .collect()
}

fn frame(name: &str) -> Value {
    json!([{"filename": format!("{name}.py"), "line": 1, "name": name}])
}

fn event(action: &str, addr: i64, size: Option<i64>) -> Value {
    let mut e = json!({"action": action, "addr": addr, "stream": 0, "frames": frame(action)});
    if let Some(size) = size {
        e["size"] = size.into();
    }
    e
}

const BASE: i64 = 1 << 32;

fn one_segment(allocated: i64, blocks: Value) -> Value {
    json!({"address": BASE, "total_size": 2097152, "stream": 0, "segment_type": "large",
           "allocated_size": allocated, "active_size": 1024, "is_expandable": true,
           "frames": [], "blocks": blocks})
}

#[test]
fn a_free_without_a_size_is_refused_alike_by_every_import() {
    for (name, size) in [("free_size0.pkl", Some(0)), ("free_nosize.pkl", None)] {
        let dir = tempfile::tempdir().unwrap();
        let snapshot = json!({
            "segments": [{"address": BASE, "total_size": 4096, "stream": 0,
                "segment_type": "small", "allocated_size": 0, "active_size": 0, "frames": [],
                "blocks": [{"address": BASE, "size": 4096, "requested_size": 0,
                            "state": "inactive", "frames": []}]}],
            "device_traces": [[event("alloc", BASE, Some(512)), event("free", BASE, size)]],
        });
        write_pickle(dir.path(), name, &snapshot);
        let messages = import_is_refused(dir.path(), name);
        assert!(messages[0].contains("no live block"), "{messages:?}");
        // The sharded imports keep the reference's wording, and no longer panic.
        assert!(
            messages[1].contains("Replay failed for device 0"),
            "{messages:?}"
        );
    }
}

#[test]
fn counters_past_64_bits_are_refused_not_wrapped() {
    let live = json!([{"address": BASE, "size": 1024, "requested_size": 1000,
                       "state": "active_allocated", "frames": frame("x")},
                      {"address": BASE + 1024, "size": 2096128, "requested_size": 0,
                       "state": "inactive", "frames": []}]);
    let trace = |map_size: i64| {
        json!([
            event("segment_map", BASE, Some(2097152)),
            event("segment_map", BASE + 2097152, Some(map_size)),
            event("alloc", BASE, Some(1024)),
            event("alloc", BASE + 2097152, Some(4096)),
            event("free_requested", BASE + 2097152, Some(4096)),
            event("free_completed", BASE + 2097152, Some(4096)),
            event("segment_unmap", BASE + 2097152, Some(2097152))
        ])
    };
    let cases = [
        // The dump says i64::MAX bytes are allocated (undoing a free_requested would add to
        // it): not the bytes of its blocks, refused as it is decoded.
        (
            "allocated.pkl",
            one_segment(i64::MAX, live.clone()),
            trace(2097152),
            "segments[0]: allocated_size 9223372036854775807 is not the 1024 bytes",
        ),
        // A mapping whose end lies past 2^63.
        (
            "segment_map.pkl",
            one_segment(1024, live),
            trace(i64::MAX - 6),
            "overflows a 64-bit integer",
        ),
    ];
    for (name, segment, trace, why) in cases {
        let dir = tempfile::tempdir().unwrap();
        let snapshot = json!({"segments": [segment], "device_traces": [trace]});
        write_pickle(dir.path(), name, &snapshot);
        let messages = import_is_refused(dir.path(), name);
        assert!(messages[0].contains(why), "{messages:?}");
    }
}

#[test]
fn a_memo_walk_is_decoded_in_bounded_memory() {
    // LONG_BINPUT 65,536 apart (the audit's 20 KB file took 1 GB, the 328 KB one aborted).
    let dir = tempfile::tempdir().unwrap();
    let mut b = vec![0x80, 4, b'N'];
    for k in 0..65_536u32 {
        b.push(b'r');
        b.extend_from_slice(&k.wrapping_mul(65_536).to_le_bytes());
    }
    b.push(b'.');
    std::fs::write(dir.path().join("memo_walk.pkl"), b).unwrap();
    let messages = import_is_refused(dir.path(), "memo_walk.pkl");
    assert!(messages[0].contains("top level is a None"), "{messages:?}");
}

fn shared_hostile() -> Option<PathBuf> {
    pt_snap_testkit::shared_dir("fixtures/hostile")
}

/// Read commands on a hostile DB: each refused with a documented code.
const DB_COMMANDS: [&[&str]; 9] = [
    &["overview"],
    &["metadata"],
    &[
        "query",
        "--template-use",
        "event_frames",
        "--params",
        r#"{"event_id": 0}"#,
    ],
    &[
        "query",
        "--template-use",
        "block",
        "--params",
        r#"{"block_id": 0}"#,
    ],
    &[
        "query",
        "--template-use",
        "event",
        "--params",
        r#"{"event_id": 0}"#,
    ],
    &["query", "--template-use", "callstack_analysis"],
    &[
        "query",
        "--template-use",
        "active_memory_frame_tree_at_event",
        "--params",
        r#"{"event_id": 0}"#,
    ],
    &["report", "peak-memory"],
    &["report", "memory-tree", "--event-id", "0"],
];

#[test]
fn the_audits_files_are_refused_in_bounded_time_and_memory() {
    let Some(hostile) = shared_hostile() else {
        return;
    };
    let mut seen = 0;
    for entry in std::fs::read_dir(&hostile).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(&path, dir.path().join(&name)).unwrap();
        match path.extension().and_then(|e| e.to_str()) {
            Some("pkl") => {
                import_is_refused(dir.path(), &name);
            }
            Some("db") => {
                for command in DB_COMMANDS {
                    let mut args = command[..1].to_vec();
                    if command[0] == "report" {
                        args.push(command[1]);
                        args.push(&name);
                        args.extend_from_slice(&command[2..]);
                    } else {
                        args.push(&name);
                        args.extend_from_slice(&command[1..]);
                    }
                    args.push("--json");
                    let o = run_bounded(dir.path(), &args);
                    refused(
                        &o,
                        &["DATABASE_SCHEMA_INVALID"],
                        &format!("{name} {command:?}"),
                    );
                }
                only_inputs(dir.path(), &[&name]);
            }
            _ => continue,
        }
        seen += 1;
    }
    assert!(seen >= 10, "only {seen} reproducers");
}

#[test]
fn a_negative_size_is_refused_by_every_import_before_anything_is_written() {
    // Found by the dataset_write fuzz target: the msinsight export was written, then
    // refused by its own reader ("event_values: … negative byte metric"). The single
    // database took it, with the block counted as -5 bytes; the replay now refuses it in
    // every layout (the sharded ones in the reference's words, which name the slice).
    let dir = tempfile::tempdir().unwrap();
    let snapshot = json!({
        "segments": [{"address": BASE, "total_size": 4096, "stream": 0, "segment_type": "small",
            "allocated_size": 512, "active_size": 512, "frames": [],
            "blocks": [{"address": BASE, "size": 512, "requested_size": 512,
                        "state": "active_allocated", "frames": []},
                       {"address": BASE + 512, "size": 3584, "requested_size": 0,
                        "state": "inactive", "frames": []}]}],
        "device_traces": [[event("alloc", BASE, Some(-5))]],
    });
    write_pickle(dir.path(), "negative.pkl", &snapshot);
    let messages = import_is_refused(dir.path(), "negative.pkl");
    assert!(
        messages[0].contains("failed at event 0 (alloc")
            && messages[0].contains("size -5 is negative"),
        "{messages:?}"
    );
    for message in &messages[1..] {
        assert!(
            message.contains("Replay failed for device 0"),
            "{messages:?}"
        );
    }
}

/// A real capture (`fixtures/real/`, 5,163 events of a CS336 training step) as canonical
/// JSON, for a test to alter.
fn real_snapshot() -> Value {
    fixture_json("fixtures/real/cuda_cs336_magma27__memory_snapshot.pickle")
}

#[test]
fn negative_allocation_sizes_are_refused_naming_the_event() {
    // The audit negated every `alloc` size of a real snapshot: the strict import took it,
    // with negative sizes in `trace_entry_0` and counters rising.
    let dir = tempfile::tempdir().unwrap();
    let mut snapshot = real_snapshot();
    let trace = snapshot["device_traces"][0].as_array_mut().unwrap();
    let mut last_alloc = None;
    for (i, e) in trace.iter_mut().enumerate() {
        if e["action"] == "alloc" {
            e["size"] = json!(-e["size"].as_i64().unwrap());
            last_alloc = Some((i, e["size"].as_i64().unwrap()));
        }
    }
    let (id, size) = last_alloc.unwrap();
    write_pickle(dir.path(), "negated.pkl", &snapshot);
    let messages = import_is_refused(dir.path(), "negated.pkl");
    // The replay runs backwards from the dump: the last alloc is the first it refuses.
    let want = format!("replay of device 0 failed at event {id} (alloc ");
    assert!(messages[0].contains(&want), "{messages:?}");
    assert!(
        messages[0].contains(&format!("size {size} is negative")),
        "{messages:?}"
    );
    for message in &messages[1..] {
        assert!(
            message.contains("Replay failed for device 0"),
            "{messages:?}"
        );
    }
}

#[test]
fn a_dump_block_of_2_pow_63_minus_1_bytes_is_refused_where_it_is() {
    // The audit set one dump-time block of a real snapshot to 2^63 - 1 bytes: the strict
    // import took it, with `allocated` and `active` near i64::MIN on every row.
    let dir = tempfile::tempdir().unwrap();
    let mut snapshot = real_snapshot();
    let segments = snapshot["segments"].as_array_mut().unwrap();
    let (s, b) = (segments.iter().enumerate())
        .find_map(|(s, seg)| {
            let blocks = seg["blocks"].as_array().unwrap();
            let b = blocks
                .iter()
                .position(|b| b["state"] == "active_allocated")?;
            Some((s, b))
        })
        .unwrap();
    segments[s]["blocks"][b]["size"] = json!(i64::MAX);
    write_pickle(dir.path(), "huge_block.pkl", &snapshot);
    let messages = import_is_refused(dir.path(), "huge_block.pkl");
    for message in &messages {
        assert!(
            message.contains(&format!("segments[{s}].blocks[{b}]: block "))
                && message.contains("runs past the end of its segment"),
            "{messages:?}"
        );
    }
    // No mode helps a dump that is no allocator state.
    let o = run_bounded(
        dir.path(),
        &[
            "import",
            "huge_block.pkl",
            "--lenient",
            "--no-focus",
            "--json",
        ],
    );
    refused(&o, &["IMPORT_FAILED"], "--lenient");
    only_inputs(dir.path(), &["huge_block.pkl"]);
}
