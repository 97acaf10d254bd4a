//! Snapshots on disk in, SnapshotDBs and datasets out: what every command that reads or
//! writes files asks for, so that each is parse → call → print.
//!
//! * [`snapshot`]: a snapshot path as a command is given it — checked, named, and where its
//!   database goes (beside the path as given: a link's database goes beside the link);
//! * [`import`]: one snapshot → its SnapshotDB through the reuse cache (the reference's
//!   SHA-256 rule), decoded, replayed, re-hashed, verified and published atomically;
//!   [`dataset`]: the same for the sharded datasets;
//! * [`stale`]: what a killed import left beside its target, and how an import marks its
//!   own files;
//! * [`open`]: any input — a database by its header, else a snapshot imported (or reused)
//!   beside itself — opened read-only;
//! * [`split`]: a snapshot's slices staged, read back, replayed and published as a new
//!   directory;
//! * [`inputs`]: the files of a job (`ranks`, `export`, `check`): directories listed,
//!   duplicates and a snapshot's own database dropped, in natural order; [`pool`]: work on
//!   them on a few threads, a panic failing one file only.
//!
//! Everything fails with the one [`Failure`](pt_snap_contract::Failure); progress and
//! warnings go to the caller's [`Observer`], so a terminal, a JSON run or a test each show
//! them their way.

#![forbid(unsafe_code)]

pub mod dataset;
pub mod import;
pub mod inputs;
pub mod open;
pub mod pool;
pub mod snapshot;
pub mod split;
pub mod stale;

pub use pt_snap_import::{ImportRequest, ReplayMode, Stage};
pub use pt_snap_model::Progress;

/// What an import reports as it goes: where it is, and what the user should be told.
pub trait Observer {
    /// The import starts decoding a snapshot of `total_bytes`.
    fn begin(&mut self, total_bytes: u64);
    fn decoding(&mut self, p: Progress);
    fn update(&mut self, stage: Stage);
    /// The database is written (or the import failed: a bar goes either way).
    fn finish(&mut self);
    /// Something the user should know that does not stop the import.
    fn warn(&mut self, warning: &str);
}

/// An observer that shows nothing and drops every warning.
pub struct Quiet;

impl Observer for Quiet {
    fn begin(&mut self, _: u64) {}
    fn decoding(&mut self, _: Progress) {}
    fn update(&mut self, _: Stage) {}
    fn finish(&mut self) {}
    fn warn(&mut self, _: &str) {}
}

/// ISO-8601 UTC time stored as `completed_at`.
pub(crate) fn now_utc_iso() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    pt_snap_contract::python::isoformat_utc(now.as_secs() as i64, now.subsec_micros())
}
