//! The little of HTTP/1.1 a browser needs from this server: GET and HEAD without a body,
//! persistent connections, and one byte range per request.

use std::io::{self, BufRead, Read, Write};

/// The longest request head read (request line and headers); a browser's are ~1 KB.
const MAX_HEAD: u64 = 16 * 1024;

/// A request's head.
#[derive(Debug)]
pub struct Request {
    pub method: String,
    /// The path part of the target, exactly as sent (not decoded).
    pub path: String,
    /// The query part of the target, without its `?` (not decoded).
    pub query: String,
    /// Names in lower case.
    pub headers: Vec<(String, String)>,
    /// HTTP/1.1 or later, where connections persist unless told otherwise.
    pub http11: bool,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The value of the query parameter `name`, as sent.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .split('&')
            .filter_map(|p| p.split_once('='))
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v)
    }

    /// Whether the connection stays open for another request after this one.
    pub fn keep_alive(&self) -> bool {
        let connection = self
            .header("connection")
            .map(str::to_ascii_lowercase)
            .unwrap_or_default();
        if self.http11 {
            !connection.split(',').any(|t| t.trim() == "close")
        } else {
            connection.split(',').any(|t| t.trim() == "keep-alive")
        }
    }

    /// A request that says it has a body, which this server never reads.
    pub fn has_body(&self) -> bool {
        self.header("transfer-encoding").is_some()
            || self
                .header("content-length")
                .is_some_and(|n| n.trim() != "0")
    }
}

/// Why a request could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The connection ended (or idled out) between requests: nothing to answer.
    Closed,
    /// Not a request this server understands: answered 400, then the connection closed.
    Malformed(&'static str),
}

/// The next request on a connection.
pub fn read_request(reader: &mut impl BufRead) -> Result<Request, ReadError> {
    let mut head = Read::take(reader, MAX_HEAD);
    let mut line = String::new();
    // Browsers may send an empty line between requests (RFC 9112 §2.2 says to ignore it).
    loop {
        line.clear();
        match head.read_line(&mut line) {
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                return Err(ReadError::Malformed("request line is not UTF-8"))
            }
            Ok(0) | Err(_) => return Err(ReadError::Closed),
            Ok(_) if line.trim_end_matches(['\r', '\n']).is_empty() => continue,
            Ok(_) => break,
        }
    }
    if !line.ends_with('\n') {
        return Err(ReadError::Malformed("request line too long"));
    }
    let mut parts = line.trim_end_matches(['\r', '\n']).split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ReadError::Malformed("bad request line"));
    };
    let http11 = match version {
        "HTTP/1.1" => true,
        "HTTP/1.0" => false,
        _ => return Err(ReadError::Malformed("unsupported HTTP version")),
    };
    // Origin form only: a path from the root.
    if !target.starts_with('/') {
        return Err(ReadError::Malformed("request target is not a path"));
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        match head.read_line(&mut line) {
            Ok(0) | Err(_) => return Err(ReadError::Malformed("request head cut short")),
            Ok(_) => {}
        }
        if !line.ends_with('\n') {
            return Err(ReadError::Malformed("request head too long"));
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(ReadError::Malformed("bad header"));
        };
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    Ok(Request {
        method: method.to_owned(),
        path: path.to_owned(),
        query: query.to_owned(),
        headers,
        http11,
    })
}

/// What a `Range` header asks of a file of `len` bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum Range {
    /// The whole file (no header, or one this server does not take: several ranges, another
    /// unit, bad syntax — RFC 9110 lets a server ignore those).
    Whole,
    /// Bytes `start..end` (end exclusive).
    Part { start: u64, end: u64 },
    /// A range that starts past the end: 416.
    Unsatisfiable,
}

pub fn range(header: Option<&str>, len: u64) -> Range {
    let Some(spec) = header.and_then(|h| h.trim().strip_prefix("bytes=")) else {
        return Range::Whole;
    };
    if spec.contains(',') {
        return Range::Whole;
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return Range::Whole;
    };
    let number = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    match (first.is_empty(), number(first), number(last)) {
        // `bytes=-N`: the last N bytes.
        (true, _, Some(n)) if n > 0 => Range::Part {
            start: len.saturating_sub(n),
            end: len,
        },
        (true, _, _) => Range::Whole,
        (false, Some(start), _) if start >= len => Range::Unsatisfiable,
        (false, Some(start), None) if last.is_empty() => Range::Part { start, end: len },
        (false, Some(start), Some(last)) if last >= start => Range::Part {
            start,
            end: last.saturating_add(1).min(len),
        },
        _ => Range::Whole,
    }
}

