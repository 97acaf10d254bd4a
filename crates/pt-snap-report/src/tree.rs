//! `report memory-tree` (spec §8.2): live memory after an event as a caller-first tree of
//! frames — the `active_memory_frame_tree_at_event` rows, checked to be one complete tree,
//! printed as an indented breakdown or as the interactive flamegraph page.

use std::collections::HashMap;

use pt_snap_query::{QueryError, QueryOutcome, QueryRequest, Source, Value};

pub use crate::stack::Stacks;
use serde_json::{json, Value as Json};

/// The flamegraph: one component for the HTML report and the web app.
const PAGE: &str = include_str!("../../../www/flamegraph/report.html");
pub(crate) const SCRIPT: &str = include_str!("../../../www/flamegraph/flamegraph.js");
pub(crate) const STYLE: &str = include_str!("../../../www/flamegraph/flamegraph.css");

#[derive(Debug, Clone)]
pub struct TreeRequest {
    pub device: Option<i64>,
    pub event_id: i64,
    pub include_static: bool,
    /// Blocks smaller than this many bytes are left out.
    pub min_size: i64,
}

/// The frame-tree rows at one event, as the template returned them.
#[derive(Debug, Clone)]
pub struct MemoryTree {
    pub event_id: i64,
    pub outcome: QueryOutcome,
}

/// The rows do not form one complete tree (a cut-off or corrupt result): showing them as
/// a breakdown would misstate where memory is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncompleteTree;

impl std::fmt::Display for IncompleteTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("A complete frame tree is required to render a memory breakdown.")
    }
}

impl std::error::Error for IncompleteTree {}

/// One node with the measures the invariant is about.
#[derive(Debug, Clone)]
pub struct Node {
    pub node_id: String,
    pub parent_id: Option<String>,
    pub depth: i64,
    pub label: String,
    pub size_bytes: i64,
    pub self_bytes: i64,
    pub requested_bytes: i64,
    pub self_requested_bytes: i64,
    pub block_count: i64,
    pub self_block_count: i64,
    /// The frame's file; `None` for the root and memory without a stack.
    pub filename: Option<String>,
}

/// The frame tree at `req.event_id`. Datasets have no structured frames: their engine
/// refuses the template, and that refusal is the answer.
pub fn memory_tree(source: &dyn Source, req: &TreeRequest) -> Result<MemoryTree, QueryError> {
    let mut request = QueryRequest::new("active_memory_frame_tree_at_event")
        .param("event_id", req.event_id)
        .param("include_static", req.include_static)
        .param("min_size", req.min_size);
    request.device = req.device;
    Ok(MemoryTree {
        event_id: req.event_id,
        outcome: source.run(&request)?,
    })
}

impl MemoryTree {
    pub fn title(&self) -> String {
        format!(
            "Active memory after event {} · device {}",
            self.event_id, self.outcome.device_id
        )
    }

    /// `--json`: the event id, then the query result's fields.
    pub fn to_json(&self, timeout_s: Option<f64>) -> Json {
        let o = &self.outcome;
        json!({
            "event_id": self.event_id,
            "total": o.total,
            "returned": o.returned,
            "device_id": o.device_id,
            "rows": o.rows_json(),
            "template": o.template,
            "semantics_version": o.semantics_version,
            "has_more": o.has_more,
            "truncated": o.truncated,
            "total_is_exact": o.total_is_exact,
            "timeout_s": timeout_s,
            "scope": null,
        })
    }

    /// The nodes, after checking they form one complete tree: one root, every parent
    /// present one level up, and for every node size = self + Σ children in bytes,
    /// requested bytes and blocks.
    pub fn nodes(&self) -> Result<Vec<Node>, IncompleteTree> {
        let o = &self.outcome;
        if o.truncated || o.has_more {
            return Err(IncompleteTree);
        }
        let col = |name: &str| {
            o.columns
                .iter()
                .position(|c| c == name)
                .ok_or(IncompleteTree)
        };
        let (id, parent, depth, label) = (
            col("node_id")?,
            col("parent_id")?,
            col("depth")?,
            col("label")?,
        );
        // Optional: a tree without it is drawn as it is by every view.
        let filename = o.columns.iter().position(|c| c == "filename");
        let frame_id = o.columns.iter().position(|c| c == "frame_id");
        let measures = [
            col("size_bytes")?,
            col("self_bytes")?,
            col("requested_bytes")?,
            col("self_requested_bytes")?,
            col("block_count")?,
            col("self_block_count")?,
        ];
        let mut nodes = Vec::with_capacity(o.rows.len());
        for row in &o.rows {
            let int = |i: usize| match &row[i] {
                Value::Int(v) if *v >= 0 => Ok(*v),
                _ => Err(IncompleteTree),
            };
            let text = |i: usize| match &row[i] {
                Value::Text(t) => Some(t.to_string()),
                _ => None,
            };
            nodes.push(Node {
                node_id: text(id).ok_or(IncompleteTree)?,
                parent_id: text(parent),
                depth: row[depth].as_i64().ok_or(IncompleteTree)?,
                label: text(label).unwrap_or_default(),
                size_bytes: int(measures[0])?,
                self_bytes: int(measures[1])?,
                requested_bytes: int(measures[2])?,
                self_requested_bytes: int(measures[3])?,
                block_count: int(measures[4])?,
                self_block_count: int(measures[5])?,
                filename: match (filename, frame_id.map(|i| &row[i])) {
                    (_, Some(Value::Null)) => None,
                    (Some(i), _) => text(i),
                    _ => None,
                },
            });
        }
        check_complete(&nodes)?;
        Ok(nodes)
    }

