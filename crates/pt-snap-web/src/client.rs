//! The page's side of the engine: the worker holding the open file, and the questions the
//! views ask it. The page holds no SQLite.
//!
//! * One worker per open file. A file being opened has a worker of its own beside the one
//!   on screen; when it has something to show (the replay's preview, or its database) it
//!   takes the screen and the old file's worker is ended, which frees its memory at once (a
//!   wasm heap never shrinks, so a worker is the unit of release). A cancelled or failed
//!   open ends only its own worker. A spare is started ahead so the next file does not wait
//!   for the wasm to compile: when the page loads, and again once nothing is being opened
//!   or indexed ([`warm_up_when_idle`]). An import's peak memory is no time to compile a
//!   worker that may not be needed, nor are the page's first questions, on two cores.
//! * Questions are queued here and sent one at a time, so the page always knows which one
//!   the worker is running. A question asked again from the same place ([`Asker`]) replaces
//!   the one before it: still queued, it is dropped; running, it is interrupted through the
//!   cancel cell, a `SharedArrayBuffer` the worker's SQLite progress handler reads (where
//!   the page is cross-origin isolated; elsewhere the worker finishes it, and its answer is
//!   dropped).
//! * Questions asked before the database is ready wait here until it is.
//! * A question is a `pt_snap_engine::Question` ([`Asker::ask`], [`watch`]): what it is handed
//!   back is that question's answer type, so no view reads another question's answer. The
//!   wire's `Answer` is turned into it here, once.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use js_sys::{Int32Array, Object, Reflect, SharedArrayBuffer};
use leptos::prelude::*;
use pt_snap_engine::{
    answer_of, Answer, ErrorCode, Failure, FromWorker, IndexesLeft, Question, ToWorker,
};
use wasm_bindgen::prelude::*;

use crate::file_worker::FileWorker;
use crate::source::Source;

/// Where the worker's messages go: the page's handlers for progress, preview, ready,
/// failure and downloads (answers are routed here).
pub use crate::file_worker::Listener;

/// Where a question's answer goes.
type Done = Box<dyn FnOnce(Result<Answer, Failure>)>;

struct Asked {
    id: u64,
    asker: u64,
    message: String,
    done: Done,
}

struct Client {
    /// Tells this worker's messages from another's.
    serial: u64,
    worker: FileWorker,
    /// The database is open: questions may be sent.
    ready: bool,
    /// Its indexes are built (or failed to be): the worker is idle between questions.
    indexed: bool,
    queue: VecDeque<Asked>,
    running: Option<Asked>,
    cancel: Option<Int32Array>,
    listener: Listener,
    /// Reopens the file on screen (its import stored it): the questions waiting for that
    /// import's worker move to this one.
    handover: bool,
}

thread_local! {
    /// The file on screen: questions go to its worker.
    static SHOWN: RefCell<Option<Client>> = const { RefCell::new(None) };
    /// A file being opened, not shown yet.
    static INCOMING: RefCell<Option<Client>> = const { RefCell::new(None) };
    /// A worker started ahead.
    static SPARE: RefCell<Option<FileWorker>> = const { RefCell::new(None) };
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
}

fn next_id() -> u64 {
    NEXT_ID.with(|n| {
        let id = n.get();
        n.set(id + 1);
        id
    })
}

/// Starts a spare worker (if there is none) unless a file is being opened, or the one on
/// screen is building its indexes: then its last `Indexes` report starts one.
pub fn warm_up_when_idle() {
    let busy = INCOMING.with(|c| c.borrow().is_some())
        || SHOWN.with(|c| c.borrow().as_ref().is_some_and(|c| !c.indexed));
    if !busy {
        warm_up();
    }
}

/// Starts a worker now so the next file need not wait for its wasm.
fn warm_up() {
    SPARE.with(|s| {
        if s.borrow().is_some() {
            return;
        }
        *s.borrow_mut() = FileWorker::start().ok();
    });
}

/// What to open.
pub enum Job {
    /// A snapshot of any shape (or its cached database); `shown_sha256`: the file on
    /// screen's source, so the same file dropped again is recognised.
    Import {
        file: Source,
        lenient: bool,
        buckets: usize,
        shown_sha256: Option<String>,
        quick_match: bool,
    },
    /// A SnapshotDB.
    Open { file: Source },
    /// A database in the OPFS cache.
    Reopen { sha256: String, cache_hit: bool },
}

