//! Typed readers: one pickle value (a compacted handle or a raw node) to one model record.
//!
//! The same readers serve the streaming compaction, where the path is relative and errors
//! just leave the container raw, and the final top-down pass, where the path is complete
//! and errors are reported.

use std::fmt;

use pt_snap_pickle::{Arena, Node, NodeId, Val};

use super::tables::{EventList, Kind, PendingBlock, Tables, Word};
use super::DecodeError;
use crate::times::{join, split};
use crate::{
    Action, Block, BlockState, EventPoolsBuilder, EventTimesBuilder, FrameId, PoolId, Segment,
    StackId, TraceEvent,
};

/// Where a value sits, rendered only when an error needs it.
#[derive(Clone, Copy)]
pub(super) enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl<'a> Path<'a> {
    pub fn key(&'a self, k: &'a str) -> Path<'a> {
        Path::Key(self, k)
    }

    pub fn index(&'a self, i: usize) -> Path<'a> {
        Path::Index(self, i)
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root => f.write_str("top level"),
            Path::Key(Path::Root, k) => f.write_str(k),
            Path::Key(p, k) => write!(f, "{p}.{k}"),
            Path::Index(Path::Root, i) => write!(f, "[{i}]"),
            Path::Index(p, i) => write!(f, "{p}[{i}]"),
        }
    }
}

pub(super) type Result<T> = std::result::Result<T, DecodeError>;

pub(super) fn schema(path: &Path<'_>, msg: impl fmt::Display) -> DecodeError {
    DecodeError::Schema(format!("{path}: {msg}"))
}

/// How to read an integer field.
#[derive(Clone, Copy, PartialEq)]
enum IntKind {
    Plain,
    /// Pointers (`addr`, `address`, `stream`): values in [2^63, 2^64) are stored as their
    /// two's-complement `i64`, because SQLite INTEGER is signed 64-bit.
    Address,
}

pub(super) struct Decoder<'a> {
    pub arena: &'a Arena,
    pub t: &'a mut Tables,
}

/// The items of a raw dict or list, or `None` for anything else.
fn dict_items(arena: &Arena, v: Val) -> Option<&[(Val, Val)]> {
    match v {
        Val::Ref(id) => match &arena[id] {
            Node::Dict(d) => Some(d),
            _ => None,
        },
        _ => None,
    }
}

fn list_items(arena: &Arena, v: Val) -> Option<&[Val]> {
    match v {
        Val::Ref(id) => match &arena[id] {
            Node::List(l) => Some(l),
            _ => None,
        },
        _ => None,
    }
}

