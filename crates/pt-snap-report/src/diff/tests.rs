use super::*;
use crate::peak::Peak;
use pt_snap_query::{Extent, NoTimes, TimeTimeline, TimelineBucket};

/// The counters of a side at its peak, as `at` gives each: allocated 512 B below the
/// active total, reserved 4 KiB above it.
fn counters<T>(total: i64, at: impl Fn(i64) -> T) -> [T; 3] {
    [at(total - 512), at(total), at(total + 4096)]
}

/// A side holding `groups` (callstack text or a synthetic key, bytes, blocks) at event 10
/// of events 0..=19, its active counter exactly their sum.
fn side(groups: &[(&str, i64, i64)]) -> Side {
    let mut map: BTreeMap<StackKey, Live> = BTreeMap::new();
    for &(text, bytes, blocks) in groups {
        let key = match text {
            "[static]" => StackKey::Static,
            "[preexisting live]" => StackKey::Preexisting,
            "[missing callstack]" => StackKey::Missing,
            t => StackKey::Frames(normalize_stack(t)),
        };
        let live = map.entry(key).or_default();
        live.bytes += bytes;
        live.blocks += blocks;
    }
    let total: i64 = map.values().map(|l| l.bytes).sum();
    let peak = |bytes| Peak {
        bytes: Some(bytes),
        event_id: Some(10),
    };
    let extent = |v| Extent {
        min: 0,
        min_id: 0,
        max: v,
        max_id: 10,
    };
    let [allocated, active, reserved] = counters(total, peak);
    let peaks = Peaks {
        allocated,
        active,
        reserved,
    };
    let [allocated, active, reserved] = counters(total, extent);
    Side {
        device_id: 0,
        metric: Metric::Active,
        peaks: Some(peaks),
        event_id: Some(10),
        live_bytes_at_peak: Some(total),
        groups: map,
        timeline: Timeline {
            device_id: 0,
            bounds: Some((0, 19)),
            window: Some((0, 19)),
            buckets: vec![TimelineBucket {
                first_id: 0,
                last_id: 19,
                events: 20,
                allocated,
                active,
                reserved,
            }],
        },
        time_timeline: TimeTimeline {
            device_id: 0,
            unknown: Some(NoTimes::NotInDatabase),
            origin_us: None,
            timed_events: 0,
            span: None,
            buckets: Vec::new(),
        },
        peak_time_us: None,
    }
}

const MODEL: &str = "/home/alice/llm/train.py:311 <module>\n\
    /home/alice/llm/train.py:288 main\n\
    /home/alice/llm/model.py:52 forward\n\
    /opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py:1762 _call_impl\n\
    ??:0 torch::unwind::unwind()";
/// The same code on another machine.
const MODEL_ELSEWHERE: &str = "/builds/ci/llm-v2/train.py:311 <module>\n\
    /builds/ci/llm-v2/train.py:288 main\n\
    /builds/ci/llm-v2/model.py:52 forward\n\
    /usr/lib/python3/dist-packages/torch/nn/modules/module.py:1762 _call_impl\n\
    ??:0 torch::unwind::unwind()";
const OPTIM: &str = "/home/alice/llm/train.py:311 <module>\n\
    /home/alice/llm/train.py:146 train_step\n\
    /opt/conda/lib/python3.10/site-packages/torch/optim/adamw.py:560 _multi_tensor_adamw";
const CACHE: &str = "/home/alice/llm/train.py:311 <module>\n\
    /home/alice/llm/train.py:288 main\n\
    /home/alice/llm/planted.py:10 kv_cache";
const OLD: &str = "/home/alice/llm/train.py:311 <module>\n\
    /home/alice/llm/old.py:3 buffers";

#[test]
fn a_side_against_itself_changes_nothing() {
    let s = side(&[
        (MODEL, 4096, 2),
        (OPTIM, 1 << 20, 1),
        ("[static]", 512, 1),
        ("[missing callstack]", 1024, 3),
    ]);
    let d = Diff::new(s.clone(), s, crate::diff::By::Stack);
    assert_eq!(d.groups.len(), 4);
    for g in &d.groups {
        assert_eq!(g.delta(), 0);
        assert_eq!(g.status(), Status::Same);
    }
    assert_eq!(d.total_a(), d.total_b());
    assert_eq!(d.count(Status::Same), 4);
}

