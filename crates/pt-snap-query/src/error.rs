//! Why a query did not answer, with the reference's error codes: the one error of every
//! [`crate::Source`], a database's or a dataset's.

use pt_snap_contract::{hint, ErrorCode, Failure};

/// A failed query. Messages are complete sentences in the reference's words.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QueryError {
    /// `TEMPLATE_NOT_FOUND`: the name is not in the registry.
    #[error("Template '{0}' not found")]
    TemplateNotFound(String),
    /// `INVALID_PARAMETER`: parameters that do not fit the template's contract.
    #[error("{0}")]
    InvalidParameter(String),
    /// `INVALID_PARAMETER`: a dataset query outside what the dataset holds (a slice, event ids
    /// or ranges it does not have) or with bad work limits (the reference's
    /// `InvalidParameterError`, where the above is its `TemplateRenderError`).
    #[error("{0}")]
    OutOfScope(String),
    /// `DEVICE_NOT_FOUND`: the device has no tables in this database.
    #[error("{0}")]
    DeviceNotFound(String),
    /// `DATABASE_SCHEMA_INVALID`: not a SnapshotDB, or not a valid dataset.
    #[error("{0}")]
    SchemaInvalid(String),
    /// `QUERY_TIMEOUT`: the interrupt callback stopped the statement.
    #[error("Query timed out")]
    Timeout,
    /// `QUERY_FAILED`: SQLite refused or failed the statement, the dataset engine does not
    /// answer the template, or the work budget was exceeded.
    #[error("{0}")]
    Failed(String),
    /// `ERROR`: reading the database failed outside any template (its metadata, its
    /// devices' bounds).
    #[error("SQLite: {0}")]
    ReadFailed(String),
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
    pub fn error_code(&self) -> ErrorCode {
        match self {
            Self::TemplateNotFound(_) => ErrorCode::TemplateNotFound,
            Self::InvalidParameter(_) | Self::OutOfScope(_) => ErrorCode::InvalidParameter,
            Self::DeviceNotFound(_) => ErrorCode::DeviceNotFound,
            Self::SchemaInvalid(_) => ErrorCode::DatabaseSchemaInvalid,
            Self::Timeout => ErrorCode::QueryTimeout,
            Self::Failed(_) => ErrorCode::QueryFailed,
            Self::ReadFailed(_) => ErrorCode::Other,
        }
    }

    /// The reference's error code as the envelope spells it.
    pub fn code(&self) -> &'static str {
        self.error_code().as_str()
    }

    /// The hint printed with the error.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            Self::OutOfScope(_) => Some(hint::DATASET_SCOPE),
            e => e.error_code().hint(),
        }
    }
}

impl From<pt_snap_db::OpenError> for QueryError {
    /// Whatever keeps a file from opening as a SnapshotDB is `DATABASE_SCHEMA_INVALID`.
    fn from(e: pt_snap_db::OpenError) -> Self {
        Self::SchemaInvalid(e.to_string())
    }
}

/// The failure as people read it, with the query's hint.
impl From<QueryError> for Failure {
    fn from(e: QueryError) -> Self {
        Failure::new(e.error_code(), e.to_string()).with_hint(e.hint())
    }
}
