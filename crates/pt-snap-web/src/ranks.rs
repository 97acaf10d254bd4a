//! Many snapshots at once, one per rank of a job: the Ranks view.
//!
//! Each file gets a worker of its own, one file at a time, which imports it (into the OPFS
//! cache, like any dropped file) or opens it, and answers one question: the file's rows of
//! `pt-snap ranks` (`Query::RankSummary`, the CLI's `summarize`). Then the worker is ended,
//! so the page keeps a few numbers per file and the memory of at most one file at a time,
//! however many there are. Clicking a rank opens that file in every other view (from the
//! cache, when the browser has one).

use std::cell::{Cell, RefCell};

use js_sys::{Object, Reflect};
use leptos::prelude::*;
use pt_snap_engine::{Answer, EngineError, FromWorker, Progress, Query, ToWorker};
use pt_snap_report::ranks::{site, RanksReport};
use pt_snap_report::Metric;
use wasm_bindgen::prelude::*;
use web_sys::{File, MessageEvent, Worker};

use crate::app::AppState;
use crate::client::WORKER_SCRIPT;
use crate::fmt;
use crate::job::{order, Job, Member};
use crate::loader;

thread_local! {
    /// The job's files, in the job's order (the page's signal holds only their names).
    static FILES: RefCell<Vec<File>> = const { RefCell::new(Vec::new()) };
    /// The worker summarising one file, with its handlers.
    static RUNNING: RefCell<Option<Running>> = const { RefCell::new(None) };
    /// Bumped by every job started or stopped: a late message of an older one is dropped.
    static SERIAL: Cell<u64> = const { Cell::new(0) };
}

struct Running {
    worker: Worker,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_error: Closure<dyn FnMut(web_sys::ErrorEvent)>,
}

impl Running {
    /// Ends the worker; a message it already queued finds no handler (the closures go
    /// with this value).
    fn end(self) {
        self.worker.set_onmessage(None);
        self.worker.set_onerror(None);
        self.worker.terminate();
    }
}

/// Starts a job over `files` (a drop or pick of several, or a folder), replacing any other.
pub fn start(state: AppState, files: Vec<File>) {
    stop();
    let names: Vec<String> = files.iter().map(File::name).collect();
    let order = order(&names);
    let files: Vec<File> = order.iter().map(|&i| files[i].clone()).collect();
    let names: Vec<String> = order.iter().map(|&i| names[i].clone()).collect();
    FILES.with(|f| *f.borrow_mut() = files);
    state.job.set(Some(Job::new(names, Metric::Active)));
    state.show_ranks.set(true);
    next(state, SERIAL.with(Cell::get));
}

/// Ends the file being summarised; the rows already there stay.
pub fn stop() {
    SERIAL.with(|s| s.set(s.get() + 1));
    if let Some(r) = RUNNING.with(|r| r.borrow_mut().take()) {
        r.end();
    }
}

fn set_member(state: AppState, i: usize, member: Member) {
    state.job.update(|j| {
        if let Some(m) = j.as_mut().and_then(|j| j.members.get_mut(i)) {
            *m = member;
        }
    });
}

/// Summarises the next waiting file, if any.
fn next(state: AppState, serial: u64) {
    if let Some(r) = RUNNING.with(|r| r.borrow_mut().take()) {
        r.end();
    }
    let waiting = state.job.with_untracked(|j| {
        j.as_ref()
            .and_then(|j| j.members.iter().position(|m| *m == Member::Waiting))
    });
    let Some(i) = waiting else { return };
    let Some(file) = FILES.with(|f| f.borrow().get(i).cloned()) else {
        return;
    };
    let name = file.name();
    let first = if name.to_ascii_lowercase().ends_with(".db") {
        ToWorker::Open
    } else {
        // A strict import, as `ranks` makes them; shared with a plain drop through the cache.
        ToWorker::Import {
            lenient: false,
            buckets: 0,
            shown_sha256: None,
        }
    };
    set_member(state, i, Member::Working("starting".into()));
    if let Err(f) = run(state, serial, i, envelope(&first, Some(&file))) {
        set_member(state, i, Member::Failed(f));
        next(state, serial);
    }
}