/// Opens `job` in a worker of its own, ending any other file being opened and a shown one
/// still being imported (the newer choice wins; a ready file stays until this one can be
/// shown); `listener` gets every message of it except answers.
pub fn open(job: Job, listener: Listener) -> Result<(), Failure> {
    if SHOWN.with(|c| c.borrow().as_ref().is_some_and(|c| !c.ready)) {
        close_shown();
    }
    cancel_open();
    open_worker(job, Vec::new(), listener, false)
}

fn open_worker(
    job: Job,
    warnings: Vec<String>,
    listener: Listener,
    handover: bool,
) -> Result<(), Failure> {
    let serial = next_id();
    let worker = match SPARE.with(|s| s.borrow_mut().take()) {
        Some(spare) => spare,
        None => FileWorker::start()?,
    };
    worker.listen(std::rc::Rc::new(move |message, attachment| {
        received(serial, message, attachment)
    }));
    let cancel = cancel_cell();
    let (message, file) = match job {
        Job::Import {
            file,
            lenient,
            buckets,
            shown_sha256,
            quick_match,
        } => (
            ToWorker::Import {
                lenient,
                buckets,
                shown_sha256,
                quick_match,
            },
            Some(file),
        ),
        Job::Open { file } => (ToWorker::Open, Some(file)),
        Job::Reopen { sha256, cache_hit } => (
            ToWorker::Reopen {
                sha256,
                warnings,
                cache_hit,
            },
            None,
        ),
    };
    let first = envelope(&message);
    if let Some(file) = file {
        let _ = Reflect::set(&first, &"file".into(), &file.js());
    }
    if let Some(cell) = &cancel {
        let _ = Reflect::set(&first, &"cancel".into(), &cell.buffer());
    }
    worker.post(&first);
    INCOMING.with(|c| {
        *c.borrow_mut() = Some(Client {
            serial,
            worker,
            ready: false,
            indexed: false,
            queue: VecDeque::new(),
            running: None,
            cancel,
            listener,
            handover,
        })
    });
    Ok(())
}

/// Ends the worker of a file being opened (Cancel); the file on screen stays.
pub fn cancel_open() {
    if let Some(old) = INCOMING.with(|c| c.borrow_mut().take()) {
        old.worker.end();
    }
}

/// Ends the shown file's worker (an import cancelled after its preview took the screen).
pub fn close_shown() {
    if let Some(old) = SHOWN.with(|c| c.borrow_mut().take()) {
        end(old);
    }
}

/// Ends a worker, telling every question still waiting for it.
fn end(client: Client) {
    client.worker.end();
    let Client { queue, running, .. } = client;
    for asked in running.into_iter().chain(queue) {
        (asked.done)(Err(pt_snap_engine::protocol::replaced()));
    }
}

/// Which worker a message came from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    Shown,
    Incoming,
}

fn slot(serial: u64) -> Option<Slot> {
    let is = |cell: &'static std::thread::LocalKey<RefCell<Option<Client>>>| {
        cell.with(|c| c.borrow().as_ref().is_some_and(|c| c.serial == serial))
    };
    if is(&INCOMING) {
        Some(Slot::Incoming)
    } else if is(&SHOWN) {
        Some(Slot::Shown)
    } else {
        None
    }
}

fn with_client<T>(slot: Slot, f: impl FnOnce(&mut Client) -> T) -> Option<T> {
    let cell = match slot {
        Slot::Shown => &SHOWN,
        Slot::Incoming => &INCOMING,
    };
    cell.with(|c| c.borrow_mut().as_mut().map(f))
}

/// The file being opened takes the screen; the one shown before is ended, and the questions
/// still waiting for it are told so (or, for a reopen of the same file, handed over).
fn promote() {
    let Some(mut incoming) = INCOMING.with(|c| c.borrow_mut().take()) else {
        return;
    };
    let handover = incoming.handover;
    let old = SHOWN.with(|c| c.borrow_mut().take());
    let Some(old) = old else {
        SHOWN.with(|c| *c.borrow_mut() = Some(incoming));
        return;
    };
    old.worker.end();
    let Client { queue, running, .. } = old;
    let waiting: Vec<Asked> = running.into_iter().chain(queue).collect();
    if handover {
        incoming.queue.extend(waiting);
    } else {
        for asked in waiting {
            (asked.done)(Err(pt_snap_engine::protocol::replaced()));
        }
    }
    SHOWN.with(|c| *c.borrow_mut() = Some(incoming));
}

