//! The shipped skills may only use what the CLI contract has (spec §1.1, §6, §7): every
//! `pt-snap …` command line in them is checked for its command, its flags, its template name
//! and the parameter names of its `--params`. A skill that drifts from the CLI would send
//! agents into usage errors.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use pt_snap_skills::Catalog;

fn skills_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../skills")
}

/// Flags per command (spec §1.1), plus help.
fn flags() -> BTreeMap<&'static str, BTreeSet<&'static str>> {
    let dataset_limits = [
        "--max-work-rows",
        "--max-work-bytes",
        "--max-scratch-db-bytes",
    ];
    let mut m: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    m.insert("", vec!["--version", "-v"]);
    m.insert("focus", vec!["--device", "-d", "--session", "--global"]);
    m.insert(
        "import",
        vec![
            "--output-dir",
            "-o",
            "--device",
            "-d",
            "--no-focus",
            "--force",
            "--events-per-slice",
            "--format",
            // Ours, not the reference's: the lenient replay (docs/compatibility.md).
            "--lenient",
        ],
    );
    m.insert(
        "split",
        vec![
            "--output",
            "-o",
            "--device",
            "-d",
            "--slices",
            "-s",
            "--max-entries",
            "-m",
            "--format",
        ],
    );
    m.insert("metadata", vec![]);
    m.insert("ranks", vec!["--device", "-d", "--metric", "--jobs", "-j"]);
    m.insert(
        "check",
        vec![
            "--record",
            "--baseline",
            "--metric",
            "--tolerance",
            "--device",
            "-d",
            "--format",
            "--output",
            "-o",
            "--jobs",
            "-j",
        ],
    );
    m.insert(
        "diff",
        vec![
            "--metric",
            "--device",
            "-d",
            "--limit",
            "-n",
            "--format",
            "--output",
            "-o",
            "--lenient",
            "--timeout",
        ],
    );
    let mut query = vec![
        "--template-use",
        "--params",
        "--device",
        "--slice",
        "--list",
        "--category",
        "--template-info",
        "-n",
        "--exact-total",
        "--timeout",
    ];
    query.extend(dataset_limits);
    m.insert("query", query);
    m.insert("config", vec!["--clear", "--path"]);
    m.insert("capabilities", vec![]);
    m.insert("overview", vec![]);
    let mut peak = vec![
        "--device",
        "-d",
        "--metric",
        "--include-static",
        "--exclude-static",
        "--limit",
        "-n",
        "--stack-bytes",
        "--start-id",
        "--end-id",
        "--timeout",
    ];
    peak.extend(dataset_limits);
    m.insert("report peak-memory", peak);
    let mut tree = vec![
        "--event-id",
        "--device",
        "-d",
        "--include-static",
        "--exclude-static",
        "--min-size",
        "--format",
        "--timeout",
    ];
    tree.extend(dataset_limits);
    m.insert("report memory-tree", tree);
    m.insert(
        "skill list",
        vec!["--target", "-t", "--project", "--user", "--dir"],
    );
    m.insert(
        "skill install",
        vec!["--target", "-t", "--project", "--force", "--dir"],
    );
    m.insert(
        "skill upgrade",
        vec!["--target", "-t", "--project", "--dir"],
    );
    m.insert(
        "skill uninstall",
        vec!["--target", "-t", "--project", "--dir"],
    );
    m.into_iter()
        .map(|(k, mut v)| {
            v.extend(["--json", "--help", "-h"]);
            (k, v.into_iter().collect())
        })
        .collect()
}

/// A row template's parameters: its filters, then the ordering and paging every row template
/// ends with.
fn paged(filters: &[&'static str]) -> Vec<&'static str> {
    [filters, &["order_by", "order_dir", "limit", "offset"]].concat()
}

/// Template → parameter names (spec §7, `capabilities --json`).
fn templates() -> BTreeMap<&'static str, Vec<&'static str>> {
    let range = vec!["start_id", "end_id"];
    BTreeMap::from([
        (
            "active_blocks_at_event",
            paged(&["event_id", "include_static", "min_size"]),
        ),
        (
            "active_memory_callstack_at_event",
            vec![
                "stack_bytes",
                "event_id",
                "include_static",
                "min_size",
                "top_n",
            ],
        ),
        (
            "active_memory_frame_tree_at_event",
            vec!["event_id", "include_static", "min_size"],
        ),
        (
            "allocation",
            paged(&[
                "min_id",
                "max_id",
                "min_allocated",
                "min_active",
                "min_reserved",
            ]),
        ),
        ("allocator_gap", range.clone()),
        (
            "block",
            paged(&[
                "id",
                "address",
                "size",
                "min_size",
                "max_size",
                "requestedSize",
                "allocEventId",
                "min_allocEventId",
                "max_allocEventId",
                "freeEventId",
                "min_freeEventId",
                "max_freeEventId",
            ]),
        ),
        ("callstack_analysis", vec!["min_count", "min_size", "limit"]),
        (
            "event",
            paged(&[
                "stack_bytes",
                "id",
                "min_id",
                "max_id",
                "action",
                "address",
                "size",
                "stream",
                "min_allocated",
                "min_active",
                "min_reserved",
            ]),
        ),
        ("event_frames", vec!["event_id", "frame_order"]),
        ("freed_block_lifetime", vec![]),
        ("leak_detection", vec!["min_size", "limit"]),
        ("memory_peak", range),
        ("preexisting_live", vec!["event_id"]),
    ])
}

/// Shell-like words: whitespace separates, single quotes group.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    out.push(std::mem::take(&mut current));
                    any = false;
                }
            }
            c => {
                current.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(current);
    }
    out
}

