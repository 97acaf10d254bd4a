//! Writing one shard database: the native layout (import format 2) or the msinsight v1
//! inline layout (import format 1), both with `pt_snap_block_reference`.

use pt_snap_db::schema;
use pt_snap_db::{ActionValue, Metadata};
use pt_snap_model::Snapshot;
use rusqlite::{params, Connection};

use super::plan::{DevicePlan, Shard, Texts};

/// Which physical layout a shard gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `pt-snap-native-v2`: `callstackId` + a per-shard `callstack` table, the nine actions.
    Native,
    /// `compatibility-v1`: the callstack text inline in `trace_entry_<d>.callstack`, no
    /// `callstack` table, eight actions (no `oom`), msinsight's index names.
    Msinsight,
}

/// Everything a shard writer reads; shared by the threads writing shards in parallel.
pub struct ShardSource<'a> {
    pub snapshot: &'a Snapshot,
    pub plan: &'a DevicePlan,
    pub texts: &'a Texts,
    pub metadata: &'a Metadata,
}

/// Writes shard `shard` of `source.plan` into the empty database `conn` and commits.
pub fn write_shard(
    conn: &Connection,
    source: &ShardSource<'_>,
    shard: &Shard,
    layout: Layout,
) -> rusqlite::Result<()> {
    let d = shard.device;
    // 64 KiB pages, where the reference has SQLite's default 4 KiB: a block-reference row
    // holds two callstack texts (kilobytes each, as does an msinsight trace row), which at
    // 4 KiB spill into overflow pages; large pages cut the writer's CPU time by a fifth and its
    // write calls sixteenfold. Readers do not care (docs/compatibility.md).
    conn.execute_batch(
        "PRAGMA page_size = 65536; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; \
         PRAGMA cache_size = -32768; PRAGMA temp_store = MEMORY; BEGIN;",
    )?;
    let mut ddl = vec![
        schema::create_block_table(d),
        schema::CREATE_DICTIONARY_TABLE.into(),
    ];
    match layout {
        Layout::Native => {
            ddl.push(schema::create_trace_table(d));
            ddl.push(schema::CREATE_CALLSTACK_TABLE.into());
        }
        Layout::Msinsight => ddl.push(schema::create_v1_trace_table(d)),
    }
    ddl.push(schema::CREATE_BLOCK_REFERENCE_TABLE.into());
    ddl.push(schema::CREATE_METADATA_TABLE.into());
    conn.execute_batch(&(ddl.join(";\n") + ";"))?;

    if layout == Layout::Msinsight {
        // The v1 trace rows carry their callstack text: building the three counter indexes
        // afterwards would read the whole table three times; maintained while the rows go
        // in, they stay small enough for the page cache.
        conn.execute_batch(&schema::create_v1_trace_indexes(d))?;
    }
    let writer = ShardWriter {
        conn,
        source,
        shard,
        layout,
    };
    writer.trace()?;
    writer.blocks()?;
    if layout == Layout::Native {
        let mut insert = conn.prepare("INSERT INTO callstack VALUES (?, ?)")?;
        for (id, &text) in shard.callstacks.iter().enumerate() {
            insert.execute(params![id as i64, source.texts.text(text)])?;
        }
    }
    write_dictionary(conn, d, layout)?;
    source.metadata.insert(conn)?;

    let mut indexes = match layout {
        Layout::Native => schema::create_device_indexes(d),
        Layout::Msinsight => schema::create_block_indexes(d),
    };
    indexes += "COMMIT; PRAGMA journal_mode = DELETE;";
    conn.execute_batch(&indexes)
}

/// The rows of one shard going into its database.
struct ShardWriter<'a> {
    conn: &'a Connection,
    source: &'a ShardSource<'a>,
    shard: &'a Shard,
    layout: Layout,
}

