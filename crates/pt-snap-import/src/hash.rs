//! SHA-256 of the source bytes: the identity of an import (and of the reuse cache).

use std::io::{self, Read};

use sha2::{Digest, Sha256};

/// Lowercase hex SHA-256 of everything `reader` yields, read in 1 MiB chunks.
pub fn sha256_hex<R: Read>(mut reader: R) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(hex(&hasher.finalize()))
}

/// A reader that hashes what passes through it, so decoding and hashing share one read.
pub struct Sha256Reader<R> {
    inner: R,
    hasher: Sha256,
    bytes: u64,
}

impl<R: Read> Sha256Reader<R> {
    pub fn new(inner: R) -> Self {
        Sha256Reader {
            inner,
            hasher: Sha256::new(),
            bytes: 0,
        }
    }

    /// Hex digest and length of the bytes read so far.
    pub fn finish(self) -> (String, u64) {
        (hex(&self.hasher.finalize()), self.bytes)
    }
}

impl<R: Read> Read for Sha256Reader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digest() {
        assert_eq!(
            sha256_hex(&b"abc"[..]).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let mut r = Sha256Reader::new(&b"abc"[..]);
        std::io::copy(&mut r, &mut std::io::sink()).unwrap();
        assert_eq!(r.finish().1, 3);
    }
}