impl<'a> Decoder<'a> {
    fn describe(&self, v: Val) -> &'static str {
        match Kind::of(self.arena, v) {
            Some((Kind::Empty, _)) => "list",
            Some((Kind::Frame | Kind::Event | Kind::Block | Kind::Segment | Kind::History, _)) => {
                "dict"
            }
            Some(_) => "list",
            None => self.arena.type_name(v),
        }
    }

    fn expected(&self, path: &Path<'_>, what: &str, v: Val) -> DecodeError {
        schema(path, format!("expected {what}, got {}", self.describe(v)))
    }

    fn dict(&self, v: Val, path: &Path<'_>, what: &str) -> Result<&'a [(Val, Val)]> {
        dict_items(self.arena, v).ok_or_else(|| self.expected(path, what, v))
    }

    /// Four per trace entry: the plain integer inlines, the rest is out of line.
    #[inline]
    fn int(&self, v: Val, path: &Path<'_>, kind: IntKind) -> Result<i64> {
        match v {
            Val::Int(i) => Ok(i),
            v => self.int_rare(v, path, kind),
        }
    }

    #[inline(never)]
    fn int_rare(&self, v: Val, path: &Path<'_>, kind: IntKind) -> Result<i64> {
        match v {
            Val::Int(i) => Ok(i),
            Val::Ref(id) => match &self.arena[id] {
                Node::BigInt(b) if kind == IntKind::Address && b.len() == 9 && b[8] == 0 => {
                    let mut le = [0u8; 8];
                    le.copy_from_slice(&b[..8]);
                    Ok(i64::from_le_bytes(le))
                }
                Node::BigInt(_) => Err(schema(
                    path,
                    match kind {
                        IntKind::Address => "integer does not fit in 64 bits",
                        IntKind::Plain => "integer does not fit in a signed 64-bit value",
                    },
                )),
                _ => Err(self.expected(path, "int", v)),
            },
            _ => Err(self.expected(path, "int", v)),
        }
    }

    /// What string `v` is, if it is one the decoder compares against (see [`Word`]).
    pub fn word(&mut self, v: Val) -> Word {
        let Val::Ref(id) = v else {
            return Word::Other;
        };
        match self.t.words.get(id.index()) {
            Some(&w) if w != Word::Unknown => w,
            _ => self.new_word(id),
        }
    }

    #[inline(never)]
    fn new_word(&mut self, id: NodeId) -> Word {
        let Node::Str(s) = &self.arena[id] else {
            // Not cached: only a string's node is never reused for another value.
            return Word::Other;
        };
        let w = Word::of(s);
        let i = id.index();
        if self.t.words.len() <= i {
            self.t.words.resize(i + 1, Word::Unknown);
        }
        self.t.words[i] = w;
        w
    }

    fn str(&self, v: Val, path: &Path<'_>) -> Result<&'a str> {
        self.arena
            .as_str(v)
            .ok_or_else(|| self.expected(path, "str", v))
    }

    /// A string and the node holding it.
    fn str_node(&self, v: Val, path: &Path<'_>) -> Result<(NodeId, &'a str)> {
        match v {
            Val::Ref(id) => match &self.arena[id] {
                Node::Str(s) => Ok((id, s)),
                _ => Err(self.expected(path, "str", v)),
            },
            _ => Err(self.expected(path, "str", v)),
        }
    }

    pub fn frame(&mut self, v: Val, path: &Path<'_>) -> Result<FrameId> {
        if let Some((Kind::Frame, i)) = Kind::of(self.arena, v) {
            return Ok(FrameId(i));
        }
        let items = self.dict(v, path, "a frame dict")?;
        let (mut filename, mut line, mut name) = (None, None, None);
        for &(k, x) in items {
            match self.word(k) {
                Word::Filename => filename = Some(self.str_node(x, &path.key("filename"))?),
                Word::Line => line = Some(self.int(x, &path.key("line"), IntKind::Plain)?),
                Word::Name => name = Some(self.str_node(x, &path.key("name"))?),
                _ => {}
            }
        }
        let missing = |k| schema(path, format!("frame has no '{k}'"));
        let (file_node, filename) = filename.ok_or_else(|| missing("filename"))?;
        let line = line.ok_or_else(|| missing("line"))?;
        let (name_node, name) = name.ok_or_else(|| missing("name"))?;
        // The pickle decoder gives equal strings one node, so node ids identify a frame
        // without hashing its text; this matters when frames are not shared by the writer.
        let key = (file_node, line, name_node);
        if let Some(&id) = self.t.frame_ids.get(&key) {
            return Ok(id);
        }
        let id = self.t.stacks.intern_frame(filename, line, name);
        self.t.frame_ids.insert(key, id);
        Ok(id)
    }

    pub fn stack(&mut self, v: Val, path: &Path<'_>) -> Result<StackId> {
        match Kind::of(self.arena, v) {
            Some((Kind::Empty, _)) => return Ok(StackId::EMPTY),
            Some((Kind::Stack, i)) => return Ok(StackId(i)),
            _ => {}
        }
        let items =
            list_items(self.arena, v).ok_or_else(|| self.expected(path, "a list of frames", v))?;
        let mut ids = std::mem::take(&mut self.t.scratch);
        ids.clear();
        for (i, &f) in items.iter().enumerate() {
            // Frames are compacted before their list is: nearly every item is a frame's
            // handle already, taken here without the call and the `Result` of `frame`.
            if let Some((Kind::Frame, id)) = Kind::of(self.arena, f) {
                ids.push(FrameId(id));
                continue;
            }
            match self.frame(f, &path.index(i)) {
                Ok(id) => ids.push(id),
                Err(e) => {
                    self.t.scratch = ids;
                    return Err(e);
                }
            }
        }
        let id = self.t.stacks.intern_stack(&ids);
        self.t.scratch = ids;
        Ok(id)
    }

    /// A pool id: a pair of ints (a tuple in a pickle, a list in JSON); anything else is
    /// none. PyTorch writes `(0, 0)` for the default pool.
    pub fn pool_id(&self, v: Val) -> Option<PoolId> {
        let items: &[Val] = match self.arena.resolve(v) {
            Val::Ref(id) => match &self.arena[id] {
                Node::Tuple(items) => &items[..],
                Node::List(items) => &items[..],
                _ => return None,
            },
            _ => return None,
        };
        match items {
            [Val::Int(owner), Val::Int(id)] => Some((*owner, *id)),
            _ => None,
        }
    }

    fn action(&mut self, name: &str) -> Action {
        Action::from_name(name).unwrap_or_else(|| {
            let next = self.t.other_actions.len() as u32;
            let idx = *self.t.other_ids.entry(name.into()).or_insert(next);
            if idx == next {
                self.t.other_actions.push(name.into());
            }
            Action::Other(idx)
        })
    }

    /// One trace entry; the `device_free` of an `oom` entry and the entry's `time_us` are
    /// left in [`Tables::device_free`] and [`Tables::time`] for the caller, which knows
    /// where the entry sits.
    pub fn event(&mut self, v: Val, path: &Path<'_>) -> Result<TraceEvent> {
        self.t.device_free = None;
        self.t.time = None;
        self.t.pool = None;
        if let Some((Kind::Event, i)) = Kind::of(self.arena, v) {
            let ev = self.t.events.get(i).copied().ok_or_else(|| shared(path))?;
            self.t.device_free = self.t.oom_free.get(&i).copied();
            self.t.time = (self.t.time_runs.at(i)).map(|high| join(high, ev.time_low));
            self.t.pool = self.t.pool_runs.at(i);
            return Ok(ev);
        }
        let mut device_free = None;
        let items = self.dict(v, path, "a trace entry dict")?;
        let mut action = None;
        let mut ev = TraceEvent {
            action: Action::Alloc,
            addr: -1,
            size: 0,
            stream: 0,
            frames: StackId::EMPTY,
            id: None,
            time_low: 0,
        };
        let mut time = None;
        for &(k, x) in items {
            match self.word(k) {
                Word::Action => {
                    action = Some(match self.word(x).action() {
                        Some(known) => Ok(known),
                        None => Err(self.str(x, &path.key("action"))?),
                    })
                }
                Word::Addr => ev.addr = self.int(x, &path.key("addr"), IntKind::Address)?,
                Word::Size => ev.size = self.int(x, &path.key("size"), IntKind::Plain)?,
                Word::Stream => ev.stream = self.int(x, &path.key("stream"), IntKind::Address)?,
                Word::Frames => ev.frames = self.stack(x, &path.key("frames"))?,
                Word::Id => ev.id = Some(self.int(x, &path.key("id"), IntKind::Plain)?),
                Word::DeviceFree => device_free = Some(x),
                Word::TimeUs => time = Some(x),
                // Like `time_us`, a value that is no pair of ints is no pool id, never a
                // reason to refuse the file.
                Word::PoolId => self.t.pool = self.pool_id(x),
                _ => {}
            }
        }
        // An unknown name is registered only now, once the whole entry decoded.
        ev.action = match action.ok_or_else(|| schema(path, "trace entry has no 'action'"))? {
            Ok(known) => known,
            Err(name) => self.action(name),
        };
        // Only an `oom` entry's `device_free` means anything (PyTorch writes it nowhere
        // else); it is read after the action is known so other entries never pay for it.
        // The reference ignores the field, so a value that is no i64 (a string, or
        // `size_t(-1)` past 2^63) is "unknown" here rather than a reason to refuse the file;
        // so is a negative one, which no `size_t` is.
        if ev.action == Action::Oom {
            if let Some(x) = device_free {
                self.t.device_free = (self.int(x, &path.key("device_free"), IntKind::Plain))
                    .ok()
                    .filter(|free| *free >= 0);
            }
        }
        // The reference ignores `time_us` too: a value that is no i64 (a float, a bool, a
        // string, past 2^63) is no time, never a reason to refuse the file.
        if let Some(x) = time {
            self.t.time = self.int(x, &path.key("time_us"), IntKind::Plain).ok();
            ev.time_low = self.t.time.map_or(0, |t| split(t).1);
        }
        self.t.events_decoded += 1;
        Ok(ev)
    }

    /// A device's trace, with the `device_free` of its `oom` entries by position and the
    /// times of its entries.
    pub fn events(&mut self, v: Val, path: &Path<'_>) -> Result<EventList> {
        match Kind::of(self.arena, v) {
            Some((Kind::Empty, _)) => return Ok(EventList::default()),
            Some((Kind::EventList, i)) => return take(&mut self.t.event_lists, i, path),
            _ => {}
        }
        let items = list_items(self.arena, v)
            .ok_or_else(|| self.expected(path, "a list of trace entries", v))?;
        if let Some(idx) = all_of(self.arena, items, Kind::Event) {
            let mut ooms = Vec::new();
            // Most files have no OOM at all: then the claim is not walked again.
            if !self.t.oom_free.is_empty() {
                for (position, i) in idx.iter().enumerate() {
                    if let Some(free) = self.t.oom_free.get(i) {
                        ooms.push((position, *free));
                    }
                }
            }
            let mut times = EventTimesBuilder::default();
            let mut pools = EventPoolsBuilder::default();
            for &i in &idx {
                times.push_high(self.t.time_runs.at(i));
                pools.push(self.t.pool_runs.at(i));
            }
            let events = self.t.events.claim(&idx).ok_or_else(|| shared(path))?;
            self.t.time_runs.drop_below(self.t.events.first_index());
            self.t.pool_runs.drop_below(self.t.events.first_index());
            return Ok(EventList {
                events,
                ooms,
                times: times.finish(),
                pools: pools.finish(),
            });
        }
        let mut list = EventList {
            events: Vec::with_capacity(items.len()),
            ..EventList::default()
        };
        let mut times = EventTimesBuilder::default();
        let mut pools = EventPoolsBuilder::default();
        for (i, &e) in items.iter().enumerate() {
            let mut ev = self.event(e, &path.index(i))?;
            ev.time_low = times.push(self.t.time);
            pools.push(self.t.pool);
            list.events.push(ev);
            if let Some(free) = self.t.device_free.take() {
                list.ooms.push((i, free));
            }
        }
        list.times = times.finish();
        list.pools = pools.finish();
        Ok(list)
    }

    /// A torch-2.0 `history` entry: only its frames matter.
    pub fn history_entry(&mut self, v: Val, path: &Path<'_>) -> Result<StackId> {
        if let Some((Kind::History, i)) = Kind::of(self.arena, v) {
            return Ok(StackId(i));
        }
        let items = self.dict(v, path, "a history dict")?;
        match find(self.arena, items, "frames") {
            Some(f) => self.stack(f, &path.key("frames")),
            None => Ok(StackId::EMPTY),
        }
    }

    /// The stack of the first `history` entry (what `_memory_viz` shows for 2.0 blocks).
    pub fn history(&mut self, v: Val, path: &Path<'_>) -> Result<StackId> {
        match Kind::of(self.arena, v) {
            Some((Kind::Empty, _)) => return Ok(StackId::EMPTY),
            Some((Kind::HistoryList, i)) => return Ok(StackId(i)),
            _ => {}
        }
        let items =
            list_items(self.arena, v).ok_or_else(|| self.expected(path, "a history list", v))?;
        match items.first() {
            Some(&first) => self.history_entry(first, &path.index(0)),
            None => Ok(StackId::EMPTY),
        }
    }

    pub fn block(&mut self, v: Val, path: &Path<'_>) -> Result<PendingBlock> {
        if let Some((Kind::Block, i)) = Kind::of(self.arena, v) {
            return self.t.blocks.get(i).cloned().ok_or_else(|| shared(path));
        }
        let items = self.dict(v, path, "a block dict")?;
        let (mut size, mut requested, mut address, mut state) = (None, None, None, None);
        let (mut frames, mut history) = (None, None);
        for &(k, x) in items {
            match self.arena.as_str(k) {
                Some("size") => size = Some(self.int(x, &path.key("size"), IntKind::Plain)?),
                Some("requested_size") => {
                    requested = Some(self.int(x, &path.key("requested_size"), IntKind::Plain)?)
                }
                Some("address") => {
                    address = Some(self.int(x, &path.key("address"), IntKind::Address)?)
                }
                Some("state") => {
                    let p = path.key("state");
                    let name = self.str(x, &p)?;
                    state = Some(
                        BlockState::from_name(name)
                            .ok_or_else(|| schema(&p, format!("unknown block state '{name}'")))?,
                    );
                }
                Some("frames") => frames = Some(x),
                Some("history") => history = Some(x),
                _ => {}
            }
        }
        let size = size.ok_or_else(|| schema(path, "block has no 'size'"))?;
        let state = state.ok_or_else(|| schema(path, "block has no 'state'"))?;
        // 2.1+ blocks carry their frames; 2.0 blocks only a history, read lazily so a bad
        // history never fails a block that does not need it.
        let frames = match (frames, history) {
            (Some(f), _) => self.stack(f, &path.key("frames"))?,
            (None, Some(h)) => self.history(h, &path.key("history"))?,
            (None, None) => StackId::EMPTY,
        };
        Ok(PendingBlock {
            block: Block {
                address: address.unwrap_or(0),
                size,
                requested_size: requested.unwrap_or(size),
                state,
                frames,
            },
            has_address: address.is_some(),
        })
    }

    pub fn blocks(&mut self, v: Val, path: &Path<'_>) -> Result<Vec<PendingBlock>> {
        match Kind::of(self.arena, v) {
            Some((Kind::Empty, _)) => return Ok(Vec::new()),
            Some((Kind::BlockList, i)) => return take(&mut self.t.block_lists, i, path),
            _ => {}
        }
        let items =
            list_items(self.arena, v).ok_or_else(|| self.expected(path, "a list of blocks", v))?;
        if let Some(idx) = all_of(self.arena, items, Kind::Block) {
            return self.t.blocks.claim(&idx).ok_or_else(|| shared(path));
        }
        (items.iter().enumerate())
            .map(|(i, &b)| self.block(b, &path.index(i)))
            .collect()
    }

    pub fn segment(&mut self, v: Val, path: &Path<'_>) -> Result<Segment> {
        if let Some((Kind::Segment, i)) = Kind::of(self.arena, v) {
            return self.t.segments.get(i).cloned().ok_or_else(|| shared(path));
        }
        let items = self.dict(v, path, "a segment dict")?;
        let mut seg = Segment {
            device: 0,
            address: 0,
            total_size: 0,
            stream: 0,
            segment_type: "".into(),
            allocated_size: 0,
            active_size: 0,
            is_expandable: false,
            pool_id: None,
            frames: StackId::EMPTY,
            blocks: Vec::new(),
        };
        let mut seen = [false; 6];
        const REQUIRED: [&str; 6] = [
            "address",
            "total_size",
            "stream",
            "allocated_size",
            "active_size",
            "blocks",
        ];
        let mut blocks = None;
        for &(k, x) in items {
            let Some(key) = self.arena.as_str(k) else {
                continue;
            };
            let p = path.key(key);
            match key {
                "device" => seg.device = self.int(x, &p, IntKind::Plain)?,
                "address" => seg.address = self.int(x, &p, IntKind::Address)?,
                "total_size" => seg.total_size = self.int(x, &p, IntKind::Plain)?,
                "stream" => seg.stream = self.int(x, &p, IntKind::Address)?,
                "segment_type" => seg.segment_type = self.str(x, &p)?.into(),
                "allocated_size" => seg.allocated_size = self.int(x, &p, IntKind::Plain)?,
                "active_size" => seg.active_size = self.int(x, &p, IntKind::Plain)?,
                "is_expandable" => {
                    seg.is_expandable = match x {
                        Val::Bool(b) => b,
                        _ => return Err(self.expected(&p, "bool", x)),
                    }
                }
                "frames" => seg.frames = self.stack(x, &p)?,
                "segment_pool_id" => seg.pool_id = self.pool_id(x),
                "blocks" => blocks = Some(x),
                _ => continue,
            }
            if let Some(i) = REQUIRED.iter().position(|r| *r == key) {
                seen[i] = true;
            }
        }
        if let Some(i) = seen.iter().position(|s| !s) {
            return Err(schema(path, format!("segment has no '{}'", REQUIRED[i])));
        }
        // Last, after every other field is known good: claiming the blocks consumes them.
        let blocks = self.blocks(blocks.expect("seen"), &path.key("blocks"))?;
        let mut offset = seg.address;
        seg.blocks = blocks
            .into_iter()
            .map(
                |PendingBlock {
                     mut block,
                     has_address,
                 }| {
                    if !has_address {
                        block.address = offset;
                    }
                    offset = offset.wrapping_add(block.size);
                    block
                },
            )
            .collect();
        Ok(seg)
    }

    pub fn segments(&mut self, v: Val, path: &Path<'_>) -> Result<Vec<Segment>> {
        match Kind::of(self.arena, v) {
            Some((Kind::Empty, _)) => return Ok(Vec::new()),
            Some((Kind::SegmentList, i)) => return take(&mut self.t.segment_lists, i, path),
            _ => {}
        }
        let items = list_items(self.arena, v)
            .ok_or_else(|| self.expected(path, "a list of segments", v))?;
        if let Some(idx) = all_of(self.arena, items, Kind::Segment) {
            return self.t.segments.claim(&idx).ok_or_else(|| shared(path));
        }
        (items.iter().enumerate())
            .map(|(i, &s)| self.segment(s, &path.index(i)))
            .collect()
    }

    /// `device_traces`: one list of trace entries per device.
    pub fn device_traces(&mut self, v: Val, path: &Path<'_>) -> Result<Vec<EventList>> {
        if let Some((Kind::Empty, _)) = Kind::of(self.arena, v) {
            return Ok(Vec::new());
        }
        let items = list_items(self.arena, v)
            .ok_or_else(|| self.expected(path, "a list of per-device lists", v))?;
        (items.iter().enumerate())
            .map(|(i, &d)| self.events(d, &path.index(i)))
            .collect()
    }
}

/// The value of `key` in a dict (the last one, as in Python).
pub(super) fn find(arena: &Arena, items: &[(Val, Val)], key: &str) -> Option<Val> {
    (items.iter().rev())
        .find(|(k, _)| arena.as_str(*k) == Some(key))
        .map(|&(_, v)| v)
}

/// The indices, if every item is a handle of `kind`.
fn all_of(arena: &Arena, items: &[Val], kind: Kind) -> Option<Vec<u32>> {
    (items.iter())
        .map(|&v| match Kind::of(arena, v) {
            Some((k, i)) if k == kind => Some(i),
            _ => None,
        })
        .collect()
}

fn take<T>(lists: &mut [Option<T>], i: u32, path: &Path<'_>) -> Result<T> {
    lists
        .get_mut(i as usize)
        .and_then(Option::take)
        .ok_or_else(|| shared(path))
}

/// The same record object twice is legal Python but never written by PyTorch; supporting
/// it would mean keeping every record around for the whole decode.
fn shared(path: &Path<'_>) -> DecodeError {
    schema(
        path,
        "this object also appears elsewhere in the snapshot; shared trace entries, blocks \
         or segments are not supported",
    )
}
