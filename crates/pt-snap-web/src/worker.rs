//! The Web Worker that imports a snapshot (a pickle or JSON, possibly gzip/zstd/bzip2
//! compressed): the File is read in slices (never whole), decoded, replayed into an in-memory SQLite database, and the database image is transferred
//! back to the page. It blocks its own thread for the whole import on purpose: the page
//! cancels by terminating the worker, which no cooperative flag could do faster.
//!
//! Protocol (plain JS objects):
//! * worker → page `{type: "ready"}` once it can take work (earlier messages would be lost);
//! * page → worker `{file: File, lenient: bool}` (`lenient`: the replay applies events it
//!   cannot reconcile from the trace alone and lists them, as `pt-snap import --lenient`);
//! * worker → page `{type: "progress", stage, bytes, total, events, device, done, of}`;
//! * worker → page `{type: "done", db: ArrayBuffer, name, warnings: [..]}` (db transferred);
//! * worker → page `{type: "error", code, message}` with the CLI's code and message.
//!
//! The file's SHA-256 is computed beside the decoding by a helper worker
//! (`www/hash-worker.js`, WebCrypto) when the page is a secure context and the file is not
//! too large to hold once more; otherwise here, as the slices pass through.

#[cfg(not(target_arch = "wasm32"))]
fn main() {}

