//! A worker that holds one file (`pt-snap-worker`), as the page owns it: its messages
//! decoded and handed to a listener, what it is sent kept until it says `Ready`, and the
//! read helpers it asks for (`www/read-worker.js`, [`FromWorker::StartReader`]) started
//! here and ended with it.
//!
//! Why the page starts the read helpers, not the worker that reads through them: Chromium
//! tears a worker down only once each worker it started has told it that it ended, and a
//! worker ended within milliseconds of its own worker's start or end sometimes never hears
//! it. Its thread and its heap then stay until the tab closes, and it stays listed as a
//! worker. A failed import does exactly that (it ends its helper as it fails, and the page
//! ends it as soon as it says so): about one failed drop in eight left a worker behind
//! (issue 34). The page's own workers have no such parent to wait for; what a helper posts
//! is passed on through a `MessagePort` the worker gave, so the worker's side of it is
//! unchanged.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Object, Reflect};
use pt_snap_engine::{ErrorCode, Failure, FromWorker};
use wasm_bindgen::prelude::*;
use web_sys::{MessageEvent, MessagePort, Worker};

const SCRIPT: &str = "./pt-snap-worker_loader.js";
const READER_SCRIPT: &str = "./read-worker.js";

/// What the worker's messages go to, with what was attached to them (a `Blob`).
pub type Listener = Rc<dyn Fn(FromWorker, JsValue)>;

/// A worker holding one file. Dropping it ends the worker and its read helpers.
pub struct FileWorker {
    shared: Rc<Shared>,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_error: Closure<dyn FnMut(web_sys::ErrorEvent)>,
}

struct Shared {
    worker: Worker,
    /// The messages for the worker until it has said `Ready` (earlier ones would be lost);
    /// `None` after.
    outbox: RefCell<Option<Vec<Object>>>,
    /// `None` until [`FileWorker::listen`]; what the worker says before is kept in `unheard`
    /// (a spare that dies, or an early worker's held events, must still be heard).
    listener: RefCell<Option<Listener>>,
    unheard: RefCell<Vec<(FromWorker, JsValue)>>,
    readers: RefCell<Vec<Reader>>,
    /// The read helper of a job that reads a file, started as the job is posted so that
    /// it loads beside the worker's own lookups; `None` once the job took it, or ended
    /// without (a database reopened from the cache reads no file).
    spare_reader: RefCell<Option<SpareReader>>,
}

/// A read helper not given a job yet. An error before it is taken (its script did not
/// load) would otherwise go unheard: it is noted, and such a spare is not used. Dropped
/// untaken, it ends.
struct SpareReader {
    /// `None` once taken.
    worker: Option<Worker>,
    failed: Rc<std::cell::Cell<bool>>,
    _on_error: Closure<dyn FnMut(web_sys::Event)>,
}

impl SpareReader {
    fn start() -> Option<SpareReader> {
        let worker = Worker::new(READER_SCRIPT).ok()?;
        let failed = Rc::new(std::cell::Cell::new(false));
        let noted = Rc::clone(&failed);
        // A script that did not load fires a plain `error` event, not an `ErrorEvent`.
        let on_error = Closure::<dyn FnMut(web_sys::Event)>::new(move |ev: web_sys::Event| {
            ev.prevent_default();
            noted.set(true);
        });
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        Some(SpareReader {
            worker: Some(worker),
            failed,
            _on_error: on_error,
        })
    }

    /// The worker, unless it failed.
    fn take(mut self) -> Option<Worker> {
        let worker = self.worker.take()?;
        worker.set_onerror(None);
        if self.failed.get() {
            worker.terminate();
            return None;
        }
        Some(worker)
    }
}

impl Drop for SpareReader {
    fn drop(&mut self) {
        if let Some(worker) = self.worker.take() {
            worker.set_onerror(None);
            worker.terminate();
        }
    }
}

/// A read helper started for the worker, passing what it posts on to the worker's port.
struct Reader {
    id: u32,
    worker: Worker,
    port: MessagePort,
    _relay: Closure<dyn FnMut(MessageEvent)>,
    _on_error: Closure<dyn FnMut(web_sys::ErrorEvent)>,
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.worker.set_onmessage(None);
        self.worker.set_onerror(None);
        self.worker.terminate();
        self.port.close();
    }
}

