//! SnapshotDB: the SQLite database pt-snap-cli 0.4.1 defined (import format 3), and ours.
//!
//! One `trace_entry_<d>` and one `block_<d>` table per imported device, callstacks interned
//! once for all devices (`callstack` with the rendered text, `frame`/`callstack_frame`/
//! `callstack_frame_manifest` with the structured frames), a `dictionary` naming the integer
//! codes, and `pt_snap_metadata` describing the import. The exact DDL matters: agents and the
//! reference read these tables by name, and [`schema`] reproduces them byte for byte.
//!
//! [`Writer`] fills a fresh database in one transaction, indexes last (or later, by the
//! caller: [`Indexes`]). [`SnapshotDb`] reads
//! one (ours or the reference's) without ever writing.

#![forbid(unsafe_code)]

mod check;
mod metadata;
mod reader;
pub mod schema;
mod writer;

pub use check::{check_format_objects, is_format_object};
pub use metadata::{Metadata, MetadataProblem, METADATA_SCHEMA_VERSION};
pub use reader::{
    file_uri, is_sqlite_file, is_sqlite_header, open_readonly_connection, sqlite_message,
    CallstackLayout, DeviceBounds, NoTimes, OpenError, SnapshotDb, SQLITE_HEADER,
};
pub use rusqlite;
pub use writer::{
    build_index, index_name, index_statements, missing_indexes, ActionValue, BlockRecord, Indexes,
    TraceRecord, Writer,
};

/// The import format this crate writes (`pt_snap_metadata.import_format_version`).
pub const IMPORT_FORMAT_VERSION: i64 = 3;
