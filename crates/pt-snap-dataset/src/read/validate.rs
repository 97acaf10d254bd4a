//! Full validation of a dataset before any query reads it (spec §10.4): canonical paths,
//! member inventory, no symlinks / SQLite sidecars / persistent WAL, member hashes, shard
//! schemas, event and block identities; then the dataset fingerprint.
//!
//! The reference repeats all of it on every CLI call (7–10 s for a 1M-event dataset, its
//! bug 15). We keep a [`ValidationCache`] keyed by each file's size, mtime, ctime and inode:
//! a second call re-checks the inventory, sidecars and the manifest bytes, but neither
//! re-hashes unchanged shards nor re-reads their rows.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use pt_snap_db::rusqlite::{Connection, OpenFlags};
use pt_snap_db::schema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::hash::sha256_file;
use crate::manifest::{self, ContractError, Manifest, Rule, ValidManifest};
use pt_snap_query::QueryError;

const TRACE_V1: [(&str, &str); 9] = [
    ("id", "INTEGER"),
    ("action", "INTEGER"),
    ("address", "INTEGER"),
    ("size", "INTEGER"),
    ("stream", "INTEGER"),
    ("allocated", "INTEGER"),
    ("active", "INTEGER"),
    ("reserved", "INTEGER"),
    ("callstack", "TEXT"),
];
const BLOCK: [(&str, &str); 7] = [
    ("id", "INTEGER"),
    ("address", "INTEGER"),
    ("size", "INTEGER"),
    ("requestedSize", "INTEGER"),
    ("state", "INTEGER"),
    ("allocEventId", "INTEGER"),
    ("freeEventId", "INTEGER"),
];
const DICTIONARY: [(&str, &str); 4] = [
    ("table", "TEXT"),
    ("column", "TEXT"),
    ("key", "TEXT"),
    ("value", "TEXT"),
];

/// A validated dataset.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// The dataset directory (absolute, canonical).
    pub root: PathBuf,
    pub manifest: ValidManifest,
    /// SHA-256 over the manifest's hash and every member's name and hash.
    pub fingerprint: String,
    pub real_event_count: i64,
    pub boundary_event_count: i64,
    /// The full validation was skipped thanks to the cache.
    pub from_cache: bool,
}

/// Whether the reference treats `path` as a dataset: a directory, or a file named
/// `manifest.json` (existing or not).
pub fn is_dataset_path(path: &Path) -> bool {
    path.is_dir() || path.file_name().is_some_and(|n| n == "manifest.json")
}

fn schema(msg: impl Into<String>) -> QueryError {
    QueryError::SchemaInvalid(msg.into())
}

fn invalid(e: ContractError) -> QueryError {
    QueryError::SchemaInvalid(format!("Invalid dataset: {e}"))
}

fn need(ok: bool, loc: &str, rule: Rule, detail: &str) -> Result<(), QueryError> {
    if ok {
        Ok(())
    } else {
        Err(invalid(ContractError::new(loc, rule, detail)))
    }
}

/// The dataset root of an absolute `path` (its directory, or the parent of `manifest.json`),
/// with the reference's canonical-path checks.
fn root_of(path: &Path) -> Result<PathBuf, QueryError> {
    let root = if path.is_dir() {
        path.to_path_buf()
    } else {
        path.parent().unwrap_or(Path::new("/")).to_path_buf()
    };
    let canonical = fs::canonicalize(&root).ok();
    if path.is_symlink() || canonical.as_deref() != Some(root.as_path()) {
        return Err(schema("Dataset must use canonical non-symlink paths."));
    }
    let manifest = root.join("manifest.json");
    if manifest.is_symlink() {
        return Err(schema("Dataset manifest must not be a symlink."));
    }
    if !manifest.is_file() {
        return Err(schema("Dataset manifest.json must be a regular file."));
    }
    Ok(root)
}

/// The reference's pre-open checks of one member: no symlink on its path below the root,
/// a regular canonical file, no live `-wal`/`-journal`/`-shm` sidecar, and (native only) no
/// persistent WAL mode in its header.
pub(crate) fn require_readonly_member(
    root: &Path,
    file: &str,
    immutable: bool,
) -> Result<(), QueryError> {
    let member = root.join(file);
    let mut partial = root.to_path_buf();
    for part in file.split('/') {
        partial.push(part);
        if partial.is_symlink() {
            return Err(schema(format!(
                "Dataset member must not use symlink paths: {}",
                member.display()
            )));
        }
    }
    if fs::canonicalize(&member).ok().as_deref() != Some(member.as_path()) || !member.is_file() {
        return Err(schema(format!(
            "Dataset member is missing or not a canonical file: {}",
            member.display()
        )));
    }
    for suffix in ["-wal", "-journal", "-shm"] {
        let mut side = member.clone().into_os_string();
        side.push(suffix);
        let side = PathBuf::from(side);
        if side.exists() || side.is_symlink() {
            return Err(schema(format!(
                "Dataset member has a live SQLite sidecar: {}",
                member.display()
            )));
        }
    }
    if !immutable {
        let mut header = [0u8; 20];
        let n = fs::File::open(&member)
            .and_then(|mut f| f.read(&mut header))
            .map_err(|e| schema(format!("Invalid dataset: {file}: read: {e}")))?;
        if n >= 20 && header.starts_with(pt_snap_db::SQLITE_HEADER) && header[18..20].contains(&2) {
            return Err(schema(format!(
                "Dataset member uses persistent WAL mode: {}",
                member.display()
            )));
        }
    }
    Ok(())
}

