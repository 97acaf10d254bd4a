//! The page: header with the file picker, the loading/error strip, and the views of the open
//! database. State that views share lives in `AppState` (all `Copy` signals).

use leptos::ev;
use leptos::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{DragEvent, HtmlInputElement};

use crate::client::{self, Reply};
use crate::fmt;
pub use crate::link::Tab;
use crate::link::{self, parse_hash};
use crate::lists;
use crate::loader;
use crate::opened::Opened;
use crate::views;
use pt_snap_engine::{Answer, ErrorCode, Failure, Progress, Query};

#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Idle,
    Reading(String),
    /// A worker is importing or opening `name` (`total` bytes).
    Importing {
        name: String,
        progress: Option<Progress>,
        total: f64,
    },
    Failed(Failure),
}

#[derive(Clone, Copy)]
pub struct AppState {
    pub opened: RwSignal<Option<Opened>>,
    pub status: RwSignal<Status>,
    pub device: RwSignal<i64>,
    /// The events the timelines show (counters and allocations); `None`: all of them.
    pub window: RwSignal<Option<(i64, i64)>>,
    /// The event the memory tree shows; `None` means the active peak.
    pub event: RwSignal<Option<i64>>,
    pub tab: RwSignal<Tab>,
    /// The open file is the bundled sample, so the URL can say `#sample` and a reload brings
    /// it back.
    pub sample: RwSignal<bool>,
    /// Bumped when another file (even one of the same name) is shown, so views ask again;
    /// not when the file shown becomes ready.
    pub generation: RwSignal<u32>,
    /// How long one question may run, in seconds (the CLI's `--timeout`).
    pub budget_s: RwSignal<f64>,
    /// Several snapshots opened together (the ranks of a job).
    pub job: RwSignal<Option<crate::job::Job>>,
    /// What the page shows: the open file's views, or the job's Ranks or Compare view.
    pub screen: RwSignal<Screen>,
    /// What the Compare view compares.
    pub compare: RwSignal<crate::compare::Compare>,
    /// Bumped by each progress message of a Compare side being measured.
    pub compare_stage: RwSignal<u32>,
    /// The user's memory-category rules, `(file name, TOML)` as `--categories` reads them;
    /// `None`: the built-in ones.
    pub category_rules: RwSignal<Option<(String, String)>>,
    /// The open file's deferred indexes, which its worker builds between questions.
    pub indexing: RwSignal<Indexing>,
}

/// Where the open file's worker is with the indexes its import deferred.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Indexing {
    /// None left (or none deferred).
    #[default]
    Done,
    /// This many still to build.
    Left(usize),
    /// One failed, with the message: every view still answers, some more slowly.
    Failed(String),
}

/// What fills the page below the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    /// The open file's views (or the welcome, when none is open).
    File,
    Ranks,
    Compare,
}

impl AppState {
    /// Which file is open (0: none), tracked.
    pub fn generation(self) -> u32 {
        self.generation.get()
    }

    /// Whether the open file's database is ready for questions, tracked.
    pub fn ready(self) -> bool {
        self.opened.with(|o| o.as_ref().is_some_and(Opened::ready))
    }

    /// A question about the selected device, asked with the user's time budget and again
    /// whenever another file is shown, the device changes, or anything `query` reads does
    /// (see [`client::watch`]).
    pub fn watch<T: Send + Sync + Clone + 'static>(
        self,
        query: impl Fn(i64) -> Option<Query> + 'static,
        pick: fn(Answer) -> Option<T>,
    ) -> RwSignal<Reply<T>> {
        client::watch(
            self.budget_s.into(),
            move || {
                self.generation();
                query(self.device.get())
            },
            pick,
        )
    }
}

/// A minute is far above what any view needs on a database a browser can hold (seconds for
/// a 1M-event one) and bounds a crafted one.
pub const DEFAULT_BUDGET_S: f64 = 60.0;

