//! The Python frames view of a frame tree: what `report memory-tree --stacks python` prints
//! and what the flamegraph's "Python frames only" switch shows, computed once, here. The
//! text report folds [`Node`]s ([`python_view`]); a flamegraph page is given the view as
//! data beside its rows ([`rows_view`]), so `www/flamegraph/flamegraph.js` draws it without
//! deciding anything itself.
//!
//! The rules: every native frame (not a Python frame, [`crate::stack::is_python_file`]) with
//! a Python frame above or below it in the tree — the process entry above the first Python
//! frame, CPython's and the dispatcher's frames between Python frames, the operator's C++ and
//! the allocator below the innermost one — folds away. Its callees move up to its nearest
//! kept ancestor, which also takes its self counters; kept frames that then share a label
//! under one caller merge (counters summed). A stack without any Python frame keeps all its
//! frames, and a native frame holding memory itself whose nearest kept ancestor would be the
//! root stays (its bytes would belong to no frame). Inclusive = self + Σ children still
//! holds.

use std::collections::HashMap;

use serde_json::{json, Map, Value as Json};

use crate::stack::Origin;
use crate::tree::Node;

/// What the fold reads of one node of the tree.
pub(crate) struct Shape<'a> {
    pub node_id: &'a str,
    pub parent_id: Option<&'a str>,
    /// A frame, not the root or memory without a stack.
    pub frame: bool,
    /// A Python frame (only a frame can be one).
    pub python: bool,
    /// Holds memory itself: self bytes or self blocks.
    pub holds: bool,
    /// Inclusive bytes: siblings are ordered by it, largest first.
    pub size: i64,
    /// Frames under one caller with the same label merge.
    pub label: &'a str,
}

/// One node of the view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ViewNode {
    /// The kept nodes of the tree it stands for (several when frames merged), largest first:
    /// its inclusive counters are theirs summed.
    pub sources: Vec<usize>,
    /// Its sources and the folded-away nodes whose self counters it takes.
    pub absorbed: Vec<usize>,
    /// Its caller, an index into [`View::nodes`]; `None` for the root.
    pub parent: Option<usize>,
    pub depth: i64,
}

/// The view: its nodes caller first (the root first), and how many frames folded away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct View {
    pub nodes: Vec<ViewNode>,
    pub folded: usize,
}

/// The Python frames view of `nodes` (rules in the module documentation); `None` for a
/// tree without a root.
pub(crate) fn fold(nodes: &[Shape]) -> Option<View> {
    let index: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.node_id, i))
        .collect();
    let mut kids: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let mut parent: Vec<Option<usize>> = vec![None; nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        if let Some(&p) = n.parent_id.and_then(|p| index.get(p)) {
            if p != i {
                kids[p].push(i);
                parent[i] = Some(p);
            }
        }
    }
    let root = nodes.iter().position(|n| n.parent_id.is_none())?;
    // Caller before callee: the order of a walk from the root (each node once).
    let mut order = vec![root];
    let mut seen = vec![false; nodes.len()];
    seen[root] = true;
    let mut q = 0;
    while q < order.len() {
        for &c in &kids[order[q]] {
            if !std::mem::replace(&mut seen[c], true) {
                order.push(c);
            }
        }
        q += 1;
    }
    let native = |i: usize| i != root && nodes[i].frame && !nodes[i].python;
    let mut above = vec![false; nodes.len()];
    for &i in &order[1..] {
        let p = parent[i].expect("reached from the root");
        above[i] = above[p] || nodes[p].python;
    }
    let mut below = vec![false; nodes.len()];
    for &i in order.iter().rev() {
        below[i] = kids[i]
            .iter()
            .any(|&c| seen[c] && (nodes[c].python || below[c]));
    }
    let mut gone = vec![false; nodes.len()];
    // The nearest kept ancestor of each node, top-down.
    let mut kept_up = vec![root; nodes.len()];
    for &i in &order[1..] {
        let p = parent[i].expect("reached from the root");
        kept_up[i] = if gone[p] { kept_up[p] } else { p };
        gone[i] = native(i) && (above[i] || below[i]) && !(kept_up[i] == root && nodes[i].holds);
    }
    let folded = gone.iter().filter(|g| **g).count();

    // The folded tree, merging same-label callees, from the root down.
    let mut out: Vec<ViewNode> = Vec::new();
    let mut queue: Vec<(Vec<usize>, Option<usize>, i64)> = vec![(vec![root], None, 0)];
    let mut next = 0;
    while next < queue.len() {
        let (sources, parent, depth) = std::mem::take(&mut queue[next]);
        next += 1;
        let me = out.len();
        let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
        let mut absorbed = Vec::new();
        let mut walk: Vec<usize> = sources.clone();
        while let Some(s) = walk.pop() {
            absorbed.push(s);
            for &c in &kids[s] {
                if gone[c] {
                    walk.push(c);
                    continue;
                }
                // Memory without a stack keeps its own key; frames merge by label.
                let key = if nodes[c].frame {
                    format!("f\u{0}{}", nodes[c].label)
                } else {
                    format!("s\u{0}{}", nodes[c].node_id)
                };
                match groups.iter_mut().find(|g| g.0 == key) {
                    Some(g) => g.1.push(c),
                    None => groups.push((key, vec![c])),
                }
            }
        }
        // Largest first, as the template orders siblings; ties in row order.
        let size = |g: &Vec<usize>| g.iter().map(|&i| nodes[i].size).sum::<i64>();
        groups.sort_by(|a, b| size(&b.1).cmp(&size(&a.1)).then(a.1[0].cmp(&b.1[0])));
        for (_, mut members) in groups {
            members.sort_by(|&a, &b| nodes[b].size.cmp(&nodes[a].size).then(a.cmp(&b)));
            queue.push((members, Some(me), depth + 1));
        }
        out.push(ViewNode {
            sources,
            absorbed,
            parent,
            depth,
        });
    }
    Some(View { nodes: out, folded })
}

