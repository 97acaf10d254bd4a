//! `report memory-tree` (spec §8.2): live memory after an event as a caller-first tree of
//! frames — the `active_memory_frame_tree_at_event` rows, checked to be one complete tree,
//! printed as an indented breakdown or as the interactive flamegraph page.

use std::collections::HashMap;

use pt_snap_query::{QueryError, QueryOutcome, QueryRequest, Source, Value};

use crate::python_view::python_view;
pub use crate::stack::Stacks;
use crate::stack::{Frame, Origin};
use serde_json::{json, Map, Value as Json};

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

    /// The flamegraph data: `{title, event_id, device_id, nodes, python_view}`, each frame
    /// row with its `origin` ([`flamegraph_data`]).
    pub fn flamegraph_data(&self) -> Json {
        flamegraph_data(json!({
            "title": self.title(),
            "event_id": self.event_id,
            "device_id": self.outcome.device_id,
            "nodes": self.outcome.rows_json(),
        }))
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

/// A flamegraph's data with what the component reads from here rather than deciding itself
/// (`www/flamegraph/README.md`): each frame row's `origin` ([`Origin::name`]; a row with a
/// `frame_id`, by its `filename`, `line` and `name`, as [`Frame::new`] classifies them), and
/// `python_view`, the rows' Python frames view ([`crate::python_view`]). `data` holds the
/// rows as `nodes`, or as `rows` as `--json` prints them (then `title` defaults to the
/// report's); its other fields stay.
pub fn flamegraph_data(data: Json) -> Json {
    let Json::Object(mut data) = data else {
        return data;
    };
    if !data.contains_key("nodes") {
        if let Some(rows) = data.remove("rows") {
            data.insert("nodes".into(), rows);
        }
        if !data.contains_key("title") {
            let title = format!(
                "Active memory after event {} · device {}",
                data.get("event_id").unwrap_or(&Json::Null),
                data.get("device_id").unwrap_or(&Json::Null)
            );
            data.insert("title".into(), json!(title));
        }
    }
    let origins: Vec<Option<Origin>> = match data.get("nodes") {
        Some(Json::Array(rows)) => rows
            .iter()
            .map(|row| {
                let text = |k: &str| row.get(k).and_then(Json::as_str);
                let frame = row.get("frame_id").is_some_and(|f| !f.is_null());
                let filename = text("filename").filter(|_| frame)?;
                let line = row.get("line").and_then(Json::as_i64);
                Some(Frame::new(filename, line, text("name").unwrap_or("")).origin)
            })
            .collect(),
        _ => Vec::new(),
    };
    set_origins_and_python_view(&mut data, &origins);
    Json::Object(data)
}

/// Sets each row of `data["nodes"]`'s `origin` (`null` for the root and memory without a
/// stack) and `data["python_view"]`: the part of [`flamegraph_data`] that also serves rows
/// whose origins were decided before (the diff's frames, classified by their raw paths).
pub(crate) fn set_origins_and_python_view(
    data: &mut Map<String, Json>,
    origins: &[Option<Origin>],
) {
    let Some(Json::Array(nodes)) = data.get_mut("nodes") else {
        return;
    };
    for (node, origin) in nodes.iter_mut().zip(origins) {
        if let Json::Object(row) = node {
            row.insert("origin".into(), json!(origin.map(Origin::name)));
        }
    }
    let view = crate::python_view::rows_view(nodes, origins);
    data.insert("python_view".into(), view);
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

/// What every report page starts with (`{{HEAD}}`): the doctype, the Content-Security-Policy
/// that keeps it from requesting anything, and the metadata, one copy for every page.
const HEAD: &str = include_str!("../../../www/report-head.html");

/// Replaces `{{HEAD}}` and each placeholder once, in one pass over the template, so text
/// inserted for one placeholder (a frame name spelling `{{SCRIPT}}`) is never itself replaced.
pub(crate) fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let values: Vec<(&str, &str)> = [("{{HEAD}}", HEAD.trim_end())]
        .into_iter()
        .chain(values.iter().copied())
        .collect();
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

    #[test]
    fn inserted_text_is_not_filled_again() {
        assert_eq!(
            fill("a{{X}}b{{Y}}", &[("{{X}}", "{{Y}}"), ("{{Y}}", "z")]),
            "a{{Y}}bz"
        );
    }
}
