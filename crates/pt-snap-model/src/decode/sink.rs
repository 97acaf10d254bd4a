//! Streaming compaction: each dict or list becomes a model record the moment the pickle
//! attaches it to its parent, so the arena never holds the million trace-entry dicts.
//!
//! Records are recognised by shape, because a container is complete before its parent's
//! meaning is known: a dict with `action` is a trace entry, with `blocks` a segment, with
//! `state` a block, with `real_size` a torch-2.0 history entry, with `filename` a frame; a
//! list takes the kind of its first element. Anything that does not decode cleanly simply
//! stays a raw node; the final top-down pass then decodes it again with its full path, so
//! errors name where they are (`device_traces[0][12].frames[3].line: …`) and malformed
//! data the model never reads (say, under `external_annotations`) is never an error.

use pt_snap_pickle::{Arena, Handle, Node, NodeId, Sink, Val};

use super::schema::{Decoder, Path};
use super::tables::{Kind, Tables, Word};
use super::Progress;
use crate::times::split;
use crate::TraceEvent;

/// Progress is reported at most this often.
const PROGRESS_STEP: u64 = 256 * 1024;

pub(super) struct SnapshotSink<'p> {
    pub t: Tables,
    progress: &'p mut dyn FnMut(Progress),
    last_report: u64,
    /// The input's length, when known: what a trace's storage is planned from.
    input_len: Option<u64>,
    /// Input bytes consumed, as of the last chunk read.
    bytes_read: u64,
    /// `bytes_read` when the first trace entry still pending was compacted.
    pending_from: u64,
}

impl<'p> SnapshotSink<'p> {
    pub fn new(progress: &'p mut dyn FnMut(Progress), input_len: Option<u64>) -> Self {
        SnapshotSink {
            t: Tables::default(),
            progress,
            last_report: 0,
            input_len,
            bytes_read: 0,
            pending_from: 0,
        }
    }

    /// Called after each trace entry is compacted. When the entries pending fill a chunk,
    /// the trace they start is planned to go on at their density to the end of the input,
    /// plus an eighth: too long a plan costs address space, too short one a copy. The plan
    /// never takes more address space than the input's length, which a file of denser
    /// entries than that (no snapshot writer's) pays with the copy.
    fn plan_trace(&mut self) {
        let (pending, chunk) = (self.t.events.pending(), self.t.events.chunk());
        if pending == 1 {
            self.pending_from = self.bytes_read;
        }
        let Some(len) = self.input_len.filter(|_| pending == chunk) else {
            return;
        };
        let per_entry = (self.bytes_read - self.pending_from) / chunk as u64;
        if per_entry == 0 {
            return;
        }
        let more = len.saturating_sub(self.bytes_read) / per_entry;
        let total = (chunk as u64)
            .saturating_add(more.saturating_add(more / 8))
            .min(len / std::mem::size_of::<TraceEvent>() as u64);
        self.t
            .events
            .plan(usize::try_from(total).unwrap_or(usize::MAX));
    }

    pub fn report(&mut self, bytes_read: u64) {
        self.last_report = bytes_read;
        (self.progress)(Progress {
            bytes_read,
            events: self.t.events_decoded,
        });
    }
}

fn dict_kind(d: &mut Decoder<'_>, items: &[(Val, Val)]) -> Option<Kind> {
    let mut best: Option<Kind> = None;
    for &(k, _) in items {
        let kind = match d.word(k) {
            // Outranks everything: no need to look further.
            Word::Action => return Some(Kind::Event),
            Word::Blocks => Kind::Segment,
            Word::State => Kind::Block,
            Word::RealSize => Kind::History,
            Word::Filename => Kind::Frame,
            _ => continue,
        };
        // Earlier entries of this list win: an `action` key outranks everything.
        let rank = |k: Kind| {
            [
                Kind::Event,
                Kind::Segment,
                Kind::Block,
                Kind::History,
                Kind::Frame,
            ]
            .iter()
            .position(|x| *x == k)
        };
        if best.is_none_or(|b| rank(kind) < rank(b)) {
            best = Some(kind);
        }
    }
    best
}

