//! The OPFS store in a dedicated worker of headless Chromium (`scripts/wasm-test`), where
//! the browser app's import worker uses it: a real import written through an entry's
//! sahpool VFS, committed, listed, reopened read-only, exported as a Blob and removed;
//! incomplete entries skipped and cleaned up; an entry held by a worker that is then
//! terminated installed again.
#![cfg(target_arch = "wasm32")]

use js_sys::futures::JsFuture;
use js_sys::{Array, Date, Promise};
use pt_snap_opfs::{Access, Entry, Pool};
use pt_snap_testkit::column;
use rusqlite::Connection;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

mod common;
use common::file_in;

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_dedicated_worker);

const NAME: &str = "snapshot_with_multi_devices.pkl";
const PICKLE: &[u8] =
    include_bytes!("../../../fixtures/upstream-pkg/snapshots/snapshot_with_multi_devices.pkl");

fn log(s: &str) {
    web_sys::console::log_1(&JsValue::from_str(&format!("pt-snap-opfs: {s}")));
}

/// Rows of every table, by name: the database's "answer" compared across opens.
fn table_rows(conn: &Connection) -> Vec<(String, i64)> {
    let names: Vec<String> = column(
        conn,
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
    );
    names
        .into_iter()
        .map(|n| {
            let rows = conn
                .query_row(&format!("SELECT count(*) FROM \"{n}\""), [], |r| r.get(0))
                .unwrap();
            (n, rows)
        })
        .collect()
}

fn file_bytes(conn: &Connection) -> u64 {
    let pages: i64 = conn
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .unwrap();
    let size: i64 = conn
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .unwrap();
    (pages * size) as u64
}

fn entry(sha256: &str) -> Entry {
    Entry {
        sha256: sha256.to_owned(),
        source_name: NAME.to_owned(),
        source_size: PICKLE.len() as u64,
        source_last_modified: 1_767_225_600_000.0,
        db_bytes: 0,
        imported_at: "2026-01-01T00:00:00.000Z".to_owned(),
    }
}

async fn root() -> web_sys::FileSystemDirectoryHandle {
    let navigator: web_sys::WorkerNavigator = js_sys::global()
        .unchecked_into::<web_sys::WorkerGlobalScope>()
        .navigator();
    JsFuture::from(navigator.storage().get_directory())
        .await
        .unwrap()
        .unchecked_into()
}

/// Names in `/pt-snap-cache`, whatever their state.
async fn cache_dir_names() -> Vec<String> {
    let options = web_sys::FileSystemGetDirectoryOptions::new();
    options.set_create(true);
    let cache: web_sys::FileSystemDirectoryHandle = JsFuture::from(
        root()
            .await
            .get_directory_handle_with_options("pt-snap-cache", &options),
    )
    .await
    .unwrap()
    .unchecked_into();
    let keys = cache.keys();
    let mut names = Vec::new();
    loop {
        let next: js_sys::IteratorNext = JsFuture::from(keys.next().unwrap())
            .await
            .unwrap()
            .unchecked_into();
        if next.done() {
            return names;
        }
        names.push(next.value().as_string().unwrap());
    }
}

/// Writes `text` as `name` in the entry of `sha256`, as a worker killed midway might leave it.
async fn write_entry_file(sha256: &str, name: &str, text: &str) {
    let mut dir = root().await;
    for part in ["pt-snap-cache", sha256] {
        dir = JsFuture::from(dir.get_directory_handle(part))
            .await
            .unwrap()
            .unchecked_into();
    }
    let file = file_in(&dir, name).await;
    let sah: web_sys::FileSystemSyncAccessHandle = JsFuture::from(file.create_sync_access_handle())
        .await
        .unwrap()
        .unchecked_into();
    sah.truncate_with_u32(0).unwrap();
    sah.write_with_u8_array(text.as_bytes()).unwrap();
    sah.flush().unwrap();
    sah.close();
}

