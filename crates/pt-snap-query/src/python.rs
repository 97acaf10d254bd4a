//! Python's spellings of values: `repr()` of floats and strings, `str()` of decoded JSON.
//!
//! The reference is Python; its messages (`(got 'nope')`), its text-mode rows (dict reprs)
//! and its JSON floats (`1e-06`, not `1e-6`) are spelled the way Python spells them, and
//! agents and scripts parse those spellings.

use serde_json::Value;

/// `repr(f)` for a float: the shortest round-trip digits, exponent notation below 1e-4 and
/// from 1e16 on, a `.0` on integral values.
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    // `{:e}` gives the shortest round-trip digits as d.ddd and a decimal exponent.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').expect("{:e} always has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent is an integer");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if f.is_sign_negative() { "-" } else { "" };
    let decpt = exp + 1;
    if !(-3..=16).contains(&decpt) {
        let (head, tail) = digits.split_at(1);
        let frac = if tail.is_empty() {
            String::new()
        } else {
            format!(".{tail}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{head}{frac}e{esign}{:02}", exp.abs());
    }
    let body = if decpt <= 0 {
        format!("0.{}{digits}", "0".repeat(decpt.unsigned_abs() as usize))
    } else if decpt as usize >= digits.len() {
        format!("{digits}{}.0", "0".repeat(decpt as usize - digits.len()))
    } else {
        let (int, frac) = digits.split_at(decpt as usize);
        format!("{int}.{frac}")
    };
    format!("{sign}{body}")
}

/// `repr(s)` for a string.
pub fn repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if printable(c) => out.push(c),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push(quote);
    out
}

/// Python's `str.isprintable()` for one character: not a control, format, separator
/// (other than space), private-use or unassigned code point. Covers the code points that
/// occur in paths and identifiers; rarer unassigned ones print as themselves.
fn printable(c: char) -> bool {
    let u = c as u32;
    !(c.is_control()
        || matches!(u,
            0xA0 | 0xAD | 0x1680 | 0x180E | 0x2000..=0x200F | 0x2028..=0x202F
            | 0x205F..=0x2064 | 0x2066..=0x206F | 0x3000 | 0xFEFF | 0xFFF9..=0xFFFB
            | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0xE000..=0xF8FF
            | 0xFFFE | 0xFFFF | 0xF0000..=0x10FFFF))
}

/// Python's type name of a decoded JSON value.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// `str(x)` of a decoded JSON value.
pub fn str_of_json(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => repr_of_json(other),
    }
}

/// `repr(x)` of a decoded JSON value.
pub fn repr_of_json(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(u)) => u.to_string(),
            _ => float_repr(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => repr_str(s),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(repr_of_json).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::Object(map) => {
            let inner: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", repr_str(k), repr_of_json(v)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_are_spelled_like_python() {
        for (f, s) in [
            (1e-6, "1e-06"),
            (1.5e-5, "1.5e-05"),
            (0.0001, "0.0001"),
            (20.7861, "20.7861"),
            (0.117189, "0.117189"),
            (3.0, "3.0"),
            (-2.5, "-2.5"),
            (0.0, "0.0"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.2345678901234567e20, "1.2345678901234567e+20"),
            (123456.789, "123456.789"),
            (1.0 / 3.0, "0.3333333333333333"),
        ] {
            assert_eq!(float_repr(f), s, "{f}");
        }
    }

    #[test]
    fn strings_are_quoted_like_python() {
        assert_eq!(repr_str("abc"), "'abc'");
        assert_eq!(repr_str("it's"), "\"it's\"");
        assert_eq!(repr_str("a'b\"c"), "'a\\'b\"c'");
        assert_eq!(repr_str("x\ny\\"), "'x\\ny\\\\'");
        assert_eq!(repr_str("\u{1}é"), "'\\x01é'");
    }

    #[test]
    fn json_values_print_like_decoded_python() {
        let v: Value = serde_json::from_str(r#"[1, "a", null, true, {"k": 2.5}]"#).unwrap();
        assert_eq!(repr_of_json(&v), "[1, 'a', None, True, {'k': 2.5}]");
        assert_eq!(str_of_json(&Value::from("x")), "x");
    }
}
