//! JSON snapshots, decoded by the same machine as pickles.
//!
//! memory_viz accepts snapshots written with `json.dump` (people use them to get around
//! pickle-protocol trouble), and they hold the very same dicts, lists, strings and numbers.
//! Rather than a second decoder with its own limits and errors, [`load_json`] transcodes the
//! JSON text, as it streams by, into the protocol-4 opcodes `pickle.dumps` would write for
//! the same value, and runs them through the pickle machine: the same arena, the same
//! compaction by the consumer's [`Sink`], the same [`Limits`] and error contract.
//!
//! The transcoder holds one token at a time (a string is bounded by [`Limits::max_len`]) and
//! a stack of open containers, so its own memory does not grow with the file. Items are
//! flushed in batches of 1,000 (`APPENDS`/`SETITEMS`), as CPython's pickler does, so a list
//! of ten million events never sits on the machine's stack at once.
//!
//! The grammar is Python's `json` module's: RFC 8259 plus `NaN`, `Infinity` and `-Infinity`.
//! Integers are exact at any size (`LONG1`/`LONG4` past 64 bits), unlike a JavaScript
//! reader's doubles; lone surrogate escapes become U+FFFD, as invalid UTF-8 does in pickles.
//! The text must be UTF-8, as Python's `json.loads` of bytes wants it: a string holding bytes
//! that are not is refused (outside strings only ASCII is grammar anyway).
//!
//! Errors of the JSON text are [`Error::Malformed`], placed at a byte of the text; a reader
//! that fails (a decompressor finding its stream damaged, say) is [`Error::Io`] with that
//! reader's own error, so the caller can say which layer failed.

use std::cell::Cell;
use std::io::{self, ErrorKind, Read};
use std::rc::Rc;

use crate::text::twos_complement;
use crate::{op, vm, Error, Limits, Pickle, Sink};

/// Items per `MARK` … `APPENDS`/`SETITEMS` batch, as CPython's pickler writes them.
const BATCH: usize = 1000;
const CHUNK: usize = 64 * 1024;
/// Python's default `sys.int_info.default_max_str_digits`.
const MAX_INT_DIGITS: usize = 4300;

/// Decodes one JSON document from `reader` into the same [`Pickle`] a pickle of the same
/// value decodes to. Errors carry offsets into the JSON text.
pub fn load_json<R: Read, S: Sink + ?Sized>(
    reader: R,
    sink: &mut S,
    limits: &Limits,
) -> Result<Pickle, Error> {
    let consumed = Rc::new(Cell::new(0));
    let transcoder = Transcoder::new(reader, limits.max_len, Rc::clone(&consumed));
    vm::Machine::new(transcoder, sink, limits)
        .with_input_position(Rc::clone(&consumed))
        .run()
        .map(|mut pickle| {
            pickle.bytes_read = consumed.get();
            pickle
        })
        .map_err(|e| match e {
            // A syntax error of the JSON itself: already worded and placed.
            Error::Io(io) if io.kind() == ErrorKind::InvalidData => match io.into_inner() {
                Some(inner) => match inner.downcast::<Syntax>() {
                    Ok(s) => Error::malformed(s.offset, s.message),
                    Err(other) => Error::Io(io::Error::new(ErrorKind::InvalidData, other)),
                },
                None => Error::Io(io::Error::from(ErrorKind::InvalidData)),
            },
            // Limits and structure problems found by the machine: placed in the JSON text.
            Error::Malformed { message, .. } => Error::malformed(consumed.get(), message),
            e => e,
        })
}

#[derive(Debug)]
struct Syntax {
    offset: u64,
    message: String,
}

impl std::fmt::Display for Syntax {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (at byte {})", self.message, self.offset)
    }
}

impl std::error::Error for Syntax {}

/// An open container and how many finished items its current batch holds.
#[derive(Debug, Clone, Copy)]
struct Open {
    object: bool,
    batched: usize,
}

/// What the next token may be.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// A value (document start, after `:`, after `,` in an array).
    Value,
    /// A value or `]` (right after `[`).
    ValueOrClose,
    /// A key or `}` (right after `{`).
    KeyOrClose,
    /// A key (after `,` in an object).
    Key,
    Colon,
    /// `,` or the container's close.
    CommaOrClose,
    /// Only whitespace until the end.
    End,
    Done,
}

