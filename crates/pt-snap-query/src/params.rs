//! Parameter validation: JSON values in, typed values out, with the reference's conversions
//! (`int("5")`, `int(3.9)`, `"desc"` → `"DESC"`) and its error messages, because agents
//! written for it send exactly those spellings and read exactly those messages.

use serde_json::{Map, Value};

use crate::contract::{Contract, ParamType, Parameter};
use crate::python;

/// A validated parameter value.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    Null,
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
}

impl ParamValue {
    pub fn to_json(&self) -> Value {
        match self {
            Self::Null => Value::Null,
            Self::Int(i) => Value::from(*i),
            Self::Float(f) => Value::from(*f),
            Self::Bool(b) => Value::from(*b),
            Self::Str(s) => Value::from(s.as_str()),
        }
    }
}

/// Validated parameters in declaration order: every declared parameter, defaults filled in.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Params {
    entries: Vec<(String, ParamValue)>,
}

impl Params {
    pub fn get(&self, name: &str) -> &ParamValue {
        self.entries
            .iter()
            .find_map(|(n, v)| (n == name).then_some(v))
            .unwrap_or(&ParamValue::Null)
    }

    /// An `int` parameter, `None` when null. A value beyond 64 bits saturates, which
    /// compares the same against any id, size or count a database holds.
    pub fn int(&self, name: &str) -> Option<i64> {
        match self.get(name) {
            ParamValue::Int(i) => Some(*i),
            ParamValue::Float(f) => Some(*f as i64),
            _ => None,
        }
    }

    /// An `int` parameter that has a default, so it is never null.
    pub fn int_or(&self, name: &str, fallback: i64) -> i64 {
        self.int(name).unwrap_or(fallback)
    }

    pub fn bool(&self, name: &str) -> bool {
        matches!(self.get(name), ParamValue::Bool(true))
    }

    pub fn str(&self, name: &str) -> &str {
        match self.get(name) {
            ParamValue::Str(s) => s,
            _ => "",
        }
    }

    /// Replaces a value, or appends it when the template does not declare it (the CLI's
    /// effective row cap shows up as `limit` even there).
    pub fn set(&mut self, name: &str, value: ParamValue) {
        match self.entries.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => self.entries.push((name.to_owned(), value)),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &ParamValue)> {
        self.entries.iter().map(|(n, v)| (n.as_str(), v))
    }

    pub fn to_json(&self) -> Value {
        Value::Object(
            self.entries
                .iter()
                .map(|(n, v)| (n.clone(), v.to_json()))
                .collect(),
        )
    }
}

/// Validates raw parameters against a contract. The error is the reference's message
/// without its `Failed to validate parameters for template 'T': ` prefix.
pub fn validate(contract: &Contract, raw: &Map<String, Value>) -> Result<Params, String> {
    let mut unknown: Vec<&str> = raw
        .keys()
        .map(String::as_str)
        .filter(|k| !contract.has_parameter(k))
        .collect();
    if !unknown.is_empty() {
        unknown.sort_unstable();
        let accepted = if contract.parameters.is_empty() {
            "none".to_owned()
        } else {
            let names: Vec<&str> = contract
                .parameters
                .iter()
                .map(|(n, _)| n.as_str())
                .collect();
            names.join(", ")
        };
        return Err(format!(
            "Unknown parameter(s) for template '{}': {} (accepted: {accepted})",
            contract.name,
            unknown.join(", ")
        ));
    }
    let entries = contract
        .parameters
        .iter()
        .map(|(name, p)| {
            let value = raw.get(name).unwrap_or(&Value::Null);
            Ok((name.clone(), validate_one(name, p, value)?))
        })
        .collect::<Result<_, String>>()?;
    Ok(Params { entries })
}

