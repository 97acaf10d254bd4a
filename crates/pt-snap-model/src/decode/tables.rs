//! What the decoder keeps while the pickle streams by: interned stacks, decoded records
//! awaiting their parent list, and the handles that name them inside the pickle arena.

use std::collections::VecDeque;

use foldhash::HashMap;

use pt_snap_pickle::{Arena, Handle, NodeId, Val};

use crate::{Action, Block, EventPools, EventTimes, FrameId, PoolId, Segment, Stacks, TraceEvent};

/// What a compacted container turned out to be. Packed into the top bits of a [`Handle`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// An empty list: an empty stack, block list or trace, depending on where it sits.
    Empty = 0,
    Frame,
    Stack,
    Event,
    EventList,
    Block,
    BlockList,
    Segment,
    SegmentList,
    /// A torch-2.0 block `history` entry; the index is the stack of its frames.
    History,
    /// A `history` list; the index is the stack of its first entry.
    HistoryList,
}

const INDEX_BITS: u32 = 27;
const KINDS: [Kind; 11] = [
    Kind::Empty,
    Kind::Frame,
    Kind::Stack,
    Kind::Event,
    Kind::EventList,
    Kind::Block,
    Kind::BlockList,
    Kind::Segment,
    Kind::SegmentList,
    Kind::History,
    Kind::HistoryList,
];

impl Kind {
    /// `None` past 2^27 records of one kind; the container then simply stays a node.
    pub fn handle(self, index: usize) -> Option<Handle> {
        let index = u32::try_from(index).ok().filter(|&i| i < 1 << INDEX_BITS)?;
        Handle::new((self as u32) << INDEX_BITS | index)
    }

    /// The kind and index of a value this decoder compacted.
    #[inline]
    pub fn of(arena: &Arena, v: Val) -> Option<(Kind, u32)> {
        match arena.resolve(v) {
            Val::Handle(h) => {
                let kind = *KINDS.get((h.get() >> INDEX_BITS) as usize)?;
                Some((kind, h.get() & ((1 << INDEX_BITS) - 1)))
            }
            _ => None,
        }
    }
}

/// A string the streaming decoder compares against: a key of the dicts it turns into
/// records, or a known action name. Equal strings share one node in the pickle arena and a
/// string node is never freed, so each node's word is worked out once ([`Tables::words`])
/// rather than its text compared for every dict it keys, several times per trace entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Word {
    /// Not looked at yet (only in [`Tables::words`]).
    Unknown,
    /// Any other string.
    Other,
    Action,
    Addr,
    Size,
    Stream,
    Frames,
    Id,
    Blocks,
    State,
    RealSize,
    Filename,
    Line,
    Name,
    /// `device_free`, the free device memory an `oom` entry records.
    DeviceFree,
    /// `time_us`, when the entry was recorded.
    TimeUs,
    /// `pool_id`, the memory pool of the entry (pytorch#177717).
    PoolId,
    /// A known action name.
    ActionName(Action),
}

impl Word {
    pub fn of(s: &str) -> Word {
        match s {
            "action" => Word::Action,
            "addr" => Word::Addr,
            "size" => Word::Size,
            "stream" => Word::Stream,
            "frames" => Word::Frames,
            "id" => Word::Id,
            "blocks" => Word::Blocks,
            "state" => Word::State,
            "real_size" => Word::RealSize,
            "filename" => Word::Filename,
            "line" => Word::Line,
            "name" => Word::Name,
            "device_free" => Word::DeviceFree,
            "time_us" => Word::TimeUs,
            "pool_id" => Word::PoolId,
            s => Action::from_name(s).map_or(Word::Other, Word::ActionName),
        }
    }

    /// The action this string names, if it is a known one.
    pub fn action(self) -> Option<Action> {
        match self {
            Word::ActionName(a) => Some(a),
            _ => None,
        }
    }
}