fn envelope(message: &ToWorker, file: Option<&File>) -> Object {
    let o = Object::new();
    let _ = Reflect::set(
        &o,
        &"msg".into(),
        &pt_snap_engine::protocol::encode(message).into(),
    );
    if let Some(file) = file {
        let _ = Reflect::set(&o, &"file".into(), file);
    }
    o
}

/// Starts a worker on file `i` with `first` as its first message, and follows it until the
/// file's rows are in (or it failed).
fn run(state: AppState, serial: u64, i: usize, first: Object) -> Result<(), EngineError> {
    let worker = Worker::new(WORKER_SCRIPT).map_err(|e| {
        EngineError::new(
            "INTERNAL_ERROR",
            format!("The worker could not start: {e:?}"),
        )
    })?;
    let posted = worker.clone();
    let outbox = RefCell::new(Some(first));
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        if SERIAL.with(Cell::get) != serial {
            return;
        }
        let text = Reflect::get(&ev.data(), &"msg".into())
            .ok()
            .and_then(|m| m.as_string())
            .unwrap_or_default();
        let message = pt_snap_engine::protocol::decode::<FromWorker>(&text)
            .unwrap_or_else(FromWorker::Failed);
        let metric = state
            .job
            .with_untracked(|j| j.as_ref().map_or(Metric::Active, |j| j.metric));
        match message {
            FromWorker::Ready => {
                if let Some(o) = outbox.borrow_mut().take() {
                    let _ = posted.post_message(&o);
                }
            }
            FromWorker::Progress(p) => set_member(state, i, Member::Working(stage(&p))),
            // The import's database is in the cache: a fresh worker reopens it and answers.
            FromWorker::Stored { sha256, warnings } => {
                let reopen = ToWorker::Reopen {
                    sha256,
                    warnings,
                    cache_hit: false,
                };
                let next_worker = envelope(&reopen, None);
                // Not from inside this worker's own handler: it is being replaced.
                wasm_bindgen_futures::spawn_local(async move {
                    if SERIAL.with(Cell::get) != serial {
                        return;
                    }
                    if let Err(f) = run(state, serial, i, next_worker) {
                        set_member(state, i, Member::Failed(f));
                        next(state, serial);
                    }
                });
            }
            FromWorker::Opened(_) => {
                set_member(state, i, Member::Working("summarising".into()));
                let ask = ToWorker::Ask {
                    id: 1,
                    budget_s: state.budget_s.get_untracked(),
                    query: Query::RankSummary {
                        metric: metric_of(metric),
                    },
                };
                let _ = posted.post_message(&envelope(&ask, None));
            }
            FromWorker::Answer { answer, .. } => {
                let member = match answer {
                    Ok(Answer::RankSummary(rows)) => Member::Done(rows),
                    Ok(_) => Member::Failed(EngineError::new(
                        "INTERNAL_ERROR",
                        "The worker answered another question.",
                    )),
                    Err(f) => Member::Failed(f),
                };
                set_member(state, i, member);
                next_later(state, serial);
            }
            FromWorker::Failed(f) => {
                set_member(state, i, Member::Failed(f));
                next_later(state, serial);
            }
            _ => {}
        }
    });
    worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    let on_error =
        Closure::<dyn FnMut(web_sys::ErrorEvent)>::new(move |ev: web_sys::ErrorEvent| {
            ev.prevent_default();
            if SERIAL.with(Cell::get) != serial {
                return;
            }
            let failure = EngineError::from(pt_snap_import::ImportFailure::backend(format!(
                "the worker stopped ({}); the file may be too large for this browser tab",
                ev.message()
            )));
            set_member(state, i, Member::Failed(failure));
            next_later(state, serial);
        });
    worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    if let Some(old) = RUNNING.with(|r| {
        r.borrow_mut().replace(Running {
            worker,
            _on_message: on_message,
            _on_error: on_error,
        })
    }) {
        old.end();
    }
    Ok(())
}