impl FileWorker {
    /// Starts a worker (the one `www/served.js` started, if there is one); what it says is
    /// kept until [`FileWorker::listen`].
    pub fn start() -> Result<FileWorker, Failure> {
        let (worker, held) = match early_worker() {
            Some(early) => early,
            None => (
                Worker::new(SCRIPT).map_err(|e| {
                    Failure::new(
                        ErrorCode::Internal,
                        format!("The worker could not start: {e:?}"),
                    )
                })?,
                js_sys::Array::new(),
            ),
        };
        let shared = Rc::new(Shared {
            worker,
            outbox: RefCell::new(Some(Vec::new())),
            listener: RefCell::new(None),
            unheard: RefCell::new(Vec::new()),
            readers: RefCell::new(Vec::new()),
            spare_reader: RefCell::new(None),
        });
        // Weak: the worker's handlers must not keep what owns them alive.
        let weak = Rc::downgrade(&shared);
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
            if let Some(shared) = weak.upgrade() {
                shared.received(&ev.data());
            }
        });
        let weak = Rc::downgrade(&shared);
        let on_error =
            Closure::<dyn FnMut(web_sys::ErrorEvent)>::new(move |ev: web_sys::ErrorEvent| {
                if let Some(shared) = weak.upgrade() {
                    shared.tell(FromWorker::Failed(died(&ev)), JsValue::UNDEFINED);
                }
            });
        shared
            .worker
            .set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        shared
            .worker
            .set_onerror(Some(on_error.as_ref().unchecked_ref()));
        // What an early worker said before it was taken, in order, before anything newer.
        for event in held.iter() {
            match event.dyn_into::<web_sys::ErrorEvent>() {
                Ok(error) => shared.tell(FromWorker::Failed(died(&error)), JsValue::UNDEFINED),
                // A script that did not load fires a plain `error` event.
                Err(event) if Reflect::get(&event, &"type".into()).ok() == Some("error".into()) => {
                    shared.tell(
                        FromWorker::Failed(pt_snap_import::failure::backend(
                            "the worker could not load its script",
                        )),
                        JsValue::UNDEFINED,
                    )
                }
                Err(event) => {
                    let data = Reflect::get(&event, &"data".into()).unwrap_or(JsValue::UNDEFINED);
                    shared.received(&data);
                }
            }
        }
        Ok(FileWorker {
            shared,
            _on_message: on_message,
            _on_error: on_error,
        })
    }

    /// Hands every message (but `Ready` and the read helpers') to `listener`: first those
    /// said before, then each as it comes. Those said before follow in a microtask, once the
    /// caller has made the worker its own, and still ahead of any message to come.
    pub fn listen(&self, listener: Listener) {
        *self.shared.listener.borrow_mut() = Some(Rc::clone(&listener));
        let unheard = std::mem::take(&mut *self.shared.unheard.borrow_mut());
        if !unheard.is_empty() {
            wasm_bindgen_futures::spawn_local(async move {
                for (message, attachment) in unheard {
                    listener(message, attachment);
                }
            });
        }
    }

    /// Posts `message`, now or once the worker has said `Ready`. A message with a file
    /// attached is a job that reads it: its read helper starts now.
    pub fn post(&self, message: &Object) {
        if Reflect::has(message, &"file".into()).unwrap_or(false) {
            let mut spare = self.shared.spare_reader.borrow_mut();
            if spare.is_none() {
                *spare = SpareReader::start();
            }
        }
        match self.shared.outbox.borrow_mut().as_mut() {
            Some(waiting) => waiting.push(message.clone()),
            None => post(&self.shared.worker, message),
        }
    }

    /// Ends the read helpers, then the worker, which says nothing more (a message it
    /// already queued finds no handler). Dropping it does this too.
    pub fn end(&self) {
        // Dropped outside the borrow: ending a worker may run its handlers.
        let readers = std::mem::take(&mut *self.shared.readers.borrow_mut());
        drop(readers);
        drop(self.shared.spare_reader.borrow_mut().take());
        self.shared.worker.set_onmessage(None);
        self.shared.worker.set_onerror(None);
        self.shared.worker.terminate();
    }
}

impl Drop for FileWorker {
    fn drop(&mut self) {
        self.end();
    }
}