/// A block before its segment is known: torch 2.0 blocks have no `address`, which is then
/// derived from the segment base.
#[derive(Debug, Clone)]
pub(super) struct PendingBlock {
    pub block: Block,
    pub has_address: bool,
}

/// Records decoded from dicts, waiting for the list that holds them.
///
/// Indices are global and increasing. A list that claims exactly everything pending (the
/// normal case: PyTorch writes each list's dicts right before attaching the list) takes
/// them in one vector. The exception is a `device_traces` of several non-empty traces:
/// CPython attaches its lists together at the end (one APPENDS), so each device's claim is
/// a part of what is pending, and copied.
///
/// In wasm32 the records are held in fixed-size chunks. A vector that doubles needs its old
/// and new blocks at once, and in a browser worker's 4 GiB of address space the holes the
/// old blocks leave are never large enough for the next one: a 20M-event trace ran out at
/// 16.7M events. Chunks fit into those holes, and the claiming list gets one vector of its
/// exact length, filled as the chunks are freed. Natively a growing vector is remapped in
/// place, so there it stays one chunk and the claim copies nothing.
///
/// That copy holds the records twice at the claim, and a wasm heap keeps its high-water
/// mark: for trace events, the costliest records, the decoder instead [plans](Pending::plan)
/// the list's length once the first chunk is full, from the bytes its records took and the
/// bytes still to come, and lets the first chunk grow to it. A list that keeps to the plan
/// is one chunk and is claimed without a copy; past it, chunks follow as before.
pub(super) struct Pending<T> {
    base: usize,
    len: usize,
    chunk: usize,
    /// How many records the first chunk takes: `chunk`, or more once planned.
    first_len: usize,
    chunks: Vec<Vec<T>>,
}

/// Records per chunk: in wasm32 1.75 MiB of 56-byte trace events; natively one chunk (see
/// above), except in the unit tests, which decode every fixture through small chunks and
/// planned traces.
#[cfg(target_arch = "wasm32")]
const CHUNK: usize = 1 << 15;
#[cfg(all(test, not(target_arch = "wasm32")))]
const CHUNK: usize = 1 << 10;
#[cfg(not(any(test, target_arch = "wasm32")))]
const CHUNK: usize = usize::MAX;

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Pending::with_chunk(CHUNK)
    }
}

impl<T> Pending<T> {
    fn with_chunk(chunk: usize) -> Self {
        Pending {
            base: 0,
            len: 0,
            chunk,
            first_len: chunk,
            chunks: Vec::new(),
        }
    }

    /// Records pushed and not claimed yet.
    pub fn pending(&self) -> usize {
        self.len
    }

    /// The size of a chunk: the moment [`Pending::pending`] reaches it, the first chunk is
    /// full.
    pub fn chunk(&self) -> usize {
        self.chunk
    }

    /// Lets the first chunk, when it is the only one, grow to `total` records, if the
    /// memory is there (else the chunks follow as they would have). The room is reserved,
    /// not touched: a plan too large costs address space, not resident memory, and the
    /// claim gives back what was not used.
    pub fn plan(&mut self, total: usize) {
        // No vector holds more (on wasm32, 38M trace events).
        let total = total.min(isize::MAX as usize / std::mem::size_of::<T>().max(1));
        if let [only] = &mut self.chunks[..] {
            if total > self.first_len && only.try_reserve_exact(total - only.len()).is_ok() {
                self.first_len = total;
            }
        }
    }
}

impl<T: Clone> Pending<T> {
    /// The index the next pushed record gets.
    pub fn next_index(&self) -> usize {
        self.base + self.len
    }

    /// The lowest index [`Pending::get`] may still find: every record below it was claimed.
    pub fn first_index(&self) -> usize {
        self.base
    }

    pub fn push(&mut self, item: T) {
        let room = match self.chunks.len() {
            1 => self.first_len,
            _ => self.chunk,
        };
        match self.chunks.last_mut() {
            Some(chunk) if chunk.len() < room => chunk.push(item),
            _ => {
                // The first chunk grows as a vector does, so that the many short lists
                // (a segment's blocks) never reserve a whole chunk.
                let mut chunk = match self.chunks.is_empty() {
                    true => Vec::new(),
                    false => Vec::with_capacity(self.chunk),
                };
                chunk.push(item);
                self.chunks.push(chunk);
            }
        }
        self.len += 1;
    }

