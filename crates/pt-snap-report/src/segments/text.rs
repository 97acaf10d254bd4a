//! The text map: the event and its counters, free space per pool and stream, then every
//! segment as a line of cells — one character per fixed number of bytes, the same for every
//! segment, so lengths compare — wrapped at [`WIDTH`] cells.

use super::{BlockState, MapBlock, SegmentMap, FRAGMENTATION};
use crate::units::{grouped, human_bytes};

/// Cells per line.
const WIDTH: usize = 64;
/// Width of a segment's heading, before its cells.
const HEAD: usize = 42;
/// About how many cells the whole map takes: the cell size is the power of two that keeps
/// the reserved bytes within it.
const BUDGET: i64 = 64 * 160;

const ALLOCATED: char = '█';
const PENDING: char = '▓';
const FREE: char = '·';
const MIXED: char = '▌';

/// The cell size: a power of two (at least 512 B) with every segment within [`BUDGET`].
fn cell_bytes(map: &SegmentMap) -> i64 {
    let reserved: i64 = map.segments.iter().map(|s| s.total_size).sum();
    let mut cell = 512i64;
    while reserved / cell > BUDGET && cell < (1 << 62) {
        cell *= 2;
    }
    cell
}

/// The glyph of the bytes `[start, end)`: the state of every byte when they share one, a
/// mixed cell where live and free bytes meet.
fn glyph(blocks: &[MapBlock], start: i64, end: i64) -> char {
    let (mut live, mut pending, mut free) = (0i64, 0i64, 0i64);
    let first = blocks.partition_point(|b| b.address.saturating_add(b.size) <= start);
    for b in blocks[first..].iter().take_while(|b| b.address < end) {
        let bytes = b.address.saturating_add(b.size).min(end) - b.address.max(start);
        match b.state {
            BlockState::ActiveAllocated => live += bytes,
            BlockState::ActivePendingFree => pending += bytes,
            BlockState::Inactive => free += bytes,
        }
    }
    match (live + pending > 0, free > 0) {
        (true, true) => MIXED,
        (false, _) => FREE,
        (true, false) if pending > live => PENDING,
        _ => ALLOCATED,
    }
}

pub(super) fn render(map: &SegmentMap) -> String {
    let hb = |n: i64| format!("{} ({} B)", human_bytes(n as f64), grouped(n));
    let mut out = Vec::new();
    let e = &map.event;
    out.push(format!(
        "Device {} after event {} ({}); events {}..{}",
        map.device,
        e.id,
        super::describe_event(e),
        map.events.0,
        map.events.1
    ));
    out.push(format!(
        "Counters: allocated {}, active {}, reserved {}",
        hb(map.allocated),
        hb(map.active),
        hb(map.reserved)
    ));
    out.push(format!(
        "Blocks: allocated {}, pending free {}, free in segments {}; {} segment(s)",
        hb(map.bytes_in(BlockState::ActiveAllocated)),
        hb(map.bytes_in(BlockState::ActivePendingFree)),
        hb(map.bytes_in(BlockState::Inactive)),
        map.segments.len()
    ));
    out.push(String::new());
    out.push("Free space by pool and stream:".into());
    if map.pools.is_empty() {
        out.push("  no segment is reserved".into());
    }
    for p in &map.pools {
        let frag = p
            .fragmentation
            .map_or("n/a (nothing free)".to_owned(), |f| format!("{f:.3}"));
        out.push(format!(
            "  {} pool, stream {}: {} segment(s), {} reserved, {} free in {} block(s), largest {}, fragmentation {frag}",
            p.pool.name(),
            p.stream,
            p.segments,
            human_bytes(p.reserved_bytes as f64),
            human_bytes(p.free_bytes as f64),
            p.free_blocks,
            human_bytes(p.largest_free_block_bytes as f64),
        ));
    }
    out.push(format!("  (fragmentation: {FRAGMENTATION})"));
    out.push(String::new());
    let cell = cell_bytes(map);
    out.push(format!(
        "Map: one cell = {}; {ALLOCATED} allocated  {PENDING} pending free (freed, in use on another stream)  {FREE} free (cached)  {MIXED} live and free bytes in one cell",
        human_bytes(cell as f64)
    ));
    let indent = " ".repeat(HEAD);
    for s in &map.segments {
        let cells = ((s.total_size + cell - 1) / cell).max(1) as usize;
        let line: String = (0..cells)
            .map(|i| {
                let start = s.address.saturating_add(i as i64 * cell);
                let end = start
                    .saturating_add(cell)
                    .min(s.address.saturating_add(s.total_size));
                glyph(&s.blocks, start, end)
            })
            .collect();
        let chars: Vec<char> = line.chars().collect();
        let pool = match s.segment_pool_id {
            Some((0, 0)) | None => String::new(),
            Some((a, b)) => format!(" pool ({a},{b})"),
        };
        let head = format!(
            "  {:#014x} {:>10} {}{} s{}{} ",
            s.address,
            human_bytes(s.total_size as f64),
            s.pool.name(),
            if s.is_expandable { " exp" } else { "" },
            s.stream,
            pool
        );
        let lines: Vec<String> = chars.chunks(WIDTH).map(|c| c.iter().collect()).collect();
        let mut i = 0;
        while i < lines.len() {
            // A run of identical lines is one line and its count: a 20 GiB segment of live
            // blocks is not 40 lines of the same cells.
            let same = lines[i..].iter().take_while(|l| **l == lines[i]).count();
            let row = &lines[i];
            if i == 0 {
                out.push(format!("{head:<HEAD$}|{row}|"));
            } else {
                out.push(format!("{indent}|{row}|"));
            }
            if same > 1 {
                let bytes = (same as i64 - 1) * WIDTH as i64 * cell;
                out.push(format!(
                    "{indent} … the same {} more time(s) ({})",
                    same - 1,
                    human_bytes(bytes as f64)
                ));
            }
            i += same;
        }
    }
    if !map.outside_segments.is_empty() {
        let bytes: i64 = map.outside_segments.iter().map(|b| b.size).sum();
        out.push(format!(
            "  {} live block(s), {}, in no segment (set aside by a lenient replay)",
            map.outside_segments.len(),
            hb(bytes)
        ));
    }
    out.join("\n") + "\n"
}