#[cfg(target_arch = "wasm32")]
fn main() {
    imp::start();
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use std::io::{self, Read};

    use js_sys::{Array, Object, Promise, Reflect, Uint8Array};
    use pt_snap_import::{ImportRequest, ReplayMode, Stage};
    use sha2::{Digest, Sha256};
    use wasm_bindgen::prelude::*;
    use wasm_bindgen_futures::JsFuture;
    use web_sys::{DedicatedWorkerGlobalScope, File, FileReaderSync, MessageEvent, Worker};

    // Linked for its host hooks (clock, randomness) that SQLite needs in a browser.
    use sqlite_wasm_rs as _;

    /// Large enough that the per-slice JS round trip is noise, small enough to keep the
    /// worker's memory near the decoded model's.
    const CHUNK: f64 = 4.0 * 1024.0 * 1024.0;

    /// Files up to this size are hashed by the helper worker, which holds the whole file
    /// meanwhile; larger ones are hashed here, so that a 1 GB import needs no second GB.
    const HASH_BESIDE_MAX: f64 = 512.0 * 1024.0 * 1024.0;

    pub fn start() {
        console_error_panic_hook::set_once();
        let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
        let handler = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
            let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
            let file: Option<File> = Reflect::get(&ev.data(), &"file".into())
                .ok()
                .and_then(|f| f.dyn_into().ok());
            let replay = match get(&ev.data(), "lenient").as_bool() {
                Some(true) => ReplayMode::Lenient,
                _ => ReplayMode::Strict,
            };
            wasm_bindgen_futures::spawn_local(async move {
                let reply = match file {
                    // The image goes straight from SQLite into the message's buffer (one
                    // copy, not two: at 1 GB the worker's 4 GiB wasm memory cannot hold a
                    // third); it and the database are freed before the message is posted.
                    Some(file) => {
                        match import(&scope, &file, replay).await.and_then(
                            |(mut conn, warnings)| {
                                let image = conn.serialize(rusqlite::MAIN_DB).map_err(backend)?;
                                Ok(done(&image, &file.name(), &warnings))
                            },
                        ) {
                            Ok(reply) => reply,
                            Err((code, message)) => error(code, &message),
                        }
                    }
                    None => error("INTERNAL_ERROR", "The worker was sent no file."),
                };
                post(&scope, &reply.0, reply.1.as_ref());
            });
        });
        scope.set_onmessage(Some(handler.as_ref().unchecked_ref()));
        handler.forget();
        post(&scope, &obj(&[("type", "ready".into())]), None);
    }

    type Failure = (&'static str, String);

    async fn import(
        scope: &DedicatedWorkerGlobalScope,
        file: &File,
        replay: ReplayMode,
    ) -> Result<(rusqlite::Connection, Vec<String>), Failure> {
        let total = file.size();
        let digest = hash_beside(scope, file);
        let mut reader = FileChunks::new(file.clone(), digest.is_none())?;
        let mut last_posted = 0u64;
        let step = ((total / 100.0) as u64).max(256 * 1024);
        let snapshot = pt_snap_model::decode(&mut reader, &mut |p| {
            if p.bytes_read >= last_posted + step {
                last_posted = p.bytes_read;
                progress(
                    scope,
                    "decoding",
                    p.bytes_read as f64,
                    total,
                    p.events as f64,
                    None,
                );
            }
        })
        .map_err(failed)?;
        let sha256 = match digest {
            Some(digest) => match JsFuture::from(digest).await.map(|r| get(&r, "hex")) {
                Ok(hex) if hex.is_string() => hex.as_string().unwrap_or_default(),
                // WebCrypto refused (or the helper died): hash here after all.
                _ => hash_here(FileChunks::new(file.clone(), true)?)?,
            },
            None => hash_here(reader)?,
        };
        let request = ImportRequest {
            device: None,
            source_sha256: sha256,
            source_size: total as u64,
            source_name: file.name(),
            completed_at: now_utc_iso(),
            replay,
        };
        let conn = rusqlite::Connection::open_in_memory().map_err(backend)?;
        let mut last_done = 0usize;
        let summary =
            pt_snap_import::import_snapshot(&snapshot, &conn, &request, &mut |s| match s {
                Stage::Replaying {
                    device,
                    done,
                    total: of,
                } => {
                    if done == 0 || done >= last_done + (of / 50).max(1) || done == of {
                        last_done = done;
                        progress(
                            scope,
                            "replaying",
                            total,
                            total,
                            of as f64,
                            Some((device, done, of)),
                        );
                    }
                }
                Stage::Indexing => progress(scope, "indexing", total, total, 0.0, None),
            })
            .map_err(failed)?;
        drop(snapshot);
        progress(scope, "serializing", total, total, 0.0, None);
        Ok((conn, summary.warnings))
    }

    /// The rest of the file through the reader's hasher: the digest covers the whole file as
    /// given, as the CLI's does: compressed bytes for a compressed file, and even bytes after
    /// the pickle's STOP.
    fn hash_here(mut reader: FileChunks) -> Result<String, Failure> {
        io::copy(&mut reader, &mut io::sink()).map_err(backend)?;
        let hasher = reader.hasher.take().unwrap_or_default();
        Ok(format!("{:x}", hasher.finalize()))
    }

    /// Starts the helper worker on `file`; its answer (`{hex}` or `{error}`) settles the
    /// promise. `None` where WebCrypto is missing (pages served over plain HTTP from another
    /// host are not a secure context), the file is too large, or no worker can start.
    fn hash_beside(scope: &DedicatedWorkerGlobalScope, file: &File) -> Option<Promise> {
        let secure = get(scope, "isSecureContext").as_bool() == Some(true);
        if !secure || file.size() > HASH_BESIDE_MAX {
            return None;
        }
        let worker = Worker::new("./hash-worker.js").ok()?;
        let promise = Promise::new(&mut |resolve, _| {
            let helper = worker.clone();
            let settle = resolve.clone();
            let answer = Closure::once_into_js(move |ev: MessageEvent| {
                helper.terminate();
                let _ = settle.call1(&JsValue::NULL, &ev.data());
            });
            worker.set_onmessage(Some(answer.unchecked_ref()));
            // A helper that fails to load answers with an error, so the import hashes here.
            let helper = worker.clone();
            let failed = Closure::once_into_js(move |_: JsValue| {
                helper.terminate();
                let _ = resolve.call1(&JsValue::NULL, &JsValue::NULL);
            });
            worker.set_onerror(Some(failed.unchecked_ref()));
        });
        worker.post_message(file).ok()?;
        Some(promise)
    }

    fn get(v: &JsValue, key: &str) -> JsValue {
        Reflect::get(v, &key.into()).unwrap_or(JsValue::UNDEFINED)
    }

    /// The CLI's code and message for an import failure (the one shared mapping).
    fn failed(f: impl Into<pt_snap_import::Failure>) -> Failure {
        let f = f.into();
        (f.code, f.message)
    }

    fn backend(e: impl std::fmt::Display) -> Failure {
        failed(pt_snap_import::Failure::backend(e))
    }

    /// `2026-12-02T13:21:45.664000+00:00`, the metadata's spelling (JS clocks stop at ms).
    fn now_utc_iso() -> String {
        let iso: String = js_sys::Date::new_0().to_iso_string().into();
        match iso.strip_suffix('Z') {
            Some(head) => format!("{head}000+00:00"),
            None => iso,
        }
    }

    /// The File as a `Read`, one slice at a time, hashing what passes through if asked to.
    struct FileChunks {
        file: File,
        reader: FileReaderSync,
        size: f64,
        pos: f64,
        buf: Vec<u8>,
        at: usize,
        hasher: Option<Sha256>,
    }

    impl FileChunks {
        fn new(file: File, hash: bool) -> Result<Self, Failure> {
            let reader = FileReaderSync::new().map_err(|e| backend(format!("{e:?}")))?;
            Ok(FileChunks {
                size: file.size(),
                file,
                reader,
                pos: 0.0,
                buf: Vec::new(),
                at: 0,
                hasher: hash.then(Sha256::new),
            })
        }
    }

    impl Read for FileChunks {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.at == self.buf.len() {
                if self.pos >= self.size {
                    return Ok(0);
                }
                let end = (self.pos + CHUNK).min(self.size);
                let slice = self
                    .file
                    .slice_with_f64_and_f64(self.pos, end)
                    .map_err(js_io)?;
                let bytes = self.reader.read_as_array_buffer(&slice).map_err(js_io)?;
                self.buf = Uint8Array::new(&bytes).to_vec();
                if let Some(hasher) = &mut self.hasher {
                    hasher.update(&self.buf);
                }
                self.pos = end;
                self.at = 0;
            }
            let n = out.len().min(self.buf.len() - self.at);
            out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    fn js_io(e: JsValue) -> io::Error {
        io::Error::other(format!("cannot read the file: {e:?}"))
    }

    fn obj(fields: &[(&str, JsValue)]) -> Object {
        let o = Object::new();
        for (k, v) in fields {
            let _ = Reflect::set(&o, &(*k).into(), v);
        }
        o
    }

    fn progress(
        scope: &DedicatedWorkerGlobalScope,
        stage: &str,
        bytes: f64,
        total: f64,
        events: f64,
        replay: Option<(usize, usize, usize)>,
    ) {
        let (device, done, of) = replay.map_or(
            (JsValue::NULL, JsValue::NULL, JsValue::NULL),
            |(d, n, o)| ((d as f64).into(), (n as f64).into(), (o as f64).into()),
        );
        let msg = obj(&[
            ("type", "progress".into()),
            ("stage", stage.into()),
            ("bytes", bytes.into()),
            ("total", total.into()),
            ("events", events.into()),
            ("device", device),
            ("done", done),
            ("of", of),
        ]);
        post(scope, &msg, None);
    }

    fn done(db: &[u8], name: &str, warnings: &[String]) -> (Object, Option<Array>) {
        let bytes = Uint8Array::new_from_slice(db);
        let buffer = bytes.buffer();
        let list: Array = warnings.iter().map(|w| JsValue::from_str(w)).collect();
        let msg = obj(&[
            ("type", "done".into()),
            ("db", buffer.clone().into()),
            ("name", name.into()),
            ("warnings", list.into()),
        ]);
        (msg, Some(Array::of1(&buffer)))
    }

    fn error(code: &str, message: &str) -> (Object, Option<Array>) {
        (
            obj(&[
                ("type", "error".into()),
                ("code", code.into()),
                ("message", message.into()),
            ]),
            None,
        )
    }

    fn post(scope: &DedicatedWorkerGlobalScope, msg: &Object, transfer: Option<&Array>) {
        let sent = match transfer {
            Some(t) => scope.post_message_with_transfer(msg, t),
            None => scope.post_message(msg),
        };
        if let Err(e) = sent {
            web_sys::console::error_1(&e);
        }
    }
}
