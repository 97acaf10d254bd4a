//! The diff as one self-contained HTML page (`www/diff/`): the report's data, both
//! timelines overlaid, the groups table, and the differential flamegraph — the shared
//! component of `www/flamegraph/` in its diff mode, fed a frame tree built here from the
//! normalised groups of both sides.

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Map, Value as Json};

use super::{Diff, Frame, GroupDiff, Live, StackKey};
use crate::stack::Origin;
use crate::tree::{
    fill, html_text, script_json, set_origins_and_python_view, SCRIPT as FG_SCRIPT,
    STYLE as FG_STYLE,
};

const PAGE: &str = include_str!("../../../../www/diff/report.html");
const SCRIPT: &str = include_str!("../../../../www/diff/diff.js");
const STYLE: &str = include_str!("../../../../www/diff/diff.css");

/// The placeholders of `www/diff/report.html`, each filled exactly once.
pub(super) const PLACEHOLDERS: [&str; 7] = [
    "{{TITLE}}",
    "{{FG_STYLE}}",
    "{{STYLE}}",
    "{{FG_SCRIPT}}",
    "{{SCRIPT}}",
    "{{TREE}}",
    "{{DATA}}",
];

pub(super) fn render(
    diff: &Diff,
    limit: Option<usize>,
    labels: [&str; 2],
    inputs: [&Map<String, Json>; 2],
) -> String {
    let title = title(labels);
    let drawn = data(diff, limit, labels, inputs);
    let values = [
        html_text(&title),
        FG_STYLE.to_owned(),
        STYLE.to_owned(),
        FG_SCRIPT.to_owned(),
        SCRIPT.to_owned(),
        script_json(&drawn.tree),
        script_json(&drawn.data),
    ];
    let pairs: Vec<(&str, &str)> = PLACEHOLDERS
        .iter()
        .zip(&values)
        .map(|(k, v)| (*k, v.as_str()))
        .collect();
    fill(PAGE, &pairs)
}

/// What `www/diff/diff.js` draws: `PtSnapDiff.render(container, data, tree)`.
#[derive(Debug, Clone, PartialEq)]
pub struct PageData {
    /// What `--json` prints, plus `labels` and each listed group's `node_id`.
    pub data: Json,
    /// The differential frame tree, the flamegraph's diff-mode input.
    pub tree: Json,
}

pub(super) fn data(
    diff: &Diff,
    limit: Option<usize>,
    labels: [&str; 2],
    inputs: [&Map<String, Json>; 2],
) -> PageData {
    let tree = Tree::of(diff);
    let mut data: Map<String, Json> = diff
        .to_json(limit, inputs)
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    data.insert("labels".into(), json!({"a": labels[0], "b": labels[1]}));
    // The table's rows point at their stack's site in the flamegraph.
    if let Some(Json::Array(groups)) = data.get_mut("groups") {
        for (row, g) in groups.iter_mut().zip(&diff.groups) {
            if let Json::Object(o) = row {
                o.insert("node_id".into(), json!(tree.anchor_of(diff, &g.key)));
            }
        }
    }
    PageData {
        tree: tree.data(diff, &title(labels), labels),
        data: Json::Object(data),
    }
}

fn title(labels: [&str; 2]) -> String {
    format!("{} → {}", base_name(labels[0]), base_name(labels[1]))
}

fn base_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// One node of the merged frame tree: both sides' bytes and blocks through it (inclusive)
/// and ending at it (self), and its width, the larger side of each stack through it.
#[derive(Debug, Default, Clone)]
struct Node {
    parent: Option<String>,
    depth: usize,
    frame: Option<usize>,
    a: Live,
    b: Live,
    self_a: Live,
    self_b: Live,
    width: i64,
    self_width: i64,
    width_blocks: i64,
    self_width_blocks: i64,
}

