//! `pt-snap split`'s core: cut one device's trace into slices, each an independently
//! replayable snapshot (spec §10.1).
//!
//! Slices are cut from the end of the trace. Walking it backwards, undoing each event,
//! yields the allocator state at every point; a slice is the state at the end of its window
//! (as its dump-time `segments`) plus the window's events, each the source's own dict with an
//! explicit `id`. Undo rules, slice sizes, key sets and file contents follow pt-snap-cli
//! 0.4.1, except that segments re-created inside a slice keep their device (the reference
//! writes device 0, so its slices of other devices fail validation; see
//! `docs/compatibility.md`).
//!
//! No filesystem and no clock here: the CLI reads the source, writes files, reads each one
//! back for [`validate`], and publishes the directory.

#![forbid(unsafe_code)]

mod encode;
mod state;

use pt_snap_model::Snapshot;
use pt_snap_pickle::{Node, NodeId, Pickle, Val};

use encode::{dict_get, SliceView};
use state::{Frames, State};

pub use encode::{python_float, write_str, write_value, JsonError};

/// How slice sizes are chosen: `--slices N` or `--max-entries M`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    Slices(u64),
    MaxEntries(u64),
}

impl Strategy {
    /// Events per slice for a trace of `n` events: `min(ceil(n / N), n)` or `min(n, M)`.
    pub fn max_entries(self, n: u64) -> u64 {
        match self {
            Strategy::Slices(k) => n.div_ceil(k.max(1)).min(n),
            Strategy::MaxEntries(m) => m.min(n),
        }
        .max(1)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Pickle,
    Json,
}

impl Format {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "pickle" => Some(Format::Pickle),
            "json" => Some(Format::Json),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::Pickle => "pickle",
            Format::Json => "json",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Format::Pickle => "pkl",
            Format::Json => "json",
        }
    }
}

/// `<stem>__device-<d>__slice-<i>.<pkl|json>`.
pub fn slice_file_name(stem: &str, device: usize, index: usize, format: Format) -> String {
    format!(
        "{stem}__device-{device}__slice-{index}.{}",
        format.extension()
    )
}

/// A snapshot read for splitting: the typed model (for the replay) and the decoded pickle
/// (for the values slices copy: event dicts and frame lists).
pub struct Source {
    pickle: Pickle,
    snapshot: Snapshot,
    /// Per model segment: its frames and its blocks' frames, as decoded.
    segment_frames: Vec<(Frames, Vec<Frames>)>,
    /// Event dicts per device, `None` when the file has no `device_traces` list.
    traces: Option<Vec<Vec<NodeId>>>,
}

/// Why a source cannot be split; `Display` is the reference's detail text.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("unsafe pickle: {0}")]
    Unsafe(String),
    #[error("{0}")]
    Invalid(String),
}

impl Source {
    /// Decodes a snapshot pickle held in memory.
    pub fn from_bytes(bytes: &[u8]) -> Result<Source, SourceError> {
        Source::from_decoded(Source::decode_values(bytes), Source::decode_model(bytes))
    }

    /// The first of the two decodes [`from_decoded`](Self::from_decoded) joins: the pickle
    /// as plain values. Independent of [`decode_model`](Self::decode_model), so a caller
    /// with threads can run both at once.
    pub fn decode_values(bytes: &[u8]) -> Result<Pickle, SourceError> {
        pt_snap_pickle::from_slice(bytes).map_err(|e| match e {
            pt_snap_pickle::Error::Unsafe(m) => SourceError::Unsafe(m),
            e => SourceError::Invalid(format!("Cannot load pickle file: {e}")),
        })
    }

    /// The second decode: the typed model the replay runs on.
    pub fn decode_model(bytes: &[u8]) -> Result<Snapshot, SourceError> {
        pt_snap_model::decode_slice(bytes).map_err(|e| SourceError::Invalid(e.to_string()))
    }