async fn blob_bytes(blob: &web_sys::Blob) -> Vec<u8> {
    let buffer = JsFuture::from(blob.array_buffer()).await.unwrap();
    js_sys::Uint8Array::new(&buffer).to_vec()
}

#[wasm_bindgen_test]
async fn pools_are_available_in_a_dedicated_worker() {
    assert!(pt_snap_opfs::available().await);
    assert!(pt_snap_opfs::storage_available().await);
}

/// The life of one entry: import through the pool, commit, list, reopen read-only, export,
/// remove.
#[wasm_bindgen_test]
async fn an_import_is_cached_reopened_exported_and_removed() {
    let sha = pt_snap_import::sha256_hex(PICKLE).unwrap();
    pt_snap_opfs::remove(&sha).await.unwrap();

    let t = Date::now();
    let pool = Pool::install(&sha).await.unwrap();
    log(&format!("install (new entry): {:.0} ms", Date::now() - t));
    assert_eq!(pool.vfs_name(), format!("pt-snap-{}", &sha[..16]));
    assert_eq!(pool.db_path(), "/snapshot.db");
    assert!(
        Pool::install(&sha).await.is_err(),
        "a second install of one entry in one worker"
    );

    let t = Date::now();
    let conn = pool.open(Access::Create).unwrap();
    let snapshot = pt_snap_model::decode(PICKLE, &mut |_| {}).unwrap();
    let request = pt_snap_import::ImportRequest::new(
        NAME,
        sha.clone(),
        PICKLE.len() as u64,
        "2026-01-01T00:00:00.000000+00:00",
    );
    pt_snap_import::import_snapshot(&snapshot, &conn, &request, &mut |_| {}).unwrap();
    let rows = table_rows(&conn);
    let db_bytes = file_bytes(&conn);
    log(&format!(
        "import into OPFS: {:.0} ms, {db_bytes} bytes",
        Date::now() - t
    ));
    let total: i64 = rows.iter().map(|(_, n)| n).sum();
    assert!(total > 17_000, "{rows:?}");

    // Still importing: neither listed nor removable by a cleanup on the page.
    assert!(pt_snap_opfs::find(&sha).await.unwrap().is_none());
    assert!(
        pool.commit(&entry(&sha)).await.is_err(),
        "committed while open"
    );
    drop(conn);
    let committed = pool.commit(&entry(&sha)).await.unwrap();
    assert_eq!(committed.db_bytes, db_bytes);
    assert_eq!(
        committed,
        Entry {
            db_bytes,
            ..entry(&sha)
        }
    );
    pool.close().unwrap();

    let listed = pt_snap_opfs::list().await.unwrap();
    assert!(listed.contains(&committed), "{listed:?}");
    assert_eq!(
        pt_snap_opfs::find(&sha).await.unwrap().as_ref(),
        Some(&committed)
    );
    assert!(pt_snap_opfs::find_by_size(PICKLE.len() as u64)
        .await
        .unwrap()
        .contains(&committed));
    assert!(pt_snap_opfs::find_by_size(PICKLE.len() as u64 + 1)
        .await
        .unwrap()
        .is_empty());

    // Installed again in this worker (the paused VFS resumed), read-only.
    let t = Date::now();
    let pool = Pool::install(&sha).await.unwrap();
    let conn = pool.open(Access::Read).unwrap();
    assert_eq!(table_rows(&conn), rows);
    log(&format!(
        "reinstall + open read-only + count every table: {:.0} ms",
        Date::now() - t
    ));
    assert!(conn.execute_batch("CREATE TABLE x (a)").is_err());
    // Chromium lets the worker read what it holds: exported with a reader open.
    let t = Date::now();
    let blob = pool.export_blob().await.unwrap();
    log(&format!(
        "export_blob, handles kept, a reader open: {:.0} ms for {} bytes",
        Date::now() - t,
        blob.size()
    ));
    assert!(
        pool.export_blob_released().await.is_err(),
        "handles released while open"
    );
    drop(conn);
    let t = Date::now();
    let released = pool.export_blob_released().await.unwrap();
    log(&format!(
        "export_blob, handles released meanwhile: {:.0} ms",
        Date::now() - t
    ));
    // The pool works after the export, and the Blob is read after the pool took its
    // handles back, as a download would.
    let conn = pool.open(Access::Read).unwrap();
    assert_eq!(table_rows(&conn), rows);
    let bytes = blob_bytes(&blob).await;
    assert_eq!(bytes.len() as u64, db_bytes);
    assert!(bytes.starts_with(b"SQLite format 3\0"));
    let image = pt_snap_db::SnapshotDb::from_bytes(&bytes).unwrap();
    assert_eq!(table_rows(image.conn()), rows);
    assert!(blob_bytes(&released).await == bytes, "the two exports");
    drop(conn);
    pool.close().unwrap();
    let bytes_again = blob_bytes(&blob).await;
    assert!(bytes_again == bytes, "the Blob after close");

    pt_snap_opfs::remove(&sha).await.unwrap();
    assert!(pt_snap_opfs::find(&sha).await.unwrap().is_none());
    assert!(!pt_snap_opfs::list()
        .await
        .unwrap()
        .iter()
        .any(|e| e.sha256 == sha));
    assert!(!cache_dir_names().await.contains(&sha));
    match blob_bytes_result(&blob).await {
        Ok(b) => log(&format!(
            "the Blob after remove: still readable ({} bytes)",
            b.len()
        )),
        Err(e) => log(&format!("the Blob after remove: {e}")),
    }

    // Removed while this worker keeps the paused VFS: installing again starts empty.
    let pool = Pool::install(&sha).await.unwrap();
    starts_empty(
        pool,
        &sha,
        "no database after remove",
        "CREATE TABLE t (a); INSERT INTO t VALUES (1);",
    )
    .await;
}

