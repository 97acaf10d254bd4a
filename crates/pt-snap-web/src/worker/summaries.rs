//! Files read as the parts of an exported `summary` table (`pt-snap export`), for the
//! Ranks view: each part's footer first, then its rows.

#![cfg(target_arch = "wasm32")]

use std::io;

use js_sys::Uint8Array;
use pt_snap_engine::{ErrorCode, Failure, FromWorker};
use wasm_bindgen::prelude::*;
use web_sys::{File, FileReaderSync};

use crate::messages::post;

/// Reads `files` (the `paths` of them) as parts of an exported summary table.
pub(crate) fn read_summaries(paths: &[String], files: &js_sys::Array) {
    let reads = paths
        .iter()
        .enumerate()
        .map(|(i, path)| match files.get(i as u32).dyn_into::<File>() {
            Ok(file) => {
                // The summary's reader says "cannot read the file".
                let js = |e: &JsValue| io::Error::other(format!("{e:?}"));
                let reader = FileReaderSync::new();
                pt_snap_engine::SummaryRead::of(path, file.size() as u64, |start, end| {
                    let slice = file
                        .slice_with_f64_and_f64(start as f64, end as f64)
                        .map_err(|e| js(&e))?;
                    let reader = reader.as_ref().map_err(js)?;
                    let bytes = reader.read_as_array_buffer(&slice).map_err(|e| js(&e))?;
                    Ok(Uint8Array::new(&bytes).to_vec())
                })
            }
            Err(_) => pt_snap_engine::SummaryRead {
                path: path.clone(),
                ranks: Err(Failure::new(
                    ErrorCode::Internal,
                    "The worker was sent no file.",
                )),
            },
        })
        .collect();
    post(&FromWorker::Summaries(reads));
}