/// Applies the URL's deep link to `opened`: the first file opened (a link followed into the
/// page) or the open one on `hashchange`. A device it lacks falls back to the current one,
/// then to its lowest; an event outside that device's trace falls back to the active peak.
/// A later file keeps the device and view but not the event, which belonged to the file
/// before.
pub fn apply_link(state: AppState, opened: &Opened, with_event: bool) {
    let link = parse_hash(&window().location().hash().unwrap_or_default());
    let current = state.device.get_untracked();
    let device = [link.device, Some(current)]
        .into_iter()
        .flatten()
        .find(|d| opened.devices().contains(d))
        .or_else(|| opened.devices().first().copied())
        .unwrap_or(0);
    let bounds = opened
        .bounds()
        .iter()
        .find(|(d, _)| *d == device)
        .and_then(|(_, b)| *b);
    let event = link
        .event
        .filter(|_| with_event)
        .filter(|e| bounds.is_some_and(|(lo, hi)| (lo..=hi).contains(e)));
    if state.device.get_untracked() != device {
        state.device.set(device);
    }
    if state.event.get_untracked() != event {
        state.event.set(event);
    }
    if let Some(tab) = link.view {
        if state.tab.get_untracked() != tab {
            state.tab.set(tab);
        }
    }
}

/// Writes the current choice into the URL without a history entry (and without firing
/// `hashchange`).
fn write_hash(sample: bool, device: i64, event: Option<i64>, tab: Tab) {
    let hash = link::hash(sample, device, event, tab);
    if window().location().hash().ok().as_deref() == Some(hash.as_str()) {
        return;
    }
    if let Ok(history) = window().history() {
        let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&hash));
    }
}

fn files_of(list: &web_sys::FileList) -> Vec<web_sys::File> {
    (0..list.length()).filter_map(|i| list.get(i)).collect()
}

/// Each file with where it was found: below the folder chosen (`webkitRelativePath`), or
/// its bare name.
fn with_paths(files: Vec<web_sys::File>) -> Vec<(web_sys::File, String)> {
    files
        .into_iter()
        .map(|f| {
            // Not in web-sys's `File`: the path below the folder chosen, empty for a file.
            let relative = js_sys::Reflect::get(&f, &"webkitRelativePath".into())
                .ok()
                .and_then(|p| p.as_string())
                .unwrap_or_default();
            let path = if relative.is_empty() {
                f.name()
            } else {
                relative
            };
            (f, path)
        })
        .collect()
}

/// The entries dropped, when one of them is a folder. Read in the drop's own handler: the
/// browser empties the list once it returns.
fn dropped_entries(items: &web_sys::DataTransferItemList) -> Option<Vec<web_sys::FileSystemEntry>> {
    let entries: Vec<web_sys::FileSystemEntry> = (0..items.length())
        .filter_map(|i| items.get(i)?.webkit_get_as_entry().ok().flatten())
        .collect();
    entries.iter().any(|e| e.is_directory()).then_some(entries)
}

/// Every file of the dropped `entries`, with its path from the dropped folder's parent
/// (`job/rank0.pkl`, `export/summary/job=a/rank=0/…`) as choosing the folder gives it; and
/// the entries the browser would not read (a folder or file it may not open), with why.
async fn files_below(
    entries: Vec<web_sys::FileSystemEntry>,
) -> (Vec<(web_sys::File, String)>, Vec<String>) {
    use wasm_bindgen_futures::JsFuture;
    let mut found = Vec::new();
    let mut unreadable = Vec::new();
    let mut pending = entries;
    while let Some(entry) = pending.pop() {
        if entry.is_directory() {
            let reader = entry
                .unchecked_ref::<web_sys::FileSystemDirectoryEntry>()
                .create_reader();
            // A directory reader gives its entries a batch at a time, then an empty one.
            loop {
                let batch = js_sys::Promise::new(&mut |resolve, reject| {
                    if let Err(e) =
                        reader.read_entries_with_callback_and_callback(&resolve, &reject)
                    {
                        let _ = reject.call1(&wasm_bindgen::JsValue::NULL, &e);
                    }
                });
                let batch = match JsFuture::from(batch).await {
                    Ok(batch) => batch,
                    Err(e) => {
                        unreadable.push(format!(
                            "{}/ ({})",
                            entry.full_path(),
                            client::js_text(&e)
                        ));
                        break;
                    }
                };
                let batch: js_sys::Array = batch.unchecked_into();
                if batch.length() == 0 {
                    break;
                }
                pending.extend(
                    batch
                        .iter()
                        .map(|e| e.unchecked_into::<web_sys::FileSystemEntry>()),
                );
            }
        } else {
            let path = entry.full_path().trim_start_matches('/').to_owned();
            let file = js_sys::Promise::new(&mut |resolve, reject| {
                entry
                    .unchecked_ref::<web_sys::FileSystemFileEntry>()
                    .file_with_callback_and_callback(&resolve, &reject);
            });
            match JsFuture::from(file).await {
                Ok(file) => found.push((file.unchecked_into::<web_sys::File>(), path)),
                Err(e) => unreadable.push(format!("{path} ({})", client::js_text(&e))),
            }
        }
    }
    found.sort_by(|a, b| a.1.cmp(&b.1));
    (found, unreadable)
}

