//! Query latency: every template, default parameters, `-n 100` as agents page, run as a
//! whole process (start-up included) by our CLI and by pt-snap-cli 0.4.1 on the same
//! database files.

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
            let theirs = reference.map(|r| {
                best(args.runs, || {
                    measure(&mut query_cmd(r, db, t.name(), &params, args.rows))
                })
            });
            let ms = |m: &Measure| m.wall.as_secs_f64() * 1e3;
            println!(
                "| {} | {:.0} | {} | {} | {:.0} |",
                t.name(),
                ms(&ours),
                theirs
                    .as_ref()
                    .map_or("—".into(), |m| format!("{:.0}", ms(m))),
                theirs
                    .as_ref()
                    .map_or("—".into(), |m| format!("{:.0}×", ms(m) / ms(&ours))),
                ours.max_rss_kib as f64 / 1024.0,
            );
        }
    }
}
