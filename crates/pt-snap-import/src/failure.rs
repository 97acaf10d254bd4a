//! What a failed import says to people: the reference's error code, message and hint (spec
//! §2.2–2.3). The CLI and the browser app both report through this one mapping, so a bad or
//! hostile file reads the same in a terminal and in a tab.

use std::fmt::Display;

use pt_snap_model::DecodeError;

use crate::ImportError;

pub const SNAPSHOT_INVALID_HINT: &str = "Provide a trusted existing .pkl or .pickle snapshot file.";
pub const IMPORT_FAILED_HINT: &str =
    "Confirm the pickle is trusted and replayable, then retry with --force if needed.";
/// For a trace the strict replay cannot reconcile (the message names the first such event).
pub const REPLAY_FAILED_HINT: &str = "The trace contradicts the allocator state at the event named. To import it anyway, retry with --lenient: such events are then applied from the trace alone, the numbers are approximate, and each one is listed in the table pt_snap_x_replay_issues.";

/// An import failure as reported: `code` is `SNAPSHOT_INVALID` or `IMPORT_FAILED`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub code: &'static str,
    pub message: String,
    pub hint: &'static str,
}

impl Failure {
    /// The file cannot be a snapshot at all (missing, not a file, wrong suffix).
    pub fn snapshot_invalid(message: impl Into<String>) -> Self {
        Failure {
            code: "SNAPSHOT_INVALID",
            message: message.into(),
            hint: SNAPSHOT_INVALID_HINT,
        }
    }

    pub fn import_failed(message: impl Into<String>) -> Self {
        Failure {
            code: "IMPORT_FAILED",
            message: message.into(),
            hint: IMPORT_FAILED_HINT,
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

impl From<DecodeError> for Failure {
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

impl From<ImportError> for Failure {
    fn from(e: ImportError) -> Self {
        match e {
            ImportError::DeviceWithoutEvents { .. } | ImportError::DumpState(_) => {
                Self::import_failed(format!("Snapshot import backend reported failure: {e}"))
            }
            ImportError::Replay(_) => Failure {
                hint: REPLAY_FAILED_HINT,
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
        let f = Failure::from(DecodeError::Unsafe(
            "global 'os system' is forbidden".into(),
        ));
        assert_eq!(f.code, "IMPORT_FAILED");
        assert_eq!(
            f.message,
            "Snapshot pickle rejected: Unsafe pickle: global 'os system' is forbidden"
        );
        let f = Failure::from(DecodeError::Pickle("truncated".into()));
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
        assert_eq!(f.hint, IMPORT_FAILED_HINT);
    }

    #[test]
    fn suffixes_are_checked_case_insensitively() {
        assert!(Failure::suffix_accepted(".PKL") && Failure::suffix_accepted(".pickle"));
        assert!(!Failure::suffix_accepted(".db") && !Failure::suffix_accepted(""));
        let f = Failure::bad_suffix(".txt");
        assert_eq!(f.code, "SNAPSHOT_INVALID");
        assert_eq!(
            f.message,
            "Snapshot suffix must be .pkl or .pickle, got '.txt'"
        );
    }
}
