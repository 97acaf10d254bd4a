//! gzip, zstd and bzip2 streams read strictly: every checksum a stream carries is verified,
//! and nothing but another member, frame or stream of the same format may follow one.
//!
//! The content is the concatenation of all of them, as `gzip -d`, `zstd -d`, `bzip2 -d` and
//! Python's `gzip`/`bz2` modules give it: `cat a.gz b.gz` and the block-per-member files of
//! parallel compressors are legal and read whole. What follows the last one must be nothing,
//! except NUL bytes after a gzip member (tape padding, which `gzip -d` and Python's `gzip`
//! skip too). Anything else there is refused rather than ignored: a file cut and glued by a
//! failed copy is not read as if it were whole.
//!
//! Each reader fails with `InvalidData` and a message that names the member, frame or stream
//! and what was wrong (`CRC mismatch in member 1: …`); the decoder reports it as a corrupt
//! stream of that format.

use std::io::{self, BufRead, Read};

use flate2::{Crc, Decompress, FlushDecompress, Status};

/// Bytes of compressed input buffered at a time.
const CHUNK: usize = 64 * 1024;

fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

/// What the bytes after a stream's last unit are, for the refusal.
fn trailing(after: &str, rest: &[u8]) -> io::Error {
    let shown: Vec<String> = rest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    invalid(format!(
        "trailing data after {after}: bytes {}{} follow where the file should end",
        shown.join(" "),
        if rest.len() > 8 { " …" } else { "" }
    ))
}

/// `read_exact` that says what was cut short.
fn read_exact_or<R: Read>(
    r: &mut R,
    buf: &mut [u8],
    what: impl FnOnce() -> String,
) -> io::Result<()> {
    r.read_exact(buf).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => {
            invalid(format!("truncated: the file ends inside {}", what()))
        }
        _ => e,
    })
}

/// A decompressor over `reader` for `compression`'s format.
pub(crate) fn strict<'r, R: Read + 'r>(
    compression: super::Compression,
    reader: R,
) -> Box<dyn Read + 'r> {
    let reader = io::BufReader::with_capacity(CHUNK, reader);
    match compression {
        super::Compression::Gzip => Box::new(Gzip::new(reader)),
        super::Compression::Zstd => Box::new(Zstd::new(reader)),
        super::Compression::Bzip2 => Box::new(Bzip2::new(reader)),
    }
}

// ---------------------------------------------------------------------------------------
// gzip (RFC 1952)

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GzState {
    /// A member's header is next (or the end, after the first member).
    Header,
    Body,
    Trailer,
    End,
}

/// gzip members, each checked against its CRC-32 and ISIZE (and its header CRC if it has
/// one).
struct Gzip<R> {
    inner: R,
    inflate: Decompress,
    crc: Crc,
    state: GzState,
    /// Members begun so far (1-based in messages).
    member: u64,
}

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const FHCRC: u8 = 0x02;
const FEXTRA: u8 = 0x04;
const FNAME: u8 = 0x08;
const FCOMMENT: u8 = 0x10;

impl<R: BufRead> Gzip<R> {
    fn new(inner: R) -> Self {
        Gzip {
            inner,
            inflate: Decompress::new(false),
            crc: Crc::new(),
            state: GzState::Header,
            member: 0,
        }
    }