/// One file opens in every view; several (or a folder) are the ranks of a job; Parquet
/// files are an exported summary table's parts, the ranks of a job without their snapshots.
fn open_files(state: AppState, chosen: Vec<(web_sys::File, String)>, folder: bool) {
    let (files, paths): (Vec<web_sys::File>, Vec<String>) = chosen.into_iter().unzip();
    let parts = crate::job::summary_parts(&paths);
    if !parts.is_empty() {
        let files = parts.iter().map(|&i| files[i].clone()).collect();
        let paths = parts.iter().map(|&i| paths[i].clone()).collect();
        return crate::ranks::start_summary(state, files, paths);
    }
    let files: Vec<web_sys::File> = crate::job::members(&paths, folder)
        .into_iter()
        .map(|i| files[i].clone())
        .collect();
    match files.len() {
        0 if folder => state.status.set(Status::Failed(Failure::new(
            ErrorCode::SnapshotInvalid,
            "The folder has no *.pkl, *.pickle (also .gz/.zst/.bz2) or *.db files.",
        ))),
        0 => {}
        1 if !folder => {
            state.screen.set(Screen::File);
            loader::load(state, files.into_iter().next().expect("one"));
        }
        _ => crate::ranks::start(state, files),
    }
}

#[component]
pub fn App() -> impl IntoView {
    let state = AppState {
        opened: RwSignal::new(None),
        status: RwSignal::new(Status::Idle),
        device: RwSignal::new(0),
        event: RwSignal::new(None),
        window: RwSignal::new(None),
        tab: RwSignal::new(Tab::Overview),
        sample: RwSignal::new(false),
        generation: RwSignal::new(0),
        budget_s: RwSignal::new(DEFAULT_BUDGET_S),
        job: RwSignal::new(None),
        screen: RwSignal::new(Screen::File),
        compare: RwSignal::new(Default::default()),
        compare_stage: RwSignal::new(0),
        category_rules: RwSignal::new(None),
        indexing: RwSignal::new(Indexing::Done),
    };
    provide_context(state);
    client::warm_up_when_idle();
    // Another file or device starts with its whole trace in view.
    Effect::new(move |_| {
        state.generation();
        state.device.track();
        state.window.set(None);
    });
    // Esc stops whatever the open file's worker is answering.
    let _ = window_event_listener(ev::keydown, move |e: web_sys::KeyboardEvent| {
        if e.key() == "Escape" {
            client::cancel_all();
        }
    });
    if parse_hash(&window().location().hash().unwrap_or_default()).sample {
        loader::load_sample(state);
    }
    // A link edited or followed while a file is open moves the page there; before that, the
    // hash waits for the file.
    let _ = window_event_listener(ev::hashchange, move |_| {
        if let Some(opened) = state.opened.get_untracked() {
            apply_link(state, &opened, true);
            // What could not be followed (an unknown device or event) leaves the URL too.
            write_hash(
                state.sample.get_untracked(),
                state.device.get_untracked(),
                state.event.get_untracked(),
                state.tab.get_untracked(),
            );
        }
    });
    Effect::new(move |_| {
        if state.opened.with(Option::is_some) {
            write_hash(
                state.sample.get_untracked(),
                state.device.get(),
                state.event.get(),
                state.tab.get(),
            );
        }
    });

    // The views are built once per file shown, not again when it becomes ready.
    let has_file = Memo::new(move |_| state.opened.with(Option::is_some));
    // Not rebuilt by each file of a job that finishes.
    let has_job = Memo::new(move |_| state.job.with(Option::is_some));

    // The whole page is the drop zone; the overlay only says so while something is dragged.
    let dragging = RwSignal::new(false);
    let _ = window_event_listener(ev::dragover, move |e: DragEvent| {
        e.prevent_default();
        dragging.set(true);
    });
    let _ = window_event_listener(ev::dragleave, move |e: DragEvent| {
        if e.related_target().is_none() {
            dragging.set(false);
        }
    });
    let _ = window_event_listener(ev::drop, move |e: DragEvent| {
        e.prevent_default();
        dragging.set(false);
        let Some(transfer) = e.data_transfer() else {
            return;
        };
        match dropped_entries(&transfer.items()) {
            Some(entries) => wasm_bindgen_futures::spawn_local(async move {
                let (found, unreadable) = files_below(entries).await;
                open_files(state, found, true);
                // What was read is shown; what was not is said, not passed over.
                if !unreadable.is_empty() {
                    state
                        .status
                        .set(Status::Failed(pt_snap_import::failure::backend(format!(
                            "the browser would not read {} of the dropped entries, left out: {}",
                            unreadable.len(),
                            unreadable.join(", ")
                        ))));
                }
            }),
            None => {
                let files = transfer.files().map(|f| files_of(&f)).unwrap_or_default();
                open_files(state, with_paths(files), false)
            }
        }
    });

    let on_pick = move |e: ev::Event| {
        let input: HtmlInputElement = e.target().expect("an input").unchecked_into();
        if let Some(files) = input.files() {
            open_files(state, with_paths(files_of(&files)), false);
        }
        // Choosing the same file again must fire `change` again.
        input.set_value("");
    };
    // `webkitdirectory` (every browser's name for it) has no typed attribute in Leptos.
    let folder_input = NodeRef::<leptos::html::Input>::new();
    Effect::new(move |_| {
        if let Some(input) = folder_input.get() {
            let _ = input.set_attribute("webkitdirectory", "");
        }
    });
    let on_pick_folder = move |e: ev::Event| {
        let input: HtmlInputElement = e.target().expect("an input").unchecked_into();
        if let Some(files) = input.files() {
            open_files(state, with_paths(files_of(&files)), true);
        }
        input.set_value("");
    };

    view! {
        <header class="top">
            <div class="brand">
                <span class="logo" aria-hidden="true">"▚"</span>
                <h1>"pt-snap"</h1>
                <span class="tagline">"PyTorch memory snapshots, analysed in your browser"</span>
            </div>
            <div class="file-actions">
                <OpenedName/>
                <label class="button primary" for="file-input">"Open file…"</label>
                // Only a hint for the file dialog: files are recognised by content, whatever
                // their name.
                <input id="file-input" data-testid="file-input" class="visually-hidden" type="file" multiple
                    accept=accepted_suffixes() on:change=on_pick/>
                <label class="button" for="folder-input" title="The snapshots of a job, one per rank, or an exported summary table (pt-snap export --format parquet): the Ranks view compares them">"Open folder…"</label>
                <input id="folder-input" data-testid="folder-input" class="visually-hidden" type="file" multiple
                    node_ref=folder_input on:change=on_pick_folder/>
                <Show when=move || state.job.with(Option::is_some)>
                    <button class="button" data-testid="show-ranks" class:selected=move || state.screen.get() == Screen::Ranks
                        on:click=move |_| state.screen.update(|s| *s = if *s == Screen::Ranks { Screen::File } else { Screen::Ranks })>
                        {move || state.job.with(|j| j.as_ref().map_or(String::new(), |j| format!("Ranks ({})", j.names.len())))}
                    </button>
                    // A summary table's ranks have no snapshots to compare.
                    <Show when=move || state.job.with(|j| j.as_ref().is_some_and(|j| j.summary().is_none()))>
                        <button class="button" data-testid="show-compare" class:selected=move || state.screen.get() == Screen::Compare
                            on:click=move |_| if state.screen.get_untracked() == Screen::Compare {
                                state.screen.set(Screen::File);
                            } else {
                                crate::compare::show(state);
                            }>"Compare"</button>
                    </Show>
                </Show>
                <Show when=move || state.opened.with(|o| o.as_ref().and_then(|o| o.overview.as_ref()).is_some_and(|o| o.imported))>
                    <button class="button" data-testid="download-db" on:click=move |_| client::request_download()>"Download .db"</button>
                </Show>
            </div>
            <LenientNotice/>
        </header>
        <StatusStrip/>
        <main>
            {move || match (state.screen.get(), has_job.get()) {
                (Screen::Ranks, true) => view! { <crate::ranks::RanksView/> }.into_any(),
                (Screen::Compare, true) => view! { <crate::compare::CompareView/> }.into_any(),
                _ if has_file.get() => view! { <Workspace/> }.into_any(),
                _ => view! { <Welcome/> }.into_any(),
            }}
        </main>
        <div class="drop-overlay" class:visible=move || dragging.get() aria-hidden="true">
            <div>"Drop a snapshot (pickle or JSON, plain or gzip/zstd/bzip2) or a SnapshotDB .db"</div>
        </div>
    }
}

