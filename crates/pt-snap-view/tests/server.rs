//! The server on a real socket: what it answers with and without the token, and that no
//! request reaches a file outside the app and what it was given (`..`, encoded slashes,
//! links, a file replaced after the start).

use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};

use pt_snap_view::app::Asset;
use pt_snap_view::{App, Event, Served, Server};

static ASSETS: &[Asset] = &[
    Asset {
        path: "index.html",
        content_type: "text/html; charset=utf-8",
        etag: "\"index\"",
        bytes: b"<!DOCTYPE html><title>the app</title>",
    },
    Asset {
        path: "snippets/a/inline0.js",
        content_type: "text/javascript; charset=utf-8",
        etag: "\"js\"",
        bytes: b"export const a = 1;",
    },
];

/// What no answer may ever contain.
const SECRET: &str = "the secret outside what was served";

struct Running {
    addr: SocketAddr,
    token: String,
    events: Arc<Mutex<Vec<String>>>,
}

fn start(served: Served) -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let server = Server::new(listener, App::new(ASSETS), served).unwrap();
    let addr = server.local_addr().unwrap();
    let token = server.token().to_owned();
    assert_eq!(token.len(), 48);
    assert_eq!(
        server.url().unwrap(),
        format!("http://127.0.0.1:{}/?token={token}", addr.port())
    );
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&events);
    std::thread::spawn(move || {
        server.serve(move |e| {
            log.lock().unwrap().push(match e {
                Event::Listed { .. } => "listed".to_owned(),
                Event::Sent { file, start, end } => format!("sent {file} {start}..{end}"),
                Event::Refused { path, .. } => format!("refused {path}"),
                Event::Unavailable { file, .. } => format!("unavailable {file}"),
            })
        })
    });
    Running {
        addr,
        token,
        events,
    }
}

#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Reads one answer off `stream` (its body by Content-Length; none for HEAD).
fn read_answer(stream: &mut TcpStream, head_only: bool) -> Answer {
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(
            stream.read(&mut byte).unwrap(),
            1,
            "answer cut short: {head:?}"
        );
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_owned(), v.trim().to_owned())
        })
        .collect();
    let len: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map_or(0, |(_, v)| v.parse().unwrap());
    let mut body = vec![0; if head_only { 0 } else { len }];
    stream.read_exact(&mut body).unwrap();
    Answer {
        status,
        headers,
        body,
    }
}

/// One request on a new connection, the target sent exactly as given.
fn raw(addr: SocketAddr, request: &str) -> Answer {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    read_answer(&mut stream, request.starts_with("HEAD "))
}

fn get(addr: SocketAddr, target: &str) -> Answer {
    raw(
        addr,
        &format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
    )
}

fn write(path: &Path, text: &str) {
    fs::write(path, text).unwrap();
}

/// A directory to serve and a secret file beside it.
fn layout() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    write(&tmp.path().join("secret.txt"), SECRET);
    let run = tmp.path().join("run7");
    fs::create_dir_all(run.join("sub")).unwrap();
    write(&run.join("rank0.pkl"), "rank zero bytes");
    write(&run.join("rank1.pkl"), "rank one bytes!");
    write(&run.join("sub/deep.db"), "deep");
    tmp
}

