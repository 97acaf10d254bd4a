//! Query latency: every template, default parameters, `-n 100` as agents page, run as a
//! whole process (start-up included) by our CLI and by pt-snap-cli 0.4.1 on the same
//! database files.
//!
//! A `--db` that is a directory is a sharded dataset (`import --events-per-slice K`): then the
//! 11 dataset templates run, and our first (cold) call — full validation, every shard hashed —
//! is reported apart from the warm calls that reuse the verified fingerprint cache. The
//! reference validates and hashes everything on every call.

use std::path::{Path, PathBuf};
use std::process::Command;

use pt_snap_query::{registry, Analyzer, QueryRequest, Value};

use crate::{best, measure, Measure};

#[derive(clap::Parser)]
pub struct Args {
    /// SnapshotDB files to query (e.g. ours and the reference's of the same snapshot).
    #[arg(long, required = true)]
    db: Vec<PathBuf>,
    /// Our binary.
    #[arg(long, default_value = "target/release/pt-snap")]
    ours: PathBuf,
    /// pt-snap-cli 0.4.1's entry point; skipped when absent.
    #[arg(long)]
    reference: Option<PathBuf>,
    /// Runs per template and tool; the best wall time is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// The `-n` row cap.
    #[arg(long, default_value_t = 100)]
    rows: i64,
}

fn query_cmd(bin: &Path, db: &Path, template: &str, params: &str, rows: i64) -> Command {
    let mut c = Command::new(bin);
    c.arg("query")
        .arg(db)
        .args(["--template-use", template, "--params", params, "-n"])
        .arg(rows.to_string())
        .arg("--json");
    c
}

pub fn run(args: Args) {
    let reference = args.reference.as_ref().filter(|r| r.exists());
    for db in &args.db {
        if db.is_dir() {
            dataset(&args, db, reference);
            continue;
        }
        // Point-in-time templates ask about the active peak, where the most is live.
        let analyzer = Analyzer::open(db).expect("a SnapshotDB");
        let peak = analyzer
            .run(&QueryRequest::new("memory_peak"))
            .expect("memory_peak");
        let event = peak
            .get(0, "peak_active_event_id")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        println!(
            "\nDatabase: {} (event_id = {event}, -n {})\n",
            db.display(),
            args.rows
        );
        println!(
            "| template | pt-snap (ms) | pt-snap-cli 0.4.1 (ms) | speed-up | pt-snap RSS (MiB) |"
        );
        println!("| --- | ---: | ---: | ---: | ---: |");
        for t in registry::all() {
            let params = if t.contract.has_parameter("event_id") {
                format!("{{\"event_id\": {event}}}")
            } else {
                "{}".to_owned()
            };
            let ours: Measure = best(args.runs, || {
                measure(&mut query_cmd(&args.ours, db, t.name(), &params, args.rows))
            });
            // The reference does not have our own templates.
            let theirs = reference
                .filter(|_| !registry::OURS.contains(&t.name()))
                .map(|r| {
                    best(args.runs, || {
                        measure(&mut query_cmd(r, db, t.name(), &params, args.rows))
                    })
                });
            print_row(t.name(), &ours, theirs.as_ref());
        }
    }
}

/// The dataset templates, with the work-budget-friendly `-n` cap.
fn dataset(args: &Args, db: &Path, reference: Option<&PathBuf>) {
    let home = tempfile::tempdir().expect("temp HOME for the validation cache");
    let run_ours = |template: &str, params: &str| {
        let mut c = query_cmd(&args.ours, db, template, params, args.rows);
        c.env("HOME", home.path());
        c
    };
    let cold = measure(&mut run_ours("memory_peak", "{}"));
    let out = Command::new(&args.ours)
        .args(["query"])
        .arg(db)
        .args(["--template-use", "memory_peak", "--json"])
        .env("HOME", home.path())
        .output()
        .expect("our memory_peak");
    let peak: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let event = peak["rows"][0]["peak_active_event_id"]
        .as_i64()
        .unwrap_or(0);
    println!(
        "\nDataset: {} (event_id = {event}, -n {}); our first call (full validation, cold \
         cache): {:.0} ms, {:.0} MiB\n",
        db.display(),
        args.rows,
        ms(&cold),
        cold.rss_mib()
    );
    println!(
        "| template | pt-snap, warm (ms) | pt-snap-cli 0.4.1 (ms) | speed-up | pt-snap RSS (MiB) |"
    );
    println!("| --- | ---: | ---: | ---: | ---: |");
    for (name, _) in pt_snap_dataset::read::SUPPORTED {
        let t = registry::find(name).expect("a template");
        let params = if t.contract.has_parameter("event_id") {
            format!("{{\"event_id\": {event}}}")
        } else {
            "{}".to_owned()
        };
        // Warm: the validation cache and (lifecycle templates) the derived database exist.
        measure(&mut run_ours(name, &params));
        let ours = best(args.runs, || measure(&mut run_ours(name, &params)));
        let theirs = reference.map(|r| {
            best(args.runs, || {
                measure(&mut query_cmd(r, db, name, &params, args.rows))
            })
        });
        print_row(name, &ours, theirs.as_ref());
    }
}

/// One template's row of both tables: our time, the reference's (`—` without it), the
/// speed-up and our peak RSS.
fn print_row(template: &str, ours: &Measure, theirs: Option<&Measure>) {
    let theirs_ms = theirs.map_or("—".into(), |m| format!("{:.0}", ms(m)));
    let speed_up = theirs.map_or("—".into(), |m| format!("{:.0}×", ms(m) / ms(ours)));
    println!(
        "| {template} | {:.0} | {theirs_ms} | {speed_up} | {:.0} |",
        ms(ours),
        ours.rss_mib(),
    );
}

fn ms(m: &Measure) -> f64 {
    m.wall.as_secs_f64() * 1e3
}
