//! `pt-snap view`: what it refuses before it listens (in every build), and, in a build with
//! the browser app (`PT_SNAP_WEB_DIST` set when it was built, as CI builds it), what it
//! serves, to whom, on which address, what it prints and how it ends.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::pt_snap;
use serde_json::Value;

const SAMPLE: &str = "fixtures/upstream-pkg/snapshots/snapshot_with_multi_devices.pkl";

fn sample() -> PathBuf {
    pt_snap_testkit::repo_root().join(SAMPLE)
}

/// Whether this build has the app; `None` (skip) when it has not, which CI never allows.
fn app() -> Option<PathBuf> {
    match option_env!("PT_SNAP_WEB_DIST") {
        Some(dist) if !dist.is_empty() => Some(PathBuf::from(dist)),
        _ => {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true");
            assert!(
                !ci,
                "pt-snap was built without the browser app; CI must build it with \
                 PT_SNAP_WEB_DIST set (scripts/test does)"
            );
            eprintln!("SKIPPED: built without PT_SNAP_WEB_DIST, so pt-snap view serves nothing");
            None
        }
    }
}

/// A running `pt-snap view`, its URL read from its first lines.
struct Viewing {
    child: Child,
    port: u16,
    token: String,
    /// Its stdout up to the URL.
    stdout: Vec<String>,
    rest: BufReader<std::process::ChildStdout>,
}

impl Viewing {
    fn start(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Viewing {
        let mut command = Command::new(env!("CARGO_BIN_EXE_pt-snap"));
        command
            .arg("view")
            .args(args)
            .current_dir(dir)
            .env("HOME", dir)
            .env_remove("PT_SNAP_DB_PATH")
            .env_remove("BROWSER")
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().unwrap();
        let mut rest = BufReader::new(child.stdout.take().unwrap());
        let mut stdout = Vec::new();
        let url = loop {
            let mut line = String::new();
            assert!(
                rest.read_line(&mut line).unwrap() > 0,
                "pt-snap view ended before printing a URL"
            );
            let line = line.trim_end().to_owned();
            stdout.push(line.clone());
            if let Some(at) = line.find("http://") {
                break line[at..].to_owned();
            }
        };
        let after = url.strip_prefix("http://127.0.0.1:").expect(&url);
        let (port, token) = after.split_once("/?token=").expect(&url);
        Viewing {
            child,
            port: port.parse().unwrap(),
            token: token.to_owned(),
            stdout,
            rest,
        }
    }

    fn get(&self, target: &str) -> (u16, Vec<u8>) {
        get(self.port, target)
    }

    /// Ends it with SIGINT (Ctrl+C); its exit status and stderr, and its stdout after the URL.
    fn interrupt(mut self) -> (std::process::ExitStatus, String, String) {
        #[cfg(unix)]
        Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap();
        #[cfg(not(unix))]
        self.child.kill().unwrap();
        let status = self.child.wait().unwrap();
        let mut stderr = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let mut stdout = String::new();
        self.rest.read_to_string(&mut stdout).unwrap();
        (status, stderr, stdout)
    }
}

/// One GET on a new connection: the status and the body.
fn get(port: u16, target: &str) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&answer[..split]).into_owned();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, answer[split + 4..].to_vec())
}

fn listing(viewing: &Viewing) -> Value {
    let (status, body) = viewing.get(&format!("/files?token={}", viewing.token));
    assert_eq!(status, 200);
    serde_json::from_slice(&body).unwrap()
}

fn failure(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = pt_snap(dir, args);
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn what_cannot_be_read_is_refused_before_anything_listens() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("notes.txt"), "not a snapshot").unwrap();
    for (args, says) in [
        (vec!["view", "missing.pkl"], "Snapshot file does not exist"),
        (
            vec!["view", "missing.db", "--no-open"],
            "Database not found",
        ),
        (
            vec!["view", "notes.txt"],
            "Snapshot suffix must be .pkl or .pickle",
        ),
        (vec!["view", "missing-dir/"], "does not exist"),
    ] {
        let (status, stdout, stderr) = failure(d, &args);
        assert_eq!(status, 1, "{args:?}: {stderr}");
        assert!(
            stdout.is_empty(),
            "{args:?}: nothing served, no URL: {stdout}"
        );
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let locked = d.join("locked.pkl");
        std::fs::copy(sample(), &locked).unwrap();
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
        // Root reads anything: the case exists only for other users.
        if std::fs::File::open(&locked).is_err() {
            let (status, stdout, stderr) = failure(d, &["view", "locked.pkl"]);
            assert_eq!(status, 1, "{stderr}");
            assert!(stdout.is_empty());
            assert!(stderr.contains("ermission denied"), "{stderr}");
        }
    }
}

