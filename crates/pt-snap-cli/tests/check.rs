//! `pt-snap check` on generated runs: repeats of one configuration pass, a planted leak
//! fails naming its site, a bigger batch fails; the four report forms; a ranks directory
//! with one regressed rank; and every way a baseline or a run can be wrong (exit 2, nothing
//! lost). The output is checked against the command's contract.

mod common;

use std::fs;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::pt_snap;
use serde_json::Value;

/// A generated run at `path`: one configuration (seed 7), this rank, a planted site and a
/// batch scale when given.
fn generate(path: &Path, rank: u32, planted: Option<(&str, u64)>, batch_scale: f64) {
    let mut cfg = pt_snap_gen::Config::small(7);
    cfg.events_per_device = 4000;
    cfg.rank = rank;
    cfg.batch_scale = batch_scale;
    if let Some((name, bytes)) = planted {
        cfg.planted.push(pt_snap_gen::PlantedSite {
            name: name.into(),
            bytes,
        });
    }
    let file = fs::File::create(path).unwrap();
    pt_snap_gen::generate(&cfg, BufWriter::new(file)).unwrap();
}

fn scratch() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    (dir, root)
}

fn check(root: &Path, args: &[&str]) -> Output {
    let mut all = vec!["check"];
    all.extend_from_slice(args);
    pt_snap(root, &all)
}

/// The JSON on stdout, checked against the contract.
fn document(out: &Output) -> Value {
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    pt_snap_report::commands::find("check")
        .unwrap()
        .check_document(&doc, false)
        .unwrap();
    doc
}

fn error_of(out: &Output) -> Value {
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let e: Value = serde_json::from_slice(&out.stderr).unwrap();
    e["error"].clone()
}

#[test]
fn repeats_pass_a_planted_leak_and_a_bigger_batch_regress_and_say_why() {
    let (_dir, root) = scratch();
    for i in 1..=3 {
        generate(&root.join(format!("repeat{i}.pickle")), 0, None, 1.0);
    }
    generate(
        &root.join("leak.pickle"),
        0,
        Some(("leaky_cache", 256 << 20)),
        1.0,
    );
    generate(&root.join("batch.pickle"), 0, None, 1.5);
    let recorded = check(
        &root,
        &[
            "--record",
            "base.json",
            "repeat1.pickle",
            "repeat2.pickle",
            "repeat3.pickle",
            "--json",
        ],
    );
    assert!(recorded.status.success(), "{recorded:?}");
    let r = document(&recorded);
    assert_eq!(r["repeats"], 3);
    assert_eq!(r["limit_rule"]["kind"], "spread");
    assert_eq!(r["entries"][0]["spread"], 0, "identical repeats");
    let first = fs::read(root.join("base.json")).unwrap();
    assert!(
        !root.join("repeat1.pickle.db").exists(),
        "a snapshot is measured, not imported"
    );
    // Re-recording the same runs writes the same bytes.
    assert!(check(
        &root,
        &[
            "--record",
            "base.json",
            "repeat1.pickle",
            "repeat2.pickle",
            "repeat3.pickle"
        ]
    )
    .status
    .success());
    assert_eq!(fs::read(root.join("base.json")).unwrap(), first);

    let pass = check(
        &root,
        &["repeat2.pickle", "--baseline", "base.json", "--json"],
    );
    assert_eq!(pass.status.code(), Some(0), "{pass:?}");
    let p = document(&pass);
    assert_eq!(p["verdict"], "pass");
    assert_eq!(p["checks"][0]["delta"], 0);
    assert_eq!(p["checks"][0]["growers"], serde_json::json!([]));

    let leak = check(&root, &["leak.pickle", "--baseline", "base.json", "--json"]);
    assert_eq!(leak.status.code(), Some(1), "{leak:?}");
    let l = document(&leak);
    assert_eq!(l["verdict"], "regressed");
    let c = &l["checks"][0];
    assert_eq!(c["verdict"], "regressed");
    assert_eq!(c["delta"], 256 << 20, "exactly the planted bytes");
    let top: Vec<&str> = c["growers"]
        .as_array()
        .unwrap()
        .iter()
        .take(3)
        .map(|g| g["label"].as_str().unwrap())
        .collect();
    assert!(
        top.iter()
            .any(|l| l.starts_with("leaky_cache (planted.py:")),
        "{top:?}"
    );
    assert_eq!(c["growers"][0]["delta"], 256 << 20);

    let batch = check(
        &root,
        &["batch.pickle", "--baseline", "base.json", "--json"],
    );
    assert_eq!(batch.status.code(), Some(1), "{batch:?}");
    let b = document(&batch);
    let grew = &b["checks"][0]["growers"];
    assert!(b["checks"][0]["delta"].as_i64().unwrap() > 0);
    assert!(grew
        .as_array()
        .unwrap()
        .iter()
        .all(|g| g["delta"].as_i64().unwrap() > 0));
    assert!(grew[0]["category"] == "activation", "{grew}");

    // The same judgement as text, Markdown and JUnit.
    let text = check(&root, &["leak.pickle", "--baseline", "base.json"]);
    assert_eq!(text.status.code(), Some(1));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.starts_with("pt-snap check: REGRESSED"), "{text}");
    assert!(text.contains("leaky_cache (planted.py:"), "{text}");
    let md = check(
        &root,
        &[
            "leak.pickle",
            "--baseline",
            "base.json",
            "--format",
            "markdown",
            "-o",
            "comment.md",
        ],
    );
    assert_eq!(md.status.code(), Some(1), "{md:?}");
    let md = fs::read_to_string(root.join("comment.md")).unwrap();
    assert!(
        md.starts_with("### ❌ pt-snap check: memory regressed"),
        "{md}"
    );
    assert!(md.contains("| `leaky_cache (planted.py:"), "{md}");
    let junit = check(
        &root,
        &[
            "leak.pickle",
            "--baseline",
            "base.json",
            "--format",
            "junit",
            "-o",
            "junit.xml",
            "--json",
        ],
    );
    assert_eq!(junit.status.code(), Some(1), "{junit:?}");
    assert_eq!(
        document(&junit)["verdict"],
        "regressed",
        "--json with -o: the document on stdout"
    );
    let xml = fs::read_to_string(root.join("junit.xml")).unwrap();
    assert!(
        xml.contains("<testsuites name=\"pt-snap check\" tests=\"1\" failures=\"1\">"),
        "{xml}"
    );
    assert!(xml.contains("<testcase classname=\"pt-snap.check\" name=\"rank 0 device 0\">"));
    let failure = xml.split("<failure ").nth(1).unwrap();
    assert!(
        failure.contains("message=\"allocated peak ")
            && failure.contains("grew most: leaky_cache (planted.py:"),
        "{failure}"
    );
    let pass_xml = check(
        &root,
        &[
            "repeat1.pickle",
            "--baseline",
            "base.json",
            "--format",
            "junit",
        ],
    );
    assert_eq!(pass_xml.status.code(), Some(0));
    assert!(!String::from_utf8(pass_xml.stdout)
        .unwrap()
        .contains("<failure"));
}

