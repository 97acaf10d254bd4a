//! The one failure type: what went wrong, as a code, a sentence and what to do about it.
//! Every layer reports through it — the import, the dataset reader, the engine in the
//! browser's worker, the CLI — so a failure reads the same in a terminal, in a `--json`
//! envelope and in a tab, hint included.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::ErrorCode;

/// A failure shown to people: the envelope's `code`, `message` and `hint`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub code: ErrorCode,
    pub message: String,
    pub hint: Option<String>,
}

impl Failure {
    /// A failure with its code's default hint.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
            hint: code.hint().map(str::to_owned),
        }
    }

    /// The same failure with another hint (`None`: no hint).
    pub fn with_hint(self, hint: Option<&str>) -> Self {
        Failure {
            hint: hint.map(str::to_owned),
            ..self
        }
    }

    /// A bug or a broken environment, never the input's fault (`INTERNAL_ERROR`, ours).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }

    /// A question stopped before it was answered (`QUERY_CANCELLED`, ours).
    pub fn cancelled(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Cancelled, message)
    }

    pub fn is_cancelled(&self) -> bool {
        self.code == ErrorCode::Cancelled
    }

    /// `{"code", "message", "hint"}`: the envelope's `error` object, and a failed row's.
    pub fn to_json(&self) -> Value {
        json!({"code": self.code.as_str(), "message": self.message, "hint": self.hint})
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for Failure {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_carries_its_codes_hint_and_crosses_as_json() {
        let f = Failure::new(ErrorCode::ImportFailed, "bad");
        assert_eq!(f.hint.as_deref(), ErrorCode::ImportFailed.hint());
        assert_eq!(
            f.to_json(),
            json!({"code": "IMPORT_FAILED", "message": "bad", "hint": ErrorCode::ImportFailed.hint()})
        );
        let text = serde_json::to_string(&f).unwrap();
        assert_eq!(serde_json::from_str::<Failure>(&text).unwrap(), f);
        let ours = Failure::internal("worker died");
        assert!(ours.code.is_ours() && ours.hint.is_some());
        assert!(Failure::cancelled("stopped").is_cancelled());
        assert!(!ErrorCode::QueryFailed.is_ours());
    }
}
