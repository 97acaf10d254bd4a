//! The file opened ([`Source`]: dropped, or served by `pt-snap view`) as a `Read`, a slice
//! at a time ([`Slices`]). Where the page is cross-origin isolated, a helper worker
//! (`www/read-worker.js`, [`Helper`]) streams it ahead into shared slots this worker copies
//! each slice out of ([`Ring`]), so the file is read once, and hashes it on the way;
//! elsewhere this worker reads it a range at a time ([`Source::read`]). The
//! page starts the helper when asked (`FromWorker::StartReader`): a worker's own workers
//! make its end racy in Chromium (the page's `file_worker` says how).

#![cfg(target_arch = "wasm32")]

use std::io::{self, Read};

use js_sys::{Atomics, Int32Array, Object, Promise, Reflect, SharedArrayBuffer, Uint8Array};
use pt_snap_engine::protocol::encode;
use pt_snap_engine::{ErrorCode, Failure, FromWorker, Progress};
use pt_snap_import::failure::backend;
use pt_snap_model::{Slices, SLICE};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{DedicatedWorkerGlobalScope, MessageChannel, MessageEvent, MessagePort};

use crate::messages::{get, post};
use crate::source::Source;

/// Bytes the helper hashes between two progress messages.
const HASH_PROGRESS_STEP: f64 = (64 << 20) as f64;

/// The file's SHA-256 when only the hash is wanted (to look it up in the cache, with
/// `progress` of its size shown, or to check a file shown from it, beside the page's
/// questions): the helper reads and hashes, and this worker is free meanwhile.
pub(crate) async fn sha256_of(file: &Source, progress: Option<f64>) -> Result<String, Failure> {
    Helper::start(file, None, true, progress)
        .await?
        .sha256()
        .await
}

/// One slice of the file, copied into the decoder's memory.
type FetchSlice = dyn FnMut(u64, u64) -> io::Result<Vec<u8>>;

/// The file as a `Read`, one slice at a time ([`Slices`]), and its helper.
pub(crate) struct FileChunks {
    slices: Slices<Box<FetchSlice>>,
    /// `None` for a file read a range at a time and not hashed.
    helper: Option<Helper>,
    /// Read through the helper's [`Ring`].
    ahead: bool,
}

impl FileChunks {
    /// Read ahead by the helper through shared slots where the page has shared memory
    /// (it is cross-origin isolated), else a range at a time (a `File`'s with
    /// `FileReaderSync`, whose slices stay in memory until a collection). The helper hashes
    /// the file if asked to.
    pub(crate) async fn open(file: Source, hash: bool) -> Result<Self, Failure> {
        let len = file.size() as u64;
        let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
        let ring = (get(&scope, "crossOriginIsolated").as_bool() == Some(true)).then(Ring::new);
        // A file only read is read here if the helper cannot start; a hash needs it.
        let helper = match ring.is_some() || hash {
            true => match Helper::start(&file, ring.as_ref(), hash, None).await {
                Ok(helper) => Some(helper),
                Err(_) if !hash => None,
                Err(e) => return Err(e),
            },
            false => None,
        };
        let ring = ring.filter(|_| helper.is_some());
        let ahead = ring.is_some();
        let fetch: Box<FetchSlice> = match ring {
            Some(ring) => Box::new(move |start, end| ring.take(start, end)),
            None => Box::new(move |start: u64, end: u64| {
                (file.read(start, end))
                    .map_err(|e| io::Error::other(format!("cannot read the file: {e}")))
            }),
        };
        Ok(FileChunks {
            slices: Slices::new(len, fetch),
            helper,
            ahead,
        })
    }

    /// The file's SHA-256, as the CLI's: of every byte of the file as given (compressed
    /// bytes for a compressed file, and bytes after the pickle's STOP too), so what the
    /// decoder left unread is read out of the slots for the helper to go on (a helper
    /// without slots reads the file on its own).
    pub(crate) async fn sha256(mut self) -> Result<String, Failure> {
        if self.ahead {
            let mut rest = vec![0; SLICE as usize];
            while self.read(&mut rest).map_err(backend)? > 0 {}
        }
        match &self.helper {
            Some(helper) => helper.sha256().await,
            None => Err(backend("the file was opened without its hash")),
        }
    }
}

/// Slots of [`SLICE`] bytes that the helper fills ahead of the reader.
const RING_SLOTS: u32 = 4;

/// The memory the helper streams the file into, slice by slice, and [`Ring::take`]
/// copies each slice out of as the decoder asks for it (`www/read-worker.js` has the
/// protocol).
struct Ring {
    /// Per slot: 0 free, the slice's length once filled, -1 where the file cannot be read.
    state: Int32Array,
    bytes: Uint8Array,
}

impl Ring {
    fn new() -> Ring {
        let shared = SharedArrayBuffer::new(RING_SLOTS * (4 + SLICE as u32));
        Ring {
            state: Int32Array::new_with_byte_offset_and_length(&shared, 0, RING_SLOTS),
            bytes: Uint8Array::new_with_byte_offset(&shared, RING_SLOTS * 4),
        }
    }

