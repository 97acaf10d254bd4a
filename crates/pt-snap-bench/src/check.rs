//! `check`: `pt-snap check` on one snapshot against `pt-snap import` of the same file, side
//! by side in one run (issue 32's target: at most 0.5× the import). `check --record` and
//! `check --baseline` measure the snapshot by the replay alone, writing no database;
//! `import --force` decodes, replays, writes and indexes the database, hashing the file twice
//! beside it. Each is run `--runs` times in turn, the best wall time kept.

use std::fs;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;

use crate::{measure, Measure};

#[derive(Parser)]
pub struct Args {
    /// The snapshot; generated (`pt-snap-gen --seed 7`, about --mb MB) when missing.
    #[arg(long)]
    snapshot: PathBuf,
    /// The size of a generated snapshot, in MB.
    #[arg(long, default_value_t = 100.0)]
    mb: f64,
    /// Runs per command; the best wall time and its RSS are reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Our binary.
    #[arg(long, default_value = "target/release/pt-snap")]
    ours: PathBuf,
}

fn generated(path: &Path, mb: f64) {
    if path.exists() {
        return;
    }
    let mut cfg = pt_snap_gen::Config::small(7);
    cfg.events_per_device = pt_snap_gen::calibrate_events(&cfg, (mb * 1e6) as u64);
    let partial = path.with_extension("partial");
    pt_snap_gen::generate(&cfg, BufWriter::new(fs::File::create(&partial).unwrap())).unwrap();
    fs::rename(&partial, path).unwrap();
}

pub fn bench(args: Args) {
    generated(&args.snapshot, args.mb);
    let ours = fs::canonicalize(&args.ours)
        .unwrap_or_else(|e| panic!("our binary {}: {e}", args.ours.display()));
    let snapshot = fs::canonicalize(&args.snapshot).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let baseline: PathBuf = scratch.path().join("baseline.json");
    let run = |f: &dyn Fn(&mut Command)| -> Measure {
        let mut cmd = Command::new(&ours);
        cmd.current_dir(scratch.path());
        f(&mut cmd);
        measure(&mut cmd)
    };
    let import = || {
        run(&|c| {
            c.args(["import", "--force", "--no-focus", "--json", "-o"])
                .arg(scratch.path())
                .arg(&snapshot);
        })
    };
    let record = || {
        run(&|c| {
            c.args(["check", "--json", "--record"])
                .arg(&baseline)
                .arg(&snapshot);
        })
    };
    let judge = || {
        run(&|c| {
            c.args(["check", "--json", "--baseline"])
                .arg(&baseline)
                .arg(&snapshot);
        })
    };
    // Warm the page cache and write the baseline the judging runs read.
    import();
    record();
    let (mut i, mut r, mut j) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..args.runs {
        i.push(import());
        r.push(record());
        j.push(judge());
    }
    let pick = |v: Vec<Measure>| {
        v.into_iter()
            .min_by_key(|m| m.wall)
            .expect("one run at least")
    };
    let (i, r, j) = (pick(i), pick(r), pick(j));
    let mb = fs::metadata(&snapshot).unwrap().len() as f64 / 1e6;
    println!(
        "Snapshot: {} ({mb:.1} MB); best of {} runs each, interleaved\n",
        snapshot.display(),
        args.runs
    );
    println!("| command | wall (s) | × import | CPU user+sys (s) | peak RSS (MiB) |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for (label, m) in [
        ("`pt-snap import --force`", &i),
        ("`pt-snap check --record`", &r),
        ("`pt-snap check --baseline`", &j),
    ] {
        println!(
            "| {label} | {:.2} | {:.2} | {:.2} | {:.0} |",
            m.wall.as_secs_f64(),
            m.wall.as_secs_f64() / i.wall.as_secs_f64(),
            m.cpu.as_secs_f64(),
            m.rss_mib()
        );
    }
}