    /// The indented breakdown: depth-first from the root, children in row order, labels
    /// JSON-escaped so every frame stays on one line.
    pub fn to_text(&self) -> Result<String, IncompleteTree> {
        self.to_text_stacks(Stacks::All)
    }

    /// [`MemoryTree::to_text`] with every frame (`Stacks::All`: the reference's text), or in
    /// the Python view (`Stacks::Python`): native frames of stacks that hold Python frames
    /// folded away ([`python_view`]), with one more header line saying how many.
    pub fn to_text_stacks(&self, stacks: Stacks) -> Result<String, IncompleteTree> {
        let nodes = self.nodes()?;
        let mut out = format!(
            "{}\nInclusive bytes / self bytes / live blocks\n",
            self.title()
        );
        let (nodes, folded) = match stacks {
            Stacks::All => (nodes, 0),
            Stacks::Python => python_view(&nodes),
        };
        if stacks == Stacks::Python {
            out.push_str(&format!(
                "Python frames: {folded} native frame(s) folded into their nearest Python caller \
                 (--stacks all shows every frame)\n"
            ));
        }
        let mut children: HashMap<Option<&str>, Vec<&Node>> = HashMap::new();
        for n in &nodes {
            children.entry(n.parent_id.as_deref()).or_default().push(n);
        }
        let mut pending: Vec<&Node> = children
            .get(&None)
            .into_iter()
            .flatten()
            .rev()
            .copied()
            .collect();
        while let Some(n) = pending.pop() {
            let escaped = serde_json::to_string(&n.label).expect("strings serialise");
            out.push_str(&format!(
                "{}{}: {} / {} / {}\n",
                "  ".repeat(n.depth.max(0) as usize),
                &escaped[1..escaped.len() - 1],
                n.size_bytes,
                n.self_bytes,
                n.block_count
            ));
            if let Some(kids) = children.get(&Some(n.node_id.as_str())) {
                pending.extend(kids.iter().rev());
            }
        }
        Ok(out)
    }

    /// The flamegraph data: `{title, event_id, device_id, nodes}`.
    pub fn flamegraph_data(&self) -> Json {
        json!({
            "title": self.title(),
            "event_id": self.event_id,
            "device_id": self.outcome.device_id,
            "nodes": self.outcome.rows_json(),
        })
    }

    /// One self-contained page: styles, script and data inline, no request of any kind.
    /// `python_frames`: the flamegraph's Python view on or off when it opens (`None`: the
    /// component's default, on when the tree has native frames to fold).
    pub fn to_html(&self, python_frames: Option<bool>) -> Result<String, IncompleteTree> {
        self.nodes()?;
        let mut data = self.flamegraph_data();
        if let (Some(on), Json::Object(map)) = (python_frames, &mut data) {
            map.insert("python_frames".into(), json!(on));
        }
        Ok(flamegraph_page(&self.title(), &data))
    }
}

