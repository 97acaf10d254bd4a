//! Buffered, bounded byte source over any `Read`.

use std::borrow::Cow;
use std::io::{ErrorKind, Read};

use crate::Error;

const CHUNK: usize = 64 * 1024;

/// Reads the pickle in fixed chunks, so a file never has to fit in memory, and never
/// trusts a declared length: payloads grow only as bytes actually arrive.
pub(crate) struct Source<R> {
    inner: R,
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
    /// Bytes consumed from `inner` before `buf[0]`.
    base: u64,
    max_len: u64,
    refilled: bool,
}

impl<R: Read> Source<R> {
    pub fn new(inner: R, max_len: u64) -> Self {
        Source {
            inner,
            buf: vec![0; CHUNK].into_boxed_slice(),
            pos: 0,
            end: 0,
            base: 0,
            max_len,
            refilled: false,
        }
    }

    /// Offset of the next unread byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Whether a chunk was read since the last call (drives progress reports).
    pub fn take_refilled(&mut self) -> bool {
        std::mem::take(&mut self.refilled)
    }

    /// Refills the buffer; `Ok(false)` at end of input.
    fn fill(&mut self) -> Result<bool, Error> {
        self.base += self.end as u64;
        self.pos = 0;
        self.end = 0;
        loop {
            match self.inner.read(&mut self.buf) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.end = n;
                    self.refilled = true;
                    return Ok(true);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::Io(e)),
            }
        }
    }

    fn truncated(&self) -> Error {
        if self.offset() == 0 {
            Error::malformed(0, "empty input: ran out of input before any opcode")
        } else {
            Error::malformed(self.offset(), "pickle data was truncated")
        }
    }

    /// The next byte, or `None` at a clean end of input.
    ///
    /// This and [`Source::array`] run for nearly every opcode: the buffered case is kept small
    /// enough to inline, and refilling lives out of line.
    #[inline(always)]
    pub fn next_byte(&mut self) -> Result<Option<u8>, Error> {
        match self.buf[..self.end].get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(Some(b))
            }
            None => self.next_byte_refill(),
        }
    }

    #[cold]
    #[inline(never)]
    fn next_byte_refill(&mut self) -> Result<Option<u8>, Error> {
        if self.pos == self.end && !self.fill()? {
            return Ok(None);
        }
        let b = self.buf[self.pos];
        self.pos += 1;
        Ok(Some(b))
    }

    #[inline(always)]
    pub fn byte(&mut self) -> Result<u8, Error> {
        match self.next_byte()? {
            Some(b) => Ok(b),
            None => Err(self.truncated()),
        }
    }

    #[inline(always)]
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], Error> {
        match self.buf[..self.end]
            .get(self.pos..)
            .and_then(<[u8]>::first_chunk::<N>)
        {
            Some(&out) => {
                self.pos += N;
                Ok(out)
            }
            None => self.array_across(),
        }
    }

    /// A LONG1 payload of `n` bytes as the `i64` it encodes, read straight from the buffer
    /// (two per trace entry: addresses and times); `None`, consuming nothing, unless
    /// 1 ≤ `n` ≤ 8 and eight bytes are buffered.
    #[inline(always)]
    pub fn small_int(&mut self, n: u8) -> Option<i64> {
        if !(1..=8).contains(&n) {
            return None;
        }
        let &word = self.buf[..self.end]
            .get(self.pos..)
            .and_then(<[u8]>::first_chunk::<8>)?;
        // Little-endian two's complement: the low `n` bytes, sign-extended.
        let shift = 64 - 8 * u32::from(n);
        self.pos += usize::from(n);
        Some(((u64::from_le_bytes(word) << shift) as i64) >> shift)
    }

    /// [`Source::array`] when the bytes straddle a refill.
    #[cold]
    #[inline(never)]
    fn array_across<const N: usize>(&mut self) -> Result<[u8; N], Error> {
        let mut out = [0u8; N];
        for b in &mut out {
            *b = self.byte()?;
        }
        Ok(out)
    }

    /// Exactly `len` bytes: borrowed from the buffer when they are already there.
    pub fn bytes(&mut self, len: u64) -> Result<Cow<'_, [u8]>, Error> {
        if len > self.max_len {
            return Err(Error::malformed(
                self.offset(),
                format!(
                    "declared length {len} exceeds the limit of {} bytes",
                    self.max_len
                ),
            ));
        }
        let len = usize::try_from(len)
            .map_err(|_| Error::malformed(self.offset(), "declared length exceeds memory"))?;
        if self.end - self.pos >= len {
            let start = self.pos;
            self.pos += len;
            return Ok(Cow::Borrowed(&self.buf[start..start + len]));
        }
        // Grow with the data actually delivered, not with the (untrusted) declared length.
        let mut out = Vec::with_capacity(len.min(CHUNK));
        while out.len() < len {
            if self.pos == self.end && !self.fill()? {
                return Err(self.truncated());
            }
            let n = (len - out.len()).min(self.end - self.pos);
            out.extend_from_slice(&self.buf[self.pos..self.pos + n]);
            self.pos += n;
        }
        Ok(Cow::Owned(out))
    }

    /// Consumes up to `len` bytes without keeping them; `false` if the input ended first.
    pub fn skip(&mut self, mut len: u64) -> Result<bool, Error> {
        while len > 0 {
            if self.pos == self.end && !self.fill()? {
                return Ok(false);
            }
            let n = ((self.end - self.pos) as u64).min(len);
            self.pos += n as usize;
            len -= n;
        }
        Ok(true)
    }

    /// A protocol-0 argument line, without its `\n`.
    pub fn line(&mut self) -> Result<Cow<'_, [u8]>, Error> {
        if let Some(i) = self.buf[self.pos..self.end]
            .iter()
            .position(|&b| b == b'\n')
        {
            let start = self.pos;
            self.pos += i + 1;
            return Ok(Cow::Borrowed(&self.buf[start..start + i]));
        }
        let mut out = Vec::new();
        loop {
            if self.pos == self.end && !self.fill()? {
                return Err(self.truncated());
            }
            let avail = &self.buf[self.pos..self.end];
            match avail.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    out.extend_from_slice(&avail[..i]);
                    self.pos += i + 1;
                    break;
                }
                None => {
                    out.extend_from_slice(avail);
                    self.pos = self.end;
                }
            }
            if out.len() as u64 > self.max_len {
                return Err(Error::malformed(
                    self.offset(),
                    format!("text argument longer than {} bytes", self.max_len),
                ));
            }
        }
        Ok(Cow::Owned(out))
    }
}