struct Transcoder<R> {
    inner: R,
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
    /// Input bytes before `buf[0]`.
    base: u64,
    /// Shared with [`load_json`]: input bytes consumed, for offsets and `bytes_read`.
    consumed: Rc<Cell<u64>>,
    max_len: u64,
    /// Opcodes not yet handed to the machine.
    out: Vec<u8>,
    out_pos: usize,
    stack: Vec<Open>,
    expect: Expect,
    started: bool,
    /// A scratch buffer for strings and number tokens.
    token: Vec<u8>,
    /// Why `inner` failed, handed to the machine as it is rather than as a syntax error.
    failed_read: Option<io::Error>,
}

impl<R: Read> Read for Transcoder<R> {
    fn read(&mut self, dst: &mut [u8]) -> io::Result<usize> {
        if self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
            // Fill the caller's whole buffer when the input allows: a call per token would
            // make the machine refill (and report progress) every few bytes.
            while self.out.len() < dst.len() && self.expect != Expect::Done {
                if let Err(s) = self.step() {
                    return Err(match self.failed_read.take() {
                        Some(e) => e,
                        None => io::Error::new(ErrorKind::InvalidData, s),
                    });
                }
            }
            // Read once per fill: the machine's own errors are placed at the JSON text read
            // so far, within one buffer of where they arose.
            self.consumed.set(self.offset());
        }
        let n = dst.len().min(self.out.len() - self.out_pos);
        dst[..n].copy_from_slice(&self.out[self.out_pos..self.out_pos + n]);
        self.out_pos += n;
        Ok(n)
    }
}

impl<R: Read> Transcoder<R> {
    fn new(inner: R, max_len: u64, consumed: Rc<Cell<u64>>) -> Self {
        Transcoder {
            inner,
            buf: vec![0; CHUNK].into_boxed_slice(),
            pos: 0,
            end: 0,
            base: 0,
            consumed,
            max_len,
            out: Vec::with_capacity(CHUNK),
            out_pos: 0,
            stack: Vec::new(),
            expect: Expect::Value,
            started: false,
            token: Vec::new(),
            failed_read: None,
        }
    }

    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    fn syntax(&self, message: impl Into<String>) -> Syntax {
        Syntax {
            offset: self.offset(),
            message: message.into(),
        }
    }

