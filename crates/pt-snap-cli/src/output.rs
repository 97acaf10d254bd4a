//! JSON output: the success envelope and the reference's pretty-printing.

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

/// Two-space indented JSON with non-ASCII kept as is, like Python's
/// `json.dumps(indent=2, ensure_ascii=False)`.
pub fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).expect("JSON values always serialise")
}

pub fn print_json(value: &Value) {
    println!("{}", pretty(value));
}

/// Did the user ask for JSON? Scans argv before parsing so that usage errors can be
/// reported as an envelope too: `--json` counts unless it is the value of the option before
/// it (the reference's rule, minus its quirk of ignoring `--json` after an unknown option).
pub fn json_requested(args: &[String]) -> bool {
    const VALUE_OPTIONS: &[&str] = &[
        "-o",
        "--output-dir",
        "-d",
        "--device",
        "--events-per-slice",
        "--format",
        "--output",
        "-s",
        "--slices",
        "-m",
        "--max-entries",
        "--template-use",
        "--params",
        "--slice",
        "--category",
        "--template-info",
        "-n",
        "--timeout",
        "--max-work-rows",
        "--max-work-bytes",
        "--max-scratch-db-bytes",
        "--metric",
        "--limit",
        "--stack-bytes",
        "--start-id",
        "--end-id",
        "--event-id",
        "--min-size",
        "-t",
        "--target",
        "--dir",
    ];
    args.iter()
        .enumerate()
        .skip(1)
        .any(|(i, a)| a == "--json" && (i < 2 || !VALUE_OPTIONS.contains(&args[i - 1].as_str())))
}

#[cfg(test)]
mod tests {
    use super::*;

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
