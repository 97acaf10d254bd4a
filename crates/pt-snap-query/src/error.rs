//! Why a query did not answer, with the reference's error codes.

/// A failed query. Messages are complete sentences in the reference's words.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QueryError {
    /// `TEMPLATE_NOT_FOUND`: the name is not in the registry.
    #[error("Template '{0}' not found")]
    TemplateNotFound(String),
    /// `INVALID_PARAMETER`: parameters that do not fit the template's contract.
    #[error("{0}")]
    InvalidParameter(String),
    /// `DEVICE_NOT_FOUND`: the device has no tables in this database.
    #[error("{0}")]
    DeviceNotFound(String),
    /// `QUERY_TIMEOUT`: the interrupt callback stopped the statement.
    #[error("Query timed out")]
    Timeout,
    /// `QUERY_FAILED`: SQLite refused or failed the statement.
    #[error("{0}")]
    Failed(String),
}

impl QueryError {
    /// The `QUERY_TIMEOUT` message for a limit of `seconds`, as the reference words it
    /// (`Query timed out after 1e-06 seconds`); the CLI and the browser app both say it.
    pub fn timeout_message(seconds: f64) -> String {
        format!(
            "Query timed out after {} seconds",
            crate::python::float_repr(seconds)
        )
    }

    /// The reference's error code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::TemplateNotFound(_) => "TEMPLATE_NOT_FOUND",
            Self::InvalidParameter(_) => "INVALID_PARAMETER",
            Self::DeviceNotFound(_) => "DEVICE_NOT_FOUND",
            Self::Timeout => "QUERY_TIMEOUT",
            Self::Failed(_) => "QUERY_FAILED",
        }
    }
}
