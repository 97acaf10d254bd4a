//! `parquet`: the Parquet export and `pt-snap sql`, ours only (the reference has neither).
//!
//! * **export vs reading the rows** (`--db`): in this process, one after the other and each
//!   the best of `--runs`, the rows the export reads (every device's events and block
//!   lifetimes, every callstack with its frames) read through the same `Analyzer` calls and
//!   dropped, then the same rows built into the three Parquet parts in memory; and, as child
//!   processes, the whole `pt-snap export DB -o DIR` (hashing the file, the summary's
//!   templates, writing and renaming the parts) and its second run, which keeps every part.
//!   Target: the parts within 1.5× the read.
//! * **named queries across ranks** (`--ranks N --events E`): a job of N generated ranks
//!   (`pt-snap-gen --seed S --rank r`, rank 3 leaking) exported batch by batch into one
//!   dataset (each batch's snapshots and databases deleted once exported, so only the Parquet
//!   stays on disk); then `pt-snap sql DIR --query peak_by_rank` and
//!   `top_sites_across_ranks` as whole processes at N/4, N/2 and N ranks (the dataset grows by
//!   partitions, so the three sizes are measured in the same run), best of `--runs`.

use std::fs;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use clap::Parser;
use pt_snap_parquet::PartInfo;
use pt_snap_query::Analyzer;

use crate::{measure, Measure};

#[derive(Parser)]
pub struct Args {
    /// A SnapshotDB to export (e.g. the 1M-event benchmark's import).
    #[arg(long)]
    db: Option<PathBuf>,
    /// Ranks of the generated job for the query benchmark (0: skip it).
    #[arg(long, default_value_t = 0)]
    ranks: u32,
    /// Events per rank.
    #[arg(long, default_value_t = 100_000)]
    events: u64,
    /// The job's seed.
    #[arg(long, default_value_t = 21)]
    seed: u64,
    /// Where the dataset goes (kept; reused when it already has the ranks); a temporary
    /// directory when not given.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Runs of each measurement; the best is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Our binary.
    #[arg(long, default_value = "target/release/pt-snap")]
    ours: PathBuf,
}

fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut out = None;
    let mut fastest = Duration::MAX;
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let v = f();
        let t = start.elapsed();
        if t < fastest {
            fastest = t;
        }
        out = Some(v);
    }
    (fastest, out.expect("one run"))
}

fn best_process(runs: usize, mut cmd: impl FnMut() -> Command) -> Measure {
    let mut out: Option<Measure> = None;
    for _ in 0..runs.max(1) {
        let m = measure(&mut cmd());
        if out.as_ref().is_none_or(|o| m.wall < o.wall) {
            out = Some(m);
        }
    }
    out.expect("one run")
}

pub fn bench(args: Args) {
    let ours = fs::canonicalize(&args.ours)
        .unwrap_or_else(|e| panic!("our binary {}: {e}", args.ours.display()));
    println!("Load average {} at the start.\n", load_average());
    if let Some(db) = &args.db {
        export_vs_read(db, &ours, args.runs);
    }
    if args.ranks > 0 {
        queries(&args, &ours);
    }
    println!("\nLoad average {} at the end.", load_average());
}

fn export_vs_read(db: &Path, ours: &Path, runs: usize) {
    let analyzer = Analyzer::open(db).expect("open the database");
    let devices = analyzer.devices().to_vec();
    let (read, rows) = best(runs, || {
        let mut rows = 0u64;
        for &d in &devices {
            analyzer
                .for_each_event(d, &mut |e| {
                    rows += 1;
                    std::hint::black_box(e);
                })
                .unwrap();
            let (_, lifetimes) = analyzer.lifetimes(Some(d)).unwrap();
            rows += lifetimes.len() as u64;
            std::hint::black_box(lifetimes);
        }
        analyzer
            .for_each_callstack(&mut |c| {
                rows += 1;
                std::hint::black_box(c);
            })
            .unwrap();
        rows
    });
    let info = PartInfo {
        source_sha256: "0".repeat(64),
        job: "bench".into(),
        rank: 0,
        source: db.display().to_string(),
    };
    let (parts, bytes) = best(runs, || {
        let e = pt_snap_parquet::events_part(&analyzer, &info).unwrap();
        let b = pt_snap_parquet::blocks_part(&analyzer, &info).unwrap();
        let c = pt_snap_parquet::callstacks_part(&analyzer, &info).unwrap();
        (
            e.bytes.len() + b.bytes.len() + c.bytes.len(),
            e.rows + b.rows + c.rows,
        )
    });
    assert_eq!(bytes.1, rows, "the parts hold every row read");
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("ds");
    let export = |_: ()| {
        let mut c = Command::new(ours);
        c.arg("export")
            .arg(db)
            .arg("-o")
            .arg(&out)
            .args(["--rank", "0", "--json"]);
        c
    };
    let mut fresh: Option<Measure> = None;
    for _ in 0..runs.max(1) {
        let _ = fs::remove_dir_all(&out);
        let m = measure(&mut export(()));
        if fresh.as_ref().is_none_or(|f| m.wall < f.wall) {
            fresh = Some(m);
        }
    }
    let fresh = fresh.expect("one run");
    let kept = best_process(runs, || export(()));
    let size = fs::metadata(db).map_or(0, |m| m.len());
    println!(
        "Export of {} ({:.0} MB, {rows} rows: events, block lifetimes, callstacks), best of {runs}:\n",
        db.display(),
        size as f64 / 1e6
    );
    println!("| run | wall (s) | × reading the rows | peak RSS (MiB) |");
    println!("| --- | ---: | ---: | ---: |");
    let r = read.as_secs_f64();
    println!("| reading the rows (`for_each_event`, `lifetimes`, `for_each_callstack`) | {r:.3} | 1.00 | — |");
    println!(
        "| the same rows built into the events, blocks and callstacks parts ({:.1} MB of Parquet) | {:.3} | **{:.2}** | — |",
        bytes.0 as f64 / 1e6,
        parts.as_secs_f64(),
        parts.as_secs_f64() / r
    );
    println!(
        "| `pt-snap export DB -o DIR` (process: hash, summary templates, four parts published) | {:.3} | {:.2} | {:.0} |",
        fresh.wall.as_secs_f64(),
        fresh.wall.as_secs_f64() / r,
        fresh.rss_mib()
    );
    println!(
        "| the same again, every part kept (hash and footers only) | {:.3} | {:.2} | {:.0} |",
        kept.wall.as_secs_f64(),
        kept.wall.as_secs_f64() / r,
        kept.rss_mib()
    );
}