/// A file's identity for the cache: any write changes size, mtime or ctime (and ctime cannot
/// be set back by a user), a replacement changes the inode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    ino: u64,
    dev: u64,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let m = fs::metadata(path).ok()?;
    Some(Stamp {
        size: m.size(),
        mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        ctime_ns: i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
        ino: m.ino(),
        dev: m.dev(),
    })
}

/// Bumped when validation learns a new check, so that datasets vouched for without it are
/// validated again (entries without the field read as 0).
const VALIDATION_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct CacheEntry {
    #[serde(default)]
    validation_version: u32,
    manifest_sha256: String,
    members: Vec<(String, Stamp, String)>,
    fingerprint: String,
    real_event_count: i64,
    boundary_event_count: i64,
}

/// Verified validations of datasets, persisted as one JSON file (the CLI keeps it beside
/// the user config). Only complete successful validations are recorded.
#[derive(Debug, Default)]
pub struct ValidationCache {
    path: Option<PathBuf>,
    entries: HashMap<String, CacheEntry>,
}

/// At most this many datasets are remembered; the oldest entries are dropped first.
const CACHE_LIMIT: usize = 64;

impl ValidationCache {
    /// A cache backed by `path` (missing or unreadable files start empty).
    pub fn at(path: PathBuf) -> Self {
        let entries = fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Vec<(String, CacheEntry)>>(&b).ok())
            .map(|v| v.into_iter().collect())
            .unwrap_or_default();
        Self {
            path: Some(path),
            entries,
        }
    }

    /// A cache that forgets everything (full validation on every open).
    pub fn disabled() -> Self {
        Self::default()
    }

    fn store(&mut self, root: &Path, entry: CacheEntry) {
        let Some(path) = &self.path else { return };
        self.entries.insert(root.display().to_string(), entry);
        while self.entries.len() > CACHE_LIMIT {
            let Some(k) = self.entries.keys().next().cloned() else {
                break;
            };
            self.entries.remove(&k);
        }
        let list: Vec<(&String, &CacheEntry)> = self.entries.iter().collect();
        // A cache that cannot be written only costs time on the next call.
        if let Some(dir) = path.parent() {
            let _ = fs::create_dir_all(dir);
        }
        let _ = pt_snap_contract::publish::write_file(
            path,
            &serde_json::to_vec(&list).unwrap_or_default(),
            0o666,
        );
    }
}