    /// The slice `start..end`, once the helper has read it; its slot is then free.
    fn take(&self, start: u64, end: u64) -> io::Result<Vec<u8>> {
        debug_assert_eq!(start % SLICE, 0);
        let slot = ((start / SLICE) % RING_SLOTS as u64) as u32;
        let filled = loop {
            match Atomics::load(&self.state, slot).map_err(js_io)? {
                0 => {
                    Atomics::wait(&self.state, slot, 0).map_err(js_io)?;
                }
                n => break n,
            }
        };
        if filled < 0 {
            return Err(io::Error::other(
                "cannot read the file: the browser stopped reading it (was it changed or removed, \
                 or did pt-snap view stop?)",
            ));
        }
        let from = slot * SLICE as u32;
        let mut out = vec![0; (filled as u64).min(end - start) as usize];
        self.bytes
            .subarray(from, from + out.len() as u32)
            .copy_to(&mut out);
        Atomics::store(&self.state, slot, 0).map_err(js_io)?;
        Atomics::notify(&self.state, slot).map_err(js_io)?;
        Ok(out)
    }
}

/// The helper worker (`www/read-worker.js`) reading one file: into a [`Ring`] if given
/// one, through its SHA-256 if asked to. The page starts it ([`FromWorker::StartReader`]:
/// a worker's own workers make its end racy in Chromium) and passes on what it posts
/// through a port of this worker's; it ends with this value.
struct Helper {
    id: u32,
    port: MessagePort,
    /// Settles with the helper's last answer: `{hex}`, `{done}` or `{error}`.
    answer: Promise,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
}

thread_local! {
    static NEXT_HELPER: std::cell::Cell<u32> = const { std::cell::Cell::new(1) };
}

impl Helper {
    /// Has the page start the helper on `file` and waits until it runs (until then a
    /// wait on a slot might never end). `progress`: the file's size, to post how much
    /// is hashed.
    async fn start(
        file: &Source,
        ring: Option<&Ring>,
        hash: bool,
        progress: Option<f64>,
    ) -> Result<Helper, Failure> {
        let cannot = |e: JsValue| {
            let why = e
                .as_string()
                .or_else(|| get(&e, "message").as_string())
                .unwrap_or_else(|| format!("{e:?}"));
            Failure::new(
                ErrorCode::Internal,
                format!("The browser could not start the worker that reads the file ({why})."),
            )
        };
        let channel = MessageChannel::new().map_err(cannot)?;
        let id = NEXT_HELPER.with(|n| n.replace(n.get() + 1));
        let (mut started_to, mut answer_to) = (None, None);
        let started = Promise::new(&mut |resolve, _| started_to = Some(resolve));
        let answer = Promise::new(&mut |resolve, _| answer_to = Some(resolve));
        let (started_to, answer_to) = (started_to.unwrap(), answer_to.unwrap());
        let settle = |to: &js_sys::Function, value: &JsValue| {
            let _ = to.call1(&JsValue::NULL, value);
        };
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
            let data = ev.data();
            if get(&data, "started").is_truthy() {
                settle(&started_to, &JsValue::TRUE);
            } else if get(&data, "error").is_string() {
                // Before it started (it could not start, or the job could not be
                // received), or while it read.
                settle(&started_to, &JsValue::FALSE);
                settle(&answer_to, &data);
            } else if let Some(bytes) = get(&data, "hashed").as_f64() {
                if let Some(total) = progress {
                    post(&FromWorker::Progress(Progress::Hashing {
                        bytes: Some(bytes),
                        total,
                    }));
                }
            } else {
                settle(&answer_to, &data);
            }
        });
        let port = channel.port1();
        port.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        let helper = Helper {
            id,
            port,
            answer,
            _on_message: on_message,
        };
        let job = Object::new();
        let mut fields = vec![
            ("file", file.js().clone()),
            ("hash", hash.into()),
            ("progress", progress.map(|_| HASH_PROGRESS_STEP).into()),
        ];
        if let Some(ring) = ring {
            fields.push(("state", ring.state.clone().into()));
            fields.push(("bytes", ring.bytes.clone().into()));
            fields.push(("slice", (SLICE as u32).into()));
        }
        for (key, value) in fields {
            let _ = Reflect::set(&job, &key.into(), &value);
        }
        let o = Object::new();
        let _ = Reflect::set(
            &o,
            &"msg".into(),
            &encode(&FromWorker::StartReader { reader: id }).into(),
        );
        let _ = Reflect::set(&o, &"job".into(), &job);
        let remote = channel.port2();
        let _ = Reflect::set(&o, &"port".into(), &remote);
        let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
        scope
            .post_message_with_transfer(&o, &js_sys::Array::of1(&remote))
            .map_err(cannot)?;
        match JsFuture::from(started).await {
            Ok(v) if v.is_truthy() => Ok(helper),
            _ => Err(cannot(JsValue::from_str("it failed to load"))),
        }
    }

    /// The file's SHA-256 in hex, once the helper has read all of it.
    async fn sha256(&self) -> Result<String, Failure> {
        let answer = JsFuture::from(self.answer.clone())
            .await
            .unwrap_or(JsValue::NULL);
        match get(&answer, "hex").as_string() {
            Some(hex) => Ok(hex),
            None => Err(backend(format!(
                "cannot read the file to hash it: {}",
                get(&answer, "error")
                    .as_string()
                    .unwrap_or_else(|| "the reading worker failed".into())
            ))),
        }
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        // An answer already queued must not reach the closure dropped with this.
        self.port.set_onmessage(None);
        self.port.close();
        post(&FromWorker::EndReader { reader: self.id });
    }
}

impl Read for FileChunks {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        self.slices.read(out)
    }
}

fn js_io(e: JsValue) -> io::Error {
    io::Error::other(format!("cannot read the file: {e:?}"))
}
