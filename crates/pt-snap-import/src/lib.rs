//! The import pipeline's second half: a decoded [`Snapshot`] (see [`pt_snap_model::decode`])
//! → backward replay → SnapshotDB.
//!
//! Everything here works on in-memory data and an open [`Connection`], and reports progress
//! through a callback: no filesystem, threads or clocks, so the browser build runs
//! the very same code as the CLI. Publishing the file atomically and the SHA-256 reuse cache are
//! `pt-snap-store`'s, the focus file the CLI's.

#![forbid(unsafe_code)]

pub mod failure;
mod hash;

use pt_snap_db::{
    ActionValue, BlockRecord, Metadata, TraceRecord, Writer, IMPORT_FORMAT_VERSION,
    METADATA_SCHEMA_VERSION,
};
use pt_snap_model::{Action, PoolId, Snapshot, StackId};
use pt_snap_replay::{BlockRow, Issue, ReplayError, RowSink, SegmentClass, TraceRow};

pub use pt_snap_db::Indexes;
pub use pt_snap_replay::Mode as ReplayMode;
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
    /// Strict (the reference's replay), or lenient: events the allocator state cannot
    /// reconcile are listed in `pt_snap_x_replay_issues` and applied only where the counters
    /// stay true (see `pt_snap_replay`'s `lenient` module).
    pub replay: ReplayMode,
    /// With the rows (a database whole when the import returns), or left to the caller.
    pub indexes: Indexes,
}

impl ImportRequest {
    /// A strict import of every device, its indexes built with the rows (the CLI's
    /// defaults); other choices by struct update: `ImportRequest { replay, ..new(…) }`.
    pub fn new(
        source_name: impl Into<String>,
        source_sha256: impl Into<String>,
        source_size: u64,
        completed_at: impl Into<String>,
    ) -> Self {
        ImportRequest {
            device: None,
            source_sha256: source_sha256.into(),
            source_size,
            source_name: source_name.into(),
            completed_at: completed_at.into(),
            replay: ReplayMode::Strict,
            indexes: Indexes::WithRows,
        }
    }
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
    /// What a lenient replay set aside, by device (empty when strict).
    pub issues: Vec<(usize, Issue)>,
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
    /// The dump-time segments cannot be a state (their totals overflow): no mode helps.
    #[error("{0}")]
    DumpState(String),
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// One event's counters after the replay, before its row is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counters {
    pub id: i64,
    pub allocated: i64,
    pub active: i64,
    pub reserved: i64,
}

/// One device's replay, its rows not yet written.
pub struct ReplayedDevice<'a> {
    sink: &'a DbSink,
    snapshot: &'a Snapshot,
    pub device: usize,
}

impl ReplayedDevice<'_> {
    /// Every event's counters in id order, the order its rows will be written in (synthetic
    /// events, with their negative ids, first). Each call walks them again.
    pub fn counters(&self) -> impl Iterator<Item = Counters> + '_ {
        self.sink.counters(self.device, self.snapshot)
    }
}

/// Imports a decoded snapshot into the empty database `conn`.
pub fn import_snapshot(
    snapshot: &Snapshot,
    conn: &Connection,
    request: &ImportRequest,
    progress: &mut dyn FnMut(Stage),
) -> Result<ImportSummary, ImportError> {
    import_snapshot_observed(snapshot, conn, request, progress, &mut |_| {})
}

