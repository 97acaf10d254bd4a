//! The JSON envelopes every `--json` answer is wrapped in (spec §2.1–2.2).

use serde_json::{json, Map, Value};

use crate::ErrorCode;

/// `{"schema_version": 1, "ok": true, …fields}` with the fields in the given order.
pub fn success<'a>(fields: impl IntoIterator<Item = (&'a str, Value)>) -> Value {
    let mut map = Map::new();
    map.insert("schema_version".into(), Value::from(1));
    map.insert("ok".into(), Value::from(true));
    for (k, v) in fields {
        map.insert(k.to_owned(), v);
    }
    Value::Object(map)
}

/// `{"schema_version": 1, "ok": false, "error": {code, message, hint}}`.
pub fn error(code: ErrorCode, message: &str, hint: Option<&str>) -> Value {
    json!({
        "schema_version": 1,
        "ok": false,
        "error": {"code": code.as_str(), "message": message, "hint": hint},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_the_reference_order() {
        let v = success([("z", json!(1)), ("a", json!(2))]);
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["schema_version", "ok", "z", "a"]);
        let e = error(ErrorCode::Usage, "bad", ErrorCode::Usage.hint());
        assert_eq!(e["error"]["code"], "INVALID_PARAMETER");
        assert_eq!(e["error"]["hint"], crate::hint::USAGE);
    }
}
