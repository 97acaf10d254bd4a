//! `report oom`: why each `oom` event of a trace failed, from the replayed state at it.
//!
//! Everything is a composition of templates through one [`Source`]: the OOM events and the
//! counters before them (`event`), the segments reserved at the event (the segment events
//! up to it, synthetic dump-state ones included, from `event`), the blocks live at it
//! (`active_blocks_at_event`), and what held the memory (`active_memory_callstack_at_event`,
//! and by memory category `category_breakdown_at_event`, [`crate::categories`]).
//! The free space inside reserved segments is the segments minus the live blocks.
//! `device_free` is not in the reference's tables: the caller passes what our import kept
//! in `pt_snap_x_oom` (`pt_snap_db::SnapshotDb::oom_device_free`), or nothing.
//!
//! The allocator's rules used here are PyTorch's `c10/cuda/CUDACachingAllocator.cpp`
//! (torch_npu's `NPUCachingAllocator` copies them): `round_size` rounds a request up to a
//! multiple of `kMinBlockSize` (512 B); `get_pool` sends requests of at most `kSmallSize`
//! (1 MiB) to the small pool, larger ones to the large pool; `get_allocation_size` makes a
//! small-pool segment exactly `kSmallBuffer` (2 MiB) and a large-pool one `kLargeBuffer`
//! (20 MiB) below `kMinLargeAlloc` (10 MiB), else the request rounded up to `kRoundLarge`
//! (2 MiB) — so no large-pool segment is 2 MiB. Blocks are cached per (pool, stream): a free
//! block of another pool or stream never serves the request. Before recording `oom`, the
//! allocator releases every cached segment with no live block (`release_cached_blocks`,
//! whose `segment_free` events the trace holds), then reads `device_free`.

use std::collections::BTreeMap;

use crate::stack::Stacks;
use pt_snap_query::{QueryError, QueryRequest, Source};
pub use pt_snap_replay::SegmentClass;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value as Json};

use crate::categories::{self, Breakdown, Rules};
use crate::units::{grouped, human_bytes};

/// `kMinBlockSize`: every request is rounded up to a multiple of it.
pub const MIN_BLOCK_SIZE: i64 = 512;
/// `kSmallSize`: requests up to this size use the small pool.
pub const SMALL_SIZE: i64 = 1 << 20;
/// `kSmallBuffer`: the size of every small-pool segment (and expandable small-pool page).
pub const SMALL_BUFFER: i64 = 2 << 20;
/// `kLargeBuffer`: a large-pool segment for requests below `kMinLargeAlloc`, and the page
/// of an expandable large-pool segment.
pub const LARGE_BUFFER: i64 = 20 << 20;
const MIN_LARGE_ALLOC: i64 = 10 << 20;
const ROUND_LARGE: i64 = 2 << 20;

/// `n` rounded up to a multiple of `unit`, in i128: a trace can claim a request near
/// `i64::MAX`, which then stays at `i64::MAX` instead of overflowing.
fn round_up(n: i64, unit: i64) -> i64 {
    let (n, unit) = (i128::from(n), i128::from(unit));
    ((n + unit - 1) / unit * unit).min(i128::from(i64::MAX)) as i64
}

/// `round_size`: the bytes the allocator looks for.
pub fn round_size(size: i64) -> i64 {
    if size < MIN_BLOCK_SIZE {
        MIN_BLOCK_SIZE
    } else {
        round_up(size, MIN_BLOCK_SIZE)
    }
}

