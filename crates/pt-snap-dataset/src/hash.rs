//! SHA-256 of files as datasets record them: each member's hash in the manifests, the
//! source's hash in the import identity, and an msinsight export's salted `cacheHash`.

use std::io::{self, Read};
use std::path::Path;

/// Lowercase hex SHA-256 of the file's bytes.
pub fn sha256_file(path: &Path) -> io::Result<String> {
    salted_sha256_file(b"", path)
}

/// Lowercase hex SHA-256 of `salt` followed by the file's bytes (the importer's hash, which
/// identifies a single-database import the same way).
pub fn salted_sha256_file(salt: &[u8], path: &Path) -> io::Result<String> {
    pt_snap_import::sha256_hex(salt.chain(std::fs::File::open(path)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SHA-256 of "abc".
    const ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    fn file_of(bytes: &[u8]) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), bytes).unwrap();
        file
    }

    #[test]
    fn the_salt_comes_first() {
        assert_eq!(
            salted_sha256_file(b"ab", file_of(b"c").path()).unwrap(),
            ABC
        );
        assert_eq!(sha256_file(file_of(b"abc").path()).unwrap(), ABC);
    }
}