/// The next file, once the handler that asks for it has returned (its worker ends then).
fn next_later(state: AppState, serial: u64) {
    wasm_bindgen_futures::spawn_local(async move {
        if SERIAL.with(Cell::get) == serial {
            next(state, serial);
        }
    });
}

fn metric_of(m: Metric) -> pt_snap_engine::Metric {
    match m {
        Metric::Active => pt_snap_engine::Metric::Active,
        Metric::Allocated => pt_snap_engine::Metric::Allocated,
        Metric::Reserved => pt_snap_engine::Metric::Reserved,
    }
}

fn stage(p: &Progress) -> String {
    match p {
        Progress::Decoding { bytes, total, .. } if *total > 0.0 => {
            format!("decoding {:.0}%", 100.0 * bytes / total)
        }
        Progress::Decoding { .. } => "decoding".into(),
        Progress::Hashing { .. } => "looking in the cache".into(),
        Progress::Replaying { device, .. } => format!("replaying device {device}"),
        Progress::Writing { device } => format!("writing device {device}"),
        Progress::Indexing => "indexing".into(),
    }
}

/// Opens file `i` of the job in every other view.
fn open(state: AppState, i: usize) {
    if let Some(file) = FILES.with(|f| f.borrow().get(i).cloned()) {
        state.show_ranks.set(false);
        loader::load(state, file);
    }
}

/// Sort keys of the table.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Column {
    Rank,
    Allocated,
    Active,
    Reserved,
    Gap,
    Oom,
}

#[component]
pub fn RanksView() -> impl IntoView {
    let state = expect_context::<AppState>();
    let sort = RwSignal::new((Column::Rank, false));
    move || {
        sort.track();
        let Some(job) = state.job.get() else {
            return ().into_any();
        };
        let report = job.report();
        let total = job.names.len();
        let done = job.finished();
        let working = job
            .members
            .iter()
            .zip(&job.names)
            .find_map(|(m, n)| match m {
                Member::Working(s) => Some(format!("{n}: {s}")),
                _ => None,
            });
        let failures: Vec<(String, EngineError)> = job
            .failures()
            .into_iter()
            .map(|(n, f)| (n.to_owned(), f.clone()))
            .collect();
        view! {
            <section class="panel ranks" data-testid="ranks-view">
                <div class="ranks-head">
                    <h2>{format!("Ranks · {total} files")}</h2>
                    <span class="muted" data-testid="ranks-progress" data-done=done.to_string() data-total=total.to_string()>
                        {match &working {
                            Some(w) => format!("{done} of {total} summarised · {w}"),
                            None if done == total => format!("all {total} summarised"),
                            None => format!("{done} of {total} summarised · stopped"),
                        }}
                    </span>
                    {working.is_some().then(|| view! {
                        <button class="button small" data-testid="ranks-stop" on:click=move |_| {
                            stop();
                            state.job.update(|j| if let Some(j) = j {
                                for m in &mut j.members {
                                    if matches!(m, Member::Working(_)) {
                                        *m = Member::Waiting;
                                    }
                                }
                            });
                        }>"Stop"</button>
                    })}
                </div>
                <p class="muted small">
                    {rank_note(&report)}
                    " Each file's numbers are what " <code>"pt-snap ranks"</code>
                    " gives for it; an outlier's active peak is more than 3 scaled MADs (1.4826·MAD) and at least 10% from the median of the files summarised. Click a rank to open it."
                </p>
                <RankBars report=report.clone()/>
                <RankTable report=report sort=sort/>
                {(!failures.is_empty()).then(|| view! {
                    <div class="ranks-failed" data-testid="ranks-failed">
                        <h3>"Files that could not be summarised"</h3>
                        <ul>{failures.into_iter().map(|(n, f)| view! {
                            <li><strong>{n}</strong>{format!(" — {}: {}", f.code, f.message)}</li>
                        }).collect_view()}</ul>
                    </div>
                })}
            </section>
        }
        .into_any()
    }
}

