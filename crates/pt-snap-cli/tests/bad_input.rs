//! Bad input gets the documented error code and exit status, stdout stays empty, and nothing
//! is lost: no DB or temp file is left behind, and an existing DB survives a failed `--force`.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::pt_snap;
use pt_snap_testkit::{copy_from_repo, repo_root};
use serde_json::Value;

/// A fresh project directory holding a small two-device snapshot as `s.pkl`.
fn project_with_small_snapshot() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_from_repo(
        "fixtures/synthetic/synth_small_2dev.pkl",
        &dir.path().join("s.pkl"),
    );
    dir
}

/// Runs `import --json` on `bytes` saved as `name`; asserts the failure contract and returns
/// the error envelope.
fn refused(name: &str, bytes: &[u8]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), bytes).unwrap();
    let out = pt_snap(dir.path(), &["import", name, "--json"]);
    let envelope = failed(&out, 1, name);
    assert_eq!(envelope["ok"], false);
    assert_eq!(envelope["schema_version"], 1);
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec![name.to_owned()], "{name}: files left behind");
    envelope
}

/// The error envelope on stderr of a run (`what`) that must have exited with `status` and
/// written nothing to stdout.
fn failed(out: &Output, status: i32, what: &str) -> Value {
    assert_eq!(out.status.code(), Some(status), "{what}: {out:?}");
    assert!(
        out.stdout.is_empty(),
        "{what}: stdout {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stderr).unwrap()
}

fn code(envelope: &Value) -> &str {
    envelope["error"]["code"].as_str().unwrap()
}

/// `{"device_traces": [[{"action": "free_completed", "addr": 4096, …}]]}`: nothing to free.
const UNREPLAYABLE: &[u8] = b"\x80\x04\x95p\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x08segments\x94]\x94\x8c\x0ddevice_traces\x94]\x94]\x94}\x94(\x8c\x06action\x94\x8c\x0efree_completed\x94\x8c\x04addr\x94M\x00\x10\x8c\x04size\x94M\x00\x02\x8c\x06stream\x94K\x00\x8c\x06frames\x94]\x94uaau.";

#[test]
fn malformed_pickles_are_import_failures() {
    let real = std::fs::read(repo_root().join("fixtures/synthetic/synth_small_1dev.pkl")).unwrap();
    for (name, bytes) in [
        ("empty.pkl", &b""[..]),
        ("truncated.pkl", &real[..real.len() / 2]),
        ("text.pkl", b"hello, this is not a pickle"),
        ("int.pkl", b"\x80\x04K\x05."),
        ("segments_str.pkl", b"\x80\x02}q\x00X\x08\x00\x00\x00segmentsq\x01X\x01\x00\x00\x00xq\x02s."),
        (
            "segment_fields.pkl",
            b"\x80\x02}q\x00X\x08\x00\x00\x00segmentsq\x01]q\x02}q\x03X\x07\x00\x00\x00addressq\x04K\x01sas.",
        ),
        // A free of a block that never existed cannot be replayed.
        ("unreplayable.pkl", UNREPLAYABLE),
    ] {
        let env = refused(name, bytes);
        assert_eq!(code(&env), "IMPORT_FAILED", "{name}: {env}");
    }
}

/// A snapshot whose compressed stream was damaged or extended is refused as that stream's
/// fault, and no database is written; the same stream intact imports.
#[test]
fn damaged_compressed_streams_are_import_failures() {
    use pt_snap_testkit::compress;
    let real = std::fs::read(repo_root().join("fixtures/synthetic/synth_small_1dev.pkl")).unwrap();
    let (gz, zst, bz) = (
        compress::gzip(&real),
        compress::zstd(&real),
        compress::bzip2(&real),
    );
    let altered = |bytes: &[u8], at_end: usize| {
        let mut b = bytes.to_vec();
        let i = b.len() - at_end;
        b[i] ^= 1;
        b
    };
    let extended = |bytes: &[u8]| [bytes, b"trailing garbage"].concat();
    for (name, bytes, message) in [
        (
            "crc.pkl.gz",
            altered(&gz, 8),
            "corrupt gzip stream: CRC mismatch in member 1",
        ),
        (
            "isize.pkl.gz",
            altered(&gz, 4),
            "corrupt gzip stream: length mismatch in member 1",
        ),
        (
            "tail.pkl.gz",
            extended(&gz),
            "corrupt gzip stream: trailing data after member 1",
        ),
        (
            "sum.pkl.zst",
            altered(&zst, 2),
            "corrupt zstd stream: content checksum mismatch in frame 1",
        ),
        (
            "tail.pkl.zst",
            extended(&zst),
            "corrupt zstd stream: trailing data after frame 1",
        ),
        (
            "tail.pkl.bz2",
            extended(&bz),
            "corrupt bzip2 stream: trailing data after stream 1",
        ),
    ] {
        let env = refused(name, &bytes);
        assert_eq!(code(&env), "IMPORT_FAILED", "{name}: {env}");
        let got = env["error"]["message"].as_str().unwrap();
        assert!(
            got.starts_with(&format!(
                "Snapshot import backend reported failure: {message}"
            )),
            "{name}: {got}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        ("ok.pkl.gz", &gz),
        ("ok.pkl.zst", &zst),
        ("ok.pkl.bz2", &bz),
    ] {
        std::fs::write(dir.path().join(name), bytes).unwrap();
        let out = pt_snap(dir.path(), &["import", name, "--no-focus", "--json"]);
        assert!(out.status.success(), "{name}: {out:?}");
    }
}

#[test]
fn code_in_a_pickle_is_refused_not_run() {
    let marker = std::env::temp_dir().join("pt-snap-pwned-marker");
    let _ = std::fs::remove_file(&marker);
    let reduce = format!("cos\nsystem\n(S'touch {}'\ntR.", marker.display());
    for (name, bytes) in [
        (
            "ordered.pkl",
            b"\x80\x02ccollections\nOrderedDict\nq\x00)Rq\x01.".to_vec(),
        ),
        ("reduce.pkl", reduce.into_bytes()),
    ] {
        let env = refused(name, &bytes);
        assert_eq!(code(&env), "IMPORT_FAILED");
        let msg = env["error"]["message"].as_str().unwrap();
        assert!(
            msg.starts_with("Snapshot pickle rejected: Unsafe pickle:"),
            "{msg}"
        );
    }
    assert!(!marker.exists(), "the pickle's code ran");
    let env = refused(
        "ordered.pkl",
        b"\x80\x02ccollections\nOrderedDict\nq\x00)Rq\x01.",
    );
    assert_eq!(
        env["error"]["message"],
        "Snapshot pickle rejected: Unsafe pickle: global 'collections.OrderedDict' is not allowed. Only basic Python types are permitted for security."
    );
}

#[test]
fn bad_paths_are_snapshot_invalid() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.txt"), b"just some notes\n").unwrap();
    std::fs::create_dir(dir.path().join("d.pkl")).unwrap();
    for (arg, message) in [
        ("nope.pkl", "Snapshot file does not exist: nope.pkl"),
        ("d.pkl", "Snapshot path is not a file: d.pkl"),
        (
            "x.txt",
            "Snapshot suffix must be .pkl or .pickle, got '.txt' (and the content is no \
             snapshot either: it starts with the text \"just some no\")",
        ),
    ] {
        let out = pt_snap(dir.path(), &["import", arg, "--json"]);
        let env = failed(&out, 1, arg);
        assert_eq!(env["error"]["code"], "SNAPSHOT_INVALID");
        assert_eq!(env["error"]["message"], message);
    }
}

#[test]
fn a_snapshot_is_known_by_its_content_whatever_its_name() {
    let dir = tempfile::tempdir().unwrap();
    // A pickle (PROTO 4) named like anything else is imported; so is the same file under
    // the reference's suffix.
    let real = std::fs::read(repo_root().join("fixtures/synthetic/synth_small_1dev.pkl")).unwrap();
    for name in ["snapshot.bin", "snapshot.pkl"] {
        std::fs::write(dir.path().join(name), &real).unwrap();
        let out = pt_snap(dir.path(), &["import", name, "--no-focus", "--json"]);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A ZIP archive (what torch.save writes) is named as such, whatever it is called.
    let env = refused("model.pkl", b"PK\x03\x04\x14\x00\x00\x00");
    assert_eq!(code(&env), "IMPORT_FAILED");
    let message = env["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("it is a ZIP archive (torch.save writes those"),
        "{message}"
    );
}

#[test]
fn usage_errors_exit_2_with_an_envelope_under_json() {
    let dir = tempfile::tempdir().unwrap();
    let out = pt_snap(dir.path(), &["import", "--bogus", "--json"]);
    let env = failed(&out, 2, "--bogus");
    assert_eq!(env["error"]["code"], "INVALID_PARAMETER");
    let out = pt_snap(dir.path(), &["import", "x.pkl", "--device", "-1", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let env: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(
        env["error"]["message"],
        "device must be a nonnegative integer."
    );
}

#[test]
fn a_failed_forced_reimport_keeps_the_existing_database() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("snap.pkl");
    copy_from_repo("fixtures/synthetic/synth_small_1dev.pkl", &src);
    let out = pt_snap(dir.path(), &["import", "snap.pkl", "--json", "--no-focus"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let db = dir.path().join("snap.pkl.db");
    let before = std::fs::read(&db).unwrap();

    std::fs::write(&src, b"\x80\x04K\x05.").unwrap();
    let out = pt_snap(
        dir.path(),
        &["import", "snap.pkl", "--json", "--no-focus", "--force"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(std::fs::read(&db).unwrap(), before);
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["snap.pkl", "snap.pkl.db"]);
}

#[test]
fn reimport_reuses_and_force_rebuilds() {
    let dir = project_with_small_snapshot();
    let run = |extra: &[&str]| -> Value {
        let mut args = vec!["import", "s.pkl", "--json"];
        args.extend_from_slice(extra);
        let out = pt_snap(dir.path(), &args);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let first = run(&[]);
    assert_eq!(first["reused"], false);
    assert_eq!(first["cache_miss_reason"], "database_missing");
    assert_eq!(first["focus_source"], "project");
    assert_eq!(
        first["focus_state"]["available_devices"],
        serde_json::json!([0, 1])
    );
    assert!(dir.path().join(".pt-snap/focus.json").is_file());
    let again = run(&[]);
    assert_eq!(again["reused"], true);
    assert_eq!(again["cache_miss_reason"], Value::Null);
    assert_eq!(again["metadata"], first["metadata"]);
    assert_eq!(run(&["--force"])["cache_miss_reason"], "forced");
    assert_eq!(
        run(&["--device", "1"])["cache_miss_reason"],
        "device_changed"
    );
}

/// A published DB has the permissions of any new file under the caller's umask, as the
/// reference's, not those of the private temp file it was built in.
#[cfg(unix)]
#[test]
fn an_imported_database_gets_a_new_files_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = project_with_small_snapshot();
    let out = pt_snap(dir.path(), &["import", "s.pkl", "--json", "--no-focus"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let envelope: Value = serde_json::from_slice(&out.stdout).unwrap();
    let db = envelope["db_path"].as_str().unwrap();
    // The test process's umask is the child's: a file it creates shows what to expect.
    let plain = dir.path().join("plain");
    std::fs::File::create(&plain).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(Path::new(db)), mode(&plain));
}

/// `pt-snap capabilities --json | head -c 0`: the reader is gone before the output is written.
/// The command must end as a Unix filter does (SIGPIPE), not panic inside `println!`.
#[cfg(unix)]
#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    const SIGPIPE: i32 = 13; // Linux and macOS alike
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pt-snap"))
        .args(["capabilities", "--json"])
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
    // Either the write met the closed pipe (killed by SIGPIPE), or, on a slow start, the
    // whole answer fitted into the pipe before it closed.
    assert!(
        out.status.signal() == Some(SIGPIPE) || out.status.success(),
        "{:?}",
        out.status
    );
}