/// `get_allocation_size`: the segment a request would need from the device.
pub fn allocation_size(rounded: i64) -> i64 {
    if rounded <= SMALL_SIZE {
        SMALL_BUFFER
    } else if rounded < MIN_LARGE_ALLOC {
        LARGE_BUFFER
    } else {
        round_up(rounded, ROUND_LARGE)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Pool {
    Small,
    Large,
}

impl Pool {
    /// `get_pool`: by the rounded request.
    pub fn of_request(rounded: i64) -> Pool {
        if rounded <= SMALL_SIZE {
            Pool::Small
        } else {
            Pool::Large
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Pool::Small => "small",
            Pool::Large => "large",
        }
    }
}

/// A reserved range at the event: a `cudaMalloc`ed segment, or a mapped run of an
/// expandable one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub address: i64,
    pub size: i64,
    pub stream: i64,
    pub expandable: bool,
    /// What the file says of its pool (our import's `pt_snap_x_pool_<d>`), where it says it.
    pub class: SegmentClass,
}

/// Segment action codes of SnapshotDB format 3 (`segment_map`, `segment_unmap`,
/// `segment_alloc`, `segment_free`).
pub(crate) const SEGMENT_MAP: i64 = 0;
pub(crate) const SEGMENT_UNMAP: i64 = 1;
pub(crate) const SEGMENT_ALLOC: i64 = 2;
pub(crate) const SEGMENT_FREE: i64 = 3;
const OOM: i64 = 8;

/// Applies one segment event (in id order) to the reserved ranges; `class` is what the
/// file says of the pool of the segment a `segment_alloc` or `segment_map` reserves. Sums
/// saturate: a lenient replay's database keeps the sizes of segment events it could not
/// apply, absurd ones included, and the report must still read it.
pub fn apply_segment_event(
    segments: &mut Vec<Segment>,
    action: i64,
    address: i64,
    size: i64,
    stream: i64,
    class: SegmentClass,
) {
    let end = address.saturating_add(size);
    match action {
        SEGMENT_ALLOC => segments.push(Segment {
            address,
            size,
            stream,
            expandable: false,
            class,
        }),
        SEGMENT_FREE => segments.retain(|s| s.address != address),
        // Pages mapped next to a mapped run of the same stream extend that run: an
        // expandable segment is one range whatever the number of maps that built it.
        SEGMENT_MAP => {
            let mut new = Segment {
                address,
                size,
                stream,
                expandable: true,
                class,
            };
            segments.retain(|s| {
                let touches = s.expandable
                    && s.stream == stream
                    && (s.address.saturating_add(s.size) == new.address
                        || new.address.saturating_add(new.size) == s.address);
                if touches {
                    let start = s.address.min(new.address);
                    new.size = new.size.saturating_add(s.size);
                    new.address = start;
                    // One run, one pool: what the file says of either part.
                    new.class.large = new.class.large.or(s.class.large);
                    new.class.pool_id = new.class.pool_id.or(s.class.pool_id);
                }
                !touches
            });
            segments.push(new);
        }
        SEGMENT_UNMAP => {
            let mut rest = Vec::new();
            segments.retain(|s| {
                let s_end = s.address.saturating_add(s.size);
                if !s.expandable || s_end <= address || end <= s.address {
                    return true;
                }
                if s.address < address {
                    rest.push(Segment {
                        size: address - s.address,
                        ..s.clone()
                    });
                }
                if end < s_end {
                    rest.push(Segment {
                        address: end,
                        size: s_end - end,
                        ..s.clone()
                    });
                }
                false
            });
            segments.extend(rest);
        }
        _ => {}
    }
}

/// The free runs of one segment, and its pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentFree {
    pub segment: Segment,
    pub pool: Pool,
    /// The maximal free address runs inside the segment, `(address, size)` in address
    /// order (the allocator merges free neighbours, so each is one cached free block).
    pub free_runs: Vec<(i64, i64)>,
}

impl SegmentFree {
    pub fn free_blocks(&self) -> impl Iterator<Item = i64> + '_ {
        self.free_runs.iter().map(|r| r.1)
    }
}