/// A thrown JS value as text: a string as it is, an `Error`'s message, else its debug form.
pub fn js_text(e: &JsValue) -> String {
    e.as_string()
        .or_else(|| {
            e.dyn_ref::<js_sys::Error>()
                .map(|e| String::from(e.message()))
        })
        .unwrap_or_else(|| format!("{e:?}"))
}

/// The cancel cell, where `SharedArrayBuffer` exists (a cross-origin isolated page).
fn cancel_cell() -> Option<Int32Array> {
    let isolated = Reflect::get(&js_sys::global(), &"crossOriginIsolated".into())
        .ok()
        .and_then(|v| v.as_bool())
        == Some(true);
    isolated.then(|| Int32Array::new(&SharedArrayBuffer::new(4)))
}

pub(crate) fn envelope(message: &ToWorker) -> Object {
    let o = Object::new();
    let _ = Reflect::set(
        &o,
        &"msg".into(),
        &pt_snap_engine::protocol::encode(message).into(),
    );
    o
}

/// Hands a message to its worker's listener (outside the client's borrow: it may call back).
fn listen(slot: Slot, message: FromWorker, attachment: JsValue) {
    if let Some(listener) = with_client(slot, |c| c.listener.clone()) {
        listener(message, attachment);
    }
}

fn received(serial: u64, message: FromWorker, attachment: JsValue) {
    let Some(mut slot) = slot(serial) else {
        return; // An ended worker's last words.
    };
    match message {
        FromWorker::Answer { id, answer } => {
            let done = with_client(slot, |c| match c.running.take() {
                Some(asked) if asked.id == id => Some(asked.done),
                other => {
                    c.running = other;
                    None
                }
            })
            .flatten();
            send_next();
            if let Some(done) = done {
                if !matches!(&answer, Err(f) if f.is_cancelled()) {
                    done(answer);
                }
            }
        }
        FromWorker::Preview(preview) => {
            if slot == Slot::Incoming {
                promote();
                slot = Slot::Shown;
            }
            listen(slot, FromWorker::Preview(preview), attachment);
        }
        FromWorker::Opened(overview) => {
            if slot == Slot::Incoming {
                promote();
                slot = Slot::Shown;
            }
            with_client(slot, |c| {
                c.ready = true;
                // The file shown is kept open: its deferred indexes are worth building.
                c.worker.post(&envelope(&ToWorker::BuildIndexes));
            });
            listen(slot, FromWorker::Opened(overview), attachment);
            send_next();
        }
        FromWorker::Indexes(report) => {
            // Answering the `BuildIndexes` the page sent on `Opened`: all built, or failed.
            if !matches!(report, Ok(IndexesLeft { left, .. }) if left > 0) {
                with_client(slot, |c| c.indexed = true);
                warm_up_when_idle();
            }
            listen(slot, FromWorker::Indexes(report), attachment);
        }
        FromWorker::Stored { sha256, warnings } => {
            // Reopened by a fresh worker. The import's own is done: it ends now, so that its
            // heap (which never shrinks) is gone before the reopen's starts. Shown, it keeps
            // its place until the reopen takes over, with the questions waiting for it.
            let Some(listener) = with_client(slot, |c| c.listener.clone()) else {
                return;
            };
            let job = Job::Reopen {
                sha256,
                cache_hit: false,
            };
            match slot {
                Slot::Incoming => cancel_open(), // Done, and replaced by the reopen below.
                Slot::Shown => {
                    with_client(slot, |c| c.worker.end());
                }
            }
            if let Err(f) = open_worker(job, warnings, listener.clone(), slot == Slot::Shown) {
                if slot == Slot::Shown {
                    close_shown();
                }
                listener(FromWorker::Failed(f), JsValue::UNDEFINED);
                warm_up_when_idle();
            }
        }
        FromWorker::AlreadyOpen => {
            listen(slot, FromWorker::AlreadyOpen, attachment);
            cancel_open();
            warm_up_when_idle();
        }
        FromWorker::Failed(f) => {
            // The worker holds nothing now; it is ended so its memory goes with it.
            listen(slot, FromWorker::Failed(f), attachment);
            let cell = if slot == Slot::Incoming {
                &INCOMING
            } else {
                &SHOWN
            };
            if let Some(c) = cell.with(|c| c.borrow_mut().take()) {
                end(c);
            }
            warm_up_when_idle();
        }
        other => listen(slot, other, attachment),
    }
}

