//! What a failed import says to people: the reference's error code, message and hint (spec
//! §2.2–2.3). The CLI and the browser app both report through this one mapping, so a bad or
//! hostile file reads the same in a terminal and in a tab.

use std::fmt::Display;

use pt_snap_contract::{hint, ErrorCode};
use pt_snap_model::DecodeError;

use crate::ImportError;

/// An import failure as reported: `code` is `SNAPSHOT_INVALID` or `IMPORT_FAILED` (spelled
/// out, as the browser app passes it on as text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportFailure {
    pub code: &'static str,
    pub message: String,
    pub hint: &'static str,
}

impl ImportFailure {
    fn new(code: ErrorCode, message: String) -> Self {
        ImportFailure {
            code: code.as_str(),
            message,
            hint: code.hint().expect("import codes have hints"),
        }
    }

    /// The file cannot be a snapshot at all (missing, not a file, wrong suffix).
    pub fn snapshot_invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::SnapshotInvalid, message.into())
    }

    pub fn import_failed(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ImportFailed, message.into())
    }

    /// The code as the contract's enum.
    pub fn error_code(&self) -> ErrorCode {
        if self.code == ErrorCode::SnapshotInvalid.as_str() {
            ErrorCode::SnapshotInvalid
        } else {
            ErrorCode::ImportFailed
        }
    }

    /// Reading or writing failed underneath the import (I/O, SQLite, the browser's File API).
    pub fn backend(e: impl Display) -> Self {
        Self::import_failed(format!("Snapshot import backend failed: {e}"))
    }

    /// `suffix` as the user gave it, with its dot (`.txt`), or empty.
    pub fn bad_suffix(suffix: &str) -> Self {
        Self::snapshot_invalid(format!(
            "Snapshot suffix must be .pkl or .pickle, got '{suffix}'"
        ))
    }

    /// Whether `suffix` (with its dot) is one the importer takes (`.pkl` or `.pickle`, any case).
    pub fn suffix_accepted(suffix: &str) -> bool {
        matches!(suffix.to_ascii_lowercase().as_str(), ".pkl" | ".pickle")
    }
}

impl From<DecodeError> for ImportFailure {
    fn from(e: DecodeError) -> Self {
        match e {
            // The reference's words when its restricted unpickler refuses a class reference.
            DecodeError::Unsafe(m) => {
                Self::import_failed(format!("Snapshot pickle rejected: Unsafe pickle: {m}"))
            }
            e => Self::import_failed(format!("Snapshot import backend reported failure: {e}")),
        }
    }
}

impl From<ImportError> for ImportFailure {
    fn from(e: ImportError) -> Self {
        match e {
            ImportError::DeviceWithoutEvents { .. } | ImportError::DumpState(_) => {
                Self::import_failed(format!("Snapshot import backend reported failure: {e}"))
            }
            ImportError::Replay(_) => ImportFailure {
                hint: hint::REPLAY_FAILED,
                ..Self::import_failed(format!("Snapshot import backend reported failure: {e}"))
            },
            ImportError::Sqlite(e) => Self::backend(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_class_reference_is_rejected_not_a_backend_failure() {
        let f = ImportFailure::from(DecodeError::Unsafe(
            "global 'os system' is forbidden".into(),
        ));
        assert_eq!(f.code, "IMPORT_FAILED");
        assert_eq!(
            f.message,
            "Snapshot pickle rejected: Unsafe pickle: global 'os system' is forbidden"
        );
        let f = ImportFailure::from(DecodeError::Pickle("truncated".into()));
        assert_eq!(
            f.message,
            "Snapshot import backend reported failure: corrupt pickle: truncated"
        );
    }

    #[test]
    fn replay_and_sqlite_failures_keep_their_reference_wording() {
        let f = ImportFailure::from(ImportError::DeviceWithoutEvents {
            device: 3,
            available: vec![0],
        });
        assert_eq!(
            f.message,
            "Snapshot import backend reported failure: Device 3 has no trace events (devices with events: [0])"
        );
        let f = ImportFailure::from(ImportError::Sqlite(rusqlite::Error::InvalidQuery));
        assert!(
            f.message.starts_with("Snapshot import backend failed: "),
            "{}",
            f.message
        );
        assert_eq!(f.hint, ErrorCode::ImportFailed.hint().unwrap());
    }

    #[test]
    fn suffixes_are_checked_case_insensitively() {
        assert!(
            ImportFailure::suffix_accepted(".PKL") && ImportFailure::suffix_accepted(".pickle")
        );
        assert!(!ImportFailure::suffix_accepted(".db") && !ImportFailure::suffix_accepted(""));
        let f = ImportFailure::bad_suffix(".txt");
        assert_eq!(f.code, "SNAPSHOT_INVALID");
        assert_eq!(
            f.message,
            "Snapshot suffix must be .pkl or .pickle, got '.txt'"
        );
    }
}
