//! JSON documents decode to what the pickle of the same Python value decodes to.

mod common;

use pt_snap_pickle::{from_slice, load_json, Error, KeepAll, Limits};

fn json(text: &str) -> String {
    let pk = load_json(text.as_bytes(), &mut KeepAll, &Limits::default())
        .unwrap_or_else(|e| panic!("{text}: {e}"));
    assert_eq!(pk.bytes_read, text.len() as u64);
    common::render(&pk.arena, pk.root)
}

fn json_err(text: &[u8]) -> (u64, String) {
    match load_json(text, &mut KeepAll, &Limits::default()) {
        Ok(_) => panic!("{:?} decoded", String::from_utf8_lossy(text)),
        Err(Error::Malformed { offset, message }) => (offset, message),
        Err(e) => panic!("expected Malformed, got {e:?}"),
    }
}

#[test]
fn values_decode_like_their_pickles() {
    assert_eq!(json("null"), "None");
    assert_eq!(json(" [true, false, null] "), "[True, False, None]");
    assert_eq!(
        json(r#"{"a": 1, "b": [], "c": {}}"#),
        r#"{"a": 1, "b": [], "c": {}}"#
    );
    assert_eq!(
        json("[-2147483649, 2147483647, 9223372036854775807]"),
        "[-2147483649, 2147483647, 9223372036854775807]"
    );
    assert_eq!(
        json("[1.5, -0.0, 1e300, 2.5E-3]"),
        "[1.5, -0.0, 1e300, 0.0025]"
    );
    assert_eq!(json("[NaN, Infinity, -Infinity]"), "[NaN, inf, -inf]");
    assert_eq!(
        json(r#""a\"b\\c\/\n\u00e9\ud83d\ude00""#),
        "\"a\\\"b\\\\c/\\u000aé😀\""
    );
    // Python's json module and `pickle` agree on these; the machine's pickle of them is the
    // reference rendering.
    let pickled = from_slice(b"\x80\x04\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00.").unwrap();
    assert_eq!(
        json("9223372036854775808"),
        common::render(&pickled.arena, pickled.root)
    );
    // pickle.encode_long(-2**63 - 1)
    assert_eq!(json("-9223372036854775809"), "bigint(ffffffffffffff7fff)");
}

#[test]
fn integers_are_exact_at_any_size() {
    // 2^64 - 1 and -(2^80): past 2^53 a JavaScript reader would round them.
    assert_eq!(json("18446744073709551615"), "bigint(ffffffffffffffff00)");
    assert_eq!(
        json("-1208925819614629174706176"),
        "bigint(00000000000000000000ff)"
    );
    assert_eq!(json("9007199254740993"), "9007199254740993");
}

#[test]
fn lone_surrogates_become_replacement_characters() {
    assert_eq!(json(r#""\ud800x""#), "\"\u{fffd}x\"");
    assert_eq!(json(r#""\udc00""#), "\"\u{fffd}\"");
    assert_eq!(json(r#""\ud800\u0041""#), "\"\u{fffd}A\"");
}

#[test]
fn long_containers_are_batched_like_cpythons_pickler() {
    let items: Vec<String> = (0..2500).map(|i| i.to_string()).collect();
    let text = format!("[{}]", items.join(","));
    assert_eq!(json(&text), format!("[{}]", items.join(", ")));
    let pairs: Vec<String> = (0..2001).map(|i| format!("\"k{i}\": {i}")).collect();
    let text = format!("{{{}}}", pairs.join(","));
    assert_eq!(json(&text), format!("{{{}}}", pairs.join(", ")));
    // Deep nesting is iterative, as for pickles.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    load_json(deep.as_bytes(), &mut KeepAll, &Limits::default()).unwrap();
}

#[test]
fn malformed_documents_say_what_and_where() {
    let cases: &[(&[u8], u64, &str)] = &[
        (b"", 0, "empty input"),
        (b"[1, 2", 5, "ends inside a value"),
        (b"[1 2]", 3, "expected ',' or ']'"),
        (b"{\"a\" 1}", 5, "':' after an object key"),
        (b"{1: 2}", 1, "expected a string key"),
        (b"[01]", 3, "invalid number \"01\""),
        (b"[tru]", 4, "invalid literal"),
        (b"\"a\nb\"", 2, "invalid control character"),
        (b"{} x", 3, "extra data after the JSON value: 'x'"),
        (b"[1,]", 3, "expected a value, found ']'"),
        (b"\"\\x\"", 2, "invalid escape \\x"),
        (b"\"abc", 0, "unterminated string"),
        (&[b'7'; 4302], 4302, "exceeds the limit of 4300"),
    ];
    for (text, offset, needle) in cases {
        let (at, message) = json_err(text);
        assert!(
            message.contains(needle),
            "{:?}: {message:?} lacks {needle:?}",
            String::from_utf8_lossy(text)
        );
        assert_eq!(
            at,
            *offset,
            "{:?}: {message}",
            String::from_utf8_lossy(text)
        );
    }
}

#[test]
fn text_that_is_not_utf8_is_refused_as_pythons_json_refuses_it() {
    // Latin-1 é, a lone continuation byte, a cut sequence, a UTF-8-encoded surrogate (which
    // only a binary-mode `json.loads` would pass, as a lone surrogate), an overlong '/'.
    for bad in [
        &b"[\"caf\xe9\"]"[..],
        b"{\"\x80\": 1}",
        b"[\"\xe2\x82\"]",
        b"[\"\xed\xa0\x80\"]",
        b"[\"\xc0\xaf\"]",
    ] {
        let (at, message) = json_err(bad);
        assert!(message.contains("not UTF-8"), "{bad:?}: {message}");
        assert_eq!(at, 1, "{bad:?}: the string's opening quote");
    }
    assert_eq!(json("[\"café €𝄞\"]"), "[\"café €𝄞\"]");
}

/// A reader that fails after some bytes, as a decompressor does at a bad checksum.
struct FailingAfter<'a>(&'a [u8]);

impl std::io::Read for FailingAfter<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.0.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "CRC mismatch in member 1",
            ));
        }
        let n = buf.len().min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn a_failing_reader_is_an_io_error_not_a_syntax_error() {
    match load_json(FailingAfter(b"[1, 2, "), &mut KeepAll, &Limits::default()) {
        Err(Error::Io(e)) => assert_eq!(e.to_string(), "CRC mismatch in member 1"),
        Err(e) => panic!("expected the reader's error, got {e:?}"),
        Ok(_) => panic!("decoded"),
    }
}

#[test]
fn limits_apply_as_to_pickles() {
    let limits = Limits {
        max_len: 10,
        ..Limits::default()
    };
    let long = format!("\"{}\"", "x".repeat(100));
    let e = load_json(long.as_bytes(), &mut KeepAll, &limits)
        .err()
        .unwrap();
    assert!(e.to_string().contains("longer than the limit of 10"), "{e}");
    // Empty objects cost the input 3 bytes and the arena one node each: refused early, as
    // for pickles of empty dicts.
    let mut many = String::from("[");
    for _ in 0..3_000_000 {
        many.push_str("{},");
    }
    many.push_str("{}]");
    let e = load_json(many.as_bytes(), &mut KeepAll, &Limits::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("live objects"), "{e}");
}
