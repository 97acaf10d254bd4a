//! Where a chosen file goes, told by its first bytes rather than its name (the CLI's rule,
//! plus SQLite databases, which the page opens itself). Plain logic, tested natively.

use pt_snap_db::SQLITE_HEADER;
use pt_snap_model::decode::{describe_start, Detected};
use pt_snap_model::names;

/// Bytes read from the start of a file to route it: enough for the SQLite header and for
/// [`Detected::of`].
pub const HEAD_LEN: usize = {
    let n = pt_snap_model::decode::HEAD_LEN;
    if n > SQLITE_HEADER.len() {
        n
    } else {
        SQLITE_HEADER.len()
    }
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// A SnapshotDB (or something named `.db`, which then fails as the CLI's `query` would).
    Database,
    /// A snapshot for the import worker: pickle, JSON, or a gzip/zstd/bzip2 stream of either;
    /// or a `.pkl`/`.pickle` of any content, for the decoder to explain.
    Import,
    /// Neither: the CLI's bad-suffix refusal, with `suffix` (dot included, or empty) and
    /// what the first bytes are.
    Refuse { suffix: String, content: String },
}

/// The file's suffix as the CLI names it: from the last dot of the name, as given.
pub fn suffix(name: &str) -> String {
    name.rfind('.')
        .map_or(String::new(), |i| name[i..].to_owned())
}

pub fn route(name: &str, head: &[u8]) -> Route {
    let suffix = suffix(name);
    if pt_snap_db::is_sqlite_header(head) {
        Route::Database
    } else if Detected::of(head).is_certain() || names::is_pickle_suffix(&suffix) {
        Route::Import
    } else if suffix.eq_ignore_ascii_case(names::DATABASE_SUFFIX) {
        Route::Database
    } else {
        Route::Refuse {
            suffix,
            content: describe_start(head),
        }
    }
}

/// The CLI's message for a refused file (`pt-snap import`'s `check_source`).
pub fn refusal(bad_suffix_message: &str, content: &str) -> String {
    format!("{bad_suffix_message} (and the content is no snapshot either: {content})")
}

/// Whether an import failure is the strict replay's (the trace contradicts the allocator
/// state), which a lenient import can get past.
pub fn is_replay_inconsistency(message: &str) -> bool {
    message.contains("replay of device")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_decides_before_the_name() {
        let cases: [(&str, &[u8], Route); 8] = [
            ("a.bin", b"SQLite format 3\0rest", Route::Database),
            ("a.pkl", b"SQLite format 3\0rest", Route::Database),
            ("snapshot.txt", b"\x80\x04\x95\x00", Route::Import),
            ("s.json.gz", b"\x1f\x8b\x08\x00", Route::Import),
            ("s.pickle.zst", b"\x28\xb5\x2f\xfd\x00", Route::Import),
            ("s.bz2", b"BZh91AY&SY", Route::Import),
            ("s.json", b" \n{\"segments\": []}", Route::Import),
            ("X.DB", b"\x1f\x8b\x08\x00", Route::Import),
        ];
        for (name, head, want) in cases {
            assert_eq!(route(name, head), want, "{name}");
        }
    }

    #[test]
    fn the_name_decides_when_content_is_uncertain() {
        // Protocol 0/1 pickles have no magic; unknown bytes under a pickle's name go to the
        // decoder, which says what is wrong.
        assert_eq!(route("old.PKL", b"(dp0\n"), Route::Import);
        assert_eq!(route("x.pickle", b"hello"), Route::Import);
        assert_eq!(route("x.pickle", b""), Route::Import);
        assert_eq!(
            route("not-a.db", b"this is not a database"),
            Route::Database
        );
        assert!(matches!(
            route("notes.txt", b"(just text)"),
            Route::Refuse { .. }
        ));
    }

    #[test]
    fn refusals_say_what_the_file_is() {
        let Route::Refuse { suffix, content } = route("x.pt", b"PK\x03\x04\x14\x00\x00\x00") else {
            panic!("a ZIP archive was not refused");
        };
        assert_eq!(suffix, ".pt");
        assert!(content.contains("ZIP archive"), "{content}");
        assert_eq!(
            route("README", b""),
            Route::Refuse {
                suffix: String::new(),
                content: "the file is empty".into()
            }
        );
        assert_eq!(
            refusal("Snapshot suffix must be .pkl or .pickle, got '.pt'", "it is x"),
            "Snapshot suffix must be .pkl or .pickle, got '.pt' (and the content is no snapshot either: it is x)"
        );
    }

    #[test]
    fn replay_failures_are_recognised() {
        assert!(is_replay_inconsistency(
            "Snapshot import backend reported failure: replay of device 0 failed at event 23 (free_completed addr=1 size=512 stream=0): no live block"
        ));
        assert!(!is_replay_inconsistency(
            "Snapshot import backend reported failure: corrupt pickle: truncated"
        ));
    }

    #[test]
    fn head_covers_both_checks() {
        assert!(HEAD_LEN >= SQLITE_HEADER.len() && HEAD_LEN >= pt_snap_model::decode::HEAD_LEN);
    }
}