impl Dataset {
    /// Resolves and fully validates the dataset at `path` (absolute; a directory or its
    /// `manifest.json`). `Ok(None)`: not a dataset path (a standalone database).
    pub fn open(path: &Path, cache: &mut ValidationCache) -> Result<Option<Dataset>, QueryError> {
        if !is_dataset_path(path) {
            return Ok(None);
        }
        let root = root_of(path)?;
        let manifest_path = root.join("manifest.json");
        let bytes = fs::read(&manifest_path).map_err(|e| {
            invalid(ContractError::new(
                "manifest.json",
                Rule::Read,
                e.to_string(),
            ))
        })?;
        let manifest_sha = pt_snap_contract::python::hex(&Sha256::digest(&bytes));
        let manifest = manifest::parse(&bytes).map_err(invalid)?;
        let native = manifest.is_native();
        if native {
            require_native_members(&root, &manifest)?;
        }
        // Preflight every member before the first SQLite open.
        let mut stamps = Vec::new();
        for d in &manifest.devices {
            for s in &d.slices {
                need(
                    !root.join(&s.file).is_symlink() && root.join(&s.file).is_file(),
                    &s.file,
                    Rule::Missing,
                    "artifact file missing",
                )?;
                require_readonly_member(&root, &s.file, !native)?;
                stamps.push((s.file.clone(), stamp(&root.join(&s.file))));
            }
        }
        let key = root.display().to_string();
        if let Some(hit) = cache.entries.get(&key) {
            let same = hit.validation_version == VALIDATION_VERSION
                && hit.manifest_sha256 == manifest_sha
                && hit.members.len() == stamps.len()
                && hit
                    .members
                    .iter()
                    .zip(&stamps)
                    .all(|((f, st, _), (g, now))| f == g && Some(st) == now.as_ref());
            if same {
                return Ok(Some(Dataset {
                    root,
                    manifest,
                    fingerprint: hit.fingerprint.clone(),
                    real_event_count: hit.real_event_count,
                    boundary_event_count: hit.boundary_event_count,
                    from_cache: true,
                }));
            }
        }
        let mut hashes = Vec::new();
        for d in &manifest.devices {
            for s in &d.slices {
                let h = sha256_file(&root.join(&s.file))
                    .map_err(|e| invalid(ContractError::new(&s.file, Rule::Read, e.to_string())))?;
                if let Some(want) = &s.sha256 {
                    need(*want == h, &s.file, Rule::Hash, "member content changed")?;
                }
                hashes.push(h);
            }
        }
        let boundary = if native {
            validate_native_shards(&root, &manifest)?
        } else {
            validate_compatibility_shards(&root, &manifest)?
        };
        // The bytes validated are the bytes hashed: re-check both ends.
        let mut fp = Sha256::new();
        fp.update(manifest_sha.as_bytes());
        let mut members = Vec::new();
        let mut i = 0;
        for d in &manifest.devices {
            for s in &d.slices {
                let now = stamp(&root.join(&s.file));
                if now != stamps[i].1 {
                    return Err(schema("Dataset members changed during inspection; retry."));
                }
                fp.update(s.file.as_bytes());
                fp.update(hashes[i].as_bytes());
                if let Some(st) = now {
                    members.push((s.file.clone(), st, hashes[i].clone()));
                }
                i += 1;
            }
        }
        if fs::read(&manifest_path).ok().as_deref() != Some(bytes.as_slice()) {
            return Err(schema("Dataset manifest changed during inspection; retry."));
        }
        let fingerprint = pt_snap_contract::python::hex(&fp.finalize());
        let real: i64 = manifest.devices.iter().map(|d| d.event_count).sum();
        if members.len() == i {
            cache.store(
                &root,
                CacheEntry {
                    validation_version: VALIDATION_VERSION,
                    manifest_sha256: manifest_sha,
                    members,
                    fingerprint: fingerprint.clone(),
                    real_event_count: real,
                    boundary_event_count: boundary,
                },
            );
        }
        Ok(Some(Dataset {
            root,
            manifest,
            fingerprint,
            real_event_count: real,
            boundary_event_count: boundary,
            from_cache: false,
        }))
    }
}

fn names(dir: &Path) -> Result<BTreeSet<String>, QueryError> {
    let rd = fs::read_dir(dir).map_err(|e| {
        invalid(ContractError::new(
            dir.display().to_string(),
            Rule::Read,
            e.to_string(),
        ))
    })?;
    Ok(rd
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect())
}

/// A native dataset owns its directory: exactly the manifest and its device directories,
/// each holding exactly its shards.
fn require_native_members(root: &Path, m: &ValidManifest) -> Result<(), QueryError> {
    let mut expected: BTreeSet<String> = ["manifest.json".to_owned()].into();
    expected.extend(m.devices.iter().map(|d| format!("device_{}", d.device_id)));
    need(
        names(root)? == expected,
        "dataset",
        Rule::Members,
        "unexpected/missing dataset member",
    )?;
    for d in &m.devices {
        let dir = root.join(format!("device_{}", d.device_id));
        let loc = dir.display().to_string();
        need(
            !dir.is_symlink() && dir.is_dir(),
            &loc,
            Rule::Path,
            "unsafe device directory",
        )?;
        let want: BTreeSet<String> = d
            .slices
            .iter()
            .map(|s| s.file.rsplit('/').next().unwrap_or("").to_owned())
            .collect();
        need(
            names(&dir)? == want,
            &loc,
            Rule::Members,
            "unexpected/missing shard",
        )?;
    }
    Ok(())
}

fn open_shard(root: &Path, file: &str, immutable: bool) -> Result<Connection, QueryError> {
    let path = root.join(file);
    let uri = format!(
        "file:{}?mode=ro{}",
        path.display(),
        if immutable { "&immutable=1" } else { "" }
    );
    let conn = Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
    )
    .map_err(|e| invalid(ContractError::new(file, Rule::Sqlite, e.to_string())))?;
    let _ = conn.execute_batch("PRAGMA query_only=ON");
    Ok(conn)
}

fn sql_err(file: &str) -> impl Fn(pt_snap_db::rusqlite::Error) -> QueryError + '_ {
    move |e| invalid(ContractError::new(file, Rule::Sqlite, e.to_string()))
}