/// The memory tree in its Python view (module documentation), as the text report prints it:
/// the nodes caller first, and how many frames folded away. A merged node is its first
/// source with the counters summed and its caller's id.
pub fn python_view(nodes: &[Node]) -> (Vec<Node>, usize) {
    let shapes: Vec<Shape> = nodes
        .iter()
        .map(|n| Shape {
            node_id: &n.node_id,
            parent_id: n.parent_id.as_deref(),
            frame: n.filename.is_some(),
            python: n
                .filename
                .as_deref()
                .is_some_and(crate::stack::is_python_file),
            holds: n.self_bytes != 0 || n.self_block_count != 0,
            size: n.size_bytes,
            label: &n.label,
        })
        .collect();
    let Some(view) = fold(&shapes) else {
        return (nodes.to_vec(), 0);
    };
    let mut out: Vec<Node> = Vec::with_capacity(view.nodes.len());
    for v in &view.nodes {
        let sum = |of: &[usize], f: fn(&Node) -> i64| of.iter().map(|&i| f(&nodes[i])).sum();
        out.push(Node {
            parent_id: v.parent.map(|p| out[p].node_id.clone()),
            depth: v.depth,
            size_bytes: sum(&v.sources, |n| n.size_bytes),
            requested_bytes: sum(&v.sources, |n| n.requested_bytes),
            block_count: sum(&v.sources, |n| n.block_count),
            self_bytes: sum(&v.absorbed, |n| n.self_bytes),
            self_requested_bytes: sum(&v.absorbed, |n| n.self_requested_bytes),
            self_block_count: sum(&v.absorbed, |n| n.self_block_count),
            ..nodes[v.sources[0]].clone()
        });
    }
    (out, view.folded)
}

/// The counters of a flamegraph row, each inclusive one with its self one: the memory
/// tree's, and the diff's two sides (`www/flamegraph/README.md`). A view row sums those the
/// rows have.
const COUNTERS: [(&str, &str); 7] = [
    ("size_bytes", "self_bytes"),
    ("requested_bytes", "self_requested_bytes"),
    ("block_count", "self_block_count"),
    ("bytes_a", "self_bytes_a"),
    ("bytes_b", "self_bytes_b"),
    ("blocks_a", "self_blocks_a"),
    ("blocks_b", "self_blocks_b"),
];