impl Node {
    fn add(&mut self, g: &GroupDiff, own: bool) {
        let (w, wb) = (g.a.bytes.max(g.b.bytes), g.a.blocks.max(g.b.blocks));
        for (total, part) in [(&mut self.a, g.a), (&mut self.b, g.b)] {
            total.bytes += part.bytes;
            total.blocks += part.blocks;
        }
        self.width += w;
        self.width_blocks += wb;
        if own {
            self.self_a = g.a;
            self.self_b = g.b;
            self.self_width = w;
            self.self_width_blocks = wb;
        }
    }
}

/// The caller-first tree of every group of both sides, in the rows the flamegraph reads.
/// Widths add up (a node's width is its own plus its children's), because each stack counts
/// once, with the larger of its two sides: a stack that is gone from B keeps its place.
struct Tree {
    nodes: BTreeMap<String, Node>,
    frames: Vec<Frame>,
    /// Per stack, the node a table row reveals: its innermost Python frame (where `site`
    /// starts, and never folded away), else its innermost frame.
    anchors: HashMap<StackKey, String>,
}

impl Tree {
    fn of(diff: &Diff) -> Tree {
        let mut tree = Tree {
            nodes: BTreeMap::new(),
            frames: Vec::new(),
            anchors: HashMap::new(),
        };
        let mut frame_ids: HashMap<&Frame, usize> = HashMap::new();
        tree.nodes.insert("root".into(), Node::default());
        for g in &diff.stacks {
            tree.nodes.get_mut("root").expect("root").add(g, false);
            let anchor = match &g.key {
                StackKey::Frames(frames) => {
                    let site = frames
                        .iter()
                        .rposition(Frame::is_python)
                        .unwrap_or(frames.len() - 1);
                    let mut anchor = String::new();
                    let mut id = "frame".to_owned();
                    let mut parent = "root".to_owned();
                    for (depth, f) in frames.iter().enumerate() {
                        let next = frame_ids.len();
                        let index = *frame_ids.entry(f).or_insert(next);
                        if index == tree.frames.len() {
                            tree.frames.push(f.clone());
                        }
                        id = format!("{id}/{index}");
                        let node = tree.nodes.entry(id.clone()).or_insert_with(|| Node {
                            parent: Some(parent.clone()),
                            depth: depth + 1,
                            frame: Some(index),
                            ..Node::default()
                        });
                        node.add(g, depth + 1 == frames.len());
                        if depth == site {
                            anchor = id.clone();
                        }
                        parent = id.clone();
                    }
                    anchor
                }
                synthetic => {
                    // The flamegraph's ids of memory without a stack (its SYNTHETIC table).
                    let id = match synthetic {
                        StackKey::Static => "static",
                        StackKey::Preexisting => "preexisting_live_at_event",
                        _ => "missing",
                    };
                    let node = tree.nodes.entry(id.into()).or_insert_with(|| Node {
                        parent: Some("root".into()),
                        depth: 1,
                        ..Node::default()
                    });
                    node.add(g, true);
                    id.to_owned()
                }
            };
            tree.anchors.insert(g.key.clone(), anchor);
        }
        tree
    }

    /// The node a table row reveals: its stack's anchor; for a site, the anchor of its
    /// widest stack.
    fn anchor_of(&self, diff: &Diff, key: &StackKey) -> Option<&str> {
        if let Some(anchor) = self.anchors.get(key) {
            return Some(anchor);
        }
        diff.stacks
            .iter()
            .filter(|s| s.key.matched_by(diff.by) == *key)
            .max_by_key(|s| s.a.bytes.max(s.b.bytes))
            .and_then(|s| self.anchors.get(&s.key))
            .map(String::as_str)
    }