#[test]
fn a_ranks_directory_with_one_regressed_rank() {
    let (_dir, root) = scratch();
    for run in ["a", "b", "c", "new"] {
        fs::create_dir(root.join(run)).unwrap();
        for rank in 0..3 {
            let planted = (run == "new" && rank == 2).then_some(("rank2_buffer", 64 << 20));
            generate(
                &root.join(run).join(format!("rank{rank}.pickle")),
                rank,
                planted,
                1.0,
            );
        }
    }
    assert!(check(&root, &["--record", "base.json", "a", "b", "c"])
        .status
        .success());
    // A database of a rank is judged like its snapshot.
    assert!(
        pt_snap(&root, &["import", "new/rank0.pickle", "--no-focus"])
            .status
            .success()
    );
    fs::rename(
        root.join("new/rank0.pickle"),
        root.join("rank0.pickle.moved"),
    )
    .unwrap();
    let out = check(&root, &["new", "--baseline", "base.json", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let doc = document(&out);
    let verdicts: Vec<(i64, &str)> = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["rank"].as_i64().unwrap(), c["verdict"].as_str().unwrap()))
        .collect();
    assert_eq!(verdicts, [(0, "pass"), (1, "pass"), (2, "regressed")]);
    assert!(doc["checks"][2]["growers"][0]["label"]
        .as_str()
        .unwrap()
        .starts_with("rank2_buffer"));

    // A run missing a rank is not judged, and says which.
    fs::remove_file(root.join("new/rank1.pickle")).unwrap();
    let e = error_of(&check(&root, &["new", "--baseline", "base.json", "--json"]));
    assert_eq!(e["code"], "INVALID_PARAMETER");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("missing from the run: rank 1 device 0"),
        "{e}"
    );
}

