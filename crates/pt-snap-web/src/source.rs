//! What the user opened: a file they chose or dropped, or one that `pt-snap view` serves,
//! which is read from its URL as the worker needs it, never first copied whole into the
//! page. The worker gets either as it is posted ([`Source::js`]); `worker/source.rs` reads
//! both.

use js_sys::{Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{File, Headers, RequestInit, Response};

use crate::client;

/// What a failed request for a served file says (a stopped server's, mostly).
const NOT_ANSWERING: &str = "pt-snap view does not answer; it may have stopped";

/// A file to open.
#[derive(Clone)]
pub enum Source {
    /// Chosen, dropped, or fetched (the bundled sample).
    File(File),
    /// Served at `url` (this page's origin): its name, its length and modification time
    /// (ms since the epoch) as the server listed them.
    Served {
        url: String,
        name: String,
        size: f64,
        modified_ms: Option<f64>,
    },
}

impl Source {
    pub fn name(&self) -> String {
        match self {
            Source::File(file) => file.name(),
            Source::Served { name, .. } => name.clone(),
        }
    }

    pub fn size(&self) -> f64 {
        match self {
            Source::File(file) => file.size(),
            Source::Served { size, .. } => *size,
        }
    }

    /// What is posted to the worker: the `File`, or `{url, name, size, lastModified}`.
    pub fn js(&self) -> JsValue {
        match self {
            Source::File(file) => file.into(),
            Source::Served {
                url,
                name,
                size,
                modified_ms,
            } => {
                let o = Object::new();
                for (key, value) in [
                    ("url", JsValue::from_str(url)),
                    ("name", JsValue::from_str(name)),
                    ("size", JsValue::from_f64(*size)),
                    (
                        "lastModified",
                        modified_ms.map_or(JsValue::NULL, JsValue::from),
                    ),
                ] {
                    let _ = Reflect::set(&o, &key.into(), &value);
                }
                o.into()
            }
        }
    }

    /// The first `len` bytes (fewer for a shorter file).
    pub async fn head(&self, len: usize) -> Result<Vec<u8>, String> {
        let js = |e: JsValue| client::js_text(&e);
        let end = (len as f64).min(self.size());
        let buf = match self {
            Source::File(file) => {
                let slice = file.slice_with_f64_and_f64(0.0, end).map_err(js)?;
                JsFuture::from(slice.array_buffer()).await.map_err(js)?
            }
            Source::Served { .. } if end <= 0.0 => return Ok(Vec::new()),
            Source::Served { url, .. } => {
                let headers = Headers::new().map_err(js)?;
                headers
                    .set("Range", &format!("bytes=0-{}", end as u64 - 1))
                    .map_err(js)?;
                let init = RequestInit::new();
                init.set_headers(&headers);
                let window = web_sys::window().expect("a page");
                // Not the browser's words: they may name the URL, and with it the token.
                let response: Response = JsFuture::from(window.fetch_with_str_and_init(url, &init))
                    .await
                    .map_err(|_| NOT_ANSWERING.to_owned())?
                    .unchecked_into();
                // Only the range asked for: a whole answer would be the whole file.
                if response.status() != 206 {
                    let said = match response.text() {
                        Ok(text) => JsFuture::from(text).await.ok().and_then(|t| t.as_string()),
                        Err(_) => None,
                    };
                    return Err(format!(
                        "pt-snap view answered HTTP {}: {}",
                        response.status(),
                        said.unwrap_or_default().trim()
                    ));
                }
                JsFuture::from(response.array_buffer().map_err(js)?)
                    .await
                    .map_err(js)?
            }
        };
        let mut bytes = Uint8Array::new(&buf).to_vec();
        bytes.truncate(end as usize);
        Ok(bytes)
    }
}
