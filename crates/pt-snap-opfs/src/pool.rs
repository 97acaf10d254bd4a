//! One entry's opfs-sahpool VFS, installed in the dedicated worker that reads or writes its
//! database.

use std::cell::RefCell;
use std::collections::HashSet;

use rusqlite::{Connection, OpenFlags};
use sqlite_wasm_rs::vfs::transfer::{DbTransfer, ExportSource};
use sqlite_wasm_rs::vfs::VfsFilesManager;
use sqlite_wasm_rs::WasmOsCallback;
use sqlite_wasm_vfs::sahpool::{install, OpfsSAHError, OpfsSAHPoolCfgBuilder, OpfsSAHPoolUtil};
use wasm_bindgen::JsValue;
use web_sys::FileSystemDirectoryHandle;

use crate::{check_sha256, js, Entry, RecordedSize, CACHE_DIR, META_FILE, POOL_DIR, SIZE_FILE};

/// Where the database lives inside its pool (a name in the pool's header, not an OPFS
/// path).
const DB_PATH: &str = "/snapshot.db";

/// Slots (OPFS files, each with a sync access handle held while installed): the database,
/// its rollback journal (`Writer::finish` switches to `journal_mode = DELETE`, so later
/// writes have one: the indexes an import defers are built with it), and temp files for
/// `CREATE INDEX`'s sort runs (`temp_store = FILE`): one, and another when a big index has
/// more runs than one merge takes. Running out is `SQLITE_CANTOPEN`, so keep spares; an
/// empty slot is a 4 KiB file.
const CAPACITY: usize = 6;

/// Waits between attempts to take an entry's lock that another worker holds (about 3 s in
/// all): long enough for a worker that was asked to close the entry, or terminated, to let
/// go (Chromium frees a terminated worker's handles at once; other browsers may take a
/// moment), short enough that a tab which really has it open is reported quickly.
const RETRY_MS: [u32; 7] = [25, 50, 100, 200, 400, 800, 1600];

/// The sahpool file header: the file's name, NUL-padded, then its SQLite open flags
/// (big-endian u32); SQLite's bytes start at `HEADER_OFFSET_DATA`.
const HEADER_NAME_LEN: usize = 512;
const HEADER_LEN: usize = HEADER_NAME_LEN + 4;
const HEADER_OFFSET_DATA: u64 = 4096;
/// SQLITE_OPEN_MAIN_DB | MAIN_JOURNAL | SUPER_JOURNAL | WAL.
const PERSISTENT: u32 = 0x100 | 0x800 | 0x4000 | 0x80000;

thread_local! {
    // sahpool hands a second install of the same VFS the first one's pool; two `Pool`s
    // would then pause each other's VFS. One per entry per worker.
    static INSTALLED: RefCell<HashSet<String>> = RefCell::new(HashSet::new());
}

/// How [`Pool::open`] opens the pool's database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Writable, created if missing: an import.
    Create,
    /// Writable, and an error if missing: a cached import whose deferred indexes are still
    /// to be built (a pool emptied meanwhile must not come back as an empty database).
    Write,
    /// Read-only, with `query_only` on.
    Read,
}

/// An entry's opfs-sahpool VFS, installed (not as the default VFS) in this dedicated
/// worker, which holds every file of the entry's pool until [`Pool::close`] or drop.
pub struct Pool {
    sha256: String,
    vfs_name: String,
    util: OpfsSAHPoolUtil,
    dir: FileSystemDirectoryHandle,
    closed: bool,
}

impl Pool {
    /// Installs the pool of entry `sha256` (creating the entry's directory when new).
    ///
    /// Another worker holding it is waited for, about 3 s in all, before this fails with
    /// "open in another worker or tab". One entry is installed once per worker.
    pub async fn install(sha256: &str) -> Result<Pool, String> {
        check_sha256(sha256)?;
        if !INSTALLED.with(|s| s.borrow_mut().insert(sha256.to_owned())) {
            return Err(format!(
                "the OPFS pool of {sha256} is already installed in this worker"
            ));
        }
        let pool = Self::install_new(sha256).await;
        if pool.is_err() {
            INSTALLED.with(|s| s.borrow_mut().remove(sha256));
        }
        pool
    }

