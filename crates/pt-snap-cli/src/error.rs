//! The error contract: a code, a message and a hint, printed as the reference's envelope.

use serde_json::json;

/// A failure to report to the user. `exit` is 1 for domain errors, 2 for usage errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    pub code: &'static str,
    pub message: String,
    pub hint: Option<String>,
    pub exit: u8,
    /// What precedes the message in text mode (`query` says `Error executing query: `).
    pub text_prefix: &'static str,
}

impl CliError {
    pub fn new(code: &'static str, message: impl Into<String>, hint: Option<&str>) -> Self {
        CliError {
            code,
            message: message.into(),
            hint: hint.map(str::to_owned),
            exit: 1,
            text_prefix: "Error: ",
        }
    }

    pub fn with_text_prefix(self, text_prefix: &'static str) -> Self {
        CliError {
            text_prefix,
            ..self
        }
    }

    pub fn snapshot_invalid(message: impl Into<String>) -> Self {
        pt_snap_import::Failure::snapshot_invalid(message).into()
    }

    pub fn import_failed(message: impl Into<String>) -> Self {
        pt_snap_import::Failure::import_failed(message).into()
    }

    pub fn invalid_parameter(message: impl Into<String>, hint: &str) -> Self {
        Self::new("INVALID_PARAMETER", message, Some(hint))
    }

    pub fn usage(message: impl Into<String>) -> Self {
        CliError {
            exit: 2,
            ..Self::invalid_parameter(
                message,
                "Fix the command-line usage and retry. Use --help for options.",
            )
        }
    }

    pub fn focus_not_configured() -> Self {
        Self::new(
            "FOCUS_NOT_CONFIGURED",
            "No database path specified and no database configured.",
            Some("Use 'pt-snap focus <database_path>' or pass a database path argument."),
        )
    }

    pub fn focus_file_invalid(path: &std::path::Path) -> Self {
        Self::new(
            "FOCUS_FILE_INVALID",
            format!("Invalid project focus file: {}", path.display()),
            Some("Fix or remove the invalid .pt-snap/focus.json and set focus again."),
        )
    }

    pub fn database_not_found(message: impl Into<String>) -> Self {
        Self::new(
            "DATABASE_NOT_FOUND",
            message,
            Some("Use 'pt-snap focus <database_path>' or pass a database path that exists."),
        )
    }

    pub fn schema_invalid(message: impl Into<String>) -> Self {
        Self::new(
            "DATABASE_SCHEMA_INVALID",
            message,
            Some("Confirm the file is a SnapshotDB with a dictionary table."),
        )
    }

    pub fn device_not_found(device: i64, available: &[i64]) -> Self {
        let message = if available.is_empty() {
            "No devices found in database.".to_owned()
        } else {
            format!("Device {device} not found. Available: {available:?}")
        };
        Self::new(
            "DEVICE_NOT_FOUND",
            message,
            Some("Pass --device with an id present in the database, or omit it to use the first device."),
        )
    }

    /// A query engine failure with the reference's code, hint and text-mode prefix.
    pub fn query(e: pt_snap_query::QueryError, deadline: &crate::budget::Deadline) -> Self {
        use pt_snap_query::QueryError as Q;
        let err = match &e {
            Q::TemplateNotFound(_) => Self::new(
                e.code(),
                e.to_string(),
                Some("Use 'pt-snap query --list --json' to list available templates."),
            ),
            Q::InvalidParameter(m) => Self::new(
                e.code(),
                m.clone(),
                Some("Check --params against 'pt-snap query --template-info <name> --json'."),
            ),
            Q::DeviceNotFound(m) => {
                return Self::new(
                    e.code(),
                    m.clone(),
                    Some("Pass --device with an id present in the database, or omit it to use the first device."),
                )
            }
            Q::Timeout => deadline.timeout_error(),
            Q::Failed(m) => Self::new(
                e.code(),
                m.clone(),
                Some("Inspect the template SQL and database layout, then retry with --template-info --json."),
            ),
        };
        err.with_text_prefix("Error executing query: ")
    }

    pub fn skill_error(message: impl Into<String>) -> Self {
        Self::new(
            "SKILL_ERROR",
            message,
            Some("Use 'pt-snap skill list --json' and check --target / --dir options."),
        )
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new("ERROR", message, None)
    }

    /// The JSON error envelope (§2.2).
    pub fn envelope(&self) -> serde_json::Value {
        json!({
            "schema_version": 1,
            "ok": false,
            "error": {"code": self.code, "message": self.message, "hint": self.hint},
        })
    }

    /// Prints the error: the envelope on stderr under `--json`, readable text on stderr
    /// otherwise (the reference prints text-mode errors on stdout; we keep stdout for
    /// results only).
    pub fn report(&self, json: bool) {
        if json {
            eprintln!("{}", crate::output::pretty(&self.envelope()));
        } else {
            eprintln!("{}{}", self.text_prefix, self.message);
            if let Some(hint) = &self.hint {
                eprintln!("{hint}");
            }
        }
    }
}

impl From<rusqlite::Error> for CliError {
    fn from(e: rusqlite::Error) -> Self {
        CliError::internal(format!("SQLite: {e}"))
    }
}

/// The import's own mapping of its failures, shared with the browser app.
impl From<pt_snap_import::Failure> for CliError {
    fn from(f: pt_snap_import::Failure) -> Self {
        CliError::new(f.code, f.message, Some(f.hint))
    }
}

impl From<pt_snap_db::OpenError> for CliError {
    /// Whatever keeps a file from opening as a SnapshotDB is `DATABASE_SCHEMA_INVALID`.
    fn from(e: pt_snap_db::OpenError) -> Self {
        CliError::schema_invalid(e.to_string())
    }
}

pub type CliResult<T = ()> = Result<T, CliError>;
