//! What opening a file does. A `.db` is opened as it is, read-only. A snapshot is decoded
//! as it streams in and imported (strictly, or leniently on the user's offer), its replay's
//! preview posted as each device's replay ends, before its rows are written.
//!
//! Where the browser has OPFS, the database is written there (`pt-snap-opfs`), keyed by the
//! file's SHA-256: a file whose size matches a cached import is hashed first and, if it is
//! the same file, its database reopened instead of imported. A file with the name, size
//! and modification time of one import is reopened before it is hashed, and hashed after
//! (`FromWorker::SourceChecked`): dropping the same big file again takes well under a second
//! instead of its hashing's seconds. A finished import lets go of its database
//! (`FromWorker::Stored`) and the page reopens it in a fresh worker, so the import's memory
//! (the decoded snapshot, at its peak; a wasm heap never shrinks) goes away with this
//! worker. Without OPFS the database stays in this worker's memory.

#![cfg(target_arch = "wasm32")]

use pt_snap_engine::preview::device_preview;
use pt_snap_engine::{Engine, Failure, FromWorker, Origin, Preview, Progress, Storage};
use pt_snap_import::failure::backend;
use pt_snap_import::{ImportRequest, Indexes, ReplayMode, Stage};
use pt_snap_opfs::{Access, Entry, Pool};

use crate::file_reader::{sha256_of, FileChunks};
use crate::messages::{post, POOL};
use crate::source::Source;

/// The page cache of a database read from OPFS, in KiB: 16 times SQLite's default. A
/// page read past it is a `read` on a sync access handle, from the OS's cache; at 128 MiB
/// the views of a 109 MB file held ~50 MiB of pages in the worker for nothing faster.
const READ_CACHE_KIB: u32 = 32 * 1024;

/// What opening a file ends in.
pub(crate) enum Outcome {
    /// The database, open here.
    Open(Box<Engine>),
    /// A cached database reopened for `file` by its name, size and time: open here, and
    /// shown while `file` is hashed to check that it is the one imported (`sha256`).
    OpenUnchecked {
        engine: Box<Engine>,
        file: Source,
        sha256: String,
    },
    /// The database, complete in OPFS and let go of (see the module's note).
    Stored {
        sha256: String,
        warnings: Vec<String>,
    },
    /// The file on screen, dropped again.
    AlreadyOpen,
}

/// Paces progress messages to a few a second: each one redraws the page's status strip, and
/// on two cores that drawing came out of the import's own time (a 109 MB file decoded with
/// a message per 1% reached the peaks ~0.15 s later than with one in ten).
#[derive(Default)]
struct Ticker {
    last_ms: Option<f64>,
}

impl Ticker {
    const EVERY_MS: f64 = 100.0;

    /// Whether a message may go now; if so, the next waits [`Ticker::EVERY_MS`].
    fn due(&mut self) -> bool {
        let now = js_sys::Date::now();
        if self.last_ms.is_some_and(|last| now - last < Self::EVERY_MS) {
            return false;
        }
        self.last_ms = Some(now);
        true
    }
}

/// Opens a cached database by its source's SHA-256: writable for the indexes its import
/// deferred, query_only for everything else (the engine's doing).
pub(crate) async fn reopen(
    sha256: &str,
    warnings: Vec<String>,
    cache_hit: bool,
    source_unchecked: bool,
) -> Result<Engine, Failure> {
    let entry = pt_snap_opfs::find(sha256)
        .await
        .map_err(storage)?
        .ok_or_else(|| storage("the cached database is gone (removed in another tab?)"))?;
    let pool = Pool::install(sha256).await.map_err(storage)?;
    // Writable for the indexes an import deferred ([`build_indexes_later`]); the engine
    // makes it query_only for everything else.
    let conn = pool.open(Access::Write).map_err(backend)?;
    // Each page read goes through a sync access handle: keep what the views read in
    // memory, up to a bound (SQLite's default is 2 MiB).
    conn.execute_batch(&format!("PRAGMA cache_size = -{}", READ_CACHE_KIB))
        .map_err(backend)?;
    let engine = Engine::from_connection(
        conn,
        Origin {
            name: entry.source_name,
            imported: true,
            db_bytes: entry.db_bytes,
            warnings,
            storage: Storage::Opfs,
            cache_hit,
            source_unchecked,
        },
    )?;
    POOL.with(|p| *p.borrow_mut() = Some(std::rc::Rc::new(pool)));
    Ok(engine)
}