    async fn install_new(sha256: &str) -> Result<Pool, String> {
        let root = js::root().await?;
        let cache = js::dir(&root, CACHE_DIR, true).await?;
        let dir = js::dir(cache.as_ref().expect("created"), sha256, true)
            .await?
            .expect("created");
        let vfs_name = format!("pt-snap-{}", &sha256[..16]);
        let config = OpfsSAHPoolCfgBuilder::new()
            .vfs_name(&vfs_name)
            .directory(&format!("{CACHE_DIR}/{sha256}/{POOL_DIR}"))
            .initial_capacity(CAPACITY)
            .build();
        let mut waits = RETRY_MS.iter();
        let util = loop {
            match try_install(&config, &dir).await {
                Ok(util) => break util,
                Err(Failure::Locked(e)) => match waits.next() {
                    Some(&ms) => js::sleep(ms).await,
                    None => {
                        return Err(format!(
                            "the cached database {sha256} is open in another worker or tab: {e}"
                        ))
                    }
                },
                Err(Failure::Other(e)) => {
                    return Err(format!("install the OPFS pool of {sha256}: {e}"))
                }
            }
        };
        Ok(Pool {
            sha256: sha256.to_owned(),
            vfs_name,
            util,
            dir,
            closed: false,
        })
    }

    /// The SQLite VFS name (`pt-snap-<first 16 hex digits>`). Open only [`Pool::db_path`]
    /// through it, preferably with [`Pool::open`].
    pub fn vfs_name(&self) -> &str {
        &self.vfs_name
    }

    /// The database's path inside the pool.
    pub fn db_path(&self) -> &str {
        DB_PATH
    }

    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// Opens the database as `access` says. Several read-only connections may be open at
    /// once; sahpool does not lock between connections, so never a writer beside anything
    /// else. Drop every connection before [`Pool::commit`], [`Pool::reset`] or
    /// [`Pool::close`].
    pub fn open(&self, access: Access) -> rusqlite::Result<Connection> {
        let flags = match access {
            Access::Create => OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
            Access::Write => OpenFlags::SQLITE_OPEN_READ_WRITE,
            Access::Read => OpenFlags::SQLITE_OPEN_READ_ONLY,
        } | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags_and_vfs(DB_PATH, flags, self.vfs_name.as_str())?;
        if access == Access::Read {
            conn.pragma_update(None, "query_only", true)?;
        }
        Ok(conn)
    }

    /// The database file's size: an error while a connection has it open or a rollback
    /// journal is left over (the file alone would not be the database then).
    pub fn db_bytes(&self) -> Result<u64, String> {
        let source = self.util.open_export(DB_PATH).map_err(|e| match e {
            OpfsSAHError::FileInUse(_) => {
                "the database is still open: drop its connections first".to_owned()
            }
            OpfsSAHError::FileNotFound(_) => "the database was never created".to_owned(),
            OpfsSAHError::RecoveryRequired(_) => {
                "the database has a rollback journal (an interrupted write): open it for \
                 writing once to roll back"
                    .to_owned()
            }
            e => format!("read the database's size: {e}"),
        })?;
        Ok(source.size())
    }

    /// Marks the entry complete by writing its `meta.json`, with `db_bytes` measured here;
    /// returns the entry as written. Every connection must be dropped first.
    pub async fn commit(&self, entry: &Entry) -> Result<Entry, String> {
        if entry.sha256 != self.sha256 {
            return Err(format!(
                "entry {} committed to the pool of {}",
                entry.sha256, self.sha256
            ));
        }
        let entry = Entry {
            db_bytes: self.db_bytes()?,
            ..entry.clone()
        };
        // A size recorded for an earlier database of this pool is not this one's.
        js::remove(&self.dir, SIZE_FILE).await?;
        let json = serde_json::to_vec_pretty(&entry).map_err(|e| e.to_string())?;
        js::write_file(&self.dir, META_FILE, &json).await?;
        Ok(entry)
    }