fn validate_one(name: &str, p: &Parameter, value: &Value) -> Result<ParamValue, String> {
    if value.is_null() {
        if p.required {
            return Err(format!("Required parameter '{name}' is missing"));
        }
        return Ok(declared_default(p));
    }
    let converted = convert(p.kind, value).map_err(|e| {
        format!(
            "Parameter '{name}' cannot be converted to {}: {e}",
            p.kind.name()
        )
    })?;
    let Some(choices) = &p.choices else {
        return Ok(converted);
    };
    match_choice(&converted, choices).ok_or_else(|| {
        let allowed: Vec<String> = choices.iter().map(python::str_of_json).collect();
        format!(
            "Parameter '{name}' must be one of: {} (got {})",
            allowed.join(", "),
            python::repr_of_json(value)
        )
    })
}

fn declared_default(p: &Parameter) -> ParamValue {
    match (&p.default, p.kind) {
        (Value::Null, _) => ParamValue::Null,
        (Value::Bool(b), _) => ParamValue::Bool(*b),
        (Value::String(s), _) => ParamValue::Str(s.clone()),
        (Value::Number(n), ParamType::Float) => ParamValue::Float(n.as_f64().unwrap_or(0.0)),
        (Value::Number(n), _) => ParamValue::Int(n.as_i64().unwrap_or(0)),
        (other, _) => ParamValue::Str(python::str_of_json(other)),
    }
}

/// Strings match a choice case-insensitively and become the declared spelling.
fn match_choice(value: &ParamValue, choices: &[Value]) -> Option<ParamValue> {
    choices.iter().find_map(|c| match (value, c) {
        (ParamValue::Str(v), Value::String(c)) if v.to_lowercase() == c.to_lowercase() => {
            Some(ParamValue::Str(c.clone()))
        }
        (ParamValue::Int(v), Value::Number(c)) if c.as_i64() == Some(*v) => Some(value.clone()),
        _ => None,
    })
}

/// Python's `int()`, `float()`, `str()` and the reference's bool rule, applied to a JSON
/// value; the error is Python's own message.
fn convert(kind: ParamType, value: &Value) -> Result<ParamValue, String> {
    match kind {
        ParamType::Int => to_int(value),
        ParamType::Float => to_float(value).map(ParamValue::Float),
        ParamType::Str => Ok(ParamValue::Str(python::str_of_json(value))),
        ParamType::Bool => Ok(ParamValue::Bool(match value {
            Value::String(s) => matches!(s.to_lowercase().as_str(), "true" | "1" | "yes"),
            Value::Bool(b) => *b,
            Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
            Value::Null => false,
        })),
    }
}

/// Python's `int()`. Integers beyond 64 bits stay numbers, as SQLite reads the reference's
/// rendered literal: a REAL of the same value.
fn to_int(value: &Value) -> Result<ParamValue, String> {
    match value {
        Value::Bool(b) => Ok(ParamValue::Int(i64::from(*b))),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Ok(ParamValue::Int(i)),
            None => Ok(beyond_i64(n.as_f64().unwrap_or(f64::NAN).trunc())),
        },
        Value::String(s) => parse_python_int(s).ok_or_else(|| {
            format!(
                "invalid literal for int() with base 10: {}",
                python::repr_str(s)
            )
        }),
        other => Err(format!(
            "int() argument must be a string, a bytes-like object or a real number, not '{}'",
            python::type_name(other)
        )),
    }
}

fn beyond_i64(f: f64) -> ParamValue {
    if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
        ParamValue::Int(f as i64)
    } else {
        ParamValue::Float(f)
    }
}

