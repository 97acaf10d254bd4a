//! JSON output: the success envelope and the reference's pretty-printing.

use std::io;

use pt_snap_query::python;
use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};
use serde_json::{Map, Value};

/// `{"schema_version": 1, "ok": true, …fields}` with the fields in the given order.
pub fn envelope(fields: Vec<(&str, Value)>) -> Value {
    let mut map = Map::new();
    map.insert("schema_version".into(), Value::from(1));
    map.insert("ok".into(), Value::from(true));
    for (k, v) in fields {
        map.insert(k.to_owned(), v);
    }
    Value::Object(map)
}

/// Two-space indented JSON with non-ASCII kept as is and floats spelled as Python spells
/// them (`1e-06`), like the reference's `json.dumps(indent=2, ensure_ascii=False)`.
pub fn pretty(value: &Value) -> String {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(
        &mut out,
        PythonFloats(PrettyFormatter::with_indent(b"  ")),
    );
    value
        .serialize(&mut ser)
        .expect("JSON values always serialise");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// Python's `json.dumps(value)` with its default separators (`", "`, `": "`), optionally
/// with sorted keys; non-ASCII escaped as Python does by default.
pub fn python_dumps(value: &Value, sort_keys: bool) -> String {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            if sort_keys {
                entries.sort_by(|a, b| a.0.cmp(b.0));
            }
            let inner: Vec<String> = entries
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}: {}",
                        python_dumps(&Value::from(k.as_str()), sort_keys),
                        python_dumps(v, sort_keys)
                    )
                })
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(|v| python_dumps(v, sort_keys)).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::String(s) => {
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
                    c if (c as u32) < 0x20 || (c as u32) > 0x7f => {
                        let mut buf = [0u16; 2];
                        for unit in c.encode_utf16(&mut buf) {
                            out.push_str(&format!("\\u{unit:04x}"));
                        }
                    }
                    c => out.push(c),
                }
            }
            out.push('"');
            out
        }
        Value::Number(n) if n.is_f64() => python::float_repr(n.as_f64().unwrap_or(f64::NAN)),
        other => other.to_string(),
    }
}

/// serde_json's pretty printer with Python's float spelling.
struct PythonFloats<'a>(PrettyFormatter<'a>);

impl Formatter for PythonFloats<'_> {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        writer.write_all(python::float_repr(value).as_bytes())
    }
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

pub fn print_json(value: &Value) {
    println!("{}", pretty(value));
}

/// Did the user ask for JSON? Scans argv before parsing so that usage errors can be
/// reported as an envelope too: `--json` counts unless it is the value of the option before
/// it (the reference's rule, minus its quirk of ignoring `--json` after an unknown option).
/// Which options take a value is read from the clap definition, so it cannot drift.
pub fn json_requested(args: &[String], cli: &clap::Command) -> bool {
    let mut value_options = Vec::new();
    collect_value_options(cli, &mut value_options);
    args.iter()
        .enumerate()
        .skip(1)
        .any(|(i, a)| a == "--json" && !value_options.iter().any(|o| *o == args[i - 1]))
}

fn collect_value_options(cmd: &clap::Command, out: &mut Vec<String>) {
    for arg in cmd.get_arguments() {
        if arg.is_positional() || !arg.get_action().takes_values() {
            continue;
        }
        out.extend(arg.get_long().map(|l| format!("--{l}")));
        out.extend(arg.get_short().map(|s| format!("-{s}")));
    }
    for sub in cmd.get_subcommands() {
        collect_value_options(sub, out);
    }
}

/// How the reference prints a scalar in text mode (Python's `str()` of it).
pub fn python_str(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::String(s) => s.clone(),
        Value::Number(n) if n.is_f64() => python::float_repr(n.as_f64().unwrap_or(f64::NAN)),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    fn json_requested(args: &[String]) -> bool {
        super::json_requested(args, &crate::cli::Cli::command())
    }

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn json_flag_is_found_unless_it_is_an_option_value() {
        assert!(json_requested(&args("pt-snap import x.pkl --json")));
        assert!(json_requested(&args("pt-snap query --bogus --json")));
        assert!(!json_requested(&args("pt-snap import x.pkl -o --json")));
        assert!(!json_requested(&args("pt-snap import x.pkl")));
    }
}