/// `pool` has no database to open (`why` is the failure message if it has one), yet makes a
/// new one that takes `sql`; then it is closed and its entry `sha` removed.
async fn starts_empty(pool: Pool, sha: &str, why: &str, sql: &str) {
    assert!(pool.open(Access::Read).is_err(), "{why}");
    assert!(
        pool.open(Access::Write).is_err(),
        "{why}: opened for writing, not made"
    );
    let conn = pool.open(Access::Create).unwrap();
    conn.execute_batch(sql).unwrap();
    drop(conn);
    pool.close().unwrap();
    pt_snap_opfs::remove(sha).await.unwrap();
}

async fn blob_bytes_result(blob: &web_sys::Blob) -> Result<Vec<u8>, String> {
    match JsFuture::from(blob.array_buffer()).await {
        Ok(buffer) => Ok(js_sys::Uint8Array::new(&buffer).to_vec()),
        Err(e) => Err(format!("{e:?}")),
    }
}

const SHA_KILLED: &str = "aa00000000000000000000000000000000000000000000000000000000000000";
const SHA_TORN: &str = "bb00000000000000000000000000000000000000000000000000000000000000";

/// Writes a table of `rows` rows through a new pool of `sha` and closes it uncommitted.
async fn uncommitted(sha: &str, rows: usize) -> Pool {
    pt_snap_opfs::remove(sha).await.unwrap();
    let pool = Pool::install(sha).await.unwrap();
    let conn = pool.open(Access::Create).unwrap();
    conn.execute_batch(&format!(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows})
         INSERT INTO t SELECT i, printf('row %d', i) FROM n;"
    ))
    .unwrap();
    pool
}

