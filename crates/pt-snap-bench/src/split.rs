//! `split`: `pt-snap split SNAPSHOT -o OUT --slices N` with our CLI and pt-snap-cli 0.4.1
//! side by side (pickle output, every device with events).

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;

use crate::{best, measure, Measure, Tools};

#[derive(Parser)]
pub struct Args {
    /// The snapshot to split.
    #[arg(long)]
    snapshot: PathBuf,
    /// Slices per device.
    #[arg(long, default_value_t = 8)]
    slices: u64,
    /// Output format: pickle or json.
    #[arg(long, default_value = "pickle")]
    format: String,
    #[command(flatten)]
    tools: Tools,
}

/// One fresh output directory per run: split never writes into an existing one.
fn run(bin: &Path, args: &Args, dir: &Path, tag: &str) -> Measure {
    let mut n = 0;
    best(args.tools.runs, || {
        n += 1;
        let out = dir.join(format!("{tag}-{n}"));
        let m = measure(
            Command::new(bin)
                .arg("split")
                .arg(&args.snapshot)
                .arg("-o")
                .arg(&out)
                .arg("--slices")
                .arg(args.slices.to_string())
                .args(["--format", &args.format, "--json"]),
        );
        std::fs::remove_dir_all(&out).unwrap();
        m
    })
}

pub fn bench(args: Args) {
    let dir = tempfile::tempdir().unwrap();
    let ours = run(&args.tools.ours, &args, dir.path(), "ours");
    let reference = args
        .tools
        .reference()
        .map(|r| run(r, &args, dir.path(), "reference"));
    let size = std::fs::metadata(&args.snapshot).unwrap().len();
    println!(
        "Snapshot: {} ({:.1} MB), --slices {}, --format {}\n",
        args.snapshot.display(),
        size as f64 / 1e6,
        args.slices,
        args.format
    );
    println!("| tool | wall (s) | CPU (s) | peak RSS (MiB) | vs reference |");
    println!("| --- | ---: | ---: | ---: | --- |");
    let row = |name: &str, m: &Measure, vs: String| {
        println!(
            "| {name} | {:.2} | {:.2} | {:.0} | {vs} |",
            m.wall.as_secs_f64(),
            m.cpu.as_secs_f64(),
            m.rss_mib()
        );
    };
    let vs = reference.as_ref().map_or("n/a".into(), |r| {
        let v = ours.versus(r);
        format!(
            "{:.1}× faster (CPU {:.1}×), {:.0}% of its memory",
            v.speed_up, v.cpu_speed_up, v.memory_percent
        )
    });
    row("pt-snap", &ours, vs);
    if let Some(r) = &reference {
        row("pt-snap-cli 0.4.1", r, "1×".into());
    }
}