fn to_float(value: &Value) -> Result<f64, String> {
    match value {
        Value::Bool(b) => Ok(f64::from(u8::from(*b))),
        Value::Number(n) => Ok(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => {
            let t = s.trim();
            let plain = t.replace('_', "");
            plain
                .parse::<f64>()
                .ok()
                .filter(|_| !t.starts_with('_') && !t.ends_with('_') && !t.contains("__"))
                .ok_or_else(|| {
                    format!("could not convert string to float: {}", python::repr_str(s))
                })
        }
        other => Err(format!(
            "float() argument must be a string or a real number, not '{}'",
            python::type_name(other)
        )),
    }
}

/// `int(s)` for base 10: surrounding whitespace, a sign, digits with single underscores
/// between them.
fn parse_python_int(s: &str) -> Option<ParamValue> {
    let t = s.trim();
    let (negative, digits) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let ok = !digits.is_empty()
        && !digits.starts_with('_')
        && !digits.ends_with('_')
        && !digits.contains("__")
        && digits.chars().all(|c| c.is_ascii_digit() || c == '_');
    if !ok {
        return None;
    }
    let digits = digits.replace('_', "");
    let signed = if negative {
        format!("-{digits}")
    } else {
        digits
    };
    Some(match signed.parse::<i64>() {
        Ok(i) => ParamValue::Int(i),
        Err(_) => beyond_i64(signed.parse::<f64>().ok()?),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry;

    fn check(template: &str, raw: Value) -> Result<Params, String> {
        let t = registry::find(template).unwrap();
        validate(&t.contract, raw.as_object().unwrap())
    }

    #[test]
    fn conversions_follow_python() {
        let p = check(
            "event",
            json!({"id": "5", "min_id": 3.9, "max_id": true, "order_dir": "desc", "order_by": "SIZE"}),
        )
        .unwrap();
        assert_eq!(p.int("id"), Some(5));
        assert_eq!(p.int("min_id"), Some(3));
        assert_eq!(p.int("max_id"), Some(1));
        assert_eq!(p.str("order_dir"), "DESC");
        assert_eq!(p.str("order_by"), "size");
        assert_eq!(p.int("limit"), Some(-1));
        let p = check(
            "active_blocks_at_event",
            json!({"event_id": " 1_0 ", "include_static": "YES"}),
        )
        .unwrap();
        assert_eq!(p.int("event_id"), Some(10));
        assert!(p.bool("include_static"));
        let p = check(
            "active_blocks_at_event",
            json!({"event_id": 1, "include_static": "no"}),
        )
        .unwrap();
        assert!(!p.bool("include_static"));
    }

    #[test]
    fn errors_read_like_the_reference() {
        assert_eq!(
            check("event", json!({"id": "abc"})).unwrap_err(),
            "Parameter 'id' cannot be converted to int: invalid literal for int() with base 10: 'abc'"
        );
        assert_eq!(
            check("event", json!({"order_by": "nope"})).unwrap_err(),
            "Parameter 'order_by' must be one of: id, action, address, size, stream, allocated, \
             active, reserved, callstack (got 'nope')"
        );
        assert_eq!(
            check("preexisting_live", json!({})).unwrap_err(),
            "Required parameter 'event_id' is missing"
        );
        assert!(check("memory_peak", json!({"zz": 1, "aa": 2}))
            .unwrap_err()
            .starts_with("Unknown parameter(s) for template 'memory_peak': aa, zz (accepted: start_id, end_id)"));
        assert_eq!(
            check("freed_block_lifetime", json!({"x": 1})).unwrap_err(),
            "Unknown parameter(s) for template 'freed_block_lifetime': x (accepted: none)"
        );
        assert_eq!(
            check("event", json!({"id": [1]})).unwrap_err(),
            "Parameter 'id' cannot be converted to int: int() argument must be a string, \
             a bytes-like object or a real number, not 'list'"
        );
    }

    #[test]
    fn python_int_literals() {
        assert_eq!(parse_python_int("-12"), Some(ParamValue::Int(-12)));
        assert_eq!(parse_python_int("+7"), Some(ParamValue::Int(7)));
        assert_eq!(parse_python_int("1__0"), None);
        assert_eq!(parse_python_int("5.0"), None);
        assert_eq!(parse_python_int(""), None);
        assert_eq!(
            parse_python_int("18446744073709551616"),
            Some(ParamValue::Float(18446744073709551616.0))
        );
    }
}