    /// Reads the next member's header; `false` at a clean end after the last member.
    fn header(&mut self) -> io::Result<bool> {
        if self.member > 0 && !self.skip_padding()? {
            return Ok(false);
        }
        self.member += 1;
        let member = self.member;
        let after = || format!("member {}", member - 1);
        if member > 1 {
            let head = self.inner.fill_buf()?;
            if head.first() != Some(&GZIP_MAGIC[0]) {
                return Err(trailing(&after(), head));
            }
        }
        let mut header_crc = Crc::new();
        let mut fixed = [0u8; 10];
        read_exact_or(&mut self.inner, &mut fixed, || {
            format!("the header of member {member}")
        })?;
        if !fixed.starts_with(&GZIP_MAGIC) {
            return Err(trailing(&after(), &fixed));
        }
        header_crc.update(&fixed);
        if fixed[2] != 8 {
            return Err(invalid(format!(
                "member {member} uses compression method {} (only 8, deflate, exists)",
                fixed[2]
            )));
        }
        let flags = fixed[3];
        if flags & 0xe0 != 0 {
            return Err(invalid(format!(
                "member {member} sets reserved header flags (0x{flags:02x})"
            )));
        }
        if flags & FEXTRA != 0 {
            let mut len = [0u8; 2];
            read_exact_or(&mut self.inner, &mut len, || {
                format!("the header of member {member}")
            })?;
            header_crc.update(&len);
            let mut left = u16::from_le_bytes(len) as usize;
            while left > 0 {
                let buf = self.inner.fill_buf()?;
                if buf.is_empty() {
                    return Err(invalid(format!(
                        "truncated: the file ends inside the header of member {member}"
                    )));
                }
                let n = buf.len().min(left);
                header_crc.update(&buf[..n]);
                self.inner.consume(n);
                left -= n;
            }
        }
        for flag in [FNAME, FCOMMENT] {
            if flags & flag == 0 {
                continue;
            }
            // A NUL-terminated text of any length, skipped as it streams by.
            loop {
                let buf = self.inner.fill_buf()?;
                if buf.is_empty() {
                    return Err(invalid(format!(
                        "truncated: the file ends inside the header of member {member}"
                    )));
                }
                let (n, done) = match buf.iter().position(|&b| b == 0) {
                    Some(i) => (i + 1, true),
                    None => (buf.len(), false),
                };
                header_crc.update(&buf[..n]);
                self.inner.consume(n);
                if done {
                    break;
                }
            }
        }
        if flags & FHCRC != 0 {
            let mut stored = [0u8; 2];
            read_exact_or(&mut self.inner, &mut stored, || {
                format!("the header of member {member}")
            })?;
            let computed = header_crc.sum() as u16;
            if u16::from_le_bytes(stored) != computed {
                return Err(invalid(format!(
                    "header CRC mismatch in member {member}: stored 0x{:04x}, computed 0x{computed:04x}",
                    u16::from_le_bytes(stored)
                )));
            }
        }
        self.inflate.reset(false);
        self.crc.reset();
        Ok(true)
    }

    /// Skips NUL padding after a member; `false` if the file ends there.
    fn skip_padding(&mut self) -> io::Result<bool> {
        let mut padded = false;
        loop {
            let buf = self.inner.fill_buf()?;
            if buf.is_empty() {
                return Ok(false);
            }
            let zeros = buf.iter().take_while(|&&b| b == 0).count();
            if zeros == 0 {
                if padded {
                    return Err(trailing(
                        &format!("member {} and its NUL padding", self.member),
                        buf,
                    ));
                }
                return Ok(true);
            }
            padded = true;
            self.inner.consume(zeros);
        }
    }

    fn trailer(&mut self) -> io::Result<()> {
        let member = self.member;
        let mut trailer = [0u8; 8];
        read_exact_or(&mut self.inner, &mut trailer, || {
            format!("the trailer of member {member} (CRC-32 and length)")
        })?;
        let stored_crc = u32::from_le_bytes(trailer[..4].try_into().expect("4 bytes"));
        let stored_len = u32::from_le_bytes(trailer[4..].try_into().expect("4 bytes"));
        if stored_crc != self.crc.sum() {
            return Err(invalid(format!(
                "CRC mismatch in member {member}: stored 0x{stored_crc:08x}, computed 0x{:08x}",
                self.crc.sum()
            )));
        }
        if stored_len != self.crc.amount() {
            return Err(invalid(format!(
                "length mismatch in member {member}: its trailer says {stored_len} bytes \
                 (mod 2^32), it holds {}",
                self.crc.amount()
            )));
        }
        Ok(())
    }
}

