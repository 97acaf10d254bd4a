//! `pt-snap ranks`: a generated job of 8 ranks with one planted leak. Every row's peaks are
//! what `query --template-use memory_peak` says of that file, exactly the leaking rank is
//! flagged, a second run reuses every import, and directories, databases, several devices
//! and a broken file among good ones behave as docs/compatibility.md says.

mod common;

use std::fs;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::pt_snap;
use pt_snap_testkit::{object_keys, repo_root, string_fields};
use serde_json::Value;
use std::process::Output;

const RANKS: u32 = 8;
/// The rank whose frees sometimes never happen: its peak grows by about half.
const LEAKING: u32 = 5;

/// The JSON on stdout; a `ranks` document is checked against the command's contract (every
/// field it prints is declared in contracts/commands/ranks.json).
fn json_of(out: &Output) -> Value {
    let document: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    if document.get("ranks").is_some() {
        let contract = pt_snap_report::commands::find("ranks").unwrap();
        contract.check_document(&document, false).unwrap();
    }
    document
}

fn config(rank: u32) -> pt_snap_gen::Config {
    let mut cfg = pt_snap_gen::Config::small(11);
    cfg.rank = rank;
    if rank == LEAKING {
        cfg.leak_rate = 0.03;
    }
    cfg
}

/// The `time_us` the generator gives each event, by position (= event id): its own
/// simulation run again, not what our decoder read from the file.
fn generator_times(rank: u32) -> Vec<i64> {
    pt_snap_gen::event_times(&config(rank), 0)
}

/// The 8 snapshots of one job (same model, another workload draw per rank; ~2 MB each),
/// generated once for all tests: `rank<r>.pickle`.
fn job() -> &'static Path {
    static JOB: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &JOB.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let snapshots = root.join("snapshots");
        fs::create_dir(&snapshots).unwrap();
        for rank in 0..RANKS {
            let file = fs::File::create(snapshots.join(format!("rank{rank}.pickle"))).unwrap();
            pt_snap_gen::generate(&config(rank), BufWriter::new(file)).unwrap();
        }
        (dir, root)
    })
    .1
}

/// A fresh directory with copies of some of the job's snapshots (no databases yet).
fn copies(ranks: &[u32]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for r in ranks {
        let name = format!("rank{r}.pickle");
        fs::copy(job().join("snapshots").join(&name), dir.path().join(&name)).unwrap();
    }
    dir
}

