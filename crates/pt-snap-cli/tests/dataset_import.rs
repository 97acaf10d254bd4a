//! Differential tests of `import --events-per-slice K` (pt-snap-native-v2) and
//! `import --format msinsight` (compatibility-v1) against pt-snap-cli 0.4.1.
//!
//! Every golden under `tests/golden/dataset_import/` (made by the reference, see
//! `tests/oracle/regen_dataset_import.sh`) is a sequence of import runs in one directory. Our
//! binary runs the same sequence; each run must give the same exit status and output (JSON or
//! text, error envelopes included), and the dataset left at the end the same manifest and
//! shards that are semantically equal databases (the canonical dump of `pt-snap-testkit`),
//! all normalised the way `tests/oracle/golden_dataset_import.py` normalises the reference's:
//! temp paths, completion times, importer name/version and shard hashes aside.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use pt_snap_testkit::repo_root;
use serde_json::{Map, Value};

const VOLATILE_METADATA: [&str; 3] = ["completed_at", "importer_name", "importer_version"];

fn goldens() -> Vec<PathBuf> {
    let dir = repo_root().join("tests/golden/dataset_import");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    out.sort();
    out
}

fn scrub(v: &Value, tmp: &str) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !VOLATILE_METADATA.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), scrub(v, tmp)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|v| scrub(v, tmp)).collect()),
        Value::String(s) => Value::String(s.replace(tmp, "<TMP>")),
        v => v.clone(),
    }
}

fn parse_output(text: &str, tmp: &str) -> Value {
    let text = text.trim();
    if text.is_empty() {
        return Value::Null;
    }
    match serde_json::from_str::<Value>(text) {
        Ok(v) => scrub(&v, tmp),
        Err(_) => Value::Array(
            text.lines()
                .map(|l| Value::String(l.replace(tmp, "<TMP>")))
                .collect(),
        ),
    }
}

fn normalise_manifest(manifest: &Value, tmp: &str) -> Value {
    let mut m = scrub(manifest, tmp);
    if let Some(devices) = m.get_mut("devices").and_then(Value::as_object_mut) {
        for device in devices.values_mut() {
            for slice in device["slices"].as_array_mut().unwrap() {
                if let Some(h) = slice.get_mut("sha256") {
                    *h = Value::Null;
                }
            }
        }
    }
    if let Some(members) = m
        .get_mut("ptSnap")
        .and_then(|p| p.get_mut("members"))
        .and_then(Value::as_object_mut)
    {
        for h in members.values_mut() {
            *h = Value::Null;
        }
    }
    m
}

/// The canonical dump with the callstack texts moved into `texts` (as the golden script does).
fn move_texts(mut dump: Value, texts: &mut BTreeMap<String, Value>) -> Value {
    for field in ["callstacks", "reference_texts"] {
        let Some(entries) = dump.get_mut(field).and_then(Value::as_array_mut) else {
            continue;
        };
        for e in entries.iter_mut() {
            let obj = e.as_object_mut().unwrap();
            let key = obj["key"].as_str().unwrap().to_owned();
            texts.insert(key.clone(), obj.remove("text").unwrap());
            if obj.len() == 1 {
                *e = Value::String(key);
            }
        }
    }
    dump
}