/// `pt-snap …` command lines: lines of fenced code blocks and inline code spans.
fn command_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            let line = line.trim();
            if is_command(line) {
                out.push(line.to_owned());
            }
            continue;
        }
        assert!(
            line.matches('`').count() % 2 == 0,
            "an inline code span crosses a line break: {line}"
        );
        for (i, span) in line.split('`').enumerate() {
            if i % 2 == 1 && is_command(span) {
                out.push(span.to_owned());
            }
        }
    }
    out
}

/// `pt-snap <command or flag> …`, not a sample of output such as `pt-snap 0.1.0`.
fn is_command(text: &str) -> bool {
    text.strip_prefix("pt-snap ")
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_lowercase() || c == '-'))
}

fn check_command(line: &str, flags: &BTreeMap<&str, BTreeSet<&str>>) -> Result<(), String> {
    let words = words(line);
    let mut i = 1;
    let mut command = String::new();
    if let Some(first) = words.get(1).filter(|w| !w.starts_with('-')) {
        command = first.clone();
        i = 2;
        if first == "report" || first == "skill" {
            let sub = words.get(2).ok_or("missing sub-command")?;
            command = format!("{first} {sub}");
            i = 3;
        }
    }
    let allowed = flags
        .get(command.as_str())
        .ok_or_else(|| format!("unknown command {command:?}"))?;
    let templates = templates();
    let mut template = None;
    let mut params = None;
    while i < words.len() {
        let w = &words[i];
        if w.starts_with('-') && w.parse::<i64>().is_err() {
            let flag = w.split('=').next().unwrap_or(w);
            if !allowed.contains(flag) {
                return Err(format!(
                    "flag {flag} is not an option of `pt-snap {command}`"
                ));
            }
            match flag {
                "--template-use" => template = words.get(i + 1).cloned(),
                "--params" => params = words.get(i + 1).cloned(),
                _ => {}
            }
        }
        i += 1;
    }
    if let Some(name) = &template {
        let known = templates
            .get(name.as_str())
            .ok_or_else(|| format!("unknown template {name}"))?;
        if let Some(json) = &params {
            let value: serde_json::Value = serde_json::from_str(&placeholders_to_zero(json))
                .map_err(|e| format!("--params is not JSON ({e}): {json}"))?;
            for key in value.as_object().ok_or("--params is not an object")?.keys() {
                if !known.contains(&key.as_str()) {
                    return Err(format!("{name} has no parameter {key}"));
                }
            }
        }
    } else if params.is_some() {
        return Err("--params without --template-use".into());
    }
    Ok(())
}

/// `<E>`, `<block id>` and the like stand for numbers in the examples.
fn placeholders_to_zero(json: &str) -> String {
    let mut out = String::new();
    let mut rest = json;
    while let Some(start) = rest.find('<') {
        let end = rest[start..]
            .find('>')
            .map_or(rest.len(), |e| start + e + 1);
        out.push_str(&rest[..start]);
        out.push('0');
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[test]
fn every_command_line_in_the_skills_matches_the_cli_contract() {
    let flags = flags();
    let mut problems = Vec::new();
    let mut checked = 0;
    for entry in fs::read_dir(skills_dir()).unwrap() {
        let dir = entry.unwrap().path();
        for file in fs::read_dir(&dir).unwrap() {
            let file = file.unwrap().path();
            if file.extension().is_none_or(|e| e != "md") {
                continue;
            }
            let text = fs::read_to_string(&file).unwrap();
            for line in command_lines(&text) {
                checked += 1;
                if let Err(e) = check_command(&line, &flags) {
                    problems.push(format!("{}: {e}\n    {line}", file.display()));
                }
            }
        }
    }
    assert!(checked > 50, "only {checked} command lines found");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn front_matter_fits_agent_skill_limits() {
    let catalog = Catalog::from_dir(&skills_dir()).unwrap();
    // The six of pt-snap-cli, pt-snap-compare-runs and pt-snap-memory-gate.
    assert_eq!(catalog.skills().len(), 8);
    for skill in catalog.skills() {
        let folder = skill.source_dir().unwrap().file_name().unwrap();
        assert_eq!(skill.name(), folder.to_str().unwrap(), "name = folder name");
        assert!(skill.name().len() <= 64);
        assert!(skill
            .name()
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
        let description = skill.description();
        assert!(
            !description.is_empty() && description.len() <= 1024,
            "{}: description of {} bytes",
            skill.name(),
            description.len()
        );
        assert!(
            description.is_ascii(),
            "{}: keep descriptions ASCII",
            skill.name()
        );
    }
}

#[test]
fn the_checker_catches_drift() {
    let flags = flags();
    assert!(check_command(
        "pt-snap query 'x' --device 0 --template-use event --params '{\"id\": <E>}' --json",
        &flags
    )
    .is_ok());
    assert!(check_command("pt-snap query 'x' -d 0 --json", &flags).is_err());
    assert!(check_command(
        "pt-snap query --template-use leak_detection --params '{\"offset\": 0}'",
        &flags
    )
    .is_err());
    assert!(check_command("pt-snap query --template-use leak_detections", &flags).is_err());
    assert!(check_command("pt-snap report peak --json", &flags).is_err());
    assert!(check_command("pt-snap skill list --force", &flags).is_err());
}