#[wasm_bindgen_test]
async fn incomplete_entries_are_skipped_and_cleaned_up() {
    let killed = uncommitted(SHA_KILLED, 5000).await;
    // Held by this worker: a cleanup (say, from the page) must not touch it.
    let t = Date::now();
    let removed = pt_snap_opfs::cleanup_incomplete().await.unwrap();
    log(&format!(
        "cleanup_incomplete with the entry held: removed {removed}, {:.0} ms",
        Date::now() - t
    ));
    assert!(cache_dir_names().await.contains(&SHA_KILLED.to_owned()));
    assert!(
        pt_snap_opfs::remove(SHA_KILLED).await.is_err(),
        "removed while held"
    );
    let conn = killed.open(Access::Read).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 5000, "the held entry intact after the refused removals");
    drop(conn);
    killed.close().unwrap();

    // A meta.json cut short: incomplete too.
    let torn = uncommitted(SHA_TORN, 10).await;
    torn.commit(&entry(SHA_TORN)).await.unwrap();
    torn.close().unwrap();
    assert!(pt_snap_opfs::find(SHA_TORN).await.unwrap().is_some());
    write_entry_file(SHA_TORN, "meta.json", "{\"sha256\": \"0000").await;

    for sha in [SHA_KILLED, SHA_TORN] {
        assert!(pt_snap_opfs::find(sha).await.unwrap().is_none());
        assert!(!pt_snap_opfs::list()
            .await
            .unwrap()
            .iter()
            .any(|e| e.sha256 == sha));
    }
    let removed = pt_snap_opfs::cleanup_incomplete().await.unwrap();
    assert!(removed >= 2, "removed {removed}");
    let names = cache_dir_names().await;
    assert!(!names.contains(&SHA_KILLED.to_owned()), "{names:?}");
    assert!(!names.contains(&SHA_TORN.to_owned()), "{names:?}");
}

const SHA_HELD: &str = "cc00000000000000000000000000000000000000000000000000000000000000";

/// A worker that takes every file of an entry's pool (as a worker with the pool installed
/// holds them) and keeps them until it is terminated.
const HOLDER_JS: &str = r#"
onmessage = async (e) => {
  try {
    let dir = await navigator.storage.getDirectory();
    for (const part of e.data) dir = await dir.getDirectoryHandle(part);
    self.held = [await (await dir.getFileHandle('.lock')).createSyncAccessHandle()];
    const slots = await dir.getDirectoryHandle('.opaque');
    for await (const [, handle] of slots.entries()) {
      self.held.push(await handle.createSyncAccessHandle());
    }
    postMessage('held ' + self.held.length);
  } catch (err) {
    postMessage('error ' + err.name + ': ' + err.message);
  }
};
"#;

async fn message(worker: &web_sys::Worker) -> String {
    let promise = Promise::new(&mut |resolve, _| worker.set_onmessage(Some(&resolve)));
    let event: web_sys::MessageEvent = JsFuture::from(promise).await.unwrap().unchecked_into();
    event.data().as_string().unwrap()
}

#[wasm_bindgen_test]
async fn a_terminated_workers_entry_installs_again() {
    let pool = uncommitted(SHA_HELD, 1000).await;
    pool.close().unwrap();

    let options = web_sys::BlobPropertyBag::new();
    options.set_type("text/javascript");
    let script = web_sys::Blob::new_with_str_sequence_and_options(
        &Array::of1(&JsValue::from_str(HOLDER_JS)),
        &options,
    )
    .unwrap();
    let url = web_sys::Url::create_object_url_with_blob(&script).unwrap();
    let worker = web_sys::Worker::new(&url).unwrap();
    let path = Array::of3(&"pt-snap-cache".into(), &SHA_HELD.into(), &"pool".into());
    worker.post_message(&path).unwrap();
    let reply = message(&worker).await;
    assert!(reply.starts_with("held "), "{reply}");
    log(&format!("the other worker: {reply}"));

    let t = Date::now();
    let refused = Pool::install(SHA_HELD).await;
    let waited = Date::now() - t;
    let err = refused
        .err()
        .expect("installed while another worker holds it");
    log(&format!(
        "install while held elsewhere: refused after {waited:.0} ms: {err}"
    ));
    assert!(err.contains("another worker"), "{err}");

    worker.terminate();
    let t = Date::now();
    let pool = Pool::install(SHA_HELD).await.unwrap();
    log(&format!(
        "install right after terminate(): {:.0} ms",
        Date::now() - t
    ));
    let conn = pool.open(Access::Read).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1000);
    drop(conn);

    let blob = pool.export_blob().await.unwrap();
    assert!(blob_bytes_result(&blob).await.is_ok());
    let conn = pool.open(Access::Create).unwrap();
    conn.execute_batch("INSERT INTO t (v) VALUES ('after the export')")
        .unwrap();
    drop(conn);
    let after = blob_bytes_result(&blob).await;
    log(&format!(
        "a Blob exported before a write, read after it: {:?}",
        after.as_ref().map(Vec::len)
    ));
    assert!(after.is_err(), "a stale export read");
    pool.close().unwrap();
    web_sys::Url::revoke_object_url(&url).unwrap();
    pt_snap_opfs::remove(SHA_HELD).await.unwrap();
}