fn check_schema(
    conn: &Connection,
    table: &str,
    columns: &[(&str, &str)],
    file: &str,
) -> Result<(), QueryError> {
    need(
        object_type(conn, table).as_deref() == Some("table"),
        file,
        Rule::Table,
        &format!("{table} must be an actual table, not a view"),
    )?;
    let rows = table_info(conn, table, file)?;
    let same = rows.len() == columns.len()
        && rows
            .iter()
            .zip(columns)
            .all(|((n, t, _), (cn, ct))| n == cn && t.to_uppercase() == *ct);
    need(
        same,
        file,
        Rule::Columns,
        &format!("{table} column order/types differ from base contract"),
    )?;
    if table != "dictionary" {
        need(
            rows.iter()
                .enumerate()
                .all(|(i, r)| r.2 == i64::from(i == 0)),
            file,
            Rule::PrimaryKey,
            &format!("{table}.id must be the sole primary key"),
        )?;
    }
    Ok(())
}

/// What `name` is in `sqlite_master` (`table`, `view`, …), if anything.
fn object_type(conn: &Connection, name: &str) -> Option<String> {
    conn.query_row("SELECT type FROM sqlite_master WHERE name=?", [name], |r| {
        r.get(0)
    })
    .ok()
}

/// `(name, declared type, primary-key position)` of each column of `table`, in order.
fn table_info(
    conn: &Connection,
    table: &str,
    file: &str,
) -> Result<Vec<(String, String, i64)>, QueryError> {
    let mut stmt = conn
        .prepare(&format!("PRAGMA table_info(\"{table}\")"))
        .map_err(sql_err(file))?;
    let rows = stmt
        .query_map([], |r| Ok((r.get(1)?, r.get::<_, String>(2)?, r.get(5)?)))
        .map_err(sql_err(file))?
        .collect::<Result<_, _>>()
        .map_err(sql_err(file))?;
    Ok(rows)
}

/// The first column of every row `sql` returns.
fn first_column<T: pt_snap_db::rusqlite::types::FromSql, C: FromIterator<T>>(
    conn: &Connection,
    sql: &str,
    file: &str,
) -> Result<C, QueryError> {
    let mut stmt = conn.prepare(sql).map_err(sql_err(file))?;
    let column = stmt
        .query_map([], |r| r.get::<_, T>(0))
        .map_err(sql_err(file))?
        .collect::<Result<_, _>>()
        .map_err(sql_err(file))?;
    Ok(column)
}

/// The check every SnapshotDB reader makes ([`pt_snap_db::check_format_objects`]: format
/// objects are plain tables with no generated column and no trigger), after the reference's
/// own shape checks above so that their messages stay first. `PRAGMA table_info`, which those
/// use, does not list generated columns.
fn check_format_objects(conn: &Connection, file: &str) -> Result<(), QueryError> {
    pt_snap_db::check_format_objects(conn)
        .map_err(|m| invalid(ContractError::new(file, Rule::Schema, m)))
}

fn table_names(conn: &Connection, file: &str) -> Result<BTreeSet<String>, QueryError> {
    first_column(
        conn,
        "SELECT name FROM sqlite_master WHERE type IN ('table','view')",
        file,
    )
}

/// `trace_entry_<device>` and `block_<device>`: the two tables of a device's shard.
fn device_table_names(device: i64) -> (String, String) {
    (format!("trace_entry_{device}"), format!("block_{device}"))
}

fn device_tables(names: &BTreeSet<String>, device: i64) -> bool {
    let relevant: BTreeSet<&String> = names
        .iter()
        .filter(|n| {
            let l = n.to_lowercase();
            l.starts_with("trace_entry_") || l.starts_with("block_")
        })
        .collect();
    let (trace, block) = device_table_names(device);
    relevant.len() == 2 && relevant.contains(&trace) && relevant.contains(&block)
}

/// Shard `file` of `device`, opened read-only (`immutable` for an msinsight export), with its
/// tables and views, which must be the device's two tables and no other device's (else
/// `device_tables`, worded `detail`: the two formats' readers word it differently).
fn open_device_shard(
    root: &Path,
    file: &str,
    device: i64,
    immutable: bool,
    detail: &str,
) -> Result<(Connection, BTreeSet<String>), QueryError> {
    let conn = open_shard(root, file, immutable)?;
    let tables = table_names(&conn, file)?;
    need(
        device_tables(&tables, device),
        file,
        Rule::DeviceTables,
        detail,
    )?;
    Ok((conn, tables))
}

