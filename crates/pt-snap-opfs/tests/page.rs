//! The store's async half on the page's main thread (a `Window` global, no sync access
//! handles), where the browser app lists and removes cached databases: an entry written
//! there by hand is listed, found and removed; pools are reported unavailable.
#![cfg(target_arch = "wasm32")]

use js_sys::futures::JsFuture;
use pt_snap_opfs::Entry;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::wasm_bindgen_test;

mod common;
use common::file_in;

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const SHA: &str = "dd00000000000000000000000000000000000000000000000000000000000000";

async fn entry_dir(sha: &str) -> web_sys::FileSystemDirectoryHandle {
    let storage = web_sys::window().unwrap().navigator().storage();
    let mut dir: web_sys::FileSystemDirectoryHandle = JsFuture::from(storage.get_directory())
        .await
        .unwrap()
        .unchecked_into();
    let options = web_sys::FileSystemGetDirectoryOptions::new();
    options.set_create(true);
    for part in [pt_snap_opfs::CACHE_DIR, sha] {
        dir = JsFuture::from(dir.get_directory_handle_with_options(part, &options))
            .await
            .unwrap()
            .unchecked_into();
    }
    dir
}

/// Writes `name` in `dir` the page's way (a writable stream; no sync access handles here).
async fn write(dir: &web_sys::FileSystemDirectoryHandle, name: &str, text: &str) {
    let file = file_in(dir, name).await;
    let stream: web_sys::FileSystemWritableFileStream = JsFuture::from(file.create_writable())
        .await
        .unwrap()
        .unchecked_into();
    JsFuture::from(stream.write_with_str(text).unwrap())
        .await
        .unwrap();
    JsFuture::from(stream.close()).await.unwrap();
}

#[wasm_bindgen_test]
async fn the_page_lists_finds_and_removes_entries() {
    assert!(pt_snap_opfs::storage_available().await);
    assert!(
        !pt_snap_opfs::available().await,
        "sync access handles on the page"
    );

    let entry = Entry {
        sha256: SHA.to_owned(),
        source_name: "from the page.pkl".to_owned(),
        source_size: 12345,
        source_last_modified: 1.5e12,
        db_bytes: 8192,
        imported_at: "2026-01-02T03:04:05.000Z".to_owned(),
    };
    let dir = entry_dir(SHA).await;
    write(&dir, "meta.json", &serde_json::to_string(&entry).unwrap()).await;
    let incomplete = "ee00000000000000000000000000000000000000000000000000000000000000";
    entry_dir(incomplete).await;

    assert_eq!(pt_snap_opfs::list().await.unwrap(), vec![entry.clone()]);
    assert_eq!(pt_snap_opfs::find(SHA).await.unwrap(), Some(entry.clone()));
    assert_eq!(pt_snap_opfs::find(incomplete).await.unwrap(), None);
    assert_eq!(
        pt_snap_opfs::find_by_size(12345).await.unwrap(),
        vec![entry]
    );
    assert!(pt_snap_opfs::find("not a sha").await.is_err());
    assert_eq!(pt_snap_opfs::cleanup_incomplete().await.unwrap(), 1);
    pt_snap_opfs::remove(SHA).await.unwrap();
    pt_snap_opfs::remove(SHA).await.unwrap();
    assert!(pt_snap_opfs::list().await.unwrap().is_empty());
}