    /// The next input byte without consuming it; `None` at the end.
    fn peek(&mut self) -> Result<Option<u8>, Syntax> {
        if self.pos == self.end {
            self.base += self.end as u64;
            self.pos = 0;
            self.end = 0;
            loop {
                match self.inner.read(&mut self.buf) {
                    Ok(n) => {
                        self.end = n;
                        break;
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => {
                        let syntax = self.syntax(format!("read failed: {e}"));
                        self.failed_read = Some(e);
                        return Err(syntax);
                    }
                }
            }
            if self.end == 0 {
                return Ok(None);
            }
        }
        Ok(Some(self.buf[self.pos]))
    }

    fn bump(&mut self) {
        self.pos += 1;
    }

    fn next_byte(&mut self) -> Result<Option<u8>, Syntax> {
        let b = self.peek()?;
        if b.is_some() {
            self.bump();
        }
        Ok(b)
    }

    /// The next byte that is not JSON whitespace (a UTF-8 byte-order mark is skipped at the
    /// start, as editors on Windows write one).
    fn skip_ws(&mut self) -> Result<Option<u8>, Syntax> {
        loop {
            match self.peek()? {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.bump(),
                Some(0xef) if self.offset() == 0 => {
                    for want in [0xef, 0xbb, 0xbf] {
                        if self.next_byte()? != Some(want) {
                            return Err(self.syntax("a stray byte 0xef at the start"));
                        }
                    }
                }
                other => return Ok(other),
            }
        }
    }

    /// Transcodes one token (and the container bookkeeping it implies) into `out`.
    fn step(&mut self) -> Result<(), Syntax> {
        if !self.started {
            self.started = true;
            self.out.extend_from_slice(&[op::PROTO, 4]);
        }
        let Some(b) = self.skip_ws()? else {
            return match self.expect {
                Expect::End => {
                    self.out.push(op::STOP);
                    self.expect = Expect::Done;
                    Ok(())
                }
                _ if self.offset() == 0 => Err(self.syntax("empty input: no JSON value")),
                _ => Err(self.syntax("the JSON text ends inside a value (truncated?)")),
            };
        };
        match self.expect {
            Expect::End => {
                Err(self.syntax(format!("extra data after the JSON value: {}", describe(b))))
            }
            Expect::Done => unreachable!("read() stops at Done"),
            Expect::Colon => {
                self.expect_byte(b, b':', "':' after an object key")?;
                self.expect = Expect::Value;
                Ok(())
            }
            Expect::CommaOrClose => {
                let top = *self.stack.last().expect("inside a container");
                match b {
                    b',' => {
                        self.bump();
                        self.expect = if top.object {
                            Expect::Key
                        } else {
                            Expect::Value
                        };
                        Ok(())
                    }
                    b']' if !top.object => self.close(),
                    b'}' if top.object => self.close(),
                    _ => Err(self.syntax(format!(
                        "expected ',' or '{}', found {}",
                        if top.object { '}' } else { ']' },
                        describe(b)
                    ))),
                }
            }
            Expect::KeyOrClose | Expect::Key => {
                if b == b'}' && self.expect == Expect::KeyOrClose {
                    return self.close();
                }
                if b != b'"' {
                    return Err(
                        self.syntax(format!("expected a string key, found {}", describe(b)))
                    );
                }
                self.begin_item();
                self.string()?;
                self.expect = Expect::Colon;
                Ok(())
            }
            Expect::ValueOrClose if b == b']' => self.close(),
            Expect::Value | Expect::ValueOrClose => {
                if !self.stack.last().is_some_and(|o| o.object) {
                    // Array items start here; object values belong to the pair begun at
                    // the key.
                    self.begin_item();
                }
                self.value(b)
            }
        }
    }

    fn expect_byte(&mut self, b: u8, want: u8, what: &str) -> Result<(), Syntax> {
        if b != want {
            return Err(self.syntax(format!("expected {what}, found {}", describe(b))));
        }
        self.bump();
        Ok(())
    }

    /// An item of the innermost container starts: open its batch with a MARK.
    fn begin_item(&mut self) {
        if let Some(top) = self.stack.last_mut() {
            if top.batched == 0 {
                self.out.push(op::MARK);
            }
        }
    }

    /// A value just ended: it completes an item of its container, or the document.
    fn end_value(&mut self) {
        let Some(top) = self.stack.last_mut() else {
            self.expect = Expect::End;
            return;
        };
        top.batched += 1;
        if top.batched == BATCH {
            self.out.push(if top.object {
                op::SETITEMS
            } else {
                op::APPENDS
            });
            top.batched = 0;
        }
        self.expect = Expect::CommaOrClose;
    }

    fn close(&mut self) -> Result<(), Syntax> {
        self.bump();
        let top = self.stack.pop().expect("inside a container");
        if top.batched > 0 {
            self.out.push(if top.object {
                op::SETITEMS
            } else {
                op::APPENDS
            });
        }
        self.end_value();
        Ok(())
    }

    fn value(&mut self, b: u8) -> Result<(), Syntax> {
        match b {
            b'{' | b'[' => {
                self.bump();
                let object = b == b'{';
                self.out.push(if object {
                    op::EMPTY_DICT
                } else {
                    op::EMPTY_LIST
                });
                self.stack.push(Open { object, batched: 0 });
                self.expect = if object {
                    Expect::KeyOrClose
                } else {
                    Expect::ValueOrClose
                };
                return Ok(());
            }
            b'"' => self.string()?,
            b't' => self.word(b"true", op::NEWTRUE)?,
            b'f' => self.word(b"false", op::NEWFALSE)?,
            b'n' => self.word(b"null", op::NONE)?,
            b'N' => self.float_word(b"NaN", f64::NAN)?,
            b'I' => self.float_word(b"Infinity", f64::INFINITY)?,
            b'-' | b'0'..=b'9' => self.number()?,
            _ => {
                return Err(self.syntax(format!("expected a value, found {}", describe(b))));
            }
        }
        self.end_value();
        Ok(())
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), Syntax> {
        for &want in word {
            if self.peek()? == Some(want) {
                self.bump();
            } else {
                return Err(self.syntax(format!(
                    "invalid literal (expected {})",
                    String::from_utf8_lossy(word)
                )));
            }
        }
        Ok(())
    }

    fn word(&mut self, word: &[u8], opcode: u8) -> Result<(), Syntax> {
        self.literal(word)?;
        self.out.push(opcode);
        Ok(())
    }

    fn float_word(&mut self, word: &[u8], v: f64) -> Result<(), Syntax> {
        self.literal(word)?;
        self.float(v);
        Ok(())
    }

    fn float(&mut self, v: f64) {
        self.out.push(op::BINFLOAT);
        self.out.extend_from_slice(&v.to_be_bytes());
    }

    /// A number token: an exact integer of any size, or a float rounded as Python does.
    fn number(&mut self) -> Result<(), Syntax> {
        self.token.clear();
        while let Some(b) = self.peek()? {
            if !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E' | b'I') {
                break;
            }
            if self.token.len() as u64 >= self.max_len {
                return Err(self.syntax(format!(
                    "a number longer than the limit of {} bytes",
                    self.max_len
                )));
            }
            self.token.push(b);
            self.bump();
            if self.token == b"-I" {
                self.literal(b"nfinity")?;
                self.float(f64::NEG_INFINITY);
                return Ok(());
            }
        }
        let text = std::mem::take(&mut self.token);
        let result = match number_kind(&text) {
            // Python's json module refuses integers past 4300 digits (its int conversion
            // limit), and the decimal-to-binary conversion is quadratic in the digits.
            Some(true) if text.len() > MAX_INT_DIGITS + 1 => Err(self.syntax(format!(
                "an integer of {} digits exceeds the limit of {MAX_INT_DIGITS}",
                text.len()
            ))),
            Some(true) => {
                self.integer(&text);
                Ok(())
            }
            Some(false) => {
                let s = std::str::from_utf8(&text).expect("ASCII");
                let v: f64 = s.parse().expect("the JSON grammar is a subset of Rust's");
                self.float(v);
                Ok(())
            }
            None => Err(self.syntax(format!(
                "invalid number {:?}",
                String::from_utf8_lossy(&text)
            ))),
        };
        self.token = text;
        result
    }