impl ShardWriter<'_> {
    fn trace(&self) -> rusqlite::Result<()> {
        let (conn, source, shard) = (self.conn, self.source, self.shard);
        let d = shard.device;
        let snapshot = source.snapshot;
        let mut insert = conn.prepare(&format!(
            "INSERT INTO trace_entry_{d} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        ))?;
        let action = |a: pt_snap_model::Action| match a.code() {
            Some(code) => ActionValue::Code(code),
            None => ActionValue::Text(a.name(&snapshot.other_actions)),
        };
        // Native: the shard-local callstack id; msinsight: its text.
        let mut row = |id: i64,
                       a: pt_snap_model::Action,
                       addr: i64,
                       size: i64,
                       stream: i64,
                       t: &super::plan::Totals|
         -> rusqlite::Result<()> {
            let callstack_id = i64::from(t.callstack);
            let text = source.texts.text(shard.callstacks[t.callstack as usize]);
            let callstack: &dyn rusqlite::ToSql = match self.layout {
                Layout::Native => &callstack_id,
                Layout::Msinsight => &text,
            };
            insert.execute(params![
                id,
                action(a),
                addr,
                size,
                stream,
                t.allocated,
                t.active,
                t.reserved,
                callstack
            ])?;
            Ok(())
        };
        // Ascending ids (appends): boundary events -n … -1, then the slice's events.
        for b in shard.boundary.iter().rev() {
            row(b.id, b.action, b.address, b.size, b.stream, &b.totals)?;
        }
        let events = &snapshot.device_traces[d];
        for (k, t) in shard.events.iter().enumerate() {
            let pos = shard.start_position + k;
            let e = &events[pos];
            row(
                e.id.unwrap_or(pos as i64),
                e.action,
                e.addr,
                e.size,
                e.stream,
                t,
            )?;
        }
        Ok(())
    }

    fn blocks(&self) -> rusqlite::Result<()> {
        let (conn, source, shard) = (self.conn, self.source, self.shard);
        let d = shard.device;
        let lifetimes = &source.plan.lifetimes;
        let mut rows: Vec<(i64, u32, i64)> = shard
            .blocks
            .iter()
            .map(|&(i, state)| (lifetimes[i as usize].id(), i, state.code()))
            .collect();
        rows.sort_unstable_by_key(|r| r.0);
        let mut block = conn.prepare(&format!(
            "INSERT INTO block_{d} VALUES (?, ?, ?, ?, ?, ?, ?)"
        ))?;
        let mut reference =
            conn.prepare("INSERT INTO pt_snap_block_reference VALUES (?, ?, ?, ?)")?;
        let text = |t: Option<u32>| t.map(|t| source.texts.text(t));
        for (id, i, state) in rows {
            let l = &lifetimes[i as usize];
            block.execute(params![
                id,
                l.address,
                l.size,
                l.requested_size,
                state,
                l.alloc_event.unwrap_or(-1),
                l.free_event.unwrap_or(-1)
            ])?;
            reference.execute(params![id, l.stream, text(l.alloc_text), text(l.free_text)])?;
        }
        Ok(())
    }
}

fn write_dictionary(conn: &Connection, d: usize, layout: Layout) -> rusqlite::Result<()> {
    let mut insert = conn.prepare("INSERT INTO dictionary VALUES (?, ?, ?, ?)")?;
    let trace = schema::trace_table(d);
    let block = schema::block_table(d);
    let mut states = || -> rusqlite::Result<()> {
        for (code, name) in schema::BLOCK_STATES {
            insert.execute(params![block, "state", code.to_string(), name])?;
        }
        Ok(())
    };
    match layout {
        Layout::Native => {
            for (code, name) in schema::ACTIONS {
                conn.execute(
                    "INSERT INTO dictionary VALUES (?, ?, ?, ?)",
                    params![trace, "action", code.to_string(), name],
                )?;
            }
            states()?;
        }
        // The reference rewrites the action rows of a native shard (deleting all nine,
        // appending the eight msinsight knows), so they follow the state rows.
        Layout::Msinsight => {
            states()?;
            for (code, name) in &schema::ACTIONS[..8] {
                conn.execute(
                    "INSERT INTO dictionary VALUES (?, ?, ?, ?)",
                    params![trace, "action", code.to_string(), name],
                )?;
            }
        }
    }
    Ok(())
}
