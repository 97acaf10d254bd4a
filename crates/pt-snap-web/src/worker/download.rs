//! "Download .db": the database as a `Blob` posted with the message, whole (the indexes
//! still to build are built first).

#![cfg(target_arch = "wasm32")]

use js_sys::Uint8Array;
use pt_snap_engine::{ErrorCode, Failure, FromWorker};

use crate::import::storage;
use crate::indexes::index_built;
use crate::messages::{post, post_with, ENGINE, POOL};

/// "Download .db": the database as a Blob posted with the message: the OPFS file itself
/// (nothing copied), or the in-memory database's image.
pub(crate) fn download() {
    let name = ENGINE.with(|e| {
        e.borrow()
            .as_ref()
            .map(|e| format!("{}.db", e.overview().name))
    });
    let Some(name) = name else {
        post(&FromWorker::Download(Err(Failure::new(
            ErrorCode::NotOpen,
            "No database is open.",
        ))));
        return;
    };
    // The file downloaded is whole: the indexes still to build are built now, and none
    // is written after (a `Blob` of a file written later cannot be read).
    let whole = ENGINE.with(|e| {
        if let Some(engine) = e.borrow_mut().as_mut() {
            while let Some(left) = engine.build_next_index()? {
                index_built(engine.indexes_report(left));
            }
        }
        Ok(())
    });
    if let Err(f) = whole {
        post(&FromWorker::Download(Err(f)));
        return;
    }
    // An OPFS database is never copied into memory for this: its file is the Blob.
    if let Some(pool) = POOL.with(|p| p.borrow().clone()) {
        wasm_bindgen_futures::spawn_local(async move {
            let blob = pool.export_blob().await.map_err(storage);
            match blob {
                Ok(blob) => post_with(&FromWorker::Download(Ok(name)), "blob", &blob),
                Err(f) => post(&FromWorker::Download(Err(f))),
            }
        });
        return;
    }
    let blob = ENGINE.with(|e| match e.borrow_mut().as_mut() {
        Some(engine) => engine.with_image(|image| {
            let parts = js_sys::Array::of1(&Uint8Array::from(image));
            let opts = web_sys::BlobPropertyBag::new();
            opts.set_type("application/vnd.sqlite3");
            web_sys::Blob::new_with_u8_array_sequence_and_options(&parts, &opts)
                .map_err(|e| Failure::new(ErrorCode::Internal, format!("{e:?}")))
        }),
        None => Err(Failure::new(ErrorCode::NotOpen, "No database is open.")),
    });
    match blob.and_then(|b| b) {
        Ok(blob) => post_with(&FromWorker::Download(Ok(name)), "blob", &blob),
        Err(f) => post(&FromWorker::Download(Err(f))),
    }
}