fn send_next() {
    SHOWN.with(|c| {
        let mut c = c.borrow_mut();
        let Some(c) = c.as_mut() else { return };
        if !c.ready || c.running.is_some() {
            return;
        }
        let Some(asked) = c.queue.pop_front() else {
            return;
        };
        if let Some(cell) = &c.cancel {
            js_sys::Atomics::store(cell, 0, 0).ok();
        }
        let o = Object::new();
        let _ = Reflect::set(&o, &"msg".into(), &asked.message.as_str().into());
        c.worker.post(&o);
        c.running = Some(asked);
    });
}

/// The questions of one place on the page (a view, a panel): each one asked replaces the
/// one before. Dropped with its component, it cancels what it still has open.
#[derive(Clone, Copy)]
pub struct Asker(u64);

impl Asker {
    /// A new asker, cancelling its question when the current reactive owner is cleaned up.
    pub fn new() -> Self {
        let asker = Asker(next_id());
        on_cleanup(move || asker.cancel());
        asker
    }

    /// Asks `question` within `budget_s` seconds; `done` gets its answer unless a newer
    /// question from this asker, a cancel or another file came first.
    pub fn ask<Q: Question>(
        self,
        question: Q,
        budget_s: f64,
        done: impl FnOnce(Result<Q::Answer, Failure>) + 'static,
    ) {
        self.cancel();
        let id = next_id();
        let message = pt_snap_engine::protocol::encode(&ToWorker::Ask {
            id,
            budget_s,
            query: question.into(),
        });
        let mut orphan: Option<Done> = Some(Box::new(move |answer| done(answer_of::<Q>(answer))));
        let queued = SHOWN.with(|c| {
            let mut c = c.borrow_mut();
            let Some(c) = c.as_mut() else { return false };
            c.queue.push_back(Asked {
                id,
                asker: self.0,
                message,
                done: orphan.take().expect("set above"),
            });
            true
        });
        if queued {
            send_next();
        } else {
            // No file on screen to ask (its worker ended): said at once, never left pending.
            if let Some(done) = orphan.take() {
                done(Err(Failure::new(
                    ErrorCode::NotOpen,
                    "No database is open.",
                )));
            }
        }
    }

    /// Drops this asker's queued question and interrupts its running one.
    pub fn cancel(self) {
        SHOWN.with(|c| {
            let mut c = c.borrow_mut();
            let Some(c) = c.as_mut() else { return };
            c.queue.retain(|a| a.asker != self.0);
            if let Some(running) = &mut c.running {
                if running.asker == self.0 {
                    running.done = Box::new(|_| {});
                    if let Some(cell) = &c.cancel {
                        js_sys::Atomics::store(cell, 0, 1).ok();
                    }
                }
            }
        });
    }
}

/// Interrupts every question (Esc); each view says it was stopped.
pub fn cancel_all() {
    let dropped: Vec<Done> = SHOWN.with(|c| {
        let mut c = c.borrow_mut();
        let Some(c) = c.as_mut() else {
            return Vec::new();
        };
        let mut dropped: Vec<_> = c.queue.drain(..).map(|a| a.done).collect();
        if let Some(running) = &mut c.running {
            dropped.push(std::mem::replace(&mut running.done, Box::new(|_| {})));
            if let Some(cell) = &c.cancel {
                js_sys::Atomics::store(cell, 0, 1).ok();
            }
        }
        dropped
    });
    for done in dropped {
        done(Err(pt_snap_engine::protocol::stopped()));
    }
}

/// Asks the worker for the database file; the answer reaches the listener as
/// [`FromWorker::Download`] with the `Blob` attached.
pub fn request_download() {
    SHOWN.with(|c| {
        if let Some(c) = c.borrow().as_ref() {
            if c.ready {
                c.worker.post(&envelope(&ToWorker::Download));
            }
        }
    });
}

/// A question's state as a view shows it: `None` while it is being answered.
pub type Reply<T> = Option<Result<T, Failure>>;

/// Asks `question()` again whenever what it reads changes (`None` asks nothing) and keeps
/// the latest answer.
pub fn watch<Q: Question>(
    budget_s: Signal<f64>,
    question: impl Fn() -> Option<Q> + 'static,
) -> RwSignal<Reply<Q::Answer>>
where
    Q::Answer: Send + Sync + Clone,
{
    let out = RwSignal::new(None);
    let asker = Asker::new();
    Effect::new(move |_| match question() {
        None => asker.cancel(),
        Some(q) => {
            out.set(None);
            asker.ask(q, budget_s.get_untracked(), move |answer| {
                out.set(Some(answer));
            });
        }
    });
    out
}
