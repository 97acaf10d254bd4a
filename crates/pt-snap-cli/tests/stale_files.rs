//! Files left beside a target by a killed import (`.<target>.<T>.tmp`, `.<target>.stage-<T>/`,
//! `.<target>.recovery-<T>/`, each owned through a flocked `.<target>.<T>.lock`): the next
//! import of that target removes those of dead owners, never a live import's, restores a
//! dataset a killed `--force` had moved away, and treats ownerless (older pt-snap) names by age.
#![cfg(unix)]

use std::fs::{self, File};
use std::os::fd::AsRawFd as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

use pt_snap_testkit::copy_from_repo;
use serde_json::Value;

const DB: &str = "snap.pkl.db";
const NATIVE: &str = "snap.pkl.pt-snap-native-v2";

struct Work {
    _dir: tempfile::TempDir,
    root: PathBuf,
    source: PathBuf,
}

/// A work dir with `snap.pkl`: a small fixture, or with `big`, a generated snapshot that takes
/// a second or so to import.
fn work(big: bool) -> Work {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    fs::create_dir_all(root.join("home")).unwrap();
    let source = root.join("snap.pkl");
    if big {
        let mut cfg = pt_snap_gen::Config::small(7);
        cfg.events_per_device = 100_000;
        let out = std::io::BufWriter::new(File::create(&source).unwrap());
        pt_snap_gen::generate(&cfg, out).unwrap();
    } else {
        copy_from_repo("fixtures/synthetic/caseB_expandable.pkl", &source);
    }
    Work {
        _dir: dir,
        root,
        source,
    }
}