#[test]
fn a_port_in_use_is_named_with_the_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let sample = sample();
    let (status, stdout, stderr) = failure(
        dir.path(),
        &[
            "view",
            sample.to_str().unwrap(),
            "--no-open",
            "--port",
            &port,
        ],
    );
    assert_eq!(status, 1, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains(&format!("Port {port} is already in use on 127.0.0.1")),
        "{stderr}"
    );
    assert!(stderr.contains("--port 0"), "{stderr}");
}

#[test]
fn without_the_app_view_says_how_to_get_it() {
    if option_env!("PT_SNAP_WEB_DIST").is_some_and(|d| !d.is_empty()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sample = sample();
    let (status, stdout, stderr) = failure(
        dir.path(),
        &["view", sample.to_str().unwrap(), "--no-open", "--port", "0"],
    );
    assert_eq!(status, 1, "{stderr}");
    assert!(stdout.is_empty());
    assert!(stderr.contains("built without its browser app"), "{stderr}");
    assert!(stderr.contains("pip install"), "{stderr}");
    assert!(stderr.contains("PT_SNAP_WEB_DIST"), "{stderr}");
}

#[cfg(not(feature = "sql"))]
#[test]
fn without_sql_the_command_says_how_to_get_it() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        vec!["sql"],
        vec!["sql", "out", "SELECT 1"],
        vec!["sql", "out", "--query", "list", "--json"],
    ] {
        let (status, stdout, stderr) = failure(dir.path(), &args);
        assert_eq!(status, 1, "{args:?}: {stderr}");
        assert!(stdout.is_empty());
        assert!(stderr.contains("built without `pt-snap sql`"), "{stderr}");
        assert!(stderr.contains("DuckDB"), "{stderr}");
        assert!(stderr.contains("cargo install"), "{stderr}");
        if args.contains(&"--json") {
            let envelope: Value = serde_json::from_str(&stderr).unwrap();
            assert_eq!(envelope["error"]["code"], "ERROR");
        }
    }
}

#[test]
fn the_url_serves_the_app_and_with_its_token_the_file() {
    let Some(dist) = app() else { return };
    let dir = tempfile::tempdir().unwrap();
    let sample = sample();
    let viewing = Viewing::start(
        dir.path(),
        &[sample.to_str().unwrap(), "--no-open", "--port", "0"],
        &[],
    );
    assert_eq!(viewing.token.len(), 48);
    assert!(viewing.token.bytes().all(|b| b.is_ascii_hexdigit()));
    assert!(
        viewing.stdout[0].contains("snapshot_with_multi_devices.pkl (1.4 MB)"),
        "{:?}",
        viewing.stdout
    );

    // The app, as built: the page and every file of dist/.
    let (status, page) = viewing.get(&format!("/?token={}", viewing.token));
    assert_eq!(status, 200);
    assert_eq!(page, std::fs::read(dist.join("index.html")).unwrap());
    assert!(String::from_utf8_lossy(&page).contains("Content-Security-Policy"));
    for entry in std::fs::read_dir(&dist).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            let name = entry.file_name().into_string().unwrap();
            let (status, bytes) = viewing.get(&format!("/{name}"));
            assert_eq!(status, 200, "{name}");
            assert!(bytes == std::fs::read(entry.path()).unwrap(), "{name}");
        }
    }

    // The file: listed, then read whole, only with the token.
    let listed = listing(&viewing);
    assert_eq!(listed["kind"], "file");
    assert_eq!(
        listed["files"][0]["path"],
        "snapshot_with_multi_devices.pkl"
    );
    let bytes = std::fs::read(&sample).unwrap();
    assert_eq!(listed["files"][0]["size"], bytes.len());
    let (status, served) = viewing.get(&format!("/files/0?token={}", viewing.token));
    assert_eq!(status, 200);
    assert!(served == bytes);
    for target in ["/files/0", "/files", "/files/0?token=0"] {
        let (status, body) = viewing.get(target);
        assert_eq!(status, 403, "{target}");
        assert!(!body.windows(8).any(|w| bytes.starts_with(w)), "{target}");
    }

    // Listening on loopback only: every listening socket of the port is on 127.0.0.1.
    #[cfg(target_os = "linux")]
    assert_eq!(listening_addresses(viewing.port), ["127.0.0.1"]);

    let (status, stderr, _) = viewing.interrupt();
    assert!(status.success(), "{status:?}: {stderr}");
    assert!(stderr.contains("The page is open"), "{stderr}");
    assert!(
        stderr.contains("The page has read 100% (1.4 MB of 1.4 MB)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("warning: refused /files/0 to 127.0.0.1:"),
        "{stderr}"
    );
    assert!(stderr.ends_with("pt-snap view: stopped.\n"), "{stderr}");
}

