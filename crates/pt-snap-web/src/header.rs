//! The header's account of the open file: its name and size, where its database lives, the
//! engine's state, the indexes being built and whether it came from the cache; and, for as
//! long as a lenient replay's database is open, the notice that its numbers are approximate.

use leptos::prelude::*;

use crate::fmt;
use crate::state::{AppState, Indexing};

#[component]
pub fn OpenedName() -> impl IntoView {
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
pub fn LenientNotice() -> impl IntoView {
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
