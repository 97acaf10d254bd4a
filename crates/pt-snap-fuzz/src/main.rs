//! `pt-snap-fuzz`: a libFuzzer-free fuzzer for the targets of `pt_snap_fuzz::targets`, on
//! stable Rust. See docs/fuzzing.md.
//!
//! The supervisor (this process) owns the seeds, the corpus, the mutator and the clock; a
//! worker child process (`pt-snap-fuzz worker TARGET`, started under `ulimit -v`) runs one
//! input at a time under `catch_unwind`. A hang, an abort on a failed allocation, a stack
//! overflow or any other death only costs the child: the supervisor knows which input it
//! sent, saves it, and starts a new child.

mod supervisor;
mod worker;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use pt_snap_fuzz::{find, Target, TARGETS};

const USAGE: &str = "\
usage: pt-snap-fuzz list
       pt-snap-fuzz fuzz TARGET [options]       mutate seeds for a time budget
       pt-snap-fuzz run TARGET FILE… [options]  run inputs once (reproduce an artifact)
       pt-snap-fuzz minimize TARGET FILE [options]  shrink an input keeping its finding
       pt-snap-fuzz seeds TARGET DIR [options]  write the seed set into DIR (for libFuzzer)

options:
  --seconds N       time budget of fuzz/minimize (default 60)
  --seed N          RNG seed (default: from the clock; printed)
  --timeout S       per-input time limit in seconds (default 10)
  --rss-mb N        per-input peak RSS limit (default 2048)
  --as-mb N         address-space cap of the worker, ulimit -v (default 4096; 0: none)
  --max-len N       longest mutant in bytes (default 2097152)
  --max-seed-len N  seed files larger than this are skipped (default 2000000)
  --seeds DIR       more seed files (any name); repeatable
  --artifacts DIR   where findings go (default fuzz/artifacts/TARGET)
  --exit-on-first   stop at the first finding (default: keep going, one artifact per bug)
  --no-default-seeds  only --seeds (and fuzz/seeds/TARGET, fuzz/corpus/TARGET)
  --print-outcomes  print each new (normalized) outcome: what the feedback sees";

/// Settings shared by the subcommands.
pub struct Options {
    pub target: &'static Target,
    pub files: Vec<PathBuf>,
    pub seconds: f64,
    pub seed: u64,
    pub timeout: Duration,
    pub rss_mb: u64,
    pub as_mb: u64,
    pub max_len: usize,
    pub max_seed_len: u64,
    pub seed_dirs: Vec<PathBuf>,
    pub default_seeds: bool,
    pub artifacts: PathBuf,
    pub exit_on_first: bool,
    pub print_outcomes: bool,
}

/// The workspace root (this crate is `crates/pt-snap-fuzz`).
pub fn workspace_root() -> PathBuf {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

fn parse(args: &[String]) -> Result<Options, String> {
    let name = args.first().ok_or("missing TARGET")?;
    let target = find(name).ok_or_else(|| {
        let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
        format!("unknown target {name:?} (targets: {})", names.join(", "))
    })?;
    let mut o = Options {
        target,
        files: Vec::new(),
        seconds: 60.0,
        seed: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64),
        timeout: Duration::from_secs(10),
        rss_mb: 2048,
        as_mb: 4096,
        max_len: 2 << 20,
        max_seed_len: 2_000_000,
        seed_dirs: Vec::new(),
        default_seeds: true,
        artifacts: workspace_root().join("fuzz/artifacts").join(target.name),
        exit_on_first: false,
        print_outcomes: false,
    };
    let mut it = args[1..].iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{a} needs a value"));
        let number = |v: &String| {
            v.parse::<f64>()
                .map_err(|_| format!("{a}: not a number: {v}"))
        };
        match a.as_str() {
            "--seconds" => o.seconds = number(value()?)?,
            "--seed" => o.seed = value()?.parse().map_err(|_| "--seed: not an integer")?,
            "--timeout" => o.timeout = Duration::from_secs_f64(number(value()?)?),
            "--rss-mb" => o.rss_mb = number(value()?)? as u64,
            "--as-mb" => o.as_mb = number(value()?)? as u64,
            "--max-len" => o.max_len = number(value()?)? as usize,
            "--max-seed-len" => o.max_seed_len = number(value()?)? as u64,
            "--seeds" => o.seed_dirs.push(value()?.into()),
            "--artifacts" => o.artifacts = value()?.into(),
            "--exit-on-first" => o.exit_on_first = true,
            "--no-default-seeds" => o.default_seeds = false,
            "--print-outcomes" => o.print_outcomes = true,
            s if s.starts_with("--") => return Err(format!("unknown option {s}")),
            file => o.files.push(file.into()),
        }
    }
    Ok(o)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = args.first().map(String::as_str);
    if command == Some("worker") {
        return match args.get(1).and_then(|n| find(n)) {
            Some(t) => worker::main(t),
            None => ExitCode::from(2),
        };
    }
    if command == Some("list") {
        for t in TARGETS {
            println!("{:<14} {}", t.name, t.about);
        }
        return ExitCode::SUCCESS;
    }
    let options = match args.get(1..).map(parse) {
        Some(Ok(o)) => o,
        Some(Err(e)) => {
            eprintln!("pt-snap-fuzz: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
        None => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let result = match command {
        Some("fuzz") if options.files.is_empty() => supervisor::fuzz(&options),
        Some("run") if !options.files.is_empty() => supervisor::run_files(&options),
        Some("minimize") if options.files.len() == 1 => supervisor::minimize(&options),
        Some("seeds") if options.files.len() == 1 => supervisor::write_seeds(&options),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            eprintln!("pt-snap-fuzz: {e}");
            ExitCode::from(2)
        }
    }
}