    /// Records a committed database's new size in its entry, after an open connection
    /// grew it (the indexes a deferred import left, built later). `db_bytes` is that
    /// connection's count: the file cannot be measured while it is open.
    pub async fn record_size(&self, db_bytes: u64) -> Result<(), String> {
        if crate::read_meta(&self.dir, &self.sha256).await?.is_none() {
            return Err(format!("{} has no committed entry", self.sha256));
        }
        let json = serde_json::to_vec(&RecordedSize { db_bytes }).map_err(|e| e.to_string())?;
        js::write_file(&self.dir, SIZE_FILE, &json).await
    }

    /// Discards the database (and `meta.json`, first, so the entry is incomplete before its
    /// data goes), keeping the pool installed: for importing again in the same worker, e.g.
    /// leniently after a strict replay was refused. Every connection must be dropped first.
    pub async fn reset(&self) -> Result<(), String> {
        js::remove(&self.dir, META_FILE).await?;
        js::remove(&self.dir, SIZE_FILE).await?;
        self.util.clear().map_err(|e| match e {
            OpfsSAHError::FilesInUse => {
                "the database is still open: drop its connections first".to_owned()
            }
            e => format!("clear the OPFS pool: {e}"),
        })
    }

    /// The database file as a `Blob` backed by OPFS: nothing is read into wasm memory, so
    /// a download of it streams from disk.
    ///
    /// Chromium lets a worker read a file it holds a sync access handle to, so there the
    /// `File` is taken with the handles kept: read-only connections may stay open, and no
    /// other worker can take the entry meanwhile. Where the browser refuses, the handles are
    /// let go while the `File` is taken (every connection must be dropped for that) and
    /// taken again before this returns. Either way, the database must not be written while
    /// this runs; once it is written later, the browser refuses to read the `Blob`
    /// (`NotReadableError`).
    pub async fn export_blob(&self) -> Result<web_sys::Blob, String> {
        match self.db_file().await {
            Ok(blob) => Ok(blob),
            Err(held) => self
                .export_blob_released()
                .await
                .map_err(|e| format!("{e} (read while held: {held})")),
        }
    }

    /// [`Pool::export_blob`] the way every browser allows: the handles let go meanwhile.
    #[doc(hidden)]
    pub async fn export_blob_released(&self) -> Result<web_sys::Blob, String> {
        let size = self.db_bytes()?;
        self.util
            .pause()
            .map_err(|e| format!("release the pool's handles: {e}"))?;
        let blob = self.db_file().await;
        let resumed = self.util.resume().await;
        let blob = blob?;
        resumed.map_err(|e| format!("take the pool's handles again: {e}"))?;
        if blob.size() != size as f64 {
            return Err(format!(
                "the database file has {} bytes, the pool says {size}",
                blob.size()
            ));
        }
        Ok(blob)
    }

