//! The map's JSON (`report segments --json`), its sums, and the event in words.

use super::{BlockState, MapBlock, MapEvent, MapSegment, SegmentMap, FRAGMENTATION};

/// The event in words: `alloc of 512 B at 0x… on stream 7`; an `oom`'s request has no
/// address.
pub fn describe_event(e: &MapEvent) -> String {
    let stream = if e.stream == 0 {
        String::new()
    } else {
        format!(" on stream {}", e.stream)
    };
    let size = crate::units::grouped(e.size);
    match e.action.as_str() {
        "oom" => format!("oom: {size} B requested{stream}"),
        _ => format!("{} of {size} B at {:#x}{stream}", e.action, e.address),
    }
}

impl MapSegment {
    /// The segment as JSON, with its blocks as the caller writes them (objects in the
    /// report, compact rows in the page).
    pub(super) fn to_json(&self, blocks: Vec<serde_json::Value>) -> serde_json::Value {
        serde_json::json!({
            "address": self.address,
            "total_size": self.total_size,
            "stream": self.stream,
            "pool": self.pool.name(),
            "pool_recorded": self.pool_recorded,
            "segment_pool_id": self.segment_pool_id.map(|p| [p.0, p.1]),
            "is_expandable": self.is_expandable,
            "blocks": blocks,
        })
    }
}

impl SegmentMap {
    /// Bytes of the blocks in `state`, over every segment (and outside them).
    pub fn bytes_in(&self, state: BlockState) -> i64 {
        (self.segments.iter().flat_map(|s| &s.blocks))
            .chain(&self.outside_segments)
            .filter(|b| b.state == state)
            .map(|b| b.size)
            .sum()
    }

    /// The report's fields, after `schema_version` and `ok` (and the input's fields).
    pub fn json_fields(&self) -> Vec<(&'static str, serde_json::Value)> {
        use serde_json::json;
        let block = |b: &MapBlock| {
            json!({
                "address": b.address,
                "size": b.size,
                "requested_size": b.requested_size,
                "state": b.state.name(),
                "alloc_event_id": b.alloc_event_id,
                "site": b.site,
            })
        };
        let segments: Vec<_> = (self.segments.iter())
            .map(|s| s.to_json(s.blocks.iter().map(block).collect()))
            .collect();
        let pools: Vec<_> = (self.pools.iter())
            .map(|p| {
                json!({
                    "pool": p.pool.name(),
                    "stream": p.stream,
                    "segments": p.segments,
                    "reserved_bytes": p.reserved_bytes,
                    "free_bytes": p.free_bytes,
                    "free_blocks": p.free_blocks,
                    "blocks": p.blocks,
                    "largest_free_block_bytes": p.largest_free_block_bytes,
                    "fragmentation": p.fragmentation,
                })
            })
            .collect();
        vec![
            ("device_id", json!(self.device)),
            ("first_event_id", json!(self.events.0)),
            ("last_event_id", json!(self.events.1)),
            (
                "event",
                json!({
                    "id": self.event.id,
                    "action": self.event.action,
                    "address": self.event.address,
                    "size": self.event.size,
                    "stream": self.event.stream,
                }),
            ),
            (
                "counters",
                json!({"allocated": self.allocated, "active": self.active, "reserved": self.reserved}),
            ),
            (
                "totals",
                json!({
                    "segments": self.segments.len(),
                    "active_allocated_bytes": self.bytes_in(BlockState::ActiveAllocated),
                    "active_pending_free_bytes": self.bytes_in(BlockState::ActivePendingFree),
                    "inactive_bytes": self.bytes_in(BlockState::Inactive),
                    "segment_bytes": self.segments.iter().map(|s| s.total_size).sum::<i64>(),
                }),
            ),
            ("fragmentation_formula", json!(FRAGMENTATION)),
            ("free_by_pool_and_stream", json!(pools)),
            ("segments", json!(segments)),
            (
                "outside_segments",
                json!(self.outside_segments.iter().map(block).collect::<Vec<_>>()),
            ),
        ]
    }

    /// The text map; see [`text`].
    pub fn to_text(&self) -> String {
        super::text::render(self)
    }
}