impl<R: BufRead> Read for Gzip<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            match self.state {
                GzState::Header => {
                    self.state = if self.header()? {
                        GzState::Body
                    } else {
                        GzState::End
                    };
                }
                GzState::Body => {
                    let input = self.inner.fill_buf()?;
                    if input.is_empty() {
                        return Err(invalid(format!(
                            "truncated: the file ends inside the compressed data of member {}",
                            self.member
                        )));
                    }
                    let (in_before, out_before) =
                        (self.inflate.total_in(), self.inflate.total_out());
                    let status = self
                        .inflate
                        .decompress(input, out, FlushDecompress::None)
                        .map_err(|e| invalid(format!("member {}: {e}", self.member)))?;
                    let consumed = (self.inflate.total_in() - in_before) as usize;
                    let produced = (self.inflate.total_out() - out_before) as usize;
                    self.inner.consume(consumed);
                    self.crc.update(&out[..produced]);
                    if status == Status::StreamEnd {
                        self.state = GzState::Trailer;
                    } else if consumed == 0 && produced == 0 {
                        // Input and room were both there: the inflater is stuck, which no
                        // valid stream makes it.
                        return Err(invalid(format!(
                            "member {}: the deflate data makes no progress",
                            self.member
                        )));
                    }
                    if produced > 0 {
                        return Ok(produced);
                    }
                }
                GzState::Trailer => {
                    self.trailer()?;
                    self.state = GzState::Header;
                }
                GzState::End => return Ok(0),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// zstd (RFC 8878)

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Whether `head` starts a skippable frame (magic 0x184D2A50–0x184D2A5F).
fn skippable(head: &[u8]) -> bool {
    matches!(head, [b, 0x2a, 0x4d, 0x18, ..] if b & 0xf0 == 0x50)
}

/// What a frame is read from: its first bytes, read to tell it from the rest and to see
/// whether it declares its size, then the file.
type Source<R> = io::Chain<io::Cursor<Vec<u8>>, R>;
type Frame<R> = ruzstd::decoding::StreamingDecoder<Source<R>, ruzstd::decoding::FrameDecoder>;

/// zstd frames and skippable frames; each frame's content checksum, when it has one, and its
/// declared content size, when it declares one, are checked.
struct Zstd<R: Read> {
    /// The frame being read; `None` between frames.
    frame: Option<Frame<R>>,
    /// The file between frames; `None` while a frame holds it.
    idle: Option<R>,
    /// Frames begun so far (1-based in messages).
    number: u64,
    /// Bytes of the current frame's content read.
    produced: u64,
    /// Whether the current frame's header states its content size.
    declares_size: bool,
}

/// Reads until `buf` is full or the input ends; how many bytes it got.
fn read_up_to<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

impl<R: Read> Zstd<R> {
    fn new(inner: R) -> Self {
        Zstd {
            frame: None,
            idle: Some(inner),
            number: 0,
            produced: 0,
            declares_size: false,
        }
    }

    /// Starts the next frame (skipping skippable ones); `false` at the end of the file.
    fn next_frame(&mut self) -> io::Result<bool> {
        let mut inner = self.idle.take().expect("between frames");
        loop {
            let after = match self.number {
                0 => "the skippable frames".to_owned(),
                n => format!("frame {n}"),
            };
            let mut magic = [0u8; 4];
            match read_up_to(&mut inner, &mut magic)? {
                0 => {
                    self.idle = Some(inner);
                    return Ok(false);
                }
                4 => {}
                n => return Err(trailing(&after, &magic[..n])),
            }
            if skippable(&magic) {
                let mut len = [0u8; 4];
                read_exact_or(&mut inner, &mut len, || "a skippable frame's header".into())?;
                let len = u64::from(u32::from_le_bytes(len));
                if io::copy(&mut (&mut inner).take(len), &mut io::sink())? < len {
                    return Err(invalid("truncated: the file ends inside a skippable frame"));
                }
                continue;
            }
            if magic != ZSTD_MAGIC {
                return Err(trailing(&after, &magic));
            }
            self.number += 1;
            self.produced = 0;
            let number = self.number;
            // The frame header descriptor: a content size field, or a single segment (whose
            // size is always stated).
            let mut head = magic.to_vec();
            let mut descriptor = [0u8; 1];
            let got = read_up_to(&mut inner, &mut descriptor)?;
            head.extend_from_slice(&descriptor[..got]);
            self.declares_size = got == 1 && (descriptor[0] >> 6 != 0 || descriptor[0] & 0x20 != 0);
            let frame = ruzstd::decoding::StreamingDecoder::new(io::Cursor::new(head).chain(inner))
                .map_err(|e| invalid(format!("frame {number}: {e}")))?;
            self.frame = Some(frame);
            return Ok(true);
        }
    }

