//! [`Source`]: what every reader of snapshots asks, whether the snapshot is one SnapshotDB
//! ([`crate::Analyzer`]) or a sharded dataset (`pt-snap-dataset-query`'s `DatasetSource`).
//! Commands and reports are written once against it; each backend keeps its own plan.

use pt_snap_db::{DeviceBounds, Metadata, MetadataProblem, NoTimes};
use serde_json::{json, Value as Json};

use crate::{Analyzer, QueryError, QueryOutcome, QueryRequest};

/// A snapshot that answers templates.
pub trait Source {
    /// Runs one template: its parameters, device and row window are the request's.
    fn run(&self, request: &QueryRequest) -> Result<QueryOutcome, QueryError>;

    /// The first and last real event of every device, ascending by device.
    fn bounds(&self) -> Result<Vec<DeviceBounds>, QueryError>;

    /// The import's metadata, and whether it can be trusted.
    fn metadata(&self) -> Result<ImportMetadata, QueryError>;

    /// What `overview` says about the source beyond its devices and metadata: the `dataset`
    /// object of a sharded dataset (layout, fingerprint, shards, supported queries); `None`
    /// for a single database.
    fn overview(&self) -> Option<Json>;

    /// When the trace entries `ids` of `device` were recorded: their `time_us` (epoch
    /// microseconds, as PyTorch wrote them), `None` for an id without one (a synthetic
    /// event, an entry without `time_us`, an id the trace does not have); or why the source
    /// has no times for that device at all. SnapshotDB format 3 has no time column: a
    /// database keeps them in our `pt_snap_x_event_time_<d>`.
    fn event_times(&self, device: i64, ids: &[i64]) -> Result<Times, QueryError>;

    /// What the file said about `device`'s trace buffer (pytorch#179276): whether it
    /// overflowed, and its length; `None` where the source keeps nothing of it (our
    /// `pt_snap_x_trace_buffer`; datasets keep none).
    fn trace_buffer(&self, _device: i64) -> Result<Option<TraceBuffer>, QueryError> {
        Ok(None)
    }
}

/// `(overflowed, max_entries)` of a device's trace buffer, each where the file says it.
pub type TraceBuffer = (Option<bool>, Option<i64>);

/// What [`Source::event_times`] answers: one time per id asked, or why there are none.
pub type Times = Result<Vec<Option<i64>>, NoTimes>;

impl Source for Analyzer {
    fn run(&self, request: &QueryRequest) -> Result<QueryOutcome, QueryError> {
        Analyzer::run(self, request)
    }

    fn bounds(&self) -> Result<Vec<DeviceBounds>, QueryError> {
        self.db().bounds().map_err(read_failed)
    }

    fn metadata(&self) -> Result<ImportMetadata, QueryError> {
        let db = self.db();
        Ok(ImportMetadata::of_database(
            db.metadata().map_err(read_failed)?,
            db.lenient_replay_issues().map_err(read_failed)?,
        ))
    }

    fn overview(&self) -> Option<Json> {
        None
    }

    fn event_times(&self, device: i64, ids: &[i64]) -> Result<Times, QueryError> {
        let device = self.resolve_device(Some(device))?;
        (self.db().event_times(device, ids)).map_err(|e| self.execution_error(e))
    }

    fn trace_buffer(&self, device: i64) -> Result<Option<TraceBuffer>, QueryError> {
        let device = self.resolve_device(Some(device))?;
        self.db().trace_buffer(device).map_err(read_failed)
    }
}

fn read_failed(e: pt_snap_db::rusqlite::Error) -> QueryError {
    QueryError::ReadFailed(e.to_string())
}

/// Whether the import metadata is there and valid (`metadata`'s `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataStatus {
    Available,
    Unavailable,
    Invalid,
}

impl MetadataStatus {
    pub fn name(self) -> &'static str {
        match self {
            Self::Available => "available",
            Self::Unavailable => "unavailable",
            Self::Invalid => "invalid",
        }
    }
}

/// The import metadata of a source as `metadata` and `overview` report it.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportMetadata {
    pub status: MetadataStatus,
    /// Why it is not available (`metadata_missing`, `metadata_invalid`, …).
    pub reason: Option<&'static str>,
    pub metadata: Option<Metadata>,
    /// How many events a lenient replay applied from the trace alone (`import --lenient`):
    /// the numbers are approximate. `None` for a strict replay, and for datasets.
    pub lenient_replay_issues: Option<i64>,
}

impl ImportMetadata {
    /// A database's metadata as read, or the problem found reading it.
    pub fn of_database(
        read: Result<Metadata, MetadataProblem>,
        lenient_replay_issues: Option<i64>,
    ) -> Self {
        let (status, reason, metadata) = match read {
            Ok(m) => (MetadataStatus::Available, None, Some(m)),
            Err(p @ MetadataProblem::Missing) => {
                (MetadataStatus::Unavailable, Some(p.reason()), None)
            }
            Err(p) => (MetadataStatus::Invalid, Some(p.reason()), None),
        };
        ImportMetadata {
            status,
            reason,
            metadata,
            lenient_replay_issues,
        }
    }

    /// `{status, reason, metadata}`, the reference's keys in its order.
    pub fn to_json(&self) -> Json {
        json!({
            "status": self.status.name(),
            "reason": self.reason,
            "metadata": self.metadata.as_ref().map(metadata_json),
        })
    }
}

/// The nine metadata fields in the reference's order.
pub fn metadata_json(m: &Metadata) -> Json {
    serde_json::to_value(m).expect("metadata serialises")
}
