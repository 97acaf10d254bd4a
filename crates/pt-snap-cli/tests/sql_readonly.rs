//! `pt-snap sql` only reads: a statement that would write a file (`COPY`), add a part to the
//! dataset (`INSERT`), declare a table over another directory (`CREATE EXTERNAL TABLE`) or
//! change the session (`SET`, `PREPARE`, …) is refused with `QUERY_FAILED`, naming what is
//! not allowed; afterwards no file exists where it pointed, nothing in or around the dataset
//! changed by a byte, and the dataset still answers.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::pt_snap;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A scratch directory holding `ds/`, a Parquet dataset `export` made of a small two-device
/// snapshot, `elsewhere/` (where statements try to write), and `cwd/`, the empty working
/// directory every command runs in (so a relative path lands where the test looks).
struct Scratch {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Scratch {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for sub in ["input", "elsewhere", "cwd"] {
            fs::create_dir(root.join(sub)).unwrap();
        }
        pt_snap_testkit::copy_from_repo(
            "fixtures/synthetic/synth_small_2dev.pkl",
            &root.join("input/rank0.pkl"),
        );
        let out = pt_snap(
            &root,
            &[
                "export",
                "input/rank0.pkl",
                "-o",
                "ds",
                "--job",
                "j",
                "--json",
            ],
        );
        assert!(out.status.success(), "export: {out:?}");
        Scratch { _dir: dir, root }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    fn sql(&self, statement: &str) -> std::process::Output {
        let ds = self.path("ds");
        pt_snap(
            &self.path("cwd"),
            &["sql", ds.to_str().unwrap(), statement, "--json"],
        )
    }

