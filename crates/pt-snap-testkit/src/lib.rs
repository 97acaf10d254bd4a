//! Test helpers for pt-snap.
//!
//! [`canonical_db`] / [`canonical_db_json`] produce the canonical form of a
//! SnapshotDB used by the differential tests. They are the twin of
//! `tests/oracle/canon_db.py`: for the same DB both must print byte-identical
//! JSON (`tests/oracle/check_twins.sh` checks that on the oracle's DBs). If you
//! change one twin, change the other the same way. The canonical form is
//! described in detail at the top of `canon_db.py`; in short:
//!
//! * `schema`: `{type, name, tbl_name, sql}` from `sqlite_master` (no
//!   `sqlite_*` internals, and none of our own `pt_snap_x_*` extension tables, which the
//!   reference never writes and readers ignore), sorted by (type, name), ASCII whitespace in `sql`
//!   collapsed;
//! * `dictionary`: `{columns, rows}` in rowid order;
//! * `metadata`: the `pt_snap_metadata` row minus `importer_name`,
//!   `importer_version`, `completed_at`;
//! * `counts`: row counts of the callstack/frame tables;
//! * `devices`: per `trace_entry_<d>` table, `{device, trace, blocks}` with
//!   negative `id`s relabelled per table (-1, -2, ... in descending order of
//!   the original ids) and `callstackId` replaced by the callstack key;
//! * `callstacks`: `{key, text, frameCount, frames}` sorted by content, where
//!   `key` = `"cs-"` + FNV-1a-64 of the text (16 hex digits).
//!
//! Shards of sharded datasets (a `pt_snap_block_reference` table exists) keep their
//! negative ids, have a v1 inline `callstack` column replaced by keys (texts listed in
//! `callstacks`), and gain `block_reference` and `reference_texts`.
//!
//! SQLite storage classes are kept: INTEGER → number, TEXT → string, NULL →
//! null, REAL → `{"real_bits": hex}`, BLOB → `{"blob": hex}`.

#![forbid(unsafe_code)]

pub mod compress;
mod counters;

pub use counters::{counters_hold, Replay};

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use pt_snap_contract::python;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use serde_json::{json, Map, Value};

/// The repository's root directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The reference-made databases of the query goldens (`tests/golden/query/<case>/reference.db`):
/// what report tests run against.
pub fn reference_databases() -> Vec<PathBuf> {
    [
        "empty_cache",
        "expandable",
        "multi_dev0",
        "single",
        "synth_1dev",
    ]
    .iter()
    .map(|case| {
        repo_root()
            .join("tests/golden/query")
            .join(case)
            .join("reference.db")
    })
    .collect()
}

/// `<repo>/../shared/fixtures`: the snapshot corpus developer machines and CI keep beside
/// the checkout, including files we may not redistribute. `None` (with a note on stderr)
/// where it is absent, so tests that need it skip.
///
/// # Panics
/// Under `CI=true` when the corpus is absent: a skipped check would pass CI having checked
/// nothing.
pub fn shared_fixtures() -> Option<PathBuf> {
    shared_dir("fixtures")
}