fn check_dictionary(
    conn: &Connection,
    trace: &str,
    block: &str,
    with_oom: bool,
    file: &str,
    detail: &str,
) -> Result<(), QueryError> {
    // The single database's codes: a native v2 shard has all nine actions, a v1 (msinsight)
    // shard the eight without `oom`.
    let rows = |codes: &[(i64, &str)]| -> Vec<(String, String)> {
        codes
            .iter()
            .filter(|(_, name)| with_oom || *name != "oom")
            .map(|(code, name)| (code.to_string(), (*name).to_owned()))
            .collect()
    };
    let actions = rows(&schema::ACTIONS);
    let states = rows(&schema::BLOCK_STATES);
    for (table, column, want) in [(trace, "action", actions), (block, "state", states)] {
        let mut stmt = conn
            .prepare("SELECT \"key\", \"value\" FROM dictionary WHERE \"table\"=? AND \"column\"=?")
            .map_err(sql_err(file))?;
        let rows: Vec<(Option<String>, Option<String>)> = stmt
            .query_map([table, column], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(sql_err(file))?
            .collect::<Result<_, _>>()
            .map_err(sql_err(file))?;
        let got: BTreeSet<(String, String)> = rows
            .iter()
            .filter_map(|(k, v)| Some((k.clone()?, v.clone()?)))
            .collect();
        let want: BTreeSet<(String, String)> = want.into_iter().collect();
        need(
            rows.len() == want.len() && got == want,
            file,
            Rule::Dictionary,
            &if detail.is_empty() {
                format!("invalid {table}.{column} mapping")
            } else {
                detail.to_owned()
            },
        )?;
    }
    Ok(())
}

fn integer_row(conn: &Connection, sql: &str, file: &str) -> Result<Option<i64>, QueryError> {
    use pt_snap_db::rusqlite::OptionalExtension;
    conn.query_row(sql, [], |r| r.get::<_, Option<i64>>(0))
        .optional()
        .map(Option::flatten)
        .map_err(sql_err(file))
}

/// The rule that `sql`, a search for an offending row's id, finds none.
fn no_row(
    conn: &Connection,
    sql: &str,
    file: &str,
    rule: Rule,
    detail: &str,
) -> Result<(), QueryError> {
    need(integer_row(conn, sql, file)?.is_none(), file, rule, detail)
}

/// An SQL condition true when any of the eight numeric trace columns is not an integer.
fn non_integer_trace_scalars() -> String {
    TRACE_V1[..8]
        .iter()
        .map(|(n, _)| format!("typeof({n})!='integer'"))
        .collect::<Vec<_>>()
        .join(" OR ")
}

/// The seven `block_<d>` columns of a row whose column 7 is their `typeof`s concatenated,
/// which must all be integers (the rule `loc`, `code`, `detail` of the format's reader).
fn block_columns(
    r: &pt_snap_db::rusqlite::Row<'_>,
    file: &str,
    (loc, rule, detail): (&str, Rule, &str),
) -> Result<[i64; 7], QueryError> {
    let types: String = r.get(7).map_err(sql_err(file))?;
    need(types == "integer".repeat(7), loc, rule, detail)?;
    let mut v = [0i64; 7];
    for (i, x) in v.iter_mut().enumerate() {
        *x = r.get(i).map_err(sql_err(file))?;
    }
    Ok(v)
}

/// How many boundary events (negative ids) the shard's trace table holds.
fn boundary_count(conn: &Connection, trace: &str, file: &str) -> Result<i64, QueryError> {
    let sql = format!("SELECT COUNT(*) FROM \"{trace}\" WHERE id<0");
    Ok(integer_row(conn, &sql, file)?.unwrap_or(0))
}

/// `(count, min, max)` of real ids.
fn real_span(
    conn: &Connection,
    trace: &str,
    file: &str,
) -> Result<(i64, Option<i64>, Option<i64>), QueryError> {
    conn.query_row(
        &format!("SELECT COUNT(*), MIN(id), MAX(id) FROM \"{trace}\" WHERE id>=0"),
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .map_err(sql_err(file))
}

/// A lifecycle as every shard must agree on it: address, size, requested size, alloc and
/// free ids, stream, and the alloc and free callstack texts — hashed, since the texts repeat
/// per block and would hold gigabytes of a large dataset in memory.
type Signature = (
    i64,
    i64,
    i64,
    i64,
    i64,
    Option<i64>,
    Option<u64>,
    Option<u64>,
);

fn text_hash(t: Option<String>) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    t.map(|t| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        t.hash(&mut h);
        h.finish()
    })
}

