//! `pt-snap-bench`: our CLI and pt-snap-cli 0.4.1 side by side, in the same run, with wall
//! time and peak RSS of each child (`wait4`), printed as Markdown for docs/performance.md.
//!
//! * `import`: imports one snapshot with both tools and measures the physical floor: SQLite
//!   bulk-inserting the very same rows and building the same indexes, with no decoding or
//!   replay at all.
//! * `queries`: runs every template with its default parameters on one or more databases.
//! * `dataset-import`: `import --events-per-slice K` (and optionally `--format msinsight`).
//! * `split`: `split --slices N` (pickle or JSON slices).
//! * `ranks`: `ranks -j <cores>` on N generated rank snapshots against N sequential
//!   `import`s (ours only: the reference has no `ranks`).
//! * `parquet`: the Parquet export against reading the same rows, and `pt-snap sql`'s named
//!   queries on N generated ranks (ours only).
//! * `check`: `pt-snap check --record` and `--baseline` against `pt-snap import` of one
//!   snapshot (ours only).
//!
//! ```sh
//! cargo build --release -p pt-snap-cli -p pt-snap-bench
//! target/release/pt-snap-bench import --snapshot big.pickle --reference .oracle/bin/pt-snap
//! target/release/pt-snap-bench queries --db big.pickle.db --reference .oracle/bin/pt-snap
//! target/release/pt-snap-bench dataset-import --snapshot big.pickle --reference .oracle/bin/pt-snap
//! target/release/pt-snap-bench split --snapshot big.pickle --reference .oracle/bin/pt-snap
//! target/release/pt-snap-bench ranks --files 64 --mb 20 --dir /tmp/ranks-job
//! target/release/pt-snap-bench parquet --db bench-1m.pickle.db --ranks 256 --events 100000
//! target/release/pt-snap-bench check --snapshot /tmp/bench-100m.pickle
//! ```

mod check;
mod dataset;
mod parquet;
mod queries;
mod ranks;
mod split;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use rusqlite::Connection;

#[derive(Parser)]
enum Bench {
    /// Import one snapshot with both tools, and the SQLite floor.
    Import(Args),
    /// Every template with its default parameters, with both tools.
    Queries(queries::Args),
    /// `import --events-per-slice K` (sharded dataset) with both tools.
    DatasetImport(dataset::Args),
    /// `split --slices N` with both tools.
    Split(split::Args),
    /// `ranks -j <cores>` on generated rank snapshots against sequential imports.
    Ranks(ranks::Args),
    /// The Parquet export against reading the same rows; `pt-snap sql`'s named queries
    /// across generated ranks.
    Parquet(parquet::Args),
    /// `pt-snap check` against `pt-snap import` of one snapshot.
    Check(check::Args),
}

#[derive(Parser)]
struct Args {
    /// The snapshot to import.
    #[arg(long)]
    snapshot: PathBuf,
    #[command(flatten)]
    tools: Tools,
}

/// The two tools timed side by side, and how often: the flags of `import`, `dataset-import`
/// and `split`.
#[derive(clap::Args)]
pub(crate) struct Tools {
    /// Our binary.
    #[arg(long, default_value = "target/release/pt-snap")]
    pub ours: PathBuf,
    /// pt-snap-cli 0.4.1's entry point (e.g. `.oracle/bin/pt-snap`); skipped when absent.
    #[arg(long)]
    pub reference: Option<PathBuf>,
    /// Runs per tool; the best wall time and its RSS are reported.
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
}

impl Tools {
    /// The reference's entry point, if it was given and exists.
    pub fn reference(&self) -> Option<&PathBuf> {
        self.reference.as_ref().filter(|r| r.exists())
    }
}

pub(crate) struct Measure {
    pub wall: Duration,
    pub max_rss_kib: i64,
    /// User + system CPU time: unlike the wall time, not inflated when other work shares
    /// the machine.
    pub cpu: Duration,
}

/// How our run compares with the reference's.
pub(crate) struct Versus {
    /// How many times faster by wall time.
    pub speed_up: f64,
    /// How many times less CPU time.
    pub cpu_speed_up: f64,
    /// Our peak RSS as a percentage of the reference's.
    pub memory_percent: f64,
}

impl Measure {
    pub fn versus(&self, reference: &Measure) -> Versus {
        Versus {
            speed_up: reference.wall.as_secs_f64() / self.wall.as_secs_f64(),
            cpu_speed_up: reference.cpu.as_secs_f64() / self.cpu.as_secs_f64(),
            memory_percent: 100.0 * self.max_rss_kib as f64 / reference.max_rss_kib as f64,
        }
    }

    pub fn rss_mib(&self) -> f64 {
        self.max_rss_kib as f64 / 1024.0
    }
}

/// Runs a command to completion and reads its peak RSS from the kernel's rusage.
// The child is reaped by `wait4` below, which std cannot see.
#[allow(clippy::zombie_processes)]
pub(crate) fn measure(cmd: &mut Command) -> Measure {
    let start = Instant::now();
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: `rusage` is plain integers and timevals, for which all-zero bytes are valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child; `usage` is a valid out-pointer.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    assert_eq!(r, pid, "wait4 failed");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{cmd:?} failed with status {status}"
    );
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Measure {
        wall,
        max_rss_kib: usage.ru_maxrss,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
    }
}

pub(crate) fn best(runs: usize, mut f: impl FnMut() -> Measure) -> Measure {
    (0..runs.max(1))
        .map(|_| f())
        .min_by_key(|m| m.wall)
        .unwrap()
}

