//! What a snapshot file holds, told by its first bytes rather than its name.
//!
//! Snapshots arrive as `_dump_snapshot`'s pickle, as JSON (memory_viz reads those, and people
//! write them to avoid pickle-protocol trouble), and compressed with gzip, zstd or bzip2.
//! Each is recognised by its magic bytes; a compressed stream is decompressed as it is read
//! (no temporary file, no second copy; `streams.rs`) and its content recognised the same way.

use std::cell::Cell;
use std::fmt;
use std::io::{self, Read};
use std::rc::Rc;

/// The compressions recognised around a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Gzip,
    Zstd,
    Bzip2,
}

impl Compression {
    pub fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Bzip2 => "bzip2",
        }
    }
}

/// What the first bytes of a stream say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detected {
    Compressed(Compression),
    Json,
    /// A pickle. `magic` when it starts with PROTO 2–5; protocol 0/1 pickles have no magic,
    /// only an opcode that can begin one.
    Pickle {
        magic: bool,
    },
    /// Nothing this decoder reads (see [`describe_start`]).
    Unknown,
}

/// Bytes enough to tell every kind apart.
pub const HEAD_LEN: usize = 16;

/// Opcodes that can begin a protocol 0 or 1 pickle (a value, a MARK, or a class reference,
/// which must still be refused as an unsafe pickle rather than called unknown).
const PROTOCOL_0_STARTS: &[u8] = b"(}])NILFSVJKMGTUXci";

impl Detected {
    pub fn of(head: &[u8]) -> Detected {
        match head {
            [0x1f, 0x8b, ..] => Detected::Compressed(Compression::Gzip),
            [0x28, 0xb5, 0x2f, 0xfd, ..] => Detected::Compressed(Compression::Zstd),
            // A skippable frame (magic 0x184D2A50–5F) may come before the first zstd frame.
            [0x50..=0x5f, 0x2a, 0x4d, 0x18, ..] => Detected::Compressed(Compression::Zstd),
            [b'B', b'Z', b'h', b'1'..=b'9', ..] => Detected::Compressed(Compression::Bzip2),
            [0x80, 2..=5, ..] => Detected::Pickle { magic: true },
            [first, ..] if PROTOCOL_0_STARTS.contains(first) => Detected::Pickle { magic: false },
            _ => match json_start(head) {
                Some(b'{' | b'[') => Detected::Json,
                _ => Detected::Unknown,
            },
        }
    }

    /// Whether the content alone, whatever the file is called, makes it a snapshot input.
    pub fn is_certain(self) -> bool {
        !matches!(self, Detected::Pickle { magic: false } | Detected::Unknown)
    }
}

/// The first byte of a JSON text after whitespace and a UTF-8 byte-order mark.
fn json_start(head: &[u8]) -> Option<u8> {
    let head = head.strip_prefix(&[0xef, 0xbb, 0xbf]).unwrap_or(head);
    head.iter()
        .copied()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}

/// What a person should hear about bytes that are no snapshot: known formats by name, else
/// the bytes themselves.
pub fn describe_start(head: &[u8]) -> String {
    const KNOWN: &[(&[u8], &str)] = &[
        (b"PK\x03\x04", "a ZIP archive (torch.save writes those; a snapshot is written by torch.cuda.memory._dump_snapshot)"),
        (b"SQLite format 3\0", "a SQLite database (open it with the query commands instead)"),
        (b"\xfd7zXZ\0", "an xz stream (decompress it first: gzip, zstd and bzip2 are read directly)"),
        (b"\x04\x22\x4d\x18", "an lz4 frame (decompress it first: gzip, zstd and bzip2 are read directly)"),
        (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
        (b"%PDF", "a PDF document"),
        (b"\x89HDF", "an HDF5 file"),
    ];
    if head.is_empty() {
        return "the file is empty".into();
    }
    for (magic, what) in KNOWN {
        if head.starts_with(magic) {
            return format!("it is {what}");
        }
    }
    let hex: Vec<String> = head.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let text: String = head
        .iter()
        .take(12)
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                char::from(b)
            } else {
                '.'
            }
        })
        .collect();
    let printable = head
        .iter()
        .take(12)
        .filter(|b| b.is_ascii_graphic() || **b == b' ')
        .count();
    if printable * 4 >= head.len().min(12) * 3 {
        format!("it starts with the text {text:?}")
    } else {
        format!("it starts with the bytes {} ({text:?})", hex.join(" "))
    }
}

/// The first bytes of a stream, and the stream from its start again.
pub(crate) type Peeked<R> = (Vec<u8>, io::Chain<io::Cursor<Vec<u8>>, R>);

/// Reads up to [`HEAD_LEN`] bytes, and a reader that still yields them first.
pub(crate) fn peek<R: Read>(mut reader: R) -> io::Result<Peeked<R>> {
    let mut head = Vec::with_capacity(HEAD_LEN);
    while head.len() < HEAD_LEN {
        let mut chunk = [0; HEAD_LEN];
        let want = HEAD_LEN - head.len();
        match reader.read(&mut chunk[..want]) {
            Ok(0) => break,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok((head.clone(), io::Cursor::new(head).chain(reader)))
}

/// Counts the bytes read through it, for progress in bytes of the file as given.
pub(crate) struct Counted<R> {
    pub inner: R,
    pub count: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

/// How a decoded file was stored, for messages and metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputShape {
    pub compression: Option<Compression>,
    pub json: bool,
}

impl fmt::Display for InputShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.json { "JSON" } else { "pickle" })?;
        if let Some(c) = self.compression {
            write!(f, " ({})", c.name())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_their_first_bytes() {
        let cases: [(&[u8], Detected); 10] = [
            (b"\x1f\x8b\x08", Detected::Compressed(Compression::Gzip)),
            (
                b"\x28\xb5\x2f\xfd\x00",
                Detected::Compressed(Compression::Zstd),
            ),
            (
                b"\x5a\x2a\x4d\x18\x00",
                Detected::Compressed(Compression::Zstd),
            ),
            (b"BZh91AY", Detected::Compressed(Compression::Bzip2)),
            (b"\x80\x04\x95", Detected::Pickle { magic: true }),
            (b"(dp0\n", Detected::Pickle { magic: false }),
            (b"\xef\xbb\xbf \n{\"segments\"", Detected::Json),
            (b"  [ {", Detected::Json),
            (b"PK\x03\x04", Detected::Unknown),
            (b"", Detected::Unknown),
        ];
        for (start, kind) in cases {
            assert_eq!(Detected::of(start), kind, "{start:?}");
        }
        assert!(Detected::Json.is_certain() && !Detected::Pickle { magic: false }.is_certain());
    }

    #[test]
    fn unknown_starts_are_described() {
        assert!(describe_start(b"PK\x03\x04rest").contains("ZIP archive"));
        assert!(describe_start(b"SQLite format 3\0").contains("SQLite database"));
        assert_eq!(
            describe_start(b"hello, world"),
            "it starts with the text \"hello, world\""
        );
        assert_eq!(
            describe_start(b"\x00\x01\x02\xff"),
            "it starts with the bytes 00 01 02 ff (\"....\")"
        );
        assert_eq!(describe_start(b""), "the file is empty");
    }
}
