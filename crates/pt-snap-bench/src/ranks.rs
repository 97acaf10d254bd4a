//! `ranks`: `pt-snap ranks -j <cores>` on a generated job of N rank snapshots, against N
//! sequential `pt-snap import`s of the same files. Fresh, `ranks` replays the files in
//! parallel without writing databases; the target is a wall time at most the sequential sum
//! divided by the cores. A run with the databases those imports left shows what reading
//! them costs (hashing each file for the reuse check, the templates).

use std::fs;
use std::io::{BufWriter, Read};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use clap::Parser;

use crate::{measure, Measure};

#[derive(Parser)]
pub struct Args {
    /// Where the rank snapshots are (`rank<i>.pickle`), generated there when missing; a
    /// temporary directory when not given.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Rank snapshots in the job.
    #[arg(long, default_value_t = 64)]
    files: u32,
    /// Approximate size of each snapshot, in MB.
    #[arg(long, default_value_t = 20.0)]
    mb: f64,
    /// The job's seed (`pt-snap-gen --seed`); rank i is `--rank i`.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// `ranks -j`; default: the number of cores.
    #[arg(long)]
    jobs: Option<usize>,
    /// Our binary.
    #[arg(long, default_value = "target/release/pt-snap")]
    ours: PathBuf,
}

/// The job's snapshots, generated where missing (deterministic: same arguments, same bytes).
fn snapshots(dir: &Path, args: &Args) -> Vec<PathBuf> {
    let mut cfg = pt_snap_gen::Config::small(args.seed);
    cfg.events_per_device = pt_snap_gen::calibrate_events(&cfg, (args.mb * 1e6) as u64);
    (0..args.files)
        .map(|rank| {
            let path = dir.join(format!("rank{rank}.pickle"));
            if !path.exists() {
                let mut cfg = cfg.clone();
                cfg.rank = rank;
                let partial = dir.join(format!(".rank{rank}.pickle.partial"));
                let out = BufWriter::new(fs::File::create(&partial).unwrap());
                pt_snap_gen::generate(&cfg, out).unwrap();
                fs::rename(&partial, &path).unwrap();
            }
            path
        })
        .collect()
}

/// Removes every import of the job, so the next run starts with empty caches.
fn remove_databases(files: &[PathBuf]) {
    for f in files {
        let mut db = f.as_os_str().to_owned();
        db.push(".db");
        match fs::remove_file(PathBuf::from(db)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("cannot remove the import of {}: {e}", f.display()),
        }
    }
}

/// Reads every snapshot once, so both sides find them in the page cache rather than one
/// paying the disk for the other.
fn warm(files: &[PathBuf]) {
    let mut buf = vec![0u8; 1 << 20];
    for f in files {
        let mut file = fs::File::open(f).unwrap();
        while file.read(&mut buf).unwrap() > 0 {}
    }
}

pub fn bench(args: Args) {
    let scratch = tempfile::tempdir().unwrap();
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| scratch.path().to_path_buf());
    fs::create_dir_all(&dir).unwrap();
    let files = snapshots(&dir, &args);
    // The commands run in the job's directory: a relative path to our binary would not.
    let ours = fs::canonicalize(&args.ours)
        .unwrap_or_else(|e| panic!("our binary {}: {e}", args.ours.display()));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let jobs = args.jobs.unwrap_or(cores);
    let bytes: u64 = files.iter().map(|f| fs::metadata(f).unwrap().len()).sum();

    let load_before = load_average();
    remove_databases(&files);
    warm(&files);
    let mut sequential = Measure {
        wall: Duration::ZERO,
        max_rss_kib: 0,
        cpu: Duration::ZERO,
    };
    for f in &files {
        let m = measure(
            Command::new(&ours)
                .arg("import")
                .arg(f)
                .args(["--no-focus", "--json"])
                .current_dir(&dir),
        );
        sequential.wall += m.wall;
        sequential.cpu += m.cpu;
        sequential.max_rss_kib = sequential.max_rss_kib.max(m.max_rss_kib);
    }

    let ranks = |label: &str| -> Measure {
        let m = measure(
            Command::new(&ours)
                .arg("ranks")
                .arg(&dir)
                .args(["-j", &jobs.to_string(), "--json"])
                .current_dir(&dir),
        );
        eprintln!("{label}: {:.2} s", m.wall.as_secs_f64());
        m
    };
    // The imports' databases are there: `ranks` reads them.
    let reused = ranks("ranks, reused");
    remove_databases(&files);
    warm(&files);
    let fresh = ranks("ranks, fresh");
    let written = files.iter().filter(|f| {
        let mut db = f.as_os_str().to_owned();
        db.push(".db");
        PathBuf::from(db).exists()
    });
    assert_eq!(written.count(), 0, "ranks wrote databases");
    let load_after = load_average();

    let mib = |kib: i64| kib as f64 / 1024.0;
    let ideal = sequential.wall.as_secs_f64() / cores as f64;
    println!(
        "Job: {} rank snapshots of {:.1} MB each ({:.0} MB), `pt-snap-gen --seed {} --rank i`; \
         {cores} cores, `ranks -j {jobs}`\n",
        files.len(),
        bytes as f64 / files.len() as f64 / 1e6,
        bytes as f64 / 1e6,
        args.seed
    );
    println!("| run | wall (s) | CPU user+sys (s) | peak RSS (MiB) |");
    println!("| --- | ---: | ---: | ---: |");
    println!(
        "| {} × `pt-snap import`, one after another (sum; RSS of the largest) | {:.2} | {:.2} | {:.0} |",
        files.len(),
        sequential.wall.as_secs_f64(),
        sequential.cpu.as_secs_f64(),
        mib(sequential.max_rss_kib)
    );
    for (label, m) in [
        ("fresh: the replay alone", &fresh),
        ("every import's database read", &reused),
    ] {
        println!(
            "| `pt-snap ranks -j {jobs}`, {label} | {:.2} | {:.2} | {:.0} |",
            m.wall.as_secs_f64(),
            m.cpu.as_secs_f64(),
            mib(m.max_rss_kib)
        );
    }
    println!(
        "\n`ranks` (fresh) took {:.2}× the sequential sum divided by {cores} cores ({:.2} s); \
         1.00× would be perfect scaling. It kept {:.2} cores busy on average (CPU / wall; \
         the imports one after another: {:.2}). Load average {load_before} before the run, \
         {load_after} after.",
        fresh.wall.as_secs_f64() / ideal,
        ideal,
        fresh.cpu.as_secs_f64() / fresh.wall.as_secs_f64(),
        sequential.cpu.as_secs_f64() / sequential.wall.as_secs_f64(),
    );
}

/// The 1-minute load average, to tell a contended run from a quiet one.
fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".into())
}
