//! Why a pickle was not decoded.

/// A decoding failure. Nothing is ever executed, so every class or callable reference
/// ends up as [`Error::Unsafe`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The pickle references code (a global, a constructor call, an extension, a persistent
    /// id or an out-of-band buffer). The message names what was refused.
    #[error("{0}")]
    Unsafe(String),
    /// Not a well-formed pickle, or a configured limit was exceeded.
    #[error("{message} (at byte {offset})")]
    Malformed { offset: u64, message: String },
    #[error("read failed: {0}")]
    Io(#[from] std::io::Error),
}

impl Error {
    pub(crate) fn malformed(offset: u64, message: impl Into<String>) -> Error {
        Error::Malformed {
            offset,
            message: message.into(),
        }
    }

    /// The wording of pt-snap-cli's restricted unpickler, which users may grep for.
    pub(crate) fn global(module: &str, name: &str) -> Error {
        Error::Unsafe(format!(
            "global '{module}.{name}' is not allowed. Only basic Python types are permitted for security."
        ))
    }

    pub(crate) fn opcode(name: &str) -> Error {
        Error::Unsafe(format!(
            "opcode {name} is not allowed: it builds objects by calling code. Only basic Python types are permitted for security."
        ))
    }
}
