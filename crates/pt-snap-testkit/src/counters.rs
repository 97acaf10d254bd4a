//! What an imported device's rows must hold, in either replay mode (see
//! `docs/compatibility.md`, the lenient replay's guarantee).

use rusqlite::Connection;

/// Whether strict rules apply: the strict replay's `reserved` is also the running sum of
/// the segment events, which a lenient one's is not (it skips segment events it cannot
/// apply, and gives blocks no segment holds a reservation of their own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    Strict,
    Lenient,
}

fn ints<const N: usize>(conn: &Connection, sql: &str) -> rusqlite::Result<Vec<[i64; N]>> {
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt.query_map([], |r| {
        let mut row = [0; N];
        for (i, v) in row.iter_mut().enumerate() {
            *v = r.get(i)?;
        }
        Ok(row)
    })?;
    rows.collect()
}

/// Checks device `d`'s `trace_entry_<d>` and `block_<d>`; `Err` names the first row that
/// breaks a rule, and the rule:
///
/// * every row: `0 ≤ allocated ≤ active ≤ reserved`;
/// * `active` is the sum of the block rows live at the row's event (allocated at or before
///   it — before the trace for the synthetic rows — and not freed by then);
/// * every block row: `0 ≤ requestedSize ≤ size`, and its free after its alloc;
/// * [`Replay::Strict`]: `reserved` is the running sum of the segment events (the synthetic
///   ones first: the segments before the trace).
///
/// Event ids are taken as trace positions (no explicit `id` keys).
pub fn counters_hold(conn: &Connection, d: usize, replay: Replay) -> Result<(), String> {
    let failed = |e: rusqlite::Error| e.to_string();
    let rows: Vec<[i64; 6]> = ints(
        conn,
        &format!(
            "SELECT id, allocated, active, reserved, size,
                    CASE action WHEN 0 THEN 1 WHEN 2 THEN 1 WHEN 1 THEN -1 WHEN 3 THEN -1
                    ELSE 0 END
             FROM trace_entry_{d} ORDER BY id"
        ),
    )
    .map_err(failed)?;
    let blocks: Vec<[i64; 5]> = ints(
        conn,
        &format!("SELECT id, size, requestedSize, allocEventId, freeEventId FROM block_{d}"),
    )
    .map_err(failed)?;
    // Live bytes by event: the pre-trace blocks', then each alloc's and free's change.
    let mut before_trace = 0i128;
    let mut changes: Vec<(i64, i128)> = Vec::new();
    for b @ [_, size, requested, alloc, free] in &blocks {
        if !(0 <= *requested && requested <= size) {
            return Err(format!(
                "block_{d} row {b:?}: its requested size is not between 0 and its size"
            ));
        }
        if *alloc >= 0 && *free >= 0 && free <= alloc {
            return Err(format!(
                "block_{d} row {b:?}: freed before it was allocated"
            ));
        }
        match *alloc {
            a if a < 0 => before_trace += i128::from(*size),
            a => changes.push((a, i128::from(*size))),
        }
        if *free >= 0 {
            changes.push((*free, -i128::from(*size)));
        }
    }
    changes.sort_unstable();
    let mut changes = changes.into_iter().peekable();
    let mut live = before_trace;
    let mut segments: i128 = rows
        .iter()
        .filter(|r| r[0] < 0)
        .map(|r| i128::from(r[4]))
        .sum();
    for row @ [id, allocated, active, reserved, size, sign] in &rows {
        if !(0 <= *allocated && allocated <= active && active <= reserved) {
            return Err(format!(
                "trace_entry_{d} row {row:?} (id, allocated, active, reserved, …): not 0 ≤ allocated ≤ active ≤ reserved"
            ));
        }
        while let Some(&(_, change)) = changes.peek().filter(|(at, _)| at <= id) {
            live += change;
            changes.next();
        }
        if i128::from(*active) != live {
            return Err(format!(
                "trace_entry_{d} row {row:?}: active is not the {live} bytes of the blocks live at it"
            ));
        }
        if *id >= 0 {
            segments += i128::from(*sign) * i128::from(*size);
        }
        if replay == Replay::Strict && i128::from(*reserved) != segments {
            return Err(format!(
                "trace_entry_{d} row {row:?}: reserved is not the {segments} bytes of the segment events"
            ));
        }
    }
    Ok(())
}