/// `<repo>/../shared/<name>`, or `None` (said on stderr) where it is absent; absence fails
/// under `CI=true` (see [`shared_fixtures`]).
pub fn shared_dir(name: &str) -> Option<PathBuf> {
    let p = repo_root().join("../shared").join(name);
    if p.is_dir() {
        return Some(p);
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    assert!(
        !ci,
        "{} is absent; CI must run the checks that need it",
        p.display()
    );
    eprintln!(
        "SKIPPED: {} is absent; skipping the checks that need it",
        p.display()
    );
    None
}

/// Copies the directory tree `from` into `to` (created), files byte for byte: a scratch copy
/// of a committed dataset for a test to alter.
///
/// # Panics
/// On any I/O error.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// Copies `<repo>/<relative>` (a committed fixture or database) to the file `to`, for a
/// test to import, query or alter.
///
/// # Panics
/// On any I/O error.
pub fn copy_from_repo(relative: &str, to: &Path) {
    let from = repo_root().join(relative);
    if let Err(e) = std::fs::copy(&from, to) {
        panic!("copying {} to {}: {e}", from.display(), to.display());
    }
}

/// Every file below `dir`, at any depth, as its `/`-separated path relative to `dir`, sorted
/// (hidden ones included).
///
/// # Panics
/// On any I/O error.
pub fn tree_of(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap();
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    out
}

/// The names of the entries directly in `dir`, sorted: what a test looks at to see that
/// nothing was left beside a database.
///
/// # Panics
/// On any I/O error.
pub fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Turns the database at `path` into WAL mode, as a user's own tools may leave it.
///
/// # Panics
/// If it cannot be opened or does not switch.
pub fn switch_to_wal(path: &Path) {
    let conn = Connection::open(path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

/// The stdout of a finished command that must have succeeded, as JSON. `what` names the
/// command in the failure message, before its stderr.
///
/// # Panics
/// If the command failed or its stdout is not JSON.
pub fn stdout_json(out: &std::process::Output, what: impl std::fmt::Display) -> Value {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The events worth checking a report at: each counter's peak event (`peak_<counter>_event_id`
/// of a `memory_peak` row, as `field` reads it; those it has), then, where the device has
/// events `first..=last` (`bounds`), nine events spread evenly over them, both ends included.
pub fn events_worth_checking(
    field: impl Fn(&str) -> Option<i64>,
    bounds: Option<(i64, i64)>,
) -> Vec<i64> {
    let mut out: Vec<i64> = ["allocated", "active", "reserved"]
        .iter()
        .filter_map(|m| field(&format!("peak_{m}_event_id")))
        .collect();
    if let Some((first, last)) = bounds {
        out.extend((0..=8).map(|i| first + (last - first) * i / 8));
    }
    out
}

/// The first column of every row `sql` gives on `conn` (table names, kinds, ids).
///
/// # Panics
/// If the statement fails or a value is not a `T`.
pub fn column<T: rusqlite::types::FromSql>(conn: &Connection, sql: &str) -> Vec<T> {
    conn.prepare(sql)
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Every file below `dir`, at any depth, whose extension is `extension`, sorted.
///
/// # Panics
/// On any I/O error.
pub fn files_below(dir: &Path, extension: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, extension: &str, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, extension, out);
            } else if path.extension().is_some_and(|e| e == extension) {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, extension, &mut out);
    out.sort();
    out
}

/// Where the repository keeps its redistributable snapshot fixtures (below its root), for
/// [`pickles_in`].
pub const FIXTURE_DIRS: [&str; 3] = [
    "fixtures/upstream-pkg/snapshots",
    "fixtures/synthetic",
    "fixtures/real",
];

/// The snapshot pickles (`.pkl`, `.pickle`) directly in each of the directories `dirs` below
/// `root` (a missing directory has none), sorted.
///
/// # Panics
/// On an I/O error other than a missing directory.
pub fn pickles_in(root: &Path, dirs: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if matches!(
                path.extension().and_then(|x| x.to_str()),
                Some("pkl" | "pickle")
            ) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Hands out `bytes` at most `slice` bytes per `read`, so that pickle opcodes and strings
/// straddle read boundaries wherever a test cuts them (the browser worker's reader,
/// `pt_snap_model::Slices`, cuts every `SLICE` bytes).
pub struct ShortReads<'a> {
    bytes: &'a [u8],
    slice: usize,
}

impl<'a> ShortReads<'a> {
    pub fn new(bytes: &'a [u8], slice: usize) -> Self {
        ShortReads { bytes, slice }
    }
}

impl std::io::Read for ShortReads<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = out.len().min(self.slice).min(self.bytes.len());
        out[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

/// Error type of this crate (SQLite errors only).
pub type Error = rusqlite::Error;

const EXCLUDED_METADATA: [&str; 3] = ["importer_name", "importer_version", "completed_at"];
const FRAME_TABLES: [&str; 3] = ["frame", "callstack_frame", "callstack_frame_manifest"];
const COUNT_TABLES: [&str; 4] = [
    "callstack",
    "frame",
    "callstack_frame",
    "callstack_frame_manifest",
];

/// Canonical form of the SnapshotDB at `path` (opened read-only).
pub fn canonical_db(path: impl AsRef<Path>) -> Result<Value, Error> {
    let conn = Connection::open_with_flags(
        path.as_ref(),
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    canonical_conn(&conn)
}

/// [`canonical_db`] rendered with [`render`] (what `canon_db.py` prints).
pub fn canonical_db_json(path: impl AsRef<Path>) -> Result<String, Error> {
    Ok(render(&canonical_db(path)?))
}

/// Canonical form of an open SnapshotDB connection.
pub fn canonical_conn(conn: &Connection) -> Result<Value, Error> {
    let mut master: Vec<(String, String, String, Option<String>)> = {
        let mut stmt = conn.prepare(
            "SELECT type, name, tbl_name, sql FROM sqlite_master \
             WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' \
             AND tbl_name NOT LIKE 'pt\\_snap\\_x\\_%' ESCAPE '\\'",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
        rows.collect::<Result<_, _>>()?
    };
    master.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let tables: BTreeSet<String> = master
        .iter()
        .filter(|m| m.0 == "table")
        .map(|m| m.1.clone())
        .collect();

    let mut out = Map::new();
    let schema: Vec<Value> = master
        .iter()
        .map(|(t, n, tn, sql)| {
            json!({"type": t, "name": n, "tbl_name": tn, "sql": sql.as_deref().map(norm_sql)})
        })
        .collect();
    out.insert("schema".into(), Value::Array(schema));

    let dictionary = if tables.contains("dictionary") {
        let (cols, rows) = read_table(conn, "dictionary", Some("rowid"))?;
        table_value(cols, rows)
    } else {
        Value::Null
    };
    out.insert("dictionary".into(), dictionary);

    let mut metadata = Value::Null;
    if tables.contains("pt_snap_metadata") {
        let (cols, rows) = read_table(conn, "pt_snap_metadata", Some("rowid"))?;
        if let Some(first) = rows.into_iter().next() {
            let mut m = Map::new();
            for (c, v) in cols.into_iter().zip(first) {
                if !EXCLUDED_METADATA.contains(&c.as_str()) {
                    m.insert(c, v);
                }
            }
            metadata = Value::Object(m);
        }
    }
    out.insert("metadata".into(), metadata);

    let mut counts = Map::new();
    for t in COUNT_TABLES {
        if tables.contains(t) {
            let n: i64 =
                conn.query_row(&format!("SELECT COUNT(*) FROM {}", qi(t)), [], |r| r.get(0))?;
            counts.insert(t.into(), Value::from(n));
        }
    }
    out.insert("counts".into(), Value::Object(counts));

    let has_callstack = tables.contains("callstack");
    let has_reference = tables.contains("pt_snap_block_reference");
    let mut inline_texts: HashMap<String, String> = HashMap::new();
    let mut key_of_id: HashMap<i64, Value> = HashMap::new();
    let mut callstack_rows: Vec<(Value, Value)> = Vec::new(); // (id, text)
    if has_callstack {
        let mut stmt = conn.prepare("SELECT id, callstack FROM callstack")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let id = value_of(r.get_ref(0)?);
            let text = value_of(r.get_ref(1)?);
            let key = match &text {
                Value::String(s) => Value::String(fnv1a64_key(s)),
                _ => Value::Null,
            };
            if let Some(i) = id.as_i64() {
                key_of_id.insert(i, key);
            }
            callstack_rows.push((id, text));
        }
    }

    let mut devices = Vec::new();
    for (d, suffix) in device_suffixes(&tables) {
        let (tcols, mut trows) = read_table(conn, &format!("trace_entry_{suffix}"), Some("id"))?;
        if !has_reference {
            relabel_negative_ids(&tcols, &mut trows);
        }
        if !has_callstack && has_reference {
            if let Some(ci) = tcols.iter().position(|c| c == "callstack") {
                for r in &mut trows {
                    text_key(&mut r[ci], &mut inline_texts);
                }
            }
        }
        if has_callstack {
            if let Some(ci) = tcols.iter().position(|c| c == "callstackId") {
                for r in &mut trows {
                    r[ci] = match r[ci].as_i64() {
                        Some(id) => key_of_id.get(&id).cloned().unwrap_or(Value::Null),
                        None => Value::Null,
                    };
                }
            }
        }
        let bt = format!("block_{suffix}");
        let blocks = if tables.contains(&bt) {
            let (bcols, mut brows) = read_table(conn, &bt, Some("id"))?;
            if !has_reference {
                relabel_negative_ids(&bcols, &mut brows);
            }
            table_value(bcols, brows)
        } else {
            Value::Null
        };
        let mut dev = Map::new();
        dev.insert("device".into(), Value::from(d));
        dev.insert("trace".into(), table_value(tcols, trows));
        dev.insert("blocks".into(), blocks);
        devices.push(Value::Object(dev));
    }
    out.insert("devices".into(), Value::Array(devices));

    if has_callstack {
        let structured = FRAME_TABLES.iter().all(|t| tables.contains(*t));
        let mut frames_of: HashMap<i64, Vec<(Value, Value)>> = HashMap::new();
        let mut count_of: HashMap<i64, Value> = HashMap::new();
        if structured {
            let mut stmt = conn.prepare(
                "SELECT cf.callstackId, cf.position, f.filename, f.line, f.name \
                 FROM callstack_frame cf LEFT JOIN frame f ON f.id = cf.frameId \
                 ORDER BY cf.callstackId, cf.position",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let cid: i64 = r.get(0)?;
                let pos = value_of(r.get_ref(1)?);
                let frame = Value::Array(vec![
                    value_of(r.get_ref(2)?),
                    value_of(r.get_ref(3)?),
                    value_of(r.get_ref(4)?),
                ]);
                frames_of.entry(cid).or_default().push((pos, frame));
            }
            let mut stmt =
                conn.prepare("SELECT callstackId, frameCount FROM callstack_frame_manifest")?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                count_of.insert(r.get(0)?, value_of(r.get_ref(1)?));
            }
        }
        let mut entries: Vec<(String, Value)> = Vec::new();
        for (id, text) in callstack_rows {
            let idi = id.as_i64();
            let mut e = Map::new();
            e.insert(
                "key".into(),
                idi.and_then(|i| key_of_id.get(&i).cloned())
                    .unwrap_or(Value::Null),
            );
            e.insert("text".into(), text);
            if structured {
                let fr = idi.and_then(|i| frames_of.remove(&i)).unwrap_or_default();
                e.insert(
                    "frameCount".into(),
                    idi.and_then(|i| count_of.get(&i).cloned())
                        .unwrap_or(Value::Null),
                );
                let positions: Vec<Value> = fr.iter().map(|(p, _)| p.clone()).collect();
                let contiguous = positions
                    .iter()
                    .enumerate()
                    .all(|(k, p)| p.as_i64() == Some(k as i64));
                e.insert(
                    "frames".into(),
                    Value::Array(fr.into_iter().map(|(_, f)| f).collect()),
                );
                if !contiguous {
                    e.insert("positions".into(), Value::Array(positions));
                }
            }
            let sort_key = format!(
                "{}\u{0}{}\u{0}{}",
                compact(e.get("text")),
                compact(e.get("frames")),
                compact(e.get("frameCount"))
            );
            entries.push((sort_key, Value::Object(e)));
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        out.insert(
            "callstacks".into(),
            Value::Array(entries.into_iter().map(|(_, e)| e).collect()),
        );
    } else if !inline_texts.is_empty() {
        out.insert("callstacks".into(), text_entries(inline_texts));
    }
    if has_reference {
        let (rcols, mut rrows) = read_table(conn, "pt_snap_block_reference", Some("blockId"))?;
        let mut reference_texts = HashMap::new();
        for c in ["allocCallstack", "freeCallstack"] {
            if let Some(ci) = rcols.iter().position(|x| x == c) {
                for r in &mut rrows {
                    text_key(&mut r[ci], &mut reference_texts);
                }
            }
        }
        out.insert("block_reference".into(), table_value(rcols, rrows));
        out.insert("reference_texts".into(), text_entries(reference_texts));
    }
    Ok(Value::Object(out))
}

/// Replaces a text value by its callstack key, remembering the text in `texts`.
fn text_key(v: &mut Value, texts: &mut HashMap<String, String>) {
    if let Value::String(text) = v {
        let key = fnv1a64_key(text);
        texts.insert(key.clone(), std::mem::take(text));
        *v = Value::String(key);
    }
}

/// `[{key, text}]` sorted like the `callstacks` entries (by text).
fn text_entries(texts: HashMap<String, String>) -> Value {
    let mut entries: Vec<(String, Value)> = texts
        .into_iter()
        .map(|(key, text)| {
            let sort_key = format!(
                "{}\u{0}null\u{0}null",
                compact(Some(&Value::String(text.clone())))
            );
            (sort_key, json!({"key": key, "text": text}))
        })
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Value::Array(entries.into_iter().map(|(_, e)| e).collect())
}

/// Compact JSON of an optional value (`null` when absent), as Python's
/// `json.dumps(v, ensure_ascii=False, separators=(",", ":"))`.
fn compact(v: Option<&Value>) -> String {
    serde_json::to_string(v.unwrap_or(&Value::Null)).expect("serialising a Value cannot fail")
}

fn qi(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn is_ascii_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{0b}' | '\u{0c}')
}

/// Collapse runs of ASCII whitespace to one space and trim both ends.
pub fn norm_sql(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut pending = false;
    for ch in sql.chars() {
        if is_ascii_ws(ch) {
            pending = true;
        } else {
            if pending && !out.is_empty() {
                out.push(' ');
            }
            pending = false;
            out.push(ch);
        }
    }
    out
}

/// `"cs-"` + 16 lowercase hex digits of the 64-bit FNV-1a hash of `text` (UTF-8).
pub fn fnv1a64_key(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("cs-{h:016x}")
}

fn value_of(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => json!({"real_bits": python::hex(&f.to_bits().to_be_bytes())}),
        ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => json!({"blob": python::hex(b)}),
    }
}

fn columns_of(conn: &Connection, table: &str) -> Result<Vec<String>, Error> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({})", qi(table)))?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(1))?;
    rows.collect()
}

fn read_table(
    conn: &Connection,
    table: &str,
    order_by: Option<&str>,
) -> Result<(Vec<String>, Vec<Vec<Value>>), Error> {
    let cols = columns_of(conn, table)?;
    let list: Vec<String> = cols.iter().map(|c| qi(c)).collect();
    let mut sql = format!("SELECT {} FROM {}", list.join(", "), qi(table));
    if let Some(o) = order_by {
        sql.push_str(" ORDER BY ");
        sql.push_str(o);
    }
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query([])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let mut row = Vec::with_capacity(cols.len());
        for i in 0..cols.len() {
            row.push(value_of(r.get_ref(i)?));
        }
        out.push(row);
    }
    Ok((cols, out))
}

fn table_value(cols: Vec<String>, rows: Vec<Vec<Value>>) -> Value {
    let mut m = Map::new();
    m.insert(
        "columns".into(),
        Value::Array(cols.into_iter().map(Value::String).collect()),
    );
    m.insert(
        "rows".into(),
        Value::Array(rows.into_iter().map(Value::Array).collect()),
    );
    Value::Object(m)
}

/// Relabel negative `id`s: sorted descending they become -1, -2, -3, ...;
/// then sort rows by id (integers first, ascending).
fn relabel_negative_ids(cols: &[String], rows: &mut [Vec<Value>]) {
    let Some(i) = cols.iter().position(|c| c == "id") else {
        return;
    };
    let negs: BTreeSet<i64> = rows
        .iter()
        .filter_map(|r| r[i].as_i64())
        .filter(|&v| v < 0)
        .collect();
    let mapping: HashMap<i64, i64> = negs
        .iter()
        .rev()
        .enumerate()
        .map(|(k, &old)| (old, -(k as i64) - 1))
        .collect();
    for r in rows.iter_mut() {
        if let Some(new) = r[i].as_i64().and_then(|v| mapping.get(&v)) {
            r[i] = Value::from(*new);
        }
    }
    rows.sort_by_key(|r| match r[i].as_i64() {
        Some(v) => (0, v),
        None => (1, 0),
    });
}

/// (device number, table-name suffix) of every `trace_entry_<digits>` table.
fn device_suffixes(tables: &BTreeSet<String>) -> Vec<(i64, String)> {
    let mut found: Vec<(i64, String)> = tables
        .iter()
        .filter_map(|t| {
            let s = t.strip_prefix("trace_entry_")?;
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some((s.parse().ok()?, s.to_string()))
        })
        .collect();
    found.sort();
    found
}

fn is_scalar(v: &Value) -> bool {
    !matches!(v, Value::Array(_) | Value::Object(_))
}

/// Print a JSON value the canonical way: 1-space indentation, objects one key
/// per line, arrays of scalars on one line as `[a, b, c]`, trailing newline.
pub fn render(v: &Value) -> String {
    let mut out = String::new();
    render_into(v, 0, &mut out);
    out.push('\n');
    out
}

fn render_into(v: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent + 1);
    match v {
        Value::Object(m) if m.is_empty() => out.push_str("{}"),
        Value::Object(m) => {
            out.push_str("{\n");
            let n = m.len();
            for (k, (key, item)) in m.iter().enumerate() {
                out.push_str(&pad);
                out.push_str(&serde_json::to_string(key).expect("string"));
                out.push_str(": ");
                render_into(item, indent + 1, out);
                out.push_str(if k + 1 < n { ",\n" } else { "\n" });
            }
            out.push_str(&" ".repeat(indent));
            out.push('}');
        }
        Value::Array(a) if a.iter().all(is_scalar) => {
            out.push('[');
            for (k, x) in a.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                out.push_str(&serde_json::to_string(x).expect("scalar"));
            }
            out.push(']');
        }
        Value::Array(a) => {
            out.push_str("[\n");
            let n = a.len();
            for (k, item) in a.iter().enumerate() {
                out.push_str(&pad);
                render_into(item, indent + 1, out);
                out.push_str(if k + 1 < n { ",\n" } else { "\n" });
            }
            out.push_str(&" ".repeat(indent));
            out.push(']');
        }
        scalar => out.push_str(&serde_json::to_string(scalar).expect("scalar")),
    }
}

