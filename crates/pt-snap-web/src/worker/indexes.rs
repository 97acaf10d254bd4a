//! The indexes an import into OPFS deferred (the file is shown once its rows are
//! committed), built one per task between the page's questions, and the cache entry's size
//! recorded once none is left.

#![cfg(target_arch = "wasm32")]

use pt_snap_engine::{FromWorker, IndexesLeft};
use wasm_bindgen::prelude::*;
use web_sys::DedicatedWorkerGlobalScope;

use crate::messages::{post, ENGINE, POOL};

/// Builds the next index the import deferred in a task of its own, so that questions
/// that came meanwhile are answered first, and goes on until none is left. Each builds
/// in well under a second at 1M events; a question that comes during one waits for it.
pub(crate) fn build_indexes_later() {
    let next = Closure::once_into_js(|| {
        // Nothing when the file is closed or every index is built (a download built
        // the rest meanwhile).
        let Some(built) = ENGINE.with(|e| {
            let mut e = e.borrow_mut();
            let engine = e.as_mut()?;
            engine
                .build_next_index()
                .map(|left| left.map(|left| engine.indexes_report(left)))
                .transpose()
        }) else {
            return;
        };
        match built {
            Ok(report) => {
                index_built(report);
                if report.left > 0 {
                    build_indexes_later();
                }
            }
            Err(f) => post(&FromWorker::Indexes(Err(f))),
        }
    });
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let _ = scope.set_timeout_with_callback(next.unchecked_ref());
}

/// Tells the page an index was built; once none is left, the cache's entry says the
/// database's size, so the list of kept imports does too.
pub(crate) fn index_built(report: IndexesLeft) {
    post(&FromWorker::Indexes(Ok(report)));
    if report.left == 0 {
        record_size(report.db_bytes);
    }
}

/// Records the built database's size in its cache entry (`pt_snap_opfs::Pool::record_size`).
fn record_size(db_bytes: u64) {
    if let Some(pool) = POOL.with(|p| p.borrow().clone()) {
        wasm_bindgen_futures::spawn_local(async move {
            if let Err(e) = pool.record_size(db_bytes).await {
                web_sys::console::warn_1(&format!("pt-snap: {e}").into());
            }
        });
    }
}
