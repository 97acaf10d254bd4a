//! Streaming decode of a snapshot pickle into the [`Snapshot`](crate::Snapshot) model.
//!
//! # Accepted layouts
//!
//! - Top level: a dict (`segments`, default `[]`; `device_traces`, default `[]`; other keys
//!   ignored) or a bare list of segment dicts ([`TopLevel::SegmentList`], no traces).
//! - Segment: `address`, `total_size`, `stream`, `allocated_size`, `active_size`, `blocks`
//!   required; `segment_type` (default empty), `frames` (default empty), `device`
//!   (default 0), `is_expandable` (default false).
//! - Block: `size`, `state` required; `requested_size` defaults to `size` (pre-2.0);
//!   torch 2.0 blocks have no `address`/`frames`: the address is the segment base plus the
//!   sizes of the blocks before it, the frames are those of `history[0]`.
//! - Trace entry: `action` required; `addr` (default -1), `size` (0), `stream` (0),
//!   `frames` (empty), explicit `id`; everything else ignored. Unknown actions go to
//!   [`Action::Other`](crate::Action::Other), named once in
//!   [`Snapshot::other_actions`](crate::Snapshot::other_actions).
//! - Frame: `filename` str, `line` int (not bool), `name` str.
//! - `segment_pool_id` of a segment and `pool_id` of a trace entry: a pair of ints, else
//!   none; `allocator_settings`' `trace_alloc_overflowed` and `trace_alloc_max_entries`
//!   ([`TraceBuffer`]): read where usable, never a reason to refuse a file.
//! - Every segment must be one an allocator can hold (see `check.rs`): sizes never
//!   negative, blocks inside it in address order, a listing with free blocks tiling it,
//!   `allocated_size`/`active_size` the sums of its blocks.
//!
//! Integers must fit `i64`, except pointers (`addr`, `address`, `stream`): values in
//! [2^63, 2^64) are stored as their two's-complement `i64`, since the SnapshotDB keeps them
//! in signed 64-bit SQLite INTEGER columns.
//!
//! # Memory
//!
//! Records are built while the pickle streams by (see `sink.rs`): each trace-entry dict is
//! turned into a [`TraceEvent`](crate::TraceEvent) as soon as it is attached to its list,
//! each frame list into an interned [`StackId`](crate::StackId), and the pickle memo then
//! hands out those ids for every later reference to the same list. The pickle arena only
//! holds containers still under construction.

use std::cell::Cell;
use std::io::Read;
use std::rc::Rc;

pub use pt_snap_pickle::Limits;
use pt_snap_pickle::{Node, Val};

use crate::{OomFree, Snapshot, TopLevel, TraceBuffer};

mod check;
mod input;
mod prune;
mod schema;
mod settings;
mod sink;
mod streams;
mod tables;
#[cfg(test)]
mod tests;

