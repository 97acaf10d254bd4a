//! The JSON envelopes every `--json` answer is wrapped in (spec §2.1–2.2).

use serde_json::{json, Map, Value};

use crate::Failure;

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

/// A result that is complete but reports failures among its parts (`ranks` with a file that
/// could not be summarised): `{"schema_version": 1, "ok": false, …fields, "error": {code,
/// message, hint}}`. Read as a result, it has every field; read as an error envelope, it has
/// `ok: false` and the `error` object.
pub fn partial<'a>(fields: impl IntoIterator<Item = (&'a str, Value)>, failure: &Failure) -> Value {
    let mut value = success(fields);
    let map = value.as_object_mut().expect("an object");
    map.insert("ok".into(), Value::from(false));
    map.insert("error".into(), failure.to_json());
    value
}

/// `{"schema_version": 1, "ok": false, "error": {code, message, hint}}`.
pub fn error(failure: &Failure) -> Value {
    json!({
        "schema_version": 1,
        "ok": false,
        "error": failure.to_json(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn keys_keep_the_reference_order() {
        let v = success([("z", json!(1)), ("a", json!(2))]);
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["schema_version", "ok", "z", "a"]);
        let e = error(&Failure::new(ErrorCode::Usage, "bad"));
        assert_eq!(e["error"]["code"], "INVALID_PARAMETER");
        assert_eq!(e["error"]["hint"], crate::hint::USAGE);
        let p = partial(
            [("z", json!(1))],
            &Failure::new(ErrorCode::ImportFailed, "1 of 2 failed").with_hint(None),
        );
        let keys: Vec<&str> = p.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["schema_version", "ok", "z", "error"]);
        assert_eq!(p["ok"], false);
        assert_eq!(p["error"]["code"], "IMPORT_FAILED");
    }
}
