//! The SQL of the templates (the reference's 13 and our own), one function per template,
//! grouped like the reference's template directories (ours: `category`). Each returns the statement without its row window: the engine
//! appends `LIMIT`/`OFFSET`, so paging, the `has_more` probe and `--exact-total` counting
//! work the same way for every template.

pub mod basic;
pub mod business;
pub mod category;
pub mod statistical;

use pt_snap_db::CallstackLayout;

use crate::error::QueryError;
use crate::params::Params;
use crate::sql::Sql;

/// Builds a template's SQL for one device of one database.
pub type PlanFn = fn(&Params, &Target) -> Result<Sql, QueryError>;

/// The device tables a statement reads, and how that database stores callstacks.
#[derive(Debug, Clone)]
pub struct Target {
    pub device: i64,
    pub layout: Result<CallstackLayout, String>,
}

impl Target {
    pub fn trace(&self) -> String {
        format!("trace_entry_{}", self.device)
    }

    pub fn block(&self) -> String {
        format!("block_{}", self.device)
    }

    /// The layout, for templates whose SQL differs between v1 and v2 databases.
    pub fn layout(&self) -> Result<CallstackLayout, QueryError> {
        self.layout
            .clone()
            .map_err(|e| QueryError::Failed(format!("Query execution failed: {e}")))
    }
}

/// A validated choice as one of the identifiers listed here. Validation already restricted
/// the value to the contract's choices; this makes the SQL text independent of that.
fn ident(p: &Params, name: &str, allowed: &[&'static str]) -> &'static str {
    let v = p.str(name);
    allowed
        .iter()
        .copied()
        .find(|a| *a == v)
        .unwrap_or(allowed[0])
}

/// One `filter` per `(condition, parameter)` pair: the condition and its bound value where
/// the parameter was given, nothing where it was not.
fn filters(q: &mut Sql, p: &Params, conditions: &[(&str, &str)]) {
    for &(condition, parameter) in conditions {
        q.filter(condition, p.get(parameter));
    }
}

/// `ORDER BY <key> <dir>`, tie-broken by `id` in the same direction.
fn order_by(q: &mut Sql, p: &Params, keys: &[&'static str]) {
    let key = ident(p, "order_by", keys);
    let dir = ident(p, "order_dir", &["ASC", "DESC"]);
    q.push(&format!(" ORDER BY {key} {dir}"));
    if key != "id" {
        q.push(&format!(", id {dir}"));
    }
}