    /// Joins both decodes of the same bytes.
    pub fn from_decoded(
        pickle: Result<Pickle, SourceError>,
        snapshot: Result<Snapshot, SourceError>,
    ) -> Result<Source, SourceError> {
        let pickle = pickle?;
        let arena = &pickle.arena;
        let root = match pickle.root {
            Val::Ref(id) => match &arena[id] {
                Node::Dict(items) => items,
                other => return Err(not_a_dict(other.type_name())),
            },
            v => return Err(not_a_dict(arena.type_name(v))),
        };
        let snapshot = snapshot?;

        let list = |v: Option<Val>| -> Option<&[Val]> {
            match v {
                Some(Val::Ref(id)) => match &arena[id] {
                    Node::List(l) => Some(l),
                    _ => None,
                },
                _ => None,
            }
        };
        let dict = |v: Val| -> Option<&[(Val, Val)]> {
            match v {
                Val::Ref(id) => match &arena[id] {
                    Node::Dict(d) => Some(d),
                    _ => None,
                },
                _ => None,
            }
        };
        let mismatch = || SourceError::Invalid("decoded records do not match the pickle".into());

        let raw_segments = list(dict_get(arena, root, "segments")).unwrap_or(&[]);
        if raw_segments.len() != snapshot.segments.len() {
            return Err(mismatch());
        }
        let mut segment_frames = Vec::with_capacity(raw_segments.len());
        for (&raw, seg) in raw_segments.iter().zip(&snapshot.segments) {
            let items = dict(raw).ok_or_else(mismatch)?;
            let blocks = list(dict_get(arena, items, "blocks")).ok_or_else(mismatch)?;
            if blocks.len() != seg.blocks.len() {
                return Err(mismatch());
            }
            // torch 2.0 blocks have no `frames`, only a `history` whose first entry holds
            // them (what our import reads; the reference cannot split such files at all).
            let history_frames = |d: &[(Val, Val)]| {
                let first = list(dict_get(arena, d, "history"))?.first().copied()?;
                dict_get(arena, dict(first)?, "frames")
            };
            let block_frames = blocks
                .iter()
                .map(|&b| {
                    dict(b).map(|d| dict_get(arena, d, "frames").or_else(|| history_frames(d)))
                })
                .collect::<Option<Vec<Frames>>>()
                .ok_or_else(mismatch)?;
            segment_frames.push((dict_get(arena, items, "frames"), block_frames));
        }

        let traces = match list(dict_get(arena, root, "device_traces")) {
            None => None,
            Some(lists) => {
                let mut traces = Vec::with_capacity(lists.len());
                for (d, &l) in lists.iter().enumerate() {
                    let events = list(Some(l)).ok_or_else(mismatch)?;
                    let ids = events
                        .iter()
                        .map(|&e| match e {
                            Val::Ref(id) if matches!(arena[id], Node::Dict(_)) => Some(id),
                            _ => None,
                        })
                        .collect::<Option<Vec<NodeId>>>()
                        .ok_or_else(mismatch)?;
                    if snapshot.device_traces.get(d).map(Vec::len) != Some(ids.len()) {
                        return Err(mismatch());
                    }
                    traces.push(ids);
                }
                Some(traces)
            }
        };
        Ok(Source {
            pickle,
            snapshot,
            segment_frames,
            traces,
        })
    }

    /// Whether the file has a `device_traces` list at all.
    pub fn has_trace_list(&self) -> bool {
        self.traces.is_some()
    }

    /// Devices with at least one event, ascending.
    pub fn devices_with_events(&self) -> Vec<usize> {
        self.snapshot.devices_with_events()
    }

    pub fn event_count(&self, device: usize) -> usize {
        self.snapshot.device_traces.get(device).map_or(0, Vec::len)
    }
}

fn not_a_dict(type_name: &str) -> SourceError {
    SourceError::Invalid(format!(
        "The content of the pickle file is not of type dict, actual type: {type_name}"
    ))
}

/// One encoded slice.
#[derive(Debug)]
pub struct Slice {
    /// Position of the slice in the trace, 0 for the earliest.
    pub index: usize,
    /// Trace positions `first..=last` it covers.
    pub first: usize,
    pub last: usize,
    pub bytes: Vec<u8>,
}

/// Why a device could not be sliced.
#[derive(Debug, thiserror::Error)]
pub enum SplitError<E> {
    /// The backward replay stopped (the reference's "replay engine returned false").
    #[error("device {device}: replay engine returned false ({reason})")]
    Replay { device: usize, reason: String },
    /// A slice has no encoding in the requested format.
    #[error("device {device}: {reason}")]
    Encode { device: usize, reason: String },
    /// The consumer of the slices failed.
    #[error(transparent)]
    Emit(E),
}

/// Cuts `device`'s trace into slices and hands each, encoded, to `emit`, last slice first.
/// Returns how many slices there are.
pub fn split_device<E>(
    source: &Source,
    device: usize,
    strategy: Strategy,
    format: Format,
    emit: &mut dyn FnMut(Slice) -> Result<(), E>,
) -> Result<usize, SplitError<E>> {
    let events = source
        .snapshot
        .device_traces
        .get(device)
        .map_or(&[][..], Vec::as_slice);
    let nodes = source
        .traces
        .as_ref()
        .and_then(|t| t.get(device))
        .map_or(&[][..], Vec::as_slice);
    let n = events.len();
    if n == 0 {
        return Ok(0);
    }
    let arena = &source.pickle.arena;
    let frames: Vec<Frames> = nodes
        .iter()
        .map(|&id| match &arena[id] {
            Node::Dict(items) => dict_get(arena, items, "frames"),
            _ => None,
        })
        .collect();
    let ids: Vec<i64> = events
        .iter()
        .enumerate()
        .map(|(pos, e)| e.id.unwrap_or(pos as i64))
        .collect();

    let max_entries = strategy.max_entries(n as u64) as usize;
    let count = n.div_ceil(max_entries);
    let raw = state::RawFrames {
        segments: &source.segment_frames,
        events: &frames,
    };
    let mut state = State::at_dump(&source.snapshot, &raw, device);
    let mut end_state = state.segs.clone();
    let mut window_end = n;
    let mut dumped = 0;
    for pos in (0..n).rev() {
        state
            .undo(&events[pos], raw.events[pos])
            .map_err(|reason| SplitError::Replay { device, reason })?;
        if window_end - pos < max_entries && pos > 0 {
            continue;
        }
        let window: Vec<(NodeId, i64)> = (pos..window_end).map(|p| (nodes[p], ids[p])).collect();
        let view = SliceView {
            arena,
            device,
            segs: &end_state,
            events: &window,
        };
        let bytes = match format {
            Format::Pickle => encode::pickle(&view).map_err(|e| e.to_string()),
            Format::Json => encode::json(&view).map_err(|e| e.to_string()),
        }
        .map_err(|reason| SplitError::Encode { device, reason })?;
        emit(Slice {
            index: count - 1 - dumped,
            first: pos,
            last: window_end - 1,
            bytes,
        })
        .map_err(SplitError::Emit)?;
        dumped += 1;
        window_end = pos;
        end_state = state.segs.clone();
    }
    debug_assert_eq!(dumped, count);
    Ok(count)
}