    /// The database's bytes in the pool's slot file whose header names it (sahpool keeps
    /// them after a 4 KiB header). Refused when a rollback journal holds data: the file
    /// alone would not be the database then.
    async fn db_file(&self) -> Result<web_sys::Blob, String> {
        let missing = || format!("no file of the pool holds {DB_PATH}");
        let pool = js::dir(&self.dir, POOL_DIR, false)
            .await?
            .ok_or_else(missing)?;
        let slots = js::dir(&pool, ".opaque", false)
            .await?
            .ok_or_else(missing)?;
        let mut db = None;
        for (_, kind) in js::children(&slots).await? {
            let js::Kind::File(handle) = kind else {
                continue;
            };
            let file = js::get_file(&handle).await?;
            if file.size() <= HEADER_OFFSET_DATA as f64 {
                continue;
            }
            // Reading the header also proves the browser lets this file be read now.
            let header = file
                .slice_with_i32_and_i32(0, HEADER_LEN as i32)
                .map_err(|e| js::describe("read a pool file's header", &e))?;
            match slot_name(&js::bytes(&header).await?) {
                Some(name) if name == DB_PATH.as_bytes() => db = Some(file),
                Some(name) if name.starts_with(DB_PATH.as_bytes()) => {
                    return Err(format!(
                        "{} holds data (an interrupted write): open the database for \
                         writing once to roll it back",
                        String::from_utf8_lossy(name)
                    ))
                }
                _ => {}
            }
        }
        let file = db.ok_or_else(missing)?;
        file.slice_with_f64_and_f64(HEADER_OFFSET_DATA as f64, file.size())
            .map_err(|e| js::describe("slice the database file", &e))
    }

    /// Lets go of the pool's sync access handles, so another worker can install it. The
    /// VFS stays registered, paused, for this worker's lifetime; installing the entry again
    /// here resumes it. An error while a connection is open (the handles are kept then).
    pub fn close(mut self) -> Result<(), String> {
        self.release()
    }

    fn release(&mut self) -> Result<(), String> {
        if self.closed {
            return Ok(());
        }
        self.util.pause().map_err(|e| match e {
            OpfsSAHError::FilesInUse => {
                "the database is still open: drop its connections before closing".to_owned()
            }
            e => format!("release the OPFS pool: {e}"),
        })?;
        self.closed = true;
        Ok(())
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        let _ = self.release();
        INSTALLED.with(|s| s.borrow_mut().remove(&self.sha256));
    }
}

enum Failure {
    /// Another worker holds the entry's files.
    Locked(String),
    Other(String),
}

impl From<OpfsSAHError> for Failure {
    fn from(e: OpfsSAHError) -> Self {
        let locked = matches!(
            &e,
            OpfsSAHError::Opfs { value, .. } if is_locked(value)
        );
        if locked {
            Failure::Locked(e.to_string())
        } else {
            Failure::Other(e.to_string())
        }
    }
}

fn is_locked(err: &JsValue) -> bool {
    js::error_name(err).as_deref() == Some("NoModificationAllowedError")
}

async fn try_install(
    config: &sqlite_wasm_vfs::sahpool::OpfsSAHPoolCfg,
    dir: &FileSystemDirectoryHandle,
) -> Result<OpfsSAHPoolUtil, Failure> {
    let util = install::<WasmOsCallback>(config, false).await?;
    if util.is_paused() {
        // Installed and closed before in this worker: sahpool keeps the paused VFS and its
        // directory handles. Those name paths, so if `remove` deleted the entry meanwhile,
        // recreating the directories makes them valid again.
        let pool = js::dir(dir, POOL_DIR, true).await.map_err(Failure::Other)?;
        let pool = pool.expect("created");
        js::dir(&pool, ".opaque", true)
            .await
            .map_err(Failure::Other)?;
        js::file(&pool, ".lock", true)
            .await
            .map_err(Failure::Other)?;
        util.resume().await?;
    }
    // A removed entry's directories come back empty, without the slots `install` makes
    // for a new pool.
    util.ensure_capacity(CAPACITY).await?;
    Ok(util)
}

/// The file name a sahpool header (a slot's first `HEADER_LEN` bytes) assigns the slot,
/// when it is a persistent file of SQLite's (`None` for a free slot or a temp file).
fn slot_name(header: &[u8]) -> Option<&[u8]> {
    let name = header.get(..HEADER_NAME_LEN)?;
    let flags = u32::from_be_bytes(header.get(HEADER_NAME_LEN..HEADER_LEN)?.try_into().ok()?);
    let end = name.iter().position(|&b| b == 0)?;
    (end > 0 && flags & PERSISTENT != 0).then_some(&name[..end])
}
