//! The reference's error codes (spec §2.3), each with the hint it prints by default and the
//! exit status it ends the process with.

use std::fmt;

/// What kind of failure a command reports: the `code` of the error envelope. Serde's form
/// (the variant's name) is for messages between our own processes and workers, never a
/// contract's output, which spells it with [`ErrorCode::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ErrorCode {
    TemplateNotFound,
    InvalidParameter,
    /// A command line the parser refused (Click's usage errors in the reference): reported as
    /// `INVALID_PARAMETER`, but with exit status 2.
    Usage,
    DeviceNotFound,
    FocusNotConfigured,
    FocusFileInvalid,
    DatabaseNotFound,
    DatabaseSchemaInvalid,
    QueryTimeout,
    QueryFailed,
    ImportFailed,
    SnapshotInvalid,
    SplitFailed,
    SkillError,
    /// Anything else (`ERROR`).
    Other,
    /// Ours: a bug or a broken environment (a worker that died, a message that could not be
    /// read), never the user's input. The reference says `ERROR` for these; the browser app,
    /// which the reference does not have, tells them apart.
    Internal,
    /// Ours: a question the person stopped, or a newer one replaced (the CLI has no way to
    /// stop a question but its deadline).
    Cancelled,
    /// Ours: a question sent to a worker whose database is not open (yet, or any more).
    NotOpen,
}