fn validate_native_shards(root: &Path, m: &ValidManifest) -> Result<i64, QueryError> {
    let Manifest::Native(native) = &m.manifest else {
        unreachable!("native manifest")
    };
    let meta = manifest::validate_metadata(&native.metadata).map_err(invalid)?;
    let mut boundaries = 0;
    for d in &m.devices {
        let mut id_count = 0i64;
        let mut lifetimes: HashMap<i64, Signature> = HashMap::new();
        let (trace, block) = device_table_names(d.device_id);
        for s in &d.slices {
            let file = s.file.as_str();
            let (conn, _) =
                open_device_shard(root, file, d.device_id, false, "wrong device/table set")?;
            let mut trace_cols: Vec<(&str, &str)> = TRACE_V1[..8].to_vec();
            trace_cols.push(("callstackId", "INTEGER"));
            check_schema(&conn, &trace, &trace_cols, file)?;
            check_schema(&conn, &block, &BLOCK, file)?;
            check_schema(&conn, "dictionary", &DICTIONARY, file)?;
            check_schema(
                &conn,
                "callstack",
                &[("id", "INTEGER"), ("callstack", "TEXT")],
                file,
            )?;
            need(
                object_type(&conn, "pt_snap_block_reference").as_deref() == Some("table"),
                file,
                Rule::Extension,
                "finalized reference table required",
            )?;
            let refcols = table_info(&conn, "pt_snap_block_reference", file)?;
            let want = [
                ("blockId", "INTEGER", 1),
                ("stream", "INTEGER", 0),
                ("allocCallstack", "TEXT", 0),
                ("freeCallstack", "TEXT", 0),
            ];
            need(
                refcols.len() == 4
                    && refcols.iter().zip(want).all(|((n, t, p), (wn, wt, wp))| {
                        n == wn && t.to_uppercase() == wt && *p == wp
                    }),
                file,
                Rule::Extension,
                "invalid reference schema",
            )?;
            check_format_objects(&conn, file)?;
            // After the schema checks: `quick_check` computes every column of every row,
            // generated ones included, which is what they must rule out first.
            let qc: Vec<String> = first_column(&conn, "PRAGMA quick_check", file)?;
            need(qc == ["ok"], file, Rule::Sqlite, "integrity check failed")?;
            check_dictionary(
                &conn,
                &trace,
                &block,
                true,
                file,
                "invalid native dictionary",
            )?;
            let (count, low, high) = real_span(&conn, &trace, file)?;
            let positions = {
                let Manifest::Native(n) = &m.manifest else {
                    unreachable!()
                };
                let dev = n
                    .devices
                    .get(&d.device_id.to_string())
                    .expect("validated device");
                let ns = &dev.slices[s.index];
                ns.end_position - ns.start_position + 1
            };
            need(
                (count, low, high) == (positions, Some(s.start_event_id), Some(s.end_event_id)),
                file,
                Rule::EventIdentity,
                "real IDs/count differ from positions/ranges",
            )?;
            id_count += count;
            no_row(
                &conn,
                &format!(
                    "SELECT id FROM \"{trace}\" WHERE {} OR action NOT BETWEEN 0 AND 8 OR \
                     (id<0 AND action NOT IN (0,2)) OR size<0 OR allocated<0 OR active<0 OR \
                     reserved<0 OR typeof(callstackId)!='integer' OR callstackId NOT IN \
                     (SELECT id FROM callstack) LIMIT 1",
                    non_integer_trace_scalars()
                ),
                file,
                Rule::EventValues,
                "invalid native event/scalar/callstack",
            )?;
            no_row(
                &conn,
                "SELECT id FROM callstack WHERE typeof(callstack) NOT IN ('text','null') LIMIT 1",
                file,
                Rule::Callstack,
                "invalid text stack",
            )?;
            boundaries += boundary_count(&conn, &trace, file)?;
            no_row(
                &conn,
                &format!(
                    "SELECT b.id FROM \"{block}\" b WHERE NOT EXISTS (SELECT 1 FROM \
                     pt_snap_block_reference r WHERE r.blockId=b.id) UNION ALL SELECT r.blockId \
                     FROM pt_snap_block_reference r WHERE NOT EXISTS (SELECT 1 FROM \"{block}\" b \
                     WHERE b.id=r.blockId) LIMIT 1"
                ),
                file,
                Rule::Extension,
                "reference/block membership differs",
            )?;
            let mut st = conn
                .prepare(&format!(
                    "SELECT b.*, typeof(b.id)||typeof(b.address)||typeof(b.size)||\
                     typeof(b.requestedSize)||typeof(b.state)||typeof(b.allocEventId)||\
                     typeof(b.freeEventId), r.stream, typeof(r.stream), r.allocCallstack, \
                     typeof(r.allocCallstack), r.freeCallstack, typeof(r.freeCallstack) \
                     FROM \"{block}\" b JOIN pt_snap_block_reference r ON r.blockId=b.id"
                ))
                .map_err(sql_err(file))?;
            let mut rows = st.query([]).map_err(sql_err(file))?;
            while let Some(r) = rows.next().map_err(sql_err(file))? {
                let [bid, address, size, requested, state, alloc, free] = block_columns(
                    r,
                    file,
                    (file, Rule::BlockIdentity, "unfinalized/invalid block"),
                )?;
                need(
                    (-1..=1).contains(&state)
                        && size >= 0
                        && (0..=size).contains(&requested)
                        && ((alloc == -1 && bid < 0) || (alloc >= 0 && bid == alloc))
                        && (free == -1 || (free >= 0 && (alloc == -1 || free >= alloc))),
                    file,
                    Rule::BlockIdentity,
                    "unfinalized/invalid block",
                )?;
                let stream_type: String = r.get(9).map_err(sql_err(file))?;
                let at: String = r.get(11).map_err(sql_err(file))?;
                let ft: String = r.get(13).map_err(sql_err(file))?;
                need(
                    stream_type == "integer"
                        && (at == "text" || at == "null")
                        && (ft == "text" || ft == "null"),
                    file,
                    Rule::Extension,
                    "invalid reference values",
                )?;
                let sig: Signature = (
                    address,
                    size,
                    requested,
                    alloc,
                    free,
                    r.get(8).map_err(sql_err(file))?,
                    text_hash(r.get(10).map_err(sql_err(file))?),
                    text_hash(r.get(12).map_err(sql_err(file))?),
                );
                if let Some(old) = lifetimes.get(&bid) {
                    need(
                        *old == sig,
                        file,
                        Rule::BlockIdentity,
                        "conflicting finalized identity/reference",
                    )?;
                } else {
                    lifetimes.insert(bid, sig);
                }
            }
            drop(rows);
            drop(st);
            let member_meta = pt_snap_db::Metadata::read(&conn)
                .map_err(|e| invalid(ContractError::new(file, Rule::Metadata, e.to_string())))?;
            need(
                member_meta.as_ref() == Ok(&meta),
                file,
                Rule::Metadata,
                "member metadata differs from manifest",
            )?;
        }
        // Ids are disjoint per shard (manifest ranges), so the count is the set size.
        let in_scope = |v: i64| {
            v == -1
                || d.slices
                    .iter()
                    .any(|s| (s.start_event_id..=s.end_event_id).contains(&v))
        };
        need(
            id_count == d.event_count && lifetimes.values().all(|l| in_scope(l.3) && in_scope(l.4)),
            "devices",
            Rule::EventIdentity,
            "count/lifetime references not in original device scope",
        )?;
    }
    Ok(boundaries)
}