/// The free runs of every segment given the live blocks `(address, size)`, and each
/// segment's pool: the dump's `segment_type` where the database kept it, else the pool of
/// a live block inside it (a block above `kSmallSize` is a large-pool block), else by its
/// size (`kSmallBuffer` is a small-pool segment; an expandable run of the large pool is a
/// multiple of `kLargeBuffer`).
pub fn free_space(segments: &[Segment], live: &[(i64, i64)]) -> Vec<SegmentFree> {
    let mut live: Vec<(i64, i64)> = live.to_vec();
    live.sort_unstable();
    let mut out = Vec::new();
    let mut sorted: Vec<&Segment> = segments.iter().collect();
    sorted.sort_by_key(|s| s.address);
    for s in sorted {
        let end = s.address.saturating_add(s.size);
        let first = live.partition_point(|b| b.0 < s.address);
        let mut cursor = s.address;
        let mut free_runs = Vec::new();
        let mut block_pool = None;
        for &(a, size) in live[first..].iter().take_while(|b| b.0 < end) {
            if a > cursor {
                free_runs.push((cursor, a - cursor));
            }
            cursor = cursor.max(a.saturating_add(size));
            block_pool.get_or_insert(Pool::of_request(size));
        }
        if end > cursor {
            free_runs.push((cursor, end - cursor));
        }
        let known = s
            .class
            .large
            .map(|l| if l { Pool::Large } else { Pool::Small });
        let pool = known.or(block_pool).unwrap_or(if s.expandable {
            if s.size % LARGE_BUFFER == 0 {
                Pool::Large
            } else {
                Pool::Small
            }
        } else if s.size == SMALL_BUFFER {
            Pool::Small
        } else {
            Pool::Large
        });
        out.push(SegmentFree {
            segment: s.clone(),
            pool,
            free_runs,
        });
    }
    out
}

/// Cached free memory of one (pool, stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FreeSummary {
    pub total_bytes: i64,
    pub largest_block_bytes: i64,
    pub blocks: i64,
    /// Free blocks of at least the rounded request.
    pub blocks_fitting: i64,
}

/// Free space by (pool, stream), with how many blocks could hold `rounded` bytes.
pub fn by_pool_and_stream(
    segments: &[SegmentFree],
    rounded: i64,
) -> BTreeMap<(Pool, i64), FreeSummary> {
    let mut out: BTreeMap<(Pool, i64), FreeSummary> = BTreeMap::new();
    for s in segments {
        let f = out.entry((s.pool, s.segment.stream)).or_default();
        for b in s.free_blocks() {
            f.total_bytes = f.total_bytes.saturating_add(b);
            f.largest_block_bytes = f.largest_block_bytes.max(b);
            f.blocks += 1;
            f.blocks_fitting += i64::from(b >= rounded);
        }
    }
    out
}

/// Why the allocation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    /// The pool and stream's cached free bytes plus `device_free` would have held the
    /// request, but no single free block could.
    Fragmentation,
    /// All free memory together — every cached free block plus `device_free` — is short.
    Capacity,
    /// Enough is free, but in other pools or streams, which the request cannot use.
    OtherPoolsOrStreams,
    /// A cached free block of the pool and stream could hold the request, yet it failed:
    /// the replayed state or the pool rule differs from the allocator's (a private pool of
    /// a CUDA graph, `max_split_size_mb`, another allocator).
    BlockFits,
    /// `device_free` is unknown and the cached free memory alone does not decide.
    Unknown,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Fragmentation => "fragmentation",
            Verdict::Capacity => "capacity",
            Verdict::OtherPoolsOrStreams => "other_pools_or_streams",
            Verdict::BlockFits => "block_fits",
            Verdict::Unknown => "unknown",
        }
    }
}

