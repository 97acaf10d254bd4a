//! Files read as the parts of an exported `summary` table (`pt-snap export`), for the
//! Ranks view: each part's footer first, then its rows.

#![cfg(target_arch = "wasm32")]

use pt_snap_engine::{ErrorCode, Failure, FromWorker};

use crate::messages::post;
use crate::source::Source;

/// Reads `files` (the `paths` of them) as parts of an exported summary table.
pub(crate) fn read_summaries(paths: &[String], files: &js_sys::Array) {
    let reads = paths
        .iter()
        .enumerate()
        .map(|(i, path)| match Source::from_js(files.get(i as u32)) {
            Some(file) => {
                pt_snap_engine::SummaryRead::of(path, file.size() as u64, |start, end| {
                    file.read(start, end)
                })
            }
            None => pt_snap_engine::SummaryRead {
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