/// The keys of a JSON object in document order: what a test compares against a contract's
/// key order. Panics where `object` is not an object.
pub fn object_keys(object: &Value) -> Vec<&str> {
    object
        .as_object()
        .expect("a JSON object")
        .keys()
        .map(String::as_str)
        .collect()
}

/// The string `field` of every element of a JSON array, in order (column names, statuses,
/// paths of a listing). Panics where `array` is not an array or an element's `field` is not a
/// string.
pub fn string_fields<'a>(array: &'a Value, field: &str) -> Vec<&'a str> {
    array
        .as_array()
        .expect("a JSON array")
        .iter()
        .map(|element| element[field].as_str().expect("a string field"))
        .collect()
}

/// The first element of a JSON array whose `field` is `value` (a listing's entry by its name
/// or id). Panics where `array` is not an array or holds no such element.
pub fn element_where<'a>(array: &'a Value, field: &str, value: &str) -> &'a Value {
    array
        .as_array()
        .expect("a JSON array")
        .iter()
        .find(|element| element[field] == value)
        .unwrap_or_else(|| panic!("no element with {field} = {value:?} in {array}"))
}

/// The elements of a JSON array of strings, owned (command lines, column names). Panics
/// where `array` is not an array of strings.
pub fn strings_of(array: &Value) -> Vec<String> {
    array
        .as_array()
        .expect("a JSON array")
        .iter()
        .map(|element| element.as_str().expect("a string").to_owned())
        .collect()
}