/// [`import_snapshot`], handing `on_replayed` each device as soon as its replay is done,
/// before its rows are written and long before the indexes are built: the browser shows the
/// peaks and the timeline from its counters while the database is still being made.
pub fn import_snapshot_observed(
    snapshot: &Snapshot,
    conn: &Connection,
    request: &ImportRequest,
    progress: &mut dyn FnMut(Stage),
    on_replayed: &mut dyn FnMut(&ReplayedDevice<'_>),
) -> Result<ImportSummary, ImportError> {
    let available = snapshot.devices_with_events();
    let devices = match request.device {
        Some(d) if available.contains(&d) => vec![d],
        Some(device) => return Err(ImportError::DeviceWithoutEvents { device, available }),
        None => available,
    };
    let mut writer = Writer::begin(conn, &devices)?;
    let mut sink = DbSink {
        stack_ids: vec![None; snapshot.stacks.stack_count()],
        ..DbSink::default()
    };
    let mut summary_events = Vec::new();
    let mut warnings = Vec::new();
    let mut issues = Vec::new();
    for &device in &devices {
        let total = snapshot.device_traces[device].len();
        sink.start_device(total);
        let replayed = pt_snap_replay::replay_device(
            snapshot,
            device,
            request.replay,
            &mut sink,
            &mut |done| {
                progress(Stage::Replaying {
                    device,
                    done,
                    total,
                })
            },
        )
        .map_err(|e| replay_refused(snapshot, device, e))?;
        sink.order(device, snapshot);
        on_replayed(&ReplayedDevice {
            sink: &sink,
            snapshot,
            device,
        });
        sink.write(&mut writer, device, snapshot)?;
        summary_events.push(total);
        warnings.extend(replayed.warnings);
        issues.extend(replayed.issues.into_iter().map(|issue| (device, issue)));
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
    if request.replay == ReplayMode::Lenient {
        writer.replay_issues(
            issues
                .iter()
                .map(|(d, i)| (*d, i.event_id, i.kind.name(), i.message.as_str())),
        )?;
    }
    let ooms = oom_rows(snapshot, &devices);
    if !ooms.is_empty() {
        writer.oom_events(ooms)?;
    }
    let buffers: Vec<(usize, Option<bool>, Option<i64>)> = (devices.iter())
        .map(|&d| {
            let b = &snapshot.trace_buffer;
            (d, b.overflowed(d), b.max_entries(d))
        })
        .filter(|(_, o, m)| o.is_some() || m.is_some())
        .collect();
    writer.trace_buffers(&buffers)?;
    writer.finish(&metadata, request.indexes)?;
    Ok(ImportSummary {
        metadata,
        devices,
        events: summary_events,
        callstacks: stacks_in_order.len(),
        frames,
        warnings,
        issues,
    })
}

/// The rows of `pt_snap_x_pool_<d>` in ascending ids: the segment classes `classes` (by
/// id) merged with the entries' own pool ids `real` (by id); an entry's own pool id wins
/// over its segment's.
fn pool_rows<'a>(
    classes: &'a [(i64, SegmentClass)],
    mut real: std::iter::Peekable<impl Iterator<Item = (i64, PoolId)> + 'a>,
) -> impl Iterator<Item = (i64, Option<&'static str>, Option<PoolId>)> + 'a {
    let mut classes = classes.iter().peekable();
    std::iter::from_fn(move || {
        let next_class = classes.peek().map(|(id, _)| *id);
        let next_real = real.peek().map(|(id, _)| *id);
        let id = match (next_class, next_real) {
            (None, None) => return None,
            (Some(c), Some(r)) => c.min(r),
            (Some(c), None) => c,
            (None, Some(r)) => r,
        };
        let class = (next_class == Some(id)).then(|| classes.next().expect("peeked").1);
        let own = (next_real == Some(id)).then(|| real.next().expect("peeked").1);
        let kind = class
            .and_then(|c| c.large)
            .map(|l| if l { "large" } else { "small" });
        Some((id, kind, own.or(class.and_then(|c| c.pool_id))))
    })
}

/// `(device, event_id, device_free)` of every `oom` event of `devices`, for
/// `pt_snap_x_oom`: the event id is the trace position or the entry's explicit `id`, as for
/// its `trace_entry_<d>` row.
fn oom_rows(snapshot: &Snapshot, devices: &[usize]) -> Vec<(usize, i64, Option<i64>)> {
    let mut rows = Vec::new();
    for &device in devices {
        let events = &snapshot.device_traces[device];
        let free = |position: usize| {
            (snapshot.oom_device_free.iter())
                .find(|f| f.device == device && f.position == position)
                .map(|f| f.device_free)
        };
        for (position, event) in events.iter().enumerate() {
            if event.action == Action::Oom {
                let id = event.id.unwrap_or(position as i64);
                rows.push((device, id, free(position)));
            }
        }
    }
    rows
}

/// A device's replay refused, in the import's words: what `import` says of it, and what a
/// command that replays a snapshot without importing it (`check`, `ranks`) says too.
pub fn replay_refused(
    snapshot: &Snapshot,
    device: usize,
    e: ReplayError<std::convert::Infallible>,
) -> ImportError {
    match e {
        ReplayError::Sink(never) => match never {},
        e @ ReplayError::Inconsistent(_) => {
            ImportError::Replay(format!("{e}{}", all_inconsistencies(snapshot, device)))
        }
        e @ ReplayError::DumpState { .. } => ImportError::DumpState(e.to_string()),
    }
}

/// What a failed strict replay could not say by itself: it runs from the dump backwards and
/// stops at the latest event it cannot reconcile, so a lenient pass (run only on failure)
/// counts them all and names the earliest, where the trace first went wrong.
fn all_inconsistencies(snapshot: &Snapshot, device: usize) -> String {
    let Ok(replayed) = pt_snap_replay::replay_device(
        snapshot,
        device,
        ReplayMode::Lenient,
        &mut pt_snap_replay::DiscardRows,
        &mut |_| {},
    ) else {
        return String::new();
    };
    let events: Vec<i64> = replayed
        .issues
        .iter()
        .map(|i| i.event_id)
        .filter(|&id| id >= 0)
        .collect();
    match (events.len(), events.iter().min()) {
        (0 | 1, _) | (_, None) => String::new(),
        (n, Some(first)) => format!(
            " (the replay runs backwards from the dump; this is the latest of {n} events it cannot reconcile, the earliest being event {first})"
        ),
    }
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

/// Collects one device's replayed rows and numbers callstacks by first encounter.
///
/// The replay produces rows last event first; SQLite builds a table far faster from
/// ascending keys (appends instead of page splits), so rows are held until the device is
/// done and then written in id order. For real events only what the replay computed is
/// held (the totals and the callstack id, 32 bytes); the rest is read back from the trace.
#[derive(Default)]
struct DbSink {
    stack_ids: Vec<Option<i64>>,
    stacks_in_order: Vec<StackId>,
    /// The device's events, set before its replay.
    positions: usize,
    /// Indexed by trace position from the last (`totals[0]` is the last event's): the replay
    /// hands them over in that order, so each is pushed into room reserved at once but
    /// touched only as the replay reaches it. Filled from the first position, the whole
    /// vector was written at the replay's start, beside the compiler's transient memory.
    totals: Vec<Totals>,
    synthetic: Vec<(TraceRow, i64)>,
    /// What the file says of the pools of the segments real events reserved, by event id.
    classes: Vec<(i64, SegmentClass)>,
    blocks: Vec<BlockRow>,
    /// Trace positions in id order when explicit ids are out of order; empty when they are not.
    order: Vec<usize>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Totals {
    allocated: i64,
    active: i64,
    reserved: i64,
    callstack_id: u32,
}

impl DbSink {
    /// Makes room for the rows of a device of `positions` events.
    fn start_device(&mut self, positions: usize) {
        self.positions = positions;
        self.totals.clear();
        // Where it cannot be had at once, the rows grow (or fail) as they did before.
        let _ = self.totals.try_reserve_exact(positions);
    }

    fn totals_at(&self, pos: usize) -> Totals {
        self.totals[self.positions - 1 - pos]
    }

    fn callstack_id(&mut self, stack: StackId) -> i64 {
        let slot = &mut self.stack_ids[stack.0 as usize];
        *slot.get_or_insert_with(|| {
            self.stacks_in_order.push(stack);
            self.stacks_in_order.len() as i64 - 1
        })
    }

    /// Puts the held rows in id order: synthetic events (negative ids) sorted, and a
    /// permutation of the trace when its explicit ids are out of order.
    fn order(&mut self, device: usize, snapshot: &Snapshot) {
        self.synthetic.sort_by_key(|(r, _)| r.id);
        let events = &snapshot.device_traces[device];
        let id = |pos: usize| events[pos].id.unwrap_or(pos as i64);
        self.order.clear();
        if !(1..events.len()).all(|p| id(p - 1) < id(p)) {
            self.order = (0..events.len()).collect();
            self.order.sort_by_key(|&p| id(p));
        }
    }

    /// The trace positions in id order (after [`DbSink::order`]).
    fn positions(&self, len: usize) -> impl Iterator<Item = usize> + '_ {
        (0..len).map(|i| {
            if self.order.is_empty() {
                i
            } else {
                self.order[i]
            }
        })
    }

    /// Every held row's counters in the order [`DbSink::write`] writes them.
    fn counters<'a>(
        &'a self,
        device: usize,
        snapshot: &'a Snapshot,
    ) -> impl Iterator<Item = Counters> + 'a {
        let events = &snapshot.device_traces[device];
        let synthetic = self.synthetic.iter().map(|(r, _)| Counters {
            id: r.id,
            allocated: r.allocated,
            active: r.active,
            reserved: r.reserved,
        });
        let real = self.positions(events.len()).map(move |pos| {
            let t = self.totals_at(pos);
            Counters {
                id: events[pos].id.unwrap_or(pos as i64),
                allocated: t.allocated,
                active: t.active,
                reserved: t.reserved,
            }
        });
        synthetic.chain(real)
    }

    fn write(
        &mut self,
        writer: &mut Writer<'_>,
        device: usize,
        snapshot: &Snapshot,
    ) -> rusqlite::Result<()> {
        let action = |a: Action| match a.code() {
            Some(code) => ActionValue::Code(code),
            None => ActionValue::Text(a.name(&snapshot.other_actions)),
        };
        // The pools of the synthetic segment events, before `synthetic` is drained.
        let mut classes: Vec<(i64, SegmentClass)> = (self.synthetic.iter())
            .filter_map(|(r, _)| r.segment.map(|c| (r.id, c)))
            .filter(|(_, c)| *c != SegmentClass::default())
            .collect();
        classes.append(&mut self.classes);
        classes.sort_unstable_by_key(|(id, _)| *id);
        let synthetic = self
            .synthetic
            .drain(..)
            .map(|(r, callstack_id)| TraceRecord {
                id: r.id,
                action: action(r.action),
                address: r.addr,
                size: r.size,
                stream: r.stream,
                allocated: r.allocated,
                active: r.active,
                reserved: r.reserved,
                callstack_id,
            });
        writer.traces(device, synthetic)?;
        let events = &snapshot.device_traces[device];
        let id = |pos: usize| events[pos].id.unwrap_or(pos as i64);
        let rows = self.positions(events.len()).map(|pos| {
            let (e, t) = (&events[pos], self.totals_at(pos));
            TraceRecord {
                id: id(pos),
                action: action(e.action),
                address: e.addr,
                size: e.size,
                stream: e.stream,
                allocated: t.allocated,
                active: t.active,
                reserved: t.reserved,
                callstack_id: i64::from(t.callstack_id),
            }
        });
        writer.traces(device, rows)?;
        let times = snapshot.times(device);
        if !times.is_empty() {
            let rows = (self.positions(events.len()))
                .filter_map(|pos| Some((id(pos), times.get(pos, &events[pos])?)));
            writer.event_times(device, rows)?;
        }
        let pools = snapshot.pools(device);
        let real = (self.positions(events.len()))
            .filter_map(|pos| Some((id(pos), pools.get(pos)?)))
            .peekable();
        writer.pools(device, pool_rows(&classes, real))?;
        // Freed before the blocks are written, whose pages can then take its room.
        self.totals = Vec::new();
        // Blocks arrive by descending allocation id, then the pre-trace ones -1, -2, …
        self.blocks.reverse();
        // Ids are unique, so an unstable sort orders them the same, without a stable sort's
        // scratch buffer of half the rows.
        self.blocks.sort_unstable_by_key(|b| b.id);
        let blocks = self.blocks.drain(..).map(|r| BlockRecord {
            id: r.id,
            address: r.address,
            size: r.size,
            requested_size: r.requested_size,
            state: r.state.code(),
            alloc_event_id: r.alloc_event_id,
            free_event_id: r.free_event_id,
        });
        writer.blocks(device, blocks)?;
        // The next device announces its own; until then the room is the writer's.
        self.blocks = Vec::new();
        Ok(())
    }
}

impl RowSink for DbSink {
    type Error = std::convert::Infallible;

    fn trace_row(&mut self, r: &TraceRow) -> Result<(), Self::Error> {
        let callstack_id = self.callstack_id(r.stack);
        match r.position {
            Some(pos) => {
                let t = Totals {
                    allocated: r.allocated,
                    active: r.active,
                    reserved: r.reserved,
                    callstack_id: callstack_id as u32,
                };
                let from_last = self.positions - 1 - pos;
                if from_last == self.totals.len() {
                    self.totals.push(t);
                } else {
                    if self.totals.len() <= from_last {
                        self.totals.resize(from_last + 1, Totals::default());
                    }
                    self.totals[from_last] = t;
                }
            }
            None => self.synthetic.push((*r, callstack_id)),
        }
        if let (Some(class), Some(_)) = (r.segment, r.position) {
            if class != SegmentClass::default() {
                self.classes.push((r.id, class));
            }
        }
        Ok(())
    }

    fn block_row(&mut self, r: &BlockRow) -> Result<(), Self::Error> {
        self.blocks.push(*r);
        Ok(())
    }

    fn expect_blocks(&mut self, n: usize) {
        // Where it cannot be had at once, the rows grow (or fail) as they did before.
        let _ = self.blocks.try_reserve_exact(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pt_snap_model::{Block, BlockState, Segment, TraceEvent};

    fn event(action: Action, size: i64, id: i64) -> TraceEvent {
        TraceEvent {
            action,
            addr: 4096,
            size,
            stream: 0,
            frames: StackId::EMPTY,
            id: Some(id),
            time_low: 0,
        }
    }

    #[test]
    fn explicit_ids_out_of_order_are_kept_with_their_totals_and_times() {
        let mut events = vec![
            event(Action::Alloc, 512, 9),
            event(Action::FreeRequested, 512, 2),
            event(Action::FreeCompleted, 512, 5),
        ];
        let times = pt_snap_model::EventTimes::assign(&mut events, &[Some(100), None, Some(300)]);
        let mut snapshot = Snapshot {
            segments: vec![Segment {
                device: 0,
                address: 4096,
                total_size: 1024,
                stream: 0,
                segment_type: "small".into(),
                allocated_size: 0,
                active_size: 0,
                is_expandable: false,
                pool_id: None,
                frames: StackId::EMPTY,
                blocks: vec![Block {
                    address: 4096,
                    size: 1024,
                    requested_size: 0,
                    state: BlockState::Inactive,
                    frames: StackId::EMPTY,
                }],
            }],
            device_traces: vec![events],
            event_times: vec![times],
            ..Snapshot::default()
        };
        let conn = Connection::open_in_memory().unwrap();
        let request = ImportRequest::new("x.pkl", "0".repeat(64), 1, "2026-12-02T00:00:00+00:00");
        import_snapshot(&snapshot, &conn, &request, &mut |_| {}).unwrap();
        let rows: Vec<(i64, i64, i64)> = conn
            .prepare("SELECT id, allocated, active FROM trace_entry_0 ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(rows, [(-1, 0, 0), (2, 0, 512), (5, 0, 0), (9, 512, 512)]);
        let time_rows = |conn: &Connection| -> Vec<(i64, i64)> {
            conn.prepare("SELECT event_id, time_us FROM pt_snap_x_event_time_0 ORDER BY rowid")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        // In id order (the rowid), synthetic events and entries without a time left out.
        assert_eq!(time_rows(&conn), [(5, 300), (9, 100)]);

        // A trace without times: the table is there, empty.
        snapshot.event_times.clear();
        let conn = Connection::open_in_memory().unwrap();
        import_snapshot(&snapshot, &conn, &request, &mut |_| {}).unwrap();
        assert_eq!(time_rows(&conn), []);
    }

    /// What the file says of pools (segment types and pool ids, pytorch#177717) and of its
    /// trace buffer (pytorch#179276) lands in our tables, by event id.
    #[test]
    fn pools_and_the_trace_buffer_are_kept() {
        let mib = 1 << 20;
        // With `say`, the file says what pools and buffer were; without, nothing.
        let make = |say: bool| {
            let (kind_small, kind_large, pool_small, pool_large, own_large, own_alloc, buffer) =
                if say {
                    (
                        r#""segment_type": "small","#,
                        r#""segment_type": "large","#,
                        r#""segment_pool_id": [0, 0],"#,
                        r#""segment_pool_id": [1, 5],"#,
                        r#", "pool_id": [1, 5]"#,
                        r#", "pool_id": [0, 0]"#,
                        r#""trace_alloc_overflowed": true, "trace_alloc_max_entries": 4"#,
                    )
                } else {
                    ("", "", "", "", "", "", "")
                };
            format!(
                r#"{{"segments": [
              {{"device": 0, "address": 0, "total_size": {small}, "stream": 0, {kind_small}
                {pool_small} "allocated_size": 512, "active_size": 512, "blocks": [
                {{"address": 0, "size": 512, "requested_size": 512, "state": "active_allocated"}},
                {{"address": 512, "size": {rest}, "requested_size": 0, "state": "inactive"}}]}},
              {{"device": 0, "address": {big_at}, "total_size": {big}, "stream": 0, {kind_large}
                {pool_large} "allocated_size": 0, "active_size": 0, "blocks": [
                {{"address": {big_at}, "size": {big}, "requested_size": 0, "state": "inactive"}}]}}],
             "device_traces": [[
              {{"action": "segment_alloc", "addr": {big_at}, "size": {big}, "stream": 0{own_large}}},
              {{"action": "alloc", "addr": 0, "size": 512, "stream": 0{own_alloc}}},
              {{"action": "segment_alloc", "addr": {gone}, "size": {small}, "stream": 0}},
              {{"action": "segment_free", "addr": {gone}, "size": {small}, "stream": 0}}]],
             "allocator_settings": {{{buffer}}}}}"#,
                small = 2 * mib,
                rest = 2 * mib - 512,
                big = 20 * mib,
                big_at = 1i64 << 30,
                gone = 1i64 << 40,
            )
        };
        let json = make(true);
        let plain_json = make(false);
        let snapshot = pt_snap_model::decode_slice(json.as_bytes()).unwrap();
        let conn = Connection::open_in_memory().unwrap();
        let request = ImportRequest::new("x.json", "0".repeat(64), 1, "2026-12-02T00:00:00+00:00");
        import_snapshot(&snapshot, &conn, &request, &mut |_| {}).unwrap();
        type Row = (i64, Option<String>, Option<i64>, Option<i64>);
        let rows: Vec<Row> = conn
            .prepare("SELECT * FROM pt_snap_x_pool_0 ORDER BY rowid")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let large = Some("large".to_owned());
        assert_eq!(
            rows,
            [
                (-1, Some("small".to_owned()), Some(0), Some(0)),
                (0, large, Some(1), Some(5)),
                (1, None, Some(0), Some(0)),
            ]
        );
        let buffer: (i64, i64, i64) = conn
            .query_row("SELECT * FROM pt_snap_x_trace_buffer", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .unwrap();
        assert_eq!(buffer, (0, 1, 4));
        // A file that says nothing of either writes neither table.
        let plain = plain_json;
        let snapshot = pt_snap_model::decode_slice(plain.as_bytes()).unwrap();
        let conn = Connection::open_in_memory().unwrap();
        import_snapshot(&snapshot, &conn, &request, &mut |_| {}).unwrap();
        let ours: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name IN ('pt_snap_x_pool_0', 'pt_snap_x_trace_buffer')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(ours, 0);
    }
}
