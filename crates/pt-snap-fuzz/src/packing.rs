//! Compressed inputs for the fuzzer: a byte flipped inside a gzip, zstd or bzip2 stream
//! almost always breaks its decompression, so mutants of compressed seeds would never reach
//! the payload's decoder. The mutator instead unpacks a compressed seed, mutates the payload
//! and packs it again (`mutate::mutate`), and now and then damages the container itself
//! ([`damage`]: checksums, truncation, what follows the stream). The targets use the same
//! packing to check that a compressed input decodes exactly as its payload does, and that a
//! damaged container is refused (`targets::compressed_twin`).

use std::io::Read;

use pt_snap_testkit::compress;

use crate::rng::Rng;

/// The compressions the decoder reads, told by their magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    Gzip,
    Zstd,
    Bzip2,
}

impl Packing {
    pub const ALL: [Packing; 3] = [Packing::Gzip, Packing::Zstd, Packing::Bzip2];

    pub fn of(data: &[u8]) -> Option<Packing> {
        match data {
            [0x1f, 0x8b, ..] => Some(Packing::Gzip),
            [0x28, 0xb5, 0x2f, 0xfd, ..] => Some(Packing::Zstd),
            [b'B', b'Z', b'h', b'1'..=b'9', ..] => Some(Packing::Bzip2),
            _ => None,
        }
    }

    /// The name the decoder's errors use (`corrupt gzip stream: …`).
    pub fn name(self) -> &'static str {
        match self {
            Packing::Gzip => "gzip",
            Packing::Zstd => "zstd",
            Packing::Bzip2 => "bzip2",
        }
    }

    /// `payload` as one member, frame or stream (zstd with its content checksum).
    pub fn pack(self, payload: &[u8]) -> Vec<u8> {
        match self {
            Packing::Gzip => compress::gzip(payload),
            Packing::Zstd => compress::zstd(payload),
            Packing::Bzip2 => compress::bzip2(payload),
        }
    }

    /// As much of the payload as decompresses, at most `max_len` bytes (a mutant's stream
    /// may be damaged: what came before the damage is still a payload to mutate).
    pub fn unpack(self, data: &[u8], max_len: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let limit = max_len as u64;
        // Errors end the payload where they occur; what was read is kept.
        let _ = match self {
            Packing::Gzip => flate2::read::MultiGzDecoder::new(data)
                .take(limit)
                .read_to_end(&mut out),
            Packing::Zstd => match ruzstd::decoding::StreamingDecoder::new(data) {
                Ok(d) => d.take(limit).read_to_end(&mut out),
                Err(_) => Ok(0),
            },
            Packing::Bzip2 => bzip2::read::MultiBzDecoder::new(data)
                .take(limit)
                .read_to_end(&mut out),
        };
        out
    }

    /// Where a flipped byte is sure to break a check: gzip's CRC-32, zstd's content
    /// checksum (ruzstd's encoder writes one), a byte of bzip2's combined stream CRC.
    pub fn checksum_byte(self, packed_len: usize) -> usize {
        match self {
            Packing::Gzip => packed_len - 8,
            Packing::Zstd => packed_len - 1,
            Packing::Bzip2 => packed_len - 2,
        }
    }
}

/// One damage to a packed stream, chosen by `rng`: a checksum byte or a header byte flipped,
/// a cut end, or something after the stream (garbage, NULs, another member of `other`).
pub fn damage(rng: &mut Rng, packing: Packing, packed: &mut Vec<u8>, other: &[u8]) {
    let n = packed.len();
    match rng.below(6) {
        0 if n >= 8 => packed[packing.checksum_byte(n)] ^= 1 << rng.below(8),
        1 => packed.truncate(n - rng.between(1, 16).min(n)),
        2 => packed.extend((0..rng.between(1, 16)).map(|_| rng.byte())),
        3 => packed.extend(std::iter::repeat_n(0, rng.between(1, 64))),
        4 => {
            let take = other.len().min(rng.between(0, 4096));
            packed.extend_from_slice(&packing.pack(&other[..take]));
        }
        _ if n > 0 => packed[rng.below(n.min(16))] ^= 1 << rng.below(8),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_round_trips_and_is_told_by_its_magic() {
        let payload = b"\x80\x04}\x94.".repeat(100);
        for p in Packing::ALL {
            let packed = p.pack(&payload);
            assert_eq!(Packing::of(&packed), Some(p));
            assert_eq!(p.unpack(&packed, 1 << 20), payload);
            assert_eq!(p.unpack(&packed, 10), &payload[..10]);
            // A damaged stream still gives what came before the damage.
            assert!(payload.starts_with(&p.unpack(&packed[..packed.len() - 4], 1 << 20)));
        }
        assert_eq!(Packing::of(b"\x80\x04}"), None);
    }
}
