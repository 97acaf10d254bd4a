//! Streaming decode of a snapshot pickle into the [`Snapshot`](crate::Snapshot) model.
//!
//! CONTRACT (to be implemented): see the module docs once written.

use std::io::Read;

use crate::Snapshot;

/// How far decoding has got, reported every few hundred KiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Bytes of the pickle consumed so far.
    pub bytes_read: u64,
    /// Trace events decoded so far.
    pub events: u64,
}

/// Why a pickle could not be turned into a snapshot.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The pickle asks for code (a class or function reference): refused, never executed.
    #[error("Unsafe pickle: {0}")]
    Unsafe(String),
    /// Not a well-formed pickle (truncated, unknown opcode, limits exceeded, …).
    #[error("corrupt pickle: {0}")]
    Pickle(String),
    /// A well-formed pickle that is not a memory snapshot (wrong top level, wrong field types).
    #[error("not a memory snapshot: {0}")]
    Schema(String),
    #[error("read failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Decodes a snapshot from a reader, streaming.
pub fn decode<R: Read>(
    _reader: R,
    _progress: &mut dyn FnMut(Progress),
) -> Result<Snapshot, DecodeError> {
    unimplemented!("being written")
}

/// Decodes a snapshot held in memory.
pub fn decode_slice(bytes: &[u8]) -> Result<Snapshot, DecodeError> {
    decode(bytes, &mut |_| {})
}
