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
}

impl Sql {
    pub fn new(text: &str) -> Self {
        Sql {
            text: text.to_owned(),
            binds: Vec::new(),
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
        Sql {
            text: format!("{prefix}{}{suffix}", self.text),
            binds: self.binds,
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