impl Work {
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_pt-snap"));
        c.arg("import")
            .arg(&self.source)
            .arg("--no-focus")
            .args(args)
            .current_dir(&self.root)
            .env("HOME", self.root.join("home"));
        c
    }

    fn import(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn import_json(&self, args: &[&str]) -> Value {
        let out = self.import(&[&["--json"], args].concat());
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Imports the snapshot both ways: as a database, then as a sharded dataset
    /// (`--events-per-slice`), so that both kinds of output pass their cleanup.
    fn import_both(&self) {
        self.import_json(&[]);
        self.import_json(&["--events-per-slice", "3"]);
    }

    fn spawn(&self, args: &[&str]) -> Child {
        self.command(&[&["--json"], args].concat())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Hidden names in the work dir: what imports leave beside their targets.
    fn hidden(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(&self.root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        names.sort();
        names
    }
}

/// The PID of a process that has ended.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

/// A lock file as a killed import leaves it: its PID in it, nobody holding its lock.
fn dead_lock(path: &Path) {
    fs::write(path, format!("{}\n", dead_pid())).unwrap();
}

/// A lock file held as a running import holds it (until the returned file is dropped).
fn live_lock(path: &Path) -> File {
    fs::write(path, format!("{}\n", std::process::id())).unwrap();
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    // SAFETY: a valid open descriptor.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
    file
}

/// A stage directory with a half-written shard in it.
fn stage(path: &Path) {
    fs::create_dir_all(path.join("artifact/device_0")).unwrap();
    fs::write(
        path.join("artifact/device_0/slice_00000.db"),
        vec![7u8; 4096],
    )
    .unwrap();
}

/// Makes `path` and everything under it look untouched for `hours`.
fn age(path: &Path, hours: u64) {
    let t = SystemTime::now() - Duration::from_secs(hours * 3600);
    if path.is_dir() {
        for entry in fs::read_dir(path).unwrap() {
            age(&entry.unwrap().path(), hours);
        }
        File::open(path).unwrap().set_modified(t).unwrap();
    } else {
        File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }
}

fn exists(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok()
}

#[test]
fn a_dead_imports_temp_db_is_removed() {
    let w = work(false);
    let lock = w.path(&format!(".{DB}.Dead01.lock"));
    let tmp = w.path(&format!(".{DB}.Dead01.tmp"));
    let journal = w.path(&format!(".{DB}.Dead01.tmp-journal"));
    dead_lock(&lock);
    fs::write(&tmp, vec![1u8; 4096]).unwrap();
    fs::write(&journal, b"j").unwrap();
    // Another target's: not ours to judge.
    let other_lock = w.path(".other.pkl.db.Dead02.lock");
    let other_tmp = w.path(".other.pkl.db.Dead02.tmp");
    dead_lock(&other_lock);
    fs::write(&other_tmp, b"x").unwrap();

    let v = w.import_json(&[]);
    assert_eq!(v["cache_miss_reason"], "database_missing");
    assert_eq!(
        w.hidden(),
        [".other.pkl.db.Dead02.lock", ".other.pkl.db.Dead02.tmp"]
    );

    // A reused target is no reason to keep them.
    dead_lock(&lock);
    fs::write(&tmp, b"").unwrap();
    let v = w.import_json(&[]);
    assert_eq!(v["reused"], true);
    assert!(!exists(&tmp) && !exists(&lock), "{:?}", w.hidden());
}

#[test]
fn a_dead_imports_stage_and_committed_recovery_are_removed() {
    let w = work(false);
    dead_lock(&w.path(&format!(".{NATIVE}.Dead03.lock")));
    stage(&w.path(&format!(".{NATIVE}.stage-Dead03")));
    dead_lock(&w.path(&format!(".{NATIVE}.Dead04.lock")));
    stage(&w.path(&format!(".{NATIVE}.recovery-Dead04/discard")));
    // A single-DB import does not write dataset directories: not its business.
    w.import_json(&[]);
    assert_eq!(w.hidden().len(), 4, "{:?}", w.hidden());

    let v = w.import_json(&["--events-per-slice", "3"]);
    assert_eq!(v["cache_miss_reason"], "database_missing");
    assert_eq!(w.hidden(), Vec::<String>::new());
}

#[test]
fn a_live_imports_files_survive() {
    let w = work(false);
    let lock = w.path(&format!(".{DB}.Live01.lock"));
    let tmp = w.path(&format!(".{DB}.Live01.tmp"));
    let held = live_lock(&lock);
    fs::write(&tmp, vec![1u8; 4096]).unwrap();
    let ds_lock = w.path(&format!(".{NATIVE}.Live02.lock"));
    let ds_stage = w.path(&format!(".{NATIVE}.stage-Live02"));
    let ds_held = live_lock(&ds_lock);
    stage(&ds_stage);
    // However old they look.
    age(&tmp, 48);
    age(&ds_stage, 48);

    w.import_both();
    assert!(exists(&tmp) && exists(&lock) && exists(&ds_stage) && exists(&ds_lock));
    assert_eq!(fs::read(&tmp).unwrap(), vec![1u8; 4096]);

    // Once their owner is gone, they go.
    drop(held);
    drop(ds_held);
    w.import_both();
    assert_eq!(w.hidden(), Vec::<String>::new());
}

#[test]
fn ownerless_files_go_only_when_abandoned_and_symlinks_are_never_followed() {
    let w = work(false);
    // Older pt-snap's names (no lock file): removed after a day untouched, kept before.
    let old_tmp = w.path(&format!(".{DB}.Old001.tmp"));
    let new_tmp = w.path(&format!(".{DB}.New001.tmp"));
    let old_stage = w.path(&format!(".{NATIVE}.stage-Old002"));
    let new_stage = w.path(&format!(".{NATIVE}.stage-New002"));
    fs::write(&old_tmp, b"x").unwrap();
    fs::write(&new_tmp, b"x").unwrap();
    stage(&old_stage);
    stage(&new_stage);
    age(&old_tmp, 25);
    age(&old_stage, 25);
    // Old, but with one member written an hour ago: not abandoned.
    let busy_stage = w.path(&format!(".{NATIVE}.stage-Busy02"));
    stage(&busy_stage);
    age(&busy_stage, 25);
    age(&busy_stage.join("artifact/device_0/slice_00000.db"), 1);
    // An empty lock file: an import between creating and locking it.
    let unborn = w.path(&format!(".{DB}.Unborn.lock"));
    fs::write(&unborn, b"").unwrap();
    fs::write(w.path(&format!(".{DB}.Unborn.tmp")), b"").unwrap();
    // Named like ours, but symlinks: left alone, and what they point at untouched.
    let outside = w.root.join("home/precious");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("file"), b"keep").unwrap();
    dead_lock(&w.path(&format!(".{DB}.Link01.lock")));
    std::os::unix::fs::symlink(outside.join("file"), w.path(&format!(".{DB}.Link01.tmp"))).unwrap();
    dead_lock(&w.path(&format!(".{NATIVE}.Link02.lock")));
    std::os::unix::fs::symlink(&outside, w.path(&format!(".{NATIVE}.stage-Link02"))).unwrap();
    // Not exactly our pattern.
    let odd = w.path(&format!(".{DB}.Odd1.tmp"));
    fs::write(&odd, b"x").unwrap();
    age(&odd, 25);

    w.import_both();
    let mut expected: Vec<String> = [
        format!(".{DB}.New001.tmp"),
        format!(".{DB}.Odd1.tmp"),
        format!(".{DB}.Unborn.lock"),
        format!(".{DB}.Unborn.tmp"),
        format!(".{DB}.Link01.tmp"),
        format!(".{NATIVE}.stage-Link02"),
        format!(".{NATIVE}.stage-New002"),
        format!(".{NATIVE}.stage-Busy02"),
    ]
    .into();
    expected.sort();
    assert_eq!(w.hidden(), expected);
    assert_eq!(fs::read(outside.join("file")).unwrap(), b"keep");
}

#[test]
fn a_dataset_moved_away_by_a_killed_force_is_restored() {
    let w = work(false);
    w.import_json(&["--events-per-slice", "3"]);
    let manifest = fs::read(w.path(NATIVE).join("manifest.json")).unwrap();
    // Killed between moving the old dataset aside and putting the new one in place.
    let recovery = w.path(&format!(".{NATIVE}.recovery-Dead05"));
    fs::create_dir(&recovery).unwrap();
    fs::rename(w.path(NATIVE), recovery.join("previous")).unwrap();
    dead_lock(&w.path(&format!(".{NATIVE}.Dead05.lock")));
    stage(&w.path(&format!(".{NATIVE}.stage-Dead05")));

    let out = w.import(&["--events-per-slice", "3"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{out:?}");
    assert!(stderr.contains("warning: restored "), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("Reused: "),
        "{out:?}"
    );
    assert_eq!(
        fs::read(w.path(NATIVE).join("manifest.json")).unwrap(),
        manifest
    );
    assert_eq!(w.hidden(), Vec::<String>::new());
}

#[test]
fn an_old_dataset_is_kept_while_another_is_in_place() {
    let w = work(false);
    w.import_json(&["--events-per-slice", "3"]);
    // Killed after the new dataset was in place but before the old one was marked garbage
    // (or the rollback failed): the old dataset may be all the user has of it.
    let recovery = w.path(&format!(".{NATIVE}.recovery-Dead06"));
    let lock = w.path(&format!(".{NATIVE}.Dead06.lock"));
    stage(&recovery.join("previous"));
    dead_lock(&lock);

    for _ in 0..2 {
        let out = w.import(&["--events-per-slice", "3"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{out:?}");
        assert!(stderr.contains("warning: kept "), "{stderr}");
        assert!(exists(
            &recovery.join("previous/artifact/device_0/slice_00000.db")
        ));
        assert!(exists(&lock));
    }
}

/// Stops `child` (SIGSTOP) and waits until all of it has stopped; `false` if it ended first
/// (it is then reaped, and the caller must not wait for it again).
fn stop(child: &Child) -> bool {
    let pid = child.id() as libc::pid_t;
    // SAFETY: signals and waits for our own child, not yet reaped; `status` is valid.
    unsafe {
        libc::kill(pid, libc::SIGSTOP);
        let mut status = 0;
        let r = libc::waitpid(pid, &mut status, libc::WUNTRACED);
        assert_eq!(r, pid, "waitpid: {}", std::io::Error::last_os_error());
        libc::WIFSTOPPED(status)
    }
}

fn resume(child: &Child) {
    // SAFETY: signals our own stopped child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGCONT) };
}

/// Lets `child` run until `found`, looking while the child is stopped, returns something:
/// the child is left stopped in the very state `found` saw, so what the test does next
/// cannot race with it. Fails the test if the child ends first, or does not get there in
/// 120 s (the machine may be loaded): then the case was not exercised.
fn freeze_when<T>(child: &Child, what: &str, mut found: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        assert!(
            stop(child),
            "the import ended before {what}: the case was not exercised"
        );
        if let Some(t) = found() {
            return t;
        }
        resume(child);
        assert!(
            Instant::now() < deadline,
            "the import did not get to {what} in 120 s"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The first hidden name with `pattern` in it (other than `except`).
fn hidden_with(w: &Work, pattern: &str, except: Option<&str>) -> Option<String> {
    w.hidden()
        .into_iter()
        .find(|n| n.contains(pattern) && Some(n.as_str()) != except)
}

/// Kills the stopped `child` (SIGKILL) and reaps it.
fn kill(mut child: Child) {
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), None, "{status:?}");
}

fn integrity_ok(db: &Path) {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}

#[test]
fn a_killed_single_db_import_is_cleaned_up_by_the_next() {
    let w = work(true);
    let child = w.spawn(&[]);
    // Killed while its temp file is there: stopped the moment it is seen.
    freeze_when(&child, "writing its temp file", || {
        hidden_with(&w, ".tmp", None)
    });
    kill(child);
    let left = w.hidden();
    assert!(left.iter().any(|n| n.ends_with(".tmp")), "{left:?}");
    assert!(left.iter().any(|n| n.ends_with(".lock")), "{left:?}");

    let v = w.import_json(&[]);
    assert_eq!(v["cache_miss_reason"], "database_missing");
    assert_eq!(w.hidden(), Vec::<String>::new());
    assert_eq!(w.import_json(&[])["reused"], true);
    integrity_ok(&w.path(DB));
}

#[test]
fn a_killed_dataset_import_is_cleaned_up_by_the_next() {
    let w = work(true);
    let args = ["--events-per-slice", "20000"];
    let child = w.spawn(&args);
    freeze_when(&child, "writing shards into its stage", || {
        let name = hidden_with(&w, ".stage-", None)?;
        exists(&w.path(&name).join("artifact")).then_some(name)
    });
    kill(child);
    let left = w.hidden();
    assert!(left.iter().any(|n| n.contains(".stage-")), "{left:?}");
    assert!(left.iter().any(|n| n.ends_with(".lock")), "{left:?}");

    let v = w.import_json(&args);
    assert_eq!(v["cache_miss_reason"], "database_missing");
    assert_eq!(w.hidden(), Vec::<String>::new());
    assert_eq!(w.import_json(&args)["reused"], true);
}

#[test]
fn concurrent_imports_of_one_target_leave_each_other_alone() {
    let w = work(true);
    let first = w.spawn(&[]);
    // The first is held (stopped) with its temp file and lock in place while a second
    // import of the same target runs from start to end: the second cleans up before it
    // writes, and must leave a live import's files alone.
    let first_tmp = freeze_when(&first, "writing its temp file", || {
        hidden_with(&w, ".tmp", None)
    });
    let first_lock = hidden_with(&w, ".lock", None).expect("the first import's lock");
    let second = w.spawn(&[]).wait_with_output().unwrap();
    assert!(second.status.success(), "{second:?}");
    assert!(
        exists(&w.path(&first_tmp)) && exists(&w.path(&first_lock)),
        "{:?}",
        w.hidden()
    );
    resume(&first);
    let out = first.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(w.hidden(), Vec::<String>::new());
    assert_eq!(w.import_json(&[])["reused"], true);
    integrity_ok(&w.path(DB));
}