fn import_cmd(bin: &Path, snapshot: &Path, out: &Path) -> Command {
    let mut c = Command::new(bin);
    c.arg("import")
        .arg(snapshot)
        .arg("-o")
        .arg(out)
        .args(["--json", "--no-focus", "--force"]);
    c
}

/// Copies every device's rows from `db` into a fresh database with the same DDL, then builds
/// the same indexes: what any importer must at least pay.
fn sqlite_floor(db: &Path, scratch: &Path) -> Duration {
    let src = Connection::open(db).unwrap();
    let schema: Vec<(String, String, String)> = src
        .prepare(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type DESC",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let tables: Vec<(String, usize)> = schema
        .iter()
        .filter(|(t, _, _)| t == "table")
        .map(|(_, name, _)| {
            let cols: i64 = src
                .query_row(
                    &format!("SELECT count(*) FROM pragma_table_info('{name}')"),
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            (name.clone(), cols as usize)
        })
        .collect();
    let rows: Vec<(String, usize, Vec<Vec<rusqlite::types::Value>>)> = tables
        .iter()
        .map(|(name, cols)| {
            let mut stmt = src.prepare(&format!("SELECT * FROM {name}")).unwrap();
            let data = stmt
                .query_map([], |r| (0..*cols).map(|i| r.get(i)).collect())
                .unwrap()
                .map(Result::unwrap)
                .collect();
            (name.clone(), *cols, data)
        })
        .collect();
    let _ = std::fs::remove_file(scratch);
    let start = Instant::now();
    let dst = Connection::open(scratch).unwrap();
    dst.execute_batch(
        "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -65536; \
         PRAGMA temp_store = MEMORY; BEGIN;",
    )
    .unwrap();
    for (_, _, sql) in schema.iter().filter(|(t, _, _)| t == "table") {
        dst.execute_batch(sql).unwrap();
    }
    for (name, cols, data) in &rows {
        let marks = vec!["?"; *cols].join(", ");
        let mut stmt = dst
            .prepare(&format!("INSERT INTO {name} VALUES ({marks})"))
            .unwrap();
        for row in data {
            stmt.execute(rusqlite::params_from_iter(row.iter()))
                .unwrap();
        }
    }
    for (_, _, sql) in schema.iter().filter(|(t, _, _)| t == "index") {
        dst.execute_batch(sql).unwrap();
    }
    dst.execute_batch("COMMIT").unwrap();
    drop(dst);
    start.elapsed()
}

fn main() {
    match Bench::parse() {
        Bench::Import(args) => import(args),
        Bench::Queries(args) => queries::run(args),
        Bench::DatasetImport(args) => dataset::bench(args),
        Bench::Split(args) => split::bench(args),
        Bench::Ranks(args) => ranks::bench(args),
        Bench::Parquet(args) => parquet::bench(args),
        Bench::Check(args) => check::bench(args),
    }
}

fn import(args: Args) {
    let dir = tempfile::tempdir().unwrap();
    let name = args
        .snapshot
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let size = std::fs::metadata(&args.snapshot).unwrap().len();
    let ours_dir = dir.path().join("ours");
    std::fs::create_dir_all(&ours_dir).unwrap();
    let ours = best(args.tools.runs, || {
        measure(&mut import_cmd(&args.tools.ours, &args.snapshot, &ours_dir))
    });
    let db = ours_dir.join(format!("{name}.db"));
    let events: i64 = {
        let c = Connection::open(&db).unwrap();
        let tables: Vec<String> = c
            .prepare(
                "SELECT name FROM sqlite_master WHERE name LIKE 'trace_entry_%' AND type = 'table'",
            )
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        tables
            .iter()
            .map(|t| {
                c.query_row(&format!("SELECT count(*) FROM {t}"), [], |r| {
                    r.get::<_, i64>(0)
                })
                .unwrap()
            })
            .sum()
    };
    let floor = (0..args.tools.runs.max(1))
        .map(|_| sqlite_floor(&db, &dir.path().join("floor.db")))
        .min()
        .unwrap();
    let reference = args.tools.reference().map(|r| {
        let ref_dir = dir.path().join("reference");
        std::fs::create_dir_all(&ref_dir).unwrap();
        best(args.tools.runs, || {
            measure(&mut import_cmd(r, &args.snapshot, &ref_dir))
        })
    });

    println!(
        "Snapshot: {name} ({:.1} MB, {events} trace rows incl. synthetic)\n",
        size as f64 / 1e6
    );
    println!("| importer | wall (s) | peak RSS (MiB) | vs reference |");
    println!("| --- | ---: | ---: | --- |");
    let vs = reference.as_ref().map_or("n/a".into(), |r| {
        let v = ours.versus(r);
        format!(
            "{:.1}× faster, {:.1}% of its memory",
            v.speed_up, v.memory_percent
        )
    });
    println!(
        "| pt-snap | {:.2} | {:.0} | {vs} |",
        ours.wall.as_secs_f64(),
        ours.rss_mib()
    );
    if let Some(r) = &reference {
        println!(
            "| pt-snap-cli 0.4.1 | {:.2} | {:.0} | 1× |",
            r.wall.as_secs_f64(),
            r.rss_mib()
        );
    }
    println!(
        "| SQLite floor (same rows + indexes, no decode/replay) | {:.2} | — | pt-snap = {:.2}× the floor |",
        floor.as_secs_f64(),
        ours.wall.as_secs_f64() / floor.as_secs_f64()
    );
}
