//! The dataset work budget (spec §6.6): cumulative fetched and output rows, and the size of
//! their values serialised as the reference measures them (`json.dumps(row,
//! ensure_ascii=True)`), checked after every batch; exceeding either ceiling fails the whole
//! query — there is never a partial global answer.

use pt_snap_contract::python;
use pt_snap_query::{Interrupt, QueryError, WorkLimits};
use serde_json::{Map, Value};

pub struct Budget {
    pub limits: WorkLimits,
    pub rows: i64,
    pub bytes: i64,
    pub interrupt: Option<Interrupt>,
}

impl Budget {
    pub fn new(limits: WorkLimits, interrupt: Option<Interrupt>) -> Self {
        Self {
            limits,
            rows: 0,
            bytes: 0,
            interrupt,
        }
    }

    /// `QUERY_TIMEOUT` once the caller's deadline has passed.
    pub fn check(&self) -> Result<(), QueryError> {
        match &self.interrupt {
            Some(i) if i() => Err(QueryError::Timeout),
            _ => Ok(()),
        }
    }

    pub fn consume(&mut self, rows: &[Map<String, Value>]) -> Result<(), QueryError> {
        self.check()?;
        self.rows += rows.len() as i64;
        self.bytes += rows
            .iter()
            .map(|r| python::dumps_len(&Value::Object(r.clone())) as i64)
            .sum::<i64>();
        if self.rows > self.limits.max_work_rows || self.bytes > self.limits.max_work_bytes {
            return Err(QueryError::Failed(format!(
                "Dataset query work budget exceeded (max_work_rows={}, max_work_bytes={}, \
                 max_scratch_db_bytes={}; consumed_rows={}, consumed_bytes={}); no partial \
                 global result. Narrow the scope or explicitly raise query limits.",
                self.limits.max_work_rows,
                self.limits.max_work_bytes,
                self.limits.max_scratch_db_bytes,
                self.rows,
                self.bytes
            )));
        }
        Ok(())
    }

    /// The `work_budget` object of a dataset query's `scope`.
    pub fn describe(&self) -> Value {
        serde_json::json!({
            "max_rows": self.limits.max_work_rows,
            "max_bytes": self.limits.max_work_bytes,
            "max_scratch_db_bytes": self.limits.max_scratch_db_bytes,
            "unit": "cumulative_fetched_and_output_serialized_values; not_RSS",
            "scratch_unit": "derived_database_pages; not_total_temporary_space_or_RSS",
        })
    }
}