#[test]
fn bad_baselines_and_runs_are_exit_2_and_lose_nothing() {
    let (_dir, root) = scratch();
    generate(&root.join("run.pickle"), 0, None, 1.0);
    // `check ARGS --json` is refused with exit 2, `code`, and a message saying `says`.
    let refused = |args: &[&str], code: &str, says: &str| -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let e = error_of(&check(&root, &all));
        assert_eq!(e["code"], code, "{args:?}: {e}");
        assert!(
            e["message"].as_str().unwrap().contains(says),
            "{args:?}: {e}"
        );
        e
    };
    let missing = refused(
        &["run.pickle", "--baseline", "none.json"],
        "INVALID_PARAMETER",
        "cannot read the baseline",
    );
    assert!(
        missing["hint"].as_str().unwrap().contains("--record"),
        "{missing}"
    );
    fs::write(
        root.join("broken.json"),
        "{\"format\": \"pt-snap-baseline-1\", \"entries\": [",
    )
    .unwrap();
    refused(
        &["run.pickle", "--baseline", "broken.json"],
        "INVALID_PARAMETER",
        "is not a baseline pt-snap can judge with",
    );
    fs::write(root.join("other.json"), "{\"format\": \"something-else\"}").unwrap();
    refused(
        &["run.pickle", "--baseline", "other.json"],
        "INVALID_PARAMETER",
        "is not a baseline",
    );

    // A failed record leaves the existing baseline as it was.
    assert!(check(&root, &["--record", "base.json", "run.pickle"])
        .status
        .success());
    let before = fs::read(root.join("base.json")).unwrap();
    fs::write(root.join("junk.pickle"), b"\x80\x04junk").unwrap();
    refused(
        &["--record", "base.json", "junk.pickle"],
        "IMPORT_FAILED",
        "junk.pickle",
    );
    assert_eq!(fs::read(root.join("base.json")).unwrap(), before);

    refused(
        &["--record", "b2.json", "run.pickle", "--tolerance", "lots"],
        "INVALID_PARAMETER",
        "invalid tolerance",
    );
    assert!(check(
        &root,
        &["--record", "b2.json", "run.pickle", "--tolerance", "64MiB"]
    )
    .status
    .success());
    let b2: Value = serde_json::from_slice(&fs::read(root.join("b2.json")).unwrap()).unwrap();
    assert_eq!(b2["entries"][0]["tolerance"], 64 << 20);
    refused(
        &["--record", "b3.json", "run.pickle", "-d", "3"],
        "DEVICE_NOT_FOUND",
        "Device 3 not found",
    );
    // Usage errors are exit 2 too.
    for args in [
        &["run.pickle"][..],
        &[
            "run.pickle",
            "--baseline",
            "base.json",
            "--metric",
            "active",
        ],
        &[
            "run.pickle",
            "--baseline",
            "base.json",
            "--json",
            "--format",
            "markdown",
        ],
        &["--record", "b4.json", "run.pickle", "-o", "x.md"],
    ] {
        assert_eq!(check(&root, args).status.code(), Some(2), "{args:?}");
    }
}

/// The pytest example of docs/ci.md (`examples/ci/test_memory_gate.py`), run by pytest from
/// `tests/python/.venv` (`tests/python/setup.sh`): a repeat passes, a planted leak fails and
/// the failure names its site.
#[test]
fn the_pytest_example_passes_a_repeat_and_fails_naming_the_leak() {
    let repo = pt_snap_testkit::repo_root();
    let python = repo.join("tests/python/.venv/bin/python");
    if !python.exists() {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !ci,
            "{} is missing: run tests/python/setup.sh",
            python.display()
        );
        eprintln!(
            "SKIPPED: {} is missing (tests/python/setup.sh)",
            python.display()
        );
        return;
    }
    let (_dir, root) = scratch();
    generate(&root.join("repeat.pickle"), 0, None, 1.0);
    generate(
        &root.join("leak.pickle"),
        0,
        Some(("leaky_cache", 256 << 20)),
        1.0,
    );
    assert!(check(&root, &["--record", "base.json", "repeat.pickle"])
        .status
        .success());
    let pytest = |run: &str| {
        std::process::Command::new(&python)
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .arg(repo.join("examples/ci/test_memory_gate.py"))
            .current_dir(&root)
            .env("PT_SNAP", env!("CARGO_BIN_EXE_pt-snap"))
            .env("PT_SNAP_BASELINE", root.join("base.json"))
            .env("PT_SNAP_RUN", root.join(run))
            .env("HOME", &root)
            .output()
            .unwrap()
    };
    let pass = pytest("repeat.pickle");
    assert!(pass.status.success(), "{pass:?}");
    let fail = pytest("leak.pickle");
    assert_eq!(fail.status.code(), Some(1), "{fail:?}");
    let said = String::from_utf8_lossy(&fail.stdout);
    assert!(
        said.contains("memory regressed:") && said.contains("leaky_cache (planted.py:"),
        "{said}"
    );
}