    pub fn get(&self, index: u32) -> Option<&T> {
        let i = (index as usize).checked_sub(self.base)?;
        match i.checked_sub(self.first_len) {
            None => self.chunks.first()?.get(i),
            Some(k) => self.chunks.get(1 + k / self.chunk)?.get(k % self.chunk),
        }
    }

    /// The records `indices` name, in order; `None` if one was already claimed by another list
    /// (the same dict object in two lists, which no snapshot writer produces).
    pub fn claim(&mut self, indices: &[u32]) -> Option<Vec<T>> {
        let all_pending = indices.len() == self.len
            && indices
                .iter()
                .enumerate()
                .all(|(i, &x)| x as usize == self.base + i);
        if !all_pending {
            copied();
            let mut list = Vec::with_capacity(indices.len());
            for &i in indices {
                list.push(self.get(i)?.clone());
            }
            return Some(list);
        }
        let mut chunks = std::mem::take(&mut self.chunks);
        let list = match chunks.len() {
            0 => Vec::new(),
            1 => {
                let mut list = chunks.pop().expect("one chunk");
                // What a plan reserved beyond the list (in place: nothing is copied).
                list.shrink_to_fit();
                list
            }
            _ => {
                copied();
                let mut list = Vec::with_capacity(self.len);
                for chunk in chunks {
                    list.extend(chunk);
                }
                list
            }
        };
        self.base += self.len;
        self.len = 0;
        self.first_len = self.chunk;
        Some(list)
    }
}