/// Write a small SnapshotDB-like database exercising the corner cases of the
/// canonical form (negative ids, TEXT actions, REAL/BLOB/NULL values, dangling
/// callstack ids, non-contiguous frame positions, non-ASCII and control
/// characters). Used by the unit test and by `tests/oracle/check_twins.sh`
/// (`cargo run -p pt-snap-testkit --example canon -- --sample OUT.db`).
pub fn write_sample_db(path: impl AsRef<Path>) -> Result<(), Error> {
    let path = path.as_ref();
    if path.exists() {
        std::fs::remove_file(path).map_err(|e| {
            Error::ToSqlConversionFailure(Box::new(e)) // surface I/O errors as rusqlite errors
        })?;
    }
    let conn = Connection::open(path)?;
    conn.execute_batch(SAMPLE_SQL)
}

const SAMPLE_SQL: &str = r#"
CREATE TABLE trace_entry_0 (`id` INTEGER PRIMARY KEY, `action` INTEGER, `address` INTEGER, `size` INTEGER, `stream` INTEGER, `allocated` INTEGER, `active` INTEGER, `reserved` INTEGER, `callstackId` INTEGER);
CREATE TABLE block_0 (`id` INTEGER PRIMARY KEY, `address` INTEGER, `size` INTEGER, `requestedSize` INTEGER, `state` INTEGER DEFAULT 99, `allocEventId` INTEGER, `freeEventId` INTEGER);
CREATE TABLE trace_entry_2 (`id` INTEGER PRIMARY KEY, `action` INTEGER, `address` INTEGER, `size` INTEGER, `stream` INTEGER, `allocated` INTEGER, `active` INTEGER, `reserved` INTEGER, `callstackId` INTEGER);
CREATE TABLE block_2 (`id` INTEGER PRIMARY KEY, `address` INTEGER, `size` INTEGER, `requestedSize` INTEGER, `state` INTEGER DEFAULT 99, `allocEventId` INTEGER, `freeEventId` INTEGER);
CREATE TABLE trace_entry_x (`id` INTEGER PRIMARY KEY);
CREATE TABLE callstack (`id` INTEGER PRIMARY KEY, `callstack` TEXT);
CREATE TABLE frame (`id` INTEGER PRIMARY KEY, `filename` TEXT NOT NULL, `line` INTEGER NOT NULL, `name` TEXT NOT NULL);
CREATE TABLE callstack_frame (`callstackId` INTEGER NOT NULL, `position` INTEGER NOT NULL, `frameId` INTEGER NOT NULL);
CREATE TABLE callstack_frame_manifest (`callstackId` INTEGER PRIMARY KEY, `frameCount` INTEGER NOT NULL);
CREATE TABLE dictionary (`table` TEXT, `column` TEXT, `key` TEXT, `value` TEXT);
CREATE TABLE pt_snap_metadata (
                        id INTEGER PRIMARY KEY CHECK (id = 1),
                        metadata_schema_version INTEGER NOT NULL,
                        import_format_version INTEGER NOT NULL,
                        source_sha256 TEXT NOT NULL,
                        source_size INTEGER NOT NULL,
                        source_name TEXT NOT NULL,
                        requested_device INTEGER,
                        importer_name TEXT NOT NULL,
                        importer_version TEXT NOT NULL,
                        completed_at TEXT NOT NULL
                    );
