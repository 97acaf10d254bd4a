//! The pickle memo: 4 bytes per slot.
//!
//! A 100 MB snapshot memoizes ~8 M objects, so the slot size dominates the VM's own memory.
//! Slots hold a node id or a handle; the rare memoized scalar lives in a side map.
//!
//! # Bounded by the input
//!
//! Every key costs the input at least one byte (`MEMOIZE`; `BINPUT` two, `LONG_BINPUT` five),
//! so a memo of `k` keys has read at least `k` bytes. The dense part only grows while it stays
//! at most twice the number of keys plus [`SLACK`], i.e. at most `8 × input + 4 KiB` bytes of
//! slots; indices further out go to an ordered sparse map (one entry per key, at least five
//! input bytes each) and move into the dense part once it reaches them. A hostile
//! `LONG_BINPUT` walk (65,536 apart, 4e9 far) therefore costs map entries, not gigabytes.

use std::collections::{BTreeMap, HashMap};

use crate::value::{Handle, NodeId, Val};

/// Dense slots that may stand empty beyond twice the key count (every pickler numbers its
/// keys 0, 1, 2, …, so real files never come near it).
const SLACK: usize = 1024;

const EMPTY: u32 = 0;
const HANDLE_BASE: u32 = 0x8000_0001;

/// Largest node id a slot can hold.
pub(crate) const MAX_NODE: u32 = 0x7fff_fffe;

#[derive(Default)]
pub(crate) struct Memo {
    dense: Vec<u32>,
    /// Keys past the dense part, ordered so the dense part can take over a range at once.
    sparse: BTreeMap<u32, u32>,
    scalars: HashMap<u32, Val>,
    /// Distinct keys stored (Python's `len(memo)`).
    keys: usize,
}

fn pack(v: Val) -> u32 {
    match v {
        Val::Ref(id) => id.0 + 1,
        Val::Handle(h) => HANDLE_BASE + h.get(),
        _ => EMPTY,
    }
}

/// The value of a non-empty slot.
#[inline]
fn unpack(p: u32) -> Option<Val> {
    if p >= HANDLE_BASE {
        Handle::new(p - HANDLE_BASE).map(Val::Handle)
    } else {
        Some(Val::Ref(NodeId(p - 1)))
    }
}

impl Memo {
    /// The number of distinct keys: the index `MEMOIZE` stores at, as in CPython.
    pub fn len(&self) -> usize {
        self.keys
    }

    /// Stores `v` (a scalar, node or handle) in slot `idx`.
    #[inline]
    pub fn put(&mut self, idx: u32, v: Val) {
        let packed = pack(v);
        // The common cases, a node or handle stored at the next key (what every pickler
        // does) or over one (a compacted container's slot, repointed at its handle), inline.
        // A slot holding a node or handle has no scalar beside it, and with nothing sparse
        // scalars only sit below `dense.len()`, so neither case touches `scalars`.
        let i = idx as usize;
        let len = self.dense.len();
        if packed != EMPTY {
            match self.dense.get_mut(i) {
                Some(slot) if *slot != EMPTY => {
                    *slot = packed;
                    return;
                }
                None if i == len && self.sparse.is_empty() && i < 2 * self.keys + SLACK => {
                    self.keys += 1;
                    self.dense.push(packed);
                    return;
                }
                _ => {}
            }
        }
        self.put_rare(idx, v, packed);
    }

    #[inline(never)]
    fn put_rare(&mut self, idx: u32, v: Val, packed: u32) {
        let i = idx as usize;
        let occupied = i < self.dense.len() && self.dense[i] != EMPTY;
        if !occupied && self.get(idx).is_none() {
            self.keys += 1;
        }
        if packed == EMPTY {
            self.scalars.insert(idx, v);
        } else if !self.scalars.is_empty() {
            self.scalars.remove(&idx);
        }
        if i < self.dense.len() {
            self.dense[i] = packed;
        } else if i < 2 * self.keys + SLACK {
            if !self.sparse.is_empty() {
                self.sparse.remove(&idx);
            }
            self.dense.resize(i, EMPTY);
            self.dense.push(packed);
            self.absorb_sparse();
        } else {
            self.sparse.insert(idx, packed);
        }
    }