#[cfg(test)]
thread_local! {
    /// Claims that copied their records, on this thread.
    pub(super) static COPIES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Counts a claim that copies (in the unit tests; nothing otherwise).
fn copied() {
    #[cfg(test)]
    COPIES.with(|c| c.set(c.get() + 1));
}

#[cfg(test)]
mod pending_tests {
    use super::Pending;

    #[test]
    fn chunks_are_claimed_whole_or_by_index() {
        let mut p = Pending::with_chunk(3);
        (0..7).for_each(|x| p.push(x));
        assert_eq!(p.get(4), Some(&4));
        assert_eq!(p.claim(&[1, 5]), Some(vec![1, 5]));
        assert_eq!(p.claim(&(0..7).collect::<Vec<_>>()), Some((0..7).collect()));
        assert_eq!(p.next_index(), 7);
        assert_eq!(p.get(4), None);
        (7..9).for_each(|x| p.push(x));
        assert_eq!(p.get(8), Some(&8));
        assert_eq!(p.claim(&[7, 8]), Some(vec![7, 8]));
        assert_eq!(p.claim(&[8]), None);
    }

    #[test]
    fn a_planned_first_chunk_is_claimed_whole_and_chunks_follow_past_the_plan() {
        let mut p = Pending::with_chunk(3);
        (0..3).for_each(|x| p.push(x));
        p.plan(5);
        (3..5).for_each(|x| p.push(x));
        assert_eq!(p.chunks.len(), 1);
        let list = p.claim(&(0..5).collect::<Vec<_>>()).unwrap();
        assert_eq!((list, p.first_len), ((0..5).collect::<Vec<_>>(), 3));
        // Past a plan that fell short: ordinary chunks, found by index and claimed in order.
        (5..8).for_each(|x| p.push(x));
        p.plan(4);
        (8..13).for_each(|x| p.push(x));
        assert_eq!(p.chunks.len(), 3);
        assert_eq!(
            (p.get(8), p.get(9), p.get(12)),
            (Some(&8), Some(&9), Some(&12))
        );
        let list = p.claim(&(5..13).collect::<Vec<_>>()).unwrap();
        assert_eq!(list, (5..13).collect::<Vec<_>>());
        // A plan no memory holds leaves the chunks as they were.
        (13..16).for_each(|x| p.push(x));
        p.plan(usize::MAX);
        assert_eq!(p.first_len, 3);
        (16..18).for_each(|x| p.push(x));
        assert_eq!((p.chunks.len(), p.get(17)), (2, Some(&17)));
    }
}

/// A decoded trace, the `device_free` of its `oom` entries by trace position, its times and
/// its entries' pool ids.
#[derive(Default)]
pub(super) struct EventList {
    pub events: Vec<TraceEvent>,
    pub ooms: Vec<(usize, i64)>,
    pub times: EventTimes,
    pub pools: EventPools,
}

/// A value of the compacted trace entries kept beside them rather than in them: the high 32
/// bits of their times (their low bits are in the events), or their pool ids. Runs over
/// their indices in [`Tables::events`]: `(first index, value or none)`, each differing from
/// the one before; indices before the first run have none. Runs below the events still
/// pending are dropped as lists claim them.
pub(super) struct Runs<T> {
    runs: VecDeque<(u32, Option<T>)>,
}

impl<T> Default for Runs<T> {
    fn default() -> Self {
        Runs {
            runs: VecDeque::new(),
        }
    }
}

impl<T: Copy + PartialEq> Runs<T> {
    /// The entry compacted at `index` (the next one) has this value, or none.
    pub fn push(&mut self, index: u32, value: Option<T>) {
        if value != self.runs.back().and_then(|r| r.1) {
            self.runs.push_back((index, value));
        }
    }

    pub fn at(&self, index: u32) -> Option<T> {
        let k = self.runs.partition_point(|r| r.0 <= index);
        k.checked_sub(1).and_then(|k| self.runs[k].1)
    }

    /// Forgets what no index from `first` on needs.
    pub fn drop_below(&mut self, first: usize) {
        while self.runs.len() >= 2 && self.runs[1].0 as usize <= first {
            self.runs.pop_front();
        }
        if let Some(&(start, None)) = self.runs.front() {
            if start as usize <= first {
                self.runs.pop_front();
            }
        }
    }
}

/// Everything the snapshot sink accumulates.
#[derive(Default)]
pub(super) struct Tables {
    pub stacks: Stacks,
    pub other_actions: Vec<Box<str>>,
    pub other_ids: HashMap<Box<str>, u32>,
    pub events: Pending<TraceEvent>,
    pub event_lists: Vec<Option<EventList>>,
    /// `device_free` of the compacted `oom` entries, by their index in [`Tables::events`]:
    /// kept beside the 56-byte events rather than in them, as OOMs are a handful per file.
    pub oom_free: HashMap<u32, i64>,
    /// The `device_free` of the `oom` entry [`Decoder::event`](super::schema::Decoder)
    /// decoded last (`None` for any other entry).
    pub device_free: Option<i64>,
    /// The high bits of the times of the compacted entries (see [`Runs`]).
    pub time_runs: Runs<i32>,
    /// The pool ids of the compacted entries.
    pub pool_runs: Runs<PoolId>,
    /// The `pool_id` of the entry [`Decoder::event`](super::schema::Decoder) decoded last.
    pub pool: Option<PoolId>,
    /// The `time_us` of the entry [`Decoder::event`](super::schema::Decoder) decoded last.
    pub time: Option<i64>,
    pub blocks: Pending<PendingBlock>,
    pub block_lists: Vec<Option<Vec<PendingBlock>>>,
    pub segments: Pending<Segment>,
    pub segment_lists: Vec<Option<Vec<Segment>>>,
    /// Frames by (filename node, line, name node).
    pub frame_ids: HashMap<(NodeId, i64, NodeId), FrameId>,
    /// Reused buffer for the frame ids of one stack.
    pub scratch: Vec<FrameId>,
    /// The [`Word`] of each string node looked at so far, by node index.
    pub words: Vec<Word>,
    pub events_decoded: u64,
}
