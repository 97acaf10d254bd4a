//! Getting a file in, routed by its first bytes (`sniff.rs`): SQLite images are opened on the
//! page; snapshots (pickle, JSON, gzip/zstd/bzip2 of either) go to the import worker.
//! The worker is started ahead of time so its wasm is ready when a file arrives, and replaced
//! on cancel (terminating is the only way to stop a running import).

use std::cell::RefCell;

use js_sys::{Array, Object, Reflect, Uint8Array};
use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, File, FilePropertyBag, MessageEvent, Response, Worker};

use crate::app::{AppState, Status};
use crate::data::{self, Failure};
use crate::sniff::{self, Route};

/// One import for the worker: the file and whether its replay is lenient.
#[derive(Clone)]
struct Job {
    file: File,
    lenient: bool,
}

struct WorkerSlot {
    worker: Worker,
    ready: bool,
    /// A job given before the worker could take it (messages sent earlier are lost).
    pending: Option<Job>,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_error: Closure<dyn FnMut(web_sys::ErrorEvent)>,
}

thread_local! {
    static WORKER: RefCell<Option<WorkerSlot>> = const { RefCell::new(None) };
    /// The last import sent, so a strict one the replay refused can be run again leniently.
    static LAST_JOB: RefCell<Option<Job>> = const { RefCell::new(None) };
    /// Bumped by every file chosen: a file whose first bytes arrive after a later choice is
    /// dropped.
    static CHOICE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

pub fn start_worker(state: AppState) {
    let worker = match Worker::new("./pt-snap-worker_loader.js") {
        Ok(w) => w,
        Err(e) => {
            state.status.set(Status::Failed(Failure::new(
                "INTERNAL_ERROR",
                format!("The import worker could not start: {e:?}"),
            )));
            return;
        }
    };
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        on_worker_message(state, ev.data());
    });
    worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    // A worker that dies (its wasm traps, e.g. out of memory on a huge file) posts nothing:
    // say so instead of leaving the progress bar up, and have a fresh worker for the next file.
    let on_error = Closure::<dyn FnMut(web_sys::ErrorEvent)>::new(
        move |ev: web_sys::ErrorEvent| {
            ev.prevent_default();
            if matches!(state.status.get_untracked(), Status::Importing { .. }) {
                start_worker(state);
                state.status.set(Status::Failed(
                pt_snap_import::Failure::backend(format!(
                    "the import worker stopped ({}); the file may be too large for this browser tab",
                    ev.message()
                ))
                .into(),
            ));
            }
        },
    );
    worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    WORKER.with(|w| {
        if let Some(old) = w.borrow_mut().replace(WorkerSlot {
            worker,
            ready: false,
            pending: None,
            _on_message: on_message,
            _on_error: on_error,
        }) {
            old.worker.terminate();
        }
    });
}

fn get(v: &JsValue, key: &str) -> JsValue {
    Reflect::get(v, &key.into()).unwrap_or(JsValue::UNDEFINED)
}

fn on_worker_message(state: AppState, msg: JsValue) {
    let kind = get(&msg, "type").as_string().unwrap_or_default();
    match kind.as_str() {
        "ready" => {
            let pending = WORKER.with(|w| {
                let mut slot = w.borrow_mut();
                let slot = slot.as_mut()?;
                slot.ready = true;
                slot.pending.take()
            });
            if let Some(job) = pending {
                send(&job);
            }
        }
        "progress" => {
            let num = |k: &str| get(&msg, k).as_f64();
            if let Status::Importing { name, .. } = state.status.get_untracked() {
                state.status.set(Status::Importing {
                    name,
                    stage: get(&msg, "stage").as_string().unwrap_or_default(),
                    bytes: num("bytes").unwrap_or(0.0),
                    total: num("total").unwrap_or(0.0),
                    events: num("events").unwrap_or(0.0),
                    replay: match (num("device"), num("done"), num("of")) {
                        (Some(d), Some(n), Some(o)) => Some((d as i64, n, o)),
                        _ => None,
                    },
                });
            }
        }
        "done" => {
            LAST_JOB.with(|l| l.borrow_mut().take());
            let image = Uint8Array::new(&get(&msg, "db"));
            let name = get(&msg, "name").as_string().unwrap_or_default();
            let warnings = js_sys::Array::from(&get(&msg, "warnings"))
                .iter()
                .filter_map(|w| w.as_string())
                .collect();
            finish_open(state, &name, &image, true, warnings);
        }
        "error" => state.status.set(Status::Failed(Failure::new(
            &get(&msg, "code").as_string().unwrap_or_default(),
            get(&msg, "message").as_string().unwrap_or_default(),
        ))),
        _ => {}
    }
}

