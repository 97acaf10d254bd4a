//! The cross-engine test: a generated job of 16 ranks (one leaking) exported as Parquet; every
//! named query of `pt-snap sql` (DataFusion) gives the answer Spark SQL gives for the same SQL
//! text in local mode (`tests/spark/run_queries.py`), and the answer read from the per-rank
//! SnapshotDBs through the templates and `Analyzer::lifetimes`.
//!
//! Needs Java and PySpark (`tests/spark/setup.sh`, run by `scripts/setup`). Without them the
//! test fails, saying how to install them; `PT_SNAP_SKIP_SPARK=1` skips it, loudly, except
//! under `CI=true`, where it always runs.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pt_snap_query::{Analyzer, QueryRequest};
use pt_snap_testkit::{repo_root, stdout_json, strings_of};
use serde_json::{json, Value};

mod common;
use common::pt_snap;

const RANKS: u32 = 16;
const LEAKING: u32 = 11;
const JOB: &str = "job16";

/// A site's bytes, blocks and ranks.
type Site = (i64, i64, Vec<u64>);

fn ok_json(out: &Output) -> Value {
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The venv's Python with PySpark, and Java; `None` when the test is skipped.
fn spark_python() -> Option<PathBuf> {
    let python = repo_root().join("tests/spark/.venv/bin/python");
    let ready = python.is_file()
        && Command::new(&python)
            .args(["-c", "import pyspark"])
            .output()
            .is_ok_and(|o| o.status.success())
        && Command::new("java")
            .arg("-version")
            .output()
            .is_ok_and(|o| o.status.success());
    if ready {
        return Some(python);
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let skip = std::env::var("PT_SNAP_SKIP_SPARK").is_ok_and(|v| v == "1");
    let missing = format!(
        "Java and PySpark are not installed ({} with pyspark, and `java`): run \
         tests/spark/setup.sh (scripts/setup does)",
        python.display()
    );
    assert!(!ci, "{missing}; CI must run the Spark cross-engine test");
    assert!(
        skip,
        "{missing}, or set PT_SNAP_SKIP_SPARK=1 to skip this test"
    );
    eprintln!(
        "\n\n==== SKIPPED: the Spark cross-engine test (PT_SNAP_SKIP_SPARK=1): {missing} ====\n"
    );
    None
}

/// Numbers compared as numbers (Spark and DataFusion may differ in the last bit of a
/// double), everything else exactly.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => {
                let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0)
            }
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        _ => a == b,
    }
}

fn assert_same(what: &str, a: &[Vec<Value>], b: &[Vec<Value>]) {
    assert_eq!(a.len(), b.len(), "{what}: row counts\n{a:?}\n{b:?}");
    for (x, y) in a.iter().zip(b) {
        assert!(
            same(&Value::Array(x.clone()), &Value::Array(y.clone())),
            "{what}:\n  {x:?}\n  {y:?}"
        );
    }
}

/// DataFusion's answer to a named query, as rows in column order.
fn datafusion(dataset: &Path, name: &str, cwd: &Path) -> (Vec<String>, Vec<Vec<Value>>) {
    let doc = ok_json(&pt_snap(
        cwd,
        &["sql", dataset.to_str().unwrap(), "--query", name, "--json"],
    ));
    let columns = strings_of(&doc["columns"]);
    let rows = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| columns.iter().map(|c| r[c].clone()).collect())
        .collect();
    (columns, rows)
}