    /// `{mode: "diff", title, metric, a, b, nodes, python_view}`: the flamegraph's diff-mode
    /// input.
    fn data(&self, diff: &Diff, title: &str, labels: [&str; 2]) -> Json {
        let mut ids: Vec<&String> = self.nodes.keys().collect();
        // The template's row order: depth, parent, widest first.
        ids.sort_by(|x, y| {
            let (a, b) = (&self.nodes[*x], &self.nodes[*y]);
            (a.depth, &a.parent, std::cmp::Reverse(a.width), x).cmp(&(
                b.depth,
                &b.parent,
                std::cmp::Reverse(b.width),
                y,
            ))
        });
        let rows: Vec<Json> = ids
            .iter()
            .map(|id| self.row(id, &self.nodes[*id]))
            .collect();
        // Each frame's origin as its raw path gave it (a row's `filename` is the key path).
        let origins: Vec<Option<Origin>> = ids
            .iter()
            .map(|id| self.nodes[*id].frame.map(|i| self.frames[i].origin))
            .collect();
        let side = |label: &str, s: &super::Side| {
            json!({
                "label": label,
                "device_id": s.device_id,
                "event_id": s.event_id,
                "total": s.total(),
                "blocks": s.blocks(),
            })
        };
        let mut data = Map::new();
        data.insert("mode".into(), json!("diff"));
        data.insert("title".into(), json!(title));
        data.insert("metric".into(), json!(diff.metric.name()));
        data.insert("a".into(), side(labels[0], &diff.a));
        data.insert("b".into(), side(labels[1], &diff.b));
        data.insert("nodes".into(), Json::Array(rows));
        set_origins_and_python_view(&mut data, &origins);
        Json::Object(data)
    }

    fn row(&self, id: &str, n: &Node) -> Json {
        let frame = n.frame.map(|i| &self.frames[i]);
        let (category, label) = match (id, frame) {
            ("root", _) => ("mixed", "[all live blocks of A and B]".to_owned()),
            ("static", _) => ("static", "[static]".to_owned()),
            ("preexisting_live_at_event", _) => {
                ("preexisting_live_at_event", "[preexisting live]".to_owned())
            }
            (_, None) => ("dynamic_live_at_event", "[missing callstack]".to_owned()),
            (_, Some(f)) => (
                "dynamic_live_at_event",
                match f.line {
                    Some(line) => format!("{}:{line} {}", f.file, f.function),
                    None => format!("{} {}", f.file, f.function),
                },
            ),
        };
        json!({
            "node_id": id,
            "parent_id": n.parent,
            "depth": n.depth,
            "frame_id": n.frame,
            "category": category,
            "label": label,
            "filename": frame.map(|f| &f.file),
            "line": frame.and_then(|f| f.line),
            "name": frame.map(|f| &f.function),
            "block_count": n.width_blocks,
            "size_bytes": n.width,
            "requested_bytes": 0,
            "self_block_count": n.self_width_blocks,
            "self_bytes": n.self_width,
            "self_requested_bytes": 0,
            "bytes_a": n.a.bytes,
            "bytes_b": n.b.bytes,
            "self_bytes_a": n.self_a.bytes,
            "self_bytes_b": n.self_b.bytes,
            "blocks_a": n.a.blocks,
            "blocks_b": n.b.blocks,
            "self_blocks_a": n.self_a.blocks,
            "self_blocks_b": n.self_b.blocks,
        })
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn the_page_template_takes_each_placeholder_once() {
        for key in PLACEHOLDERS {
            assert_eq!(PAGE.matches(key).count(), 1, "{key}");
        }
        for (name, text) in [("diff.js", SCRIPT), ("diff.css", STYLE)] {
            assert!(
                !text.contains("</script") && !text.contains("</style") && !text.contains("<!--"),
                "{name}"
            );
            assert!(!text.contains("{{"), "{name} holds a placeholder");
        }
    }

    /// The rows of the page's frame tree, by id.
    pub(in crate::diff) fn tree_rows(diff: &Diff) -> BTreeMap<String, Json> {
        let tree = Tree::of(diff);
        let data = tree.data(diff, "t", ["a", "b"]);
        data["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["node_id"].as_str().unwrap().to_owned(), r.clone()))
            .collect()
    }

    pub(in crate::diff) fn anchor(diff: &Diff, key: &StackKey) -> String {
        Tree::of(diff).anchor_of(diff, key).unwrap().to_owned()
    }
}
