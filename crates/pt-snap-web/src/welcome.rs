//! What the page shows with no file open: how to open one, the bundled sample, and the
//! imports this browser keeps (OPFS), each reopened in about a second or removed.

use leptos::prelude::*;
use pt_snap_engine::{ErrorCode, Failure};

use crate::fmt;
use crate::loader;
use crate::state::{AppState, Status};
use crate::views;

#[component]
pub fn Welcome() -> impl IntoView {
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
