//! The worker that holds one open file: it imports a snapshot (any shape) or opens a
//! SnapshotDB, then answers the page's questions until the page ends it. This file is the
//! edge only: messages in and out (`pt_snap_engine::protocol`, JSON text beside the `File`,
//! the cancel cell and the download `Blob`), the file read in slices, the clock. Every
//! answer comes from `pt_snap_engine::Engine`, which is tested natively.
//!
//! A helper worker (`www/read-worker.js`, [`Helper`]) hashes a file and, where the page is
//! cross-origin isolated, reads it for this worker too: it streams the file into shared
//! slots this worker copies each slice out of ([`Ring`]), so the file is read once.
//!
//! An import blocks this thread from the first byte to the open database, on purpose: the
//! page stops it by ending the worker, which no cooperative flag could do faster. The peaks
//! and the timeline are posted as each device's replay ends ([`FromWorker::Preview`]),
//! before its rows are written and the indexes built.
//!
//! Where the browser has OPFS, the database is written there (`pt-snap-opfs`), keyed by the
//! file's SHA-256: a file whose size matches a cached import is hashed first and, if it is
//! the same file, its database reopened instead of imported. A file with the name, size
//! and modification time of one import is reopened before it is hashed, and hashed after
//! ([`FromWorker::SourceChecked`]): dropping the same big file again takes well under a
//! second instead of its hashing's seconds. A finished import lets go of
//! its database ([`FromWorker::Stored`]) and the page reopens it in a fresh worker, so the
//! import's memory (the decoded snapshot, at its peak; a wasm heap never shrinks) goes away
//! with this worker. Without OPFS the database stays in this worker's memory.

#[cfg(not(target_arch = "wasm32"))]
fn main() {}