fn validate_compatibility_shards(root: &Path, m: &ValidManifest) -> Result<i64, QueryError> {
    let mut boundaries = 0;
    // (device, block id) → (address, size, requestedSize, allocEventId, freeEventId)
    type Identity = (i64, i64, i64, i64, i64);
    let mut identities: HashMap<(i64, i64), Identity> = HashMap::new();
    for d in &m.devices {
        let (trace, block) = device_table_names(d.device_id);
        for s in &d.slices {
            let file = s.file.as_str();
            let (conn, tables) =
                open_device_shard(root, file, d.device_id, true, "device/table set mismatch")?;
            need(
                !tables.iter().any(|t| t.to_lowercase() == "callstack"),
                file,
                Rule::Layout,
                "v1 must not contain native v2 callstack table",
            )?;
            check_schema(&conn, &trace, &TRACE_V1, file)?;
            check_schema(&conn, &block, &BLOCK, file)?;
            check_schema(&conn, "dictionary", &DICTIONARY, file)?;
            check_format_objects(&conn, file)?;
            check_dictionary(&conn, &trace, &block, false, file, "")?;
            let (count, low, high) = real_span(&conn, &trace, file)?;
            need(
                (count, low, high)
                    == (
                        s.end_event_id - s.start_event_id + 1,
                        Some(s.start_event_id),
                        Some(s.end_event_id),
                    ),
                file,
                Rule::EventIdentity,
                "real rows differ from declared contiguous interval",
            )?;
            no_row(
                &conn,
                &format!(
                    "SELECT id FROM \"{trace}\" WHERE action NOT BETWEEN 0 AND 7 OR action IS NULL \
                     OR typeof(action) != 'integer' OR (id<0 AND action NOT IN (0,2)) LIMIT 1"
                ),
                file,
                Rule::EventAction,
                "unknown action or invalid boundary event",
            )?;
            no_row(
                &conn,
                &format!(
                    "SELECT id FROM \"{trace}\" WHERE {} OR size<0 OR allocated<0 OR active<0 OR \
                     reserved<0 OR typeof(callstack) NOT IN ('text','null') LIMIT 1",
                    non_integer_trace_scalars()
                ),
                file,
                Rule::EventValues,
                "invalid scalar type or negative byte metric",
            )?;
            boundaries += boundary_count(&conn, &trace, file)?;
            let block_loc = format!("{file}.{block}");
            let mut st = conn
                .prepare(&format!(
                    "SELECT *, typeof(id)||typeof(address)||typeof(size)||typeof(requestedSize)||\
                     typeof(state)||typeof(allocEventId)||typeof(freeEventId) FROM \"{block}\""
                ))
                .map_err(sql_err(file))?;
            let mut rows = st.query([]).map_err(sql_err(file))?;
            while let Some(r) = rows.next().map_err(sql_err(file))? {
                let [bid, address, size, requested, state, alloc, free] = block_columns(
                    r,
                    file,
                    (&block_loc, Rule::Type, "expected integer (not boolean)"),
                )?;
                need(
                    (-1..=1).contains(&state) && size >= 0 && (0..=size).contains(&requested),
                    file,
                    Rule::Block,
                    "invalid state/size",
                )?;
                need(
                    (alloc == -1 && bid < 0)
                        || ((0..d.event_count).contains(&alloc) && bid == alloc),
                    file,
                    Rule::BlockIdentity,
                    "resolved ID must equal allocation; unresolved ID must be negative",
                )?;
                need(
                    free == -1
                        || ((0..d.event_count).contains(&free) && (alloc == -1 || free >= alloc)),
                    file,
                    Rule::Lifecycle,
                    "invalid free sentinel or lifecycle order",
                )?;
                let sig = (address, size, requested, alloc, free);
                match identities.get(&(d.device_id, bid)) {
                    Some(old) => need(
                        *old == sig,
                        file,
                        Rule::BlockIdentity,
                        "same cross-slice ID has conflicting identity/lifetime",
                    )?,
                    None => {
                        identities.insert((d.device_id, bid), sig);
                    }
                }
            }
        }
    }
    Ok(boundaries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::dataset;

    fn open(root: &Path, cache: &mut ValidationCache) -> Result<Dataset, QueryError> {
        Dataset::open(root, cache).map(|d| d.expect("a dataset path"))
    }

    fn schema_message(e: QueryError) -> String {
        match e {
            QueryError::SchemaInvalid(m) => m,
            other => panic!("not a schema error: {other:?}"),
        }
    }

    #[test]
    fn a_written_dataset_validates_with_a_stable_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dataset(dir.path())).unwrap();
        let first = open(&root, &mut ValidationCache::disabled()).unwrap();
        assert_eq!((first.real_event_count, first.from_cache), (2, false));
        // The manifest path names the same dataset.
        let again = open(
            &root.join("manifest.json"),
            &mut ValidationCache::disabled(),
        )
        .unwrap();
        assert_eq!(again.fingerprint, first.fingerprint);
        let database = Dataset::open(&root.join("x.db"), &mut ValidationCache::disabled());
        assert!(
            matches!(database, Ok(None)),
            "a file path is not a dataset path"
        );
    }

    #[test]
    fn a_member_with_other_bytes_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dataset(dir.path())).unwrap();
        let member = root.join("device_0/slice_00001.db");
        let mut bytes = fs::read(&member).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        fs::write(&member, bytes).unwrap();
        let message = schema_message(open(&root, &mut ValidationCache::disabled()).unwrap_err());
        assert!(message.starts_with("Invalid dataset:"), "{message}");
    }

    #[test]
    fn a_file_the_manifest_does_not_name_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dataset(dir.path())).unwrap();
        fs::write(root.join("device_0/notes.txt"), "mine").unwrap();
        schema_message(open(&root, &mut ValidationCache::disabled()).unwrap_err());
    }

    /// The cache skips the full validation only while every member is untouched.
    #[test]
    fn the_cache_is_used_until_a_member_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dataset(dir.path())).unwrap();
        let cache_file = dir.path().join("cache.json");
        let full = open(&root, &mut ValidationCache::at(cache_file.clone())).unwrap();
        let cached = open(&root, &mut ValidationCache::at(cache_file.clone())).unwrap();
        assert!(!full.from_cache && cached.from_cache);
        assert_eq!(cached.fingerprint, full.fingerprint);
        // Same bytes, new ctime: validated in full again. (File times tick at the kernel's
        // clock granularity, a few milliseconds: wait for the next tick.)
        std::thread::sleep(std::time::Duration::from_millis(50));
        let member = root.join("device_0/slice_00000.db");
        fs::write(&member, fs::read(&member).unwrap()).unwrap();
        let revalidated = open(&root, &mut ValidationCache::at(cache_file)).unwrap();
        assert!(!revalidated.from_cache);
    }
}