#[component]
fn OpenedName() -> impl IntoView {
    let state = expect_context::<AppState>();
    move || {
        state.opened.get().map(|o| {
            let what = o.describe();
            let cached = o.overview.as_ref().filter(|v| v.cache_hit).map(|v| v.source_unchecked);
            view! {
                <span class="opened">
                    <strong title=o.name.clone()>{o.name.clone()}</strong>
                    <span class="muted" title=o.db_bytes().map(|b| fmt::exact(b as i64))>
                        {format!("\u{a0}· {what}")}
                    </span>
                    {o.kept().map(|kept| view! {
                        <span class="muted kept" data-testid="kept" title="An import kept in this browser opens again from its cache; one in this tab only is gone when the tab closes">
                            {format!("· {kept}")}
                        </span>
                    })}
                    <span class="engine-state" data-testid="engine-state" data-value=o.engine_state()
                        title="peaks: shown from the replay while the database is written; ready: every view can ask">
                        {o.engine_state()}
                    </span>
                    {move || {
                        let (value, text, title) = match state.indexing.get() {
                            Indexing::Done => ("done", String::new(), String::new()),
                            Indexing::Left(left) => (
                                "building",
                                format!("indexing · {left} left"),
                                "Indexes are built in the background, between questions: every view answers meanwhile, some more slowly".to_owned(),
                            ),
                            Indexing::Failed(why) => (
                                "failed",
                                "not indexed".to_owned(),
                                format!("The database's indexes could not be built ({why}); every view still answers, some more slowly"),
                            ),
                        };
                        view! {
                            <span class="engine-state indexing" data-testid="engine-indexes"
                                data-value=value hidden=value == "done" title=title>
                                {text}
                            </span>
                        }
                    }}
                    {cached.map(|unchecked| {
                        let (value, text, title) = if unchecked {
                            ("checking", "from cache…", "Reopened from this browser's cache by the file's name, size and modification time; its SHA-256 is being checked, and if it is another file it is imported")
                        } else {
                            ("same", "from cache", "Reopened from this browser's cache of imports: the same file, by its SHA-256")
                        };
                        view! { <span class="cache-hit" data-testid="cache-hit" data-value=value title=title>{text}</span> }
                    })}
                </span>
            }
        })
    }
}