fn rank_note(report: &RanksReport) -> String {
    match &report.rank_note {
        None => "Ranks from the file names.".to_owned(),
        Some(why) => format!("Ranks are positions in name order ({why})."),
    }
}

/// One group of three bars per row (allocated, active, reserved), the median of the active
/// peak as a line, outliers in the warning colour.
#[component]
fn RankBars(report: RanksReport) -> impl IntoView {
    let state = expect_context::<AppState>();
    const W: f64 = 1000.0;
    const H: f64 = 180.0;
    let rows: Vec<_> = report
        .rows
        .iter()
        .filter_map(|r| Some((r, r.summary.as_ref()?)))
        .collect();
    let max = rows
        .iter()
        .filter_map(|(_, s)| s.peaks.reserved.bytes.max(s.peaks.active.bytes))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    // Headroom above the tallest bar.
    let top = max * 1.08;
    let n = rows.len().max(1) as f64;
    let slot = W / n;
    let bar = (slot * 0.8 / 3.0).min(24.0);
    let y = move |v: i64| H - H * v as f64 / top;
    let median = report.medians.peak_active;
    view! {
        <svg class="rank-bars" data-testid="ranks-bars" viewBox=format!("0 0 {W} {}", H + 18.0) preserveAspectRatio="none" role="img"
            aria-label="Peak allocated, active and reserved per rank">
            {rows.iter().enumerate().map(|(k, (row, s))| {
                let x0 = slot * k as f64 + (slot - 3.0 * bar) / 2.0;
                let outlier = row.verdict.as_ref().is_some_and(|v| v.outlier);
                let file = row.file;
                let rank = report.files[file].rank;
                let bars = [("allocated", s.peaks.allocated.bytes), ("active", s.peaks.active.bytes), ("reserved", s.peaks.reserved.bytes)];
                view! {
                    <g class="rank" class:outlier=outlier on:click=move |_| open(state, file_index(state, file))>
                        <title>{format!("rank {rank} · device {} · active {} · reserved {}", s.device,
                            s.peaks.active.bytes.map_or("—".into(), fmt::bytes), s.peaks.reserved.bytes.map_or("—".into(), fmt::bytes))}</title>
                        {bars.into_iter().enumerate().map(|(j, (name, v))| v.map(|v| view! {
                            <rect class=format!("rank-bar {name}") x=x0 + bar * j as f64 y=y(v) width=bar * 0.9 height=H - y(v)></rect>
                        })).collect_view()}
                        <text x=x0 + 1.5 * bar y=H + 14.0 text-anchor="middle">{rank.to_string()}</text>
                    </g>
                }
            }).collect_view()}
            {median.map(|m| view! {
                <line class="median" x1=0 x2=W y1=y(m as i64) y2=y(m as i64)></line>
            })}
        </svg>
        <div class="legend small rank-legend">
            <span><span class="key allocated"></span>"allocated"</span>
            <span><span class="key active"></span>"active (an outlier's in red)"</span>
            <span><span class="key reserved"></span>"reserved"</span>
            <span><span class="key median"></span>{format!("median active peak {}", median.map_or("—".into(), |m| fmt::bytes(m as i64)))}</span>
            <span class="muted">{format!("scale: 0 to {}", fmt::bytes(max as i64))}</span>
        </div>
    }
}

/// The job's index of the file `RanksReport::files[file]` (the report keeps finished files
/// only, in the job's order).
fn file_index(state: AppState, file: usize) -> usize {
    state.job.with_untracked(|j| {
        j.as_ref()
            .and_then(|j| {
                j.members
                    .iter()
                    .enumerate()
                    .filter(|(_, m)| matches!(m, Member::Done(_)))
                    .nth(file)
                    .map(|(i, _)| i)
            })
            .unwrap_or(0)
    })
}

