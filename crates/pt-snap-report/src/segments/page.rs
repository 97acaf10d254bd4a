//! The map as one self-contained HTML page (`www/segments/`): the component
//! `PtSnapSegments.render` draws the data [`page_data`] builds — the same the browser's
//! Segments view draws.

use std::collections::HashMap;

use serde_json::{json, Value as Json};

use super::{BlockState, SegmentMap, FRAGMENTATION};
use crate::tree::{fill, html_text, script_json};

const PAGE: &str = include_str!("../../../../www/segments/report.html");
/// The component: `globalThis.PtSnapSegments.render(container, data, options)`.
pub const SCRIPT: &str = include_str!("../../../../www/segments/segments.js");
pub const STYLE: &str = include_str!("../../../../www/segments/segments.css");

/// The data `PtSnapSegments.render` draws: the map with each block as
/// `[offset in its segment, size, state (0 allocated, 1 pending free, 2 free), allocating
/// event or -1, index of its site in `sites` or -1, requested size or -1]`, so a map of a
/// hundred thousand blocks stays a few megabytes.
pub fn page_data<'a>(map: &'a SegmentMap) -> Json {
    let mut sites: Vec<&'a str> = Vec::new();
    let mut index: HashMap<&'a str, usize> = HashMap::new();
    let mut site_of = |s: Option<&'a str>| -> i64 {
        let Some(s) = s else { return -1 };
        *index.entry(s).or_insert_with(|| {
            sites.push(s);
            sites.len() - 1
        }) as i64
    };
    let mut segments = Vec::with_capacity(map.segments.len());
    for s in &map.segments {
        let blocks: Vec<Json> = (s.blocks.iter())
            .map(|b| {
                let state = match b.state {
                    BlockState::ActiveAllocated => 0,
                    BlockState::ActivePendingFree => 1,
                    BlockState::Inactive => 2,
                };
                json!([
                    b.address - s.address,
                    b.size,
                    state,
                    b.alloc_event_id.unwrap_or(-1),
                    site_of(b.site.as_deref()),
                    b.requested_size.unwrap_or(-1),
                ])
            })
            .collect();
        segments.push(s.to_json(blocks));
    }
    let fields: serde_json::Map<String, Json> = map
        .json_fields()
        .into_iter()
        .filter(|(k, _)| *k != "segments" && *k != "outside_segments")
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    let mut data = Json::Object(fields);
    data["segments"] = Json::Array(segments);
    data["outside_segments_bytes"] =
        json!(map.outside_segments.iter().map(|b| b.size).sum::<i64>());
    data["sites"] = json!(sites);
    data["fragmentation_formula"] = json!(FRAGMENTATION);
    data
}

/// The self-contained page of `map`; `title` names the input.
pub fn page(map: &SegmentMap, title: &str) -> String {
    let title = format!("{title} · device {} · event {}", map.device, map.event.id);
    fill(
        PAGE,
        &[
            ("{{TITLE}}", &html_text(&title)),
            ("{{STYLE}}", STYLE),
            ("{{SCRIPT}}", SCRIPT),
            ("{{DATA}}", &script_json(&page_data(map))),
        ],
    )
}