/// The verdict, and its arithmetic in words.
pub fn judge(
    rounded: i64,
    own: FreeSummary,
    all_cached_free: i64,
    device_free: Option<i64>,
) -> (Verdict, String) {
    let b = |n: i64| format!("{} B", grouped(n));
    if own.blocks_fitting > 0 {
        return (
            Verdict::BlockFits,
            format!(
                "{} free block(s) of the pool and stream hold at least the request ({}; largest {}), so the allocator should have used one: the replayed state or the pool rule differs from the allocator's",
                own.blocks_fitting,
                b(rounded),
                b(own.largest_block_bytes)
            ),
        );
    }
    match device_free {
        Some(free) => {
            let all = all_cached_free.saturating_add(free);
            let pool = own.total_bytes.saturating_add(free);
            if all < rounded {
                (
                    Verdict::Capacity,
                    format!(
                        "all cached free {} + device_free {} = {} < request {}",
                        b(all_cached_free),
                        b(free),
                        b(all),
                        b(rounded)
                    ),
                )
            } else if pool >= rounded {
                (
                    Verdict::Fragmentation,
                    format!(
                        "pool/stream cached free {} + device_free {} = {} >= request {}, but the largest free block is {} < request",
                        b(own.total_bytes),
                        b(free),
                        b(pool),
                        b(rounded),
                        b(own.largest_block_bytes)
                    ),
                )
            } else {
                (
                    Verdict::OtherPoolsOrStreams,
                    format!(
                        "pool/stream cached free {} + device_free {} = {} < request {}, but all cached free {} + device_free = {} >= request: the rest is cached in other pools or streams",
                        b(own.total_bytes),
                        b(free),
                        b(pool),
                        b(rounded),
                        b(all_cached_free),
                        b(all)
                    ),
                )
            }
        }
        None if own.total_bytes >= rounded => (
            Verdict::Fragmentation,
            format!(
                "pool/stream cached free {} >= request {} even without device_free (unknown), but the largest free block is {} < request",
                b(own.total_bytes),
                b(rounded),
                b(own.largest_block_bytes)
            ),
        ),
        None if all_cached_free >= rounded => (
            Verdict::OtherPoolsOrStreams,
            format!(
                "pool/stream cached free {} < request {}, but all cached free {} >= request (device_free unknown): the rest is cached in other pools or streams",
                b(own.total_bytes),
                b(rounded),
                b(all_cached_free)
            ),
        ),
        None => (
            Verdict::Unknown,
            format!(
                "all cached free {} < request {}; device_free is unknown (the database has no pt_snap_x_oom: made by the reference or an older pt-snap), so capacity or fragmentation cannot be told apart",
                b(all_cached_free),
                b(rounded)
            ),
        ),
    }
}

#[derive(Debug, Clone)]
pub struct OomRequest {
    pub device: Option<i64>,
    /// Callstack groups and largest blocks shown per event.
    pub top_n: i64,
    /// The memory-category rules of the breakdown at each event.
    pub category_rules: Rules,
}

/// One callstack group live at the event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    pub category: String,
    pub size_bytes: i64,
    pub block_count: i64,
    pub callstack: String,
}

impl Group {
    /// Where the group allocated ([`crate::stack::label`]); the bracketed text of memory
    /// without a stack.
    pub fn label(&self) -> String {
        crate::stack::label_text(&self.callstack)
            .filter(|_| !self.callstack.starts_with('['))
            .unwrap_or_else(|| self.callstack.lines().next().unwrap_or("").to_owned())
    }
}

/// One live block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveBlock {
    pub address: i64,
    pub size: i64,
    pub requested_size: i64,
    pub alloc_event_id: i64,
}

/// Counters of one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    pub event_id: i64,
    pub allocated: i64,
    pub active: i64,
    pub reserved: i64,
}

/// The explanation of one `oom` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OomEvent {
    pub device: i64,
    pub event_id: i64,
    pub requested_bytes: i64,
    pub rounded_bytes: i64,
    pub segment_bytes: i64,
    pub pool: Pool,
    pub stream: i64,
    pub device_free: Option<i64>,
    /// The previous real event's counters (the OOM's own when it is the first event).
    pub before: Counters,
    pub own: FreeSummary,
    /// Free space of every other (pool, stream) with reserved segments.
    pub others: Vec<((Pool, i64), FreeSummary)>,
    pub all_cached_free: i64,
    pub verdict: Verdict,
    pub arithmetic: String,
    pub groups: Vec<Group>,
    /// Everything live at the event by memory category.
    pub categories: Breakdown,
    pub largest_blocks: Vec<LiveBlock>,
    pub callstack: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OomReport {
    pub devices: Vec<i64>,
    pub events: Vec<OomEvent>,
    /// `builtin` or `custom`: the category rules of every breakdown.
    pub category_rules: String,
}

fn int(row: &Map<String, Json>, k: &str) -> i64 {
    row.get(k).and_then(Json::as_i64).unwrap_or(0)
}

