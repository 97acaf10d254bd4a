//! The golden-case harness shared by the query and report differential tests: a case is
//! one recorded run of pt-snap-cli 0.4.1 (`tests/oracle/golden_*.py` write them), replayed
//! with our binary and compared field by field, with the deliberate divergences of
//! docs/compatibility.md normalised by name.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use pt_snap_testkit::{repo_root, strings_of};
use serde_json::{Map, Value};

/// `tests/golden/<kind>` (`query`, `report`).
pub fn golden_root(kind: &str) -> PathBuf {
    repo_root().join("tests/golden").join(kind)
}

#[derive(Debug)]
pub struct Case {
    pub name: String,
    pub args: Vec<String>,
    pub env: Map<String, Value>,
    pub exit: i64,
    pub stdout_json: Value,
    pub stdout_text: Option<String>,
    pub stderr_json: Value,
    pub stderr_text: Option<String>,
}

/// The cases of a set (`<set>/cases/*.json`).
pub fn cases(set_dir: &Path) -> Vec<Case> {
    case_files(&set_dir.join("cases"))
}

/// Every case file directly in `dir` (contract cases are named `.json` or `.txt` after the
/// output mode they record; both are case objects).
pub fn case_files(dir: &Path) -> Vec<Case> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    paths.sort();
    paths
        .into_iter()
        .filter(|p| p.is_file())
        .map(|p| {
            let v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
            Case {
                name: p.file_name().unwrap().to_string_lossy().into_owned(),
                args: strings_of(&v["args"]),
                env: v["env"].as_object().cloned().unwrap_or_default(),
                exit: v["exit"].as_i64().unwrap(),
                stdout_json: v["stdout_json"].clone(),
                stdout_text: v["stdout_text"].as_str().map(str::to_owned),
                stderr_json: v["stderr_json"].clone(),
                stderr_text: v["stderr_text"].as_str().map(str::to_owned),
            }
        })
        .collect()
}

pub struct Output {
    pub exit: i64,
    pub stdout: String,
    pub stderr: String,
}

/// Runs a case with our binary in a fresh HOME; `<DB>` and `<SETDIR>` stand for `db` and
/// `set_dir` in its arguments, environment and outputs.
pub fn run_ours(case: &Case, db: &Path, set_dir: &Path) -> Output {
    let home = tempfile::tempdir().unwrap();
    run_ours_in(home.path(), case, db, set_dir)
}

/// [`run_ours`] with `home` as HOME and working directory, so what one run caches there
/// (`$HOME/.cache`: no `XDG_CACHE_HOME`) the next finds.
pub fn run_ours_in(home: &Path, case: &Case, db: &Path, set_dir: &Path) -> Output {
    let args: Vec<String> = case
        .args
        .iter()
        .map(|a| {
            a.replace("<DB>", &db.display().to_string())
                .replace("<SETDIR>", &set_dir.display().to_string())
        })
        .collect();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pt-snap"));
    cmd.args(&args)
        .current_dir(home)
        .env("HOME", home)
        .env_remove("XDG_CACHE_HOME")
        .env_remove("PT_SNAP_DB_PATH")
        .env_remove("PT_SNAP_QUERY_TIMEOUT")
        .env_remove("PT_SNAP_MAX_WORK_ROWS")
        .env_remove("PT_SNAP_MAX_WORK_BYTES")
        .env_remove("PT_SNAP_MAX_SCRATCH_DB_BYTES");
    for (k, v) in &case.env {
        cmd.env(
            k,
            v.as_str()
                .unwrap()
                .replace("<DB>", &db.display().to_string())
                .replace("<SETDIR>", &set_dir.display().to_string()),
        );
    }
    let out = cmd.output().unwrap();
    let placeholder = |s: &[u8]| {
        String::from_utf8_lossy(s)
            .replace(&db.display().to_string(), "<DB>")
            .replace(&set_dir.display().to_string(), "<SETDIR>")
    };
    Output {
        exit: i64::from(out.status.code().unwrap_or(-1)),
        stdout: placeholder(&out.stdout),
        stderr: placeholder(&out.stderr),
    }
}

