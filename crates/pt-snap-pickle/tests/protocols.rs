//! Pickles written by CPython with every protocol decode to the same values.

mod common;

use common::{data, render};
use pt_snap_pickle::{from_slice, load, Arena, Handle, KeepAll, Limits, Node, NodeId, Sink, Val};

#[test]
fn every_protocol_decodes_to_what_cpython_pickled() {
    for p in 0..=5 {
        let got = from_slice(&data(&format!("sample_p{p}.pkl")))
            .unwrap_or_else(|e| panic!("protocol {p}: {e}"));
        let want = String::from_utf8(data(&format!("sample_p{p}.expected"))).unwrap();
        let got = render(&got.arena, got.root);
        assert!(
            got == want.trim_end(),
            "protocol {p} differs; first mismatch near byte {}",
            got.bytes()
                .zip(want.bytes())
                .position(|(a, b)| a != b)
                .unwrap_or(got.len().min(want.len()))
        );
    }
}

fn dict_get(arena: &Arena, v: Val, key: &str) -> Val {
    let Val::Ref(id) = v else {
        panic!("not a node")
    };
    let Node::Dict(items) = &arena[id] else {
        panic!("not a dict")
    };
    items
        .iter()
        .find(|(k, _)| arena.as_str(*k) == Some(key))
        .map(|(_, x)| *x)
        .unwrap_or_else(|| panic!("no key {key}"))
}

fn list_items(arena: &Arena, v: Val) -> Vec<Val> {
    let Val::Ref(id) = v else {
        panic!("not a node")
    };
    match &arena[id] {
        Node::List(items) => items.clone(),
        other => panic!("not a list: {other:?}"),
    }
}

#[test]
fn memo_references_share_the_node_in_every_protocol() {
    for p in 0..=5 {
        let pk = from_slice(&data(&format!("sample_p{p}.pkl"))).unwrap();
        let shared = list_items(&pk.arena, dict_get(&pk.arena, pk.root, "shared"));
        assert_eq!(shared[0], shared[1], "protocol {p}: the list is shared");
        let inner = list_items(&pk.arena, shared[0]);
        assert_eq!(inner[0], inner[1], "protocol {p}: the dict is shared");
        assert_eq!(inner[0], shared[2], "protocol {p}: the dict is shared");
    }
}

/// Compacts every dict into a counter handle and counts how often it was asked.
#[derive(Default)]
struct DictCounter {
    offered: Vec<NodeId>,
    progress: Vec<u64>,
}

impl Sink for DictCounter {
    fn compact(&mut self, arena: &Arena, node: NodeId) -> Option<Handle> {
        self.offered.push(node);
        matches!(arena[node], Node::Dict(_))
            .then(|| Handle::new(self.offered.len() as u32).unwrap())
    }

    fn progress(&mut self, bytes_read: u64) {
        self.progress.push(bytes_read);
    }
}

#[test]
fn compaction_replaces_every_reference_and_frees_the_node() {
    for p in 0..=5 {
        let bytes = data(&format!("sample_p{p}.pkl"));
        let mut sink = DictCounter::default();
        let pk = load(&bytes[..], &mut sink, &Limits::default()).unwrap();
        let shared = list_items(&pk.arena, dict_get(&pk.arena, pk.root, "shared"));
        let inner = list_items(&pk.arena, pk.arena.resolve(shared[0]));
        // The shared dict was compacted at its first attach; later memo gets see the handle.
        assert!(matches!(inner[0], Val::Handle(_)), "protocol {p}");
        assert_eq!(inner[0], inner[1], "protocol {p}");
        assert_eq!(inner[0], shared[2], "protocol {p}");
        assert!(!sink.progress.is_empty(), "progress reported");
        // The root dict is never attached, so never offered.
        assert!(matches!(pk.root, Val::Ref(_)));
        let plain = from_slice(&bytes).unwrap();
        assert!(
            pk.arena.capacity_used() < plain.arena.capacity_used(),
            "protocol {p}: compacted nodes are recycled"
        );
    }
}

#[test]
fn trailing_bytes_after_stop_are_ignored() {
    let mut bytes = data("sample_p4.pkl");
    bytes.extend_from_slice(b"garbage \xff\xff");
    assert!(from_slice(&bytes).is_ok());
}

#[test]
fn limits_are_configurable() {
    let bytes = data("sample_p4.pkl");
    let small = Limits {
        max_len: 1000,
        ..Limits::default()
    };
    let err = load(&bytes[..], &mut KeepAll, &small).err().unwrap();
    assert!(
        err.to_string().contains("exceeds the limit of 1000"),
        "{err}"
    );
    let shallow = Limits {
        max_stack: 50,
        ..Limits::default()
    };
    let err = load(&bytes[..], &mut KeepAll, &shallow).err().unwrap();
    assert!(err.to_string().contains("stack depth"), "{err}");
    let few = Limits {
        max_nodes: 10,
        ..Limits::default()
    };
    let err = load(&bytes[..], &mut KeepAll, &few).err().unwrap();
    assert!(err.to_string().contains("live objects"), "{err}");
}