/// Says, for as long as the database is open, that its numbers come from a lenient replay.
#[component]
fn LenientNotice() -> impl IntoView {
    let state = expect_context::<AppState>();
    let issues = Memo::new(move |_| {
        state
            .opened
            .with(|o| o.as_ref().and_then(|o| o.overview.as_ref()?.lenient_issues))
    });
    move || {
        issues.get().map(|n| {
            let events = if n == 1 {
                "1 event".to_owned()
            } else {
                format!("{} events", fmt::grouped(n))
            };
            view! {
                <div class="lenient-notice" role="note" data-testid="lenient-notice" data-value=n.to_string()>
                    <strong>"Lenient replay: "</strong>
                    {format!("{events} could not be reconciled with the allocator state and were applied from the trace alone; the numbers are approximate.")}
                    <span class="muted">
                        " Each is listed in the table " <code>"pt_snap_x_replay_issues"</code> " (SQL tab)."
                    </span>
                </div>
            }
        })
    }
}

#[component]
fn StatusStrip() -> impl IntoView {
    let state = expect_context::<AppState>();
    move || {
        match state.status.get() {
            Status::Idle => ().into_any(),
            Status::Reading(name) => view! {
                <div class="status" role="status">{format!("Opening {name}…")}</div>
            }
            .into_any(),
            Status::Importing {
                name,
                progress,
                total,
            } => {
                let (value, detail) = progress_text(progress.as_ref(), total);
                view! {
                <div class="status" role="status" data-testid="import-progress">
                    <span>{format!("{name} — {detail}")}</span>
                    <progress max="1" value=value.to_string()></progress>
                    <button class="button" data-testid="cancel-import" on:click=move |_| loader::cancel(state)>"Cancel"</button>
                </div>
            }
            .into_any()
            }
            Status::Failed(f) => {
                let dismiss = move || {
                    view! {
                        <button class="button" data-testid="dismiss-error"
                            on:click=move |_| state.status.set(Status::Idle)>"Dismiss"</button>
                    }
                };
                // A trace the strict replay cannot reconcile can still be imported, approximately:
                // offered on a row of its own, beside the dismissal.
                let actions = if loader::lenient_retry_possible(&f) {
                    view! {
                        <div class="lenient-offer" data-testid="lenient-offer">
                            <button class="button primary" data-testid="import-lenient"
                                on:click=move |_| loader::import_leniently(state)>"Import leniently"</button>
                            <span>
                                "Approximate: events the allocator replay cannot reconcile are applied from "
                                "the trace alone and listed (table " <code>"pt_snap_x_replay_issues"</code> ")."
                            </span>
                            {dismiss()}
                        </div>
                    }
                    .into_any()
                } else {
                    dismiss().into_any()
                };
                view! {
                    <div class="status error" role="alert" data-testid="error">
                        <code data-testid="error-code">{f.code.as_str()}</code>
                        <span data-testid="error-message">{f.message.clone()}</span>
                        {actions}
                        {crate::views::hint_line(&f)}
                    </div>
                }
                .into_any()
            }
        }
    }
}