/// Compares one case; returns a description of the first difference.
pub fn compare(case: &Case, ours: &Output) -> Result<(), String> {
    let is_usage = case.exit == 2;
    let reference_error_json = case.stderr_json.get("error").cloned();
    let text_error = case.exit != 0
        && case
            .stdout_text
            .as_deref()
            .is_some_and(|t| t.starts_with("Error"));

    // Divergence (docs/compatibility.md): a device-less DB is an error in text mode too.
    if case.stdout_text.as_deref() == Some("No devices found in database.\n") {
        return (ours.exit == 1 && ours.stderr.contains("No devices found in database."))
            .then_some(())
            .ok_or_else(|| format!("no-devices: exit {} stderr {}", ours.exit, ours.stderr));
    }
    if ours.exit != case.exit {
        return Err(format!(
            "exit {} (reference {}); stdout {:.300}; stderr {:.300}",
            ours.exit, case.exit, ours.stdout, ours.stderr
        ));
    }
    if let Some(reference) = reference_error_json {
        if !ours.stdout.is_empty() {
            return Err(format!("stdout not empty on error: {:.200}", ours.stdout));
        }
        let got: Value = serde_json::from_str(&ours.stderr)
            .map_err(|e| format!("stderr is not an envelope ({e}): {:.300}", ours.stderr))?;
        let got = &got["error"];
        if got["code"] != reference["code"] {
            return Err(format!(
                "code {} (reference {})",
                got["code"], reference["code"]
            ));
        }
        if is_usage {
            return Ok(()); // clap and Click word usage errors differently.
        }
        let message = reference["message"].as_str().unwrap_or("");
        if !json_syntax_error(message) && got["message"] != reference["message"] {
            return Err(format!(
                "message {} (reference {})",
                got["message"], reference["message"]
            ));
        }
        // The reference's misleading generic hint (its bug 3) is replaced by a specific one.
        let generic_hint = reference["hint"].as_str()
            == Some(
                "Use a numeric --timeout, or set PT_SNAP_QUERY_TIMEOUT to a number of seconds.",
            )
            && !message.contains("PT_SNAP_QUERY_TIMEOUT");
        if !generic_hint && got["hint"] != reference["hint"] {
            return Err(format!(
                "hint {} (reference {})",
                got["hint"], reference["hint"]
            ));
        }
        return Ok(());
    }
    if text_error {
        // Divergence: text-mode errors go to stderr, not stdout.
        if !ours.stdout.is_empty() {
            return Err(format!(
                "stdout not empty on text error: {:.200}",
                ours.stdout
            ));
        }
        let first = case.stdout_text.as_deref().unwrap().lines().next().unwrap();
        let ours_first = ours.stderr.lines().next().unwrap_or("");
        let same_prefix = first.split(": ").next() == ours_first.split(": ").next();
        if is_usage || ours_first == first || (json_syntax_error(first) && same_prefix) {
            return Ok(());
        }
        return Err(format!("stderr {:.300} (reference {first})", ours.stderr));
    }
    if is_usage {
        return Ok(());
    }
    if !case.stdout_json.is_null() {
        let mut got: Value = serde_json::from_str(&ours.stdout)
            .map_err(|e| format!("stdout is not JSON ({e}): {:.300}", ours.stdout))?;
        let mut want = case.stdout_json.clone();
        // Divergence (docs/compatibility.md): listings and `capabilities` show our own
        // templates too.
        if let Some(Value::Array(templates)) = got.get_mut("templates") {
            templates.retain(|t| {
                !t["name"]
                    .as_str()
                    .is_some_and(|n| pt_snap_query::registry::OURS.contains(&n))
            });
        }
        // Divergence (docs/compatibility.md): `capabilities --json` lists our own commands'
        // contracts under `commands`, after every key of the reference.
        if case.args.first().map(String::as_str) == Some("capabilities") {
            if let Some(o) = got.as_object_mut() {
                let last = o.keys().next_back().map(String::as_str);
                if last != Some("commands") {
                    return Err(format!(
                        "capabilities: `commands` is not the last key ({last:?})"
                    ));
                }
                o.remove("commands");
            }
        }
        // Divergence: we print the absolute path, the reference the path as given.
        for v in [&mut got, &mut want] {
            if let Some(o) = v.as_object_mut() {
                o.remove("db_path");
                if let Some(cv) = o.get_mut("cli_version") {
                    *cv = Value::Null;
                }
                if let Some(s) = o.get_mut("skills") {
                    *s = Value::Array(Vec::new());
                }
            }
        }
        return json_diff(&want, &got, "$");
    }
    if let Some(text) = &case.stdout_text {
        let ours_stdout = if case.args.iter().any(|a| a == "--list" || a == "--category") {
            without_our_templates(&ours.stdout)
        } else {
            ours.stdout.clone()
        };
        if ours_stdout != *text {
            let line = text
                .lines()
                .zip(ours_stdout.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(text.lines().count().min(ours_stdout.lines().count()));
            return Err(format!(
                "text differs at line {line}:\n  reference: {:?}\n  ours:      {:?}",
                text.lines().nth(line),
                ours_stdout.lines().nth(line)
            ));
        }
    }
    let _ = &case.stderr_text;
    Ok(())
}

/// A `query --list` text without the templates we add (each is a `  name` line and an
/// indented description line): the reference lists only its own.
pub fn without_our_templates(listing: &str) -> String {
    let mut out = String::new();
    let mut skip_description = false;
    for line in listing.split_inclusive('\n') {
        if std::mem::take(&mut skip_description) {
            continue;
        }
        let ours = line
            .trim_end_matches('\n')
            .strip_prefix("  ")
            .is_some_and(|n| pt_snap_query::registry::OURS.contains(&n));
        if ours {
            skip_description = true;
            continue;
        }
        out.push_str(line);
    }
    out
}

/// Messages about `--params` syntax: Python's json module words them its own way, and it
/// accepts `NaN`/`Infinity`, which are not JSON (docs/compatibility.md).
pub fn json_syntax_error(message: &str) -> bool {
    message.contains("Expecting")
        || message.contains("(char ")
        || message.contains("NaN")
        || message.contains("Infinity")
}

pub fn json_diff(want: &Value, got: &Value, path: &str) -> Result<(), String> {
    match (want, got) {
        (Value::Object(a), Value::Object(b)) => {
            let ka: Vec<&String> = a.keys().collect();
            let kb: Vec<&String> = b.keys().collect();
            if ka != kb {
                return Err(format!("{path}: keys {kb:?} (reference {ka:?})"));
            }
            for (k, v) in a {
                json_diff(v, &b[k], &format!("{path}.{k}"))?;
            }
            Ok(())
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                return Err(format!("{path}: {} items (reference {})", b.len(), a.len()));
            }
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                json_diff(x, y, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        (a, b) if a == b => Ok(()),
        (a, b) => Err(format!("{path}: {b} (reference {a})")),
    }
}

/// The sets of a golden kind: directories with a set.json, as (name, dir, set.json).
pub fn sets(kind: &str) -> Vec<(String, PathBuf, Value)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(golden_root(kind)).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(raw) = std::fs::read(dir.join("set.json")) else {
            continue;
        };
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        out.push((name, dir, serde_json::from_slice(&raw).unwrap()));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The reference's database of a set: `reference.db`, or the path set.json names.
pub fn set_db(dir: &Path, meta: &Value) -> PathBuf {
    match meta["db"].as_str() {
        Some(rel) => dir.join(rel),
        None => dir.join("reference.db"),
    }
}

/// Imports a fixture with our binary into a temp dir; returns the dir and the DB path.
/// Runs our CLI with `args` and `HOME` at `home`; it must succeed, and its stdout is JSON.
pub fn ours_json(args: &[&str], home: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_pt-snap"))
        .args(args)
        .env("HOME", home)
        .env_remove("PT_SNAP_DB_PATH")
        .output()
        .unwrap();
    pt_snap_testkit::stdout_json(&out, format_args!("{args:?}"))
}

pub fn import_ours(fixture: &str) -> (tempfile::TempDir, PathBuf) {
    let out = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_pt-snap"))
        .arg("import")
        .arg(repo_root().join(fixture))
        .arg("-o")
        .arg(out.path())
        .args(["--no-focus", "--json"])
        .env("HOME", out.path())
        .output()
        .unwrap();
    assert!(run.status.success(), "import of {fixture} failed");
    let imported: Value = serde_json::from_slice(&run.stdout).unwrap();
    let db = PathBuf::from(imported["db_path"].as_str().unwrap());
    (out, db)
}

/// Replays every case of every set of `kind` on the reference's databases (`ours: false`)
/// or on the databases our import makes of the same fixtures (`ours: true`; dataset-shard
/// sets have no standalone import and are skipped). Negative ids restart per device in our
/// databases, so on a second device they are compared by rank.
pub fn replay(kind: &str, ours: bool) {
    replay_with(kind, ours, &[]);
}

/// [`replay`] with `extra` appended to the arguments of every case that prints text (no
/// `--json`, no `--format html`): flags whose default must not change a byte.
pub fn replay_with(kind: &str, ours: bool, extra: &[&str]) {
    let mut failures = BTreeMap::new();
    let mut ran = 0;
    for (set, dir, meta) in sets(kind) {
        let (_tmp, db) = if ours {
            let Some(fixture) = meta["fixture"].as_str() else {
                continue;
            };
            if !meta["import_args"].as_array().is_none_or(Vec::is_empty) {
                continue;
            }
            let (tmp, db) = import_ours(fixture);
            (Some(tmp), db)
        } else {
            (None, set_db(&dir, &meta))
        };
        let relabel = ours && meta["device"].as_i64().unwrap_or(0) != 0;
        for mut case in cases(&dir) {
            if !extra.is_empty() {
                let text = !case.args.iter().any(|a| a == "--json" || a == "html");
                if !text {
                    continue;
                }
                case.args.extend(extra.iter().map(|a| a.to_string()));
            }
            ran += 1;
            let mut got = run_ours(&case, &db, &dir);
            let mut want = case_clone(&case);
            if relabel {
                normalise_negative_ids(&mut want.stdout_json);
                if let Ok(mut v) = serde_json::from_str::<Value>(&got.stdout) {
                    normalise_negative_ids(&mut v);
                    got.stdout = v.to_string();
                }
            }
            if let Err(e) = compare(&want, &got) {
                failures.insert(format!("{set}/{}", case.name), e);
            }
        }
    }
    report(kind, failures, ran);
}

pub fn report(kind: &str, failures: BTreeMap<String, String>, ran: usize) {
    assert!(
        ran > 0,
        "no golden cases found under {}",
        golden_root(kind).display()
    );
    if !failures.is_empty() {
        let mut msg = format!("{} of {ran} cases differ:\n", failures.len());
        for (k, v) in &failures {
            msg.push_str(&format!("- {k}: {v}\n"));
        }
        panic!("{msg}");
    }
}

pub fn case_clone(c: &Case) -> Case {
    Case {
        name: c.name.clone(),
        args: c.args.clone(),
        env: c.env.clone(),
        exit: c.exit,
        stdout_json: c.stdout_json.clone(),
        stdout_text: c.stdout_text.clone(),
        stderr_json: c.stderr_json.clone(),
        stderr_text: c.stderr_text.clone(),
    }
}

/// Replaces negative integers by their rank among the distinct negative values found in
/// the document (-1 for the largest), so process-global and per-device counters compare.
pub fn normalise_negative_ids(v: &mut Value) {
    fn collect(v: &Value, out: &mut Vec<i64>) {
        match v {
            Value::Number(n) if n.as_i64().is_some_and(|i| i < -1) => out.push(n.as_i64().unwrap()),
            Value::Array(a) => a.iter().for_each(|x| collect(x, out)),
            Value::Object(o) => o.values().for_each(|x| collect(x, out)),
            _ => {}
        }
    }
    fn apply(v: &mut Value, ranks: &BTreeMap<i64, i64>) {
        match v {
            Value::Number(n) => {
                if let Some(r) = n.as_i64().and_then(|i| ranks.get(&i)) {
                    *v = Value::from(*r);
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| apply(x, ranks)),
            Value::Object(o) => o.values_mut().for_each(|x| apply(x, ranks)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    collect(v, &mut found);
    found.sort_unstable_by(|a, b| b.cmp(a));
    found.dedup();
    let ranks: BTreeMap<i64, i64> = found
        .iter()
        .enumerate()
        .map(|(i, id)| (*id, -2 - i as i64))
        .collect();
    apply(v, &ranks);
}
