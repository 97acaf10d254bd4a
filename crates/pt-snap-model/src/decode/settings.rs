//! `allocator_settings`: what the file says about how its trace was buffered.

use pt_snap_pickle::{Arena, Node, Val};

use super::schema::find;
use crate::{PerDevice, TraceBuffer};

/// `trace_alloc_overflowed` and `trace_alloc_max_entries` of the settings dict `v`.
pub(super) fn trace_buffer(arena: &Arena, v: Val) -> TraceBuffer {
    let Some(items) = dict(arena, v) else {
        return TraceBuffer::default();
    };
    let flag = |v: Val| match arena.resolve(v) {
        Val::Bool(b) => Some(b),
        Val::Int(i @ (0 | 1)) => Some(i == 1),
        _ => None,
    };
    let count = |v: Val| match arena.resolve(v) {
        Val::Int(i) if i >= 0 => Some(i),
        _ => None,
    };
    TraceBuffer {
        overflowed: find(arena, items, "trace_alloc_overflowed")
            .and_then(|v| per_device(arena, v, flag)),
        max_entries: find(arena, items, "trace_alloc_max_entries")
            .and_then(|v| per_device(arena, v, count)),
    }
}

fn dict(arena: &Arena, v: Val) -> Option<&[(Val, Val)]> {
    match arena.resolve(v) {
        Val::Ref(id) => match &arena[id] {
            Node::Dict(items) => Some(items),
            _ => None,
        },
        _ => None,
    }
}

/// One value, a list of them by device ordinal, or a dict of them keyed by ordinal.
fn per_device<T>(arena: &Arena, v: Val, one: impl Fn(Val) -> Option<T>) -> Option<PerDevice<T>> {
    if let Some(value) = one(v) {
        return Some(PerDevice::All(value));
    }
    match arena.resolve(v) {
        Val::Ref(id) => match &arena[id] {
            Node::List(items) => Some(PerDevice::Each(items.iter().map(|&x| one(x)).collect())),
            Node::Tuple(items) => Some(PerDevice::Each(items.iter().map(|&x| one(x)).collect())),
            Node::Dict(items) => {
                let mut each: Vec<Option<T>> = Vec::new();
                for &(k, x) in items {
                    let Val::Int(device) = arena.resolve(k) else {
                        continue;
                    };
                    // A device ordinal, not an allocation request: bounded.
                    let Ok(device) = usize::try_from(device) else {
                        continue;
                    };
                    if device >= 1 << 16 {
                        continue;
                    }
                    each.resize_with(each.len().max(device + 1), || None);
                    each[device] = one(x);
                }
                Some(PerDevice::Each(each))
            }
            _ => None,
        },
        _ => None,
    }
}