    /// The frame just read to its end: its checksum and size.
    fn finish_frame(&mut self) -> io::Result<()> {
        let frame = self.frame.take().expect("a frame was being read");
        let number = self.number;
        let (source, decoder) = frame.into_parts();
        self.idle = Some(source.into_inner().1);
        if let Some(stored) = decoder.get_checksum_from_data() {
            let computed = decoder
                .get_calculated_checksum()
                .expect("ruzstd's hash feature is on");
            if stored != computed {
                return Err(invalid(format!(
                    "content checksum mismatch in frame {number}: stored 0x{stored:08x}, \
                     computed 0x{computed:08x}"
                )));
            }
        }
        if self.declares_size && decoder.content_size() != self.produced {
            return Err(invalid(format!(
                "frame {number} declares {} bytes of content and holds {}",
                decoder.content_size(),
                self.produced
            )));
        }
        Ok(())
    }
}

impl<R: Read> Read for Zstd<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            let Some(frame) = self.frame.as_mut() else {
                if self.idle.is_none() {
                    // A frame's start failed and took the file with it.
                    return Err(invalid("the zstd stream failed earlier"));
                }
                if self.next_frame()? {
                    continue;
                }
                return Ok(0);
            };
            let number = self.number;
            let n = frame
                .read(out)
                .map_err(|e| invalid(format!("frame {number}: {e}")))?;
            if n > 0 {
                self.produced += n as u64;
                return Ok(n);
            }
            self.finish_frame()?;
        }
    }
}

// ---------------------------------------------------------------------------------------
// bzip2

/// bzip2 streams, each checked by libbzip2's rules (every block's CRC and the stream's
/// combined CRC).
struct Bzip2<R> {
    inner: R,
    stream: Option<bzip2::Decompress>,
    /// Streams begun so far (1-based in messages).
    number: u64,
    done: bool,
}

impl<R: BufRead> Bzip2<R> {
    fn new(inner: R) -> Self {
        Bzip2 {
            inner,
            stream: None,
            number: 0,
            done: false,
        }
    }

    /// Starts the next stream; `false` at the end of the file.
    fn next_stream(&mut self) -> io::Result<bool> {
        let head = self.inner.fill_buf()?;
        if head.is_empty() {
            return Ok(false);
        }
        // The decompressor checks the rest of the magic ("BZh" and a level).
        if self.number > 0 && head[0] != b'B' {
            return Err(trailing(&format!("stream {}", self.number), head));
        }
        self.number += 1;
        self.stream = Some(bzip2::Decompress::new(false));
        Ok(true)
    }
}