    /// An integer token (`-?digits`) as BININT/LONG1/LONG4.
    fn integer(&mut self, text: &[u8]) {
        let s = std::str::from_utf8(text).expect("ASCII");
        if let Ok(v) = s.parse::<i64>() {
            if let Ok(small) = i32::try_from(v) {
                self.out.push(op::BININT);
                self.out.extend_from_slice(&small.to_le_bytes());
            } else {
                self.long(&v.to_le_bytes());
            }
            return;
        }
        let (negative, digits) = match text.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, text),
        };
        self.long(&twos_complement(negative, digits));
    }

    /// LONG1/LONG4 with little-endian two's-complement bytes (minimal or not: both decode).
    fn long(&mut self, le: &[u8]) {
        if le.len() < 256 {
            self.out.push(op::LONG1);
            self.out.push(le.len() as u8);
        } else {
            self.out.push(op::LONG4);
            self.out.extend_from_slice(&(le.len() as i32).to_le_bytes());
        }
        self.out.extend_from_slice(le);
    }

    /// A string token (the opening quote is next) as SHORT_BINUNICODE/BINUNICODE/BINUNICODE8.
    fn string(&mut self) -> Result<(), Syntax> {
        self.bump();
        let start = self.offset();
        self.token.clear();
        loop {
            let Some(b) = self.next_byte()? else {
                return Err(Syntax {
                    offset: start - 1,
                    message: "unterminated string".into(),
                });
            };
            match b {
                b'"' => break,
                b'\\' => self.escape()?,
                0..=0x1f => {
                    return Err(Syntax {
                        offset: self.offset() - 1,
                        message: format!("invalid control character {} in a string", describe(b)),
                    })
                }
                _ => self.token.push(b),
            }
            if self.token.len() as u64 > self.max_len {
                return Err(self.syntax(format!(
                    "a string longer than the limit of {} bytes",
                    self.max_len
                )));
            }
        }
        // Python's `json.loads` decodes the whole text first and refuses bytes that are not
        // UTF-8 (escapes always add whole characters, so only raw bytes can be at fault).
        if let Err(e) = std::str::from_utf8(&self.token) {
            return Err(Syntax {
                offset: start - 1,
                message: format!(
                    "a string that is not UTF-8 (byte 0x{:02x}); JSON text must be UTF-8",
                    self.token[e.valid_up_to()]
                ),
            });
        }
        let n = self.token.len();
        if n < 256 {
            self.out.push(op::SHORT_BINUNICODE);
            self.out.push(n as u8);
        } else if let Ok(n) = u32::try_from(n) {
            self.out.push(op::BINUNICODE);
            self.out.extend_from_slice(&n.to_le_bytes());
        } else {
            self.out.push(op::BINUNICODE8);
            self.out.extend_from_slice(&(n as u64).to_le_bytes());
        }
        self.out.extend_from_slice(&self.token);
        Ok(())
    }

    fn escape(&mut self) -> Result<(), Syntax> {
        let Some(b) = self.next_byte()? else {
            return Err(self.syntax("unterminated string"));
        };
        let c = match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hi = self.hex4()?;
                let c = if (0xd800..0xdc00).contains(&hi) {
                    // A high surrogate pairs with an immediately following `\uDC00-DFFF`.
                    if self.peek()? == Some(b'\\') {
                        self.bump();
                        if self.next_byte()? != Some(b'u') {
                            return Err(self.syntax("invalid escape after a surrogate"));
                        }
                        let lo = self.hex4()?;
                        if (0xdc00..0xe000).contains(&lo) {
                            char::from_u32(0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00))
                        } else {
                            self.push_char(char::REPLACEMENT_CHARACTER);
                            char::from_u32(lo)
                        }
                    } else {
                        None
                    }
                } else {
                    char::from_u32(hi)
                };
                c.unwrap_or(char::REPLACEMENT_CHARACTER)
            }
            _ => {
                return Err(Syntax {
                    offset: self.offset() - 1,
                    message: format!("invalid escape \\{}", char::from(b)),
                });
            }
        };
        self.push_char(c);
        Ok(())
    }

    fn push_char(&mut self, c: char) {
        let mut utf8 = [0; 4];
        self.token
            .extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
    }

    fn hex4(&mut self) -> Result<u32, Syntax> {
        let mut v = 0;
        for _ in 0..4 {
            let d = self
                .next_byte()?
                .and_then(|b| char::from(b).to_digit(16))
                .ok_or_else(|| self.syntax("invalid \\u escape: expected 4 hex digits"))?;
            v = v * 16 + d;
        }
        Ok(v)
    }
}