/// The browser's storage failed: the import's code, and what went wrong.
pub(crate) fn storage(e: impl std::fmt::Display) -> Failure {
    backend(format!("the browser's file storage (OPFS): {e}"))
}

pub(crate) async fn open_db(file: &Source) -> Result<Engine, Failure> {
    let len = file.size() as usize;
    let reader = FileChunks::open(file.clone(), false).await?;
    Engine::from_image(
        reader,
        len,
        Origin {
            name: file.name(),
            imported: false,
            db_bytes: len as u64,
            warnings: Vec::new(),
            storage: Storage::Memory,
            cache_hit: false,
            source_unchecked: false,
        },
    )
}

pub(crate) async fn import(
    file: &Source,
    replay: ReplayMode,
    buckets: usize,
    shown_sha256: Option<String>,
    quick_match: bool,
) -> Result<Outcome, Failure> {
    let total = file.size();
    let mut opfs = pt_snap_opfs::available().await;
    // A cached import of a file this size: hash first, and reopen it if it is this one.
    let mut known_sha = None;
    if opfs {
        let candidates = pt_snap_opfs::find_by_size(total as u64)
            .await
            .unwrap_or_default();
        // The file imported before, by its name, size and modification time (what
        // make and rsync trust): shown at once, and hashed after, between the page's
        // questions (by the helper, beside them). The file on screen is hashed first
        // instead: its worker holds the entry; and so is a file that two imports share
        // the name, size and time of (one of them was not what its stat says).
        let mut same_stat = candidates.iter().filter(|e| {
            e.source_name == file.name() && e.source_last_modified == file.last_modified()
        });
        let same_stat = match (same_stat.next(), same_stat.next()) {
            (Some(e), None) if shown_sha256.as_deref() != Some(e.sha256.as_str()) => Some(e),
            _ => None,
        };
        if let Some(entry) = same_stat.filter(|_| quick_match) {
            // A database held by another tab's worker, or of the other replay mode,
            // is left to the hash-first path below.
            if let Reuse::Fits(engine) = reuse(&entry.sha256, replay, true).await? {
                return Ok(Outcome::OpenUnchecked {
                    engine,
                    file: file.clone(),
                    sha256: entry.sha256.clone(),
                });
            }
        }
        if !candidates.is_empty() {
            post(&FromWorker::Progress(Progress::Hashing {
                bytes: None,
                total,
            }));
            let sha = sha256_of(file, Some(total)).await?;
            if shown_sha256.as_deref() == Some(sha.as_str()) {
                return Ok(Outcome::AlreadyOpen);
            }
            if candidates.iter().any(|e| e.sha256 == sha) {
                match reuse(&sha, replay, false).await? {
                    Reuse::Fits(engine) => return Ok(Outcome::Open(engine)),
                    Reuse::OtherMode => {}
                    // It is imported again here, in memory.
                    Reuse::Held => opfs = false,
                }
            }
            known_sha = Some(sha);
        }
    }
    // Hashed by the helper as it reads the file ahead, unless the lookup above has.
    let mut reader = FileChunks::open(file.clone(), known_sha.is_none()).await?;
    let mut last_posted = 0u64;
    let mut ticker = Ticker::default();
    let step = ((total / 100.0) as u64).max(256 * 1024);
    let snapshot = pt_snap_model::decode_sized(&mut reader, total as u64, &mut |p| {
        if p.bytes_read >= last_posted + step && ticker.due() {
            last_posted = p.bytes_read;
            post(&FromWorker::Progress(Progress::Decoding {
                bytes: p.bytes_read as f64,
                total,
                events: p.events,
            }));
        }
    })
    .map_err(pt_snap_import::failure::decode)?;
    // The reader, and its helper, end here.
    let sha256 = match known_sha {
        Some(sha) => {
            drop(reader);
            sha
        }
        None => reader.sha256().await?,
    };
    // Another tab importing the same file holds its entry: this import stays in memory.
    let pool = match opfs {
        true => match Pool::install(&sha256).await {
            Ok(pool) => {
                // What a killed or refused import of this file left.
                pool.reset().await.map_err(storage)?;
                Some(pool)
            }
            Err(_) => None,
        },
        false => None,
    };
    let request = ImportRequest {
        device: None,
        source_sha256: sha256.clone(),
        source_size: total as u64,
        source_name: file.name(),
        completed_at: now_utc_iso(),
        replay,
        // In OPFS the page is shown the database before its indexes: the reopened
        // worker builds them between questions. In memory there is no reopen.
        indexes: if pool.is_some() {
            Indexes::Deferred
        } else {
            Indexes::WithRows
        },
    };
    let conn = match &pool {
        Some(pool) => pool.open(Access::Create),
        None => rusqlite::Connection::open_in_memory(),
    }
    .map_err(backend)?;
    let mut preview = Preview {
        name: file.name(),
        devices: Vec::new(),
        importing: snapshot
            .devices_with_events()
            .into_iter()
            .map(|d| d as i64)
            .collect(),
    };
    let mut last_done = 0usize;
    let summary = pt_snap_import::import_snapshot_observed(
        &snapshot,
        &conn,
        &request,
        &mut |s| match s {
            Stage::Replaying {
                device,
                done,
                total: of,
            } => {
                if done == 0 || (done >= last_done + (of / 50).max(1) && ticker.due()) || done == of
                {
                    last_done = done;
                    post(&FromWorker::Progress(Progress::Replaying {
                        device: device as i64,
                        done: done as u64,
                        of: of as u64,
                    }));
                }
            }
            Stage::Indexing => post(&FromWorker::Progress(Progress::Indexing)),
        },
        &mut |replayed| {
            preview.devices.push(device_preview(replayed, buckets));
            post(&FromWorker::Preview(preview.clone()));
            post(&FromWorker::Progress(Progress::Writing {
                device: replayed.device as i64,
            }));
        },
    )
    .map_err(Failure::from)?;
    drop(snapshot);
    let Some(pool) = pool else {
        let db_bytes = conn
            .query_row(
                "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map_err(backend)? as u64;
        return Engine::from_connection(
            conn,
            Origin {
                name: file.name(),
                imported: true,
                db_bytes,
                warnings: summary.warnings,
                storage: Storage::Memory,
                cache_hit: false,
                source_unchecked: false,
            },
        )
        .map(|e| Outcome::Open(Box::new(e)));
    };
    drop(conn);
    let entry = Entry {
        sha256: sha256.clone(),
        source_name: file.name(),
        source_size: total as u64,
        source_last_modified: file.last_modified(),
        db_bytes: 0,
        imported_at: now_utc_iso(),
    };
    pool.commit(&entry).await.map_err(storage)?;
    pool.close().map_err(storage)?;
    Ok(Outcome::Stored {
        sha256,
        warnings: summary.warnings,
    })
}

/// What a cached database is to an import of the same file.
enum Reuse {
    /// It answers this import: open here.
    Fits(Box<Engine>),
    /// It was made by the other replay mode, so the file is imported again (its pool
    /// let go of here).
    OtherMode,
    /// Another tab's worker holds it.
    Held,
}

/// Reopens the cached database of `sha256` for an import of `replay`, as the CLI's reuse
/// decides: a lenient database answers a lenient import only, a strict one a strict
/// import only.
async fn reuse(sha256: &str, replay: ReplayMode, source_unchecked: bool) -> Result<Reuse, Failure> {
    let Ok(engine) = reopen(sha256, Vec::new(), true, source_unchecked).await else {
        return Ok(Reuse::Held);
    };
    if engine.overview().lenient_issues.is_some() == (replay == ReplayMode::Lenient) {
        return Ok(Reuse::Fits(Box::new(engine)));
    }
    drop(engine);
    if let Some(pool) = POOL.with(|p| p.borrow_mut().take()) {
        if let Ok(pool) = std::rc::Rc::try_unwrap(pool) {
            pool.close().map_err(storage)?;
        }
    }
    Ok(Reuse::OtherMode)
}

/// Now, in the metadata's spelling (the contract's; JS clocks stop at milliseconds).
fn now_utc_iso() -> String {
    let ms = js_sys::Date::now() as i64;
    pt_snap_contract::python::isoformat_utc(
        ms.div_euclid(1000),
        (ms.rem_euclid(1000) * 1000) as u32,
    )
}