CREATE INDEX idx_trace_entry_0_allocated ON trace_entry_0 (allocated);
CREATE UNIQUE INDEX idx_callstack_frame_position ON callstack_frame (callstackId, position);
CREATE TABLE extra (`k` TEXT UNIQUE);
INSERT INTO dictionary VALUES ('trace_entry_0', 'action', '4', 'alloc'), ('block_0', 'state', '-1', 'inactive'), ('trace_entry_0', 'action', '0', 'segment_map');
INSERT INTO pt_snap_metadata VALUES (1, 1, 3, 'ab', 10, 'x.pkl', NULL, 'pt-snap-cli', '0.4.1', '2026-01-01T00:00:00+00:00');
INSERT INTO callstack VALUES (0, ''), (1, 'a.py:1 f' || char(10) || 'b.py:2 g'), (2, 'ünïcødé "q" \ t' || char(9) || char(1) || char(127)), (3, NULL), (7, 'a.py:1 f');
INSERT INTO frame VALUES (10, 'b.py', 2, 'g'), (11, 'a.py', 1, 'f'), (12, 'ünï.py', 3, 'h'), (13, 'orphan.py', 4, 'o');
INSERT INTO callstack_frame VALUES (1, 1, 11), (1, 0, 10), (2, 0, 12), (2, 2, 11), (7, 0, 11), (9, 0, 10);
INSERT INTO callstack_frame_manifest VALUES (0, 0), (1, 2), (2, 2), (7, 1);
INSERT INTO trace_entry_0 VALUES
  (-7, 2, 4096, 2048, 1, 0, 0, 2048, 0),
  (-3, 0, 8192, 4096, 1, 0, 0, 6144, 1),
  (0, 4, 4096, 512, 1, 512, 512, 6144, 1),
  (1, 'free', 4096, 512, 1, 0, 0, 6144, 2),
  (2, 'snapshot', 0, 0, 1, 0, 0, 6144, NULL),
  (3, 8, -1, 1.5, 1, 0, 0, 6144, 99),
  (4, 4, X'00ff', 256, 1, 256, 256, 6144, 3),
  (5, '4', 9223372036854775807, -9223372036854775808, 1, 0, 0, 0, 7);
INSERT INTO block_0 VALUES (-9, 4096, 512, 512, 1, -1, -1), (-4, 4608, 256, 256, 1, -1, 1), (0, 4096, 512, 512, 1, 0, 1);
INSERT INTO trace_entry_2 VALUES (-2, 2, 1, 2, 3, 4, 5, 6, 0);
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn slices_hand_out_every_byte_in_bounded_reads() {
        let data: Vec<u8> = (0..=255).collect();
        let mut r = ShortReads::new(&data, 7);
        let mut buf = [0u8; 100];
        assert_eq!(r.read(&mut buf).unwrap(), 7);
        let mut rest = Vec::new();
        r.read_to_end(&mut rest).unwrap();
        assert_eq!([&buf[..7], &rest[..]].concat(), data);
    }
}
