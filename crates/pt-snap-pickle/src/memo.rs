//! The pickle memo: 4 bytes per slot.
//!
//! A 100 MB snapshot memoizes ~8 M objects, so the slot size dominates the VM's own memory.
//! Slots hold a node id or a handle; the rare memoized scalar lives in a side map.

use std::collections::HashMap;

use crate::value::{Handle, NodeId, Val};

/// Indices this far past the end are kept sparse, so a hostile `LONG_BINPUT 4e9` costs one
/// map entry instead of 16 GB.
const MAX_GAP: usize = 1 << 16;

const EMPTY: u32 = 0;
const HANDLE_BASE: u32 = 0x8000_0001;

/// Largest node id a slot can hold.
pub(crate) const MAX_NODE: u32 = 0x7fff_fffe;

#[derive(Default)]
pub(crate) struct Memo {
    dense: Vec<u32>,
    sparse: HashMap<u32, u32>,
    scalars: HashMap<u32, Val>,
}

fn pack(v: Val) -> u32 {
    match v {
        Val::Ref(id) => id.0 + 1,
        Val::Handle(h) => HANDLE_BASE + h.get(),
        _ => EMPTY,
    }
}

impl Memo {
    pub fn len(&self) -> usize {
        self.dense.len()
    }

    /// Stores `v` (a scalar, node or handle) in slot `idx`.
    #[inline]
    pub fn put(&mut self, idx: u32, v: Val) {
        let packed = pack(v);
        if packed == EMPTY {
            self.scalars.insert(idx, v);
        } else if !self.scalars.is_empty() {
            self.scalars.remove(&idx);
        }
        let i = idx as usize;
        if i < self.dense.len() {
            self.dense[i] = packed;
        } else if i - self.dense.len() <= MAX_GAP {
            self.dense.resize(i, EMPTY);
            self.dense.push(packed);
            self.absorb_sparse();
        } else {
            self.sparse.insert(idx, packed);
        }
    }

    /// Moves sparse entries that the dense part has grown over.
    fn absorb_sparse(&mut self) {
        if self.sparse.is_empty() {
            return;
        }
        let len = self.dense.len();
        let reached: Vec<u32> = self
            .sparse
            .keys()
            .copied()
            .filter(|&k| (k as usize) < len)
            .collect();
        for k in reached {
            if let Some(p) = self.sparse.remove(&k) {
                self.dense[k as usize] = p;
            }
        }
    }

    #[inline]
    pub fn get(&self, idx: u32) -> Option<Val> {
        let packed = match self.dense.get(idx as usize) {
            Some(&p) => p,
            None => self.sparse.get(&idx).copied().unwrap_or(EMPTY),
        };
        match packed {
            EMPTY => self.scalars.get(&idx).copied(),
            p if p >= HANDLE_BASE => Handle::new(p - HANDLE_BASE).map(Val::Handle),
            p => Some(Val::Ref(NodeId(p - 1))),
        }
    }

    /// Points slot `idx` at `h` if it still holds `node` (a later PUT may have reused it).
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
        assert!(m.len() < 10);
        m.put(2, Val::Ref(NodeId(7)));
        assert_eq!(m.get(2), Some(Val::Ref(NodeId(7))));
    }
}
