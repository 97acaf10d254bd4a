//! The Web Worker that imports a snapshot pickle: the File is read in slices (never whole),
//! decoded, replayed into an in-memory SQLite database, and the database image is transferred
//! back to the page. It blocks its own thread for the whole import on purpose: the page
//! cancels by terminating the worker, which no cooperative flag could do faster.
//!
//! Protocol (plain JS objects):
//! * worker → page `{type: "ready"}` once it can take work (earlier messages would be lost);
//! * page → worker `{file: File}`;
//! * worker → page `{type: "progress", stage, bytes, total, events, device, done, of}`;
//! * worker → page `{type: "done", db: ArrayBuffer, name, warnings: [..]}` (db transferred);
//! * worker → page `{type: "error", code, message}` with the CLI's code and message.

#[cfg(not(target_arch = "wasm32"))]
fn main() {}

#[cfg(target_arch = "wasm32")]
fn main() {
    imp::start();
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use std::io::{self, Read};

    use js_sys::{Array, Object, Reflect, Uint8Array};
    use pt_snap_import::{ImportRequest, Stage};
    use sha2::{Digest, Sha256};
    use wasm_bindgen::prelude::*;
    use web_sys::{DedicatedWorkerGlobalScope, File, FileReaderSync, MessageEvent};

    // Linked for its host hooks (clock, randomness) that SQLite needs in a browser.
    use sqlite_wasm_rs as _;

    /// Large enough that the per-slice JS round trip is noise, small enough to keep the
    /// worker's memory near the decoded model's.
    const CHUNK: f64 = 4.0 * 1024.0 * 1024.0;

    pub fn start() {
        console_error_panic_hook::set_once();
        let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
        let handler = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
            let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
            let file: Option<File> = Reflect::get(&ev.data(), &"file".into())
                .ok()
                .and_then(|f| f.dyn_into().ok());
            let reply = match file {
                // The image goes straight from SQLite into the message's buffer (one copy,
                // not two: at 1 GB the worker's 4 GiB wasm memory cannot hold a third); it and
                // the database are freed before the message is posted.
                Some(file) => match import(&scope, &file).and_then(|(mut conn, warnings)| {
                    let image = conn.serialize(rusqlite::MAIN_DB).map_err(backend)?;
                    Ok(done(&image, &file.name(), &warnings))
                }) {
                    Ok(reply) => reply,
                    Err((code, message)) => error(code, &message),
                },
                None => error("INTERNAL_ERROR", "The worker was sent no file."),
            };
            post(&scope, &reply.0, reply.1.as_ref());
        });
        scope.set_onmessage(Some(handler.as_ref().unchecked_ref()));
        handler.forget();
        post(&scope, &obj(&[("type", "ready".into())]), None);
    }

    type Failure = (&'static str, String);

    fn import(
        scope: &DedicatedWorkerGlobalScope,
        file: &File,
    ) -> Result<(rusqlite::Connection, Vec<String>), Failure> {
        let total = file.size();
        let mut reader = FileChunks::new(file.clone())?;
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
        // The digest covers the whole file, as the CLI's does, even bytes after STOP.
        io::copy(&mut reader, &mut io::sink()).map_err(backend)?;
        let request = ImportRequest {
            device: None,
            source_sha256: format!("{:x}", reader.hasher.finalize_reset()),
            source_size: total as u64,
            source_name: file.name(),
            completed_at: now_utc_iso(),
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

    /// The File as a `Read`, one slice at a time, hashing what passes through.
    struct FileChunks {
        file: File,
        reader: FileReaderSync,
        size: f64,
        pos: f64,
        buf: Vec<u8>,
        at: usize,
        hasher: Sha256,
    }

    impl FileChunks {
        fn new(file: File) -> Result<Self, Failure> {
            let reader = FileReaderSync::new().map_err(|e| backend(format!("{e:?}")))?;
            Ok(FileChunks {
                size: file.size(),
                file,
                reader,
                pos: 0.0,
                buf: Vec::new(),
                at: 0,
                hasher: Sha256::new(),
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
                self.hasher.update(&self.buf);
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
