//! Getting a file in, routed by its first bytes (`sniff.rs`): SQLite images and snapshots
//! (pickle, JSON, gzip/zstd/bzip2 of either) both go to a worker of their own
//! (`client.rs`), which imports or opens them and then answers every question about them.
//! What the worker reports lands here: progress in the status strip, the replay's preview
//! and then the database's overview in [`AppState::opened`].

use std::cell::RefCell;

use js_sys::Array;
use leptos::prelude::*;
use pt_snap_engine::{ErrorCode, Failure, FromWorker, IndexesLeft};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, File, FilePropertyBag, Response};

use crate::client::{self, Job};
use crate::opened::Opened;
use crate::sniff::{self, Route};
use crate::source::Source;
use crate::state::{AppState, Indexing, Status};

thread_local! {
    /// The last import sent, so a strict one the replay refused can be run again leniently,
    /// and one reopened by name, size and time imported again if its hash says otherwise.
    static LAST_IMPORT: RefCell<Option<(Source, bool)>> = const { RefCell::new(None) };
    /// Bumped by every file chosen: a file whose first bytes arrive after a later choice is
    /// dropped.
    static CHOICE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// The tail of a new file's first preview: mounting its views. It runs in a task of its
    /// own, so the task that decodes the preview does not also draw the file (together they
    /// came near the 100 ms of a long task at 1M events); whatever touches the file first
    /// after it — the worker's next message, a cancel, another file — runs it first.
    static MOUNT: RefCell<Option<Box<dyn FnOnce()>>> = const { RefCell::new(None) };
}

/// Runs the pending [`MOUNT`], if any.
fn mount_pending() {
    if let Some(mount) = MOUNT.with(|m| m.borrow_mut().take()) {
        mount();
    }
}

/// The timeline's bucket count, which the import's preview is cut to.
pub use crate::timeline::BUCKETS;

/// Stops an import or open in progress (its worker ends, and with it everything it held);
/// the file on screen stays. An import already showing its preview is that file: it goes.
pub fn cancel(state: AppState) {
    mount_pending();
    client::cancel_open();
    state.status.set(Status::Idle);
    if state
        .opened
        .with_untracked(|o| o.as_ref().is_some_and(|o| !o.ready()))
    {
        client::close_shown();
        state.opened.set(None);
    }
    client::warm_up_when_idle();
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
                load(state, Source::File(file));
                state.sample.set(true);
            }
            // A dist/ built without the sample, or served from somewhere that lost it.
            Err(e) => state.status.set(Status::Failed(Failure::new(
                ErrorCode::SnapshotInvalid,
                format!("Snapshot file does not exist: {SAMPLE} ({e})"),
            ))),
        }
    });
}

