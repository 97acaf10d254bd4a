//! The error contract: a [`Failure`] (a code, a message and a hint), printed as the
//! reference's envelope.

use pt_snap_contract::{envelope, ErrorCode, Failure};
use pt_snap_query::QueryError;

use crate::budget::Deadline;

/// A failure to report to the user, and how text mode introduces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    pub failure: Failure,
    /// What precedes the message in text mode (`query` says `Error executing query: `).
    pub text_prefix: &'static str,
}

/// A command's error reads as the failure it carries: `e.code`, `e.message`, `e.hint`.
impl std::ops::Deref for CliError {
    type Target = Failure;
    fn deref(&self) -> &Failure {
        &self.failure
    }
}

impl From<Failure> for CliError {
    fn from(failure: Failure) -> Self {
        CliError {
            failure,
            text_prefix: "Error: ",
        }
    }
}

impl CliError {
    /// A failure with its code's default hint.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Failure::new(code, message).into()
    }

    pub fn with_hint(self, hint: Option<&str>) -> Self {
        CliError {
            failure: self.failure.with_hint(hint),
            ..self
        }
    }

    pub fn with_text_prefix(self, text_prefix: &'static str) -> Self {
        CliError {
            text_prefix,
            ..self
        }
    }

    /// The process's exit status.
    pub fn exit(&self) -> u8 {
        self.code.exit_status()
    }

    pub fn import_failed(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ImportFailed, message)
    }

    pub fn invalid_parameter(message: impl Into<String>, hint: &str) -> Self {
        Self::new(ErrorCode::InvalidParameter, message).with_hint(Some(hint))
    }

    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Usage, message)
    }

    pub fn focus_not_configured() -> Self {
        Self::new(
            ErrorCode::FocusNotConfigured,
            "No database path specified and no database configured.",
        )
    }

    pub fn focus_file_invalid(path: &std::path::Path) -> Self {
        Self::new(
            ErrorCode::FocusFileInvalid,
            format!("Invalid project focus file: {}", path.display()),
        )
    }

    pub fn database_not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::DatabaseNotFound, message)
    }

    pub fn schema_invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::DatabaseSchemaInvalid, message)
    }

    pub fn device_not_found(device: i64, available: &[i64]) -> Self {
        let message = if available.is_empty() {
            "No devices found in database.".to_owned()
        } else {
            format!("Device {device} not found. Available: {available:?}")
        };
        Self::new(ErrorCode::DeviceNotFound, message)
    }

    /// A query's failure (a database's or a dataset's), read `<prefix><message>` in text
    /// mode — except a wrong device, which every command reports as `Error: …`.
    pub fn query(e: QueryError, deadline: Option<&Deadline>, prefix: &'static str) -> Self {
        let err = match e {
            QueryError::Timeout => match deadline {
                Some(d) => d.timeout_error(),
                None => Self::new(
                    ErrorCode::QueryTimeout,
                    "Query timed out after None seconds",
                ),
            },
            QueryError::DeviceNotFound(m) => return Self::new(ErrorCode::DeviceNotFound, m),
            e => Self::new(e.error_code(), e.to_string()).with_hint(e.hint()),
        };
        err.with_text_prefix(prefix)
    }

    pub fn skill_error(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::SkillError, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Other, message)
    }

    /// Prints the error: the envelope on stderr under `--json`, readable text on stderr
    /// otherwise (the reference prints text-mode errors on stdout; we keep stdout for
    /// results only).
    pub fn report(&self, json: bool) {
        if json {
            let envelope = envelope::error(&self.failure);
            eprintln!("{}", pt_snap_contract::python::pretty(&envelope));
        } else {
            eprintln!("{}{}", self.text_prefix, self.message);
            if let Some(hint) = &self.hint {
                eprintln!("{hint}");
            }
        }
    }
}

/// A source's failure outside a template run (its metadata, its bounds), read `Error: …`.
impl From<QueryError> for CliError {
    fn from(e: QueryError) -> Self {
        CliError::query(e, None, "Error: ")
    }
}

impl From<rusqlite::Error> for CliError {
    fn from(e: rusqlite::Error) -> Self {
        CliError::internal(format!("SQLite: {e}"))
    }
}

impl From<pt_snap_import::ImportError> for CliError {
    fn from(e: pt_snap_import::ImportError) -> Self {
        Failure::from(e).into()
    }
}

impl From<pt_snap_db::OpenError> for CliError {
    /// Whatever keeps a file from opening as a SnapshotDB is `DATABASE_SCHEMA_INVALID`.
    fn from(e: pt_snap_db::OpenError) -> Self {
        CliError::schema_invalid(e.to_string())
    }
}

pub type CliResult<T = ()> = Result<T, CliError>;
