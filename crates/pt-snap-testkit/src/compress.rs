//! Compressed forms of test inputs, as the tools a person would use write them: one gzip
//! member, one zstd frame, one bzip2 stream, each at its fastest level.

use std::io::Write;

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).expect("writing to memory");
    enc.finish().expect("writing to memory")
}

pub fn zstd(bytes: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(bytes, ruzstd::encoding::CompressionLevel::Fastest)
}

pub fn bzip2(bytes: &[u8]) -> Vec<u8> {
    let mut enc = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    enc.write_all(bytes).expect("writing to memory");
    enc.finish().expect("writing to memory")
}