/// The local addresses listening on `port`, from /proc/net/tcp and tcp6.
#[cfg(target_os = "linux")]
fn listening_addresses(port: u16) -> Vec<String> {
    let mut found = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (local, state) = (fields[1], fields[3]);
            let (address, hex_port) = local.rsplit_once(':').unwrap();
            if state != "0A" || u16::from_str_radix(hex_port, 16).unwrap() != port {
                continue;
            }
            found.push(match address.len() {
                8 => {
                    let n = u32::from_str_radix(address, 16).unwrap();
                    std::net::Ipv4Addr::from(n.swap_bytes()).to_string()
                }
                _ => format!("[{address}]"),
            });
        }
    }
    found
}

#[test]
fn another_host_is_warned_about() {
    if app().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sample = sample();
    let viewing = Viewing::start(
        dir.path(),
        &[
            sample.to_str().unwrap(),
            "--no-open",
            "--port",
            "0",
            "--host",
            "0.0.0.0",
        ],
        &[],
    );
    #[cfg(target_os = "linux")]
    assert_eq!(listening_addresses(viewing.port), ["0.0.0.0"]);
    let (_, stderr, stdout) = viewing.interrupt();
    assert!(
        stdout.contains("this machine's name or address"),
        "{stdout}"
    );
    assert!(
        stderr.starts_with("warning: listening on 0.0.0.0:"),
        "{stderr}"
    );
    assert!(stderr.contains("ssh -L"), "{stderr}");
}

#[test]
fn a_directory_is_served_as_a_set() {
    if app().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job");
    std::fs::create_dir(&job).unwrap();
    for rank in 0..3 {
        std::fs::copy(sample(), job.join(format!("rank{rank}.pkl"))).unwrap();
    }
    let viewing = Viewing::start(dir.path(), &["job", "--no-open", "--port", "0"], &[]);
    assert!(
        viewing.stdout[0].contains("job/ (3 files, 4.1 MB)"),
        "{:?}",
        viewing.stdout
    );
    let listed = listing(&viewing);
    assert_eq!(listed["kind"], "directory");
    let paths: Vec<&str> = listed["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["job/rank0.pkl", "job/rank1.pkl", "job/rank2.pkl"]);
    for i in 0..3 {
        let (status, _) = viewing.get(&format!("/files/{i}?token={}", viewing.token));
        assert_eq!(status, 200);
    }
    let (_, stderr, _) = viewing.interrupt();
    assert!(
        stderr.contains("The page has read job/rank1.pkl (1.4 MB)."),
        "{stderr}"
    );
}

#[test]
fn no_file_and_no_focus_serves_the_app_alone() {
    if app().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let viewing = Viewing::start(dir.path(), &["--no-open", "--port", "0"], &[]);
    assert!(
        viewing.stdout[0].contains("the app"),
        "{:?}",
        viewing.stdout
    );
    assert_eq!(listing(&viewing)["kind"], "nothing");
    viewing.interrupt();
}

#[cfg(unix)]
#[test]
fn the_browser_is_started_with_the_url_unless_told_not_to() {
    if app().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("opened");
    let browser = dir.path().join("browser.sh");
    std::fs::write(
        &browser,
        format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > {}\n", record.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
    let sample = sample();
    let browser = browser.to_str().unwrap();
    let viewing = Viewing::start(
        dir.path(),
        &[sample.to_str().unwrap(), "--port", "0"],
        &[("BROWSER", browser)],
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !record.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(100));
    let opened = std::fs::read_to_string(&record).unwrap();
    assert_eq!(
        opened.trim(),
        format!("http://127.0.0.1:{}/?token={}", viewing.port, viewing.token)
    );
    let (_, stderr, _) = viewing.interrupt();
    assert!(
        stderr.contains(&format!("Opening it with {browser}")),
        "{stderr}"
    );

    // --no-open: the same $BROWSER is not started; no display and no $BROWSER: none is.
    std::fs::remove_file(&record).unwrap();
    let viewing = Viewing::start(
        dir.path(),
        &[sample.to_str().unwrap(), "--port", "0", "--no-open"],
        &[("BROWSER", browser)],
    );
    let quiet = Viewing::start(dir.path(), &[sample.to_str().unwrap(), "--port", "0"], &[]);
    std::thread::sleep(Duration::from_millis(500));
    assert!(!record.exists());
    let port = quiet.port;
    let (_, stderr, _) = quiet.interrupt();
    assert!(stderr.contains("No display here"), "{stderr}");
    assert!(
        stderr.contains(&format!("ssh -L {port}:127.0.0.1:{port}")),
        "{stderr}"
    );
    viewing.interrupt();
}