#[test]
fn stacks_of_two_machines_are_one_group() {
    let d = Diff::new(
        side(&[(MODEL, 4096, 2)]),
        side(&[(MODEL_ELSEWHERE, 4096, 2)]),
        crate::diff::By::Stack,
    );
    assert_eq!(d.groups.len(), 1);
    assert_eq!(d.groups[0].status(), Status::Same);
    assert_eq!(
        d.groups[0].key.site(),
        "forward (model.py:52) → torch/nn/modules/module.py:_call_impl"
    );
}

#[test]
fn groups_are_matched_classified_and_ordered_by_change() {
    let a = side(&[
        (MODEL, 4096, 2),
        (OPTIM, 1 << 20, 1),
        (OLD, 3 << 20, 1),
        ("[static]", 512, 1),
    ]);
    let b = side(&[
        (MODEL_ELSEWHERE, 8192, 4),
        (OPTIM, 1 << 20, 1),
        (CACHE, 64 << 20, 1),
        ("[static]", 512, 1),
    ]);
    let d = Diff::new(a, b, crate::diff::By::Stack);
    let got: Vec<(&str, i64, Status)> = d
        .groups
        .iter()
        .map(|g| {
            (
                g.key.frames().last().map_or("", |f| f.function.as_str()),
                g.delta(),
                g.status(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("kv_cache", 64 << 20, Status::New),
            ("buffers", -(3 << 20), Status::Gone),
            ("torch::unwind::unwind()", 4096, Status::Changed),
            // Equal changes (0): the larger side first.
            ("_multi_tensor_adamw", 0, Status::Same),
            ("", 0, Status::Same),
        ]
    );
    // Totals are over every group, whatever is shown.
    let sum = |f: fn(&GroupDiff) -> i64| d.groups.iter().map(f).sum::<i64>();
    assert_eq!(sum(|g| g.a.bytes), d.total_a());
    assert_eq!(sum(|g| g.b.bytes), d.total_b());
    assert_eq!(d.total_b() - d.total_a(), sum(GroupDiff::delta));

    let fields = d.to_json(Some(2), [&Map::new(), &Map::new()]);
    let keys: Vec<&str> = fields.iter().map(|(k, _)| *k).collect();
    assert_eq!(
        keys,
        [
            "metric",
            "by",
            "a",
            "b",
            "peaks",
            "groups",
            "group_counts",
            "total_a",
            "total_b",
            "total_delta",
            "total_delta_percent",
            "timelines"
        ]
    );
    let j: Map<String, Json> = fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    assert_eq!(j["groups"].as_array().unwrap().len(), 2);
    assert_eq!(j["groups"][0]["status"], "new");
    assert_eq!(j["groups"][0]["bytes_a"], 0);
    assert_eq!(j["groups"][0]["count_b"], 1);
    assert_eq!(j["groups"][0]["frames"][2]["function"], "kv_cache");
    assert_eq!(j["groups"][0]["frames"][2]["file"], "planted.py");
    assert_eq!(
        j["group_counts"],
        json!({"total": 5, "returned": 2, "new": 1, "gone": 1, "changed": 1, "same": 2})
    );
    assert_eq!(j["total_delta"], json!(d.total_b() - d.total_a()));
    assert_eq!(j["a"]["unattributed_bytes"], 0);
    assert_eq!(j["a"]["metric_minus_live_bytes"], 0);
    assert_eq!(j["peaks"]["delta"]["active"], j["total_delta"]);
    assert_eq!(j["timelines"]["a"]["peak_ordinal"], 10);
    assert_eq!(j["timelines"]["b"]["buckets"][0]["max"], json!(d.total_b()));

    let text = d.to_text(Some(3), ["a.pickle", "b.pickle"]);
    let first = text
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap();
    assert!(
        first.contains("new") && first.contains("+64.00 MiB"),
        "{first}"
    );
    assert!(
        first.ends_with("kv_cache (planted.py:10)  [3 frames]"),
        "{first}"
    );
    assert!(text.contains("3 of 5 shown"), "{text}");
    assert!(text.contains("1 new (only in B), 1 gone (only in A), 1 changed, 2 same"));
}

#[test]
fn a_shortfall_against_the_counter_is_reported() {
    let mut s = side(&[(MODEL, 4096, 2)]);
    s.live_bytes_at_peak = Some(4096 + 100);
    assert_eq!(s.unattributed_bytes(), Some(100));
    let d = Diff::new(s.clone(), s, crate::diff::By::Stack);
    assert!(d
        .to_text(None, ["a", "b"])
        .contains("100 B are in no group"));
}

#[test]
fn the_flamegraph_tree_adds_up_on_both_sides() {
    let a = side(&[(MODEL, 4096, 2), (OLD, 3 << 20, 1), ("[static]", 512, 1)]);
    let b = side(&[(MODEL, 8192, 4), (CACHE, 64 << 20, 1), ("[static]", 512, 1)]);
    let d = Diff::new(a, b, crate::diff::By::Stack);
    let rows = page::tests::tree_rows(&d);
    let int = |r: &Json, k: &str| r[k].as_i64().unwrap();
    for (id, r) in &rows {
        let kids: Vec<&Json> = rows
            .values()
            .filter(|c| c["parent_id"] == json!(id))
            .collect();
        for (total, own) in [
            ("size_bytes", "self_bytes"),
            ("bytes_a", "self_bytes_a"),
            ("bytes_b", "self_bytes_b"),
            ("blocks_a", "self_blocks_a"),
            ("blocks_b", "self_blocks_b"),
            ("block_count", "self_block_count"),
        ] {
            let sum: i64 = kids.iter().map(|c| int(c, total)).sum();
            assert_eq!(int(r, total), int(r, own) + sum, "{id} {total}");
        }
    }
    let root = &rows["root"];
    assert_eq!(int(root, "bytes_a"), d.total_a());
    assert_eq!(int(root, "bytes_b"), d.total_b());
    // Width: each stack once, with its larger side.
    let widths: i64 = d.groups.iter().map(|g| g.a.bytes.max(g.b.bytes)).sum();
    assert_eq!(int(root, "size_bytes"), widths);
    let cache = &d
        .groups
        .iter()
        .find(|g| g.status() == Status::New)
        .unwrap()
        .key;
    // Its site (the innermost Python frame, here its innermost frame) holds its bytes in B
    // only.
    let leaf = &rows[&page::tests::anchor(&d, cache)];
    assert_eq!(leaf["name"], "kv_cache");
    assert_eq!(leaf["filename"], "planted.py");
    assert_eq!(
        (int(leaf, "self_bytes_a"), int(leaf, "self_bytes_b")),
        (0, 64 << 20)
    );
    assert_eq!(rows["static"]["frame_id"], Json::Null);
    // A stack's anchor is its innermost Python frame, above native frames.
    let model = &d
        .groups
        .iter()
        .find(|g| g.status() == Status::Changed)
        .unwrap()
        .key;
    assert_eq!(rows[&page::tests::anchor(&d, model)]["name"], "_call_impl");
    assert_eq!(int(&rows["static"], "bytes_b"), 512);
}

#[test]
fn html_is_one_page_with_both_data_blocks_escaped() {
    let evil = "/x/</script><script>alert(1)</script>.py:1 {{SCRIPT}}";
    let d = Diff::new(
        side(&[(evil, 10, 1)]),
        side(&[(MODEL, 20, 1)]),
        crate::diff::By::Stack,
    );
    let html = d.to_html(None, ["/a/<b>.pickle", "b.db"], [&Map::new(), &Map::new()]);
    assert_eq!(html.matches("<script id=\"tree-data\"").count(), 1);
    assert_eq!(html.matches("<script id=\"diff-data\"").count(), 1);
    assert!(!html.contains("</script><script>alert"));
    assert!(html.contains("&lt;b&gt;.pickle → b.db"));
    // Every placeholder filled; the frame named `{{SCRIPT}}` stays data, inside the two
    // data blocks only.
    let mut outside = html.clone();
    for id in ["tree-data", "diff-data"] {
        let open = format!("<script id=\"{id}\" type=\"application/json\">");
        let start = outside.find(&open).unwrap() + open.len();
        let end = start + outside[start..].find("</script>").unwrap();
        assert!(outside[start..end].contains("{{SCRIPT}}"), "{id}");
        outside.replace_range(start..end, "");
    }
    for key in page::PLACEHOLDERS {
        assert!(!outside.contains(key), "{key}");
    }
}

/// `side` with a time axis: `origin` is its first event's time_us, its peak `peak_after` µs
/// later, its 20 events over 19 ms.
fn timed(mut s: Side, origin: i64, peak_after: i64) -> Side {
    use pt_snap_query::{TimeBucket, TimeExtent};
    let total = s.total();
    let extent = |v| TimeExtent {
        min: 0,
        min_us: 0,
        min_id: 0,
        max: v,
        max_us: peak_after,
        max_id: 10,
    };
    let [allocated, active, reserved] = counters(total, extent);
    s.time_timeline = TimeTimeline {
        device_id: 0,
        unknown: None,
        origin_us: Some(origin),
        timed_events: 20,
        span: Some((0, 19_000)),
        buckets: vec![TimeBucket {
            first_us: 0,
            last_us: 19_000,
            events: 20,
            allocated,
            active,
            reserved,
        }],
    };
    s.peak_time_us = Some(origin + peak_after);
    s
}

/// The diff's whole `--json` document (no input descriptions), keyed by owned names.
fn document(d: &Diff) -> Map<String, Json> {
    d.to_json(None, [&Map::new(), &Map::new()])
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

/// Asserts that the `--json` document's `axis_note` says `note` and the text report says
/// `line`; returns the text report.
fn axis_explained(d: &Diff, note: &str, line: &str) -> String {
    let j = document(d);
    let axis_note = j["timelines"]["axis_note"].as_str().unwrap();
    assert!(axis_note.contains(note), "{axis_note}");
    let text = d.to_text(None, ["a", "b"]);
    assert!(text.contains(line), "{text}");
    text
}

#[test]
fn both_sides_with_times_share_a_time_axis_and_one_without_says_why() {
    let a = timed(side(&[(MODEL, 1 << 20, 1)]), 1_757_253_255_215_904, 10_000);
    let b = timed(side(&[(MODEL, 2 << 20, 1)]), 1_757_300_000_000_000, 12_500);
    let d = Diff::new(a.clone(), b, crate::diff::By::Stack);
    assert!(d.has_time_axis());
    let j = document(&d);
    let t = &j["timelines"]["time_axis"];
    assert_eq!(t["axis"], "time_since_first_event_us");
    assert_eq!(t["available"], true);
    // Each side against its own first event: the two runs started at other moments.
    assert_eq!(t["a"]["first_event_time_us"], 1_757_253_255_215_904_i64);
    assert_eq!(t["a"]["peak_at"], 10_000);
    assert_eq!(t["b"]["peak_at"], 12_500);
    assert_eq!(t["b"]["peak_time_us"], 1_757_300_000_012_500_i64);
    assert_eq!(t["a"]["times"], "kept");
    assert_eq!(
        t["b"]["buckets"][0],
        json!({"first": 0, "last": 19_000, "min": 0, "min_at": 0, "max": 2 << 20, "max_at": 12_500})
    );
    let text = axis_explained(
        &d,
        "by time since each side's first event",
        "\n  A: 20 events over 0.019 s; its active peak at ordinal 10, 0.010 s after its first event\n",
    );
    assert!(text.contains(", 0.012 s after its first event\n"), "{text}");

    // B's database keeps no times: the ordinal axis alone, and why.
    let d = Diff::new(a, side(&[(MODEL, 2 << 20, 1)]), crate::diff::By::Stack);
    assert!(!d.has_time_axis());
    let j = document(&d);
    let t = &j["timelines"]["time_axis"];
    assert_eq!(t["available"], false);
    assert_eq!(t["b"]["times"], "not_in_database");
    assert!(t["b"]["peak_at"].is_null() && t["b"]["buckets"] == json!([]));
    axis_explained(
        &d,
        "No time axis: B: the database keeps no event times",
        "\n  B: 20 events; its active peak at ordinal 10\n",
    );
}