fn text(row: &Map<String, Json>, k: &str) -> String {
    row.get(k).and_then(Json::as_str).unwrap_or("").to_owned()
}

fn rows(source: &dyn Source, request: &QueryRequest) -> Result<Vec<Map<String, Json>>, QueryError> {
    Ok(crate::peak::rows(&source.run(request)?))
}

/// The reserved ranges at `event_id`: every segment event up to it, in id order.
pub fn segments_at(
    source: &dyn Source,
    device: i64,
    event_id: i64,
) -> Result<Vec<Segment>, QueryError> {
    let mut events = Vec::new();
    for action in [SEGMENT_MAP, SEGMENT_UNMAP, SEGMENT_ALLOC, SEGMENT_FREE] {
        for r in rows(
            source,
            &QueryRequest::new("event")
                .device(device)
                .param("action", action)
                .param("max_id", event_id),
        )? {
            events.push((
                int(&r, "id"),
                action,
                int(&r, "address"),
                int(&r, "size"),
                int(&r, "stream"),
            ));
        }
    }
    events.sort_unstable_by_key(|e| e.0);
    let mut segments = Vec::new();
    for (_, action, address, size, stream) in events {
        let class = SegmentClass::default();
        apply_segment_event(&mut segments, action, address, size, stream, class);
    }
    Ok(segments)
}

/// What the database kept of each `oom` event's `device_free` on a device, `None` where it
/// keeps nothing (see [`oom_report`]).
pub type DeviceFreeOf<'a> = dyn Fn(i64) -> Result<Option<Vec<(i64, Option<i64>)>>, QueryError> + 'a;

/// Explains every `oom` event of the source's devices (or `request.device`).
/// `device_free(device)` is what the database kept (`None`: it keeps nothing).
pub fn oom_report(
    source: &dyn Source,
    request: &OomRequest,
    device_free: &DeviceFreeOf<'_>,
) -> Result<OomReport, QueryError> {
    let all: Vec<i64> = source.bounds()?.into_iter().map(|b| b.device).collect();
    let devices = match request.device {
        Some(d) if all.contains(&d) => vec![d],
        Some(d) => {
            return Err(QueryError::DeviceNotFound(format!(
                "Device {d} not found. Available devices: {all:?}"
            )))
        }
        None => all,
    };
    if devices.is_empty() {
        return Err(QueryError::DeviceNotFound(
            "No devices found in database.".into(),
        ));
    }
    let mut events = Vec::new();
    for &device in &devices {
        let ooms = rows(
            source,
            &QueryRequest::new("event")
                .device(device)
                .param("action", OOM)
                .param("min_id", 0)
                .param("stack_bytes", i64::MAX),
        )?;
        if ooms.is_empty() {
            continue;
        }
        let kept = device_free(device)?;
        for oom in ooms {
            events.push(explain(source, request, device, &oom, kept.as_deref())?);
        }
    }
    Ok(OomReport {
        devices,
        events,
        category_rules: request.category_rules.name().to_owned(),
    })
}

