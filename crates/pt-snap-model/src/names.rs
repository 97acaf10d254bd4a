//! What a file's name says it is, in one place for every command and the browser app.
//! Snapshots are told by their content ([`crate::decode::input`]); names matter only where
//! there is no content to read yet (which files of a directory make a job), where the
//! content says nothing (protocol 0/1 pickles have no magic bytes), and where a rank is read
//! from a name.

/// A snapshot's own suffixes.
pub const SNAPSHOT_SUFFIXES: [&str; 3] = [".pkl", ".pickle", ".json"];
/// What a snapshot may be compressed with; any of them may follow a snapshot suffix.
pub const COMPRESSION_SUFFIXES: [&str; 4] = [".gz", ".zst", ".zstd", ".bz2"];
/// A SnapshotDB's suffix: what an import names its database (`<snapshot name>.db`).
pub const DATABASE_SUFFIX: &str = ".db";

/// Whether `suffix` (with its dot, any case) names a pickle: the importer's rule for a file
/// whose first bytes say nothing (the reference's `.pkl`/`.pickle` rule).
pub fn is_pickle_suffix(suffix: &str) -> bool {
    matches!(suffix.to_ascii_lowercase().as_str(), ".pkl" | ".pickle")
}

/// Whether a directory's entry `name` belongs to the job the directory holds: a pickle
/// (`*.pkl`, `*.pickle`, also compressed) or a database (`*.db`), never a hidden file.
/// JSON snapshots count only when named one by one: a directory's `*.json` files are mostly
/// something else.
pub fn taken_from_directory(name: &str) -> bool {
    if name.starts_with('.') {
        return false;
    }
    let lower = name.to_ascii_lowercase();
    let base = COMPRESSION_SUFFIXES
        .iter()
        .find_map(|c| lower.strip_suffix(c))
        .unwrap_or(&lower);
    base.ends_with(".pkl") || base.ends_with(".pickle") || lower.ends_with(DATABASE_SUFFIX)
}

/// `name` without its snapshot, compression and database suffixes, stripped repeatedly in
/// any case: `rank3.pickle.gz.db` is `rank3`.
pub fn stem(name: &str) -> &str {
    let suffixes = SNAPSHOT_SUFFIXES
        .iter()
        .chain(&COMPRESSION_SUFFIXES)
        .chain(std::iter::once(&DATABASE_SUFFIX));
    let mut stem = name;
    'strip: loop {
        for suffix in suffixes.clone() {
            let n = suffix.len();
            if stem.len() > n
                && stem.is_char_boundary(stem.len() - n)
                && stem[stem.len() - n..].eq_ignore_ascii_case(suffix)
            {
                stem = &stem[..stem.len() - n];
                continue 'strip;
            }
        }
        return stem;
    }
}

/// The suffixes a file dialog offers for snapshots and databases (a hint only: files are
/// recognised by content), as an `accept` attribute lists them.
pub fn dialog_suffixes() -> Vec<&'static str> {
    SNAPSHOT_SUFFIXES
        .iter()
        .chain(&COMPRESSION_SUFFIXES)
        .copied()
        .chain(std::iter::once(DATABASE_SUFFIX))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_gives_its_pickles_and_databases_not_hidden_or_json_files() {
        for name in [
            "r0.pkl",
            "r1.PICKLE",
            "r2.pkl.gz",
            "r3.pickle.zstd",
            "r4.db",
        ] {
            assert!(taken_from_directory(name), "{name}");
        }
        for name in [
            ".r5.pkl",
            "notes.txt",
            "r6.json",
            "r7.gz",
            "pkl",
            "a.db-wal",
        ] {
            assert!(!taken_from_directory(name), "{name}");
        }
    }

    #[test]
    fn stems_lose_every_known_suffix() {
        assert_eq!(stem("rank3.pickle.gz.db"), "rank3");
        assert_eq!(stem("RANK_4.PKL.ZST"), "RANK_4");
        assert_eq!(stem(".db"), ".db");
        assert_eq!(stem("a.b.json"), "a.b");
        assert!(is_pickle_suffix(".PKL") && is_pickle_suffix(".pickle"));
        assert!(!is_pickle_suffix(".db") && !is_pickle_suffix(""));
    }
}
