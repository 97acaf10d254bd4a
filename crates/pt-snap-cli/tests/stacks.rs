//! `--stacks python|all` on a capture with C++ frames (`stacks='all'`): the CS336 snapshot
//! in `fixtures/real/`. `all`, the default, prints what it printed before (the report
//! goldens hold `--stacks all` to the reference's text, `report_goldens.rs`); `python`
//! names every group by its user frame and torch call and prints its Python frames only.

mod common;

use common::pt_snap;
use std::path::{Path, PathBuf};

const FIXTURE: &str = "fixtures/real/cuda_cs336_nothanmin__memory_snapshot.pickle";
/// Its active peak.
const PEAK: &str = "5701";

fn text(args: &[&str], cwd: &Path) -> String {
    let out = pt_snap(cwd, args);
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The fixture imported into a scratch directory of its own: (directory, database).
fn database(name: &str) -> (PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("pt-snap-stacks-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("cs336.pickle");
    std::fs::copy(pt_snap_testkit::repo_root().join(FIXTURE), &copy).unwrap();
    text(
        &["import", copy.to_str().unwrap(), "--no-focus", "--json"],
        &dir,
    );
    let db = dir.join("cs336.pickle.db").to_str().unwrap().to_owned();
    (dir, db)
}

/// Frames a label must never be made of: the unwinder, CPython's C, the process entry.
fn runtime(label: &str) -> bool {
    [
        "torch::unwind",
        "CapturedTraceback",
        "Py_BytesMain",
        "_PyEval",
        "pyrun_file",
        "_start",
        "??",
    ]
    .iter()
    .any(|r| label.contains(r))
}

#[test]
fn peak_memory_python_names_groups_by_user_code_and_prints_python_frames() {
    let (dir, db) = database("peak");
    let default = text(&["report", "peak-memory", &db, "-n", "40"], &dir);
    let all = text(
        &["report", "peak-memory", &db, "-n", "40", "--stacks", "all"],
        &dir,
    );
    assert_eq!(default, all, "--stacks all is the default text");
    // The reference's text: every frame of the stack, the unwinder innermost.
    assert!(all.contains("??:0 torch::unwind::unwind()\n"));
    assert!(all.contains("Py_BytesMain\n"));

    let python = text(
        &[
            "report",
            "peak-memory",
            &db,
            "-n",
            "40",
            "--stacks",
            "python",
        ],
        &dir,
    );
    // Everything above the groups is the same.
    let head = |t: &str| t[..t.find("  [1]").unwrap()].to_owned();
    assert_eq!(head(&python), head(&all));
    let groups: Vec<&str> = python.split("\n  [").skip(1).collect();
    assert!(groups.len() > 20, "{}", groups.len());
    let mut labels = Vec::new();
    for g in &groups {
        let mut lines = g.lines();
        let first = lines.next().unwrap();
        if !first.contains("dynamic_live_at_event") {
            continue;
        }
        let label = lines
            .next()
            .and_then(|l| l.strip_prefix("      where: "))
            .unwrap_or_else(|| panic!("no label: {g}"));
        assert!(!runtime(label), "label of a runtime frame: {label}");
        labels.push(label.to_owned());
        for l in lines.filter(|l| !l.trim_start().starts_with('(')) {
            let frame = l.trim_start();
            let file = frame.split(':').next().unwrap();
            assert!(file.ends_with(".py"), "native frame printed: {l}");
        }
    }
    // The model's own code, and the call into torch below it.
    assert!(
        labels
            .iter()
            .any(|l| l.starts_with("forward (adapters.py:") && l.contains(" → ")),
        "{labels:#?}"
    );
    assert!(
        labels
            .iter()
            .any(|l| l.contains("torch/functional.py:einsum")),
        "{labels:#?}"
    );
    // Each group's Python frames and hidden native ones add up to its full stack.
    let full: Vec<&str> = all.split("\n  [").skip(1).collect();
    for (p, a) in groups.iter().zip(&full) {
        if !a.lines().next().unwrap().contains("dynamic_live_at_event") {
            assert_eq!(p, a);
            continue;
        }
        let frames = a.lines().count() - 1;
        let shown = p.lines().filter(|l| l.starts_with("        /")).count();
        let hidden: usize = p
            .lines()
            .find_map(|l| l.trim_start().strip_prefix('('))
            .map_or(0, |l| l.split(' ').next().unwrap().parse().unwrap());
        assert_eq!(shown + hidden, frames, "{p}");
    }
    // JSON always carries every frame: `--stacks python` is refused there.
    let out = pt_snap(
        &dir,
        &["report", "peak-memory", &db, "--json", "--stacks", "python"],
    );
    assert!(!out.status.success());
    let err: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(err["error"]["code"], "INVALID_PARAMETER", "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn memory_tree_python_folds_native_frames_into_python_callers() {
    let (dir, db) = database("tree");
    let args = ["report", "memory-tree", &db, "--event-id", PEAK];
    let default = text(&args, &dir);
    let all = text(&[&args[..], &["--stacks", "all"]].concat(), &dir);
    assert_eq!(default, all);
    // The process entry heads the full tree.
    assert!(all.contains("\n  ??:0 _start: "), "{}", &all[..600]);
    let python = text(&[&args[..], &["--stacks", "python"]].concat(), &dir);
    let lines: Vec<&str> = python.lines().collect();
    assert!(lines[2].starts_with("Python frames: "), "{}", lines[2]);
    // Same root, far fewer rows.
    assert_eq!(lines[3], all.lines().nth(2).unwrap());
    assert!(lines.len() * 5 < all.lines().count());
    // Under the root: memory without a stack, and Python frames.
    for l in &lines[4..] {
        if l.starts_with("  ") && !l.starts_with("   ") {
            let frame = l.trim_start();
            assert!(
                frame.starts_with('[') || frame.split(':').next().unwrap().ends_with(".py"),
                "{frame}"
            );
        }
    }
    assert!(lines.iter().any(|l| l.trim_start().starts_with(
        "/root/assignment2-systems/cs336_systems/benchmarking_script.py:169 <module>: "
    )));
    // In this capture every allocation of the peak has Python frames: none is native.
    assert!(
        lines[4..]
            .iter()
            .all(|l| l.trim_start().starts_with('[') || l.contains(".py:")),
        "{python}"
    );
    // --format html: the flamegraph's Python view as asked.
    let html = text(
        &[&args[..], &["--format", "html", "--stacks", "all"]].concat(),
        &dir,
    );
    assert!(html.contains("\"python_frames\":false"));
    let html = text(&[&args[..], &["--format", "html"]].concat(), &dir);
    assert!(!html.contains("\"python_frames\""));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `report oom` on the OOM fixtures: the synthetic one, and the real `stacks='all'` one of
/// `../shared` where it is present.
#[test]
fn report_oom_names_the_request_and_the_groups_by_their_labels() {
    let mut fixtures =
        vec![pt_snap_testkit::repo_root().join("fixtures/synthetic/synth_small_2dev_oom.pkl")];
    if let Some(shared) = pt_snap_testkit::shared_fixtures() {
        fixtures.push(shared.join("real/cuda_code_location__memory_snapshot_OOM.pickle"));
    }
    for (n, fixture) in fixtures.iter().enumerate() {
        let dir =
            std::env::temp_dir().join(format!("pt-snap-stacks-{}-oom{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let copy = dir.join("oom.pickle");
        std::fs::copy(fixture, &copy).unwrap();
        let path = copy.to_str().unwrap();
        let all = text(&["report", "oom", path], &dir);
        let python = text(&["report", "oom", path, "--stacks", "python"], &dir);
        assert_eq!(text(&["report", "oom", path, "--stacks", "all"], &dir), all);
        for t in [&all, &python] {
            let at = t
                .lines()
                .find_map(|l| l.strip_prefix("Requested at: "))
                .unwrap_or_else(|| panic!("{t}"));
            assert!(!runtime(at), "{at}");
            // The groups too: never the first frame of the stack, a thread's bootstrap.
            let groups = t.split("Live by callstack group:\n").nth(1).unwrap();
            for g in groups.lines().take_while(|l| l.starts_with("  ")) {
                assert!(!g.contains("_bootstrap") && !runtime(g), "{g}");
            }
        }
        // The request's frames: every one, or the Python ones.
        let frames = |t: &str| t.lines().filter(|l| l.starts_with("    /")).count();
        assert!(frames(&python) <= frames(&all));
        if n == 1 {
            assert!(python.contains("native frames not shown"), "{python}");
            assert!(
                python.contains("update_nodes (models.py:174) → Tensor.__getitem__"),
                "{python}"
            );
        }
        let out = pt_snap(
            &dir,
            &["report", "oom", path, "--json", "--stacks", "python"],
        );
        assert!(!out.status.success());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