/// The progress bar's fraction and words for where an import is.
fn progress_text(progress: Option<&Progress>, total: f64) -> (f64, String) {
    match progress {
        None => (0.0, "starting".to_owned()),
        Some(Progress::Decoding { bytes, events, .. }) => (
            if total > 0.0 { bytes / total } else { 0.0 },
            format!(
                "decoding: {} of {} read, {} events",
                fmt::bytes(*bytes as i64),
                fmt::bytes(total as i64),
                fmt::grouped(*events as i64)
            ),
        ),
        Some(Progress::Hashing {
            bytes: Some(bytes),
            total,
        }) => (
            if *total > 0.0 { bytes / total } else { 0.0 },
            format!(
                "looking for it in the cache: {} of {} hashed",
                fmt::bytes(*bytes as i64),
                fmt::bytes(*total as i64)
            ),
        ),
        Some(Progress::Hashing { bytes: None, total }) => (
            0.0,
            format!(
                "looking for it in the cache: hashing {}",
                fmt::bytes(*total as i64)
            ),
        ),
        Some(Progress::Replaying { device, done, of }) => (
            if *of > 0 {
                *done as f64 / *of as f64
            } else {
                1.0
            },
            format!(
                "replaying device {device}: {} / {} events",
                fmt::grouped(*done as i64),
                fmt::grouped(*of as i64)
            ),
        ),
        Some(Progress::Writing { device }) => (
            1.0,
            format!("writing the database (device {device}); the peaks are ready"),
        ),
        Some(Progress::Indexing) => (
            1.0,
            "finishing the database; the peaks are ready".to_owned(),
        ),
    }
}

