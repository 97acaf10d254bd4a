//! Memory categories through the binary: `report peak-memory --by category` (and the
//! reference's report left byte for byte as it was without it), `--categories RULES.toml`,
//! and the template `category_breakdown_at_event` refusing bad rules.

mod common;

use std::path::Path;

use common::{ok_json, pt_snap};
use pt_snap_testkit::{element_where, string_fields};
use serde_json::Value;

/// A scratch copy of the reference's database of the upstream multi-device fixture (its
/// device 0 has parameters, optimizer state, activations and pre-trace blocks at its peak),
/// with the rules files `rules` (name, text) beside it.
fn scratch(rules: &[(&str, &str)]) -> (tempfile::TempDir, &'static str) {
    let dir = tempfile::tempdir().unwrap();
    pt_snap_testkit::copy_from_repo(
        "tests/golden/query/multi_dev0/reference.db",
        &dir.path().join("ref.db"),
    );
    for (name, text) in rules {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    (dir, "ref.db")
}

fn text(dir: &Path, args: &[&str]) -> String {
    let out = pt_snap(dir, args);
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The error envelope of a command that must fail with `code`.
fn refused(dir: &Path, args: &[&str], code: &str) -> String {
    let out = pt_snap(dir, args);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
    let err: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(err["error"]["code"], code, "{err}");
    err["error"]["message"].as_str().unwrap().to_owned()
}

#[test]
fn by_category_adds_categories_after_the_reference_report() {
    let (dir, db) = scratch(&[]);
    let dir = dir.path();
    let plain = ok_json(dir, &["report", "peak-memory", db, "--json"]);
    let explicit = text(dir, &["report", "peak-memory", db, "--by", "callstack"]);
    assert_eq!(explicit, text(dir, &["report", "peak-memory", db]));

    let by = ok_json(
        dir,
        &["report", "peak-memory", db, "--by", "category", "--json"],
    );
    // The reference's keys, values and order, then ours.
    let mut ours = by.as_object().unwrap().clone();
    let added: Vec<String> = ours
        .keys()
        .skip(plain.as_object().unwrap().len())
        .cloned()
        .collect();
    assert_eq!(
        added,
        [
            "by",
            "category_rules",
            "categories_interpretation",
            "categories"
        ]
    );
    for k in &added {
        ours.remove(k);
    }
    assert_eq!(Value::Object(ours), plain);
    assert_eq!(by["by"], "category");
    assert_eq!(by["category_rules"], "builtin");
    assert!(by["categories_interpretation"]
        .as_str()
        .unwrap()
        .starts_with("A heuristic"));

    // Every live block at the active peak: the rows add up to the active counter there.
    let rows = by["categories"].as_array().unwrap();
    let bytes: i64 = rows.iter().map(|r| r["bytes"].as_i64().unwrap()).sum();
    assert_eq!(bytes, by["active_bytes_at_event"].as_i64().unwrap());
    let pairs: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["category"].as_str().unwrap(), r["rule"].as_str().unwrap()))
        .collect();
    assert!(
        pairs.contains(&("optimizer_state", "torch-optim")),
        "{pairs:?}"
    );
    assert!(
        pairs.contains(&("unknown", "no-allocation-event")),
        "{pairs:?}"
    );

    // Text: the reference's lines up to the attribution, then the categories instead of the
    // callstack groups.
    let plain_text = text(dir, &["report", "peak-memory", db]);
    let by_text = text(dir, &["report", "peak-memory", db, "--by", "category"]);
    let head = plain_text
        .split("Active memory by callstack:")
        .next()
        .unwrap();
    let rest = by_text
        .strip_prefix(head)
        .expect("same head as the reference's report");
    assert!(
        rest.starts_with("Active memory by category:\n  A heuristic"),
        "{rest}"
    );
    assert!(
        rest.contains("optimizer_state") && rest.contains("[torch-optim]"),
        "{rest}"
    );
    assert!(!rest.contains("callstack:"), "{rest}");
}

