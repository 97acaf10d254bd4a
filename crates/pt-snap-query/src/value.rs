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
    /// A value no SQLite column holds: a list or object a dataset row carries (its
    /// `allocation_source`, …), or an integer beyond `i64`.
    Json(Arc<Json>),
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
            Value::Json(v) => (**v).clone(),
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
            Value::Json(v) => python::repr_of_json(v),
        }
    }
}

impl From<Json> for Value {
    /// A JSON value as the row value that prints and serialises the same.
    fn from(v: Json) -> Self {
        match v {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(b),
            Json::Number(n) if n.is_i64() => Value::Int(n.as_i64().unwrap_or_default()),
            Json::Number(n) if n.is_f64() => Value::Real(n.as_f64().unwrap_or_default()),
            Json::String(s) => Value::Text(Arc::from(s)),
            other => Value::Json(Arc::new(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_values_round_trip_and_print_like_python() {
        let row: Json = serde_json::from_str(
            r#"[null, true, 3, 2.5, 3.0, "a'b", {"k": [1]}, 18446744073709551615]"#,
        )
        .unwrap();
        for v in row.as_array().unwrap() {
            let value = Value::from(v.clone());
            assert_eq!(&value.to_json(), v);
            assert_eq!(value.python_repr(), python::repr_of_json(v));
        }
    }
}
