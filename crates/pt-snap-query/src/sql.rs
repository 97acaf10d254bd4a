//! SQL text with bound values. Templates append fixed SQL and bind every value a user
//! supplied; nothing a user typed is ever pasted into the text. The only variable text is
//! table names (from device ids, integers) and identifiers chosen from a contract's closed
//! `choices` list, after validation.

use rusqlite::types::Value as SqlValue;

use crate::params::ParamValue;

#[derive(Debug, Clone, Default)]
pub struct Sql {
    text: String,
    binds: Vec<SqlValue>,
    scans: Vec<ScanSlot>,
}

/// `pt_snap_group_totals(key, value)` over every row of `table` that passes `filter`: the
/// one full-table pass of a template. Written inline as a scalar subquery, so the text is
/// always a complete statement; the engine may instead split the pass by rowid across
/// connections and bind the merged totals in its place (see `scan.rs`). Every part is fixed
/// template text or a table name: nothing a user typed. The filter must leave the rowid
/// unconstrained for the planner (`+id >= 0`, not `id >= 0`): SQLite seeks with one lower
/// bound, and a part that took the filter's instead of its range's would read every row
/// before its range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupScan {
    pub table: String,
    pub key: &'static str,
    pub value: &'static str,
    pub filter: &'static str,
}

impl GroupScan {
    /// The pass as one statement; `rowids` adds `AND rowid BETWEEN ? AND ?`.
    pub fn statement(&self, rowids: bool) -> String {
        let range = if rowids {
            " AND rowid BETWEEN ? AND ?"
        } else {
            ""
        };
        format!(
            "SELECT pt_snap_group_totals({}, {}) FROM {} WHERE ({}){range}",
            self.key, self.value, self.table, self.filter
        )
    }
}

/// Where a [`GroupScan`]'s subquery sits in the text, and how many binds precede it.
#[derive(Debug, Clone)]
struct ScanSlot {
    span: std::ops::Range<usize>,
    binds_before: usize,
    scan: GroupScan,
}

impl Sql {
    pub fn new(text: &str) -> Self {
        Sql {
            text: text.to_owned(),
            ..Sql::default()
        }
    }

    pub fn push(&mut self, text: &str) -> &mut Self {
        self.text.push_str(text);
        self
    }

    /// Appends a placeholder bound to `value`.
    pub fn bind(&mut self, value: impl Into<SqlValue>) -> &mut Self {
        self.binds.push(value.into());
        self.text.push('?');
        self
    }

    /// Appends the scan as a parenthesised scalar subquery yielding its totals' JSON.
    pub fn group_totals(&mut self, scan: GroupScan) -> &mut Self {
        let start = self.text.len();
        self.text.push('(');
        self.text.push_str(&scan.statement(false));
        self.text.push(')');
        self.scans.push(ScanSlot {
            span: start..self.text.len(),
            binds_before: self.binds.len(),
            scan,
        });
        self
    }

    /// The full-table passes in the statement, in text order.
    pub fn scans(&self) -> impl Iterator<Item = &GroupScan> {
        self.scans.iter().map(|s| &s.scan)
    }

    /// The statement with each scan's subquery replaced by a value bound to its totals
    /// (`totals[i]` for the `i`-th scan, as [`Sql::scans`] lists them).
    pub fn with_scan_totals(&self, totals: Vec<String>) -> Sql {
        assert_eq!(totals.len(), self.scans.len(), "one total per scan");
        let mut text = String::with_capacity(self.text.len());
        let mut binds = Vec::with_capacity(self.binds.len() + totals.len());
        let (mut copied_text, mut copied_binds) = (0, 0);
        for (slot, json) in self.scans.iter().zip(totals) {
            text.push_str(&self.text[copied_text..slot.span.start]);
            text.push('?');
            copied_text = slot.span.end;
            binds.extend_from_slice(&self.binds[copied_binds..slot.binds_before]);
            binds.push(SqlValue::Text(json));
            copied_binds = slot.binds_before;
        }
        text.push_str(&self.text[copied_text..]);
        binds.extend_from_slice(&self.binds[copied_binds..]);
        Sql {
            text,
            binds,
            scans: Vec::new(),
        }
    }

    /// Appends `text` followed by a bound value, when the parameter is set.
    pub fn filter(&mut self, text: &str, value: &ParamValue) -> &mut Self {
        if let Some(v) = bound(value) {
            self.push(text).bind(v);
        }
        self
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn binds(&self) -> &[SqlValue] {
        &self.binds
    }

    /// Wraps the statement as a subquery: `prefix (self) suffix`.
    pub fn wrap(self, prefix: &str, suffix: &str) -> Sql {
        let shift = prefix.len();
        Sql {
            text: format!("{prefix}{}{suffix}", self.text),
            binds: self.binds,
            scans: (self.scans.into_iter())
                .map(|s| ScanSlot {
                    span: s.span.start + shift..s.span.end + shift,
                    ..s
                })
                .collect(),
        }
    }
}

fn bound(value: &ParamValue) -> Option<SqlValue> {
    Some(match value {
        ParamValue::Null => return None,
        ParamValue::Int(i) => SqlValue::Integer(*i),
        ParamValue::Float(f) => SqlValue::Real(*f),
        ParamValue::Bool(b) => SqlValue::Integer(i64::from(*b)),
        ParamValue::Str(s) => SqlValue::Text(s.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(table: &str) -> GroupScan {
        GroupScan {
            table: table.to_owned(),
            key: "k",
            value: "v",
            filter: "id >= 0",
        }
    }

    /// Binds before, between and after the scans keep their order once the scans become
    /// binds themselves, also after `wrap` shifted the text.
    #[test]
    fn scan_totals_take_the_subqueries_places_among_the_binds() {
        let mut q = Sql::new("SELECT ");
        q.bind(1).push(" + json_array_length(");
        q.group_totals(scan("a"))
            .push(") + ")
            .bind(2)
            .push(" + json_array_length(");
        q.group_totals(scan("b")).push(") + ").bind(3);
        let q = q.wrap("SELECT * FROM (", ")");
        assert_eq!(
            q.text(),
            "SELECT * FROM (SELECT ? + json_array_length((SELECT pt_snap_group_totals(k, v) \
             FROM a WHERE (id >= 0))) + ? + json_array_length((SELECT pt_snap_group_totals(k, \
             v) FROM b WHERE (id >= 0))) + ?)"
        );
        assert_eq!(
            q.scans().map(|s| s.table.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        let r = q.with_scan_totals(vec!["[A]".into(), "[B]".into()]);
        assert_eq!(
            r.text(),
            "SELECT * FROM (SELECT ? + json_array_length(?) + ? + json_array_length(?) + ?)"
        );
        let text = |s: &str| SqlValue::Text(s.into());
        assert_eq!(
            r.binds(),
            [
                SqlValue::Integer(1),
                text("[A]"),
                SqlValue::Integer(2),
                text("[B]"),
                SqlValue::Integer(3)
            ]
        );
        assert_eq!(r.scans().count(), 0);
    }
}