#[component]
fn Welcome() -> impl IntoView {
    let state = expect_context::<AppState>();
    view! {
        <section class="welcome">
            <h2>"Drop a snapshot anywhere on this page"</h2>
            <p>
                "A snapshot from " <code>"torch.cuda.memory._dump_snapshot()"</code>
                " (or torch_npu's) — the pickle, or the same data as JSON, either one plain or "
                "gzip-, zstd- or bzip2-compressed — is imported into a SQLite SnapshotDB right here, "
                "in a background worker. A " <code>".db"</code> " made by " <code>"pt-snap import"</code>
                " or pt-snap-cli 0.4.1 opens directly. Files are recognised by their content, whatever their name."
            </p>
            <p class="muted">
                "Nothing leaves this tab: no upload, no network request. A pickle is read by a decoder that "
                "refuses anything that could run code."
            </p>
            <div class="welcome-actions">
                <label class="button primary big" for="file-input">"Choose a file…"</label>
                <button class="button big" data-testid="open-sample" on:click=move |_| loader::load_sample(state)
                    title=loader::SAMPLE>"Try a sample: two GPUs, 1.3 MB"</button>
            </div>
            <CachedFiles/>
        </section>
    }
}

/// The imports this browser keeps (OPFS), newest first: each reopens in about a second, with
/// or without its file, until removed.
#[component]
fn CachedFiles() -> impl IntoView {
    let state = expect_context::<AppState>();
    let refresh = RwSignal::new(0u32);
    let entries = LocalResource::new(move || {
        refresh.track();
        async move {
            // What killed imports left is of no use to anyone.
            let _ = pt_snap_opfs::cleanup_incomplete().await;
            pt_snap_opfs::list().await.unwrap_or_default()
        }
    });
    let remove = move |sha256: String| {
        leptos::task::spawn_local(async move {
            if let Err(e) = pt_snap_opfs::remove(&sha256).await {
                state.status.set(Status::Failed(Failure::new(
                    ErrorCode::Internal,
                    format!("Could not remove the cached database: {e}"),
                )));
            }
            refresh.update(|n| *n += 1);
        });
    };
    move || {
        let list = entries.get().unwrap_or_default();
        (!list.is_empty()).then(|| {
            let total: u64 = list.iter().map(|e| e.db_bytes).sum();
            // Imports of different files under one name (a rerun's snapshot, a file changed
            // in place) are told apart by their digest's first digits.
            let mut named = std::collections::HashMap::<String, usize>::new();
            for e in &list {
                *named.entry(e.source_name.clone()).or_default() += 1;
            }
            view! {
                <section class="cached" data-testid="cached-files">
                    <h3>"Imported before in this browser"</h3>
                    <p class="muted small">
                        {format!("{} kept in this browser's private storage ({}), reopened without importing again. Dropping the same file again opens its copy too.",
                            if list.len() == 1 { "One database".to_owned() } else { format!("{} databases", list.len()) },
                            fmt::bytes(total as i64))}
                    </p>
                    {views::grid_table(
                        "grid cached-list",
                        None,
                        view! { <th>"file"</th><th class="num">"file size"</th><th class="num">"database"</th><th>"imported"</th><th></th> },
                        list.into_iter().map(|e| {
                            let sha = e.sha256.clone();
                            let entry = e.clone();
                            let digest = (named[&e.source_name] > 1).then(|| view! {
                                <div class="muted small" data-testid="cached-digest"><code>
                                    {format!("SHA-256 {}…", e.sha256.get(..12).unwrap_or(&e.sha256))}</code>
                                </div>
                            });
                            view! {
                                <tr data-testid="cached-file" data-sha256=e.sha256.clone()>
                                    <td class="wrap" title=format!("SHA-256 {}", e.sha256)>{e.source_name.clone()}{digest}</td>
                                    <td class="num" title=fmt::exact(e.source_size as i64)>{fmt::bytes(e.source_size as i64)}</td>
                                    <td class="num" title=fmt::exact(e.db_bytes as i64)>{fmt::bytes(e.db_bytes as i64)}</td>
                                    <td class="muted small">{e.imported_at.get(..16).unwrap_or(&e.imported_at).replace('T', " ")}</td>
                                    <td class="actions">
                                        <button class="button small primary" data-testid="cached-open"
                                            on:click=move |_| loader::reopen(state, &entry)>"Open"</button>
                                        <button class="button small" data-testid="cached-remove"
                                            on:click=move |_| remove(sha.clone())>"Remove"</button>
                                    </td>
                                </tr>
                            }
                        }).collect_view(),
                    )}
                </section>
            }
        })
    }
}

