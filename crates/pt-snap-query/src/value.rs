//! Result values as SQLite returns them, plus the booleans post-processing adds.

use std::sync::Arc;

use serde_json::Value as Json;

use crate::python;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    /// Shared: the same callstack text repeats on many rows and is stored once.
    Text(Arc<str>),
    Blob(Arc<[u8]>),
    Bool(bool),
}

impl Value {
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }

    pub fn to_json(&self) -> Json {
        match self {
            Value::Null => Json::Null,
            Value::Int(i) => Json::from(*i),
            Value::Real(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
            Value::Text(s) => Json::from(&**s),
            Value::Blob(b) => Json::from(String::from_utf8_lossy(b).into_owned()),
            Value::Bool(b) => Json::from(*b),
        }
    }

    /// `repr()` of the value the reference's sqlite3 row would hold.
    pub fn python_repr(&self) -> String {
        match self {
            Value::Null => "None".into(),
            Value::Int(i) => i.to_string(),
            Value::Real(f) => python::float_repr(*f),
            Value::Text(s) => python::repr_str(s),
            Value::Blob(b) => {
                let mut out = String::from("b'");
                for &byte in b.iter() {
                    match byte {
                        b'\\' => out.push_str("\\\\"),
                        b'\'' => out.push_str("\\'"),
                        b'\n' => out.push_str("\\n"),
                        b'\r' => out.push_str("\\r"),
                        b'\t' => out.push_str("\\t"),
                        0x20..=0x7e => out.push(byte as char),
                        _ => out.push_str(&format!("\\x{byte:02x}")),
                    }
                }
                out.push('\'');
                out
            }
            Value::Bool(true) => "True".into(),
            Value::Bool(false) => "False".into(),
        }
    }
}
