//! The decoded object graph: inline scalars plus an arena of shared nodes.

use std::ops::Index;

/// A decoded value. Scalars are stored inline; strings, big integers and containers live in
/// the [`Arena`] and are referenced by id, so a memo reference shares the node instead of
/// copying it (real snapshots reference the same frame lists millions of times).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Val {
    None,
    Bool(bool),
    /// Any integer that fits in `i64`; wider ones are [`Node::BigInt`].
    Int(i64),
    Float(f64),
    Ref(NodeId),
    /// A container the [`Sink`](crate::Sink) compacted into its own representation.
    Handle(Handle),
}

/// Index of a node in the [`Arena`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A consumer-chosen replacement for a compacted container (see [`Sink::compact`]).
///
/// Limited to 31 bits because the memo packs a slot into 4 bytes.
///
/// [`Sink::compact`]: crate::Sink::compact
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Handle(u32);

impl Handle {
    pub const MAX: u32 = 0x7fff_fffe;

    /// `None` when `value` exceeds [`Handle::MAX`].
    pub fn new(value: u32) -> Option<Handle> {
        (value <= Self::MAX).then_some(Handle(value))
    }

    pub fn get(self) -> u32 {
        self.0
    }
}

/// A heap object of the pickle.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Str(Box<str>),
    Bytes(Box<[u8]>),
    ByteArray(Box<[u8]>),
    /// An integer outside `i64`: minimal little-endian two's complement, as LONG1 writes it.
    BigInt(Box<[u8]>),
    List(Vec<Val>),
    Tuple(Box<[Val]>),
    /// Items in insertion order; duplicate keys are kept as written (later ones win in Python).
    Dict(Vec<(Val, Val)>),
    Set(Vec<Val>),
    FrozenSet(Box<[Val]>),
    /// A container compacted while other references to it were still around.
    Handle(Handle),
}

impl Node {
    /// The Python type name, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Node::Str(_) => "str",
            Node::Bytes(_) => "bytes",
            Node::ByteArray(_) => "bytearray",
            Node::BigInt(_) => "int",
            Node::List(_) => "list",
            Node::Tuple(_) => "tuple",
            Node::Dict(_) => "dict",
            Node::Set(_) => "set",
            Node::FrozenSet(_) => "frozenset",
            Node::Handle(_) => "compacted container",
        }
    }

    fn is_container(&self) -> bool {
        matches!(
            self,
            Node::List(_) | Node::Tuple(_) | Node::Dict(_) | Node::Set(_) | Node::FrozenSet(_)
        )
    }
}

const NO_SLOT: u32 = u32::MAX;
const SHARED: u8 = 1;
const OFFERED: u8 = 2;

/// Bookkeeping that decides whether a compacted node can be freed.
#[derive(Clone, Copy)]
struct Meta {
    /// The first memo slot this node was stored in.
    memo_slot: u32,
    flags: u8,
}

/// All heap nodes of one pickle.
///
/// Compacted nodes that nothing else can reach are recycled, so the arena's size follows
/// the number of containers under construction rather than the size of the file.
#[derive(Default)]
pub struct Arena {
    nodes: Vec<Node>,
    meta: Vec<Meta>,
    free: Vec<u32>,
    /// Emptied item vectors of compacted dicts and lists, handed to the next new container:
    /// a snapshot builds and compacts a dict per trace entry and a list per callstack, and
    /// reusing their storage saves an allocation and a free for each.
    spare_dicts: Spares<(Val, Val)>,
    spare_lists: Spares<Val>,
}

/// Spare vectors with room for at most this many items in all are kept (1 MiB of dict
/// pairs): enough for the 1,000 trace-entry dicts a pickler writes before the APPENDS that
/// attaches (and so compacts) them all at once …
const SPARE_BUDGET: usize = 1 << 15;
/// … each with room for at most this many items.
const SPARE_ITEMS: usize = 256;

struct Spares<T> {
    vecs: Vec<Vec<T>>,
    /// The summed capacity of `vecs`.
    items: usize,
}

impl<T> Default for Spares<T> {
    fn default() -> Self {
        Spares {
            vecs: Vec::new(),
            items: 0,
        }
    }
}

impl<T> Spares<T> {
    fn take(&mut self) -> Vec<T> {
        match self.vecs.pop() {
            Some(v) => {
                self.items -= v.capacity();
                v
            }
            None => Vec::new(),
        }
    }

    fn keep(&mut self, mut v: Vec<T>) {
        let room = v.capacity();
        if room > 0 && room <= SPARE_ITEMS && self.items + room <= SPARE_BUDGET {
            v.clear();
            self.items += room;
            self.vecs.push(v);
        }
    }
}