/// The kind of record a list element is or would be.
fn element_kind(d: &mut Decoder<'_>, v: Val) -> Option<Kind> {
    match Kind::of(d.arena, v) {
        Some((k, _)) => Some(k),
        None => match v {
            Val::Ref(id) => match &d.arena[id] {
                Node::Dict(items) => dict_kind(d, items),
                _ => None,
            },
            _ => None,
        },
    }
}

impl SnapshotSink<'_> {
    fn compact_dict(&mut self, arena: &Arena, v: Val, items: &[(Val, Val)]) -> Option<Handle> {
        let mut d = Decoder {
            arena,
            t: &mut self.t,
        };
        let at = Path::Root;
        match dict_kind(&mut d, items)? {
            Kind::Frame => Kind::Frame.handle(d.frame(v, &at).ok()?.0 as usize),
            Kind::History => Kind::History.handle(d.history_entry(v, &at).ok()?.0 as usize),
            Kind::Event => {
                let index = d.t.events.next_index();
                let h = Kind::Event.handle(index)?;
                let e = d.event(v, &at).ok()?;
                // `handle` succeeded, so the index fits in 27 bits.
                if let Some(free) = self.t.device_free.take() {
                    self.t.oom_free.insert(index as u32, free);
                }
                let high = self.t.time.take().map(|t| split(t).0);
                self.t.time_runs.push(index as u32, high);
                let pool = self.t.pool.take();
                self.t.pool_runs.push(index as u32, pool);
                self.t.events.push(e);
                self.plan_trace();
                Some(h)
            }
            Kind::Block => {
                let h = Kind::Block.handle(d.t.blocks.next_index())?;
                let b = d.block(v, &at).ok()?;
                self.t.blocks.push(b);
                Some(h)
            }
            Kind::Segment => {
                let h = Kind::Segment.handle(d.t.segments.next_index())?;
                let s = d.segment(v, &at).ok()?;
                self.t.segments.push(s);
                Some(h)
            }
            _ => None,
        }
    }

    fn compact_list(&mut self, arena: &Arena, v: Val, items: &[Val]) -> Option<Handle> {
        let Some(&first) = items.first() else {
            return Kind::Empty.handle(0);
        };
        let mut d = Decoder {
            arena,
            t: &mut self.t,
        };
        let at = Path::Root;
        match element_kind(&mut d, first)? {
            Kind::Frame => Kind::Stack.handle(d.stack(v, &at).ok()?.0 as usize),
            Kind::History => Kind::HistoryList.handle(d.history(v, &at).ok()?.0 as usize),
            Kind::Event => {
                let h = Kind::EventList.handle(d.t.event_lists.len())?;
                let list = d.events(v, &at).ok()?;
                self.t.event_lists.push(Some(list));
                Some(h)
            }
            Kind::Block => {
                let h = Kind::BlockList.handle(d.t.block_lists.len())?;
                let list = d.blocks(v, &at).ok()?;
                self.t.block_lists.push(Some(list));
                Some(h)
            }
            Kind::Segment => {
                let h = Kind::SegmentList.handle(d.t.segment_lists.len())?;
                let list = d.segments(v, &at).ok()?;
                self.t.segment_lists.push(Some(list));
                Some(h)
            }
            _ => None,
        }
    }
}

impl Sink for SnapshotSink<'_> {
    fn compact(&mut self, arena: &Arena, node: NodeId) -> Option<Handle> {
        let v = Val::Ref(node);
        match &arena[node] {
            Node::Dict(items) => self.compact_dict(arena, v, items),
            Node::List(items) => self.compact_list(arena, v, items),
            _ => None,
        }
    }

    fn progress(&mut self, bytes_read: u64) {
        self.bytes_read = bytes_read;
        if bytes_read >= self.last_report + PROGRESS_STEP {
            self.report(bytes_read);
        }
    }
}