impl ErrorCode {
    /// The code as the envelope spells it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::TemplateNotFound => "TEMPLATE_NOT_FOUND",
            Self::InvalidParameter | Self::Usage => "INVALID_PARAMETER",
            Self::DeviceNotFound => "DEVICE_NOT_FOUND",
            Self::FocusNotConfigured => "FOCUS_NOT_CONFIGURED",
            Self::FocusFileInvalid => "FOCUS_FILE_INVALID",
            Self::DatabaseNotFound => "DATABASE_NOT_FOUND",
            Self::DatabaseSchemaInvalid => "DATABASE_SCHEMA_INVALID",
            Self::QueryTimeout => "QUERY_TIMEOUT",
            Self::QueryFailed => "QUERY_FAILED",
            Self::ImportFailed => "IMPORT_FAILED",
            Self::SnapshotInvalid => "SNAPSHOT_INVALID",
            Self::SplitFailed => "SPLIT_FAILED",
            Self::SkillError => "SKILL_ERROR",
            Self::Other => "ERROR",
            Self::Internal => "INTERNAL_ERROR",
            Self::Cancelled => "QUERY_CANCELLED",
            Self::NotOpen => "DATABASE_NOT_OPEN",
        }
    }

    /// Whether the code is ours, not the reference's: the CLI never reports these.
    pub const fn is_ours(self) -> bool {
        matches!(self, Self::Internal | Self::Cancelled | Self::NotOpen)
    }

    /// The hint the reference prints with this code when the failure has none more specific
    /// (`INVALID_PARAMETER` has several; [`hint`] names them).
    pub const fn hint(self) -> Option<&'static str> {
        Some(match self {
            Self::TemplateNotFound => hint::LIST_TEMPLATES,
            Self::InvalidParameter => hint::PARAMS,
            Self::Usage => hint::USAGE,
            Self::DeviceNotFound => hint::DEVICE,
            Self::FocusNotConfigured => {
                "Use 'pt-snap focus <database_path>' or pass a database path argument."
            }
            Self::FocusFileInvalid => {
                "Fix or remove the invalid .pt-snap/focus.json and set focus again."
            }
            Self::DatabaseNotFound => {
                "Use 'pt-snap focus <database_path>' or pass a database path that exists."
            }
            Self::DatabaseSchemaInvalid => "Confirm the file is a SnapshotDB with a dictionary table.",
            Self::QueryTimeout => {
                "Retry with a higher --timeout, or tighten -n / filters so the query does less work."
            }
            Self::QueryFailed => {
                "Inspect the template SQL and database layout, then retry with --template-info --json."
            }
            Self::ImportFailed => {
                "Confirm the pickle is trusted and replayable, then retry with --force if needed."
            }
            Self::SnapshotInvalid => "Provide a trusted existing .pkl or .pickle snapshot file.",
            Self::SplitFailed => "Check the split arguments, source pickle, and destination path.",
            Self::SkillError => "Use 'pt-snap skill list --json' and check --target / --dir options.",
            Self::Internal => {
                "This is a bug in pt-snap: reload the page and try again, and report it if it happens again."
            }
            Self::NotOpen => "Open a snapshot or a database first.",
            Self::Other | Self::Cancelled => return None,
        })
    }

    /// The process's exit status: 2 for usage errors, 1 for every other failure.
    pub const fn exit_status(self) -> u8 {
        match self {
            Self::Usage => 2,
            _ => 1,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// Hints that go with one code for several causes, in the reference's words where it has
/// them (and ours where its hint is wrong for the cause: compatibility.md, its bug 3).
pub mod hint {
    /// `INVALID_PARAMETER` from template parameters (`--params`).
    pub const PARAMS: &str =
        "Check --params against 'pt-snap query --template-info <name> --json'.";
    /// `INVALID_PARAMETER` for a bad `--category`.
    pub const CATEGORY: &str = "Use 'pt-snap query --list --json' to see valid categories.";
    /// `INVALID_PARAMETER` for a command line the parser refused (exit 2).
    pub const USAGE: &str = "Fix the command-line usage and retry. Use --help for options.";
    /// `INVALID_PARAMETER` for a bad `--timeout` / `PT_SNAP_QUERY_TIMEOUT`.
    pub const TIMEOUT_VALUE: &str =
        "Use a numeric --timeout, or set PT_SNAP_QUERY_TIMEOUT to a number of seconds.";
    /// `INVALID_PARAMETER` for a dataset query outside its scope: a slice, event ids or ranges
    /// the dataset does not have, or bad work limits.
    pub const DATASET_SCOPE: &str =
        "Check --slice, the event ids or ranges in --params, and the dataset work limits.";
    /// `TEMPLATE_NOT_FOUND`.
    pub const LIST_TEMPLATES: &str =
        "Use 'pt-snap query --list --json' to list available templates.";
    /// `DEVICE_NOT_FOUND`.
    pub const DEVICE: &str =
        "Pass --device with an id present in the database, or omit it to use the first device.";
    /// `DATABASE_NOT_FOUND` from `query`/`report`, whose focus may point at a moved file.
    pub const DATABASE_MOVED: &str =
        "Use 'pt-snap focus <new_database_path>' or pass a database path that exists.";
    /// `IMPORT_FAILED` for a trace the strict replay cannot reconcile, met by `command`, which
    /// replays a snapshot strictly (imported through the reuse cache, or without a database)
    /// and has no `--lenient` of its own (`ranks`, `export`, `check`, the reports), but reads
    /// any database it is given.
    pub fn replay_failed_reading(command: &str) -> String {
        format!(
            "The trace contradicts the allocator state at the event named. To read it anyway, \
             import it with 'pt-snap import --lenient <snapshot>' and pass the database it \
             writes to 'pt-snap {command}' instead of the snapshot: its numbers are then \
             approximate, and what it shows says how many events were applied from the trace \
             alone."
        )
    }
    /// `IMPORT_FAILED` for a trace the strict replay cannot reconcile.
    pub const REPLAY_FAILED: &str = "The trace contradicts the allocator state at the event named. To import it anyway, retry with --lenient: such events are then applied from the trace alone, the numbers are approximate, and each one is listed in the table pt_snap_x_replay_issues.";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_errors_are_invalid_parameter_with_exit_2() {
        assert_eq!(ErrorCode::Usage.as_str(), "INVALID_PARAMETER");
        assert_eq!(ErrorCode::Usage.exit_status(), 2);
        assert_eq!(ErrorCode::InvalidParameter.exit_status(), 1);
        assert_eq!(ErrorCode::Other.hint(), None);
        assert!(ErrorCode::QueryTimeout == "QUERY_TIMEOUT");
    }
}