fn send(job: &Job) {
    WORKER.with(|w| {
        if let Some(slot) = w.borrow().as_ref() {
            let msg = Object::new();
            let _ = Reflect::set(&msg, &"file".into(), &job.file);
            let _ = Reflect::set(&msg, &"lenient".into(), &job.lenient.into());
            if let Err(e) = slot.worker.post_message(&msg) {
                web_sys::console::error_1(&e);
            }
        }
    });
}

/// Stops a running import and leaves a fresh worker ready for the next file.
pub fn cancel(state: AppState) {
    start_worker(state);
    state.status.set(Status::Idle);
}

/// The real two-device snapshot trunk copies into `dist/sample/` (MIT, from pt-snap-cli's
/// sdist: fixtures/README.md), so a first visit has something to look at before the user
/// finds a snapshot of their own. Same origin, so the CSP's `connect-src 'self'` allows it.
pub const SAMPLE: &str = "sample/snapshot_with_multi_devices.pkl";

/// Fetches the bundled sample and imports it like a dropped file.
pub fn load_sample(state: AppState) {
    let name = SAMPLE.rsplit('/').next().unwrap_or(SAMPLE).to_owned();
    state.status.set(Status::Reading(name.clone()));
    leptos::task::spawn_local(async move {
        match fetch_file(SAMPLE, &name).await {
            Ok(file) => {
                load(state, file);
                state.sample.set(true);
            }
            // A dist/ built without the sample, or served from somewhere that lost it.
            Err(e) => state.status.set(Status::Failed(Failure::new(
                "SNAPSHOT_INVALID",
                format!("Snapshot file does not exist: {SAMPLE} ({e})"),
            ))),
        }
    });
}

async fn fetch_file(url: &str, name: &str) -> Result<File, String> {
    let js = |e: JsValue| e.as_string().unwrap_or_else(|| format!("{e:?}"));
    let response: Response = JsFuture::from(window().fetch_with_str(url))
        .await
        .map_err(js)?
        .unchecked_into();
    if !response.ok() {
        return Err(format!("HTTP {}", response.status()));
    }
    let blob: Blob = JsFuture::from(response.blob().map_err(js)?)
        .await
        .map_err(js)?
        .unchecked_into();
    File::new_with_blob_sequence_and_options(&Array::of1(&blob), name, &FilePropertyBag::new())
        .map_err(js)
}

/// Opens or imports `file`, by what its first bytes say it is (see [`sniff::route`]).
pub fn load(state: AppState, file: File) {
    state.sample.set(false);
    let choice = CHOICE.with(|c| {
        c.set(c.get() + 1);
        c.get()
    });
    let name = file.name();
    state.status.set(Status::Reading(name.clone()));
    leptos::task::spawn_local(async move {
        let head = match read_head(&file).await {
            Ok(head) => head,
            Err(e) => {
                state.status.set(Status::Failed(
                    pt_snap_import::Failure::backend(format!("cannot read {name}: {e}")).into(),
                ));
                return;
            }
        };
        if CHOICE.with(|c| c.get()) != choice {
            return;
        }
        match sniff::route(&name, &head) {
            Route::Database => open_db(state, file).await,
            Route::Import => import(
                state,
                Job {
                    file,
                    lenient: false,
                },
            ),
            Route::Refuse { suffix, content } => {
                // The CLI's words for a file that is no snapshot by name or content (the
                // page also opens SQLite databases).
                let mut failure = pt_snap_import::Failure::bad_suffix(&suffix);
                failure.message = sniff::refusal(&failure.message, &content);
                state.status.set(Status::Failed(failure.into()));
            }
        }
    });
}

