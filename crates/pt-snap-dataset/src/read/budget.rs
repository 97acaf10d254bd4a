//! The dataset work budget (spec §6.6): cumulative fetched and output rows, and the size of
//! their values serialised as the reference measures them (`json.dumps(row,
//! ensure_ascii=True)`), checked after every batch; exceeding either ceiling fails the whole
//! query — there is never a partial global answer.

use pt_snap_query::{Interrupt, WorkLimits};
use serde_json::{Map, Value};

use super::ReadError;

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
    pub fn check(&self) -> Result<(), ReadError> {
        match &self.interrupt {
            Some(i) if i() => Err(ReadError::Timeout),
            _ => Ok(()),
        }
    }

    pub fn consume(&mut self, rows: &[Map<String, Value>]) -> Result<(), ReadError> {
        self.check()?;
        self.rows += rows.len() as i64;
        self.bytes += rows
            .iter()
            .map(|r| py_json_len(&Value::Object(r.clone())) as i64)
            .sum::<i64>();
        if self.rows > self.limits.max_work_rows || self.bytes > self.limits.max_work_bytes {
            return Err(ReadError::Failed(format!(
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

/// Length in bytes of Python's `json.dumps(value, ensure_ascii=True)` (separators `", "` and
/// `": "`, non-ASCII as `\uXXXX`, floats as `repr`).
pub fn py_json_len(v: &Value) -> usize {
    match v {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.to_string().len()
            } else if let Some(u) = n.as_u64() {
                u.to_string().len()
            } else {
                pt_snap_query::python::float_repr(n.as_f64().unwrap_or(0.0)).len()
            }
        }
        Value::String(s) => str_len(s),
        Value::Array(a) => {
            2 + a.iter().map(py_json_len).sum::<usize>() + 2 * a.len().saturating_sub(1)
        }
        Value::Object(o) => {
            2 + o
                .iter()
                .map(|(k, v)| str_len(k) + 2 + py_json_len(v))
                .sum::<usize>()
                + 2 * o.len().saturating_sub(1)
        }
    }
}

fn str_len(s: &str) -> usize {
    2 + s
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if (c as u32) < 0x20 => 6,
            c if c.is_ascii() => 1,
            c if (c as u32) > 0xffff => 12,
            _ => 6,
        })
        .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_match_pythons_json_dumps() {
        // python3 -c 'import json; print(len(json.dumps({"a": 1, "b": [None, True, 1.5], "c": "é\n"})))'
        let v = serde_json::json!({"a": 1, "b": [null, true, 1.5], "c": "é\n"});
        assert_eq!(py_json_len(&v), 49);
        assert_eq!(py_json_len(&serde_json::json!("😀")), 14);
        assert_eq!(py_json_len(&serde_json::json!({})), 2);
        assert_eq!(py_json_len(&serde_json::json!(1e16)), "1e+16".len());
    }
}
