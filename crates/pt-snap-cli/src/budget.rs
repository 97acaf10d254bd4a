//! A command's budgets: the query deadline (`--timeout`, `PT_SNAP_QUERY_TIMEOUT`) and the
//! dataset work limits (`--max-work-rows` …), resolved flag > environment > default.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use pt_snap_query::{python, Interrupt, WorkLimits};

use crate::error::{CliError, CliResult};

pub const ENV_TIMEOUT: &str = "PT_SNAP_QUERY_TIMEOUT";

/// The dataset work-limit flags shared by `query` and the reports.
#[derive(Debug, Clone, Args)]
pub struct WorkLimitArgs {
    /// Dataset global work row ceiling (default: PT_SNAP_MAX_WORK_ROWS or 100000).
    #[arg(long, allow_negative_numbers = true)]
    pub max_work_rows: Option<i64>,
    /// Dataset serialized-value byte ceiling (default: PT_SNAP_MAX_WORK_BYTES or 67108864).
    #[arg(long, allow_negative_numbers = true)]
    pub max_work_bytes: Option<i64>,
    /// Dataset scratch database page ceiling; 0 disables it (default:
    /// PT_SNAP_MAX_SCRATCH_DB_BYTES or 536870912).
    #[arg(long, allow_negative_numbers = true)]
    pub max_scratch_db_bytes: Option<i64>,
}

impl WorkLimitArgs {
    pub fn resolve(&self) -> CliResult<WorkLimits> {
        let defaults = WorkLimits::default();
        let limits = WorkLimits {
            max_work_rows: integer(
                self.max_work_rows,
                "PT_SNAP_MAX_WORK_ROWS",
                defaults.max_work_rows,
            )?,
            max_work_bytes: integer(
                self.max_work_bytes,
                "PT_SNAP_MAX_WORK_BYTES",
                defaults.max_work_bytes,
            )?,
            max_scratch_db_bytes: integer(
                self.max_scratch_db_bytes,
                "PT_SNAP_MAX_SCRATCH_DB_BYTES",
                defaults.max_scratch_db_bytes,
            )?,
        };
        for (name, value) in [
            ("max_work_rows", limits.max_work_rows),
            ("max_work_bytes", limits.max_work_bytes),
        ] {
            if value <= 0 {
                return Err(limit_error(format!(
                    "{name} must be a positive integer; got {value}."
                )));
            }
        }
        let scratch = limits.max_scratch_db_bytes;
        if scratch != 0 && !(4096..=4 << 30).contains(&scratch) {
            return Err(limit_error(format!(
                "max_scratch_db_bytes must be 0 (disabled) or an integer between 4096 and \
                 {} (4 GiB); got {scratch}.",
                4i64 << 30
            )));
        }
        Ok(limits)
    }
}

/// The work limits from the environment alone (commands without the flags).
pub fn env_work_limits() -> CliResult<WorkLimits> {
    WorkLimitArgs {
        max_work_rows: None,
        max_work_bytes: None,
        max_scratch_db_bytes: None,
    }
    .resolve()
}

fn integer(explicit: Option<i64>, env: &str, default: i64) -> CliResult<i64> {
    if let Some(v) = explicit {
        return Ok(v);
    }
    let Some(raw) = std::env::var(env).ok().filter(|r| !r.trim().is_empty()) else {
        return Ok(default);
    };
    let t = raw.trim();
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    match (digits.bytes().all(|b| b.is_ascii_digit()) && !digits.is_empty())
        .then(|| t.parse::<i64>().ok())
        .flatten()
    {
        Some(v) => Ok(v),
        None => Err(limit_error(format!(
            "{env} must be an integer, got {}.",
            python::repr_str(&raw)
        ))),
    }
}

fn limit_error(message: String) -> CliError {
    CliError::invalid_parameter(
        message,
        "Use positive integers for --max-work-rows/--max-work-bytes and 0 or 4096..4294967296 \
         for --max-scratch-db-bytes (or the PT_SNAP_MAX_* variables).",
    )
}

/// One deadline for a whole command, however many statements it runs.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    /// The effective timeout in seconds, as reported in `timeout_s`.
    pub seconds: Option<f64>,
    at: Option<Instant>,
}

impl Deadline {
    /// Starts the clock: an explicit `--timeout` wins (≤ 0 disables), else the environment.
    pub fn start(explicit: Option<f64>) -> CliResult<Deadline> {
        let seconds = match explicit {
            Some(s) => Some(s),
            None => match std::env::var(ENV_TIMEOUT) {
                Ok(raw) if !raw.trim().is_empty() => Some(parse_float(&raw).ok_or_else(|| {
                    CliError::invalid_parameter(
                        format!(
                            "{ENV_TIMEOUT} must be a number of seconds, got {}",
                            python::repr_str(&raw)
                        ),
                        "Use a numeric --timeout, or set PT_SNAP_QUERY_TIMEOUT to a number of seconds.",
                    )
                })?),
                _ => None,
            },
        }
        .filter(|s| *s > 0.0);
        let at = seconds.map(|s| Instant::now() + Duration::from_secs_f64(s.min(1e9)));
        Ok(Deadline { seconds, at })
    }

    pub fn expired(&self) -> bool {
        self.at.is_some_and(|at| Instant::now() >= at)
    }

    /// Fails with `QUERY_TIMEOUT` once the deadline has passed.
    pub fn check(&self) -> CliResult<()> {
        if self.expired() {
            return Err(CliError::query(pt_snap_query::QueryError::Timeout, self));
        }
        Ok(())
    }

    /// The interrupt the query engine polls.
    pub fn interrupt(&self) -> Option<Interrupt> {
        let at = self.at?;
        Some(Arc::new(move || Instant::now() >= at))
    }
}

/// Python's `float()` of a string: surrounding whitespace, `inf`, `nan`, underscores
/// between digits.
fn parse_float(raw: &str) -> Option<f64> {
    let t = raw.trim();
    if t.starts_with('_') || t.ends_with('_') || t.contains("__") {
        return None;
    }
    t.replace('_', "").parse::<f64>().ok()
}