/// The file's first [`sniff::HEAD_LEN`] bytes (fewer for a shorter file).
async fn read_head(file: &File) -> Result<Vec<u8>, String> {
    let js = |e: JsValue| e.as_string().unwrap_or_else(|| format!("{e:?}"));
    let end = (sniff::HEAD_LEN as f64).min(file.size());
    let slice = file.slice_with_f64_and_f64(0.0, end).map_err(js)?;
    let buf = JsFuture::from(slice.array_buffer()).await.map_err(js)?;
    Ok(Uint8Array::new(&buf).to_vec())
}

async fn open_db(state: AppState, file: File) {
    let name = file.name();
    match JsFuture::from(file.array_buffer()).await {
        Ok(buf) => finish_open(state, &name, &Uint8Array::new(&buf), false, Vec::new()),
        Err(e) => state.status.set(Status::Failed(Failure::new(
            "DATABASE_SCHEMA_INVALID",
            format!("Cannot read {name}: {e:?}"),
        ))),
    }
}

fn import(state: AppState, job: Job) {
    state.status.set(Status::Importing {
        name: job.file.name(),
        stage: "starting".into(),
        bytes: 0.0,
        total: job.file.size(),
        events: 0.0,
        replay: None,
    });
    LAST_JOB.with(|l| *l.borrow_mut() = Some(job.clone()));
    let ready = WORKER.with(|w| {
        let mut slot = w.borrow_mut();
        match slot.as_mut() {
            Some(s) if s.ready => true,
            Some(s) => {
                s.pending = Some(job.clone());
                false
            }
            None => false,
        }
    });
    if ready {
        send(&job);
    }
}

/// Whether the failure shown is a strict import's replay refusal that a lenient import of the
/// same file could get past.
pub fn lenient_retry_possible(failure: &Failure) -> bool {
    sniff::is_replay_inconsistency(&failure.message)
        && LAST_JOB.with(|l| l.borrow().as_ref().is_some_and(|j| !j.lenient))
}

/// Imports the file of the last (strict) import again, with the lenient replay.
pub fn import_leniently(state: AppState) {
    let Some(file) = LAST_JOB.with(|l| l.borrow().as_ref().map(|j| j.file.clone())) else {
        return;
    };
    CHOICE.with(|c| c.set(c.get() + 1));
    state.sample.set(false);
    import(
        state,
        Job {
            file,
            lenient: true,
        },
    );
}

fn finish_open(
    state: AppState,
    name: &str,
    image: &Uint8Array,
    imported: bool,
    warnings: Vec<String>,
) {
    let generation = state
        .opened
        .with_untracked(|o| o.as_ref().map_or(0, |o| o.generation))
        + 1;
    match data::open(name, image, imported, warnings, generation) {
        Ok(opened) => {
            crate::app::apply_link(state, &opened, generation == 1);
            state.opened.set(Some(opened));
            state.status.set(Status::Idle);
        }
        Err(f) => state.status.set(Status::Failed(f)),
    }
}

/// Offers the imported database as a download, openable by the CLI and by pt-snap-cli 0.4.1.
pub fn download(name: &str) {
    let Some(bytes) = data::with_image(|image| Uint8Array::from(image)) else {
        return;
    };
    let parts = js_sys::Array::of1(&bytes);
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type("application/vnd.sqlite3");
    let Ok(blob) = web_sys::Blob::new_with_u8_array_sequence_and_options(&parts, &opts) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    let document = window().document().expect("a document");
    if let Ok(a) = document.create_element("a") {
        let a: web_sys::HtmlAnchorElement = a.unchecked_into();
        a.set_href(&url);
        a.set_download(&format!("{name}.db"));
        a.click();
    }
    // Revoking at once can cancel the download before the browser has read the blob.
    set_timeout(
        move || {
            let _ = web_sys::Url::revoke_object_url(&url);
        },
        std::time::Duration::from_secs(60),
    );
}
