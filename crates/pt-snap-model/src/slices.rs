//! The input a browser has: a `File` read one slice at a time into the decoder's memory.

use std::io::{self, Read};

/// Bytes per slice: large enough that a slice's round trip through JS is noise, small
/// enough that the reader holds little beside the decoded model. The worker's ring holds four
/// of them in a `SharedArrayBuffer` that lives until a collection the busy worker rarely gets:
/// at 4 MiB the ring held 16 MiB through the whole import's peak.
pub const SLICE: u64 = 1 << 20;

/// A `Read` over `len` bytes fetched one [`SLICE`] at a time by `fetch(start, end)`, which
/// returns an owned copy (in the browser's worker: `FileReaderSync` and a copy out of the
/// `ArrayBuffer`). Positions are `u64`: a file past 4 GiB is read on wasm32 too.
pub struct Slices<F> {
    fetch: F,
    len: u64,
    pos: u64,
    buf: Vec<u8>,
    at: usize,
}

impl<F: FnMut(u64, u64) -> io::Result<Vec<u8>>> Slices<F> {
    pub fn new(len: u64, fetch: F) -> Self {
        Slices {
            fetch,
            len,
            pos: 0,
            buf: Vec::new(),
            at: 0,
        }
    }
}

impl<F: FnMut(u64, u64) -> io::Result<Vec<u8>>> Read for Slices<F> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.at == self.buf.len() {
            if self.pos >= self.len {
                return Ok(0);
            }
            let end = (self.pos + SLICE).min(self.len);
            let buf = (self.fetch)(self.pos, end)?;
            if buf.len() as u64 != end - self.pos {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "a slice of {} bytes came back with {}: the file changed while it was read",
                        end - self.pos,
                        buf.len()
                    ),
                ));
            }
            self.buf = buf;
            self.pos = end;
            self.at = 0;
        }
        let n = out.len().min(self.buf.len() - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_hand_out_every_byte_once_in_order() {
        let bytes: Vec<u8> = (0..SLICE as usize * 2 + 5).map(|i| i as u8).collect();
        let mut fetched = Vec::new();
        let mut r = Slices::new(bytes.len() as u64, |s, e| {
            fetched.push((s, e));
            Ok(bytes[s as usize..e as usize].to_vec())
        });
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        assert_eq!(out, bytes);
        assert_eq!(
            fetched,
            [(0, SLICE), (SLICE, 2 * SLICE), (2 * SLICE, 2 * SLICE + 5)]
        );
    }

    #[test]
    fn a_short_slice_is_an_error_not_a_silent_end() {
        let mut r = Slices::new(10, |_, _| Ok(vec![1, 2, 3]));
        let e = r.read_to_end(&mut Vec::new()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        // Read again, it fetches again rather than hand out the short slice.
        assert!(r.read(&mut [0; 4]).is_err());
    }
}