/// The memory tree in its Python view: every native frame (`filename` not Python source,
/// [`crate::stack::is_python_file`]) with a Python frame above or below it in the tree —
/// the process entry above the first Python frame, CPython's and the dispatcher's frames
/// between Python frames, the operator's C++ and the allocator below the innermost one —
/// folds away. Its callees move up to its nearest kept ancestor, which also takes its
/// self counters; kept frames that then share a label under one caller merge (counters
/// summed). A stack without any Python frame keeps all its frames, and a native frame
/// holding memory itself whose nearest kept ancestor would be the root stays (its bytes
/// would belong to no frame). Inclusive = self + Σ children still holds. The same rules
/// as the flamegraph's "Python frames" view (`www/flamegraph/README.md`), without its
/// separate fold of interpreter and dispatcher frames. Returns the nodes, caller first,
/// and how many frames folded away.
pub fn python_view(nodes: &[Node]) -> (Vec<Node>, usize) {
    let index: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.node_id.as_str(), i))
        .collect();
    let mut kids: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let mut parent: Vec<Option<usize>> = vec![None; nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        if let Some(p) = n.parent_id.as_deref().and_then(|p| index.get(p)) {
            kids[*p].push(i);
            parent[i] = Some(*p);
        }
    }
    // Caller before callee: the order of a walk from the root.
    let Some(root) = nodes.iter().position(|n| n.parent_id.is_none()) else {
        return (nodes.to_vec(), 0);
    };
    let mut order = vec![root];
    let mut q = 0;
    while q < order.len() {
        order.extend(kids[order[q]].iter().copied());
        q += 1;
    }
    let python: Vec<bool> = nodes
        .iter()
        .map(|n| {
            n.filename
                .as_deref()
                .is_some_and(crate::stack::is_python_file)
        })
        .collect();
    let native: Vec<bool> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| i != root && n.filename.is_some() && !python[i])
        .collect();
    let mut above = vec![false; nodes.len()];
    for &i in &order[1..] {
        let p = parent[i].expect("reached from the root");
        above[i] = above[p] || python[p];
    }
    let mut below = vec![false; nodes.len()];
    for &i in order.iter().rev() {
        below[i] = kids[i].iter().any(|&c| python[c] || below[c]);
    }
    let holds = |i: usize| nodes[i].self_bytes != 0 || nodes[i].self_block_count != 0;
    let mut gone = vec![false; nodes.len()];
    // The nearest kept ancestor of each node, top-down.
    let mut kept_up = vec![root; nodes.len()];
    for &i in &order[1..] {
        let p = parent[i].expect("reached from the root");
        kept_up[i] = if gone[p] { kept_up[p] } else { p };
        gone[i] = native[i] && (above[i] || below[i]) && !(kept_up[i] == root && holds(i));
    }
    let folded = gone.iter().filter(|g| **g).count();

    // The folded tree, merging same-label callees, from the root down.
    let mut out: Vec<Node> = Vec::new();
    let mut queue: Vec<(Vec<usize>, Option<String>, i64)> = vec![(vec![root], None, 0)];
    let mut next = 0;
    while next < queue.len() {
        let (sources, parent_id, depth) = queue[next].clone();
        next += 1;
        let first = &nodes[sources[0]];
        let mut node = Node {
            parent_id,
            depth,
            size_bytes: 0,
            self_bytes: 0,
            requested_bytes: 0,
            self_requested_bytes: 0,
            block_count: 0,
            self_block_count: 0,
            ..first.clone()
        };
        let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
        let mut walk: Vec<usize> = Vec::new();
        for &s in &sources {
            let n = &nodes[s];
            node.size_bytes += n.size_bytes;
            node.requested_bytes += n.requested_bytes;
            node.block_count += n.block_count;
            walk.push(s);
        }
        while let Some(s) = walk.pop() {
            let n = &nodes[s];
            node.self_bytes += n.self_bytes;
            node.self_requested_bytes += n.self_requested_bytes;
            node.self_block_count += n.self_block_count;
            for &c in &kids[s] {
                if gone[c] {
                    walk.push(c);
                    continue;
                }
                // Memory without a stack keeps its own key; frames merge by label.
                let key = if nodes[c].filename.is_some() {
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
        let size = |g: &Vec<usize>| g.iter().map(|&i| nodes[i].size_bytes).sum::<i64>();
        groups.sort_by(|a, b| size(&b.1).cmp(&size(&a.1)).then(a.1[0].cmp(&b.1[0])));
        for (_, mut members) in groups {
            members.sort_by(|&a, &b| {
                nodes[b]
                    .size_bytes
                    .cmp(&nodes[a].size_bytes)
                    .then(a.cmp(&b))
            });
            queue.push((members, Some(node.node_id.clone()), depth + 1));
        }
        out.push(node);
    }
    (out, folded)
}

/// Fills the flamegraph page. Frame texts are untrusted: the data is escaped so no
/// `</script>` (or `<!--`) inside it can end the script element.
pub fn flamegraph_page(title: &str, data: &Json) -> String {
    fill(
        PAGE,
        &[
            ("{{TITLE}}", &html_text(title)),
            ("{{STYLE}}", STYLE),
            ("{{SCRIPT}}", SCRIPT),
            ("{{DATA}}", &script_json(data)),
        ],
    )
}

/// JSON to put inside a `<script type="application/json">`: every `<`, `>` and `&` written
/// as a `\u` escape, so no text in it can end the element or start an HTML construct.
pub(crate) fn script_json(data: &Json) -> String {
    serde_json::to_string(data)
        .expect("JSON values serialise")
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// Text escaped for HTML element content and quoted attributes.
pub(crate) fn html_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Replaces each placeholder once, in one pass over the template, so text inserted for one
/// placeholder (a frame name spelling `{{SCRIPT}}`) is never itself replaced.
pub(crate) fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out =
        String::with_capacity(template.len() + values.iter().map(|v| v.1.len()).sum::<usize>());
    let mut rest = template;
    while let Some((at, (key, value))) = values
        .iter()
        .filter_map(|kv| rest.find(kv.0).map(|at| (at, kv)))
        .min_by_key(|(at, _)| *at)
    {
        out.push_str(&rest[..at]);
        out.push_str(value);
        rest = &rest[at + key.len()..];
    }
    out.push_str(rest);
    out
}

fn check_complete(nodes: &[Node]) -> Result<(), IncompleteTree> {
    let by_id: HashMap<&str, &Node> = nodes.iter().map(|n| (n.node_id.as_str(), n)).collect();
    if by_id.len() != nodes.len() || !by_id.contains_key("root") {
        return Err(IncompleteTree);
    }
    let mut sums: HashMap<&str, [i64; 3]> = HashMap::new();
    for n in nodes {
        match (&n.parent_id, n.node_id.as_str()) {
            (None, "root") if n.depth == 0 => {}
            (Some(p), id) if id != "root" => {
                let parent = by_id.get(p.as_str()).ok_or(IncompleteTree)?;
                if n.depth != parent.depth + 1 {
                    return Err(IncompleteTree);
                }
                let s = sums.entry(p.as_str()).or_default();
                s[0] += n.size_bytes;
                s[1] += n.requested_bytes;
                s[2] += n.block_count;
            }
            _ => return Err(IncompleteTree),
        }
    }
    for n in nodes {
        let s = sums.get(n.node_id.as_str()).copied().unwrap_or_default();
        if n.size_bytes != n.self_bytes + s[0]
            || n.requested_bytes != n.self_requested_bytes + s[1]
            || n.block_count != n.self_block_count + s[2]
        {
            return Err(IncompleteTree);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_component_cannot_break_out_of_its_elements() {
        for (name, text) in [("script", SCRIPT), ("style", STYLE)] {
            assert!(
                !text.contains("</script") && !text.contains("</style"),
                "{name}"
            );
            assert!(!text.contains("{{"), "{name} holds a placeholder");
        }
        for key in ["{{TITLE}}", "{{STYLE}}", "{{SCRIPT}}", "{{DATA}}"] {
            assert_eq!(PAGE.matches(key).count(), 1, "{key}");
        }
    }

    /// `tests/browser/fixtures/fold_merge.json`'s rows as nodes.
    fn fold_merge() -> Vec<Node> {
        let data: Json = serde_json::from_str(include_str!(
            "../../../tests/browser/fixtures/fold_merge.json"
        ))
        .unwrap();
        let int = |r: &Json, k: &str| r[k].as_i64().unwrap();
        data["nodes"]
            .as_array()
            .unwrap()
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

    /// The Python view of fold_merge.json, worked out by hand — the same tree the
    /// flamegraph's "Python frames" view draws (tests/browser/flamegraph.test.mjs,
    /// FOLD_MERGE_PYTHON): every native frame under `main` folds into it (PyObject_Call's
    /// 512, PyMethod_New's 64 and the C extension's 16 self bytes), the two `forward`
    /// frames merge and take all the native frames below them; `_start` stays, as its 32
    /// self bytes would otherwise belong to no frame, and so does `app.py`'s `<module>`
    /// below it.
    #[test]
    fn the_python_view_folds_native_frames_around_python_ones() {
        let nodes = fold_merge();
        check_complete(&nodes).unwrap();
        let (view, folded) = python_view(&nodes);
        check_complete(&view).unwrap();
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
        // The view of the view is itself: nothing more folds (`_start` still stays).
        let (again, none) = python_view(&view);
        assert_eq!(none, 0);
        assert_eq!(again.len(), view.len());
    }

    #[test]
    fn inserted_text_is_not_filled_again() {
        assert_eq!(
            fill("a{{X}}b{{Y}}", &[("{{X}}", "{{Y}}"), ("{{Y}}", "z")]),
            "a{{Y}}bz"
        );
    }
}
