//! A device's row from a decoded snapshot by the replay alone ([`Replayed`]): the row
//! [`super::summarize`] reads from the database an import would write, without writing it
//! (`tests/replayed.rs` holds the two to each other on every fixture). The callstack groups are
//! `active_memory_callstack_at_event`'s: memory from before the trace by its category, the
//! rest by the allocating event's stack (one group per distinct stack, as the database's
//! callstack ids are), a stack without frames being the missing callstack.

use std::collections::HashMap;

use pt_snap_model::StackId;
use pt_snap_query::NoTimes;

use super::summary::{DeviceSummary, DynamicGroup, Frame, PeakTimes, TopGroup};
use crate::peak::Metric;
use crate::replayed::Replayed;

/// `device`'s row of `ranks` at `metric`'s peak.
pub fn summarize_replayed(replayed: &Replayed<'_>, metric: Metric) -> DeviceSummary {
    let peaks = replayed.peaks();
    let time = |m: Metric| replayed.time_at(replayed.at_peak(m).and_then(|e| e.position));
    let peak_times = if replayed.has_times() {
        PeakTimes {
            allocated: time(Metric::Allocated),
            active: time(Metric::Active),
            reserved: time(Metric::Reserved),
            unknown: None,
        }
    } else {
        PeakTimes {
            unknown: Some(NoTimes::NotInTrace),
            ..PeakTimes::default()
        }
    };
    DeviceSummary {
        device: replayed.device as i64,
        peaks,
        reserved_minus_allocated: replayed
            .at_peak(Metric::Reserved)
            .map(|e| e.reserved - e.allocated),
        oom_events: replayed.oom_events,
        top_group: replayed
            .at_peak(metric)
            .and_then(|e| top_group(replayed, e.id)),
        peak_times,
    }
}

/// What a live block is grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Static,
    Preexisting,
    /// Allocated during the trace at an event without a stack the database could join.
    Missing,
    Stack(StackId),
}

#[derive(Debug, Clone, Copy, Default)]
struct Group {
    size: i64,
    blocks: i64,
    /// The group's lowest allocating event: the template's representative.
    first_event: i64,
}

fn top_group(replayed: &Replayed<'_>, event_id: i64) -> Option<TopGroup> {
    let stacks = &replayed.snapshot.stacks;
    let mut groups: HashMap<Key, Group> = HashMap::new();
    for b in replayed.live_at(event_id) {
        let key = match b.category() {
            "static" => Key::Static,
            "preexisting_live_at_event" => Key::Preexisting,
            _ => match replayed.alloc_stack(b.alloc_event_id) {
                Some(s) if !stacks.stack(s).is_empty() => Key::Stack(s),
                _ => Key::Missing,
            },
        };
        let g = groups.entry(key).or_insert(Group {
            first_event: b.alloc_event_id,
            ..Group::default()
        });
        g.size += b.size;
        g.blocks += 1;
        g.first_event = g.first_event.min(b.alloc_event_id);
    }
    let mut ranked: Vec<(String, Key, Group)> = groups
        .into_iter()
        .map(|(key, g)| {
            let text = match key {
                Key::Static => "[static] allocEventId=-1, freeEventId=-1".to_owned(),
                Key::Preexisting => "[preexisting live] allocEventId=-1".to_owned(),
                Key::Missing => "[missing callstack]".to_owned(),
                Key::Stack(s) => stacks.render(s),
            };
            (text, key, g)
        })
        .collect();
    // The template's order: bytes, then blocks, descending; then the text. It leaves two
    // stacks of one text, size and count unordered: any fixed order is as true.
    ranked.sort_by(|(ta, _, a), (tb, _, b)| {
        (b.size, b.blocks)
            .cmp(&(a.size, a.blocks))
            .then_with(|| ta.cmp(tb))
            .then_with(|| a.first_event.cmp(&b.first_event))
    });
    let dynamic = |key: &Key| matches!(key, Key::Missing | Key::Stack(_));
    let (callstack, key, group) = ranked.first()?.clone();
    let largest_dynamic = match dynamic(&key) {
        true => None,
        false => ranked
            .iter()
            .find(|(_, k, _)| dynamic(k))
            .map(|(text, _, g)| DynamicGroup::new(g.size, g.blocks, text.clone())),
    };
    Some(TopGroup {
        event_id,
        category: match key {
            Key::Static => "static",
            Key::Preexisting => "preexisting_live_at_event",
            Key::Missing | Key::Stack(_) => "dynamic_live_at_event",
        }
        .to_owned(),
        size_bytes: group.size,
        block_count: group.blocks,
        callstack,
        frames: Some(match key {
            Key::Stack(s) => stacks
                .stack(s)
                .iter()
                .map(|&f| {
                    let f = stacks.frame(f);
                    Frame {
                        name: f.name.to_string(),
                        filename: f.filename.to_string(),
                        line: f.line,
                    }
                })
                .collect(),
            _ => Vec::new(),
        }),
        largest_dynamic,
    })
}
