//! What the decoder keeps while the pickle streams by: interned stacks, decoded records
//! awaiting their parent list, and the handles that name them inside the pickle arena.

use foldhash::HashMap;

use pt_snap_pickle::{Arena, Handle, NodeId, Val};

use crate::{Action, Block, FrameId, Segment, Stacks, TraceEvent};

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
/// Indices are global and increasing; when a list claims exactly everything pending (the
/// normal case: PyTorch writes each list's dicts right before attaching the list), the
/// storage moves into the list without copying.
pub(super) struct Pending<T> {
    base: usize,
    items: Vec<T>,
}

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Pending {
            base: 0,
            items: Vec::new(),
        }
    }
}

impl<T: Clone> Pending<T> {
    /// The index the next pushed record gets.
    pub fn next_index(&self) -> usize {
        self.base + self.items.len()
    }

    pub fn push(&mut self, item: T) {
        self.items.push(item);
    }

    pub fn get(&self, index: u32) -> Option<&T> {
        (index as usize)
            .checked_sub(self.base)
            .and_then(|i| self.items.get(i))
    }

    /// The records `indices` name, in order; `None` if one was already claimed by another list
    /// (the same dict object in two lists, which no snapshot writer produces).
    pub fn claim(&mut self, indices: &[u32]) -> Option<Vec<T>> {
        let all_pending = indices.len() == self.items.len()
            && indices
                .iter()
                .enumerate()
                .all(|(i, &x)| x as usize == self.base + i);
        if all_pending {
            self.base += self.items.len();
            return Some(std::mem::take(&mut self.items));
        }
        indices.iter().map(|&i| self.get(i).cloned()).collect()
    }
}

/// Everything the snapshot sink accumulates.
#[derive(Default)]
pub(super) struct Tables {
    pub stacks: Stacks,
    pub other_actions: Vec<Box<str>>,
    pub other_ids: HashMap<Box<str>, u32>,
    pub events: Pending<TraceEvent>,
    pub event_lists: Vec<Option<Vec<TraceEvent>>>,
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