async fn fetch_file(url: &str, name: &str) -> Result<File, String> {
    let js = |e: JsValue| client::js_text(&e);
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
pub fn load(state: AppState, file: Source) {
    state.sample.set(false);
    let choice = CHOICE.with(|c| {
        c.set(c.get() + 1);
        c.get()
    });
    let name = file.name();
    state.status.set(Status::Reading(name.clone()));
    leptos::task::spawn_local(async move {
        let head = match file.head(sniff::HEAD_LEN).await {
            Ok(head) => head,
            Err(e) => {
                state
                    .status
                    .set(Status::Failed(pt_snap_import::failure::backend(format!(
                        "cannot read {name}: {e}"
                    ))));
                return;
            }
        };
        if CHOICE.with(|c| c.get()) != choice {
            return;
        }
        match sniff::route(&name, &head) {
            Route::Database => {
                let (name, total) = (file.name(), file.size());
                start(state, Job::Open { file }, name, total)
            }
            Route::Import => import(state, file, false, true),
            Route::Refuse { suffix, content } => {
                // The CLI's words for a file that is no snapshot by name or content (the
                // page also opens SQLite databases).
                let mut failure = pt_snap_import::failure::bad_suffix(&suffix);
                failure.message = sniff::refusal(&failure.message, &content);
                state.status.set(Status::Failed(failure));
            }
        }
    });
}

/// `quick_match`: a cached import of a file of the same name, size and modification time
/// may be shown before the file is hashed (`ToWorker::Import`).
fn import(state: AppState, file: Source, lenient: bool, quick_match: bool) {
    LAST_IMPORT.with(|l| *l.borrow_mut() = Some((file.clone(), lenient)));
    let (name, total) = (file.name(), file.size());
    start(
        state,
        Job::Import {
            file,
            lenient,
            buckets: BUCKETS,
            // Only a snapshot shown as imported here is "the same file"; a `.db` made from it
            // is opened as what was dropped.
            shown_sha256: state.opened.with_untracked(|o| {
                let o = o
                    .as_ref()
                    .filter(|o| o.overview.as_ref().is_some_and(|v| v.imported))?;
                o.source_sha256().map(str::to_owned)
            }),
            quick_match,
        },
        name,
        total,
    );
}

/// Reopens a database this browser keeps from an earlier import.
pub fn reopen(state: AppState, entry: &pt_snap_opfs::Entry) {
    CHOICE.with(|c| c.set(c.get() + 1));
    state.sample.set(false);
    start(
        state,
        Job::Reopen {
            sha256: entry.sha256.clone(),
            cache_hit: true,
        },
        entry.source_name.clone(),
        0.0,
    );
}

/// Hands `job` to a fresh worker; what it reports moves the page. A file still being
/// imported on screen gives way to it (`client::open` ends its worker).
fn start(state: AppState, job: Job, name: String, total: f64) {
    mount_pending();
    if state
        .opened
        .with_untracked(|o| o.as_ref().is_some_and(|o| !o.ready()))
    {
        state.opened.set(None);
    }
    state.status.set(Status::Importing {
        name: name.clone(),
        progress: None,
        total,
    });
    let choice = CHOICE.with(|c| c.get());
    let listener = std::rc::Rc::new(move |message: FromWorker, attachment: JsValue| {
        on_message(state, &name, total, choice, message, attachment)
    });
    if let Err(f) = client::open(job, listener) {
        state.status.set(Status::Failed(f));
    }
}

/// `choice`: the [`CHOICE`] the job was started under.
fn on_message(
    state: AppState,
    name: &str,
    total: f64,
    choice: u64,
    message: FromWorker,
    attachment: JsValue,
) {
    mount_pending();
    match message {
        FromWorker::Progress(p) => {
            if matches!(state.status.get_untracked(), Status::Importing { .. }) {
                state.status.set(Status::Importing {
                    name: name.to_owned(),
                    progress: Some(p),
                    total,
                });
            }
        }
        FromWorker::Preview(preview) => {
            let first = state.opened.with_untracked(|o| {
                o.as_ref()
                    .is_none_or(|o| o.ready() || o.name != preview.name)
            });
            if first {
                // Another file's: its indexes are nothing of this one's.
                state.indexing.set(Indexing::Done);
            }
            let opened = Opened {
                name: preview.name.clone(),
                preview: Some(preview),
                overview: None,
            };
            if first {
                MOUNT.with(|m| *m.borrow_mut() = Some(Box::new(move || show(state, opened))));
                set_timeout(mount_pending, std::time::Duration::ZERO);
            } else {
                state.opened.set(Some(opened));
            }
        }
        FromWorker::Opened(overview) => {
            if !overview.source_unchecked {
                LAST_IMPORT.with(|l| l.borrow_mut().take());
            }
            state.indexing.set(Indexing::Done);
            state.status.set(Status::Idle);
            let previewed = state.opened.with_untracked(|o| {
                o.as_ref()
                    .filter(|o| !o.ready())
                    .and_then(|o| o.preview.clone())
            });
            let opened = Opened {
                name: overview.name.clone(),
                preview: previewed.clone(),
                overview: Some(overview),
            };
            if previewed.is_some() {
                // Same file: the views keep their generation and now get their answers.
                crate::location::apply_link(state, &opened, false);
                state.opened.set(Some(opened));
            } else {
                show(state, opened);
            }
        }
        FromWorker::SourceChecked { same: true } => {
            state.opened.update(|o| {
                if let Some(v) = o.as_mut().and_then(|o| o.overview.as_mut()) {
                    v.source_unchecked = false;
                }
            });
        }
        FromWorker::SourceChecked { same: false } => {
            // Another file under the name, size and time of one imported: what is shown is
            // not it, so it goes, and the file is imported, hashed first; unless another
            // file was chosen since, which is the one to show.
            client::close_shown();
            state.opened.set(None);
            if CHOICE.with(|c| c.get()) == choice {
                if let Some((file, lenient)) = LAST_IMPORT.with(|l| l.borrow_mut().take()) {
                    CHOICE.with(|c| c.set(c.get() + 1));
                    import(state, file, lenient, false);
                }
            }
        }
        FromWorker::AlreadyOpen => {
            // Said as the cache would: this database, without importing again.
            state.status.set(Status::Idle);
            state.opened.update(|o| {
                if let Some(v) = o.as_mut().and_then(|o| o.overview.as_mut()) {
                    v.cache_hit = true;
                }
            });
        }
        FromWorker::Failed(f) => {
            state.status.set(Status::Failed(f));
            if state
                .opened
                .with_untracked(|o| o.as_ref().is_some_and(|o| !o.ready()))
            {
                state.opened.set(None);
            }
        }
        FromWorker::Indexes(Ok(IndexesLeft { left, db_bytes })) => {
            if left > 0 {
                state.indexing.set(Indexing::Left(left));
            } else {
                state.indexing.set(Indexing::Done);
                state.opened.update(|o| {
                    if let Some(v) = o.as_mut().and_then(|o| o.overview.as_mut()) {
                        v.db_bytes = db_bytes;
                    }
                });
            }
        }
        // Said on the header's badge, not as the page's error: the file is open and answers.
        FromWorker::Indexes(Err(f)) => state.indexing.set(Indexing::Failed(f.message)),
        FromWorker::Download(answer) => match answer {
            Ok(file_name) => save(&file_name, attachment),
            Err(f) => state.status.set(Status::Failed(f)),
        },
        // The client and the worker's owner (`file_worker`) handle these themselves;
        // summary tables are read by workers of the Ranks view's, never this one.
        FromWorker::Ready
        | FromWorker::Answer { .. }
        | FromWorker::Stored { .. }
        | FromWorker::StartReader { .. }
        | FromWorker::EndReader { .. }
        | FromWorker::Summaries(_) => {}
    }
}

/// Shows a newly opened file: a new generation, so every view asks again.
fn show(state: AppState, opened: Opened) {
    let generation = state.generation.get_untracked() + 1;
    crate::location::apply_link(state, &opened, generation == 1);
    state.opened.set(Some(opened));
    state.generation.set(generation);
}

/// Whether the failure shown is a strict import's replay refusal that a lenient import of the
/// same file could get past.
pub fn lenient_retry_possible(failure: &Failure) -> bool {
    sniff::is_replay_inconsistency(&failure.message)
        && LAST_IMPORT.with(|l| l.borrow().as_ref().is_some_and(|(_, lenient)| !lenient))
}

/// Imports the file of the last (strict) import again, with the lenient replay.
pub fn import_leniently(state: AppState) {
    let Some(file) = LAST_IMPORT.with(|l| l.borrow().as_ref().map(|(f, _)| f.clone())) else {
        return;
    };
    CHOICE.with(|c| c.set(c.get() + 1));
    state.sample.set(false);
    // Hashed first: the file was just read, and a cached import under its name, size and
    // time may be another file's (the one a failed check replaced).
    import(state, file, true, false);
}

/// Offers `text` as a download named `file_name`.
pub fn save_text(file_name: &str, mime: &str, text: &str) {
    let parts = js_sys::Array::of1(&JsValue::from_str(text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime);
    if let Ok(blob) = Blob::new_with_str_sequence_and_options(&parts, &options) {
        save(file_name, blob.into());
    }
}

/// Offers a `Blob` as a download: the database the worker sent (openable by the CLI and
/// by pt-snap-cli 0.4.1), or a page.
fn save(file_name: &str, blob: JsValue) {
    let Ok(blob) = blob.dyn_into::<Blob>() else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    let document = window().document().expect("a document");
    if let Ok(a) = document.create_element("a") {
        let a: web_sys::HtmlAnchorElement = a.unchecked_into();
        a.set_href(&url);
        a.set_download(file_name);
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