    /// What a reader of the dataset sees.
    fn answer(&self) -> Value {
        let out = self.sql(
            "SELECT job, rank, device, peak_active, path FROM summary ORDER BY job, rank, device",
        );
        let doc = pt_snap_testkit::stdout_json(&out, "sql SELECT");
        assert!(
            doc["row_count"].as_u64().unwrap() > 0,
            "the dataset has summary rows: {doc}"
        );
        doc["rows"].clone()
    }
}

/// Every file and directory below `dir` (hidden ones too), each file with its size and
/// SHA-256.
fn inventory(dir: &Path) -> Vec<(String, Option<(u64, String)>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let name = path.strip_prefix(dir).unwrap().display().to_string();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                out.push((name + "/", None));
                stack.push(path);
            } else {
                let bytes = fs::read(&path).unwrap();
                let hash = format!("{:x}", Sha256::digest(&bytes));
                out.push((name, Some((meta.len(), hash))));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn writing_declaring_and_session_statements_are_refused_and_change_nothing() {
    let s = Scratch::new();
    let ds = s.path("ds");
    let elsewhere = s.path("elsewhere");
    let answer = s.answer();
    let before = inventory(&s.root);
    assert!(
        before
            .iter()
            .any(|(f, _)| f.starts_with("ds/summary/job=j/rank=0/")),
        "{before:?}"
    );
    let e = elsewhere.display();
    let d = ds.display();
    // (statement, what the refusal names, the path it would have written)
    let cases: Vec<(String, &str, Option<PathBuf>)> = vec![
        (
            format!("COPY (SELECT 1 AS x) TO '{e}/out.csv'"),
            "COPY",
            Some(elsewhere.join("out.csv")),
        ),
        (
            format!("COPY (SELECT * FROM summary) TO '{e}/out.parquet' STORED AS PARQUET"),
            "COPY",
            Some(elsewhere.join("out.parquet")),
        ),
        (
            "COPY (SELECT 1 AS x) TO 'relative.csv'".into(),
            "COPY",
            Some(s.path("cwd/relative.csv")),
        ),
        (
            format!("COPY summary TO '{d}/summary/job=j/rank=1/part-0.parquet' STORED AS PARQUET"),
            "COPY",
            Some(ds.join("summary/job=j/rank=1")),
        ),
        (
            "INSERT INTO summary SELECT * FROM summary".into(),
            "INSERT INTO summary",
            None,
        ),
        (
            "EXPLAIN ANALYZE INSERT INTO summary SELECT * FROM summary".into(),
            "INSERT INTO summary",
            None,
        ),
        (
            format!("CREATE EXTERNAL TABLE x STORED AS PARQUET LOCATION '{e}/'"),
            "CREATE EXTERNAL TABLE",
            None,
        ),
        (
            format!("CREATE EXTERNAL TABLE y (a INT) STORED AS CSV LOCATION '{e}/y.csv'"),
            "CREATE EXTERNAL TABLE",
            Some(elsewhere.join("y.csv")),
        ),
        (
            "CREATE TABLE t AS SELECT * FROM summary".into(),
            "CREATE MEMORY TABLE",
            None,
        ),
        ("CREATE VIEW v AS SELECT 1".into(), "CREATE VIEW", None),
        ("DROP TABLE summary".into(), "DROP TABLE", None),
        (
            "SET datafusion.execution.batch_size = 1".into(),
            "SET VARIABLE",
            None,
        ),
        ("PREPARE p AS SELECT 1".into(), "PREPARE", None),
        ("START TRANSACTION".into(), "TRANSACTION START", None),
        (
            format!("EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO '{e}/explained.csv'"),
            "COPY",
            Some(elsewhere.join("explained.csv")),
        ),
        ("DELETE FROM summary".into(), "DELETE summary", None),
        ("TRUNCATE summary".into(), "TRUNCATE summary", None),
    ];
    for (statement, named, target) in &cases {
        let out = s.sql(statement);
        assert_eq!(out.status.code(), Some(1), "{statement}: {out:?}");
        assert!(out.stdout.is_empty(), "{statement}: {out:?}");
        let envelope: Value = serde_json::from_slice(&out.stderr)
            .unwrap_or_else(|e| panic!("{statement}: stderr is no JSON ({e}): {out:?}"));
        assert_eq!(
            envelope["error"]["code"], "QUERY_FAILED",
            "{statement}: {envelope}"
        );
        let message = envelope["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("only read-only queries are allowed: ")
                && message.contains(named)
                && message.ends_with(" is not"),
            "{statement}: {message}"
        );
        if let Some(target) = target {
            assert!(!target.exists(), "{statement}: {} exists", target.display());
        }
        assert_eq!(
            inventory(&s.root),
            before,
            "{statement}: the scratch directory changed"
        );
        assert_eq!(
            s.answer(),
            answer,
            "{statement}: the dataset's answer changed"
        );
    }
}

#[test]
fn queries_still_answer() {
    let s = Scratch::new();
    let before = inventory(&s.root);
    for statement in [
        "SELECT count(*) AS n FROM events",
        "WITH p AS (SELECT max(peak_active) AS m FROM summary) SELECT m FROM p",
        "EXPLAIN SELECT * FROM blocks",
        "SHOW TABLES",
        "DESCRIBE callstacks",
        "VALUES (1, 'a')",
    ] {
        let doc = pt_snap_testkit::stdout_json(&s.sql(statement), statement);
        assert!(doc["row_count"].as_u64().unwrap() > 0, "{statement}: {doc}");
    }
    // Every named query still runs.
    let ds = s.path("ds");
    let sql = |args: &[&str]| {
        let mut all = vec!["sql", ds.to_str().unwrap()];
        all.extend_from_slice(args);
        pt_snap_testkit::stdout_json(&pt_snap(&s.path("cwd"), &all), format_args!("{args:?}"))
    };
    let list = sql(&["--query", "list", "--json"]);
    let names = pt_snap_testkit::string_fields(&list["queries"], "name");
    assert_eq!(names.len(), 4, "{list}");
    for name in names {
        let doc = sql(&["--query", name, "--json"]);
        assert_eq!(doc["query"], name);
        assert!(
            doc["columns"].as_array().is_some_and(|c| !c.is_empty()),
            "{doc}"
        );
    }
    assert_eq!(inventory(&s.root), before);
}
