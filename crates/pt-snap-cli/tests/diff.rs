//! `pt-snap diff A B`: a run against itself changes nothing; two generated runs that differ
//! in one planted allocation site differ in exactly that site, and each side's groups add up
//! to its live bytes at its peak; databases answer like their snapshots; bad input gets the
//! documented code and exit status; an existing `-o` file survives a failed run or write.

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pt_snap_testkit::element_where;
use serde_json::Value;

const PLANTED: u64 = 64 << 20;

struct Work {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

/// The runs: `a` plain, `b` with one planted site, `kv_cache` holding 64 MiB (a whole
/// number of 2 MiB pages, so no other block moves).
fn config(planted: bool) -> pt_snap_gen::Config {
    let mut cfg = pt_snap_gen::Config::small(7);
    cfg.events_per_device = 20_000;
    if planted {
        cfg.planted = vec![pt_snap_gen::PlantedSite {
            name: "kv_cache".into(),
            bytes: PLANTED,
        }];
    }
    cfg
}

/// `a.pickle` and `b.pickle` ([`config`]).
fn work() -> Work {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    fs::create_dir_all(root.join("home")).unwrap();
    for (name, planted) in [("a.pickle", false), ("b.pickle", true)] {
        let out = BufWriter::new(File::create(root.join(name)).unwrap());
        pt_snap_gen::generate(&config(planted), out).unwrap();
    }
    Work { _dir: dir, root }
}

/// The `time_us` the generator gives each event, by position (= event id): its own
/// simulation run again, not what our decoder read from the file.
fn generator_times(planted: bool) -> Vec<i64> {
    pt_snap_gen::event_times(&config(planted), 0)
}

impl Work {
    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_pt-snap"))
            .args(args)
            .current_dir(&self.root)
            .env("HOME", self.root.join("home"))
            .env_remove("PT_SNAP_DB_PATH")
            .output()
            .unwrap()
    }

    /// `diff … --json -n 0` (every group), which must succeed.
    fn diff(&self, args: &[&str]) -> Value {
        let out = self.run(&[&["diff"], args, &["--json", "-n", "0"]].concat());
        assert!(out.status.success(), "{out:?}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            (v["schema_version"].as_i64(), v["ok"].as_bool()),
            (Some(1), Some(true))
        );
        v
    }

    /// A failure's envelope, after checking the failure contract: exit 1, nothing on stdout.
    fn refused(&self, args: &[&str]) -> Value {
        let out = self.run(&[&["diff"], args, &["--json"]].concat());
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{args:?}: stdout {:?}", out.stdout);
        let v: Value = serde_json::from_slice(&out.stderr).unwrap();
        assert_eq!(v["ok"], false);
        v
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }
}