/// The Python frames view of a flamegraph's rows, as its data carries it:
/// `{"folded": N, "nodes": [{"parent": i | null, "sources": [row, …], <counters>}, …]}`,
/// caller first, `parent` an index into these nodes, `sources` indices into the rows (the
/// first one names and describes the node), the counters those of [`COUNTERS`] the rows
/// have, summed, each only where it differs from the first source's own (most nodes of a
/// view are a row as it was: the data grows by little more than their indices). `origins[i]`: row `i`'s origin, `None` for a row that is not a frame
/// (the root, memory without a stack) — what [`python_view`] reads from a node's filename.
pub(crate) fn rows_view(rows: &[Json], origins: &[Option<Origin>]) -> Json {
    let int = |row: &Json, key: &str| row.get(key).and_then(Json::as_i64);
    let shapes: Vec<Shape> = rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let text = |key: &str| row.get(key).and_then(Json::as_str);
            let origin = origins.get(i).copied().flatten();
            Shape {
                node_id: text("node_id").unwrap_or(""),
                parent_id: text("parent_id"),
                frame: origin.is_some(),
                python: origin.is_some_and(Origin::is_python),
                holds: int(row, "self_bytes").unwrap_or(0) != 0
                    || int(row, "self_block_count").unwrap_or(0) != 0,
                size: int(row, "size_bytes").unwrap_or(0),
                label: text("label").unwrap_or(""),
            }
        })
        .collect();
    let Some(view) = fold(&shapes) else {
        return json!({"folded": 0, "nodes": []});
    };
    let counters: Vec<(&str, &str)> = COUNTERS
        .into_iter()
        .filter(|(inclusive, own)| {
            rows.first()
                .is_some_and(|r| int(r, inclusive).is_some() && int(r, own).is_some())
        })
        .collect();
    let nodes: Vec<Json> = view
        .nodes
        .iter()
        .map(|v| {
            let mut node = Map::new();
            node.insert("parent".into(), json!(v.parent));
            node.insert("sources".into(), json!(v.sources));
            let first = &rows[v.sources[0]];
            let mut put = |key: &str, of: &[usize]| {
                let sum: i64 = of.iter().map(|&i| int(&rows[i], key).unwrap_or(0)).sum();
                if int(first, key) != Some(sum) {
                    node.insert(key.into(), json!(sum));
                }
            };
            for (inclusive, own) in &counters {
                put(inclusive, &v.sources);
                put(own, &v.absorbed);
            }
            Json::Object(node)
        })
        .collect();
    json!({"folded": view.folded, "nodes": nodes})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tests/browser/fixtures/fold_merge.json`'s rows.
    fn fold_merge_rows() -> Vec<Json> {
        let data: Json = serde_json::from_str(include_str!(
            "../../../tests/browser/fixtures/fold_merge.json"
        ))
        .unwrap();
        data["nodes"].as_array().unwrap().clone()
    }

    /// fold_merge.json's rows as nodes.
    fn fold_merge() -> Vec<Node> {
        let int = |r: &Json, k: &str| r[k].as_i64().unwrap();
        fold_merge_rows()
            .iter()
            .map(|r| Node {
                node_id: r["node_id"].as_str().unwrap().into(),
                parent_id: r["parent_id"].as_str().map(Into::into),
                depth: int(r, "depth"),
                label: r["label"].as_str().unwrap_or_default().into(),
                size_bytes: int(r, "size_bytes"),
                self_bytes: int(r, "self_bytes"),
                requested_bytes: int(r, "requested_bytes"),
                self_requested_bytes: int(r, "self_requested_bytes"),
                block_count: int(r, "block_count"),
                self_block_count: int(r, "self_block_count"),
                filename: r["filename"].as_str().map(Into::into),
            })
            .collect()
    }

    /// The Python view of fold_merge.json, worked out by hand: every native frame under
    /// `main` folds into it (PyObject_Call's 512, PyMethod_New's 64 and the C extension's 16
    /// self bytes), the two `forward` frames merge and take all the native frames below
    /// them; `_start` stays, as its 32 self bytes would otherwise belong to no frame, and so
    /// does `app.py`'s `<module>` below it. The flamegraph draws the same view from its
    /// data ([`rows_view`]; tests/browser/flamegraph.test.mjs, FOLD_MERGE_PYTHON, checks the
    /// page draws it).
    #[test]
    fn the_python_view_folds_native_frames_around_python_ones() {
        let nodes = fold_merge();
        let (view, folded) = python_view(&nodes);
        assert_eq!(folded, 13);
        type Row<'a> = (&'a str, Option<&'a str>, i64, i64, i64, i64);
        let got: Vec<Row> = view
            .iter()
            .map(|n| {
                let (id, parent) = (n.node_id.as_str(), n.parent_id.as_deref());
                (
                    id,
                    parent,
                    n.size_bytes,
                    n.self_bytes,
                    n.block_count,
                    n.self_block_count,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("root", None, 120400, 0, 17, 0),
                ("static", Some("root"), 100000, 100000, 3, 3),
                ("frame/1", Some("root"), 16368, 592, 12, 3),
                ("frame/20", Some("root"), 4032, 32, 2, 1),
                ("frame/1/3/5", Some("frame/1"), 15744, 15744, 8, 8),
                ("frame/1/14", Some("frame/1"), 32, 32, 1, 1),
                ("frame/20/21", Some("frame/20"), 4000, 4000, 1, 1),
            ]
        );
        for n in &view {
            let kids = view
                .iter()
                .filter(|k| k.parent_id.as_ref() == Some(&n.node_id));
            let (mut size, mut requested, mut blocks) = (0, 0, 0);
            for k in kids {
                (size, requested, blocks) = (
                    size + k.size_bytes,
                    requested + k.requested_bytes,
                    blocks + k.block_count,
                );
            }
            assert_eq!(n.size_bytes, n.self_bytes + size, "{}", n.node_id);
            assert_eq!(
                n.requested_bytes,
                n.self_requested_bytes + requested,
                "{}",
                n.node_id
            );
            assert_eq!(n.block_count, n.self_block_count + blocks, "{}", n.node_id);
        }
        // The view of the view is itself: nothing more folds (`_start` still stays).
        let (again, none) = python_view(&view);
        assert_eq!(none, 0);
        assert_eq!(again.len(), view.len());
    }

    /// The data a page is given is the same view: its nodes' rows, sources and counters.
    #[test]
    fn a_pages_view_is_the_reports() {
        let rows = fold_merge_rows();
        let origins: Vec<Option<Origin>> = rows
            .iter()
            .map(|r| {
                let filename = r["filename"]
                    .as_str()
                    .filter(|_| !r["frame_id"].is_null())?;
                let name = r["name"].as_str().unwrap_or("");
                Some(crate::stack::Frame::new(filename, r["line"].as_i64(), name).origin)
            })
            .collect();
        let data = rows_view(&rows, &origins);
        let (view, folded) = python_view(&fold_merge());
        assert_eq!(data["folded"], json!(folded));
        let nodes = data["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), view.len());
        for (got, want) in nodes.iter().zip(&view) {
            let first = got["sources"][0].as_u64().unwrap() as usize;
            assert_eq!(rows[first]["node_id"], json!(want.node_id));
            // A counter the view leaves out is the first row's.
            let counter = |key: &str| got.get(key).unwrap_or(&rows[first][key]).clone();
            let parent = got["parent"]
                .as_u64()
                .map(|p| view[p as usize].node_id.clone());
            assert_eq!(parent, want.parent_id, "{}", want.node_id);
            for (key, value) in [
                ("size_bytes", want.size_bytes),
                ("self_bytes", want.self_bytes),
                ("requested_bytes", want.requested_bytes),
                ("self_requested_bytes", want.self_requested_bytes),
                ("block_count", want.block_count),
                ("self_block_count", want.self_block_count),
            ] {
                assert_eq!(counter(key), json!(value), "{} {key}", want.node_id);
            }
            assert!(got.get("bytes_a").is_none(), "not a diff's rows");
            if want.node_id == "static" {
                let keys: Vec<&String> = got.as_object().unwrap().keys().collect();
                assert_eq!(
                    keys,
                    ["parent", "sources"],
                    "a row as it was carries no counter"
                );
            }
        }
        // The merged `forward` stands for both frames, the larger first.
        let merged = nodes
            .iter()
            .find(|n| n["sources"].as_array().unwrap().len() > 1)
            .unwrap();
        let ids: Vec<&Json> = merged["sources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| &rows[i.as_u64().unwrap() as usize]["node_id"])
            .collect();
        assert_eq!(ids, [&json!("frame/1/3/5"), &json!("frame/1/2/4")]);
    }

    #[test]
    fn a_tree_without_a_root_or_without_native_frames_folds_nothing() {
        let shape = |id, parent, python| Shape {
            node_id: id,
            parent_id: parent,
            frame: parent.is_some(),
            python,
            holds: true,
            size: 1,
            label: id,
        };
        assert_eq!(
            fold(&[shape("a", Some("b"), false), shape("b", Some("a"), false)]),
            None
        );
        let view = fold(&[shape("root", None, false), shape("x", Some("root"), true)]).unwrap();
        assert_eq!(view.folded, 0);
        assert_eq!(view.nodes[1].parent, Some(0));
    }
}
