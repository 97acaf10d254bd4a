//! The worker that holds one open file: it imports a snapshot (any shape) or opens a
//! SnapshotDB, then answers the page's questions until the page ends it. This file is the
//! edge only: messages in and out (`pt_snap_engine::protocol`, JSON text beside the `File`,
//! the cancel cell and the download `Blob`), the file read in slices, the clock. Every
//! answer comes from `pt_snap_engine::Engine`, which is tested natively.
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
        Engine, EngineError, FromWorker, IndexesLeft, Origin, Preview, Progress, Stop, Storage,
        ToWorker,
    };
    use pt_snap_import::{ImportRequest, Indexes, ReplayMode, Stage};
    use pt_snap_model::{Slices, SLICE};
    use pt_snap_opfs::{Access, Entry, Pool};
    use sha2::{Digest, Sha256};
    use wasm_bindgen::prelude::*;
    use wasm_bindgen_futures::JsFuture;
    use web_sys::{DedicatedWorkerGlobalScope, File, FileReaderSync, MessageEvent, Worker};

    // Linked for its host hooks (clock, randomness) that SQLite needs in a browser.
    use sqlite_wasm_rs as _;

    /// Files up to this size are hashed by the helper worker, which holds the whole file
    /// meanwhile; larger ones are hashed here, so that a 1 GB import needs no second GB.
    const HASH_BESIDE_MAX: f64 = 512.0 * 1024.0 * 1024.0;

    /// Bytes hashed here between two progress messages.
    const HASH_PROGRESS_STEP: u64 = 64 << 20;

    /// Bytes hashed here between two ends of the task (`Hashing::BetweenQuestions`,
    /// `Hashing::Progress`): ~0.1 s of SHA-256 in wasm, what a question may wait while a
    /// file shown from the cache is checked.
    const HASH_YIELD_STEP: u64 = 16 << 20;

    /// The page cache of a database read from OPFS, in KiB.
    const READ_CACHE_KIB: u32 = 128 * 1024;

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
                        None => Err(EngineError::new(
                            "DATABASE_NOT_OPEN",
                            "No database is open.",
                        )),
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
        post(&FromWorker::Ready);
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
        Fut: std::future::Future<Output = Result<Outcome, EngineError>> + 'static,
    {
        let Some(file) = file else {
            post(&FromWorker::Failed(EngineError::new(
                "INTERNAL_ERROR",
                "The worker was sent no file.",
            )));
            return;
        };
        wasm_bindgen_futures::spawn_local(async move { finish(job(file).await) });
    }

    fn finish(outcome: Result<Outcome, EngineError>) {
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
                    let same = sha256_of(&file, Hashing::BetweenQuestions)
                        .await
                        .is_ok_and(|sha| sha == sha256);
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
    ) -> Result<Engine, EngineError> {
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
    fn storage(e: impl std::fmt::Display) -> EngineError {
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

    async fn open_db(file: &File) -> Result<Engine, EngineError> {
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
    ) -> Result<Outcome, EngineError> {
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
            // questions (`Hashing::BetweenQuestions`). The file on screen is hashed first
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
                let sha = sha256_of(file, Hashing::Progress(total)).await?;
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
        let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
        let digest = match known_sha {
            Some(_) => None,
            None => hash_beside(&scope, file),
        };
        let hash_inline = known_sha.is_none() && digest.is_none();
        let mut reader = FileChunks::open(file.clone(), hash_inline).await?;
        let mut last_posted = 0u64;
        let step = ((total / 100.0) as u64).max(256 * 1024);
        let snapshot = pt_snap_model::decode(&mut reader, &mut |p| {
            if p.bytes_read >= last_posted + step {
                last_posted = p.bytes_read;
                post(&FromWorker::Progress(Progress::Decoding {
                    bytes: p.bytes_read as f64,
                    total,
                    events: p.events,
                }));
            }
        })
        .map_err(failed)?;
        // The reader of a file hashed elsewhere ends with the decoding (and so does its
        // read-ahead helper).
        let sha256 = match (known_sha, digest) {
            (Some(sha), _) => {
                drop(reader);
                sha
            }
            (None, Some(digest)) => {
                drop(reader);
                match JsFuture::from(digest).await.map(|r| get(&r, "hex")) {
                    Ok(hex) if hex.is_string() => hex.as_string().unwrap_or_default(),
                    // WebCrypto refused (or the helper died): hash here after all.
                    _ => sha256_of(file, Hashing::Progress(total)).await?,
                }
            }
            // Hashed as it was decoded: only what the decoder left unread is still to go.
            (None, None) => hash_here(reader, Hashing::Silent).await?,
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
        .map_err(failed)?;
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
    ) -> Result<Reuse, EngineError> {
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

    /// The file's SHA-256 when only the hash is wanted (to look it up in the cache, or to
    /// check a file shown from it), here, a slice at a time: WebCrypto would hold the whole
    /// file and the digest's copy of it. Checking a 1.09 GB file took the renderers to
    /// 3.2 GB that way and to 1.5 GB this way, for a hash that ends ~3 s later (10.5 s
    /// against 7.8 s).
    async fn sha256_of(file: &File, here: Hashing) -> Result<String, EngineError> {
        hash_here(FileChunks::open(file.clone(), true).await?, here).await
    }

    /// Ends this task so that messages waiting for the worker are handled, then goes on.
    async fn yield_to_messages() {
        let resumed = Promise::new(&mut |resolve, _| {
            let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
            let _ = scope.set_timeout_with_callback(&resolve);
        });
        let _ = JsFuture::from(resumed).await;
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
            post(&FromWorker::Download(Err(EngineError::new(
                "DATABASE_NOT_OPEN",
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
                    .map_err(|e| EngineError::new("INTERNAL_ERROR", format!("{e:?}")))
            }),
            None => Err(EngineError::new(
                "DATABASE_NOT_OPEN",
                "No database is open.",
            )),
        });
        match blob.and_then(|b| b) {
            Ok(blob) => post_with(&FromWorker::Download(Ok(name)), "blob", &blob),
            Err(f) => post(&FromWorker::Download(Err(f))),
        }
    }

    /// What [`hash_here`] does while it hashes.
    #[derive(Clone, Copy)]
    enum Hashing {
        /// Posts how far it is, of the file's size (a message leaves a busy worker at once,
        /// so the page's bar moves while this runs), and ends its task every
        /// [`HASH_YIELD_STEP`], so that the slices already read can be collected before an
        /// import that may follow (a worker collects them between tasks: reading 1 GB grew
        /// the renderer by ~330 MiB in one task, by ~175 MiB with a boundary every 16 MiB).
        Progress(f64),
        /// Nothing: the rest of a file just decoded.
        Silent,
        /// Lets the page's messages in every [`HASH_YIELD_STEP`]: a file shown from the
        /// cache is checked while its database answers.
        BetweenQuestions,
    }

    /// The rest of the file through the reader's hasher: the digest covers the whole file as
    /// given, as the CLI's does: compressed bytes for a compressed file, and even bytes after
    /// the pickle's STOP.
    async fn hash_here(mut reader: FileChunks, how: Hashing) -> Result<String, EngineError> {
        let mut buf = vec![0; 1 << 20];
        let (mut done, mut posted, mut yielded) = (0u64, 0u64, 0u64);
        loop {
            let n = reader.read(&mut buf).map_err(backend)?;
            if n == 0 {
                break;
            }
            done += n as u64;
            if let Hashing::Progress(total) = how {
                if done - posted >= HASH_PROGRESS_STEP {
                    posted = done;
                    post(&FromWorker::Progress(Progress::Hashing {
                        bytes: Some(done as f64),
                        total,
                    }));
                }
            }
            if !matches!(how, Hashing::Silent) && done - yielded >= HASH_YIELD_STEP {
                yielded = done;
                yield_to_messages().await;
            }
        }
        let hasher = reader.hasher.take().unwrap_or_default();
        Ok(format!("{:x}", hasher.finalize()))
    }

    /// Starts the helper worker on `file`; its answer (`{hex}` or `{error}`) settles the
    /// promise. `None` where WebCrypto is missing (pages served over plain HTTP from another
    /// host are not a secure context), the file is too large, or no worker can start.
    fn hash_beside(scope: &DedicatedWorkerGlobalScope, file: &File) -> Option<Promise> {
        let secure = get(scope, "isSecureContext").as_bool() == Some(true);
        if !secure || file.size() > HASH_BESIDE_MAX {
            return None;
        }
        let worker = Worker::new("./hash-worker.js").ok()?;
        let promise = Promise::new(&mut |resolve, _| {
            let helper = worker.clone();
            let settle = resolve.clone();
            let answer = Closure::once_into_js(move |ev: MessageEvent| {
                helper.terminate();
                let _ = settle.call1(&JsValue::NULL, &ev.data());
            });
            worker.set_onmessage(Some(answer.unchecked_ref()));
            // A helper that fails to load answers with an error, so the import hashes here.
            let helper = worker.clone();
            let failed = Closure::once_into_js(move |_: JsValue| {
                helper.terminate();
                let _ = resolve.call1(&JsValue::NULL, &JsValue::NULL);
            });
            worker.set_onerror(Some(failed.unchecked_ref()));
        });
        worker.post_message(file).ok()?;
        Some(promise)
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
                    ranks: Err(EngineError::new(
                        "INTERNAL_ERROR",
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

    /// The CLI's code and message for an import failure (the one shared mapping).
    fn failed(f: impl Into<pt_snap_import::ImportFailure>) -> EngineError {
        EngineError::from(f.into())
    }

    fn backend(e: impl std::fmt::Display) -> EngineError {
        failed(pt_snap_import::ImportFailure::backend(e))
    }

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

    /// The File as a `Read`, one slice at a time ([`Slices`]), hashing what passes through
    /// if asked to.
    struct FileChunks {
        slices: Slices<Box<FetchSlice>>,
        hasher: Option<Sha256>,
    }

    impl FileChunks {
        /// Read ahead by the helper where the page has shared memory ([`ReadAhead`]), else
        /// with `FileReaderSync`, whose slices stay in memory until a collection.
        async fn open(file: File, hash: bool) -> Result<Self, EngineError> {
            let len = file.size() as u64;
            let fetch: Box<FetchSlice> = match ReadAhead::start(&file).await {
                Some(ahead) => Box::new(move |start, end| ahead.take(start, end)),
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
                hasher: hash.then(Sha256::new),
            })
        }
    }

    /// Slots of [`SLICE`] bytes that the read-ahead helper fills ahead of the reader.
    const READ_AHEAD_SLOTS: u32 = 4;

    /// The file streamed by the read-ahead helper (`www/read-worker.js`) into shared slots,
    /// each slice copied out as the decoder asks for it: the reading holds the slots, where
    /// `FileReaderSync` left every slice read to the next collection, which a worker busy
    /// with one import rarely gets (`docs/performance.md`). The helper ends with this.
    struct ReadAhead {
        /// Per slot: 0 free, the slice's length once filled, -1 where the file cannot be read.
        state: Int32Array,
        bytes: Uint8Array,
        helper: Worker,
    }

    impl ReadAhead {
        /// `None` where the page is not cross-origin isolated (no shared memory) or the
        /// helper does not start.
        async fn start(file: &File) -> Option<ReadAhead> {
            let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
            if get(&scope, "crossOriginIsolated").as_bool() != Some(true) {
                return None;
            }
            let slice = SLICE as u32;
            let shared = SharedArrayBuffer::new(READ_AHEAD_SLOTS * (4 + slice));
            let state = Int32Array::new_with_byte_offset_and_length(&shared, 0, READ_AHEAD_SLOTS);
            let bytes = Uint8Array::new_with_byte_offset(&shared, READ_AHEAD_SLOTS * 4);
            let helper = Worker::new("./read-worker.js").ok()?;
            let started = Promise::new(&mut |resolve, _| {
                let answered = resolve.clone();
                let answer = Closure::once_into_js(move |_: MessageEvent| {
                    let _ = answered.call1(&JsValue::NULL, &JsValue::TRUE);
                });
                helper.set_onmessage(Some(answer.unchecked_ref()));
                let failed = Closure::once_into_js(move |_: JsValue| {
                    let _ = resolve.call1(&JsValue::NULL, &JsValue::FALSE);
                });
                helper.set_onerror(Some(failed.unchecked_ref()));
            });
            let ahead = ReadAhead {
                state,
                bytes,
                helper,
            };
            let job = Object::new();
            for (key, value) in [
                ("file", JsValue::from(file)),
                ("state", ahead.state.clone().into()),
                ("bytes", ahead.bytes.clone().into()),
                ("slice", slice.into()),
            ] {
                let _ = Reflect::set(&job, &key.into(), &value);
            }
            ahead.helper.post_message(&job).ok()?;
            // Until the helper runs, a wait on a slot might never end.
            let started = JsFuture::from(started).await.ok()?.as_bool() == Some(true);
            ahead.helper.set_onmessage(None);
            ahead.helper.set_onerror(None);
            started.then_some(ahead)
        }

        /// The slice `start..end`, once the helper has read it; its slot is then free.
        fn take(&self, start: u64, end: u64) -> io::Result<Vec<u8>> {
            debug_assert_eq!(start % SLICE, 0);
            let slot = ((start / SLICE) % READ_AHEAD_SLOTS as u64) as u32;
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

    impl Drop for ReadAhead {
        fn drop(&mut self) {
            self.helper.terminate();
        }
    }

    impl Read for FileChunks {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.slices.read(out)?;
            if let Some(hasher) = &mut self.hasher {
                hasher.update(&out[..n]);
            }
            Ok(n)
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