#[test]
fn a_rules_file_replaces_the_builtin_rules() {
    let (dir, db) = scratch(&[(
        "rules.toml",
        "# Everything under Adam's step is a gradient here (a test, not advice).\n\
         [[rule]]\n\
         name = \"adam-step\"\n\
         category = \"gradient\"\n\
         file = '(^|/)torch/optim/adam\\.py$'\n\
         function = '^step$'\n",
    )]);
    let dir = dir.path();
    let args = [
        "report",
        "peak-memory",
        db,
        "--by",
        "category",
        "--categories",
        "rules.toml",
    ];
    let v = ok_json(dir, &[&args[..], &["--json"]].concat());
    assert_eq!(v["category_rules"], "custom");
    let rows = v["categories"].as_array().unwrap();
    let rules: Vec<&str> = rows.iter().map(|r| r["rule"].as_str().unwrap()).collect();
    assert!(rules.contains(&"adam-step"), "{rules:?}");
    // The built-in rules are gone entirely.
    assert!(!rules.contains(&"torch-optim"), "{rules:?}");
    let bytes: i64 = rows.iter().map(|r| r["bytes"].as_i64().unwrap()).sum();
    assert_eq!(bytes, v["active_bytes_at_event"].as_i64().unwrap());
    let out = text(dir, &args);
    assert!(
        out.contains("(custom rules)") && out.contains("[adam-step]"),
        "{out}"
    );
}

#[test]
fn bad_rules_and_flags_are_refused() {
    let (dir, db) = scratch(&[
        (
            "rules.toml",
            "[[rule]]\nname = 'x'\ncategory = 'gradient'\n",
        ),
        (
            "bad_re.toml",
            "[[rule]]\nname = 'x'\ncategory = 'gradient'\nfile = '('\n",
        ),
    ]);
    let dir = dir.path();
    let peak = ["report", "peak-memory", db, "--json"];
    // Each bad rules file or flag, and what its refusal must say.
    let by_file = |file| ["--by", "category", "--categories", file];
    let cases: [(&[&str], &[&str]); 4] = [
        (
            &by_file("rules.toml"),
            &["rules.toml", "needs a 'file' or a 'function'"],
        ),
        (&by_file("bad_re.toml"), &["not a valid regex"]),
        (
            &by_file("missing.toml"),
            &["Cannot read the --categories file"],
        ),
        (&["--categories", "rules.toml"], &["--by category"]),
    ];
    for (flags, says) in cases {
        let m = refused(dir, &[&peak[..], flags].concat(), "INVALID_PARAMETER");
        assert!(says.iter().all(|s| m.contains(s)), "{m}");
    }
    // The template refuses bad rules as a parameter error too.
    let m = refused(
        dir,
        &[
            "query",
            db,
            "--template-use",
            "category_breakdown_at_event",
            "--params",
            r#"{"event_id": 10, "rules": "[[rule]]\nname='x'\ncategory='weights'\nfile='a'"}"#,
            "--json",
        ],
        "INVALID_PARAMETER",
    );
    assert!(m.contains("unknown category 'weights'"), "{m}");
}

/// A sharded dataset's engine does not answer the category template: `--by category` says
/// so plainly, before any query runs.
#[test]
fn by_category_is_refused_on_a_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("ds");
    pt_snap_testkit::copy_dir(
        &pt_snap_testkit::repo_root().join("tests/golden/dataset_query/native/dataset"),
        &ds,
    );
    let m = refused(
        dir.path(),
        &["report", "peak-memory", "ds", "--by", "category", "--json"],
        "QUERY_FAILED",
    );
    assert!(m.contains("not available on a sharded dataset"), "{m}");
}

/// The template through `query`: listed, and its rows add up to `active_blocks_at_event`'s.
#[test]
fn the_template_is_listed_and_adds_up() {
    let (dir, db) = scratch(&[]);
    let dir = dir.path();
    let list = ok_json(
        dir,
        &["query", "--list", "--category", "business", "--json"],
    );
    assert!(list["templates"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "category_breakdown_at_event"));
    let caps = ok_json(dir, &["capabilities", "--json"]);
    let contract = element_where(&caps["templates"], "name", "category_breakdown_at_event");
    let columns = string_fields(&contract["output_schema"], "column");
    for c in ["category", "rule", "bytes", "blocks"] {
        assert!(columns.contains(&c), "{columns:?}");
    }
    let peak = ok_json(
        dir,
        &["query", db, "--template-use", "memory_peak", "--json"],
    );
    let event = peak["rows"][0]["peak_reserved_event_id"].as_i64().unwrap();
    let params = format!(r#"{{"event_id": {event}}}"#);
    let run = |t: &str| {
        ok_json(
            dir,
            &[
                "query",
                db,
                "--template-use",
                t,
                "--params",
                &params,
                "--json",
            ],
        )
    };
    let cats = run("category_breakdown_at_event");
    let live = run("active_blocks_at_event");
    let sum = |v: &Value, k: &str| -> i64 {
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r[k].as_i64().unwrap())
            .sum()
    };
    assert_eq!(sum(&cats, "bytes"), sum(&live, "size"));
    assert_eq!(
        sum(&cats, "blocks"),
        live["rows"].as_array().unwrap().len() as i64
    );
}
