//! The worker that holds one file: it imports a snapshot (any shape) or opens a
//! SnapshotDB, then answers the page's questions until the page ends it. This binary is the
//! edge only; every answer comes from `pt_snap_engine::Engine`, which is tested natively.
//!
//! * `messages`: the message loop (`pt_snap_engine::protocol`, JSON text beside the file,
//!   the cancel cell and the download `Blob`), what the worker holds, the clock.
//! * `import`: what opening a file does, the policy of the OPFS cache included.
//! * `source`: the file sent, dropped or served by `pt-snap view`.
//! * `file_reader`: the file read a slice at a time, ahead by a helper worker through shared
//!   slots, and hashed by it.
//! * `indexes`: the indexes an import deferred, built between the page's questions.
//! * `download`: "Download .db"; `summaries`: files read as an exported summary table.

#[cfg(not(target_arch = "wasm32"))]
fn main() {}

#[cfg(target_arch = "wasm32")]
fn main() {
    messages::start();
}

// Each module is built for wasm32 only (`#![cfg]` in it): natively this binary is a stub.
mod download;
mod file_reader;
mod import;
mod indexes;
mod messages;
mod source;
mod summaries;