impl<R: BufRead> Read for Bzip2<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() || self.done {
            return Ok(0);
        }
        loop {
            let Some(stream) = self.stream.as_mut() else {
                if !self.next_stream()? {
                    self.done = true;
                    return Ok(0);
                }
                continue;
            };
            let number = self.number;
            let input = self.inner.fill_buf()?;
            if input.is_empty() {
                return Err(invalid(format!(
                    "truncated: the file ends inside stream {number}"
                )));
            }
            let (in_before, out_before) = (stream.total_in(), stream.total_out());
            let status = stream
                .decompress(input, out)
                .map_err(|e| invalid(format!("stream {number}: {e}")))?;
            let consumed = (stream.total_in() - in_before) as usize;
            let produced = (stream.total_out() - out_before) as usize;
            self.inner.consume(consumed);
            if status == bzip2::Status::StreamEnd {
                self.stream = None;
            } else if consumed == 0 && produced == 0 {
                return Err(invalid(format!(
                    "stream {number}: the compressed data makes no progress"
                )));
            }
            if produced > 0 {
                return Ok(produced);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use pt_snap_testkit::compress::{bzip2, gzip, zstd};

    use crate::decode::{decode_slice, DecodeError};

    /// A small one-device snapshot pickle.
    fn pickle() -> Vec<u8> {
        let path = pt_snap_testkit::repo_root().join("fixtures/synthetic/synth_small_1dev.pkl");
        std::fs::read(path).unwrap()
    }

    /// What the decoder made of `bytes`, comparable across shapes.
    fn decoded(bytes: &[u8]) -> String {
        match decode_slice(bytes) {
            Ok(s) => format!("{:?}\n{:?}", s.segments, s.device_traces),
            Err(e) => panic!("refused: {e}"),
        }
    }

    /// The message of `bytes`' refusal as a corrupt `format` stream, which must contain
    /// `needle`.
    fn refused(bytes: &[u8], format: &str, needle: &str) -> String {
        match decode_slice(bytes) {
            Err(e @ DecodeError::Compression(f, _)) if f == format => {
                let message = e.to_string();
                assert!(message.contains(needle), "{message:?} lacks {needle:?}");
                message
            }
            Err(e) => panic!("expected a corrupt {format} stream ({needle}), got {e:?}"),
            Ok(_) => panic!("expected a corrupt {format} stream ({needle}), it decoded"),
        }
    }

    fn with(mut bytes: Vec<u8>, f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        f(&mut bytes);
        bytes
    }

    #[test]
    fn a_gzip_member_is_checked_whole() {
        let plain = pickle();
        let want = decoded(&plain);
        let gz = gzip(&plain);
        assert_eq!(decoded(&gz), want);
        let n = gz.len();
        // CRC-32, then ISIZE, of the trailer.
        let message = refused(
            &with(gz.clone(), |b| b[n - 8] ^= 1),
            "gzip",
            "CRC mismatch in member 1",
        );
        assert!(
            message.starts_with("corrupt gzip stream: CRC mismatch"),
            "{message}"
        );
        refused(
            &with(gz.clone(), |b| b[n - 1] ^= 0x80),
            "gzip",
            "length mismatch in member 1",
        );
        refused(
            &gz[..n - 3],
            "gzip",
            "truncated: the file ends inside the trailer of member 1",
        );
        refused(&gz[..n / 2], "gzip", "truncated");
        // Damage inside the deflate data: refused one way or another, never decoded.
        refused(&with(gz.clone(), |b| b[n / 2] ^= 0x10), "gzip", "member 1");
        let mut json = br#"{"segments": [], "device_traces": [[]]}"#.to_vec();
        json.extend_from_slice(b"   ");
        let json_gz = gzip(&json);
        let k = json_gz.len();
        // A JSON payload is read to its end anyway; its stream's fault is still named.
        refused(&with(json_gz, |b| b[k - 8] ^= 1), "gzip", "CRC mismatch");
    }

    #[test]
    fn after_gzip_members_only_members_and_nul_padding_may_follow() {
        let plain = pickle();
        let want = decoded(&plain);
        let gz = gzip(&plain);
        let garbage = with(gz.clone(), |b| b.extend_from_slice(b"garbage"));
        let message = refused(&garbage, "gzip", "trailing data after member 1");
        assert!(message.contains("67 61 72 62 61 67 65"), "{message}");
        refused(
            &with(gz.clone(), |b| b.extend_from_slice(&[0x1f])),
            "gzip",
            "truncated: the file ends inside the header of member 2",
        );
        refused(
            &with(gz.clone(), |b| {
                b.extend_from_slice(&[0x1f, 0x8c, 8, 0, 0, 0, 0, 0, 0, 0, 0])
            }),
            "gzip",
            "trailing data after member 1",
        );
        // `cat a.gz b.gz`: the payload goes on in the second member, past the pickle's STOP,
        // where it is ignored as in a plain file; the second member is checked all the same.
        let second = gzip(b"more bytes, not a pickle");
        let two = with(gz.clone(), |b| b.extend_from_slice(&second));
        assert_eq!(decoded(&two), want);
        let m = two.len();
        refused(
            &with(two, |b| b[m - 8] ^= 1),
            "gzip",
            "CRC mismatch in member 2",
        );
        // NUL padding after the last member, as gzip(1) and Python's gzip skip it.
        let padded = with(gz.clone(), |b| b.extend_from_slice(&[0; 1000]));
        assert_eq!(decoded(&padded), want);
        let padded_then = with(padded, |b| b.push(7));
        refused(
            &padded_then,
            "gzip",
            "trailing data after member 1 and its NUL padding",
        );
    }

    #[test]
    fn gzip_headers_are_read_by_their_flags() {
        let plain = pickle();
        let want = decoded(&plain);
        let mut enc = flate2::GzBuilder::new()
            .filename("snapshot.pickle")
            .comment("a comment")
            .extra(vec![1, 2, 3, 4, 5])
            .write(Vec::new(), flate2::Compression::fast());
        enc.write_all(&plain).unwrap();
        let named = enc.finish().unwrap();
        assert_eq!(decoded(&named), want);
        // FHCRC: the low 16 bits of the header's CRC-32, after the 10 fixed bytes here.
        let gz = gzip(&plain);
        let header = with(gz[..10].to_vec(), |h| h[3] |= 0x02);
        let crc16 = (crc32(&header) as u16).to_le_bytes();
        let checked = [&header[..], &crc16, &gz[10..]].concat();
        assert_eq!(decoded(&checked), want);
        let wrong = [&header[..], &[crc16[0] ^ 1, crc16[1]], &gz[10..]].concat();
        refused(&wrong, "gzip", "header CRC mismatch in member 1");
        refused(
            &with(gz.clone(), |b| b[3] |= 0x20),
            "gzip",
            "reserved header flags",
        );
        refused(&with(gz, |b| b[2] = 7), "gzip", "compression method 7");
    }

    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = flate2::Crc::new();
        crc.update(bytes);
        crc.sum()
    }

    /// `zstd --check` (v1.5.4) of `pickle.dumps({}, protocol=4)`: single segment, content
    /// size 5 declared, one raw block, XXH64 checksum 0x7ca8f2f2.
    const ZSTD_CLI_EMPTY_DICT: [u8; 18] = [
        0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x05, 0x29, 0x00, 0x00, 0x80, 0x04, 0x7d, 0x94, 0x2e, 0xf2,
        0xf2, 0xa8, 0x7c,
    ];

    #[test]
    fn a_zstd_frame_is_checked_whole() {
        let cli = ZSTD_CLI_EMPTY_DICT.to_vec();
        assert_eq!(decoded(&cli), decoded(b"\x80\x04}\x94."));
        refused(
            &with(cli.clone(), |b| b[15] ^= 1),
            "zstd",
            "content checksum mismatch in frame 1",
        );
        // The declared content size (5) against what the frame holds.
        refused(&with(cli.clone(), |b| b[5] = 6), "zstd", "frame 1");
        refused(&cli[..16], "zstd", "frame 1");
        let plain = pickle();
        let want = decoded(&plain);
        let z = zstd(&plain);
        assert_eq!(decoded(&z), want);
        let n = z.len();
        refused(
            &with(z.clone(), |b| b[n - 2] ^= 4),
            "zstd",
            "content checksum mismatch in frame 1",
        );
        refused(&z[..n - 2], "zstd", "frame 1");
    }

    #[test]
    fn after_zstd_frames_only_frames_may_follow() {
        let plain = pickle();
        let want = decoded(&plain);
        let z = zstd(&plain);
        refused(
            &with(z.clone(), |b| b.extend_from_slice(b"garbage")),
            "zstd",
            "trailing data after frame 1",
        );
        refused(
            &with(z.clone(), |b| b.extend_from_slice(&[0x28, 0xb5])),
            "zstd",
            "trailing data after frame 1",
        );
        refused(
            &with(z.clone(), |b| b.extend_from_slice(&[0; 4])),
            "zstd",
            "trailing data after frame 1",
        );
        let two = with(z.clone(), |b| b.extend_from_slice(&ZSTD_CLI_EMPTY_DICT));
        assert_eq!(decoded(&two), want);
        let m = two.len();
        refused(
            &with(two, |b| b[m - 3] ^= 1),
            "zstd",
            "content checksum mismatch in frame 2",
        );
        // Skippable frames (magic 0x184D2A5?, a length, that many bytes) before and after.
        let skip = [0x5e, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3];
        let around = [&skip[..], &z, &skip].concat();
        assert_eq!(decoded(&around), want);
        refused(&[&z[..], &skip[..10]].concat(), "zstd", "skippable frame");
    }

    #[test]
    fn a_bzip2_stream_is_checked_whole() {
        let plain = pickle();
        let want = decoded(&plain);
        let bz = bzip2(&plain);
        assert_eq!(decoded(&bz), want);
        let n = bz.len();
        // The first block's stored CRC (bytes 10..14: after "BZh9" and the block magic), and
        // the stream's combined CRC near its end.
        refused(&with(bz.clone(), |b| b[11] ^= 1), "bzip2", "stream 1");
        refused(&with(bz.clone(), |b| b[n - 2] ^= 1), "bzip2", "stream 1");
        refused(
            &bz[..n - 1],
            "bzip2",
            "truncated: the file ends inside stream 1",
        );
        refused(
            &with(bz.clone(), |b| b.extend_from_slice(b"garbage")),
            "bzip2",
            "trailing data after stream 1",
        );
        refused(
            &with(bz.clone(), |b| b.push(0)),
            "bzip2",
            "trailing data after stream 1",
        );
        refused(
            &with(bz.clone(), |b| b.extend_from_slice(b"BZh9xx")),
            "bzip2",
            "stream 2",
        );
        let two = [&bz[..], &bzip2(b"more")].concat();
        assert_eq!(decoded(&two), want);
    }

    #[test]
    fn bytes_after_stop_are_ignored_in_a_file_and_in_a_payload_alike() {
        let plain = pickle();
        let want = decoded(&plain);
        // What pickle.load does with a file: it stops at STOP (the reference's behaviour).
        let tailed = with(plain, |b| b.extend_from_slice(b"\xff trailing bytes"));
        assert_eq!(decoded(&tailed), want);
        // A compressed file is that file compressed: same payload, same answer, and its
        // stream is still checked to its end.
        for packed in [gzip(&tailed), zstd(&tailed), bzip2(&tailed)] {
            assert_eq!(decoded(&packed), want);
        }
        let gz = gzip(&tailed);
        let n = gz.len();
        refused(&with(gz, |b| b[n - 7] ^= 1), "gzip", "CRC mismatch");
    }

    #[test]
    fn json_faults_name_json() {
        let e = decode_slice(b"[1 2]").unwrap_err();
        assert!(matches!(e, DecodeError::Json(_)), "{e:?}");
        assert_eq!(
            e.to_string(),
            "corrupt JSON snapshot: expected ',' or ']', found '2' (at byte 3)"
        );
        let e = decode_slice(b"{\"segments\": [], \"x\": \"caf\xe9\"}").unwrap_err();
        assert_eq!(
            e.to_string(),
            "corrupt JSON snapshot: a string that is not UTF-8 (byte 0xe9); JSON text must be \
             UTF-8 (at byte 22)"
        );
        decode_slice("{\"segments\": [], \"x\": \"café\"}".as_bytes()).unwrap();
        // Compressed, the JSON's own fault is still a JSON fault.
        let e = decode_slice(&gzip(b"[1 2]")).unwrap_err();
        assert!(matches!(e, DecodeError::Json(_)), "{e:?}");
    }
}
