//! The Segments view's questions: the allocator's segments at an event (`report segments`),
//! the reserved segments over events, and the capture check. A device's replay is started
//! the first time its map is asked for and kept, with the checkpoints it gathers, so the
//! next event asked for is replayed from the nearest checkpoint before it rather than from
//! the start; the segment timeline's bands are read once per device, as the allocation
//! timeline's blocks are.

use std::cell::RefCell;
use std::collections::hash_map::Entry;
use std::collections::HashMap;

use pt_snap_query::Lifetime;
use pt_snap_report::allocations::{allocations, AllocationRequest, Allocations};
use pt_snap_report::capture::{capture_of, Capture};
use pt_snap_report::segments::{map_of, page_data, segment_lifetimes, Replay};

use crate::protocol::question;
use crate::{Answers, CaptureCheck, Engine, LastDevice, Refusal, MAX_COLUMNS, MAX_TOP};

/// What the engine keeps between the Segments view's questions.
#[derive(Default)]
pub(crate) struct Segments {
    /// Each device's replay, by the device asked for.
    replays: RefCell<HashMap<i64, Replay>>,
    /// The last device's segment timeline bands.
    bands: LastDevice<DeviceBands>,
}

/// A device's segment lifetimes and the colour class (stream) of each.
struct DeviceBands {
    bands: Vec<Lifetime>,
    /// `stream N` for each stream, in stream order.
    keys: Vec<String>,
    /// Each band's index of `keys`, by band id.
    key_of: Vec<u16>,
}

impl DeviceBands {
    fn read(engine: &Engine, device: i64) -> Result<DeviceBands, Refusal> {
        let events = engine.analyzer.segment_events(device)?;
        let (bands, streams) = segment_lifetimes(&events);
        let mut distinct = streams.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let key_of = streams
            .iter()
            .map(|s| distinct.binary_search(s).unwrap_or(0) as u16)
            .collect();
        Ok(DeviceBands {
            bands,
            keys: distinct.iter().map(|s| format!("stream {s}")).collect(),
            key_of,
        })
    }
}

impl question::Segments {
    /// The indexes this question cannot do without, built first by
    /// [`Engine::build_indexes_for`]: the replay reads the device's blocks a step at a time
    /// by the events that allocated and freed them, and without these each step scans every
    /// block (at 1M events the first map took ~20 s, against 2.6 s with them).
    pub(crate) fn indexes(&self) -> Vec<String> {
        let device = self.device as usize;
        (["allocEventId", "freeEventId"].iter())
            .map(|c| pt_snap_db::schema::block_index_name(device, c))
            .collect()
    }
}

impl Answers for question::Segments {
    fn answer(&self, engine: &Engine) -> Result<String, Refusal> {
        let a = &engine.analyzer;
        let mut replays = engine.segments.replays.borrow_mut();
        let replay = match replays.entry(self.device) {
            Entry::Occupied(kept) => kept.into_mut(),
            Entry::Vacant(slot) => slot.insert(Replay::start(a, Some(self.device))?),
        };
        // A question stopped part way keeps the checkpoints it made: asked again, it goes on
        // from the last of them.
        let state = replay.state_at(a, self.event_id, true)?;
        let map = map_of(a, replay, &state)?;
        Ok(page_data(&map).to_string())
    }
}

impl Answers for question::SegmentTimeline {
    fn answer(&self, engine: &Engine) -> Result<Allocations, Refusal> {
        let device =
            (engine.segments.bands).get(self.device, || DeviceBands::read(engine, self.device))?;
        let bounds = engine.bounds_of(self.device);
        let req = AllocationRequest {
            window: self.window,
            columns: self.columns.min(MAX_COLUMNS),
            top: self.top.min(MAX_TOP),
        };
        let key_of = |b: &Lifetime| device.key_of.get(b.block as usize).copied().unwrap_or(0);
        Ok(allocations(
            &device.bands,
            bounds,
            &req,
            device.keys.clone(),
            key_of,
        ))
    }
}

impl Answers for question::Capture {
    fn answer(&self, engine: &Engine) -> Result<CaptureCheck, Refusal> {
        let bounds = &engine.overview.bounds;
        let recorded = |d: i64| bounds.iter().find(|b| b.0 == d).map(|b| b.1.is_some());
        // As `overview` says it: a file without any trace event once, for the file.
        if !bounds.iter().any(|b| b.1.is_some()) {
            return Ok(CaptureCheck {
                capture: None,
                warnings: into_wire(Capture::empty()),
            });
        }
        if recorded(self.device) == Some(false) {
            return Ok(CaptureCheck {
                capture: None,
                warnings: Vec::new(),
            });
        }
        let capture = capture_of(&engine.analyzer, self.device, None)?;
        Ok(CaptureCheck {
            warnings: into_wire(capture.clone()),
            capture: Some(capture),
        })
    }
}

fn into_wire(capture: Capture) -> Vec<crate::CaptureWarning> {
    capture.warnings().into_iter().map(Into::into).collect()
}
