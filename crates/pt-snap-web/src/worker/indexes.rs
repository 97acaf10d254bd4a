//! The indexes an import into OPFS deferred (the file is shown once its rows are
//! committed), built one per task between the page's questions, and the cache entry's size
//! recorded once none is left.

#![cfg(target_arch = "wasm32")]

use pt_snap_engine::{FromWorker, IndexesLeft};
use wasm_bindgen::prelude::*;
use web_sys::DedicatedWorkerGlobalScope;

use crate::messages::{post, ENGINE, POOL};

/// How long the worker stays quiet after an answer before it builds the next index: the
/// page draws the answer meanwhile, and on two cores a build beside that drawing stretched
/// a 43 ms frame to 110 ms.
const QUIET_AFTER_ANSWER_MS: f64 = 100.0;

thread_local! {
    /// When the last answer was posted (`Date.now()`).
    static LAST_ANSWER_MS: std::cell::Cell<f64> = const { std::cell::Cell::new(f64::NEG_INFINITY) };
}

/// Notes that an answer was just posted (see [`QUIET_AFTER_ANSWER_MS`]).
pub(crate) fn answered() {
    LAST_ANSWER_MS.with(|t| t.set(js_sys::Date::now()));
}

/// Builds the next index the import deferred in a task of its own, so that questions
/// that came meanwhile are answered first, and goes on until none is left; never within
/// [`QUIET_AFTER_ANSWER_MS`] of an answer. Each builds in 0.4–1.5 s at 1M events; a
/// question that comes during one waits for it, so questions asked in a burst (a view's
/// first ones) are answered first, and the builds come in the pauses after.
pub(crate) fn build_indexes_later() {
    let next = Closure::once_into_js(|| {
        // A question answered since this was scheduled: its drawing goes first.
        if quiet_left_ms() > 0.0 {
            return build_indexes_later();
        }
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
    let _ = scope.set_timeout_with_callback_and_timeout_and_arguments_0(
        next.unchecked_ref(),
        quiet_left_ms().max(0.0).ceil() as i32,
    );
}

/// What is left of the quiet after the last answer, in ms (0 or less: none).
fn quiet_left_ms() -> f64 {
    LAST_ANSWER_MS.with(|t| t.get()) + QUIET_AFTER_ANSWER_MS - js_sys::Date::now()
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