    /// Moves sparse entries that the dense part has grown over.
    fn absorb_sparse(&mut self) {
        let len = self.dense.len();
        if self
            .sparse
            .first_key_value()
            .is_none_or(|(&k, _)| k as usize >= len)
        {
            return;
        }
        let rest = match u32::try_from(len) {
            Ok(len) => self.sparse.split_off(&len),
            Err(_) => BTreeMap::new(),
        };
        for (k, p) in std::mem::replace(&mut self.sparse, rest) {
            self.dense[k as usize] = p;
        }
    }

    /// Snapshots read the memo about 20 times per trace entry, nearly always a dense slot
    /// holding a node or handle: that case inlines, the rest is out of line.
    #[inline]
    pub fn get(&self, idx: u32) -> Option<Val> {
        match self.dense.get(idx as usize) {
            Some(&p) if p != EMPTY => unpack(p),
            _ => self.get_rare(idx),
        }
    }

    #[cold]
    #[inline(never)]
    fn get_rare(&self, idx: u32) -> Option<Val> {
        let packed = match self.dense.get(idx as usize) {
            Some(&p) => p,
            None => self.sparse.get(&idx).copied().unwrap_or(EMPTY),
        };
        match packed {
            EMPTY => self.scalars.get(&idx).copied(),
            p => unpack(p),
        }
    }

    /// Points slot `idx` at `h` if it still holds `node` (a later PUT may have reused it).
    #[inline]
    pub fn repoint(&mut self, idx: u32, node: NodeId, h: Handle) {
        if self.get(idx) == Some(Val::Ref(node)) {
            self.put(idx, Val::Handle(h));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_round_trip_every_kind_and_sparse_indices() {
        let mut m = Memo::default();
        let h = Handle::new(Handle::MAX).unwrap();
        m.put(0, Val::Ref(NodeId(MAX_NODE)));
        m.put(1, Val::Handle(h));
        m.put(2, Val::Int(-5));
        m.put(4_000_000_000, Val::Float(1.5));
        m.put(3_000_000_000, Val::Ref(NodeId(3)));
        assert_eq!(m.get(0), Some(Val::Ref(NodeId(MAX_NODE))));
        assert_eq!(m.get(1), Some(Val::Handle(h)));
        assert_eq!(m.get(2), Some(Val::Int(-5)));
        assert_eq!(m.get(4_000_000_000), Some(Val::Float(1.5)));
        assert_eq!(m.get(3_000_000_000), Some(Val::Ref(NodeId(3))));
        assert_eq!(m.get(3), None);
        assert_eq!(m.len(), 5);
        assert!(m.dense.len() < 10);
        m.put(2, Val::Ref(NodeId(7)));
        assert_eq!(m.get(2), Some(Val::Ref(NodeId(7))));
    }

    #[test]
    fn a_walk_of_far_indices_stays_sparse_and_dense_keys_take_them_over() {
        let mut m = Memo::default();
        m.put(0, Val::None);
        for k in 1..=4096u32 {
            m.put(k * 65_536, Val::Ref(NodeId(k)));
        }
        assert_eq!(m.len(), 4097);
        assert!(m.dense.len() <= 2 * m.len() + SLACK, "{}", m.dense.len());
        assert_eq!(m.get(4096 * 65_536), Some(Val::Ref(NodeId(4096))));
        // A pickler's own numbering fills the dense part, which absorbs the far keys it
        // reaches on the way.
        for k in 1..200_000u32 {
            m.put(k, Val::Ref(NodeId(k)));
        }
        assert_eq!(m.get(65_536), Some(Val::Ref(NodeId(65_536))));
        assert_eq!(m.get(196_608), Some(Val::Ref(NodeId(196_608))));
        assert_eq!(m.get(262_144), Some(Val::Ref(NodeId(4))));
        assert!(m.sparse.keys().all(|&k| k as usize >= m.dense.len()));
        assert_eq!(m.len(), 4097 + 199_999 - 3);
    }

    #[test]
    fn memoize_index_is_the_key_count_as_in_cpython() {
        let mut m = Memo::default();
        m.put(0, Val::Int(1));
        m.put(7, Val::Int(2));
        m.put(7, Val::Int(3));
        assert_eq!(m.len(), 2);
    }
}
