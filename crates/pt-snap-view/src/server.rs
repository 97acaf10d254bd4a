//! The HTTP server: the app's files to anyone who connects (they are the same in every copy
//! of the binary), the listing and the bytes of what was given only to a request whose
//! `token` query parameter is the server's (else 403), as Jupyter guards its notebooks.
//!
//! | path | answer |
//! | --- | --- |
//! | `/` | the app's `index.html` |
//! | `/<file of the app>` | that file, exactly as named (no decoding, no `..`) |
//! | `/files?token=T` | what was given and its files ([`Served::manifest`]) |
//! | `/files/<n>?token=T` | the bytes of file `n` of that list, or one range of them |
//!
//! One thread per connection (a browser keeps a few open), at most [`MAX_CONNECTIONS`].

use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::app::App;
use crate::http::{self, Range, ReadError, Request};
use crate::served::Served;

/// Connections served at once; more are answered 503 and closed.
pub const MAX_CONNECTIONS: usize = 64;
/// A connection idle this long between requests is closed.
const IDLE: Duration = Duration::from_secs(60);
/// A file is sent this many bytes at a time, each reported as an [`Event::Sent`].
const CHUNK: u64 = 4 << 20;

/// What the server did, for the terminal.
#[derive(Debug)]
pub enum Event<'a> {
    /// A page with the token asked what is served.
    Listed { peer: SocketAddr },
    /// Bytes `start..end` of file `file` were sent.
    Sent { file: usize, start: u64, end: u64 },
    /// A request for the files without the server's token, refused (403).
    Refused { peer: SocketAddr, path: &'a str },
    /// File `file` could not be opened (gone, unreadable, replaced since the start).
    Unavailable { file: usize, error: String },
}

