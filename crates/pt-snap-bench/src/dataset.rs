//! `dataset-import`: `import --events-per-slice K` (the pt-snap-native-v2 dataset) with our
//! CLI and pt-snap-cli 0.4.1 side by side, optionally also `--format msinsight`.

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;

use crate::{best, measure, Measure, Tools};

#[derive(Parser)]
pub struct Args {
    /// The snapshot to import.
    #[arg(long)]
    snapshot: PathBuf,
    /// Real events per shard.
    #[arg(long, default_value_t = 250_000)]
    events_per_slice: u64,
    /// Also build the msinsight export (same K) with both tools.
    #[arg(long)]
    msinsight: bool,
    #[command(flatten)]
    tools: Tools,
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
    best(args.tools.runs, || {
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
    let reference = args.tools.reference();
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
    for &(format, msinsight) in formats {
        let ours = run(&args.tools.ours, &args, dir.path(), "ours", msinsight);
        let theirs = reference.map(|r| run(r, &args, dir.path(), "reference", msinsight));
        let vs = theirs.as_ref().map_or("n/a".into(), |r| {
            let v = ours.versus(r);
            format!(
                "{:.1}× / {:.1}× faster, {:.1}% of its memory",
                v.speed_up, v.cpu_speed_up, v.memory_percent
            )
        });
        let row = |importer: &str, m: &Measure, vs: &str| {
            println!(
                "| {format} | {importer} | {:.2} | {:.2} | {:.0} | {vs} |",
                m.wall.as_secs_f64(),
                m.cpu.as_secs_f64(),
                m.rss_mib()
            );
        };
        row("pt-snap", &ours, &vs);
        if let Some(r) = theirs {
            row("pt-snap-cli 0.4.1", &r, "1×");
        }
    }
}