#[component]
fn Workspace() -> impl IntoView {
    let state = expect_context::<AppState>();
    let peaks = views::peaks_signal(state);
    provide_context(peaks);
    let oom = crate::oom::oom_signal(state);
    provide_context(oom);
    let devices = move || {
        state
            .opened
            .with(|o| o.as_ref().map(Opened::devices).unwrap_or_default())
    };
    view! {
        <div class="toolbar">
            <label class="field">
                "Device "
                <select data-testid="device-select" on:change=move |e| {
                    if let Ok(d) = event_target_value(&e).parse() { state.device.set(d); state.event.set(None); }
                } prop:value=move || state.device.get().to_string()>
                    {move || devices().into_iter().map(|d| view! {
                        <option value=d.to_string() selected=move || state.device.get() == d>{format!("device {d}")}</option>
                    }).collect_view()}
                </select>
            </label>
            <nav class="tabs" role="tablist" aria-label="Views">
                // The OOM view is offered only where there is an OOM to explain.
                {Tab::ALL.into_iter().filter(|t| *t != Tab::Oom).map(|t| view! {
                    <button role="tab" class="tab" data-testid=format!("tab-{}", t.key())
                        aria-selected=move || (state.tab.get() == t).to_string()
                        class:waiting=move || t != Tab::Overview && !state.ready()
                        on:click=move |_| state.tab.set(t)>{t.label()}</button>
                }).collect_view()}
                <Show when=move || crate::oom::has_oom(oom)>
                    <button role="tab" class="tab oom" data-testid="tab-oom"
                        aria-selected=move || (state.tab.get() == Tab::Oom).to_string()
                        on:click=move |_| state.tab.set(Tab::Oom)>{Tab::Oom.label()}</button>
                </Show>
            </nav>
        </div>
        <crate::oom::OomBanner/>
        <views::PeakCards peaks=peaks/>
        <div class="view">
            {move || (state.tab.get() != Tab::Overview && !state.ready()).then(|| view! {
                <p class="panel muted waiting-note" data-testid="waiting-for-db">
                    "This view answers from the database, which is still being written; it fills in as soon as it is ready (progress above)."
                </p>
            })}
            {move || match state.tab.get() {
                Tab::Overview => view! { <views::Overview peaks=peaks/> }.into_any(),
                Tab::Peak => view! { <views::PeakView/> }.into_any(),
                Tab::Tree => view! { <views::TreeView/> }.into_any(),
                Tab::Leaks => view! { <lists::LeaksView/> }.into_any(),
                Tab::Blocks => view! { <lists::BlocksView/> }.into_any(),
                Tab::Lifetimes => view! { <lists::LifetimesView/> }.into_any(),
                Tab::Templates => view! { <views::TemplatesView/> }.into_any(),
                Tab::Sql => view! { <views::SqlView/> }.into_any(),
                Tab::Oom => view! { <crate::oom::OomView/> }.into_any(),
            }}
        </div>
    }
}

/// The file dialog's hint: snapshots, databases, and exported summary tables.
fn accepted_suffixes() -> String {
    let mut suffixes = pt_snap_model::names::dialog_suffixes();
    suffixes.push(".parquet");
    suffixes.join(",")
}