fn memory_peak(db: &str, device: i64, cwd: &Path) -> Value {
    let out = pt_snap(
        cwd,
        &[
            "query",
            db,
            "--template-use",
            "memory_peak",
            "--device",
            &device.to_string(),
            "--json",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    json_of(&out)["rows"][0].clone()
}

const PEAK_FIELDS: [&str; 6] = [
    "peak_allocated",
    "peak_allocated_event_id",
    "peak_active",
    "peak_active_event_id",
    "peak_reserved",
    "peak_reserved_event_id",
];

/// The row's peaks are `memory_peak`'s on its database, or else on its snapshot (which
/// `query` imports beside it).
fn assert_peaks_are_memory_peak(row: &Value, cwd: &Path) {
    let db = (row["db_path"].as_str()).unwrap_or_else(|| row["path"].as_str().unwrap());
    let want = memory_peak(db, row["device"].as_i64().unwrap(), cwd);
    for field in PEAK_FIELDS {
        assert!(row[field].is_i64(), "{field} of {row}");
        assert_eq!(row[field], want[field], "{field} of {}", row["path"]);
    }
}

fn ranks_of(document: &Value) -> &Vec<Value> {
    document["ranks"].as_array().unwrap()
}

/// `pt-snap ranks … --json` where a file fails: it exits 1 and still lists every row.
fn failed_ranks(root: &Path, args: &[&str]) -> Vec<Value> {
    let out = pt_snap(root, args);
    assert_eq!(out.status.code(), Some(1));
    ranks_of(&json_of(&out)).clone()
}

#[test]
fn the_planted_rank_and_only_it_is_an_outlier() {
    let dir = copies(&(0..RANKS).collect::<Vec<_>>());
    let root = dir.path().canonicalize().unwrap();
    let out = pt_snap(
        &root,
        &["ranks", root.to_str().unwrap(), "--json", "-j", "2"],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let document = json_of(&out);
    let keys = object_keys(&document);
    assert_eq!(
        &keys[..5],
        ["schema_version", "ok", "metric", "ranks", "median"]
    );
    assert_eq!(document["ok"], true);
    assert_eq!(document["metric"], "active");
    assert_eq!(document["rank_source"], "name");
    let rows = ranks_of(&document);
    assert_eq!(rows.len(), RANKS as usize);
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row["rank"], i as u64, "ordered by rank");
        assert_eq!(row["rank_source"], "name");
        assert_eq!(row["device"], 0);
        assert_eq!(row["input"], "snapshot");
        // A fresh directory has no databases: the replay alone answers, and writes none.
        assert!(row["reused"].is_null() && row["db_path"].is_null(), "{row}");
        assert!(!root.join(format!("rank{i}.pickle.db")).exists());
        assert!(row["error"].is_null());
        let group = &row["top_callstack_group"];
        assert_eq!(group["event_id"], row["peak_active_event_id"]);
        assert!(group["size_bytes"].as_i64().unwrap() > 0);
        assert!(
            group["size_bytes"].as_i64() <= row["peak_active"].as_i64(),
            "a group cannot hold more than everything"
        );
        let gap = row["reserved_minus_allocated"].as_i64().unwrap();
        assert!(gap >= 0 && gap <= row["peak_reserved"].as_i64().unwrap());
        // The peaks' times are their trace entries' time_us, as the generator wrote them.
        let times = generator_times(i as u32);
        assert_eq!(row["time_us_status"], "kept");
        for metric in ["allocated", "active", "reserved"] {
            let event = row[format!("peak_{metric}_event_id")].as_u64().unwrap() as usize;
            assert_eq!(
                row[format!("peak_{metric}_time_us")],
                times[event],
                "{metric}"
            );
        }
    }
    let flagged: Vec<u64> = rows
        .iter()
        .filter(|r| r["outlier"] == true)
        .map(|r| r["rank"].as_u64().unwrap())
        .collect();
    assert_eq!(flagged, [LEAKING as u64], "{document:#}");
    let leaking = &rows[LEAKING as usize];
    let reason = leaking["outlier_reason"].as_str().unwrap();
    assert!(reason.contains("above the median"), "{reason}");
    assert!(leaking["vs_median_percent"].as_f64().unwrap() >= 10.0);
    for r in rows.iter().filter(|r| r["outlier"] == false) {
        assert!(r["outlier_reason"].is_null());
        assert!(r["vs_median_percent"].as_f64().unwrap().abs() < 10.0, "{r}");
    }
    // The median of 8 values is the mean of the two middle ones.
    let mut active: Vec<i64> = rows
        .iter()
        .map(|r| r["peak_active"].as_i64().unwrap())
        .collect();
    active.sort_unstable();
    let median = (active[3] + active[4]) as f64 / 2.0;
    assert_eq!(document["median"]["peak_active"].as_f64(), Some(median));
    assert_eq!(document["outlier_rule"]["median"].as_f64(), Some(median));
    assert_eq!(document["outliers"], 1);
    assert_eq!(document["failed"], 0);

    // The peaks are memory_peak's on each snapshot's import (which `query` leaves beside
    // it). Again: those databases are read (they are not extra ranks), with the same rows
    // to the byte but where they were read; and by another metric.
    for row in rows {
        assert_peaks_are_memory_peak(row, &root);
    }
    let again = pt_snap(&root, &["ranks", root.to_str().unwrap(), "--json"]);
    assert!(again.status.success(), "{again:?}");
    let again = json_of(&again);
    let again_rows = ranks_of(&again);
    assert_eq!(again_rows.len(), RANKS as usize);
    for (i, (a, b)) in rows.iter().zip(again_rows).enumerate() {
        assert_eq!(b["reused"], true);
        let beside = root.join(format!("rank{i}.pickle.db"));
        assert_eq!(b["db_path"], beside.display().to_string());
        let (mut a, mut b) = (a.clone(), b.clone());
        for row in [&mut a, &mut b] {
            row["reused"] = Value::Null;
            row["db_path"] = Value::Null;
        }
        assert_eq!(a, b, "the replay's row and the database's");
    }
    let reserved = json_of(&pt_snap(
        &root,
        &[
            "ranks",
            root.to_str().unwrap(),
            "--metric",
            "reserved",
            "--json",
        ],
    ));
    assert_eq!(reserved["metric"], "reserved");
    assert_eq!(
        ranks_of(&reserved)[0]["top_callstack_group"]["event_id"],
        rows[0]["peak_reserved_event_id"]
    );
}

#[test]
fn the_text_table_is_sorted_by_peak_and_marks_the_outlier() {
    let dir = copies(&(0..RANKS).collect::<Vec<_>>());
    let root = dir.path().canonicalize().unwrap();
    let out = pt_snap(&root, &["ranks", root.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("8 file(s), 8 row(s) with a peak; ranks from the file names"),
        "{text}"
    );
    let header = lines.iter().position(|l| l.starts_with("rank")).unwrap();
    assert!(lines[header].contains("peak active"), "{text}");
    let table = &lines[header + 1..header + 1 + RANKS as usize];
    let ranks: Vec<&str> = table
        .iter()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(ranks[0], LEAKING.to_string(), "largest first:\n{text}");
    assert!(table[0].ends_with("<< OUTLIER"), "{text}");
    assert_eq!(text.matches("<< OUTLIER").count(), 1, "{text}");
    // The bar of the largest peak is the longest.
    // The bar of the largest peak is the longest: 30 full cells.
    let bar_len = |l: &str| l.chars().filter(|c| ('█'..='▏').contains(c)).count();
    assert_eq!(bar_len(table[0]), 30, "{text}");
    assert!(table.iter().skip(1).all(|l| bar_len(l) < 30), "{text}");
    assert!(text.contains("\nmedian: peak allocated "), "{text}");
    assert!(
        text.contains(&format!("\nOutliers (1):\n  rank {LEAKING} device 0 (")),
        "{text}"
    );
    // When each rank peaked, as a time of day, and on which date.
    assert!(lines[header].contains("peak at (UTC)"), "{text}");
    assert!(
        text.contains("\npeak at: when the active peak's event was recorded (its time_us), UTC, on 2026-03-05"),
        "{text}"
    );
    let times = generator_times(LEAKING);
    let leaking: Value = json_of(&pt_snap(
        &root,
        &["ranks", root.to_str().unwrap(), "--json"],
    ));
    let row = &ranks_of(&leaking)[LEAKING as usize];
    let at = times[row["peak_active_event_id"].as_u64().unwrap() as usize];
    let clock = pt_snap_report::units::utc(at).1;
    assert!(
        table[0].contains(&format!("  {clock}  ")),
        "{clock}:\n{text}"
    );
}

/// A database imported before times were kept (no `pt_snap_x_event_time_0`; made here by
/// dropping the table) is reused as it is, as the reference's reuse rules say: its row's
/// times are null and say why, in both modes; `import --force` adds them.
#[test]
fn a_database_without_times_is_reused_and_says_why() {
    let dir = copies(&[0, 1]);
    let root = dir.path().canonicalize().unwrap();
    let first = json_of(&pt_snap(
        &root,
        &["ranks", root.to_str().unwrap(), "--json"],
    ));
    assert!(ranks_of(&first)
        .iter()
        .all(|r| r["time_us_status"] == "kept"));
    let import = pt_snap(&root, &["import", "rank0.pickle", "--no-focus", "--json"]);
    assert!(import.status.success(), "{import:?}");
    let db = root.join("rank0.pickle.db");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("DROP TABLE pt_snap_x_event_time_0")
        .unwrap();
    let again = json_of(&pt_snap(
        &root,
        &["ranks", root.to_str().unwrap(), "--json"],
    ));
    let rows = ranks_of(&again);
    assert_eq!(rows[0]["reused"], true);
    assert_eq!(rows[0]["time_us_status"], "not_in_database");
    for metric in ["allocated", "active", "reserved"] {
        assert!(rows[0][format!("peak_{metric}_time_us")].is_null());
        assert!(!rows[0][format!("peak_{metric}_event_id")].is_null());
    }
    assert_eq!(rows[1]["time_us_status"], "kept");
    let text = pt_snap(&root, &["ranks", root.to_str().unwrap()]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("\npeak at -: the database keeps no event times (made by pt-snap-cli 0.4.1 or an older pt-snap; `pt-snap import --force SNAPSHOT` adds them) (1 row(s))\n"),
        "{text}"
    );
    let forced = pt_snap(&root, &["import", "rank0.pickle", "--force", "--no-focus"]);
    assert!(forced.status.success(), "{forced:?}");
    let last = json_of(&pt_snap(
        &root,
        &["ranks", root.to_str().unwrap(), "--json"],
    ));
    assert_eq!(ranks_of(&last)[0]["time_us_status"], "kept");
    assert_eq!(
        ranks_of(&last)[0]["peak_active_time_us"],
        ranks_of(&first)[0]["peak_active_time_us"]
    );
}

#[test]
fn a_broken_file_gets_an_error_row_and_the_others_their_numbers() {
    let dir = copies(&[0, 1, 2]);
    let root = dir.path().canonicalize().unwrap();
    fs::write(root.join("rank3.pickle"), b"\x80\x04\x95garbage").unwrap();
    let out = pt_snap(&root, &["ranks", root.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let document = json_of(&out);
    assert_eq!(document["ok"], false);
    assert_eq!(document["failed"], 1);
    assert_eq!(document["error"]["code"], "IMPORT_FAILED");
    let message = document["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("1 of 4 files could not be summarised; the first, "),
        "{message}"
    );
    // The error envelope on stderr, as for any failure under --json.
    let envelope: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(envelope["ok"], false);
    assert_eq!(envelope["error"], document["error"]);
    let rows = ranks_of(&document);
    assert_eq!(rows.len(), 4);
    for row in &rows[..3] {
        assert!(row["error"].is_null());
        assert_peaks_are_memory_peak(row, &root);
    }
    let broken = &rows[3];
    assert_eq!(broken["rank"], 3);
    assert_eq!(broken["error"]["code"], "IMPORT_FAILED");
    assert!(broken["device"].is_null() && broken["peak_active"].is_null());
    assert!(broken["outlier"].is_null());
    assert!(
        !root.join("rank3.pickle.db").exists(),
        "a failed import leaves nothing"
    );

    // Text mode: the table of the others, the failure listed, the error on stderr.
    let out = pt_snap(&root, &["ranks", root.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("\nFailed (1):\n  rank 3 ("), "{text}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with("Error: 1 of 4 files could not be summarised"),
        "{stderr}"
    );
}

#[test]
fn databases_are_read_as_given() {
    let dir = copies(&[0, 1]);
    let root = dir.path().canonicalize().unwrap();
    let import = pt_snap(&root, &["import", "rank1.pickle", "--no-focus", "--json"]);
    assert!(import.status.success(), "{import:?}");
    // The database alone stands for rank 1 (its snapshot is not in the set).
    let out = pt_snap(
        &root,
        &["ranks", "rank0.pickle", "rank1.pickle.db", "--json"],
    );
    assert!(out.status.success(), "{out:?}");
    let document = json_of(&out);
    let rows = ranks_of(&document);
    assert_eq!(rows.len(), 2);
    assert_eq!(document["rank_source"], "name");
    assert_eq!(rows[0]["input"], "snapshot");
    assert_eq!(rows[1]["input"], "database");
    assert_eq!(rows[1]["rank"], 1);
    assert!(rows[1]["reused"].is_null());
    assert_eq!(
        rows[1]["path"],
        root.join("rank1.pickle.db").display().to_string()
    );
    for row in rows {
        assert_peaks_are_memory_peak(row, &root);
    }
    // Given with its snapshot, the database is that snapshot's import, not another rank.
    let out = pt_snap(
        &root,
        &["ranks", "rank1.pickle", "rank1.pickle.db", "--json"],
    );
    let rows = ranks_of(&json_of(&out)).clone();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["input"], "snapshot");
    assert_eq!(rows[0]["reused"], true);
    // A file that is not a database where one was named.
    fs::write(root.join("rank7.db"), b"SQLite format 3\0not really").unwrap();
    let rows = failed_ranks(&root, &["ranks", "rank0.pickle", "rank7.db", "--json"]);
    assert_eq!(rows[1]["error"]["code"], "DATABASE_SCHEMA_INVALID");
}

#[test]
fn every_device_is_a_row_and_names_without_ranks_are_positions() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let fixtures = repo_root().join("fixtures/synthetic");
    for name in ["synth_small_2dev.pkl", "synth_small_2dev_oom.pkl"] {
        fs::copy(fixtures.join(name), root.join(name)).unwrap();
    }
    let out = pt_snap(
        &root,
        &[
            "ranks",
            "synth_small_2dev_oom.pkl",
            "synth_small_2dev.pkl",
            "--json",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let document = json_of(&out);
    assert_eq!(document["rank_source"], "position");
    assert!(document["rank_note"]
        .as_str()
        .unwrap()
        .contains("states no rank"));
    let rows = ranks_of(&document);
    let got: Vec<(u64, i64, &str)> = rows
        .iter()
        .map(|r| {
            let path = r["path"].as_str().unwrap();
            (
                r["rank"].as_u64().unwrap(),
                r["device"].as_i64().unwrap(),
                &path[path.rfind('/').unwrap() + 1..],
            )
        })
        .collect();
    // Natural order of the paths: `…2dev.pkl` before `…2dev_oom.pkl`.
    assert_eq!(
        got,
        [
            (0, 0, "synth_small_2dev.pkl"),
            (0, 1, "synth_small_2dev.pkl"),
            (1, 0, "synth_small_2dev_oom.pkl"),
            (1, 1, "synth_small_2dev_oom.pkl"),
        ]
    );
    for row in rows {
        assert_peaks_are_memory_peak(row, &root);
        // The `event` template's exact count of oom events of that device, on the import
        // the line above left beside the snapshot.
        assert!(row["db_path"].is_null(), "the replay alone answered");
        let db = row["path"].as_str().unwrap();
        let device = row["device"].as_i64().unwrap().to_string();
        let ooms = pt_snap(
            &root,
            &[
                "query",
                db,
                "--device",
                &device,
                "--template-use",
                "event",
                "--params",
                r#"{"action": 8, "min_id": 0}"#,
                "--exact-total",
                "--json",
            ],
        );
        assert_eq!(row["oom_events"], json_of(&ooms)["total"]);
    }
    let with_ooms: u64 = rows.iter().map(|r| r["oom_events"].as_u64().unwrap()).sum();
    assert!(with_ooms > 0, "the _oom fixture has OOM events");

    let out = pt_snap(&root, &["ranks", ".", "--device", "1", "--json"]);
    let rows = ranks_of(&json_of(&out)).clone();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r["device"] == 1));
    let out = pt_snap(&root, &["ranks", ".", "--device", "4", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let document = json_of(&out);
    assert_eq!(document["error"]["code"], "DEVICE_NOT_FOUND");
}

#[test]
fn usage_errors_and_an_empty_set() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let out = pt_snap(&root, &["ranks", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let envelope: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(envelope["error"]["code"], "INVALID_PARAMETER");
    let out = pt_snap(&root, &["ranks", ".", "-j", "0", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let out = pt_snap(&root, &["ranks", ".", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let envelope: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(envelope["error"]["code"], "SNAPSHOT_INVALID");
    let rows = failed_ranks(&root, &["ranks", "missing.pickle", "--json"]);
    assert_eq!(rows[0]["error"]["code"], "SNAPSHOT_INVALID");
}

#[test]
fn capabilities_list_the_command_contract_after_the_reference_keys() {
    let dir = tempfile::tempdir().unwrap();
    let out = pt_snap(dir.path(), &["capabilities", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let document = json_of(&out);
    let keys = object_keys(&document);
    assert_eq!(
        keys,
        [
            "schema_version",
            "ok",
            "cli_version",
            "templates",
            "skills",
            "commands"
        ]
    );
    let commands = document["commands"].as_array().unwrap();
    let names: Vec<&str> = commands
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "check",
            "diff",
            "export",
            "ranks",
            "report oom",
            "report segments",
            "sql"
        ],
        "sorted by name"
    );
    let ranks = &commands[3];
    let fields = string_fields(&ranks["output_schema"], "field");
    assert!(fields.contains(&"ranks[].peak_active_event_id"));
    assert!(fields.contains(&"ranks[].outlier_reason"));
    let text = pt_snap(dir.path(), &["capabilities"]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("\n  ranks\n"), "{text}");
    assert!(text.contains("usage: pt-snap ranks PATH..."), "{text}");
}

/// A snapshot reached through a link in the directory is read where the link points, and
/// its database goes beside the link, named after it: nothing is written beside the target
/// (issue 34, item 4). A file reached both directly and through a link counts once.
#[cfg(unix)]
#[test]
fn a_link_is_read_through_and_its_database_goes_beside_the_link() {
    let elsewhere = copies(&[3]);
    let dir = copies(&[0]);
    let root = dir.path().canonicalize().unwrap();
    let target = elsewhere
        .path()
        .canonicalize()
        .unwrap()
        .join("rank3.pickle");
    std::os::unix::fs::symlink(&target, root.join("rank1.pickle")).unwrap();
    std::os::unix::fs::symlink(root.join("rank0.pickle"), root.join("latest.pickle")).unwrap();
    let document = json_of(&pt_snap(
        &root,
        &["ranks", root.to_str().unwrap(), "--json"],
    ));
    let rows = ranks_of(&document);
    let paths: Vec<&str> = rows.iter().map(|r| r["path"].as_str().unwrap()).collect();
    let expected = [root.join("rank0.pickle"), root.join("rank1.pickle")];
    assert_eq!(
        paths,
        expected
            .iter()
            .map(|p| p.to_str().unwrap())
            .collect::<Vec<_>>()
    );
    assert_eq!(rows[1]["rank"], 1, "the rank is the link's name's");
    assert!(rows[1]["db_path"].is_null(), "the replay alone answers");
    let names = |dir: &Path| -> Vec<String> {
        let mut names: Vec<_> = (fs::read_dir(dir).unwrap())
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(names(elsewhere.path()), ["rank3.pickle"], "nothing written");
    assert_eq!(
        names(&root),
        ["latest.pickle", "rank0.pickle", "rank1.pickle"]
    );
    // The link's import goes beside the link, and `ranks` reads it from there.
    let import = pt_snap(&root, &["import", "rank1.pickle", "--no-focus", "--json"]);
    assert!(import.status.success(), "{import:?}");
    let document = json_of(&pt_snap(
        &root,
        &["ranks", root.to_str().unwrap(), "--json"],
    ));
    let rows = ranks_of(&document);
    assert_eq!(
        rows[1]["db_path"],
        root.join("rank1.pickle.db").to_str().unwrap(),
        "the database beside the link"
    );
    assert_eq!(rows[1]["reused"], true);
    assert_eq!(
        names(elsewhere.path()),
        ["rank3.pickle"],
        "nothing beside the target"
    );
    assert_peaks_are_memory_peak(&rows[1], &root);
}

/// A rank whose largest group is memory allocated before recording names, beside it, the
/// largest group allocated during the trace: a row is never just "static".
#[test]
fn a_static_top_group_names_the_largest_dynamic_one() {
    let dir = tempfile::tempdir().unwrap();
    let from = repo_root().join("fixtures/real/cuda_cs336_nothanmin__memory_snapshot.pickle");
    let snap = dir.path().join("rank0.pickle");
    fs::copy(&from, &snap).unwrap();
    let document = json_of(&pt_snap(
        dir.path(),
        &["ranks", snap.to_str().unwrap(), "--json"],
    ));
    let group = &ranks_of(&document)[0]["top_callstack_group"];
    assert_eq!(group["category"], "static");
    let dynamic = &group["largest_dynamic_group"];
    assert_eq!(dynamic["site"], "run_softmax (adapters.py:814) → torch.exp");
    assert!(dynamic["size_bytes"].as_i64().unwrap() > 0);
    assert!(dynamic["size_bytes"].as_i64() < group["size_bytes"].as_i64());
    let text = pt_snap(dir.path(), &["ranks", snap.to_str().unwrap()]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("static · largest dynamic: run_softmax (adapters.py:814) → torch.exp"),
        "{text}"
    );
}

/// A snapshot without any trace event (a state-only dump) is a failed row, as its database
/// would be, whether the replay alone reads it or the database beside it.
#[test]
fn a_snapshot_without_events_is_a_failed_row_either_way() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    fs::copy(
        repo_root().join("fixtures/edge/segments_only.pkl"),
        root.join("rank0.pkl"),
    )
    .unwrap();
    let replayed = failed_ranks(&root, &["ranks", "rank0.pkl", "--json"]);
    assert!(!root.join("rank0.pkl.db").exists(), "nothing written");
    let import = pt_snap(&root, &["import", "rank0.pkl", "--no-focus", "--json"]);
    assert!(import.status.success(), "{import:?}");
    let read = failed_ranks(&root, &["ranks", "rank0.pkl", "--json"]);
    for rows in [&replayed, &read] {
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0]["error"]["code"], "DEVICE_NOT_FOUND", "{rows:?}");
        assert_eq!(rows[0]["error"]["message"], "No devices found in database.");
    }
    assert!(replayed[0]["db_path"].is_null());
    assert_eq!(read[0]["reused"], true);
}