fn code(envelope: &Value) -> &str {
    envelope["error"]["code"].as_str().unwrap()
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

fn groups(v: &Value) -> &Vec<Value> {
    v["groups"].as_array().unwrap()
}

/// Σ of a group field over every group.
fn sum(v: &Value, field: &str) -> i64 {
    groups(v).iter().map(|g| int(&g[field])).sum()
}

/// Each side's groups add up to its total, which is its active counter at its peak event:
/// `peak_active` itself for the active metric; the metric's peak differs from it by
/// `metric_minus_live_bytes`.
fn assert_totals(v: &Value) {
    assert_eq!(sum(v, "bytes_a"), int(&v["total_a"]));
    assert_eq!(sum(v, "bytes_b"), int(&v["total_b"]));
    assert_eq!(
        int(&v["total_b"]) - int(&v["total_a"]),
        int(&v["total_delta"])
    );
    for (side, total) in [("a", "total_a"), ("b", "total_b")] {
        let s = &v[side];
        assert_eq!(int(&s["groups_bytes"]), int(&v[total]), "{side}");
        assert_eq!(int(&s["live_bytes_at_peak"]), int(&v[total]), "{side}");
        assert_eq!(int(&s["unattributed_bytes"]), 0, "{side}");
        assert_eq!(
            int(&s["metric_peak_bytes"]) - int(&s["live_bytes_at_peak"]),
            int(&s["metric_minus_live_bytes"]),
            "{side}"
        );
        let count: i64 = groups(v)
            .iter()
            .map(|g| int(&g[&format!("count_{side}")]))
            .sum();
        assert_eq!(count, int(&s["live_blocks_at_peak"]), "{side}");
        let metric = v["metric"].as_str().unwrap();
        assert_eq!(
            int(&s["metric_peak_bytes"]),
            int(&v["peaks"][side][&format!("peak_{metric}")]),
            "{side}"
        );
        assert_eq!(
            s["peak_event_id"],
            v["peaks"][side][&format!("peak_{metric}_event_id")]
        );
    }
    if v["metric"] == "active" {
        assert_eq!(int(&v["total_a"]), int(&v["peaks"]["a"]["peak_active"]));
        assert_eq!(int(&v["total_b"]), int(&v["peaks"]["b"]["peak_active"]));
    }
    let deltas: Vec<u64> = groups(v)
        .iter()
        .map(|g| int(&g["delta"]).unsigned_abs())
        .collect();
    assert!(
        deltas.windows(2).all(|w| w[0] >= w[1]),
        "not sorted by |delta|"
    );
    assert_eq!(
        int(&v["group_counts"]["total"]),
        groups(v).len() as i64,
        "-n 0 shows every group"
    );
}

#[test]
fn a_run_against_itself_changes_nothing() {
    let w = work();
    let v = w.diff(&["a.pickle", "a.pickle"]);
    // The first side imported the snapshot beside it, the second reused that database.
    assert_eq!(v["a"]["import"]["reused"], false);
    assert_eq!(v["a"]["import"]["cache_miss_reason"], "database_missing");
    assert_eq!(v["b"]["import"]["reused"], true);
    assert_eq!(
        v["a"]["db_path"],
        w.path("a.pickle.db").display().to_string()
    );
    assert!(groups(&v).len() > 50, "a real run has many stacks");
    for g in groups(&v) {
        assert_eq!(int(&g["delta"]), 0, "{g}");
        assert_eq!(g["status"], "same");
        assert_eq!(g["bytes_a"], g["bytes_b"]);
        assert_eq!(g["count_a"], g["count_b"]);
    }
    assert_eq!(v["group_counts"]["same"], v["group_counts"]["total"]);
    assert_eq!(v["total_a"], v["total_b"]);
    assert_eq!(v["peaks"]["a"], v["peaks"]["b"]);
    assert_totals(&v);
    // The timelines are the same series.
    assert_eq!(v["timelines"]["a"], v["timelines"]["b"]);
    assert_eq!(v["timelines"]["axis"], "event_ordinal");
}

#[test]
fn a_planted_site_is_the_largest_change_and_the_totals_hold() {
    let w = work();
    for metric in ["active", "allocated", "reserved"] {
        // By site (the default): the planted function's site, its stacks merged.
        let by_site = w.diff(&["a.pickle", "b.pickle", "--metric", metric]);
        assert_eq!(by_site["by"], "site");
        assert_totals(&by_site);
        let first = &groups(&by_site)[0];
        assert_eq!(first["kind"], "site");
        assert!(
            first["site"]
                .as_str()
                .unwrap()
                .starts_with("kv_cache (planted.py:10)"),
            "{first}"
        );
        assert_eq!(int(&first["delta"]), PLANTED as i64, "{metric}");
        for g in &groups(&by_site)[1..] {
            assert_eq!(int(&g["delta"]), 0, "{metric}: {g}");
        }
        let v = w.diff(&["a.pickle", "b.pickle", "--metric", metric, "--by", "stack"]);
        assert_eq!(v["metric"], metric);
        assert_eq!(v["by"], "stack");
        assert_totals(&v);
        let first = &groups(&v)[0];
        // Frames run outermost caller first: <module>, main, then the planted function.
        let site = &first["frames"][2];
        assert_eq!(
            (&site["function"], &site["file"], &site["line"]),
            (
                &Value::from("kv_cache"),
                &Value::from("planted.py"),
                &Value::from(10)
            )
        );
        assert_eq!(first["status"], "new", "{metric}");
        assert_eq!(int(&first["delta"]), PLANTED as i64, "{metric}");
        assert_eq!((int(&first["count_a"]), int(&first["count_b"])), (0, 1));
        // Nothing else moved: the planted run is the plain run plus that block.
        for g in &groups(&v)[1..] {
            assert_eq!(int(&g["delta"]), 0, "{metric}: {g}");
            assert_eq!(g["status"], "same", "{metric}: {g}");
        }
        assert_eq!(int(&v["total_delta"]), PLANTED as i64);
        assert_eq!(
            int(&v["peaks"]["delta"][metric]),
            PLANTED as i64,
            "{metric}"
        );
        assert_eq!(v["group_counts"]["new"], 1);
    }
    // Text: the same site first, with its change and a bar.
    let out = w.run(&["diff", "a.pickle", "b.pickle", "-n", "3"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap();
    assert!(
        row.contains("new") && row.contains("+64.00 MiB") && row.contains('█'),
        "{row}"
    );
    assert!(row.contains("kv_cache (planted.py:10)"), "{row}");
    assert!(text.contains("(3 of "), "{text}");
    assert!(text.contains("= the active counter there"), "{text}");
}

/// Both timelines on the time axis: each side's own first event is time 0, its peak sits
/// at its peak event's time_us minus that (as the generator wrote them), and every event is
/// in exactly one bucket; the ordinal axis is unchanged beside it.
#[test]
fn the_time_axis_puts_each_side_against_its_own_first_event() {
    let w = work();
    let v = w.diff(&["a.pickle", "b.pickle"]);
    let t = &v["timelines"]["time_axis"];
    assert_eq!(t["axis"], "time_since_first_event_us");
    assert_eq!(t["available"], true);
    for (side, planted) in [("a", false), ("b", true)] {
        let times = generator_times(planted);
        let s = &t[side];
        assert_eq!(s["times"], "kept");
        assert_eq!(int(&s["first_event_time_us"]), times[0], "{side}");
        assert_eq!(int(&s["timed_events"]), times.len() as i64, "{side}");
        let end = times.iter().max().unwrap() - times[0];
        assert_eq!((int(&s["start"]), int(&s["end"])), (0, end), "{side}");
        let peak = int(&v[side]["peak_event_id"]) as usize;
        assert_eq!(int(&s["peak_time_us"]), times[peak], "{side}");
        assert_eq!(int(&s["peak_at"]), times[peak] - times[0], "{side}");
        let buckets = s["buckets"].as_array().unwrap();
        assert!(!buckets.is_empty() && buckets.len() <= 100, "{side}");
        // Buckets in time order, and the highest of them is the peak, where it happened.
        for pair in buckets.windows(2) {
            assert!(int(&pair[0]["last"]) < int(&pair[1]["first"]), "{side}");
        }
        let top = buckets
            .iter()
            .max_by_key(|b| (int(&b["max"]), -int(&b["max_at"])))
            .unwrap();
        assert_eq!(
            int(&top["max"]),
            int(&v[side]["metric_peak_bytes"]),
            "{side}"
        );
        assert_eq!(int(&top["max_at"]), int(&s["peak_at"]), "{side}");
    }
    let note = v["timelines"]["axis_note"].as_str().unwrap();
    assert!(
        note.contains("by time since each side's first event"),
        "{note}"
    );

    // Text: each side's span and where its peak sits on both axes.
    let out = w.run(&["diff", "a.pickle.db", "b.pickle.db"]);
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.lines().rfind(|l| l.starts_with("  A: ")).unwrap();
    assert!(
        line.contains(" events over ") && line.contains(" after its first event"),
        "{line}"
    );

    // A side whose database keeps no times (imported before they were kept): the ordinal
    // axis alone, and why, in every output.
    fs::copy(w.path("b.pickle.db"), w.path("old.db")).unwrap();
    rusqlite::Connection::open(w.path("old.db"))
        .unwrap()
        .execute_batch("DROP TABLE pt_snap_x_event_time_0")
        .unwrap();
    let v = w.diff(&["a.pickle.db", "old.db"]);
    let t = &v["timelines"]["time_axis"];
    assert_eq!(t["available"], false);
    assert_eq!(t["b"]["times"], "not_in_database");
    assert!(t["b"]["peak_at"].is_null() && t["b"]["buckets"] == serde_json::json!([]));
    assert_eq!(t["a"]["times"], "kept");
    let note = v["timelines"]["axis_note"].as_str().unwrap();
    assert!(
        note.contains("No time axis: B: the database keeps no event times"),
        "{note}"
    );
    let out = w.run(&["diff", "a.pickle.db", "old.db"]);
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("No time axis: B: "));
}

#[test]
fn databases_answer_like_their_snapshots_and_peaks_are_memory_peak() {
    let w = work();
    let from_snapshots = w.diff(&["a.pickle", "b.pickle"]);
    let from_dbs = w.diff(&["a.pickle.db", "b.pickle.db"]);
    assert_eq!(from_dbs["a"]["import"], Value::Null);
    assert_eq!(from_dbs["a"]["path"], from_snapshots["a"]["db_path"]);
    for key in [
        "peaks",
        "groups",
        "group_counts",
        "total_a",
        "total_b",
        "timelines",
    ] {
        assert_eq!(from_dbs[key], from_snapshots[key], "{key}");
    }
    // A database named like anything is still a database (told by its header).
    fs::copy(w.path("b.pickle.db"), w.path("b-copy.sqlite")).unwrap();
    let renamed = w.diff(&["a.pickle.db", "b-copy.sqlite"]);
    assert_eq!(renamed["groups"], from_dbs["groups"]);
    // Each side's peaks are `query --template-use memory_peak`'s.
    for (side, db) in [("a", "a.pickle.db"), ("b", "b.pickle.db")] {
        let out = w.run(&["query", db, "--template-use", "memory_peak", "--json"]);
        assert!(out.status.success(), "{out:?}");
        let q: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(from_dbs["peaks"][side], q["rows"][0], "{side}");
    }
}

#[test]
fn bad_input_gets_the_documented_code_and_status() {
    let w = work();
    fs::write(w.path("notes.txt"), "hello, not a snapshot").unwrap();
    fs::write(w.path("broken.pkl"), b"\x80\x04junk").unwrap();
    let mut fake_db = b"SQLite format 3\0".to_vec();
    fake_db.resize(4096, 0xAB);
    fs::write(w.path("fake.db"), &fake_db).unwrap();
    // The codes the contract documents for `diff`.
    let caps: Value = serde_json::from_slice(&w.run(&["capabilities", "--json"]).stdout).unwrap();
    let errors = element_where(&caps["commands"], "name", "diff")["errors"].clone();
    for (args, want) in [
        (vec!["missing.db", "a.pickle"], "DATABASE_NOT_FOUND"),
        (vec!["a.pickle", "missing.pickle"], "SNAPSHOT_INVALID"),
        (vec!["a.pickle", "notes.txt"], "SNAPSHOT_INVALID"),
        (vec!["broken.pkl", "a.pickle"], "IMPORT_FAILED"),
        (vec!["a.pickle", "fake.db"], "DATABASE_SCHEMA_INVALID"),
        (
            vec!["a.pickle", "b.pickle", "--device", "5"],
            "DEVICE_NOT_FOUND",
        ),
        (
            vec!["a.pickle", "b.pickle", "--device", "-1"],
            "INVALID_PARAMETER",
        ),
        (
            vec!["a.pickle", "b.pickle", "--format", "html"],
            "INVALID_PARAMETER",
        ),
    ] {
        let e = w.refused(&args);
        assert_eq!(code(&e), want, "{args:?}: {e}");
        assert!(errors[want].is_string(), "{want} is not in the contract");
        assert!(e["error"]["hint"].is_string(), "{args:?}: {e}");
    }
    // A failed import leaves no database behind.
    assert!(!w.path("broken.pkl.db").exists());
    // Usage errors: exit 2, with the envelope under --json.
    let out = w.run(&["diff", "a.pickle", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let e: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(code(&e), "INVALID_PARAMETER");
    let out = w.run(&["diff", "a.pickle", "b.pickle", "--metric", "peak"]);
    assert_eq!(out.status.code(), Some(2));
    // Text mode: the message on stderr, nothing on stdout.
    let out = w.run(&["diff", "missing.db", "a.pickle"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("Error: Database not found: missing.db")
    );
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn an_existing_output_survives_a_failed_run_or_write() {
    let w = work();
    let out_dir = w.path("out");
    fs::create_dir(&out_dir).unwrap();
    let page = out_dir.join("diff.html");
    fs::write(&page, "the previous report").unwrap();
    let page_arg = page.to_str().unwrap();

    // The run fails (B is missing): the file is untouched.
    let e = w.refused(&["a.pickle", "missing.pickle", "-o", page_arg]);
    assert_eq!(code(&e), "SNAPSHOT_INVALID");
    assert_eq!(fs::read_to_string(&page).unwrap(), "the previous report");

    // The write fails (the target is a directory, which no rename may replace): the
    // directory and what it holds stay, no temporary file is left, and the error says so.
    let taken = out_dir.join("taken");
    fs::create_dir(&taken).unwrap();
    fs::write(taken.join("keep"), "kept").unwrap();
    let e = w.refused(&["a.pickle", "b.pickle", "-o", taken.to_str().unwrap()]);
    assert_eq!(code(&e), "ERROR");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("cannot write"),
        "{e}"
    );
    assert_eq!(fs::read_to_string(taken.join("keep")).unwrap(), "kept");
    assert_eq!(entries(&out_dir), ["diff.html", "taken"]);

    // A run that succeeds replaces the file in one rename, and prints nothing.
    let out = w.run(&[
        "diff", "a.pickle", "b.pickle", "--format", "html", "-o", page_arg,
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.is_empty());
    let html = fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!doctype html>"));
    assert_eq!(entries(&out_dir), ["diff.html", "taken"]);
    // The page holds the differential tree, its root adding up to both totals.
    let json = w.diff(&["a.pickle", "b.pickle"]);
    let tree = script_data(&html, "tree-data");
    assert_eq!(tree["mode"], "diff");
    let root = element_where(&tree["nodes"], "node_id", "root");
    assert_eq!(root["bytes_a"], json["total_a"]);
    assert_eq!(root["bytes_b"], json["total_b"]);
    let kv = element_where(&tree["nodes"], "name", "kv_cache");
    assert_eq!(
        (int(&kv["bytes_a"]), int(&kv["bytes_b"])),
        (0, PLANTED as i64)
    );
    // The table's first row points at that stack's site, the kv_cache frame.
    let data = script_data(&html, "diff-data");
    assert_eq!(data["groups"][0]["node_id"], kv["node_id"]);
    assert_eq!(data["total_a"], json["total_a"]);

    // --json to a file: the same document as on stdout.
    let out = w.run(&[
        "diff", "a.pickle", "b.pickle", "--json", "-n", "0", "-o", page_arg,
    ]);
    assert!(out.status.success(), "{out:?}");
    let written: Value = serde_json::from_str(&fs::read_to_string(&page).unwrap()).unwrap();
    assert_eq!(written, json);
}

/// The JSON inside `<script id="{id}" type="application/json">`, unescaped.
fn script_data(html: &str, id: &str) -> Value {
    let open = format!("<script id=\"{id}\" type=\"application/json\">");
    let start = html.find(&open).unwrap() + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).unwrap()
}

/// The output paths of `v` (`a.path`, `groups[].frames[].line`), descending only where the
/// contract documents deeper fields.
fn walk(v: &Value, path: &str, documented: &BTreeSet<String>, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                out.insert(p.clone());
                let deeper = documented
                    .iter()
                    .any(|d| d.starts_with(&format!("{p}.")) || d.starts_with(&format!("{p}[]")));
                if deeper {
                    walk(child, &p, documented, out);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                walk(item, &format!("{path}[]"), documented, out);
            }
        }
        _ => {}
    }
}

#[test]
fn capabilities_list_the_contract_and_it_documents_every_field() {
    let w = work();
    let out = w.run(&["capabilities", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let caps: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The keys' order (the reference's, then `commands`) is the ranks tests' check.
    let contract = element_where(&caps["commands"], "name", "diff");
    let fields = contract["output_schema"].as_array().unwrap();
    let documented: BTreeSet<String> = fields
        .iter()
        .map(|f| f["field"].as_str().unwrap().to_owned())
        .collect();
    let always: BTreeSet<String> = fields
        .iter()
        .filter(|f| f["present_when"].is_null())
        .map(|f| f["field"].as_str().unwrap().to_owned())
        .collect();
    let mut v = w.diff(&["a.pickle", "b.pickle"]);
    let o = v.as_object_mut().unwrap();
    o.remove("schema_version");
    o.remove("ok");
    let mut seen = BTreeSet::new();
    walk(&v, "", &documented, &mut seen);
    assert_eq!(
        seen.difference(&documented).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "undocumented"
    );
    assert_eq!(
        always.difference(&seen).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "documented but absent"
    );
}

/// Memory without a stack names the largest site allocated during the trace beside it,
/// in JSON and text; every other group names none.
#[test]
fn memory_without_a_stack_names_the_largest_dynamic_site() {
    let dir = tempfile::tempdir().unwrap();
    let from = pt_snap_testkit::repo_root()
        .join("fixtures/real/cuda_cs336_nothanmin__memory_snapshot.pickle");
    let a = dir.path().join("a.pickle");
    fs::copy(&from, &a).unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_pt-snap"))
            .args(args)
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .env_remove("PT_SNAP_DB_PATH")
            .output()
            .unwrap()
    };
    let a = a.to_str().unwrap();
    let out = run(&["diff", a, a, "--json", "-n", "0"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Groups are matched by site: the largest site gathers every stack with its label.
    let site = "forward (adapters.py:113) → torch/functional.py:einsum";
    let mut stackless = 0;
    for g in groups(&v) {
        match g["kind"].as_str().unwrap() {
            "static" | "preexisting_live_at_event" | "missing_callstack" => {
                assert_eq!(g["largest_dynamic_site"], site, "{g}");
                stackless += 1;
            }
            _ => assert!(g["largest_dynamic_site"].is_null(), "{g}"),
        }
    }
    assert!(stackless > 0, "the capture has static memory");
    let text = String::from_utf8(run(&["diff", a, a]).stdout).unwrap();
    assert!(
        text.contains(&format!(
            "[static] · largest allocated during the trace: {site}"
        )),
        "{text}"
    );
}
