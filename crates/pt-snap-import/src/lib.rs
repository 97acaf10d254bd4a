//! The import pipeline's second half: a decoded [`Snapshot`] (see [`pt_snap_model::decode`])
//! → backward replay → SnapshotDB.
//!
//! Everything here works on in-memory data and an open [`Connection`], and reports progress
//! through a callback: no filesystem, threads or clocks, so the browser build runs
//! the very same code as the CLI. Publishing the file atomically, the SHA-256 reuse cache and
//! the focus file are the CLI's business.

mod hash;

use pt_snap_db::{
    ActionValue, BlockRecord, Metadata, TraceRecord, Writer, IMPORT_FORMAT_VERSION,
    METADATA_SCHEMA_VERSION,
};
use pt_snap_model::{Snapshot, StackId};
use pt_snap_replay::{BlockRow, ReplayError, RowSink, TraceRow};
use rusqlite::Connection;

pub use hash::sha256_hex;

/// The name we write into `pt_snap_metadata.importer_name`.
pub const IMPORTER_NAME: &str = "pt-snap";
/// The version we write into `pt_snap_metadata.importer_version`.
pub const IMPORTER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What is being imported and how; the caller knows the source bytes and the time.
#[derive(Debug, Clone)]
pub struct ImportRequest {
    /// Import only this device (it must have events); `None` imports every device with events.
    pub device: Option<usize>,
    pub source_sha256: String,
    pub source_size: u64,
    /// The source's file name, stored as `source_name`.
    pub source_name: String,
    /// ISO-8601 UTC time stored as `completed_at` (e.g. `2026-12-02T13:21:45.664383+00:00`).
    pub completed_at: String,
}

/// Where an import is after decoding (decoding reports its own
/// [`Progress`](pt_snap_model::Progress)); reported through the progress callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Replaying {
        device: usize,
        done: usize,
        total: usize,
    },
    Indexing,
}

/// What an import wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportSummary {
    pub metadata: Metadata,
    pub devices: Vec<usize>,
    /// Events replayed per imported device.
    pub events: Vec<usize>,
    pub callstacks: usize,
    pub frames: usize,
    /// Inconsistencies the replay tolerated, as the reference logs them.
    pub warnings: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("Device {device} has no trace events (devices with events: {available:?})")]
    DeviceWithoutEvents {
        device: usize,
        available: Vec<usize>,
    },
    #[error("{0}")]
    Replay(String),
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// Imports a decoded snapshot into the empty database `conn`.
pub fn import_snapshot(
    snapshot: &Snapshot,
    conn: &Connection,
    request: &ImportRequest,
    progress: &mut dyn FnMut(Stage),
) -> Result<ImportSummary, ImportError> {
    let available = snapshot.devices_with_events();
    let devices = match request.device {
        Some(d) if available.contains(&d) => vec![d],
        Some(device) => return Err(ImportError::DeviceWithoutEvents { device, available }),
        None => available,
    };
    let mut writer = Writer::begin(conn, &devices)?;
    let mut sink = DbSink {
        writer: &mut writer,
        device: 0,
        other_actions: &snapshot.other_actions,
        stack_ids: vec![None; snapshot.stacks.stack_count()],
        stacks_in_order: Vec::new(),
    };
    let mut summary_events = Vec::new();
    let mut warnings = Vec::new();
    for &device in &devices {
        sink.device = device;
        let total = snapshot.device_traces[device].len();
        let tolerated = pt_snap_replay::replay_device(snapshot, device, &mut sink, &mut |done| {
            progress(Stage::Replaying {
                device,
                done,
                total,
            })
        })
        .map_err(|e| match e {
            ReplayError::Sink(e) => ImportError::Sqlite(e),
            e @ ReplayError::Inconsistent { .. } => ImportError::Replay(e.to_string()),
        })?;
        summary_events.push(total);
        warnings.extend(tolerated);
    }
    progress(Stage::Indexing);
    let stacks_in_order = std::mem::take(&mut sink.stacks_in_order);
    let frames = write_callstacks(&mut writer, snapshot, &stacks_in_order)?;
    let metadata = Metadata {
        metadata_schema_version: METADATA_SCHEMA_VERSION,
        import_format_version: IMPORT_FORMAT_VERSION,
        source_sha256: request.source_sha256.clone(),
        source_size: request.source_size as i64,
        source_name: request.source_name.clone(),
        requested_device: request.device.map(|d| d as i64),
        importer_name: IMPORTER_NAME.to_owned(),
        importer_version: IMPORTER_VERSION.to_owned(),
        completed_at: request.completed_at.clone(),
    };
    writer.finish(&metadata)?;
    Ok(ImportSummary {
        metadata,
        devices,
        events: summary_events,
        callstacks: stacks_in_order.len(),
        frames,
        warnings,
    })
}

/// Writes the callstacks in id order, numbering frames by first encounter (stacks in id
/// order, frames innermost first), as the reference does. Returns the number of frames.
fn write_callstacks(
    writer: &mut Writer<'_>,
    snapshot: &Snapshot,
    stacks_in_order: &[StackId],
) -> rusqlite::Result<usize> {
    let mut frame_ids: Vec<Option<i64>> = vec![None; snapshot.stacks.frame_count()];
    let mut next_frame = 0i64;
    let mut ids = Vec::new();
    for (db_id, &stack) in stacks_in_order.iter().enumerate() {
        ids.clear();
        for &f in snapshot.stacks.stack(stack) {
            let id = match frame_ids[f.0 as usize] {
                Some(id) => id,
                None => {
                    let id = next_frame;
                    next_frame += 1;
                    frame_ids[f.0 as usize] = Some(id);
                    let frame = snapshot.stacks.frame(f);
                    writer.frame(id, &frame.filename, frame.line, &frame.name)?;
                    id
                }
            };
            ids.push(id);
        }
        writer.callstack(db_id as i64, &snapshot.stacks.render(stack), &ids)?;
    }
    Ok(next_frame as usize)
}

/// Feeds replayed rows to the writer, numbering callstacks by first encounter.
struct DbSink<'w, 'c> {
    writer: &'w mut Writer<'c>,
    device: usize,
    other_actions: &'w [Box<str>],
    stack_ids: Vec<Option<i64>>,
    stacks_in_order: Vec<StackId>,
}

impl RowSink for DbSink<'_, '_> {
    type Error = rusqlite::Error;

    fn trace_row(&mut self, r: &TraceRow) -> rusqlite::Result<()> {
        let slot = &mut self.stack_ids[r.stack.0 as usize];
        let callstack_id = match *slot {
            Some(id) => id,
            None => {
                let id = self.stacks_in_order.len() as i64;
                self.stacks_in_order.push(r.stack);
                *slot = Some(id);
                id
            }
        };
        let action = match r.action.code() {
            Some(code) => ActionValue::Code(code),
            None => ActionValue::Text(r.action.name(self.other_actions)),
        };
        self.writer.trace(
            self.device,
            &TraceRecord {
                id: r.id,
                action,
                address: r.addr,
                size: r.size,
                stream: r.stream,
                allocated: r.allocated,
                active: r.active,
                reserved: r.reserved,
                callstack_id,
            },
        )
    }

    fn block_row(&mut self, r: &BlockRow) -> rusqlite::Result<()> {
        self.writer.block(
            self.device,
            &BlockRecord {
                id: r.id,
                address: r.address,
                size: r.size,
                requested_size: r.requested_size,
                state: r.state.code(),
                alloc_event_id: r.alloc_event_id,
                free_event_id: r.free_event_id,
            },
        )
    }
}