/// Checks a written slice the way the reference does before publishing it: it decodes, has
/// events for `device`, and replays to the start. `Err` is the reason.
pub fn validate(bytes: &[u8], format: Format, device: usize) -> Result<(), String> {
    let pickled;
    let bytes = match format {
        Format::Pickle => bytes,
        Format::Json => {
            let value: serde_json::Value =
                serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
            if !value.is_object() {
                return Err(format!(
                    "The content of the JSON file is not of type dict, actual type: {}",
                    json_type(&value)
                ));
            }
            pickled = json_to_pickle(&value).map_err(|e| e.to_string())?;
            &pickled
        }
    };
    let snapshot = pt_snap_model::decode_slice(bytes).map_err(|e| e.to_string())?;
    if snapshot.device_traces.get(device).is_none_or(Vec::is_empty) {
        return Err(format!(
            "generated slice has no trace entries for device {device}"
        ));
    }
    pt_snap_replay::replay_device(
        &snapshot,
        device,
        pt_snap_replay::Mode::Strict,
        &mut pt_snap_replay::DiscardRows,
        &mut |_| {},
    )
    .map(|_| ())
    .map_err(|_| "replay returned false".to_owned())
}

/// The canonical JSON of a pickled snapshot (or any pickled value): the bytes
/// `--format json` would hold for it, the reference's `canonical_snapshot_bytes`.
pub fn canonical_json(pickle_bytes: &[u8]) -> Result<Vec<u8>, String> {
    let pickle = pt_snap_pickle::from_slice(pickle_bytes).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    write_value(&mut out, &pickle.arena, pickle.root).map_err(|e| e.to_string())?;
    Ok(out)
}

fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "NoneType",
        serde_json::Value::Bool(_) => "bool",
        serde_json::Value::Number(n) if n.is_f64() => "float",
        serde_json::Value::Number(_) => "int",
        serde_json::Value::String(_) => "str",
        serde_json::Value::Array(_) => "list",
        serde_json::Value::Object(_) => "dict",
    }
}

/// Re-expresses parsed JSON as the pickle `json.load` + `pickle.dumps` would give, so JSON
/// slices go through the same decoder and replay as pickles.
pub fn json_to_pickle(value: &serde_json::Value) -> std::io::Result<Vec<u8>> {
    use pt_snap_pickle::write::PickleWriter;
    use serde_json::Value as J;
    enum Task<'j> {
        Put(&'j J),
        Key(&'j str),
        End,
    }
    let mut w = PickleWriter::new(Vec::new())?;
    let mut tasks = vec![Task::Put(value)];
    while let Some(task) = tasks.pop() {
        let v = match task {
            Task::End => {
                w.end()?;
                continue;
            }
            Task::Key(k) => {
                w.str(k)?;
                continue;
            }
            Task::Put(v) => v,
        };
        match v {
            J::Null => w.none()?,
            J::Bool(b) => w.bool(*b)?,
            J::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => w.int(i)?,
                (None, Some(u), _) => {
                    let mut le = u.to_le_bytes().to_vec();
                    le.push(0);
                    while le.len() > 1 && le[le.len() - 1] == 0 && le[le.len() - 2] & 0x80 == 0 {
                        le.pop();
                    }
                    w.long_bytes(&le)?
                }
                (None, None, Some(f)) => w.float(f)?,
                _ => return Err(std::io::Error::other("unrepresentable JSON number")),
            },
            J::String(s) => {
                w.str(s)?;
            }
            J::Array(items) => {
                w.begin_list(items.len())?;
                tasks.push(Task::End);
                tasks.extend(items.iter().rev().map(Task::Put));
            }
            J::Object(map) => {
                w.begin_dict(map.len())?;
                tasks.push(Task::End);
                let entries: Vec<(&String, &J)> = map.iter().collect();
                for (k, v) in entries.into_iter().rev() {
                    tasks.push(Task::Put(v));
                    tasks.push(Task::Key(k));
                }
            }
        }
    }
    Ok(w.finish()?.0)
}
