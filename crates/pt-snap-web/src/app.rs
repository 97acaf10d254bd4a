//! The page: the header with the file pickers and the open file's name, the status strip,
//! and below them the open file's views, the job's Ranks or Compare view, or the welcome.
//! The parts live in modules of their own; this wires them to one [`AppState`].

use leptos::ev;
use leptos::prelude::*;

use crate::client;
use crate::file_drop;
use crate::header::{LenientNotice, OpenedName};
use crate::link::parse_hash;
use crate::loader;
use crate::location;
use crate::served;
use crate::state::{AppState, Screen};
use crate::status::StatusStrip;
use crate::welcome::Welcome;
use crate::workspace::Workspace;

#[component]
pub fn App() -> impl IntoView {
    let state = AppState::new();
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
    if served::requested() {
        served::open(state);
    } else if parse_hash(&window().location().hash().unwrap_or_default()).sample {
        loader::load_sample(state);
    }
    location::follow(state);

    // The views are built once per file shown, not again when it becomes ready.
    let has_file = Memo::new(move |_| state.opened.with(Option::is_some));
    // Not rebuilt by each file of a job that finishes.
    let has_job = Memo::new(move |_| state.job.with(Option::is_some));

    // The whole page is the drop zone; the overlay only says so while something is dragged.
    let dragging = file_drop::accept_drops(state);
    // `webkitdirectory` (every browser's name for it) has no typed attribute in Leptos.
    let folder_input = NodeRef::<leptos::html::Input>::new();
    Effect::new(move |_| {
        if let Some(input) = folder_input.get() {
            let _ = input.set_attribute("webkitdirectory", "");
        }
    });

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
                    accept=file_drop::accepted_suffixes() on:change=file_drop::on_pick(state, false)/>
                <label class="button" for="folder-input" title="The snapshots of a job, one per rank, or an exported summary table (pt-snap export --format parquet): the Ranks view compares them">"Open folder…"</label>
                <input id="folder-input" data-testid="folder-input" class="visually-hidden" type="file" multiple
                    node_ref=folder_input on:change=file_drop::on_pick(state, true)/>
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
