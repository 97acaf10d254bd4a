//! What `pt-snap view` serves: its URL carries the server's `token`, and `www/served.js`,
//! the first script of the page, has asked for the server's list (one file, the files below
//! a directory, or nothing) while the app loaded. Each listed file becomes a
//! [`Source::Served`], opened exactly as a dropped file or folder is, so everything after
//! this is the drop's path; its worker streams it from the server as it decodes. That worker
//! was started as the page began to load, and has compiled its wasm meanwhile.

use js_sys::{Promise, Reflect};
use leptos::prelude::*;
use pt_snap_engine::{ErrorCode, Failure};
use serde_json::Value as Json;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::client;
use crate::file_drop;
use crate::source::Source;
use crate::state::{AppState, Status};

/// Whether the page's address carries a `token` (`?token=…`): `pt-snap view` printed it.
pub fn requested() -> bool {
    token().is_some()
}

fn token() -> Option<String> {
    let search = window().location().search().unwrap_or_default();
    (search.trim_start_matches('?').split('&'))
        .find_map(|pair| pair.strip_prefix("token=").filter(|t| !t.is_empty()))
        .map(str::to_owned)
}

/// What the status strip says while `www/served.js` asks for the list.
const FETCHING: &str = "what pt-snap view serves";

/// Opens what `pt-snap view` serves, as if it had been dropped on the page, unless the user
/// opened something else meanwhile.
pub fn open(state: AppState) {
    state.status.set(Status::Reading(FETCHING.into()));
    leptos::task::spawn_local(async move {
        let result = served().await;
        let still_ours = state
            .status
            .with_untracked(|s| matches!(s, Status::Reading(what) if what == FETCHING));
        if !still_ours {
            return;
        }
        match result {
            Ok(Some((files, folder))) => {
                // From here on it is a drop, which says what it is doing itself (a folder's
                // ranks say nothing here: without this the list's words would stay).
                state.status.set(Status::Idle);
                file_drop::open_files(state, files, folder)
            }
            Ok(None) => state.status.set(Status::Idle),
            Err(failure) => state.status.set(Status::Failed(failure)),
        }
    });
}

/// The files served and whether they are a folder's; `None` when the server was given
/// nothing (the app alone).
async fn served() -> Result<Option<(Vec<(Source, String)>, bool)>, Failure> {
    let promise: Promise = Reflect::get(&window(), &"ptSnapServed".into())
        .ok()
        .and_then(|p| p.dyn_into().ok())
        .ok_or_else(|| {
            Failure::new(
                ErrorCode::Internal,
                "The page has no www/served.js: it cannot read what pt-snap view serves.",
            )
        })?;
    let got = JsFuture::from(promise).await.map_err(refused)?;
    let listing: Json = js_sys::JSON::stringify(&got)
        .ok()
        .and_then(|text| text.as_string())
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Json::Null);
    let folder = match listing["kind"].as_str() {
        Some("file") => false,
        Some("directory") => true,
        _ => return Ok(None),
    };
    let token = token().unwrap_or_default();
    let base = window().location().href().unwrap_or_default();
    let mut files = Vec::new();
    for entry in listing["files"].as_array().into_iter().flatten() {
        let (Some(path), Some(url), Some(size)) = (
            entry["path"].as_str(),
            entry["url"].as_str(),
            entry["size"].as_f64(),
        ) else {
            continue;
        };
        // Absolute, for the workers that fetch it (their base is their script's).
        let url = web_sys::Url::new_with_base(url, &base).map_err(|e| {
            Failure::new(
                ErrorCode::Internal,
                format!(
                    "pt-snap view's list names no usable address ({})",
                    client::js_text(&e)
                ),
            )
        })?;
        url.search_params().set("token", &token);
        // A dropped folder's files are named by their path below it, a dropped file by its
        // own name; the server names them so. The time lets the cache recognise the file.
        let source = Source::Served {
            url: url.href(),
            name: path.rsplit('/').next().unwrap_or(path).to_owned(),
            size,
            modified_ms: entry["modified_ms"].as_f64(),
        };
        files.push((source, path.to_owned()));
    }
    Ok(Some((files, folder)))
}

/// Why `www/served.js` got nothing: the server refused (its status and words), did not
/// answer, or listed nothing readable.
fn refused(e: JsValue) -> Failure {
    let get = |name: &str| {
        Reflect::get(&e, &name.into())
            .ok()
            .filter(|v| !v.is_undefined())
    };
    if let Some(status) = get("status").and_then(|s| s.as_f64()) {
        let said = get("text").and_then(|t| t.as_string()).unwrap_or_default();
        let code = if status == 403.0 {
            ErrorCode::InvalidParameter
        } else {
            ErrorCode::Other
        };
        // The server's words say what to do (a wrong token's: open the URL it printed), so
        // no hint of the code's own.
        return Failure::new(
            code,
            format!("pt-snap view answered HTTP {status}: {}", said.trim()),
        )
        .with_hint(None);
    }
    if let Some(why) = get("network").and_then(|n| n.as_string()) {
        return Failure::new(
            ErrorCode::Other,
            format!("pt-snap view does not answer ({why}); it may have stopped."),
        )
        .with_hint(Some("Run pt-snap view again and open the URL it prints."));
    }
    Failure::new(
        ErrorCode::Internal,
        format!(
            "pt-snap view's list of files is not readable ({}).",
            client::js_text(&e)
        ),
    )
}