#[cfg(target_arch = "wasm32")]
fn main() {
    imp::start();
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use std::cell::RefCell;
    use std::io::{self, Read};

    use js_sys::{Atomics, Int32Array, Object, Promise, Reflect, SharedArrayBuffer, Uint8Array};
    use pt_snap_engine::preview::device_preview;
    use pt_snap_engine::protocol::{decode, encode};
    use pt_snap_engine::{
        Engine, ErrorCode, Failure, FromWorker, IndexesLeft, Origin, Preview, Progress, Stop,
        Storage, ToWorker,
    };
    use pt_snap_import::{ImportRequest, Indexes, ReplayMode, Stage};
    use pt_snap_model::{Slices, SLICE};
    use pt_snap_opfs::{Access, Entry, Pool};
    use wasm_bindgen::prelude::*;
    use wasm_bindgen_futures::JsFuture;
    use web_sys::{
        DedicatedWorkerGlobalScope, File, FileReaderSync, MessageChannel, MessageEvent, MessagePort,
    };

    // Linked for its host hooks (clock, randomness) that SQLite needs in a browser.
    use sqlite_wasm_rs as _;

    /// Bytes the helper hashes between two progress messages.
    const HASH_PROGRESS_STEP: f64 = (64 << 20) as f64;

    /// The page cache of a database read from OPFS, in KiB: 16 times SQLite's default. A
    /// page read past it is a `read` on a sync access handle, from the OS's cache; at 128 MiB
    /// the views of a 109 MB file held ~50 MiB of pages in the worker for nothing faster.
    const READ_CACHE_KIB: u32 = 32 * 1024;

    thread_local! {
        static ENGINE: RefCell<Option<Engine>> = const { RefCell::new(None) };
        /// The OPFS entry the engine's connection reads, kept open as long as it.
        static POOL: RefCell<Option<std::rc::Rc<Pool>>> = const { RefCell::new(None) };
        /// Set to 1 by the page to interrupt the running question (see `client.rs`).
        static CANCEL: RefCell<Option<Int32Array>> = const { RefCell::new(None) };
    }

    pub fn start() {
        console_error_panic_hook::set_once();
        let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
        let handler = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
            let data = ev.data();
            let text = get(&data, "msg").as_string().unwrap_or_default();
            if let Ok(sab) = get(&data, "cancel").dyn_into::<js_sys::SharedArrayBuffer>() {
                CANCEL.with(|c| *c.borrow_mut() = Some(Int32Array::new(&sab)));
            }
            let file: Option<File> = get(&data, "file").dyn_into().ok();
            match decode::<ToWorker>(&text) {
                Ok(ToWorker::Import {
                    lenient,
                    buckets,
                    shown_sha256,
                    quick_match,
                }) => {
                    let replay = if lenient {
                        ReplayMode::Lenient
                    } else {
                        ReplayMode::Strict
                    };
                    with_file(file, move |file| async move {
                        import(&file, replay, buckets, shown_sha256, quick_match).await
                    })
                }
                Ok(ToWorker::Open) => with_file(file, |file| async move {
                    open_db(&file).await.map(|e| Outcome::Open(Box::new(e)))
                }),
                Ok(ToWorker::Reopen {
                    sha256,
                    warnings,
                    cache_hit,
                }) => wasm_bindgen_futures::spawn_local(async move {
                    finish(
                        reopen(&sha256, warnings, cache_hit, false)
                            .await
                            .map(|e| Outcome::Open(Box::new(e))),
                    )
                }),
                Ok(ToWorker::Ask {
                    id,
                    budget_s,
                    query,
                }) => {
                    let answer = ENGINE.with(|e| match e.borrow().as_ref() {
                        Some(engine) => engine.answer(&query, interrupt(budget_s), budget_s),
                        None => Err(Failure::new(ErrorCode::NotOpen, "No database is open.")),
                    });
                    post(&FromWorker::Answer { id, answer });
                }
                Ok(ToWorker::Download) => download(),
                Ok(ToWorker::BuildIndexes) => {
                    let left = ENGINE.with(|e| {
                        e.borrow()
                            .as_ref()
                            .map(|e| e.indexes_left().map(|left| e.indexes_report(left)))
                    });
                    if let Some(left) = left {
                        post(&FromWorker::Indexes(left.clone()));
                        if matches!(left, Ok(IndexesLeft { left, .. }) if left > 0) {
                            build_indexes_later();
                        }
                    }
                }
                Ok(ToWorker::ReadSummaries { paths }) => {
                    read_summaries(&paths, &get(&data, "files").unchecked_into())
                }
                Err(f) => post(&FromWorker::Failed(f)),
            }
        });
        scope.set_onmessage(Some(handler.as_ref().unchecked_ref()));
        handler.forget();
        run_sqlite_hot();
        post(&FromWorker::Ready);
    }

    /// V8 compiles a wasm function with its optimizing compiler once it has run enough.
    /// SQLite's interpreter loop (50 KB of wasm) otherwise gets there on an import's first
    /// statements, just as the replay starts, and that compile's ~17 MiB of memory sat on
    /// the import's peak. Here it gets there while the worker waits for its file.
    fn run_sqlite_hot() {
        if let Ok(conn) = rusqlite::Connection::open_in_memory() {
            let _ = conn.query_row(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) \
                 SELECT count(*) FROM n",
                [],
                |r| r.get::<_, i64>(0),
            );
        }
    }

    /// What opening a file ends in.
    enum Outcome {
        /// The database, open here.
        Open(Box<Engine>),
        /// A cached database reopened for `file` by its name, size and time: open here, and
        /// shown while `file` is hashed to check that it is the one imported (`sha256`).
        OpenUnchecked {
            engine: Box<Engine>,
            file: File,
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

    /// Runs `job` on the attached file and posts what it gives.
    fn with_file<F, Fut>(file: Option<File>, job: F)
    where
        F: FnOnce(File) -> Fut + 'static,
        Fut: std::future::Future<Output = Result<Outcome, Failure>> + 'static,
    {
        let Some(file) = file else {
            post(&FromWorker::Failed(Failure::new(
                ErrorCode::Internal,
                "The worker was sent no file.",
            )));
            return;
        };
        wasm_bindgen_futures::spawn_local(async move { finish(job(file).await) });
    }

    fn finish(outcome: Result<Outcome, Failure>) {
        match outcome {
            Ok(Outcome::Open(engine)) => {
                let overview = engine.overview().clone();
                ENGINE.with(|e| *e.borrow_mut() = Some(*engine));
                post(&FromWorker::Opened(overview));
            }
            Ok(Outcome::OpenUnchecked {
                engine,
                file,
                sha256,
            }) => {
                finish(Ok(Outcome::Open(engine)));
                wasm_bindgen_futures::spawn_local(async move {
                    // A file that cannot be read now is not known to be the one imported;
                    // importing it again says why.
                    let same = sha256_of(&file, None).await.is_ok_and(|sha| sha == sha256);
                    post(&FromWorker::SourceChecked { same });
                });
            }
            Ok(Outcome::Stored { sha256, warnings }) => {
                post(&FromWorker::Stored { sha256, warnings })
            }
            Ok(Outcome::AlreadyOpen) => post(&FromWorker::AlreadyOpen),
            Err(f) => post(&FromWorker::Failed(f)),
        }
    }

    /// Builds the next index the import deferred in a task of its own, so that questions
    /// that came meanwhile are answered first, and goes on until none is left. Each builds
    /// in well under a second at 1M events; a question that comes during one waits for it.
    fn build_indexes_later() {
        let next = Closure::once_into_js(|| {
            // Nothing when the file is closed or every index is built (a download built
            // the rest meanwhile).
            let Some(built) = ENGINE.with(|e| {
                let mut e = e.borrow_mut();
                let engine = e.as_mut()?;
                engine
                    .build_next_index()
                    .map(|left| left.map(|left| engine.indexes_report(left)))
                    .transpose()
            }) else {
                return;
            };
            match built {
                Ok(report) => {
                    index_built(report);
                    if report.left > 0 {
                        build_indexes_later();
                    }
                }
                Err(f) => post(&FromWorker::Indexes(Err(f))),
            }
        });
        let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
        let _ = scope.set_timeout_with_callback(next.unchecked_ref());
    }

    /// Tells the page an index was built; once none is left, the cache's entry says the
    /// database's size, so the list of kept imports does too.
    fn index_built(report: IndexesLeft) {
        post(&FromWorker::Indexes(Ok(report)));
        if report.left == 0 {
            record_size(report.db_bytes);
        }
    }

    /// Records the built database's size in its cache entry (`pt_snap_opfs::Pool::record_size`).
    fn record_size(db_bytes: u64) {
        if let Some(pool) = POOL.with(|p| p.borrow().clone()) {
            wasm_bindgen_futures::spawn_local(async move {
                if let Err(e) = pool.record_size(db_bytes).await {
                    web_sys::console::warn_1(&format!("pt-snap: {e}").into());
                }
            });
        }
    }

    /// Opens a cached database by its source's SHA-256: writable for the indexes its import
    /// deferred, query_only for everything else (the engine's doing).
    async fn reopen(
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
    fn storage(e: impl std::fmt::Display) -> Failure {
        backend(format!("the browser's file storage (OPFS): {e}"))
    }

    /// Stops a question at its deadline (the page's clock) or when the page sets the cancel
    /// cell.
    fn interrupt(budget_s: f64) -> impl Fn() -> Option<Stop> + Send + Sync + 'static {
        let at = js_sys::Date::now() + budget_s * 1000.0;
        move || {
            let cancelled = CANCEL.with(|c| {
                c.borrow()
                    .as_ref()
                    .is_some_and(|cell| js_sys::Atomics::load(cell, 0).unwrap_or(0) != 0)
            });
            if cancelled {
                Some(Stop::Superseded)
            } else if js_sys::Date::now() >= at {
                Some(Stop::Deadline)
            } else {
                None
            }
        }
    }

    async fn open_db(file: &File) -> Result<Engine, Failure> {
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

    async fn import(
        file: &File,
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
        let step = ((total / 100.0) as u64).max(256 * 1024);
        let snapshot = pt_snap_model::decode_sized(&mut reader, total as u64, &mut |p| {
            if p.bytes_read >= last_posted + step {
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
                    if done == 0 || done >= last_done + (of / 50).max(1) || done == of {
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
    async fn reuse(
        sha256: &str,
        replay: ReplayMode,
        source_unchecked: bool,
    ) -> Result<Reuse, Failure> {
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

    /// The file's SHA-256 when only the hash is wanted (to look it up in the cache, with
    /// `progress` of its size shown, or to check a file shown from it, beside the page's
    /// questions): the helper reads and hashes, and this worker is free meanwhile.
    async fn sha256_of(file: &File, progress: Option<f64>) -> Result<String, Failure> {
        Helper::start(file, None, true, progress)
            .await?
            .sha256()
            .await
    }

    /// "Download .db": the database as a Blob posted with the message: the OPFS file itself
    /// (nothing copied), or the in-memory database's image.
    fn download() {
        let name = ENGINE.with(|e| {
            e.borrow()
                .as_ref()
                .map(|e| format!("{}.db", e.overview().name))
        });
        let Some(name) = name else {
            post(&FromWorker::Download(Err(Failure::new(
                ErrorCode::NotOpen,
                "No database is open.",
            ))));
            return;
        };
        // The file downloaded is whole: the indexes still to build are built now, and none
        // is written after (a `Blob` of a file written later cannot be read).
        let whole = ENGINE.with(|e| {
            if let Some(engine) = e.borrow_mut().as_mut() {
                while let Some(left) = engine.build_next_index()? {
                    index_built(engine.indexes_report(left));
                }
            }
            Ok(())
        });
        if let Err(f) = whole {
            post(&FromWorker::Download(Err(f)));
            return;
        }
        // An OPFS database is never copied into memory for this: its file is the Blob.
        if let Some(pool) = POOL.with(|p| p.borrow().clone()) {
            wasm_bindgen_futures::spawn_local(async move {
                let blob = pool.export_blob().await.map_err(storage);
                match blob {
                    Ok(blob) => post_with(&FromWorker::Download(Ok(name)), "blob", &blob),
                    Err(f) => post(&FromWorker::Download(Err(f))),
                }
            });
            return;
        }
        let blob = ENGINE.with(|e| match e.borrow_mut().as_mut() {
            Some(engine) => engine.with_image(|image| {
                let parts = js_sys::Array::of1(&Uint8Array::from(image));
                let opts = web_sys::BlobPropertyBag::new();
                opts.set_type("application/vnd.sqlite3");
                web_sys::Blob::new_with_u8_array_sequence_and_options(&parts, &opts)
                    .map_err(|e| Failure::new(ErrorCode::Internal, format!("{e:?}")))
            }),
            None => Err(Failure::new(ErrorCode::NotOpen, "No database is open.")),
        });
        match blob.and_then(|b| b) {
            Ok(blob) => post_with(&FromWorker::Download(Ok(name)), "blob", &blob),
            Err(f) => post(&FromWorker::Download(Err(f))),
        }
    }

    /// Reads `files` (the `paths` of them) as parts of an exported summary table.
    fn read_summaries(paths: &[String], files: &js_sys::Array) {
        let reads = paths
            .iter()
            .enumerate()
            .map(|(i, path)| match files.get(i as u32).dyn_into::<File>() {
                Ok(file) => {
                    // The summary's reader says "cannot read the file".
                    let js = |e: &JsValue| io::Error::other(format!("{e:?}"));
                    let reader = FileReaderSync::new();
                    pt_snap_engine::SummaryRead::of(path, file.size() as u64, |start, end| {
                        let slice = file
                            .slice_with_f64_and_f64(start as f64, end as f64)
                            .map_err(|e| js(&e))?;
                        let reader = reader.as_ref().map_err(js)?;
                        let bytes = reader.read_as_array_buffer(&slice).map_err(|e| js(&e))?;
                        Ok(Uint8Array::new(&bytes).to_vec())
                    })
                }
                Err(_) => pt_snap_engine::SummaryRead {
                    path: path.clone(),
                    ranks: Err(Failure::new(
                        ErrorCode::Internal,
                        "The worker was sent no file.",
                    )),
                },
            })
            .collect();
        post(&FromWorker::Summaries(reads));
    }

    fn get(v: &JsValue, key: &str) -> JsValue {
        Reflect::get(v, &key.into()).unwrap_or(JsValue::UNDEFINED)
    }

    use pt_snap_import::failure::backend;

    /// Now, in the metadata's spelling (the contract's; JS clocks stop at milliseconds).
    fn now_utc_iso() -> String {
        let ms = js_sys::Date::now() as i64;
        pt_snap_contract::python::isoformat_utc(
            ms.div_euclid(1000),
            (ms.rem_euclid(1000) * 1000) as u32,
        )
    }

    /// One slice of the `File`, copied into the decoder's memory.
    type FetchSlice = dyn FnMut(u64, u64) -> io::Result<Vec<u8>>;

    /// The File as a `Read`, one slice at a time ([`Slices`]), and its helper.
    struct FileChunks {
        slices: Slices<Box<FetchSlice>>,
        /// `None` for a file read with `FileReaderSync` and not hashed.
        helper: Option<Helper>,
        /// Read through the helper's [`Ring`].
        ahead: bool,
    }

    impl FileChunks {
        /// Read ahead by the helper through shared slots where the page has shared memory
        /// (it is cross-origin isolated), else with `FileReaderSync`, whose slices stay in
        /// memory until a collection. The helper hashes the file if asked to.
        async fn open(file: File, hash: bool) -> Result<Self, Failure> {
            let len = file.size() as u64;
            let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
            let ring = (get(&scope, "crossOriginIsolated").as_bool() == Some(true)).then(Ring::new);
            // A file only read is read here if the helper cannot start; a hash needs it.
            let helper = match ring.is_some() || hash {
                true => match Helper::start(&file, ring.as_ref(), hash, None).await {
                    Ok(helper) => Some(helper),
                    Err(_) if !hash => None,
                    Err(e) => return Err(e),
                },
                false => None,
            };
            let ring = ring.filter(|_| helper.is_some());
            let ahead = ring.is_some();
            let fetch: Box<FetchSlice> = match ring {
                Some(ring) => Box::new(move |start, end| ring.take(start, end)),
                None => {
                    let reader = FileReaderSync::new().map_err(|e| backend(format!("{e:?}")))?;
                    Box::new(move |start: u64, end: u64| {
                        let slice = file
                            .slice_with_f64_and_f64(start as f64, end as f64)
                            .map_err(js_io)?;
                        let bytes = reader.read_as_array_buffer(&slice).map_err(js_io)?;
                        Ok(Uint8Array::new(&bytes).to_vec())
                    })
                }
            };
            Ok(FileChunks {
                slices: Slices::new(len, fetch),
                helper,
                ahead,
            })
        }

        /// The file's SHA-256, as the CLI's: of every byte of the file as given (compressed
        /// bytes for a compressed file, and bytes after the pickle's STOP too), so what the
        /// decoder left unread is read out of the slots for the helper to go on (a helper
        /// without slots reads the file on its own).
        async fn sha256(mut self) -> Result<String, Failure> {
            if self.ahead {
                let mut rest = vec![0; SLICE as usize];
                while self.read(&mut rest).map_err(backend)? > 0 {}
            }
            match &self.helper {
                Some(helper) => helper.sha256().await,
                None => Err(backend("the file was opened without its hash")),
            }
        }
    }

    /// Slots of [`SLICE`] bytes that the helper fills ahead of the reader.
    const RING_SLOTS: u32 = 4;

    /// The memory the helper streams the file into, slice by slice, and [`Ring::take`]
    /// copies each slice out of as the decoder asks for it (`www/read-worker.js` has the
    /// protocol).
    struct Ring {
        /// Per slot: 0 free, the slice's length once filled, -1 where the file cannot be read.
        state: Int32Array,
        bytes: Uint8Array,
    }

    impl Ring {
        fn new() -> Ring {
            let shared = SharedArrayBuffer::new(RING_SLOTS * (4 + SLICE as u32));
            Ring {
                state: Int32Array::new_with_byte_offset_and_length(&shared, 0, RING_SLOTS),
                bytes: Uint8Array::new_with_byte_offset(&shared, RING_SLOTS * 4),
            }
        }

        /// The slice `start..end`, once the helper has read it; its slot is then free.
        fn take(&self, start: u64, end: u64) -> io::Result<Vec<u8>> {
            debug_assert_eq!(start % SLICE, 0);
            let slot = ((start / SLICE) % RING_SLOTS as u64) as u32;
            let filled = loop {
                match Atomics::load(&self.state, slot).map_err(js_io)? {
                    0 => {
                        Atomics::wait(&self.state, slot, 0).map_err(js_io)?;
                    }
                    n => break n,
                }
            };
            if filled < 0 {
                return Err(io::Error::other(
                    "cannot read the file: the browser stopped reading it (was it changed or removed?)",
                ));
            }
            let from = slot * SLICE as u32;
            let mut out = vec![0; (filled as u64).min(end - start) as usize];
            self.bytes
                .subarray(from, from + out.len() as u32)
                .copy_to(&mut out);
            Atomics::store(&self.state, slot, 0).map_err(js_io)?;
            Atomics::notify(&self.state, slot).map_err(js_io)?;
            Ok(out)
        }
    }

    /// The helper worker (`www/read-worker.js`) reading one file: into a [`Ring`] if given
    /// one, through its SHA-256 if asked to. The page starts it ([`FromWorker::StartReader`]:
    /// a worker's own workers make its end racy in Chromium) and passes on what it posts
    /// through a port of this worker's; it ends with this value.
    struct Helper {
        id: u32,
        port: MessagePort,
        /// Settles with the helper's last answer: `{hex}`, `{done}` or `{error}`.
        answer: Promise,
        _on_message: Closure<dyn FnMut(MessageEvent)>,
    }

    thread_local! {
        static NEXT_HELPER: std::cell::Cell<u32> = const { std::cell::Cell::new(1) };
    }

    impl Helper {
        /// Has the page start the helper on `file` and waits until it runs (until then a
        /// wait on a slot might never end). `progress`: the file's size, to post how much
        /// is hashed.
        async fn start(
            file: &File,
            ring: Option<&Ring>,
            hash: bool,
            progress: Option<f64>,
        ) -> Result<Helper, Failure> {
            let cannot = |e: JsValue| {
                let why = e
                    .as_string()
                    .or_else(|| get(&e, "message").as_string())
                    .unwrap_or_else(|| format!("{e:?}"));
                Failure::new(
                    ErrorCode::Internal,
                    format!("The browser could not start the worker that reads the file ({why})."),
                )
            };
            let channel = MessageChannel::new().map_err(cannot)?;
            let id = NEXT_HELPER.with(|n| n.replace(n.get() + 1));
            let (mut started_to, mut answer_to) = (None, None);
            let started = Promise::new(&mut |resolve, _| started_to = Some(resolve));
            let answer = Promise::new(&mut |resolve, _| answer_to = Some(resolve));
            let (started_to, answer_to) = (started_to.unwrap(), answer_to.unwrap());
            let settle = |to: &js_sys::Function, value: &JsValue| {
                let _ = to.call1(&JsValue::NULL, value);
            };
            let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
                let data = ev.data();
                if get(&data, "started").is_truthy() {
                    settle(&started_to, &JsValue::TRUE);
                } else if get(&data, "error").is_string() {
                    // Before it started (it could not start, or the job could not be
                    // received), or while it read.
                    settle(&started_to, &JsValue::FALSE);
                    settle(&answer_to, &data);
                } else if let Some(bytes) = get(&data, "hashed").as_f64() {
                    if let Some(total) = progress {
                        post(&FromWorker::Progress(Progress::Hashing {
                            bytes: Some(bytes),
                            total,
                        }));
                    }
                } else {
                    settle(&answer_to, &data);
                }
            });
            let port = channel.port1();
            port.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
            let helper = Helper {
                id,
                port,
                answer,
                _on_message: on_message,
            };
            let job = Object::new();
            let mut fields = vec![
                ("file", JsValue::from(file)),
                ("hash", hash.into()),
                ("progress", progress.map(|_| HASH_PROGRESS_STEP).into()),
            ];
            if let Some(ring) = ring {
                fields.push(("state", ring.state.clone().into()));
                fields.push(("bytes", ring.bytes.clone().into()));
                fields.push(("slice", (SLICE as u32).into()));
            }
            for (key, value) in fields {
                let _ = Reflect::set(&job, &key.into(), &value);
            }
            let o = Object::new();
            let _ = Reflect::set(
                &o,
                &"msg".into(),
                &encode(&FromWorker::StartReader { reader: id }).into(),
            );
            let _ = Reflect::set(&o, &"job".into(), &job);
            let remote = channel.port2();
            let _ = Reflect::set(&o, &"port".into(), &remote);
            let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
            scope
                .post_message_with_transfer(&o, &js_sys::Array::of1(&remote))
                .map_err(cannot)?;
            match JsFuture::from(started).await {
                Ok(v) if v.is_truthy() => Ok(helper),
                _ => Err(cannot(JsValue::from_str("it failed to load"))),
            }
        }

        /// The file's SHA-256 in hex, once the helper has read all of it.
        async fn sha256(&self) -> Result<String, Failure> {
            let answer = JsFuture::from(self.answer.clone())
                .await
                .unwrap_or(JsValue::NULL);
            match get(&answer, "hex").as_string() {
                Some(hex) => Ok(hex),
                None => Err(backend(format!(
                    "cannot read the file to hash it: {}",
                    get(&answer, "error")
                        .as_string()
                        .unwrap_or_else(|| "the reading worker failed".into())
                ))),
            }
        }
    }

    impl Drop for Helper {
        fn drop(&mut self) {
            // An answer already queued must not reach the closure dropped with this.
            self.port.set_onmessage(None);
            self.port.close();
            post(&FromWorker::EndReader { reader: self.id });
        }
    }

    impl Read for FileChunks {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            self.slices.read(out)
        }
    }

    fn js_io(e: JsValue) -> io::Error {
        io::Error::other(format!("cannot read the file: {e:?}"))
    }

    fn post(message: &FromWorker) {
        post_with(message, "", &JsValue::UNDEFINED)
    }

    /// Posts `message`, with `attachment` under `key` when there is one (a `Blob`, which
    /// the structured clone shares rather than copies).
    fn post_with(message: &FromWorker, key: &str, attachment: &JsValue) {
        let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
        let o = Object::new();
        let _ = Reflect::set(&o, &"msg".into(), &encode(message).into());
        if !key.is_empty() {
            let _ = Reflect::set(&o, &key.into(), attachment);
        }
        if let Err(e) = scope.post_message(&o) {
            web_sys::console::error_1(&e);
        }
    }
}
