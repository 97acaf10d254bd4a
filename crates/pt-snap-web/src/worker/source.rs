//! The file this worker was sent, as the page's `source.rs` posts it: a `File` (chosen or
//! dropped), or `{url, name, size, lastModified}` for one `pt-snap view` serves, read from
//! the server as it is needed.

#![cfg(target_arch = "wasm32")]

use std::io;

use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;
use web_sys::{File, FileReaderSync, XmlHttpRequest, XmlHttpRequestResponseType};

use crate::messages::get;

#[derive(Clone)]
pub(crate) struct Source {
    /// As posted: what the read helper is given (`www/read-worker.js` reads both kinds).
    js: JsValue,
    name: String,
    size: f64,
    last_modified: f64,
    bytes: Bytes,
}

/// Where the bytes are.
#[derive(Clone)]
enum Bytes {
    File(File),
    /// Served at this URL.
    Served(String),
}

impl Source {
    /// The posted source, or `None` when nothing readable was posted.
    pub(crate) fn from_js(js: JsValue) -> Option<Source> {
        if let Some(file) = js.dyn_ref::<File>() {
            return Some(Source {
                name: file.name(),
                size: file.size(),
                last_modified: file.last_modified(),
                bytes: Bytes::File(file.clone()),
                js,
            });
        }
        Some(Source {
            bytes: Bytes::Served(get(&js, "url").as_string()?),
            name: get(&js, "name").as_string()?,
            size: get(&js, "size").as_f64()?,
            // A file without a time is as new as a `File` made without one.
            last_modified: get(&js, "lastModified")
                .as_f64()
                .unwrap_or_else(js_sys::Date::now),
            js,
        })
    }

    pub(crate) fn name(&self) -> String {
        self.name.clone()
    }

    pub(crate) fn size(&self) -> f64 {
        self.size
    }

    pub(crate) fn last_modified(&self) -> f64 {
        self.last_modified
    }

    pub(crate) fn js(&self) -> &JsValue {
        &self.js
    }

    /// Bytes `start..end`, read here and now, without the helper: a `File`'s with
    /// `FileReaderSync`, a served one's by a synchronous request (which a worker may make).
    pub(crate) fn read(&self, start: u64, end: u64) -> io::Result<Vec<u8>> {
        if end <= start {
            return Ok(Vec::new());
        }
        let bytes = match &self.bytes {
            Bytes::File(file) => {
                let slice = file
                    .slice_with_f64_and_f64(start as f64, end as f64)
                    .map_err(js_io)?;
                let reader = FileReaderSync::new().map_err(js_io)?;
                reader.read_as_array_buffer(&slice).map_err(js_io)?.into()
            }
            Bytes::Served(url) => {
                // Not the browser's words when it fails: they may name the URL, and with it
                // the token.
                let not_answering = |_| io::Error::other(NOT_ANSWERING);
                let request = XmlHttpRequest::new().map_err(js_io)?;
                request
                    .open_with_async("GET", url, false)
                    .map_err(not_answering)?;
                request
                    .set_request_header("Range", &format!("bytes={start}-{}", end - 1))
                    .map_err(js_io)?;
                request.set_response_type(XmlHttpRequestResponseType::Arraybuffer);
                request.send().map_err(not_answering)?;
                let status = request.status().map_err(not_answering)?;
                let body = request.response().map_err(js_io)?;
                if status != 206 {
                    let said = String::from_utf8_lossy(&Uint8Array::new(&body).to_vec())
                        .trim()
                        .to_owned();
                    return Err(io::Error::other(format!(
                        "pt-snap view answered HTTP {status}: {said}"
                    )));
                }
                body
            }
        };
        Ok(Uint8Array::new(&bytes).to_vec())
    }
}

/// What a failed request for a served file says, as the page's `source.rs` says it.
const NOT_ANSWERING: &str = "pt-snap view does not answer; it may have stopped";

/// A `File` the browser would not read (the caller says which file).
fn js_io(e: JsValue) -> io::Error {
    io::Error::other(format!("{e:?}"))
}