const SHA_RESET: &str = "ff00000000000000000000000000000000000000000000000000000000000000";

/// A retry in the same worker (a lenient import after a refused strict one) starts over.
#[wasm_bindgen_test]
async fn reset_discards_the_database_and_its_metadata() {
    let pool = uncommitted(SHA_RESET, 100).await;
    pool.commit(&entry(SHA_RESET)).await.unwrap();
    assert!(pt_snap_opfs::find(SHA_RESET).await.unwrap().is_some());
    let conn = pool.open(Access::Read).unwrap();
    assert!(pool.reset().await.is_err(), "reset while open");
    drop(conn);
    pool.reset().await.unwrap();
    assert!(pt_snap_opfs::find(SHA_RESET).await.unwrap().is_none());
    starts_empty(
        pool,
        SHA_RESET,
        "a database after reset",
        "CREATE TABLE t (id INTEGER PRIMARY KEY)",
    )
    .await;
}

const SHA_SIZE: &str = "ee00000000000000000000000000000000000000000000000000000000000000";

/// The size recorded after the deferred indexes grew a committed database: listed, never
/// able to make the entry incomplete, and gone with the database it measured.
#[wasm_bindgen_test]
async fn a_recorded_size_is_listed_and_cannot_tear_the_entry() {
    let pool = uncommitted(SHA_SIZE, 100).await;
    assert!(pool.record_size(1).await.is_err(), "recorded before commit");
    let committed = pool.commit(&entry(SHA_SIZE)).await.unwrap();
    pool.record_size(123_456).await.unwrap();
    let found = pt_snap_opfs::find(SHA_SIZE).await.unwrap().unwrap();
    assert_eq!(
        found,
        Entry {
            db_bytes: 123_456,
            ..committed.clone()
        }
    );
    // Cut short: the entry stands, with the size its commit measured.
    write_entry_file(SHA_SIZE, "size.json", "{\"db_bytes\": 12").await;
    assert_eq!(
        pt_snap_opfs::find(SHA_SIZE).await.unwrap(),
        Some(committed.clone())
    );
    // Let go, so a cleanup would take it if it looked incomplete.
    pool.close().unwrap();
    pt_snap_opfs::cleanup_incomplete().await.unwrap();
    assert!(cache_dir_names().await.contains(&SHA_SIZE.to_owned()));
    assert_eq!(
        pt_snap_opfs::find(SHA_SIZE).await.unwrap(),
        Some(committed.clone())
    );
    // A new database in the pool is measured afresh.
    let pool = Pool::install(SHA_SIZE).await.unwrap();
    pool.record_size(999).await.unwrap();
    pool.reset().await.unwrap();
    drop(pool.open(Access::Create).unwrap());
    let again = pool.commit(&entry(SHA_SIZE)).await.unwrap();
    assert_eq!(
        pt_snap_opfs::find(SHA_SIZE).await.unwrap(),
        Some(again.clone())
    );
    assert_ne!(again.db_bytes, 999);
    pool.close().unwrap();
    pt_snap_opfs::remove(SHA_SIZE).await.unwrap();
}
