//! Python's spellings of values: `repr()` of floats and strings, `str()` of decoded JSON,
//! `json.dumps` (with and without `ensure_ascii`, pretty or on one line), `isoformat()` of UTC
//! timestamps and `hexdigest()`.
//!
//! The reference is Python; its messages (`(got 'nope')`), its text-mode rows (dict reprs),
//! its JSON (`1e-06`, not `1e-6`; `\u00e9` where it escapes) and its metadata are spelled the
//! way Python spells them, and agents and scripts parse those spellings.

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

/// `s` with every non-ASCII character as Python's `ensure_ascii=True` writes it: `\uXXXX`,
/// a surrogate pair above U+FFFF. Applied to JSON text, only strings change (JSON is ASCII
/// outside them).
pub fn ensure_ascii(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// `json.dumps(value, indent=2, ensure_ascii=False)`: two-space indentation, non-ASCII kept,
/// floats as `repr` (`1e-06`).
pub fn pretty(value: &Value) -> String {
    let mut out = String::new();
    write_pretty(value, 0, &mut out);
    out
}

fn write_pretty(value: &Value, depth: usize, out: &mut String) {
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    };
    match value {
        Value::Array(items) if !items.is_empty() => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                out.push_str(if i == 0 { "" } else { "," });
                newline(out, depth + 1);
                write_pretty(item, depth + 1, out);
            }
            newline(out, depth);
            out.push(']');
        }
        Value::Object(map) if !map.is_empty() => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                out.push_str(if i == 0 { "" } else { "," });
                newline(out, depth + 1);
                out.push_str(&Value::from(key.as_str()).to_string());
                out.push_str(": ");
                write_pretty(item, depth + 1, out);
            }
            newline(out, depth);
            out.push('}');
        }
        Value::Number(n) if n.is_f64() => out.push_str(&float_repr(n.as_f64().unwrap_or(f64::NAN))),
        // Scalars and empty containers: JSON's own spelling (`[]`, `{}`, escaped strings).
        other => out.push_str(&other.to_string()),
    }
}

/// `json.dumps(value, indent=2)`: [`pretty`] with Python's default `ensure_ascii=True`.
pub fn pretty_ascii(value: &Value) -> String {
    ensure_ascii(&pretty(value))
}

/// `json.dumps(value)` with its default separators (`", "`, `": "`) and `ensure_ascii=True`,
/// optionally with `sort_keys=True`.
pub fn dumps(value: &Value, sort_keys: bool) -> String {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            if sort_keys {
                entries.sort_by(|a, b| a.0.cmp(b.0));
            }
            let inner: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}: {}", dumps_str(k), dumps(v, sort_keys)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(|v| dumps(v, sort_keys)).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::String(s) => dumps_str(s),
        Value::Number(n) if n.is_f64() => float_repr(n.as_f64().unwrap_or(f64::NAN)),
        other => other.to_string(),
    }
}

fn dumps_str(s: &str) -> String {
    let mut out = String::from('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || !c.is_ascii() => out.push_str(&ensure_ascii_char(c)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn ensure_ascii_char(c: char) -> String {
    let mut units = [0u16; 2];
    c.encode_utf16(&mut units)
        .iter()
        .map(|unit| format!("\\u{unit:04x}"))
        .collect()
}

/// `len(json.dumps(value))`, without building the text: what the dataset work budget charges
/// for every value it reads (the reference measures its reads so).
pub fn dumps_len(v: &Value) -> usize {
    match v {
        Value::Null | Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.to_string().len()
            } else if let Some(u) = n.as_u64() {
                u.to_string().len()
            } else {
                float_repr(n.as_f64().unwrap_or(0.0)).len()
            }
        }
        Value::String(s) => dumps_str_len(s),
        Value::Array(a) => {
            2 + a.iter().map(dumps_len).sum::<usize>() + 2 * a.len().saturating_sub(1)
        }
        Value::Object(o) => {
            2 + o
                .iter()
                .map(|(k, v)| dumps_str_len(k) + 2 + dumps_len(v))
                .sum::<usize>()
                + 2 * o.len().saturating_sub(1)
        }
    }
}

fn dumps_str_len(s: &str) -> usize {
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

/// `datetime.fromtimestamp(secs + micros / 1e6, UTC).isoformat()` with microseconds always
/// written (`2026-12-02T13:21:45.664383+00:00`): the metadata's `completed_at`.
pub fn isoformat_utc(secs: i64, micros: u32) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}+00:00",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `bytes.hex()` / `hexdigest()`: two lowercase hex digits a byte.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// `str(Path(p))`: repeated and trailing slashes and `.` components dropped, `.` if nothing
/// is left, a leading `//` kept (POSIX leaves its meaning to the system).
pub fn py_path(p: &std::path::Path) -> String {
    let s = p.to_string_lossy();
    let root = if s.starts_with("//") && !s.starts_with("///") {
        "//"
    } else if s.starts_with('/') {
        "/"
    } else {
        ""
    };
    let parts: Vec<&str> = s
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    if parts.is_empty() {
        return if root.is_empty() {
            ".".into()
        } else {
            root.into()
        };
    }
    format!("{root}{}", parts.join("/"))
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

    #[test]
    fn dumps_escapes_like_python_and_its_length_is_counted_without_it() {
        // python3 -c 'import json; print(json.dumps({"a": 1, "b": [None, True, 1.5], "c": "é\n😀"}))'
        let v: Value =
            serde_json::from_str(r#"{"a": 1, "b": [null, true, 1.5], "c": "é\n😀"}"#).unwrap();
        let text = r#"{"a": 1, "b": [null, true, 1.5], "c": "\u00e9\n\ud83d\ude00"}"#;
        assert_eq!(dumps(&v, false), text);
        assert_eq!(dumps_len(&v), text.len());
        assert_eq!(dumps_len(&serde_json::json!(1e16)), "1e+16".len());
        assert_eq!(ensure_ascii("aé"), "a\\u00e9");
    }

    #[test]
    fn pretty_is_indented_by_two_with_python_floats() {
        let v = serde_json::json!({"x": [1e-6], "é": {}});
        assert_eq!(pretty(&v), "{\n  \"x\": [\n    1e-06\n  ],\n  \"é\": {}\n}");
        assert!(pretty_ascii(&v).contains("\"\\u00e9\""));
        let nested =
            serde_json::json!({"a": [1, {"b": [], "c": {}}, "x\"\u{1}é"], "d": null, "e": [true]});
        assert_eq!(
            pretty(&nested),
            serde_json::to_string_pretty(&nested).unwrap()
        );
    }

    #[test]
    fn timestamps_are_isoformat() {
        assert_eq!(
            isoformat_utc(1_796_217_705, 664_383),
            "2026-12-02T13:21:45.664383+00:00"
        );
        assert_eq!(isoformat_utc(0, 0), "1970-01-01T00:00:00.000000+00:00");
        assert_eq!(hex(&[0, 0xab, 0x10]), "00ab10");
    }

    #[test]
    fn paths_print_like_python_pathlib() {
        for (given, py) in [
            ("out", "out"),
            ("./out/", "out"),
            ("a//b/./c", "a/b/c"),
            ("/", "/"),
            ("//x", "//x"),
            ("///x", "/x"),
            (".", "."),
            ("../x", "../x"),
        ] {
            assert_eq!(py_path(std::path::Path::new(given)), py, "{given}");
        }
    }
}