/// The headers every answer carries: the page is cross-origin isolated (COOP + COEP, so it
/// has `SharedArrayBuffer`: its worker reads the file through shared slots and a question
/// can be interrupted), nothing here may be embedded or read by another origin (CORP), no
/// type is guessed, and the page's URL, which holds the token, is never sent on.
const COMMON: &str = "Cross-Origin-Opener-Policy: same-origin\r\n\
    Cross-Origin-Embedder-Policy: require-corp\r\n\
    Cross-Origin-Resource-Policy: same-origin\r\n\
    X-Content-Type-Options: nosniff\r\n\
    Referrer-Policy: no-referrer\r\n";

/// Writes a response head; `headers` are complete `Name: value` lines without line ends.
pub fn write_head(
    out: &mut impl Write,
    status: u16,
    headers: &[String],
    content_length: u64,
    keep_alive: bool,
) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n{COMMON}", reason(status));
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str(&format!("Content-Length: {content_length}\r\n"));
    head.push_str(if keep_alive {
        "Connection: keep-alive\r\n\r\n"
    } else {
        "Connection: close\r\n\r\n"
    });
    out.write_all(head.as_bytes())
}

/// A short plain-text answer (errors, and the manifest's JSON with its own type).
pub fn write_text(
    out: &mut impl Write,
    status: u16,
    content_type: &str,
    body: &[u8],
    head_only: bool,
    keep_alive: bool,
) -> io::Result<()> {
    write_head(
        out,
        status,
        &[
            format!("Content-Type: {content_type}"),
            "Cache-Control: no-store".to_owned(),
        ],
        body.len() as u64,
        keep_alive,
    )?;
    if !head_only {
        out.write_all(body)?;
    }
    out.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        206 => "Partial Content",
        304 => "Not Modified",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        416 => "Range Not Satisfiable",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Request, ReadError> {
        read_request(&mut io::BufReader::new(text.as_bytes()))
    }

    #[test]
    fn request_heads() {
        let r = read("GET /files/0?token=ab&x=1 HTTP/1.1\r\nHost: h\r\nRange: bytes=0-9\r\n\r\n")
            .unwrap();
        assert_eq!((r.method.as_str(), r.path.as_str()), ("GET", "/files/0"));
        assert_eq!(r.param("token"), Some("ab"));
        assert_eq!(r.param("tok"), None);
        assert_eq!(r.header("range"), Some("bytes=0-9"));
        assert!(r.keep_alive());
        let r = read("GET / HTTP/1.0\r\n\r\n").unwrap();
        assert!(!r.keep_alive());
        let r = read("\r\nGET / HTTP/1.1\r\nConnection: close\r\n\r\n").unwrap();
        assert!(!r.keep_alive());
        assert!(matches!(read(""), Err(ReadError::Closed)));
        for bad in [
            "GET /\r\n\r\n",
            "GET / HTTP/2\r\n\r\n",
            "GET http://evil/ HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.1\r\nno colon\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: h\r\n",
        ] {
            assert!(matches!(read(bad), Err(ReadError::Malformed(_))), "{bad:?}");
        }
        let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(MAX_HEAD as usize));
        assert!(matches!(read(&long), Err(ReadError::Malformed(_))));
        let many = format!("GET / HTTP/1.1\r\n{}\r\n", "X-A: b\r\n".repeat(4000));
        assert!(matches!(read(&many), Err(ReadError::Malformed(_))));
    }

    #[test]
    fn ranges() {
        let part = |start, end| Range::Part { start, end };
        assert_eq!(range(None, 10), Range::Whole);
        assert_eq!(range(Some("bytes=0-3"), 10), part(0, 4));
        assert_eq!(range(Some("bytes=4-"), 10), part(4, 10));
        assert_eq!(range(Some("bytes=4-100"), 10), part(4, 10));
        assert_eq!(range(Some("bytes=-3"), 10), part(7, 10));
        assert_eq!(range(Some("bytes=-30"), 10), part(0, 10));
        assert_eq!(range(Some("bytes=10-"), 10), Range::Unsatisfiable);
        assert_eq!(range(Some("bytes=0-"), 0), Range::Unsatisfiable);
        for ignored in [
            "bytes=0-1,3-4",
            "bytes=3-1",
            "bytes=-0",
            "bytes=+1-2",
            "items=0-1",
            "bytes=a-b",
            "bytes=99999999999999999999-",
        ] {
            assert_eq!(range(Some(ignored), 10), Range::Whole, "{ignored}");
        }
    }
}