/// `Some(true)` for an integer, `Some(false)` for a float, `None` if not JSON's grammar:
/// `-? (0 | [1-9][0-9]*) (\.[0-9]+)? ([eE][+-]?[0-9]+)?`.
fn number_kind(t: &[u8]) -> Option<bool> {
    let mut i = usize::from(t.first() == Some(&b'-'));
    let digits = |t: &[u8], i: &mut usize| {
        let start = *i;
        while *i < t.len() && t[*i].is_ascii_digit() {
            *i += 1;
        }
        *i > start
    };
    let int_start = i;
    if !digits(t, &mut i) || (t[int_start] == b'0' && i - int_start > 1) {
        return None;
    }
    let mut integer = true;
    if i < t.len() && t[i] == b'.' {
        i += 1;
        integer = false;
        if !digits(t, &mut i) {
            return None;
        }
    }
    if i < t.len() && matches!(t[i], b'e' | b'E') {
        i += 1;
        integer = false;
        if i < t.len() && matches!(t[i], b'+' | b'-') {
            i += 1;
        }
        if !digits(t, &mut i) {
            return None;
        }
    }
    (i == t.len()).then_some(integer)
}

/// A byte as a person reads it in an error message.
fn describe(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("'{}'", char::from(b))
    } else {
        format!("byte 0x{b:02x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twos_complement_matches_python_encode_long() {
        // pickle.encode_long(2**63), (-2**63 - 1), (2**64 - 1), -1, 0, 255
        assert_eq!(
            twos_complement(false, b"9223372036854775808"),
            [0, 0, 0, 0, 0, 0, 0, 0x80, 0]
        );
        assert_eq!(
            twos_complement(true, b"9223372036854775809"),
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff]
        );
        assert_eq!(
            twos_complement(false, b"18446744073709551615"),
            [0xff; 8].iter().copied().chain([0]).collect::<Vec<_>>()
        );
        assert_eq!(twos_complement(true, b"1"), [0xff]);
        assert_eq!(twos_complement(false, b"0"), [0]);
        assert_eq!(twos_complement(false, b"255"), [0xff, 0]);
    }

    #[test]
    fn the_number_grammar_is_jsons() {
        for ok in ["0", "-0", "12", "-1.5", "1e9", "1E+9", "2.5e-3"] {
            assert!(number_kind(ok.as_bytes()).is_some(), "{ok}");
        }
        for bad in ["01", "-", "1.", ".5", "1e", "+1", "1-2", "--1"] {
            assert!(number_kind(bad.as_bytes()).is_none(), "{bad}");
        }
        assert_eq!(number_kind(b"123"), Some(true));
        assert_eq!(number_kind(b"1.0"), Some(false));
    }
}