fn explain(
    source: &dyn Source,
    request: &OomRequest,
    device: i64,
    oom: &Map<String, Json>,
    kept: Option<&[(i64, Option<i64>)]>,
) -> Result<OomEvent, QueryError> {
    let event_id = int(oom, "id");
    let requested = int(oom, "size");
    let stream = int(oom, "stream");
    let rounded = round_size(requested);
    let pool = Pool::of_request(rounded);
    let device_free = kept
        .and_then(|k| k.iter().find(|(id, _)| *id == event_id))
        .and_then(|(_, free)| *free);

    let previous = rows(
        source,
        &QueryRequest::new("event")
            .device(device)
            .param("min_id", 0)
            .param("max_id", event_id - 1)
            .param("order_by", "id")
            .param("order_dir", "DESC")
            .max_rows(1),
    )?;
    let counters = |r: &Map<String, Json>| Counters {
        event_id: int(r, "id"),
        allocated: int(r, "allocated"),
        active: int(r, "active"),
        reserved: int(r, "reserved"),
    };
    let before = previous.first().map_or_else(|| counters(oom), counters);

    let segments = segments_at(source, device, event_id)?;
    let live_rows = rows(
        source,
        &QueryRequest::new("active_blocks_at_event")
            .device(device)
            .param("event_id", event_id)
            .param("include_static", true),
    )?;
    let live: Vec<(i64, i64)> = live_rows
        .iter()
        .map(|r| (int(r, "address"), int(r, "size")))
        .collect();
    let spaces = free_space(&segments, &live);
    let by = by_pool_and_stream(&spaces, rounded);
    let own = by.get(&(pool, stream)).copied().unwrap_or_default();
    let all_cached_free = (by.values()).fold(0i64, |sum, f| sum.saturating_add(f.total_bytes));
    let others = by
        .iter()
        .filter(|(k, _)| **k != (pool, stream))
        .map(|(k, v)| (*k, *v))
        .collect();
    let (verdict, arithmetic) = judge(rounded, own, all_cached_free, device_free);

    let groups = rows(
        source,
        &QueryRequest::new("active_memory_callstack_at_event")
            .device(device)
            .param("event_id", event_id)
            .param("include_static", true)
            .param("top_n", request.top_n),
    )?
    .iter()
    .map(|r| Group {
        category: text(r, "category"),
        size_bytes: int(r, "size_bytes"),
        block_count: int(r, "block_count"),
        callstack: text(r, "callstack"),
    })
    .collect();
    let categories = Breakdown::new(
        event_id,
        &request.category_rules,
        &source.run(&request.category_rules.request(device, event_id))?,
    );
    // active_blocks_at_event orders by size descending (ties by id).
    let largest_blocks = live_rows
        .iter()
        .take(usize::try_from(request.top_n).unwrap_or(usize::MAX))
        .map(|r| LiveBlock {
            address: int(r, "address"),
            size: int(r, "size"),
            requested_size: int(r, "requestedSize"),
            alloc_event_id: int(r, "allocEventId"),
        })
        .collect();
    Ok(OomEvent {
        device,
        event_id,
        requested_bytes: requested,
        rounded_bytes: rounded,
        segment_bytes: allocation_size(rounded),
        pool,
        stream,
        device_free,
        before,
        own,
        others,
        all_cached_free,
        verdict,
        arithmetic,
        groups,
        categories,
        largest_blocks,
        callstack: text(oom, "callstack"),
    })
}

fn hb(n: i64) -> String {
    format!("{} ({} B)", human_bytes(n as f64), grouped(n))
}

fn free_json(f: &FreeSummary) -> Json {
    json!({
        "total_bytes": f.total_bytes,
        "largest_block_bytes": f.largest_block_bytes,
        "blocks": f.blocks,
        "blocks_fitting": f.blocks_fitting,
    })
}

