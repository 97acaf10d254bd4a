//! A command's budgets: the query deadline (`--timeout`, `PT_SNAP_QUERY_TIMEOUT`) and the
//! dataset work limits (`--max-work-rows` …), resolved flag > environment > default.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use pt_snap_contract::ErrorCode;
use pt_snap_query::{python, Interrupt, QueryError, WorkLimits};

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

/// The time limit of `query` and the reports when neither `--timeout` nor
/// `PT_SNAP_QUERY_TIMEOUT` gives one: a database is input, and a hostile or pathological
/// one (a bad plan forced by planner statistics, a huge self-join) must not run for ever.
/// Ten minutes is about 200 times the slowest query the reference answers on a 1M-event
/// database (`allocator_gap`, `report peak-memory`: 2.8 s), so legitimate queries on
/// snapshots two orders of magnitude larger still fit, and it is about as long as an agent
/// host lets one tool call run. `--timeout 0` (or ≤ 0, or the variable) removes it.
pub const DEFAULT_TIMEOUT_S: f64 = 600.0;

/// One deadline for a whole command, however many statements it runs.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    /// The timeout the user gave (`--timeout`, else the environment), as reported in
    /// `timeout_s`: `None` when none was given (the default limit still applies) or when
    /// it was ≤ 0 (no limit at all).
    pub seconds: Option<f64>,
    /// The limit in force: the user's, the default, or none.
    limit: Option<f64>,
    at: Option<Instant>,
}

impl Deadline {
    /// Starts the clock: an explicit `--timeout` wins (≤ 0 disables every limit), else the
    /// environment (likewise), else [`DEFAULT_TIMEOUT_S`].
    pub fn start(explicit: Option<f64>) -> CliResult<Deadline> {
        Self::start_with_default(explicit, DEFAULT_TIMEOUT_S)
    }

    fn start_with_default(explicit: Option<f64>, default: f64) -> CliResult<Deadline> {
        let given = match explicit {
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
        };
        let (seconds, limit) = match given {
            Some(s) if s > 0.0 => (Some(s), Some(s)),
            // ≤ 0 (or NaN): the user asked for no limit, the default's included.
            Some(_) => (None, None),
            None => (None, Some(default)),
        };
        let at = limit.map(|s| Instant::now() + Duration::from_secs_f64(s.min(1e9)));
        Ok(Deadline { seconds, limit, at })
    }

    pub fn expired(&self) -> bool {
        self.at.is_some_and(|at| Instant::now() >= at)
    }

    /// Fails with `QUERY_TIMEOUT` once the deadline has passed.
    pub fn check(&self) -> CliResult<()> {
        if self.expired() {
            return Err(self.timeout_error());
        }
        Ok(())
    }

    /// The interrupt the query engine polls.
    pub fn interrupt(&self) -> Option<Interrupt> {
        let at = self.at?;
        Some(Arc::new(move || Instant::now() >= at))
    }

    /// `QUERY_TIMEOUT`: the reference's message for the user's limit; for the default one,
    /// a message that says so and how to raise or remove it.
    pub fn timeout_error(&self) -> CliError {
        let (message, hint) = match (self.seconds, self.limit) {
            (None, Some(limit)) => (
                format!(
                    "{} (the default limit, applied because neither --timeout nor \
                     {ENV_TIMEOUT} was given)",
                    QueryError::timeout_message(limit)
                ),
                Some(format!(
                    "Raise the limit with --timeout <seconds> or {ENV_TIMEOUT}, disable it with \
                     --timeout 0, or tighten -n / filters so the query does less work."
                )),
            ),
            (seconds, _) => (
                format!(
                    "Query timed out after {} seconds",
                    seconds.map_or("None".into(), python::float_repr)
                ),
                ErrorCode::QueryTimeout.hint().map(str::to_owned),
            ),
        };
        CliError::new(ErrorCode::QueryTimeout, message)
            .with_hint(hint.as_deref())
            .with_text_prefix("Error executing query: ")
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The user's limit is reported; the default is not (`timeout_s` stays null), and
    /// `--timeout 0` removes both.
    #[test]
    fn the_default_applies_only_without_a_timeout() {
        let d = Deadline::start_with_default(None, 600.0).unwrap();
        if std::env::var_os(ENV_TIMEOUT).is_none() {
            assert_eq!((d.seconds, d.limit), (None, Some(600.0)));
            assert!(d.interrupt().is_some());
        }
        let d = Deadline::start_with_default(Some(2.5), 600.0).unwrap();
        assert_eq!((d.seconds, d.limit), (Some(2.5), Some(2.5)));
        for off in [0.0, -1.0, f64::NAN] {
            let d = Deadline::start_with_default(Some(off), 600.0).unwrap();
            assert_eq!((d.seconds, d.limit), (None, None));
            assert!(d.interrupt().is_none() && !d.expired());
        }
    }

    /// When the default fires, the message says it was the default and how to change it.
    #[test]
    fn the_default_limit_explains_itself() {
        let d = Deadline::start_with_default(None, 1e-9).unwrap();
        if std::env::var_os(ENV_TIMEOUT).is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
        assert!(d.interrupt().is_some_and(|f| f()));
        let e = d.check().unwrap_err();
        assert_eq!(e.code, "QUERY_TIMEOUT");
        assert!(e
            .message
            .starts_with("Query timed out after 1e-09 seconds (the default limit"));
        assert!(e.message.contains("--timeout"), "{}", e.message);
        let hint = e.hint.clone().unwrap();
        assert!(
            hint.contains("--timeout 0") && hint.contains(ENV_TIMEOUT),
            "{hint}"
        );

        let d = Deadline::start_with_default(Some(1e-6), 600.0).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        let e = d.check().unwrap_err();
        assert_eq!(e.message, "Query timed out after 1e-06 seconds");
        assert_eq!(
            e.hint.as_deref(),
            Some("Retry with a higher --timeout, or tighten -n / filters so the query does less work.")
        );
    }
}
