//! `dataset-import`: `import --events-per-slice K` (the pt-snap-native-v2 dataset) with our
//! CLI and pt-snap-cli 0.4.1 side by side, optionally also `--format msinsight`.

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;

use crate::{best, measure, Measure};

#[derive(Parser)]
pub struct Args {
    /// The snapshot to import.
    #[arg(long)]
    snapshot: PathBuf,
    /// Real events per shard.
    #[arg(long, default_value_t = 250_000)]
    events_per_slice: u64,
    /// Our binary.
    #[arg(long, default_value = "target/release/pt-snap")]
    ours: PathBuf,
    /// pt-snap-cli 0.4.1's entry point (e.g. `.oracle/bin/pt-snap`); skipped when absent.
    #[arg(long)]
    reference: Option<PathBuf>,
    /// Also build the msinsight export (same K) with both tools.
    #[arg(long)]
    msinsight: bool,
    /// Runs per tool; the best wall time and its RSS are reported.
    #[arg(long, default_value_t = 1)]
    runs: usize,
}

fn dataset_cmd(bin: &Path, snapshot: &Path, out: &Path, k: u64, msinsight: bool) -> Command {
    let mut c = Command::new(bin);
    c.arg("import")
        .arg(snapshot)
        .arg("-o")
        .arg(out)
        .arg("--events-per-slice")
        .arg(k.to_string())
        .args(["--json", "--no-focus"]);
    if msinsight {
        c.args(["--format", "msinsight"]);
    }
    c
}

/// One fresh output directory per run: an msinsight export is never replaced, and a native
/// dataset would be reused.
fn run(bin: &Path, args: &Args, dir: &Path, tag: &str, msinsight: bool) -> Measure {
    let mut n = 0;
    best(args.runs, || {
        n += 1;
        let out = dir.join(format!("{tag}-{n}"));
        std::fs::create_dir_all(&out).unwrap();
        let m = measure(&mut dataset_cmd(
            bin,
            &args.snapshot,
            &out,
            args.events_per_slice,
            msinsight,
        ));
        std::fs::remove_dir_all(&out).unwrap();
        m
    })
}

pub fn bench(args: Args) {
    let dir = tempfile::tempdir().unwrap();
    let name = args.snapshot.file_name().unwrap().to_string_lossy();
    let size = std::fs::metadata(&args.snapshot).unwrap().len();
    let reference = args.reference.as_ref().filter(|r| r.exists());
    let formats: &[(&str, bool)] = if args.msinsight {
        &[("pt-snap-native-v2", false), ("msinsight", true)]
    } else {
        &[("pt-snap-native-v2", false)]
    };
    println!(
        "Snapshot: {name} ({:.1} MB), --events-per-slice {}\n",
        size as f64 / 1e6,
        args.events_per_slice
    );
    println!("| format | importer | wall (s) | CPU user+sys (s) | peak RSS (MiB) | vs reference (wall / CPU) |");
    println!("| --- | --- | ---: | ---: | ---: | --- |");
    let mib = |kib: i64| kib as f64 / 1024.0;
    for &(format, msinsight) in formats {
        let ours = run(&args.ours, &args, dir.path(), "ours", msinsight);
        let theirs = reference.map(|r| run(r, &args, dir.path(), "reference", msinsight));
        let vs = match &theirs {
            Some(r) => format!(
                "{:.1}× / {:.1}× faster, {:.1}% of its memory",
                r.wall.as_secs_f64() / ours.wall.as_secs_f64(),
                r.cpu.as_secs_f64() / ours.cpu.as_secs_f64(),
                100.0 * ours.max_rss_kib as f64 / r.max_rss_kib as f64
            ),
            None => "n/a".into(),
        };
        println!(
            "| {format} | pt-snap | {:.2} | {:.2} | {:.0} | {vs} |",
            ours.wall.as_secs_f64(),
            ours.cpu.as_secs_f64(),
            mib(ours.max_rss_kib)
        );
        if let Some(r) = theirs {
            println!(
                "| {format} | pt-snap-cli 0.4.1 | {:.2} | {:.2} | {:.0} | 1× |",
                r.wall.as_secs_f64(),
                r.cpu.as_secs_f64(),
                mib(r.max_rss_kib)
            );
        }
    }
}