/// Generates the job's ranks in batches and exports each batch into `dataset`, deleting the
/// batch's snapshots and databases afterwards; ranks already in the dataset are skipped.
fn build_dataset(args: &Args, ours: &Path, dataset: &Path, ranks: u32) {
    let work = dataset.with_extension("inputs");
    fs::create_dir_all(&work).unwrap();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let missing: Vec<u32> = (0..ranks)
        .filter(|r| {
            !dataset
                .join(format!("summary/job=bench/rank={r}/part-0.parquet"))
                .exists()
        })
        .collect();
    for batch in missing.chunks(16) {
        let work = &work;
        std::thread::scope(|s| {
            for chunk in batch.chunks(batch.len().div_ceil(cores)) {
                s.spawn(move || {
                    for &rank in chunk {
                        let mut cfg = pt_snap_gen::Config::small(args.seed);
                        cfg.events_per_device = args.events;
                        cfg.rank = rank;
                        if rank == 3 {
                            cfg.leak_rate = 0.05;
                        }
                        let path = work.join(format!("rank{rank}.pickle"));
                        let out = BufWriter::new(fs::File::create(&path).unwrap());
                        pt_snap_gen::generate(&cfg, out).unwrap();
                    }
                });
            }
        });
        let status = Command::new(ours)
            .arg("export")
            .arg(work)
            .arg("-o")
            .arg(dataset)
            .args(["--job", "bench", "--json"])
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        for e in fs::read_dir(work).unwrap().flatten() {
            fs::remove_file(e.path()).unwrap();
        }
        eprintln!("exported ranks up to {}", batch.last().unwrap());
    }
    let _ = fs::remove_dir(&work);
}

fn queries(args: &Args, ours: &Path) {
    let scratch = tempfile::tempdir().unwrap();
    let root = args
        .dir
        .clone()
        .unwrap_or_else(|| scratch.path().to_path_buf());
    let sizes = [args.ranks / 4, args.ranks / 2, args.ranks];
    println!(
        "\nNamed queries on a generated job (`pt-snap-gen --seed {} --rank r`, {} events per \
         rank), as whole `pt-snap sql DIR --query NAME --json` processes, best of {}:\n",
        args.seed, args.events, args.runs
    );
    println!("| ranks | events | Parquet (MB) | query | wall (s) | CPU (s) | peak RSS (MiB) | ms per rank |");
    println!("| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |");
    // One dataset, grown by partitions from one size to the next.
    let dataset = root.join("ranks");
    for &n in &sizes {
        let started = Instant::now();
        build_dataset(args, ours, &dataset, n);
        eprintln!(
            "dataset of {n} ranks ready in {:.0} s",
            started.elapsed().as_secs_f64()
        );
        let mb = dir_size(&dataset) as f64 / 1e6;
        for query in ["peak_by_rank", "top_sites_across_ranks"] {
            let m = best_process(args.runs, || {
                let mut c = Command::new(ours);
                c.arg("sql")
                    .arg(&dataset)
                    .args(["--query", query, "--json"]);
                c
            });
            println!(
                "| {n} | {} | {mb:.0} | `{query}` | {:.2} | {:.2} | {:.0} | {:.1} |",
                n as u64 * args.events,
                m.wall.as_secs_f64(),
                m.cpu.as_secs_f64(),
                m.rss_mib(),
                1000.0 * m.wall.as_secs_f64() / n as f64
            );
        }
    }
}

fn dir_size(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                total += m.len();
            }
        }
    }
    total
}

fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".into())
}