#[test]
fn named_queries_agree_across_datafusion_spark_and_the_snapshot_dbs() {
    let Some(python) = spark_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let job = root.join(JOB);
    fs::create_dir(&job).unwrap();
    // As tests/web/run.sh makes a job: `pt-snap-gen --seed 21 --rank $r --leak-rate …`.
    for rank in 0..RANKS {
        let mut cfg = pt_snap_gen::Config::small(21);
        cfg.rank = rank;
        cfg.events_per_device = 6000;
        if rank == LEAKING {
            cfg.leak_rate = 0.05;
        }
        let file = fs::File::create(job.join(format!("rank{rank}.pickle"))).unwrap();
        pt_snap_gen::generate(&cfg, std::io::BufWriter::new(file)).unwrap();
    }
    let exported = ok_json(&pt_snap(
        &root,
        &["export", job.to_str().unwrap(), "-o", "ds", "--json"],
    ));
    assert_eq!(exported["written"], RANKS);
    let dataset = root.join("ds");

    // Spark SQL on the same SQL files.
    let out = Command::new(&python)
        .arg(repo_root().join("tests/spark/run_queries.py"))
        .arg(&dataset)
        .arg(repo_root().join("crates/pt-snap-sql/queries"))
        .output()
        .unwrap();
    let spark = stdout_json(&out, "spark");
    let names: Vec<&str> = pt_snap_sql_names();
    assert_eq!(spark.as_object().unwrap().len(), names.len());
    let mut answers = HashMap::new();
    for name in &names {
        let (columns, rows) = datafusion(&dataset, name, &root);
        let s = &spark[name];
        let spark_columns = strings_of(&s["columns"]);
        assert_eq!(columns, spark_columns, "{name}: columns");
        let spark_rows: Vec<Vec<Value>> = s["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_array().unwrap().clone())
            .collect();
        assert!(!rows.is_empty(), "{name}: no rows");
        assert_same(&format!("{name}: DataFusion vs Spark"), &rows, &spark_rows);
        answers.insert(*name, rows);
    }

    // The per-rank SnapshotDBs (imported beside the snapshots by the export).
    let dbs: Vec<(u64, Analyzer)> = (0..RANKS)
        .map(|r| {
            let db = job.join(format!("rank{r}.pickle.db"));
            (r as u64, Analyzer::open(&db).unwrap())
        })
        .collect();
    let first = |a: &Analyzer, template: &str, device: i64| -> serde_json::Map<String, Value> {
        let outcome = a.run(&QueryRequest::new(template).device(device)).unwrap();
        match outcome.rows_json().into_iter().next().unwrap() {
            Value::Object(m) => m,
            other => panic!("{other}"),
        }
    };
    let mut peaks = Vec::new();
    let mut gaps = Vec::new();
    for (rank, a) in &dbs {
        for &device in a.devices() {
            let p = first(a, "memory_peak", device);
            peaks.push(vec![
                json!(JOB),
                json!(rank),
                json!(device),
                p["peak_allocated"].clone(),
                p["peak_active"].clone(),
                p["peak_reserved"].clone(),
            ]);
            let g = first(a, "allocator_gap", device);
            let reserved = p["peak_reserved"].as_i64().unwrap();
            let gap = g["reserved_allocated_gap_at_reserved_peak"]
                .as_i64()
                .unwrap();
            gaps.push(vec![
                json!(JOB),
                json!(rank),
                json!(device),
                json!(reserved),
                json!(gap),
                if reserved == 0 {
                    Value::Null
                } else {
                    json!(gap as f64 / reserved as f64)
                },
            ]);
        }
    }
    assert_same(
        "peak_by_rank vs memory_peak",
        &answers["peak_by_rank"],
        &peaks,
    );
    assert_same(
        "fragmentation_by_rank vs allocator_gap",
        &answers["fragmentation_by_rank"],
        &gaps,
    );

    // rank_outliers: the rows `ranks` flags, with its percentages.
    let ranks = pt_snap(&root, &["ranks", job.to_str().unwrap(), "--json"]);
    let ranks = ok_json(&ranks);
    let flagged: Vec<Vec<Value>> = ranks["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["outlier"] == true)
        .map(|r| {
            vec![
                r["rank"].clone(),
                r["device"].clone(),
                r["vs_median_percent"].clone(),
            ]
        })
        .collect();
    let outliers: Vec<Vec<Value>> = answers["rank_outliers"]
        .iter()
        .map(|r| vec![r[1].clone(), r[2].clone(), r[6].clone()])
        .collect();
    assert_same("rank_outliers vs ranks", &outliers, &flagged);
    assert_eq!(
        outliers[0][0],
        json!(LEAKING),
        "the leaking rank is the outlier"
    );

    // top_sites_across_ranks: each rank's live blocks at its active peak, by normalised stack.
    let mut sites: BTreeMap<String, Site> = BTreeMap::new();
    for (rank, a) in &dbs {
        for &device in a.devices() {
            let event = first(a, "memory_peak", device)["peak_active_event_id"]
                .as_i64()
                .unwrap();
            let (_, lifetimes) = a.lifetimes(Some(device)).unwrap();
            let live: Vec<_> = lifetimes.iter().filter(|b| b.live_at(event)).collect();
            let ids: Vec<i64> = live.iter().filter_map(|b| b.callstack).collect();
            let texts: HashMap<i64, String> =
                a.callstack_texts(&ids).unwrap().into_iter().collect();
            for b in live {
                let site = b
                    .callstack
                    .and_then(|c| texts.get(&c))
                    .map_or("(no callstack)".to_owned(), |t| {
                        pt_snap_parquet::normalized_text(t)
                    });
                let entry = sites.entry(site).or_default();
                entry.0 += b.size;
                entry.1 += 1;
                if !entry.2.contains(rank) {
                    entry.2.push(*rank);
                }
            }
        }
    }
    let mut top: Vec<(String, Site)> = sites.into_iter().collect();
    top.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then_with(|| a.0.cmp(&b.0)));
    let top: Vec<Vec<Value>> = top
        .into_iter()
        .take(20)
        .map(|(site, (bytes, blocks, ranks))| {
            vec![
                json!(JOB),
                json!(site),
                json!(bytes),
                json!(blocks),
                json!(ranks.len()),
            ]
        })
        .collect();
    assert_same(
        "top_sites_across_ranks vs the lifetimes",
        &answers["top_sites_across_ranks"],
        &top,
    );
}

fn pt_snap_sql_names() -> Vec<&'static str> {
    vec![
        "fragmentation_by_rank",
        "peak_by_rank",
        "rank_outliers",
        "top_sites_across_ranks",
    ]
}