impl OomReport {
    /// The report's fields, for the caller's success envelope.
    pub fn json_fields(&self) -> Vec<(&'static str, Json)> {
        let events: Vec<Json> = self
            .events
            .iter()
            .map(|e| {
                json!({
                    "device": e.device,
                    "event_id": e.event_id,
                    "requested_bytes": e.requested_bytes,
                    "rounded_bytes": e.rounded_bytes,
                    "segment_bytes": e.segment_bytes,
                    "pool": e.pool.name(),
                    "stream": e.stream,
                    "device_free": e.device_free,
                    "before": {
                        "event_id": e.before.event_id,
                        "allocated": e.before.allocated,
                        "active": e.before.active,
                        "reserved": e.before.reserved,
                    },
                    "pool_stream_free": free_json(&e.own),
                    "other_free": e.others.iter().map(|((p, s), f)| {
                        let mut m = free_json(f);
                        m["pool"] = json!(p.name());
                        m["stream"] = json!(s);
                        m
                    }).collect::<Vec<_>>(),
                    "all_cached_free_bytes": e.all_cached_free,
                    "verdict": e.verdict.name(),
                    "arithmetic": e.arithmetic,
                    "callstack": e.callstack,
                    "callstack_groups": e.groups.iter().map(|g| json!({
                        "category": g.category,
                        "size_bytes": g.size_bytes,
                        "block_count": g.block_count,
                        "callstack": g.callstack,
                    })).collect::<Vec<_>>(),
                    "categories": e.categories.rows_json(),
                    "largest_blocks": e.largest_blocks.iter().map(|b| json!({
                        "address": b.address,
                        "size": b.size,
                        "requested_size": b.requested_size,
                        "alloc_event_id": b.alloc_event_id,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        vec![
            ("devices", json!(self.devices)),
            ("oom_events", json!(self.events.len())),
            ("category_rules", json!(self.category_rules)),
            (
                "categories_interpretation",
                json!(categories::INTERPRETATION),
            ),
            ("events", Json::Array(events)),
        ]
    }

    pub fn to_text(&self) -> String {
        self.to_text_stacks(Stacks::All)
    }

    /// The text, with the stack of each OOM's request: every frame (`Stacks::All`), or
    /// only its Python frames (`Stacks::Python`). Stacks are named by their label
    /// ([`crate::stack::label`]) everywhere.
    pub fn to_text_stacks(&self, stacks: Stacks) -> String {
        let mut t = String::new();
        if self.events.is_empty() {
            t += &format!(
                "No OOM: the trace of device(s) {:?} has no oom event.\n",
                self.devices
            );
            return t;
        }
        t += &format!("OOM events: {}\n", self.events.len());
        for e in &self.events {
            t += &format!("\n== device {} event {} ==\n", e.device, e.event_id);
            t += &format!(
                "Requested: {} (rounded to 512 B: {}), {} pool, stream {}; a new segment would be {}\n",
                hb(e.requested_bytes),
                hb(e.rounded_bytes),
                e.pool.name(),
                e.stream,
                hb(e.segment_bytes)
            );
            t += &request_stack(&e.callstack, stacks);
            t += &format!(
                "device_free: {}\n",
                e.device_free
                    .map_or("unknown (not kept in this database)".into(), hb)
            );
            t += &format!(
                "Before (event {}): allocated {}, active {}, reserved {}\n",
                e.before.event_id,
                hb(e.before.allocated),
                hb(e.before.active),
                hb(e.before.reserved)
            );
            t += &format!(
                "Free in reserved segments of the {} pool, stream {}: {} in {} block(s), largest {}, {} could hold the request\n",
                e.pool.name(),
                e.stream,
                hb(e.own.total_bytes),
                e.own.blocks,
                hb(e.own.largest_block_bytes),
                e.own.blocks_fitting
            );
            for ((p, s), f) in &e.others {
                t += &format!(
                    "  elsewhere: {} pool, stream {}: {} in {} block(s), largest {}\n",
                    p.name(),
                    s,
                    hb(f.total_bytes),
                    f.blocks,
                    hb(f.largest_block_bytes)
                );
            }
            t += &format!("Verdict: {} — {}\n", e.verdict.name(), e.arithmetic);
            t += "Live by callstack group:\n";
            for g in &e.groups {
                let site = g.label();
                t += &format!(
                    "  {:>14}  {:>6} block(s)  {}  {}\n",
                    human_bytes(g.size_bytes as f64),
                    g.block_count,
                    g.category,
                    site
                );
            }
            t += "Live by category:\n";
            for line in e.categories.text("  ") {
                t += &line;
                t += "\n";
            }
            t += "Largest live blocks:\n";
            for b in &e.largest_blocks {
                t += &format!(
                    "  {:>14}  at {:#x}  allocated at event {}\n",
                    human_bytes(b.size as f64),
                    b.address,
                    b.alloc_event_id
                );
            }
        }
        t
    }
}

/// "Requested at: <label>" and the request's frames, outermost first, indented.
fn request_stack(callstack: &str, stacks: Stacks) -> String {
    let Some(label) = crate::stack::label_text(callstack) else {
        return "Requested at: no stack recorded\n".to_owned();
    };
    let mut t = format!("Requested at: {label}\n");
    let (lines, hidden) = match stacks {
        Stacks::All => (callstack.lines().collect(), 0),
        Stacks::Python => crate::stack::python_lines(callstack),
    };
    for l in lines {
        t += &format!("    {l}\n");
    }
    if hidden > 0 {
        t += &format!(
            "    ({hidden} native frame{} not shown; --stacks all shows every frame)\n",
            if hidden == 1 { "" } else { "s" }
        );
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_and_pools_follow_the_allocator() {
        assert_eq!(round_size(1), 512);
        assert_eq!(round_size(512), 512);
        assert_eq!(round_size(513), 1024);
        assert_eq!(round_size(i64::MAX), i64::MAX);
        assert_eq!(allocation_size(i64::MAX), i64::MAX);
        assert_eq!(Pool::of_request(SMALL_SIZE), Pool::Small);
        assert_eq!(Pool::of_request(SMALL_SIZE + 512), Pool::Large);
        assert_eq!(allocation_size(4096), SMALL_BUFFER);
        assert_eq!(allocation_size(5 << 20), LARGE_BUFFER);
        assert_eq!(allocation_size((11 << 20) + 1), 12 << 20);
    }

    #[test]
    fn free_runs_are_segments_minus_live_blocks() {
        let mut segs = Vec::new();
        let none = SegmentClass::default();
        let pooled = SegmentClass {
            large: None,
            pool_id: Some((1, 2)),
        };
        apply_segment_event(&mut segs, SEGMENT_ALLOC, 0, SMALL_BUFFER, 7, none);
        apply_segment_event(&mut segs, SEGMENT_ALLOC, 1 << 30, LARGE_BUFFER, 7, none);
        apply_segment_event(&mut segs, SEGMENT_MAP, 1 << 40, LARGE_BUFFER, 0, pooled);
        apply_segment_event(
            &mut segs,
            SEGMENT_MAP,
            (1 << 40) + LARGE_BUFFER,
            LARGE_BUFFER,
            0,
            none,
        );
        assert_eq!(segs.len(), 3, "two adjacent maps are one run");
        assert_eq!(segs[2].class, pooled, "the run keeps the pool of its parts");
        apply_segment_event(&mut segs, SEGMENT_UNMAP, 1 << 40, LARGE_BUFFER, 0, none);
        assert_eq!(segs[2].address, (1 << 40) + LARGE_BUFFER);
        let live = [(512, 512), (1 << 30, 4 << 20)];
        let spaces = free_space(&segs, &live);
        assert_eq!(spaces[0].free_runs, [(0, 512), (1024, SMALL_BUFFER - 1024)]);
        assert_eq!(spaces[0].pool, Pool::Small);
        assert_eq!(
            spaces[1].free_blocks().collect::<Vec<_>>(),
            [LARGE_BUFFER - (4 << 20)]
        );
        assert_eq!(spaces[1].pool, Pool::Large);
        let by = by_pool_and_stream(&spaces, 16 << 20);
        assert_eq!(by[&(Pool::Large, 7)].blocks_fitting, 1);
        assert_eq!(by[&(Pool::Large, 0)].total_bytes, LARGE_BUFFER);
    }

    #[test]
    fn verdicts_follow_their_arithmetic() {
        let own = FreeSummary {
            total_bytes: 6 << 20,
            largest_block_bytes: 2 << 20,
            blocks: 3,
            blocks_fitting: 0,
        };
        let r = 8 << 20;
        assert_eq!(
            judge(r, own, 6 << 20, Some(4 << 20)).0,
            Verdict::Fragmentation
        );
        assert_eq!(judge(r, own, 6 << 20, Some(1 << 20)).0, Verdict::Capacity);
        assert_eq!(
            judge(r, own, 40 << 20, Some(1 << 20)).0,
            Verdict::OtherPoolsOrStreams
        );
        assert_eq!(judge(r, own, 6 << 20, None).0, Verdict::Unknown);
        assert_eq!(judge(4 << 20, own, 6 << 20, None).0, Verdict::Fragmentation);
        let fits = FreeSummary {
            blocks_fitting: 1,
            ..own
        };
        assert_eq!(judge(r, fits, 6 << 20, Some(0)).0, Verdict::BlockFits);
    }
}