/// Runs the golden's sequence with our binary; returns what the golden holds.
fn replay(golden: &Value) -> Value {
    let work = tempfile::tempdir().unwrap();
    let work_path = work.path().canonicalize().unwrap();
    let tmp = work_path.to_str().unwrap().to_owned();
    let (home, cwd) = (work_path.join("home"), work_path.join("cwd"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let fixture = golden["fixture"].as_str().unwrap();
    let name = Path::new(fixture).file_name().unwrap();
    let source = cwd.join(name);
    std::fs::copy(repo_root().join("fixtures").join(fixture), &source).unwrap();

    let mut runs = Vec::new();
    for run in golden["runs"].as_array().unwrap() {
        let args: Vec<&str> = run["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let out = Command::new(env!("CARGO_BIN_EXE_pt-snap"))
            .arg("import")
            .arg(&source)
            .arg("--no-focus")
            .args(&args)
            .current_dir(&cwd)
            .env("HOME", &home)
            .env("COLUMNS", "200")
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let mut r = Map::new();
        r.insert("args".into(), run["args"].clone());
        r.insert("exit".into(), out.status.code().unwrap().into());
        r.insert(
            "stdout".into(),
            parse_output(&String::from_utf8_lossy(&out.stdout), &tmp),
        );
        r.insert(
            "stderr".into(),
            parse_output(&String::from_utf8_lossy(&out.stderr), &tmp),
        );
        runs.push(Value::Object(r));
    }

    let mut result = Map::new();
    result.insert("fixture".into(), golden["fixture"].clone());
    result.insert("runs".into(), Value::Array(runs));
    let dataset = [".pt-snap-native-v2", ".msinsight"]
        .iter()
        .map(|s| PathBuf::from(format!("{}{s}", source.display())))
        .find(|p| p.is_dir());
    let (mut manifest, mut shards, mut texts) = (Value::Null, Map::new(), BTreeMap::new());
    if let Some(dataset) = &dataset {
        let raw: Value =
            serde_json::from_slice(&std::fs::read(dataset.join("manifest.json")).unwrap()).unwrap();
        let mut files: Vec<String> = raw["devices"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|d| d["slices"].as_array().unwrap().iter())
            .map(|s| s["file"].as_str().unwrap().to_owned())
            .collect();
        files.sort();
        for file in files {
            let dump = pt_snap_testkit::canonical_db(dataset.join(&file)).unwrap();
            shards.insert(file, move_texts(dump, &mut texts));
        }
        manifest = normalise_manifest(&raw, &tmp);
    }
    result.insert(
        "dataset".into(),
        dataset.map_or(Value::Null, |d| {
            d.file_name().unwrap().to_string_lossy().into()
        }),
    );
    result.insert("manifest".into(), manifest);
    result.insert("shards".into(), Value::Object(shards));
    result.insert("texts".into(), Value::Object(texts.into_iter().collect()));
    Value::Object(result)
}

/// The first difference between two JSON values, as a path and both sides (shortened).
fn first_difference(path: &str, want: &Value, got: &Value) -> Option<String> {
    match (want, got) {
        (Value::Object(a), Value::Object(b)) => {
            let keys_a: Vec<_> = a.keys().collect();
            let keys_b: Vec<_> = b.keys().collect();
            if keys_a != keys_b {
                return Some(format!("{path}: keys {keys_a:?} != {keys_b:?}"));
            }
            a.iter()
                .find_map(|(k, v)| first_difference(&format!("{path}.{k}"), v, &b[k]))
        }
        (Value::Array(a), Value::Array(b)) => {
            let common = a
                .iter()
                .zip(b)
                .enumerate()
                .find_map(|(i, (x, y))| first_difference(&format!("{path}[{i}]"), x, y));
            common.or_else(|| {
                (a.len() != b.len())
                    .then(|| format!("{path}: {} items != {} items", a.len(), b.len()))
            })
        }
        _ if want == got => None,
        _ => {
            let short = |v: &Value| v.to_string().chars().take(300).collect::<String>();
            Some(format!("{path}: want {} got {}", short(want), short(got)))
        }
    }
}

#[test]
fn dataset_imports_match_the_reference() {
    let goldens = goldens();
    assert!(goldens.len() >= 15, "goldens missing: {goldens:?}");
    let mut failures = Vec::new();
    for path in &goldens {
        let golden: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let ours = replay(&golden);
        if let Some(diff) = first_difference("", &golden, &ours) {
            failures.push(format!(
                "{}: {diff}",
                path.file_name().unwrap().to_string_lossy()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