#[test]
fn the_app_is_public_the_files_need_the_token() {
    let tmp = layout();
    let file = tmp.path().join("run7/rank0.pkl");
    let server = start(Served::file(&file).unwrap());
    let (addr, token) = (server.addr, &server.token);

    let page = get(addr, "/");
    assert_eq!(page.status, 200);
    assert_eq!(page.text(), "<!DOCTYPE html><title>the app</title>");
    assert_eq!(
        page.header("Content-Type"),
        Some("text/html; charset=utf-8")
    );
    for (name, value) in [
        ("Cross-Origin-Opener-Policy", "same-origin"),
        ("Cross-Origin-Embedder-Policy", "require-corp"),
        ("Cross-Origin-Resource-Policy", "same-origin"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
    ] {
        assert_eq!(page.header(name), Some(value), "{name}");
    }
    assert_eq!(get(addr, &format!("/?token={token}")).status, 200);
    assert_eq!(get(addr, "/index.html").text(), page.text());
    assert_eq!(
        get(addr, "/snippets/a/inline0.js").text(),
        "export const a = 1;"
    );
    // Revalidated, not sent again.
    let again = raw(
        addr,
        "GET / HTTP/1.1\r\nIf-None-Match: \"index\"\r\nConnection: close\r\n\r\n",
    );
    assert_eq!((again.status, again.body.len()), (304, 0));

    // Without the token, with a wrong one, one spelled otherwise: 403, and nothing of the file.
    let wrong = format!("{}0", &token[..token.len() - 1]);
    for target in [
        "/files".to_owned(),
        "/files/0".to_owned(),
        "/files/0?token=".to_owned(),
        format!("/files/0?token={wrong}"),
        format!("/files/0?token={}", token.to_uppercase()),
        format!("/files/0?token={token}x"),
        format!("/files/0?Token={token}"),
        format!("/files/0?token%3D{token}"),
        format!("/files?token={}", &token[..20]),
    ] {
        let answer = get(addr, &target);
        assert_eq!(answer.status, 403, "{target}");
        assert!(!answer.text().contains("rank zero"), "{target}");
        assert!(answer.text().contains("token"), "{target}");
    }
    let refused = raw(addr, "HEAD /files/0 HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(refused.status, 403);

    // With it: the listing, then the bytes.
    let listing = get(addr, &format!("/files?token={token}"));
    assert_eq!(listing.status, 200);
    assert_eq!(listing.header("Cache-Control"), Some("no-store"));
    let listing: serde_json::Value = serde_json::from_slice(&listing.body).unwrap();
    assert_eq!(listing["kind"], "file");
    assert_eq!(listing["name"], "rank0.pkl");
    assert_eq!(listing["files"][0]["path"], "rank0.pkl");
    assert_eq!(listing["files"][0]["size"], 15);
    assert_eq!(listing["files"][0]["url"], "files/0");
    assert!(listing["files"][0]["modified_ms"].as_u64().unwrap() > 0);
    assert_eq!(listing["files"].as_array().unwrap().len(), 1);
    let bytes = get(addr, &format!("/files/0?x=1&token={token}"));
    assert_eq!(
        (bytes.status, bytes.text().as_str()),
        (200, "rank zero bytes")
    );
    assert_eq!(bytes.header("Accept-Ranges"), Some("bytes"));
    assert_eq!(
        bytes.header("Cross-Origin-Resource-Policy"),
        Some("same-origin")
    );

    let events = server.events.lock().unwrap().clone();
    assert!(events.contains(&"refused /files".to_owned()), "{events:?}");
    assert!(events.contains(&"listed".to_owned()), "{events:?}");
    assert!(events.contains(&"sent 0 0..15".to_owned()), "{events:?}");
}

#[test]
fn ranges_and_persistent_connections() {
    let tmp = layout();
    let server = start(Served::file(&tmp.path().join("run7/rank1.pkl")).unwrap());
    let token = &server.token;
    let mut stream = TcpStream::connect(server.addr).unwrap();
    let mut ask = |request: String| {
        stream.write_all(request.as_bytes()).unwrap();
        read_answer(&mut stream, request.starts_with("HEAD "))
    };
    let part = ask(format!(
        "GET /files/0?token={token} HTTP/1.1\r\nRange: bytes=5-7\r\n\r\n"
    ));
    assert_eq!((part.status, part.text().as_str()), (206, "one"));
    assert_eq!(part.header("Content-Range"), Some("bytes 5-7/15"));
    let tail = ask(format!(
        "GET /files/0?token={token} HTTP/1.1\r\nRange: bytes=-6\r\n\r\n"
    ));
    assert_eq!((tail.status, tail.text().as_str()), (206, "bytes!"));
    let from = ask(format!(
        "GET /files/0?token={token} HTTP/1.1\r\nRange: bytes=9-\r\n\r\n"
    ));
    assert_eq!(from.text(), "bytes!");
    let past = ask(format!(
        "GET /files/0?token={token} HTTP/1.1\r\nRange: bytes=15-\r\n\r\n"
    ));
    assert_eq!(
        (past.status, past.header("Content-Range")),
        (416, Some("bytes */15"))
    );
    let head = ask(format!("HEAD /files/0?token={token} HTTP/1.1\r\n\r\n"));
    assert_eq!(
        (head.status, head.header("Content-Length")),
        (200, Some("15"))
    );
    let whole = ask(format!(
        "GET /files/0?token={token} HTTP/1.1\r\nRange: bytes=0-1,4-5\r\n\r\n"
    ));
    assert_eq!(
        (whole.status, whole.text().as_str()),
        (200, "rank one bytes!")
    );
    let posted = ask("POST /files HTTP/1.1\r\n\r\n".to_owned());
    assert_eq!(
        (posted.status, posted.header("Allow")),
        (405, Some("GET, HEAD"))
    );
    // Still the same connection, until a request it cannot read.
    let bad = ask("GET files HTTP/1.1\r\n\r\n".to_owned());
    assert_eq!(bad.status, 400);
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
}

#[test]
fn no_path_leads_out_of_what_was_served() {
    let tmp = layout();
    let run = tmp.path().join("run7");
    #[cfg(unix)]
    {
        use std::os::unix::fs::symlink;
        symlink(tmp.path().join("secret.txt"), run.join("rank9.pkl")).unwrap();
        symlink(tmp.path(), run.join("up")).unwrap();
        symlink(run.join("rank1.pkl"), run.join("again.pkl")).unwrap();
    }
    let served = Served::directory(&run).unwrap();
    let server = start(served);
    let (addr, token) = (server.addr, &server.token);
    let listing: serde_json::Value =
        serde_json::from_slice(&get(addr, &format!("/files?token={token}")).body).unwrap();
    let paths: Vec<&str> = listing["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    let mut expected = vec!["run7/rank0.pkl", "run7/rank1.pkl", "run7/sub/deep.db"];
    if cfg!(unix) {
        expected.insert(0, "run7/again.pkl");
        let left_out = listing["left_out"].to_string();
        assert!(
            left_out.contains("run7/rank9.pkl (a link out of the directory)"),
            "{left_out}"
        );
        assert!(left_out.contains("run7/up"), "{left_out}");
    }
    assert_eq!(paths, expected);
    assert_eq!(listing["kind"], "directory");
    assert_eq!(listing["name"], "run7");

    let n = paths.len();
    let mut targets = vec![
        "/../secret.txt".to_owned(),
        "/../../../../etc/passwd".to_owned(),
        "/%2e%2e/secret.txt".to_owned(),
        "/%2E%2E%2Fsecret.txt".to_owned(),
        "/..%2fsecret.txt".to_owned(),
        "/..%5csecret.txt".to_owned(),
        "//secret.txt".to_owned(),
        "/./index.html".to_owned(),
        "/snippets/a/../../index.html".to_owned(),
        "/snippets%2fa%2finline0.js".to_owned(),
        "/run7/rank0.pkl".to_owned(),
        "/secret.txt".to_owned(),
        "/etc/passwd".to_owned(),
        "/files/../../secret.txt".to_owned(),
    ];
    for file in [
        "..%2f..%2fsecret.txt",
        "..%2Fsecret.txt",
        "../secret.txt",
        "0/../../secret.txt",
        "0%2f..%2f..%2fsecret.txt",
        "%30",
        "00",
        "-1",
        "+0",
        "0.0",
        "0x0",
        "run7/rank0.pkl",
        "rank0.pkl",
        "secret.txt",
        &n.to_string(),
        "4294967296",
    ] {
        targets.push(format!("/files/{file}?token={token}"));
        targets.push(format!("/files/{file}"));
    }
    for target in &targets {
        let answer = get(addr, target);
        assert!(
            matches!(answer.status, 403 | 404),
            "{target}: {}",
            answer.status
        );
        assert!(!answer.text().contains("secret outside"), "{target}");
        assert!(!answer.text().contains("rank zero"), "{target}");
    }
    // What is listed is served, a link inside the directory as its target.
    for (i, path) in paths.iter().enumerate() {
        let answer = get(addr, &format!("/files/{i}?token={token}"));
        assert_eq!(answer.status, 200, "{path}");
        let expected = fs::read_to_string(tmp.path().join(path)).unwrap();
        assert_eq!(answer.text(), expected, "{path}");
    }

    // A file swapped for a link to the secret after the start is not served.
    #[cfg(unix)]
    {
        let rank0 = paths.iter().position(|p| *p == "run7/rank0.pkl").unwrap();
        fs::remove_file(run.join("rank0.pkl")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("secret.txt"), run.join("rank0.pkl")).unwrap();
        let answer = get(addr, &format!("/files/{rank0}?token={token}"));
        assert_eq!(answer.status, 404);
        assert!(answer.text().contains("was replaced"), "{}", answer.text());
        assert!(!answer.text().contains("secret outside"));
        // And a directory swapped for a link out of it.
        let deep = paths.iter().position(|p| *p == "run7/sub/deep.db").unwrap();
        fs::rename(run.join("sub"), tmp.path().join("sub-moved")).unwrap();
        fs::create_dir(tmp.path().join("elsewhere")).unwrap();
        write(&tmp.path().join("elsewhere/deep.db"), SECRET);
        std::os::unix::fs::symlink(tmp.path().join("elsewhere"), run.join("sub")).unwrap();
        let answer = get(addr, &format!("/files/{deep}?token={token}"));
        assert_eq!(answer.status, 404);
        assert!(!answer.text().contains("secret outside"));
        let events = server.events.lock().unwrap().clone();
        assert!(
            events.contains(&format!("unavailable {rank0}")),
            "{events:?}"
        );
    }
}

#[test]
fn a_link_given_is_served_as_its_target_under_its_own_name() {
    let tmp = layout();
    #[cfg(unix)]
    std::os::unix::fs::symlink(
        tmp.path().join("run7/rank1.pkl"),
        tmp.path().join("latest.pkl"),
    )
    .unwrap();
    #[cfg(not(unix))]
    fs::copy(
        tmp.path().join("run7/rank1.pkl"),
        tmp.path().join("latest.pkl"),
    )
    .unwrap();
    let server = start(Served::file(&tmp.path().join("latest.pkl")).unwrap());
    let listing: serde_json::Value =
        serde_json::from_slice(&get(server.addr, &format!("/files?token={}", server.token)).body)
            .unwrap();
    assert_eq!(listing["files"][0]["path"], "latest.pkl");
    let answer = get(server.addr, &format!("/files/0?token={}", server.token));
    assert_eq!(answer.text(), "rank one bytes!");
}

#[test]
fn a_file_dumped_again_to_its_path_is_listed_at_its_size_now() {
    // `_dump_snapshot` to the same path rewrites the same file: the page reads exactly the
    // size listed, so the listing says what the file is now, and serves all of it.
    let tmp = layout();
    let path = tmp.path().join("run7/rank0.pkl");
    let server = start(Served::file(&path).unwrap());
    let listing = |server: &Running| -> serde_json::Value {
        serde_json::from_slice(&get(server.addr, &format!("/files?token={}", server.token)).body)
            .unwrap()
    };
    assert_eq!(listing(&server)["files"][0]["size"], 15);
    fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"a longer rewrite of rank zero"))
        .unwrap();
    assert_eq!(listing(&server)["files"][0]["size"], 29);
    let answer = get(server.addr, &format!("/files/0?token={}", server.token));
    assert_eq!(answer.text(), "a longer rewrite of rank zero");
}

#[test]
fn nothing_given_serves_the_app_and_an_empty_listing() {
    let server = start(Served::nothing());
    assert_eq!(get(server.addr, "/").status, 200);
    let listing: serde_json::Value =
        serde_json::from_slice(&get(server.addr, &format!("/files?token={}", server.token)).body)
            .unwrap();
    assert_eq!(listing["kind"], "nothing");
    assert_eq!(listing["files"].as_array().unwrap().len(), 0);
    assert_eq!(
        get(server.addr, &format!("/files/0?token={}", server.token)).status,
        404
    );
}

#[test]
fn what_cannot_be_served_is_refused_at_the_start() {
    let tmp = layout();
    assert!(Served::file(&tmp.path().join("missing.pkl")).is_err());
    assert!(Served::file(&tmp.path().join("run7")).is_err());
    assert!(Served::directory(&tmp.path().join("run7/rank0.pkl")).is_err());
    assert!(Served::directory(&tmp.path().join("missing")).is_err());
}

#[test]
fn a_large_file_is_sent_whole_in_chunks() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("big.pkl");
    let bytes: Vec<u8> = (0..9u32 << 20).map(|i| (i % 251) as u8).collect();
    fs::write(&path, &bytes).unwrap();
    let server = start(Served::file(&path).unwrap());
    let answer = get(server.addr, &format!("/files/0?token={}", server.token));
    assert_eq!(answer.body.len(), bytes.len());
    assert!(answer.body == bytes);
    let events = server.events.lock().unwrap().clone();
    let sent: Vec<&String> = events.iter().filter(|e| e.starts_with("sent")).collect();
    assert_eq!(
        sent,
        [
            "sent 0 0..4194304",
            "sent 0 4194304..8388608",
            "sent 0 8388608..9437184"
        ]
    );
}
