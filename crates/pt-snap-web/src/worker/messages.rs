//! The worker's message loop: a message from the page (`ToWorker`, JSON text beside the
//! attached file (a [`Source`]), cancel cell or files) starts a job or answers a question, and what the
//! worker says goes back as `FromWorker`. An import blocks this thread from the first byte
//! to the open database, on purpose: the page stops it by ending the worker, which no
//! cooperative flag could do faster.

#![cfg(target_arch = "wasm32")]

use std::cell::RefCell;

use js_sys::{Int32Array, Object, Reflect};
use pt_snap_engine::protocol::{decode, encode};
use pt_snap_engine::{Engine, ErrorCode, Failure, FromWorker, IndexesLeft, Stop, ToWorker};
use pt_snap_import::ReplayMode;
use pt_snap_opfs::Pool;
use wasm_bindgen::prelude::*;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

// Linked for its host hooks (clock, randomness) that SQLite needs in a browser.
use sqlite_wasm_rs as _;

use crate::download::download;
use crate::file_reader::sha256_of;
use crate::import::{import, open_db, reopen, Outcome};
use crate::indexes::{answered, build_indexes_later, index_built};
use crate::source::Source;
use crate::summaries::read_summaries;

thread_local! {
    pub(crate) static ENGINE: RefCell<Option<Engine>> = const { RefCell::new(None) };
    /// The OPFS entry the engine's connection reads, kept open as long as it.
    pub(crate) static POOL: RefCell<Option<std::rc::Rc<Pool>>> = const { RefCell::new(None) };
    /// Set to 1 by the page to interrupt the running question (see `client.rs`).
    static CANCEL: RefCell<Option<Int32Array>> = const { RefCell::new(None) };
}

pub(crate) fn start() {
    console_error_panic_hook::set_once();
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let handler = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        let data = ev.data();
        let text = get(&data, "msg").as_string().unwrap_or_default();
        if let Ok(sab) = get(&data, "cancel").dyn_into::<js_sys::SharedArrayBuffer>() {
            CANCEL.with(|c| *c.borrow_mut() = Some(Int32Array::new(&sab)));
        }
        let file = Source::from_js(get(&data, "file"));
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
                let answer = ENGINE.with(|e| match e.borrow_mut().as_mut() {
                    Some(engine) => {
                        // The deferred indexes this question cannot do without, first. One that
                        // fails to build is the background builder's to report: the question
                        // is still answered, only more slowly.
                        if let Ok(Some(left)) = engine.build_indexes_for(&query) {
                            index_built(engine.indexes_report(left));
                        }
                        engine.answer(&query, interrupt(budget_s), budget_s)
                    }
                    None => Err(Failure::new(ErrorCode::NotOpen, "No database is open.")),
                });
                post(&FromWorker::Answer { id, answer });
                answered();
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

/// Runs `job` on the attached file and posts what it gives.
fn with_file<F, Fut>(file: Option<Source>, job: F)
where
    F: FnOnce(Source) -> Fut + 'static,
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
        Ok(Outcome::Stored { sha256, warnings }) => post(&FromWorker::Stored { sha256, warnings }),
        Ok(Outcome::AlreadyOpen) => post(&FromWorker::AlreadyOpen),
        Err(f) => post(&FromWorker::Failed(f)),
    }
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

pub(crate) fn get(v: &JsValue, key: &str) -> JsValue {
    Reflect::get(v, &key.into()).unwrap_or(JsValue::UNDEFINED)
}

pub(crate) fn post(message: &FromWorker) {
    post_with(message, "", &JsValue::UNDEFINED)
}

/// Posts `message`, with `attachment` under `key` when there is one (a `Blob`, which
/// the structured clone shares rather than copies).
pub(crate) fn post_with(message: &FromWorker, key: &str, attachment: &JsValue) {
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