pub use input::{describe_start, Compression, Detected, InputShape, HEAD_LEN};
use schema::{find, Decoder, Path};
use sink::SnapshotSink;

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
    /// Not a well-formed JSON document (syntax, text that is not UTF-8, limits exceeded, …).
    #[error("corrupt JSON snapshot: {0}")]
    Json(String),
    /// A well-formed pickle that is not a memory snapshot (wrong top level, wrong field types).
    #[error("not a memory snapshot: {0}")]
    Schema(String),
    /// Neither a pickle, JSON, nor a compression of either; says what the bytes look like.
    #[error("not a pickle, a JSON document or a gzip/zstd/bzip2 stream: {0}")]
    Unrecognized(String),
    /// The compressed stream itself is damaged or cut short.
    #[error("corrupt {0} stream: {1}")]
    Compression(&'static str, String),
    #[error("read failed: {0}")]
    Io(#[from] std::io::Error),
}

impl From<pt_snap_pickle::Error> for DecodeError {
    fn from(e: pt_snap_pickle::Error) -> Self {
        match e {
            pt_snap_pickle::Error::Unsafe(m) => DecodeError::Unsafe(m),
            pt_snap_pickle::Error::Io(e) => DecodeError::Io(e),
            e @ pt_snap_pickle::Error::Malformed { .. } => DecodeError::Pickle(e.to_string()),
        }
    }
}

impl DecodeError {
    /// A failure of `load_json`: the same machine, but a malformed input is a JSON document.
    fn of_json(e: pt_snap_pickle::Error) -> Self {
        match e {
            e @ pt_snap_pickle::Error::Malformed { .. } => DecodeError::Json(e.to_string()),
            e => e.into(),
        }
    }
}

/// Decodes a snapshot from a reader, streaming: a pickle or a JSON document, either of them
/// possibly gzip-, zstd- or bzip2-compressed, told apart by their first bytes.
pub fn decode<R: Read>(
    reader: R,
    progress: &mut dyn FnMut(Progress),
) -> Result<Snapshot, DecodeError> {
    decode_with_limits(reader, progress, &Limits::default())
}

/// [`decode`] of an input whose length is known (a file): on wasm32 a device's trace is
/// then stored at a length planned from it, and not copied once whole (see `Pending` in
/// `tables.rs`; the traces of a file with several non-empty devices are copied all the
/// same). The length says nothing of a compressed input's pickle, and is not used for one.
pub fn decode_sized<R: Read>(
    reader: R,
    len: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<Snapshot, DecodeError> {
    decode_any(reader, Some(len), progress, &Limits::default()).map(|(snapshot, _)| snapshot)
}

/// Decodes a snapshot held in memory.
pub fn decode_slice(bytes: &[u8]) -> Result<Snapshot, DecodeError> {
    decode_sized(bytes, bytes.len() as u64, &mut |_| {})
}

/// [`decode`] with explicit resource bounds for the pickle decoder.
pub fn decode_with_limits<R: Read>(
    reader: R,
    progress: &mut dyn FnMut(Progress),
    limits: &Limits,
) -> Result<Snapshot, DecodeError> {
    decode_input(reader, progress, limits).map(|(snapshot, _)| snapshot)
}

/// [`decode_with_limits`], also saying how the input was stored. Progress counts bytes of
/// the input as given (compressed bytes for a compressed file).
pub fn decode_input<R: Read>(
    reader: R,
    progress: &mut dyn FnMut(Progress),
    limits: &Limits,
) -> Result<(Snapshot, InputShape), DecodeError> {
    decode_any(reader, None, progress, limits)
}

/// `len`: the input's length, if known.
fn decode_any<R: Read>(
    reader: R,
    len: Option<u64>,
    progress: &mut dyn FnMut(Progress),
    limits: &Limits,
) -> Result<(Snapshot, InputShape), DecodeError> {
    let consumed = Rc::new(Cell::new(0));
    let counted = input::Counted {
        inner: reader,
        count: Rc::clone(&consumed),
    };
    let (head, reader) = input::peek(counted)?;
    match Detected::of(&head) {
        Detected::Compressed(c) => {
            let corrupt = |e: std::io::Error| DecodeError::Compression(c.name(), e.to_string());
            let inner = streams::strict(c, reader);
            let (head, mut inner) = input::peek(inner).map_err(corrupt)?;
            let json = match Detected::of(&head) {
                Detected::Json => true,
                Detected::Pickle { .. } => false,
                Detected::Compressed(_) | Detected::Unknown => {
                    // A damaged stream says more than the bytes it gave.
                    std::io::copy(&mut inner, &mut std::io::sink()).map_err(corrupt)?;
                    return Err(DecodeError::Unrecognized(format!(
                        "the {} stream holds neither: {}",
                        c.name(),
                        describe_start(&head)
                    )));
                }
            };
            let mut progress = |p: Progress| {
                progress(Progress {
                    bytes_read: consumed.get(),
                    ..p
                })
            };
            // The decoder counts decompressed bytes: the file's length says nothing of them.
            // The stream is read to its end, so that its checksums and what follows it are
            // checked before anything decoded from it is believed.
            let snapshot = decode_plain(inner, json, None, true, &mut progress, limits).map_err(
                |e| match e {
                    DecodeError::Io(e) => corrupt(e),
                    e => e,
                },
            )?;
            let shape = InputShape {
                compression: Some(c),
                json,
            };
            Ok((snapshot, shape))
        }
        Detected::Unknown => Err(DecodeError::Unrecognized(describe_start(&head))),
        kind => {
            let json = kind == Detected::Json;
            let snapshot = decode_plain(reader, json, len, false, progress, limits)?;
            let shape = InputShape {
                compression: None,
                json,
            };
            Ok((snapshot, shape))
        }
    }
}

/// An uncompressed pickle or JSON document.
///
/// `to_the_end`: read `reader` to its end after the pickle's STOP, without looking at what
/// is there. A pickle file's bytes after STOP are not read, as `pickle.load` does not read
/// them (the reference's behaviour); a decompressed payload's are, so that its stream is
/// verified whole (they are ignored all the same: the payload is the file it was made
/// from). A JSON document is read to its end anyway (only whitespace may follow it).
fn decode_plain<R: Read>(
    mut reader: R,
    json: bool,
    len: Option<u64>,
    to_the_end: bool,
    progress: &mut dyn FnMut(Progress),
    limits: &Limits,
) -> Result<Snapshot, DecodeError> {
    let mut sink = SnapshotSink::new(progress, len);
    let loaded = if json {
        pt_snap_pickle::load_json(&mut reader, &mut sink, limits).map_err(DecodeError::of_json)
    } else {
        pt_snap_pickle::load(&mut reader, &mut sink, limits).map_err(DecodeError::from)
    };
    // A payload that did not decode is read to the end as well: a damaged stream explains
    // it better than the payload's error does (a flipped bit in deflate data decodes to
    // other bytes, which a CRC then refuses). A reader that failed already said why.
    if to_the_end && !matches!(loaded, Err(DecodeError::Io(_))) {
        std::io::copy(&mut reader, &mut std::io::sink())?;
    }
    let pickle = loaded?;
    let arena = &pickle.arena;
    let mut d = Decoder {
        arena,
        t: &mut sink.t,
    };
    let root = Path::Root;
    let mut trace_buffer = TraceBuffer::default();
    let (layout, segments, device_traces) = match pickle.root {
        Val::Ref(id) => match &arena[id] {
            Node::Dict(items) => {
                if let Some(settings) = find(arena, items, "allocator_settings") {
                    trace_buffer = settings::trace_buffer(arena, settings);
                }
                let segments = match find(arena, items, "segments") {
                    Some(v) => d.segments(v, &root.key("segments"))?,
                    None => Vec::new(),
                };
                let traces = match find(arena, items, "device_traces") {
                    Some(v) => d.device_traces(v, &root.key("device_traces"))?,
                    None => Vec::new(),
                };
                (TopLevel::Dict, segments, traces)
            }
            Node::List(_) => (
                TopLevel::SegmentList,
                d.segments(pickle.root, &root)?,
                Vec::new(),
            ),
            other => return Err(top_level_error(other.type_name())),
        },
        v => return Err(top_level_error(arena.type_name(v))),
    };
    for (i, seg) in segments.iter().enumerate() {
        check::segment(seg).map_err(|(block, why)| {
            let list = match layout {
                TopLevel::Dict => root.key("segments"),
                TopLevel::SegmentList => root,
            };
            let at = list.index(i);
            let blocks = at.key("blocks");
            let at = match block {
                Some(b) => blocks.index(b).to_string(),
                None => at.to_string(),
            };
            DecodeError::Schema(format!("{at}: {why}"))
        })?;
    }
    sink.report(pickle.bytes_read);
    let t = sink.t;
    let mut oom_device_free = Vec::new();
    let mut event_times = Vec::with_capacity(device_traces.len());
    let mut event_pools = Vec::with_capacity(device_traces.len());
    let device_traces =
        (device_traces.into_iter().enumerate())
            .map(|(device, list)| {
                oom_device_free.extend(list.ooms.into_iter().map(|(position, device_free)| {
                    OomFree {
                        device,
                        position,
                        device_free,
                    }
                }));
                event_times.push(list.times);
                event_pools.push(list.pools);
                list.events
            })
            .collect();
    let mut snapshot = Snapshot {
        segments,
        device_traces,
        oom_device_free,
        event_times,
        event_pools,
        trace_buffer,
        stacks: t.stacks,
        other_actions: t.other_actions,
        layout,
    };
    prune::drop_unused_stacks(&mut snapshot);
    Ok(snapshot)
}

fn top_level_error(got: &str) -> DecodeError {
    DecodeError::Schema(format!(
        "top level is a {got}, expected a dict or a list of segments"
    ))
}
