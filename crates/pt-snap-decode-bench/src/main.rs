//! The native side of `scripts/decode-bench`: decodes FILE `RUNS` times (default 1) through
//! the same sliced reader the wasm side uses, and prints one JSON line per run:
//! `{"target":"native","first":…,"seconds":…,"cpu":…,"summary":"…"}` (wall and thread CPU
//! seconds; `first` for the process's first decode). The file is read into memory first and
//! that read is not timed, as node reads it before calling the wasm; neither is the summary.

use std::process::ExitCode;
use std::time::Instant;

use pt_snap_decode_bench::{decode, summary, Slices};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(path), runs) = (args.first(), args.get(1)) else {
        eprintln!("usage: pt-snap-decode-bench FILE [RUNS]");
        return ExitCode::from(2);
    };
    let runs: usize = match runs.map(|r| r.parse()) {
        None => 1,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("pt-snap-decode-bench: RUNS: {e}");
            return ExitCode::from(2);
        }
    };
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("pt-snap-decode-bench: {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    for run in 0..runs {
        let cpu_start = thread_cpu();
        let start = Instant::now();
        let reader = Slices::new(bytes.len() as u64, |s, e| {
            Ok(bytes[s as usize..e as usize].to_vec())
        });
        match decode(reader, bytes.len() as u64) {
            Ok(snapshot) => {
                let seconds = start.elapsed().as_secs_f64();
                let cpu = match (cpu_start, thread_cpu()) {
                    (Some(a), Some(b)) => format!("{:.2}", b - a),
                    _ => "null".into(),
                };
                let summary = summary(&snapshot);
                println!(
                    "{{\"target\":\"native\",\"first\":{},\"seconds\":{seconds:.4},\"cpu\":{cpu},\"summary\":\"{summary}\"}}",
                    run == 0
                );
            }
            Err(e) => {
                eprintln!("pt-snap-decode-bench: {path}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// CPU seconds this thread has run (user + system), from Linux's /proc in clock ticks of
/// 10 ms; `None` elsewhere. On a machine shared with other work the wall clock also counts
/// the time spent waiting for a core, which this does not.
fn thread_cpu() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}