#[component]
fn RankTable(report: RanksReport, sort: RwSignal<(Column, bool)>) -> impl IntoView {
    let state = expect_context::<AppState>();
    let (column, descending) = sort.get();
    let key = |r: &pt_snap_report::ranks::RankRow| -> (i64, u64) {
        let s = r.summary.as_ref();
        let rank = report.files[r.file].rank;
        let v = match column {
            Column::Rank => rank as i64,
            Column::Allocated => s.and_then(|s| s.peaks.allocated.bytes).unwrap_or(-1),
            Column::Active => s.and_then(|s| s.peaks.active.bytes).unwrap_or(-1),
            Column::Reserved => s.and_then(|s| s.peaks.reserved.bytes).unwrap_or(-1),
            Column::Gap => s.and_then(|s| s.reserved_minus_allocated).unwrap_or(-1),
            Column::Oom => s.map_or(-1, |s| s.oom_events),
        };
        (v, rank)
    };
    let mut rows: Vec<_> = report.rows.iter().filter(|r| r.summary.is_some()).collect();
    rows.sort_by_key(|r| key(r));
    if descending {
        rows.reverse();
    }
    let header = move |label: &'static str, c: Column, id: &'static str| {
        let mark = match sort.get() {
            (s, true) if s == c => " ▾",
            (s, false) if s == c => " ▴",
            _ => "",
        };
        view! {
            <th class="num sortable" data-testid=format!("ranks-sort-{id}") on:click=move |_| sort.update(|(s, d)| {
                *d = if *s == c { !*d } else { c != Column::Rank };
                *s = c;
            })>{format!("{label}{mark}")}</th>
        }
    };
    view! {
        <table class="grid ranks-table" data-testid="ranks-table">
            <thead><tr>
                {header("rank", Column::Rank, "rank")}
                <th>"file"</th><th class="num">"device"</th>
                {header("peak allocated", Column::Allocated, "allocated")}
                {header("peak active", Column::Active, "active")}
                {header("peak reserved", Column::Reserved, "reserved")}
                {header("reserved − allocated", Column::Gap, "gap")}
                {header("OOM", Column::Oom, "oom")}
                <th class="num">"vs median"</th>
                <th>"largest group at the active peak"</th>
            </tr></thead>
            <tbody>
            {rows.into_iter().map(|r| {
                let s = r.summary.clone().expect("filtered");
                let f = &report.files[r.file];
                let outlier = r.verdict.as_ref().is_some_and(|v| v.outlier);
                let reason = r.verdict.as_ref().and_then(|v| v.reason.clone());
                let vs = r.verdict.as_ref().and_then(|v| v.vs_median_percent);
                let file = r.file;
                let cell = |v: Option<i64>| view! {
                    <td class="num" title=v.map(fmt::exact)>{v.map_or("—".into(), fmt::bytes)}</td>
                };
                view! {
                    <tr class="rank-row" class:outlier=outlier data-testid="ranks-row" data-rank=f.rank.to_string()
                        data-device=s.device.to_string() data-outlier=outlier.to_string()
                        data-peak-active=s.peaks.active.bytes.map(|v| v.to_string())
                        title=reason.clone().unwrap_or_default()
                        on:click=move |_| open(state, file_index(state, file))>
                        <td class="num"><button class="link" data-testid="ranks-open">{f.rank.to_string()}</button></td>
                        <td class="wrap">{f.path.clone()}</td>
                        <td class="num">{s.device.to_string()}</td>
                        {cell(s.peaks.allocated.bytes)}
                        {cell(s.peaks.active.bytes)}
                        {cell(s.peaks.reserved.bytes)}
                        {cell(s.reserved_minus_allocated)}
                        <td class="num">{s.oom_events.to_string()}</td>
                        <td class="num">{vs.map_or("—".into(), |p| format!("{p:+.1}%"))}
                            {outlier.then(|| view! { <span class="outlier-mark" title=reason.clone().unwrap_or_default()>" outlier"</span> })}</td>
                        <td class="wrap small">{s.top_group.as_ref().map(|g| format!("{} · {}", site(g), fmt::bytes(g.size_bytes)))}</td>
                    </tr>
                }
            }).collect_view()}
            </tbody>
        </table>
    }
}
