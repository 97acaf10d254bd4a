//! Files chosen or dropped, and where they go: one file opens in every view; several, or a
//! folder, are the ranks of a job; Parquet files are an exported summary table's parts. A
//! dropped folder is walked as a chosen one is.

use leptos::ev;
use leptos::prelude::*;
use pt_snap_engine::{ErrorCode, Failure};
use wasm_bindgen::JsCast;
use web_sys::{DragEvent, HtmlInputElement};

use crate::client;
use crate::loader;
use crate::source::Source;
use crate::state::{AppState, Screen, Status};

fn files_of(list: &web_sys::FileList) -> Vec<web_sys::File> {
    (0..list.length()).filter_map(|i| list.get(i)).collect()
}

/// Each file with where it was found: below the folder chosen (`webkitRelativePath`), or
/// its bare name.
fn with_paths(files: Vec<web_sys::File>) -> Vec<(Source, String)> {
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
            (Source::File(f), path)
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
) -> (Vec<(Source, String)>, Vec<String>) {
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
                Ok(file) => found.push((Source::File(file.unchecked_into()), path)),
                Err(e) => unreadable.push(format!("{path} ({})", client::js_text(&e))),
            }
        }
    }
    found.sort_by(|a, b| a.1.cmp(&b.1));
    (found, unreadable)
}

/// One file opens in every view; several (or a folder) are the ranks of a job; Parquet
/// files are an exported summary table's parts, the ranks of a job without their snapshots.
pub fn open_files(state: AppState, chosen: Vec<(Source, String)>, folder: bool) {
    let (files, paths): (Vec<Source>, Vec<String>) = chosen.into_iter().unzip();
    let parts = crate::job::summary_parts(&paths);
    if !parts.is_empty() {
        let files = parts.iter().map(|&i| files[i].clone()).collect();
        let paths = parts.iter().map(|&i| paths[i].clone()).collect();
        return crate::ranks::start_summary(state, files, paths);
    }
    let files: Vec<Source> = crate::job::members(&paths, folder)
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

/// Makes the whole page a drop zone; the signal says whether something is being dragged
/// over it (the overlay shows only then).
pub fn accept_drops(state: AppState) -> RwSignal<bool> {
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

    dragging
}

/// The file inputs' handler: the files chosen (`folder`: below the folder chosen).
pub fn on_pick(state: AppState, folder: bool) -> impl Fn(ev::Event) + Copy + 'static {
    move |e: ev::Event| {
        let input: HtmlInputElement = e.target().expect("an input").unchecked_into();
        if let Some(files) = input.files() {
            open_files(state, with_paths(files_of(&files)), folder);
        }
        // Choosing the same file again must fire `change` again.
        input.set_value("");
    }
}

/// The file dialog's hint: snapshots, databases, and exported summary tables.
pub fn accepted_suffixes() -> String {
    let mut suffixes = pt_snap_model::names::dialog_suffixes();
    suffixes.push(".parquet");
    suffixes.join(",")
}
