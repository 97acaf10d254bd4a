//! The stable runner survives and reports every way a target can misbehave: a panic, a
//! hang (per-input time limit), a huge allocation (address-space cap), a large resident
//! set (RSS limit), a stack overflow and an abort, and keeps running inputs afterwards.

use std::process::Command;

#[test]
fn every_kind_of_misbehaviour_is_caught_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        "fine", "panic", "hang", "alloc", "rss", "stack", "abort", "fine",
    ];
    let files: Vec<_> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let p = dir.path().join(format!("{i}-{c}"));
            std::fs::write(&p, c).unwrap();
            p
        })
        .collect();
    let out = Command::new(env!("CARGO_BIN_EXE_pt-snap-fuzz"))
        .args([
            "run",
            "_selftest",
            "--timeout",
            "2",
            "--rss-mb",
            "256",
            "--as-mb",
            "2048",
        ])
        .args(&files)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = |i: usize| {
        let prefix = files[i].display().to_string();
        stdout
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no line for {prefix} in:\n{stdout}"))
            .to_owned()
    };
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(line(0).contains(": ok in"), "{}", line(0));
    assert!(line(1).contains("crash: panic at") && line(1).contains("selftest panic"));
    assert!(line(2).contains("timeout:"), "{}", line(2));
    assert!(line(3).contains("oom: allocation failed"), "{}", line(3));
    assert!(line(4).contains("oom: peak RSS over 256 MB"), "{}", line(4));
    assert!(line(5).contains("crash: stack overflow"), "{}", line(5));
    assert!(line(6).contains("crash: killed by signal 6"), "{}", line(6));
    assert!(line(7).contains(": ok in"), "{}", line(7));
}