impl Shared {
    fn received(&self, data: &JsValue) {
        let text = Reflect::get(data, &"msg".into())
            .ok()
            .and_then(|m| m.as_string())
            .unwrap_or_default();
        let message = match pt_snap_engine::protocol::decode::<FromWorker>(&text) {
            Ok(message) => message,
            Err(f) => return self.tell(FromWorker::Failed(f), JsValue::UNDEFINED),
        };
        if !matches!(
            message,
            FromWorker::Ready | FromWorker::Progress(_) | FromWorker::StartReader { .. }
        ) {
            // The job is past reading its file (or never read it).
            drop(self.spare_reader.borrow_mut().take());
        }
        match message {
            FromWorker::Ready => {
                for o in self.outbox.borrow_mut().take().unwrap_or_default() {
                    post(&self.worker, &o);
                }
            }
            FromWorker::StartReader { reader } => self.start_reader(reader, data),
            FromWorker::EndReader { reader } => {
                // Dropped outside the borrow: ending a worker may run its handlers.
                let ended: Vec<Reader> = {
                    let mut readers = self.readers.borrow_mut();
                    let (ended, kept) = readers.drain(..).partition(|r| r.id == reader);
                    *readers = kept;
                    ended
                };
                drop(ended);
            }
            other => {
                let attachment = Reflect::get(data, &"blob".into()).unwrap_or(JsValue::UNDEFINED);
                self.tell(other, attachment);
            }
        }
    }

    /// Hands a message to the listener, outside every borrow: it may replace the listener
    /// or drop this worker.
    fn tell(&self, message: FromWorker, attachment: JsValue) {
        let listener = self.listener.borrow().clone();
        match listener {
            Some(listener) => listener(message, attachment),
            None => self.unheard.borrow_mut().push((message, attachment)),
        }
    }

    /// Starts read helper `id` on the `job` attached to `data`, its messages passed on to
    /// the attached `port`; one that cannot start or dies says so there, as `{error}`
    /// (what `www/read-worker.js` answers when it cannot read).
    fn start_reader(&self, id: u32, data: &JsValue) {
        let job = Reflect::get(data, &"job".into()).unwrap_or(JsValue::UNDEFINED);
        let Ok(port) = Reflect::get(data, &"port".into()).and_then(|p| p.dyn_into::<MessagePort>())
        else {
            web_sys::console::error_1(&"pt-snap: a read helper asked for without a port".into());
            return;
        };
        let failed = |port: &MessagePort, why: String| {
            let o = Object::new();
            let _ = Reflect::set(&o, &"error".into(), &why.into());
            let _ = port.post_message(&o);
        };
        let spare = self
            .spare_reader
            .borrow_mut()
            .take()
            .and_then(SpareReader::take);
        let worker = match spare.map_or_else(|| Worker::new(READER_SCRIPT), Ok) {
            Ok(worker) => worker,
            Err(e) => return failed(&port, crate::client::js_text(&e)),
        };
        let to = port.clone();
        let relay = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
            let _ = to.post_message(&ev.data());
        });
        let to = port.clone();
        let on_error =
            Closure::<dyn FnMut(web_sys::ErrorEvent)>::new(move |ev: web_sys::ErrorEvent| {
                ev.prevent_default();
                failed(
                    &to,
                    format!("the reading worker stopped ({})", ev.message()),
                );
            });
        worker.set_onmessage(Some(relay.as_ref().unchecked_ref()));
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        let reader = Reader {
            id,
            worker,
            port,
            _relay: relay,
            _on_error: on_error,
        };
        match reader.worker.post_message(job.unchecked_ref()) {
            Ok(()) => self.readers.borrow_mut().push(reader),
            // Ended with `reader`.
            Err(e) => failed(&reader.port, crate::client::js_text(&e)),
        }
    }
}

fn post(worker: &Worker, o: &Object) {
    if let Err(e) = worker.post_message(o) {
        web_sys::console::error_1(&e);
    }
}

/// The worker `www/served.js` started as a `pt-snap view` page began to load (its wasm
/// compiles while the page's does), with the events it got until now; taken once.
fn early_worker() -> Option<(Worker, js_sys::Array)> {
    let window = web_sys::window()?;
    let early = Reflect::get(&window, &"ptSnapEarlyWorker".into()).ok()?;
    let worker: Worker = Reflect::get(&early, &"worker".into())
        .ok()?
        .dyn_into()
        .ok()?;
    let held: js_sys::Array = Reflect::get(&early, &"held".into()).ok()?.dyn_into().ok()?;
    let _ = Reflect::delete_property(&window, &"ptSnapEarlyWorker".into());
    Some((worker, held))
}

/// What a worker that died says: it posts nothing (its wasm trapped, e.g. out of memory on a
/// huge file), so its error event is turned into the failure shown.
fn died(ev: &web_sys::ErrorEvent) -> Failure {
    ev.prevent_default();
    pt_snap_import::failure::backend(format!(
        "the worker stopped ({}); the file may be too large for this browser tab",
        ev.message()
    ))
}