type Events = dyn Fn(Event<'_>) + Send + Sync;

/// A bound server that has not started answering yet.
pub struct Server {
    listener: TcpListener,
    token: String,
    app: App,
    served: Arc<Served>,
}

struct Shared {
    token: String,
    app: App,
    served: Arc<Served>,
    events: Box<Events>,
    open: AtomicUsize,
}

impl Server {
    /// A server on `listener` with a fresh random token.
    pub fn new(listener: TcpListener, app: App, served: Served) -> io::Result<Server> {
        let mut bytes = [0u8; 24];
        getrandom::fill(&mut bytes).map_err(|e| io::Error::other(e.to_string()))?;
        Ok(Server {
            listener,
            token: bytes.iter().map(|b| format!("{b:02x}")).collect(),
            app,
            served: Arc::new(served),
        })
    }

    /// The token a request for the files must carry.
    pub fn token(&self) -> &str {
        &self.token
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The page's URL, with the token: through the loopback address when the server listens
    /// on every address.
    pub fn url(&self) -> io::Result<String> {
        let addr = self.local_addr()?;
        let ip = match addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        Ok(format!(
            "http://{}/?token={}",
            SocketAddr::new(ip, addr.port()),
            self.token
        ))
    }

    /// Answers connections until the process ends, telling `events` what it did.
    pub fn serve(self, events: impl Fn(Event<'_>) + Send + Sync + 'static) -> ! {
        let shared = Arc::new(Shared {
            token: self.token,
            app: self.app,
            served: self.served,
            events: Box::new(events),
            open: AtomicUsize::new(0),
        });
        loop {
            let stream = match self.listener.accept() {
                Ok((stream, _)) => stream,
                // Out of descriptors, or a connection reset before it was taken: wait a
                // moment rather than spin, and go on.
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
            };
            if shared.open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                shared.open.fetch_sub(1, Ordering::SeqCst);
                let mut stream = stream;
                let _ = http::write_text(
                    &mut stream,
                    503,
                    TEXT,
                    b"Too many connections.\n",
                    false,
                    false,
                );
                continue;
            }
            let for_thread = Arc::clone(&shared);
            let spawned = std::thread::Builder::new()
                .name("pt-snap-view".into())
                .spawn(move || {
                    connection(&for_thread, stream);
                    for_thread.open.fetch_sub(1, Ordering::SeqCst);
                });
            if spawned.is_err() {
                shared.open.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}

const TEXT: &str = "text/plain; charset=utf-8";

/// Requests on one connection, answered in turn until it closes, idles out or a request
/// cannot be read.
fn connection(shared: &Shared, stream: TcpStream) {
    let Ok(peer) = stream.peer_addr() else { return };
    let _ = stream.set_read_timeout(Some(IDLE));
    let _ = stream.set_nodelay(true);
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut out = stream;
    loop {
        let request = match http::read_request(&mut reader) {
            Ok(request) => request,
            Err(ReadError::Closed) => return,
            Err(ReadError::Malformed(why)) => {
                let _ = http::write_text(
                    &mut out,
                    400,
                    TEXT,
                    format!("{why}\n").as_bytes(),
                    false,
                    false,
                );
                return;
            }
        };
        // A body would be read as the next request: refuse and close instead.
        let keep_alive = request.keep_alive() && !request.has_body();
        match answer(shared, &request, peer, &mut out, keep_alive) {
            Ok(true) if keep_alive => {}
            _ => return,
        }
    }
}

/// Answers one request; `Ok(false)` when the connection must close (a body cut short).
fn answer(
    shared: &Shared,
    request: &Request,
    peer: SocketAddr,
    out: &mut TcpStream,
    keep_alive: bool,
) -> io::Result<bool> {
    let head_only = match request.method.as_str() {
        "GET" => false,
        "HEAD" => true,
        _ => {
            http::write_head(
                out,
                405,
                &[
                    format!("Content-Type: {TEXT}"),
                    "Allow: GET, HEAD".to_owned(),
                ],
                0,
                keep_alive,
            )?;
            return Ok(true);
        }
    };
    if request.has_body() {
        http::write_text(
            out,
            400,
            TEXT,
            b"A request with a body.\n",
            head_only,
            false,
        )?;
        return Ok(false);
    }
    let text = |out: &mut TcpStream, status: u16, body: &str| {
        http::write_text(out, status, TEXT, body.as_bytes(), head_only, keep_alive).map(|()| true)
    };
    let path = request.path.as_str();
    if path == "/files" || path.starts_with("/files/") {
        if !request
            .param("token")
            .is_some_and(|t| same(t, &shared.token))
        {
            (shared.events)(Event::Refused { peer, path });
            return text(
                out,
                403,
                "This link's token is not the one pt-snap view printed: open the URL it printed.\n",
            );
        }
        if path == "/files" {
            (shared.events)(Event::Listed { peer });
            let body = shared.served.manifest().to_string();
            http::write_text(
                out,
                200,
                "application/json",
                body.as_bytes(),
                head_only,
                keep_alive,
            )?;
            return Ok(true);
        }
        return match index(&path["/files/".len()..]) {
            Some(i) if i < shared.served.entries.len() => {
                file(shared, request, i, out, head_only, keep_alive)
            }
            _ => text(out, 404, "No such file.\n"),
        };
    }
    let name = if path == "/" {
        "index.html"
    } else {
        &path[1..]
    };
    let Some(asset) = shared.app.get(name) else {
        return text(out, 404, "Not found.\n");
    };
    let headers = [
        format!("Content-Type: {}", asset.content_type),
        format!("ETag: {}", asset.etag),
        "Cache-Control: no-cache".to_owned(),
    ];
    if request.header("if-none-match") == Some(asset.etag) {
        http::write_head(out, 304, &headers[1..], 0, keep_alive)?;
        return Ok(true);
    }
    http::write_head(out, 200, &headers, asset.bytes.len() as u64, keep_alive)?;
    if !head_only {
        out.write_all(asset.bytes)?;
    }
    Ok(true)
}

/// A file's number as the path spells it: decimal digits, no sign, no leading zero.
fn index(text: &str) -> Option<usize> {
    let canonical = !text.is_empty()
        && text.len() <= 9
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    canonical.then(|| text.parse().ok()).flatten()
}

/// Whether `given` is the token, compared in time independent of where they differ.
fn same(given: &str, token: &str) -> bool {
    given.len() == token.len()
        && given
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// File `i`, whole or the range asked for.
fn file(
    shared: &Shared,
    request: &Request,
    i: usize,
    out: &mut TcpStream,
    head_only: bool,
    keep_alive: bool,
) -> io::Result<bool> {
    let (mut file, len) = match shared.served.open(i) {
        Ok(opened) => opened,
        Err(e) => {
            let error = e.to_string();
            let body = format!("{error}\n");
            (shared.events)(Event::Unavailable { file: i, error });
            http::write_text(out, 404, TEXT, body.as_bytes(), head_only, keep_alive)?;
            return Ok(true);
        }
    };
    let mut headers = vec![
        "Content-Type: application/octet-stream".to_owned(),
        "Accept-Ranges: bytes".to_owned(),
        "Cache-Control: no-store".to_owned(),
    ];
    let (status, start, end) = match http::range(request.header("range"), len) {
        Range::Whole => (200, 0, len),
        Range::Part { start, end } => {
            headers.push(format!("Content-Range: bytes {start}-{}/{len}", end - 1));
            (206, start, end)
        }
        Range::Unsatisfiable => {
            headers.push(format!("Content-Range: bytes */{len}"));
            http::write_head(out, 416, &headers, 0, keep_alive)?;
            return Ok(true);
        }
    };
    http::write_head(out, status, &headers, end - start, keep_alive)?;
    if head_only {
        return Ok(true);
    }
    file.seek(SeekFrom::Start(start))?;
    let mut at = start;
    while at < end {
        let want = CHUNK.min(end - at);
        let sent = io::copy(&mut (&mut file).take(want), out)?;
        if sent > 0 {
            (shared.events)(Event::Sent {
                file: i,
                start: at,
                end: at + sent,
            });
        }
        at += sent;
        // The file shrank while it was sent: the answer is short of its length, so the
        // connection must end for the client to see it cut.
        if sent < want {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_numbers_are_spelled_one_way() {
        assert_eq!(index("0"), Some(0));
        assert_eq!(index("12"), Some(12));
        for bad in [
            "",
            "00",
            "01",
            "+1",
            "-1",
            "1 ",
            "%31",
            "1/",
            "../1",
            "9999999999",
            "１",
        ] {
            assert_eq!(index(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same("abc", "abc"));
        assert!(!same("abd", "abc"));
        assert!(!same("ab", "abc"));
        assert!(!same("abcd", "abc"));
        assert!(!same("", "abc"));
    }
}