impl Index<NodeId> for Arena {
    type Output = Node;

    #[inline]
    fn index(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }
}

impl Arena {
    /// Follows a reference to a shared compacted node, so consumers only ever see
    /// [`Val::Handle`] for compacted containers.
    #[inline]
    pub fn resolve(&self, v: Val) -> Val {
        match v {
            Val::Ref(id) => match self[id] {
                Node::Handle(h) => Val::Handle(h),
                _ => v,
            },
            _ => v,
        }
    }

    /// The string `v` refers to, if it is one.
    #[inline]
    pub fn as_str(&self, v: Val) -> Option<&str> {
        match v {
            Val::Ref(id) => match &self[id] {
                Node::Str(s) => Some(s),
                _ => None,
            },
            _ => None,
        }
    }

    /// The Python type name of `v`, for error messages.
    pub fn type_name(&self, v: Val) -> &'static str {
        match v {
            Val::None => "None",
            Val::Bool(_) => "bool",
            Val::Int(_) => "int",
            Val::Float(_) => "float",
            Val::Ref(id) => self[id].type_name(),
            Val::Handle(_) => "compacted container",
        }
    }

    /// Number of node slots currently allocated (live or awaiting reuse).
    pub fn capacity_used(&self) -> usize {
        self.nodes.len()
    }

    #[inline]
    pub(crate) fn alloc(&mut self, node: Node, limit: usize) -> Option<NodeId> {
        let meta = Meta {
            memo_slot: NO_SLOT,
            flags: 0,
        };
        if let Some(i) = self.free.pop() {
            self.nodes[i as usize] = node;
            self.meta[i as usize] = meta;
            return Some(NodeId(i));
        }
        if self.nodes.len() >= limit {
            return None;
        }
        let id = u32::try_from(self.nodes.len()).ok()?;
        self.nodes.push(node);
        self.meta.push(meta);
        Some(NodeId(id))
    }

    /// An empty dict, with storage left by a compacted one when there is some.
    pub(crate) fn new_dict(&mut self) -> Node {
        Node::Dict(self.spare_dicts.take())
    }

    /// An empty list, with storage left by a compacted one when there is some.
    pub(crate) fn new_list(&mut self) -> Node {
        Node::List(self.spare_lists.take())
    }

    pub(crate) fn get_mut(&mut self, id: NodeId) -> &mut Node {
        &mut self.nodes[id.index()]
    }

    /// Records that `id` was stored in memo `slot`; a second slot makes it shared.
    pub(crate) fn note_memoized(&mut self, id: NodeId, slot: u32) {
        let m = &mut self.meta[id.index()];
        if m.memo_slot == NO_SLOT && slot != NO_SLOT {
            m.memo_slot = slot;
        } else {
            m.flags |= SHARED;
        }
    }

    /// Records a second live reference (DUP, memo get): the node must then outlive compaction.
    pub(crate) fn note_shared(&mut self, id: NodeId) {
        self.meta[id.index()].flags |= SHARED;
    }

    /// A second reference to `v` is being made (memo get): [`Arena::resolve`] and
    /// [`Arena::note_shared`] with one look at the node. Only containers are ever compacted,
    /// so only they need the mark.
    #[inline]
    pub(crate) fn share(&mut self, v: Val) -> Val {
        let Val::Ref(id) = v else { return v };
        match &self.nodes[id.index()] {
            Node::Handle(h) => Val::Handle(*h),
            n if n.is_container() => {
                self.meta[id.index()].flags |= SHARED;
                v
            }
            _ => v,
        }
    }

    /// Whether `id` is a container that has not been offered to the sink yet; marks it offered.
    pub(crate) fn take_offer(&mut self, id: NodeId) -> bool {
        if !self.nodes[id.index()].is_container() {
            return false;
        }
        let m = &mut self.meta[id.index()];
        if m.flags & OFFERED != 0 {
            return false;
        }
        m.flags |= OFFERED;
        true
    }

    /// Replaces `id` by `h`. Returns the memo slot to repoint at `h`, if any.
    ///
    /// An unshared node is freed: its only other reference is the memo slot, which the caller
    /// repoints, so nothing can observe the recycled id.
    pub(crate) fn compact(&mut self, id: NodeId, h: Handle) -> Option<u32> {
        let m = self.meta[id.index()];
        match std::mem::replace(&mut self.nodes[id.index()], Node::Handle(h)) {
            Node::Dict(items) => self.spare_dicts.keep(items),
            Node::List(items) => self.spare_lists.keep(items),
            _ => {}
        }
        if m.flags & SHARED == 0 {
            self.free.push(id.0);
        }
        (m.memo_slot != NO_SLOT).then_some(m.memo_slot)
    }
}
