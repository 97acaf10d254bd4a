//! One file, one question, one worker: what the Ranks and Compare views ask of a file that
//! is not the one on screen. A worker imports the file (into the OPFS cache, like any
//! dropped file) or opens it, answers one question and is ended, so the page keeps the
//! answer and none of the file's memory.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use js_sys::{Object, Reflect};
use pt_snap_engine::{answer_of, Answer, Failure, FromWorker, Progress, Query, Question, ToWorker};

use crate::client::envelope;
use crate::file_worker::FileWorker;
use crate::source::Source;

type Stage = Rc<dyn Fn(String)>;
type Done = Box<dyn FnOnce(Result<Answer, Failure>)>;

/// A question being answered. Dropping it ends the worker; its answer is then never told.
pub struct Asking {
    /// The only strong reference: the worker's handlers hold weak ones.
    _shared: Rc<RefCell<Shared>>,
}

struct Shared {
    query: Query,
    budget_s: f64,
    on_stage: Stage,
    on_done: Option<Done>,
    running: Option<FileWorker>,
}

/// Asks `question` of `file`: imported strictly (as `pt-snap diff` imports it)
/// when it is a snapshot, opened when its name says `.db`. `on_stage` hears what the worker
/// is doing; `on_done` the answer, once, never from inside a worker's handler (so it may
/// drop this [`Asking`] or start another).
pub fn ask<Q: Question>(
    file: &Source,
    question: Q,
    budget_s: f64,
    on_stage: impl Fn(String) + 'static,
    on_done: impl FnOnce(Result<Q::Answer, Failure>) + 'static,
) -> Asking {
    let first = if file.name().to_ascii_lowercase().ends_with(".db") {
        ToWorker::Open
    } else {
        ToWorker::Import {
            lenient: false,
            buckets: 0,
            shown_sha256: None,
            // One answer, then the worker ends: no time to check a quick match after.
            quick_match: false,
        }
    };
    let shared = Rc::new(RefCell::new(Shared {
        query: question.into(),
        budget_s,
        on_stage: Rc::new(on_stage),
        on_done: Some(Box::new(move |answer| on_done(answer_of::<Q>(answer)))),
        running: None,
    }));
    let message = envelope(&first);
    let _ = Reflect::set(&message, &"file".into(), &file.js());
    start(&shared, message);
    Asking { _shared: shared }
}

/// A worker of its own, `first` posted to it once it is ready and every other message
/// handed to `on_message`; a worker that dies is a [`FromWorker::Failed`]. Dropping the
/// [`FileWorker`] ends it.
pub fn spawn(
    first: Object,
    on_message: impl FnMut(FromWorker) + 'static,
) -> Result<FileWorker, Failure> {
    let worker = FileWorker::start()?;
    let on_message = RefCell::new(on_message);
    worker.listen(Rc::new(move |message, _| {
        (on_message.borrow_mut())(message)
    }));
    worker.post(&first);
    Ok(worker)
}

/// A worker for `shared` with `first` as its first message, replacing any before it.
fn start(shared: &Rc<RefCell<Shared>>, first: Object) {
    let weak = Rc::downgrade(shared);
    let running = spawn(first, move |message| {
        let Some(shared) = weak.upgrade() else { return };
        let stage = |s: String| {
            let on_stage = Rc::clone(&shared.borrow().on_stage);
            on_stage(s);
        };
        match message {
            FromWorker::Progress(p) => stage(describe(&p)),
            // The import's database is in the cache: a fresh worker reopens it and answers,
            // so the memory the import took goes with this one.
            FromWorker::Stored { sha256, warnings } => {
                let reopen = envelope(&ToWorker::Reopen {
                    sha256,
                    warnings,
                    cache_hit: false,
                });
                let weak = Rc::downgrade(&shared);
                // Not from inside this worker's own handler: it is being replaced.
                wasm_bindgen_futures::spawn_local(async move {
                    if let Some(shared) = weak.upgrade() {
                        start(&shared, reopen);
                    }
                });
            }
            FromWorker::Opened(_) => {
                stage("answering".into());
                let (query, budget_s) = {
                    let s = shared.borrow();
                    (s.query.clone(), s.budget_s)
                };
                let ask = ToWorker::Ask {
                    id: 1,
                    budget_s,
                    query,
                };
                if let Some(r) = &shared.borrow().running {
                    r.post(&envelope(&ask));
                }
            }
            FromWorker::Answer { answer, .. } => finish_later(Rc::downgrade(&shared), answer),
            FromWorker::Failed(f) => finish_later(Rc::downgrade(&shared), Err(f)),
            _ => {}
        }
    });
    match running {
        Ok(running) => {
            let old = shared.borrow_mut().running.replace(running);
            drop(old);
        }
        Err(failure) => finish_later(Rc::downgrade(shared), Err(failure)),
    }
}

/// Ends the worker and tells the answer, once the handler that got it has returned.
fn finish_later(shared: Weak<RefCell<Shared>>, answer: Result<Answer, Failure>) {
    wasm_bindgen_futures::spawn_local(async move {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let (running, done) = {
            let mut s = shared.borrow_mut();
            (s.running.take(), s.on_done.take())
        };
        drop(running);
        if let Some(done) = done {
            done(answer);
        }
    });
}

/// A progress message as a few words.
fn describe(p: &Progress) -> String {
    match p {
        Progress::Decoding { bytes, total, .. } if *total > 0.0 => {
            format!("decoding {:.0}%", 100.0 * bytes / total)
        }
        Progress::Decoding { .. } => "decoding".into(),
        Progress::Hashing { .. } => "looking in the cache".into(),
        Progress::Replaying { device, .. } => format!("replaying device {device}"),
        Progress::Writing { device } => format!("writing device {device}"),
        Progress::Indexing => "finishing".into(),
    }
}
