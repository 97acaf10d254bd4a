//! What `pt-snap view` serves: its URL carries the server's `token`, the server lists what it
//! was given (`files?token=…`: one file, the files below a directory, or nothing) and serves
//! each by number (crates/pt-snap-view). Each file is fetched into a `Blob` as the server
//! streams it (Chromium keeps a large one on disk, not in the page's memory) and then opened
//! exactly as a dropped file or folder is, so everything after this is the drop's path. The
//! spare worker the page starts as it loads compiles its wasm meanwhile.

use js_sys::{Array, Object, Reflect};
use leptos::prelude::*;
use pt_snap_engine::{ErrorCode, Failure};
use serde_json::Value as Json;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, File, FilePropertyBag, Response};

use crate::client;
use crate::file_drop;
use crate::state::{AppState, Status};

/// The `token` of the page's address (`?token=…`), if `pt-snap view` printed it.
pub fn token() -> Option<String> {
    let search = window().location().search().ok()?;
    search
        .trim_start_matches('?')
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

/// Opens what the server serves to `token`, as if it had been dropped on the page.
pub fn open(state: AppState, token: String) {
    state
        .status
        .set(Status::Reading("what pt-snap view serves".into()));
    leptos::task::spawn_local(async move {
        match fetch_served(&token, state).await {
            Ok(Some((files, folder))) => file_drop::open_files(state, files, folder),
            Ok(None) => state.status.set(Status::Idle),
            Err(failure) => state.status.set(Status::Failed(failure)),
        }
    });
}

/// The files served and whether they are a folder's; `None` when the server was given
/// nothing (the app alone).
async fn fetch_served(
    token: &str,
    state: AppState,
) -> Result<Option<(Vec<(File, String)>, bool)>, Failure> {
    let listing = get(&format!("files?token={token}")).await?;
    let text = JsFuture::from(listing.text().map_err(unreadable)?)
        .await
        .map_err(unreadable)?
        .as_string()
        .unwrap_or_default();
    let listing: Json = serde_json::from_str(&text).map_err(|e| {
        Failure::new(
            ErrorCode::Internal,
            format!("pt-snap view's list of files is not JSON ({e})."),
        )
    })?;
    let folder = match listing["kind"].as_str() {
        Some("file") => false,
        Some("directory") => true,
        _ => return Ok(None),
    };
    let mut files = Vec::new();
    for entry in listing["files"].as_array().into_iter().flatten() {
        let (Some(path), Some(url)) = (entry["path"].as_str(), entry["url"].as_str()) else {
            continue;
        };
        state.status.set(Status::Reading(path.to_owned()));
        let response = get(&format!("{url}?token={token}")).await?;
        let blob: Blob = JsFuture::from(response.blob().map_err(unreadable)?)
            .await
            .map_err(unreadable)?
            .unchecked_into();
        // A dropped folder's files are named by their path below it, a dropped file by its
        // own name; the server names them so. The time lets the cache recognise the file.
        let name = path.rsplit('/').next().unwrap_or(path);
        let options: FilePropertyBag = Object::new().unchecked_into();
        if let Some(ms) = entry["modified_ms"].as_f64() {
            let _ = Reflect::set(&options, &"lastModified".into(), &ms.into());
        }
        let file = File::new_with_blob_sequence_and_options(&Array::of1(&blob), name, &options)
            .map_err(unreadable)?;
        files.push((file, path.to_owned()));
    }
    Ok(Some((files, folder)))
}

/// `url` from the server, refused unless it answers 2xx: the server's own words then (a
/// wrong token's 403 says which URL to open).
async fn get(url: &str) -> Result<Response, Failure> {
    let response: Response = JsFuture::from(window().fetch_with_str(url))
        .await
        .map_err(|e| {
            Failure::new(
                ErrorCode::Other,
                format!(
                    "pt-snap view does not answer ({}); it may have stopped.",
                    client::js_text(&e)
                ),
            )
            .with_hint(Some("Run pt-snap view again and open the URL it prints."))
        })?
        .unchecked_into();
    if response.ok() {
        return Ok(response);
    }
    let said = match response.text() {
        Ok(text) => JsFuture::from(text)
            .await
            .ok()
            .and_then(|t| t.as_string())
            .unwrap_or_default(),
        Err(_) => String::new(),
    };
    let status = response.status();
    let code = if status == 403 {
        ErrorCode::InvalidParameter
    } else {
        ErrorCode::Other
    };
    Err(Failure::new(
        code,
        format!("pt-snap view answered HTTP {status}: {}", said.trim()),
    )
    .with_hint(Some(
        "Open the URL pt-snap view printed in its terminal, token and all.",
    )))
}

fn unreadable(e: JsValue) -> Failure {
    pt_snap_import::failure::backend(format!(
        "cannot read what pt-snap view serves: {}",
        client::js_text(&e)
    ))
}
