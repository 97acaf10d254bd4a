//! What a failed import says to people: the reference's error code, message and hint (spec
//! §2.2–2.3), as the one [`Failure`]. The CLI and the browser app both report through this
//! one mapping, so a bad or hostile file reads the same in a terminal and in a tab.

use std::fmt::Display;

use pt_snap_contract::{hint, ErrorCode, Failure};
use pt_snap_model::DecodeError;

use crate::ImportError;

/// The file cannot be a snapshot at all (missing, not a file, wrong suffix).
pub fn snapshot_invalid(message: impl Into<String>) -> Failure {
    Failure::new(ErrorCode::SnapshotInvalid, message)
}

pub fn import_failed(message: impl Into<String>) -> Failure {
    Failure::new(ErrorCode::ImportFailed, message)
}

/// Reading or writing failed underneath the import (I/O, SQLite, the browser's File API).
pub fn backend(e: impl Display) -> Failure {
    import_failed(format!("Snapshot import backend failed: {e}"))
}

/// `suffix` as the user gave it, with its dot (`.txt`), or empty.
pub fn bad_suffix(suffix: &str) -> Failure {
    snapshot_invalid(format!(
        "Snapshot suffix must be .pkl or .pickle, got '{suffix}'"
    ))
}

/// Why the bytes did not decode into a snapshot.
pub fn decode(e: DecodeError) -> Failure {
    match e {
        // The reference's words when its restricted unpickler refuses a class reference.
        DecodeError::Unsafe(m) => {
            import_failed(format!("Snapshot pickle rejected: Unsafe pickle: {m}"))
        }
        e => import_failed(format!("Snapshot import backend reported failure: {e}")),
    }
}

impl From<ImportError> for Failure {
    fn from(e: ImportError) -> Self {
        match e {
            ImportError::DeviceWithoutEvents { .. } | ImportError::DumpState(_) => {
                import_failed(format!("Snapshot import backend reported failure: {e}"))
            }
            ImportError::Replay(_) => {
                import_failed(format!("Snapshot import backend reported failure: {e}"))
                    .with_hint(Some(hint::REPLAY_FAILED))
            }
            ImportError::Sqlite(e) => backend(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_class_reference_is_rejected_not_a_backend_failure() {
        let f = decode(DecodeError::Unsafe(
            "global 'os system' is forbidden".into(),
        ));
        assert_eq!(f.code, ErrorCode::ImportFailed);
        assert_eq!(
            f.message,
            "Snapshot pickle rejected: Unsafe pickle: global 'os system' is forbidden"
        );
        let f = decode(DecodeError::Pickle("truncated".into()));
        assert_eq!(
            f.message,
            "Snapshot import backend reported failure: corrupt pickle: truncated"
        );
    }

    #[test]
    fn replay_and_sqlite_failures_keep_their_reference_wording() {
        let f = Failure::from(ImportError::DeviceWithoutEvents {
            device: 3,
            available: vec![0],
        });
        assert_eq!(
            f.message,
            "Snapshot import backend reported failure: Device 3 has no trace events (devices with events: [0])"
        );
        let f = Failure::from(ImportError::Sqlite(rusqlite::Error::InvalidQuery));
        assert!(
            f.message.starts_with("Snapshot import backend failed: "),
            "{}",
            f.message
        );
        assert_eq!(f.hint.as_deref(), ErrorCode::ImportFailed.hint());
    }

    #[test]
    fn a_bad_suffix_is_named_as_given() {
        let f = bad_suffix(".txt");
        assert_eq!(f.code, ErrorCode::SnapshotInvalid);
        assert_eq!(
            f.message,
            "Snapshot suffix must be .pkl or .pickle, got '.txt'"
        );
    }
}
