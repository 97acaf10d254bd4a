//! A safe, streaming pickle decoder for builtin data.
//!
//! PyTorch memory snapshots are pickles of dicts, lists, strings and numbers in which frame
//! dicts and frame lists are shared through the memo millions of times. This crate decodes
//! such pickles (protocols 0–5) without ever executing anything: every opcode that would
//! look up or call code (GLOBAL, REDUCE, BUILD, …) is refused with [`Error::Unsafe`].
//!
//! # Memory model
//!
//! Scalars are inline [`Val`]s; strings and containers are [`Node`]s in an [`Arena`] and a
//! memo reference shares the node, never copies it. On top of that a [`Sink`] may *compact*
//! each container the moment it is attached to its parent, replacing it by a small
//! [`Handle`] of its own. The container's contents are then freed and every later memo
//! reference yields the handle, so a consumer that turns, say, frame lists into interned
//! stack ids gets the interning of shared lists for free, and the arena only ever holds the
//! containers still under construction.
//!
//! Containers are assumed complete when attached, which is how every pickler writes them.
//! The one exception, a container that contains itself, is an error under a compacting
//! sink (it still decodes with [`KeepAll`]).
//!
//! # Hostile input
//!
//! Input is read in 64 KiB chunks; declared lengths are checked against [`Limits`] and
//! payloads grow only as bytes arrive. The machine is iterative, so nesting depth cannot
//! overflow the Rust stack; it is bounded by [`Limits::max_stack`]. No input panics.
//!
//! Memory follows the input, not what it declares: at most **64 bytes of heap per input
//! byte plus 192 MiB** (`tests/memory_bound.rs` measures the costliest inputs per byte
//! against this). Past a first million, live objects must be justified by the bytes read (one
//! per 4 bytes; real snapshots use one per 16–165 even when decoded whole), the memo's dense
//! part grows only with the number of keys (see `memo.rs`), every container item was pushed
//! by at least one opcode byte, and payloads grow only as their bytes arrive. Decoding into a
//! compacting [`Sink`], as the snapshot decoder does, needs far less.

#![forbid(unsafe_code)]

mod error;
mod json;
mod memo;
pub mod op;
mod source;
mod text;
mod value;
mod vm;
pub mod write;

use std::io::Read;

pub use error::Error;
pub use json::load_json;
pub use value::{Arena, Handle, Node, NodeId, Val};

/// Resource bounds for one decode. The defaults accept any realistic snapshot.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Longest single string, bytes or integer payload, and longest text-opcode line.
    pub max_len: u64,
    /// Most values plus MARKs on the VM stack at once (deep nesting lives here).
    pub max_stack: usize,
    /// Most arena nodes alive at once.
    pub max_nodes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_len: 256 << 20,
            max_stack: 4 << 20,
            max_nodes: 64 << 20,
        }
    }
}

/// The consumer side of a decode.
pub trait Sink {
    /// Offered once per container (list, dict, tuple, set, frozenset), right after it became
    /// an element of another container. Return a handle to replace it: the arena frees its
    /// contents and every reference to it, past or future, reads as [`Val::Handle`].
    /// Return `None` to keep it as a node.
    ///
    /// Elements of `node` may themselves be handles this sink returned earlier.
    fn compact(&mut self, arena: &Arena, node: NodeId) -> Option<Handle>;

    /// Called whenever another input chunk has been read, with the bytes consumed so far.
    fn progress(&mut self, _bytes_read: u64) {}
}

/// A sink that keeps every container: plain decoding into an arena.
pub struct KeepAll;

impl Sink for KeepAll {
    fn compact(&mut self, _: &Arena, _: NodeId) -> Option<Handle> {
        None
    }
}

/// A decoded pickle: the root value and the nodes it reaches.
pub struct Pickle {
    pub arena: Arena,
    pub root: Val,
    /// Bytes consumed, up to and including STOP.
    pub bytes_read: u64,
}

/// Decodes one pickle from `reader`, stopping at its STOP opcode (trailing bytes are not
/// read).
pub fn load<R: Read, S: Sink + ?Sized>(
    reader: R,
    sink: &mut S,
    limits: &Limits,
) -> Result<Pickle, Error> {
    vm::Machine::new(reader, sink, limits).run()
}

/// Decodes an in-memory pickle with default limits, keeping every container.
pub fn from_slice(bytes: &[u8]) -> Result<Pickle, Error> {
    load(bytes, &mut KeepAll, &Limits::default())
}
