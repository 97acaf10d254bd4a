//! Many snapshots at once, one per rank of a job: the Ranks view.
//!
//! Each file, one at a time, is asked one question by a worker of its own (`oneshot`): its
//! rows of `pt-snap ranks` (`question::RankSummary`, the CLI's `summarize`). So the page keeps
//! a few numbers per file and the memory of at most one file at a time, however many there
//! are. Clicking a rank opens that file in every other view (from the cache, when the
//! browser has one); two ranks picked as A and B open in the Compare view.
//!
//! An exported `summary` table (`pt-snap export --format parquet`) gives the same rows for
//! thousands of ranks without their snapshots: a worker reads its parts, 32 per
//! message, and posts their ranks; they are judged here as a set, as `ranks` judges files.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use leptos::prelude::*;
use pt_snap_engine::{question, Failure, FromWorker, ToWorker};
use pt_snap_report::ranks::{site, RanksReport};
use pt_snap_report::Metric;

use crate::client::envelope;
use crate::compare;
use crate::file_worker::FileWorker;
use crate::fmt;
use crate::job::{order, Job, Member, Pick, SummaryTable};
use crate::loader;
use crate::oneshot::{self, Asking};
use crate::source::Source;
use crate::state::{AppState, Screen};

thread_local! {
    /// The job's files, in the job's order (the page's signal holds only their names).
    static FILES: RefCell<Vec<Source>> = const { RefCell::new(Vec::new()) };
    /// The file being summarised.
    static RUNNING: RefCell<Option<Asking>> = const { RefCell::new(None) };
    /// Bumped by every job started or stopped: a late answer of an older one is dropped.
    static SERIAL: Cell<u64> = const { Cell::new(0) };
    /// The summary table being read, or read.
    static TABLE: RefCell<SummaryTable<Source>> = RefCell::new(SummaryTable::new(Vec::new()));
    /// The worker reading it.
    static READING: RefCell<Option<FileWorker>> = const { RefCell::new(None) };
    /// When the table read so far was last shown (`Date.now()`).
    static LAST_SHOWN: Cell<f64> = const { Cell::new(0.0) };
}

/// How often the view of a summary table being read is rebuilt, at most.
const SHOW_EVERY_MS: f64 = 400.0;

/// Starts a job over `files` (a drop or pick of several, or a folder), replacing any other.
pub fn start(state: AppState, files: Vec<Source>) {
    stop();
    crate::compare::forget(state);
    let names: Vec<String> = files.iter().map(Source::name).collect();
    let order = order(&names);
    let files: Vec<Source> = order.iter().map(|&i| files[i].clone()).collect();
    let names: Vec<String> = order.iter().map(|&i| names[i].clone()).collect();
    FILES.with(|f| *f.borrow_mut() = files);
    state.job.set(Some(Job::new(names, Metric::Active)));
    state.screen.set(Screen::Ranks);
    next(state, SERIAL.with(Cell::get));
}

/// Parts sent to the reading worker per message: posting a `File` costs the page's thread
/// a fraction of a millisecond, so thousands at once would block it for most of a second.
const PARTS_PER_MESSAGE: usize = 32;

/// Shows the parts of an exported summary table (`files`, found at `paths`) as a job, read
/// by a worker of its own a batch at a time. The job shown is the one with the most ranks,
/// until the user chooses another.
pub fn start_summary(state: AppState, files: Vec<Source>, paths: Vec<String>) {
    stop();
    crate::compare::forget(state);
    FILES.with(|f| f.borrow_mut().clear());
    TABLE.with(|t| *t.borrow_mut() = SummaryTable::new(files.into_iter().zip(paths).collect()));
    show_summary(state);
    state.screen.set(Screen::Ranks);
    start_reader(state, SERIAL.with(Cell::get));
}

/// Starts a worker on the parts still waiting. One that fails (a panic, a worker that
/// dies) takes down only the batch it was reading; another goes on with the rest.
fn start_reader(state: AppState, serial: u64) {
    let current = move || SERIAL.with(Cell::get) == serial;
    let reading = oneshot::spawn(next_parts(), move |message| {
        if !current() {
            return;
        }
        match message {
            FromWorker::Summaries(reads) => {
                TABLE.with(|t| t.borrow_mut().answered(reads));
                if !TABLE.with(|t| t.borrow().is_waiting()) {
                    done_reading();
                    show_summary(state);
                    return;
                }
                // Posting the next batch and showing this one are tasks of their own, and the
                // view (whose cost grows with the ranks) is rebuilt a few times a second at most.
                set_timeout(
                    move || {
                        if current() {
                            let next = next_parts();
                            READING.with(|r| r.borrow().as_ref().map(|r| r.post(&next)));
                        }
                    },
                    std::time::Duration::ZERO,
                );
                let now = js_sys::Date::now();
                if now - LAST_SHOWN.with(Cell::get) >= SHOW_EVERY_MS {
                    LAST_SHOWN.with(|l| l.set(now));
                    set_timeout(
                        move || {
                            if current() {
                                show_summary(state)
                            }
                        },
                        std::time::Duration::ZERO,
                    );
                }
            }
            FromWorker::Failed(why) => {
                TABLE.with(|t| t.borrow_mut().batch_failed(&why));
                done_reading();
                if TABLE.with(|t| t.borrow().is_waiting()) {
                    // Not from inside the failed worker's own handler.
                    set_timeout(
                        move || {
                            if current() {
                                start_reader(state, serial)
                            }
                        },
                        std::time::Duration::ZERO,
                    );
                }
                show_summary(state);
            }
            _ => {}
        }
    });
    match reading {
        Ok(r) => READING.with(|slot| *slot.borrow_mut() = Some(r)),
        Err(why) => {
            TABLE.with(|t| t.borrow_mut().reader_failed(why));
            show_summary(state);
        }
    }
}

/// The next batch of waiting parts as a message, the files attached.
fn next_parts() -> js_sys::Object {
    let batch = TABLE.with(|t| t.borrow_mut().next_batch(PARTS_PER_MESSAGE));
    let attached = js_sys::Array::new();
    for (f, _) in &batch {
        attached.push(&f.js());
    }
    let paths = batch.into_iter().map(|(_, p)| p).collect();
    let message = envelope(&ToWorker::ReadSummaries { paths });
    let _ = js_sys::Reflect::set(&message, &"files".into(), &attached);
    message
}

/// The reader is done: its worker ends (not from inside its own handler).
fn done_reading() {
    wasm_bindgen_futures::spawn_local(async {
        drop(READING.with(|r| r.borrow_mut().take()));
    });
}

/// Shows the summary table read so far.
fn show_summary(state: AppState) {
    let job = TABLE.with(|t| t.borrow().job(Metric::Active));
    state.job.set(Some(job));
}

/// Ends the file being summarised, or the summary table being read; the rows already
/// there stay.
pub fn stop() {
    SERIAL.with(|s| s.set(s.get() + 1));
    drop(RUNNING.with(|r| r.borrow_mut().take()));
    drop(READING.with(|r| r.borrow_mut().take()));
}

/// File `i` of the job.
pub fn file(i: usize) -> Option<Source> {
    FILES.with(|f| f.borrow().get(i).cloned())
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
    drop(RUNNING.with(|r| r.borrow_mut().take()));
    let (waiting, metric) = state.job.with_untracked(|j| match j {
        Some(j) => (
            j.members.iter().position(|m| *m == Member::Waiting),
            j.metric,
        ),
        None => (None, Metric::Active),
    });
    let Some(i) = waiting else { return };
    let Some(file) = file(i) else { return };
    set_member(state, i, Member::Working("starting".into()));
    let current = move || SERIAL.with(Cell::get) == serial;
    let asking = oneshot::ask(
        &file,
        question::RankSummary { metric },
        state.budget_s.get_untracked(),
        move |stage| {
            if current() {
                set_member(state, i, Member::Working(stage));
            }
        },
        move |answer| {
            if !current() {
                return;
            }
            let member = match answer {
                Ok(rows) => Member::Done(rows),
                Err(f) => Member::Failed(f),
            };
            set_member(state, i, member);
            next(state, serial);
        },
    );
    RUNNING.with(|r| *r.borrow_mut() = Some(asking));
}

/// Opens file `i` of the job in every other view (a summary table has none to open).
fn open(state: AppState, i: usize) {
    if state
        .job
        .with_untracked(|j| j.as_ref().is_some_and(|j| j.summary().is_some()))
    {
        return;
    }
    if let Some(file) = FILES.with(|f| f.borrow().get(i).cloned()) {
        state.screen.set(Screen::File);
        loader::load(state, file);
    }
}

/// Rows of the table shown at once.
const TABLE_PAGE: usize = 50;

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
    let page = RwSignal::new(0usize);
    move || {
        sort.track();
        page.track();
        // Read in place: a job of thousands of ranks is not cloned on every rebuild.
        let Some((report, exported, total, done, working, failures)) = state.job.with(|job| {
            let job = job.as_ref()?;
            let working = job
                .members
                .iter()
                .zip(&job.names)
                .find_map(|(m, n)| match m {
                    Member::Working(s) => Some(format!("{n}: {s}")),
                    _ => None,
                });
            let failures: Vec<(String, Failure)> = job
                .failures()
                .into_iter()
                .map(|(n, f)| (n.to_owned(), f.clone()))
                .collect();
            Some((
                job.report(),
                job.summary().map(|s| Exported {
                    job: s.job.clone(),
                    jobs: s.jobs.clone(),
                    read: s.read,
                }),
                job.names.len(),
                job.finished(),
                working,
                failures,
            ))
        }) else {
            return ().into_any();
        };
        // Shared by the chart and the table: a report of thousands of ranks is not copied.
        let report = Rc::new(report);
        let reading = READING.with(|r| r.borrow().is_some());
        let (title, progress) = match &exported {
            None => (
                format!("Ranks · {total} files"),
                match &working {
                    Some(w) => format!("{done} of {total} summarised · {w}"),
                    None if done == total => format!("all {total} summarised"),
                    None => format!("{done} of {total} summarised · stopped"),
                },
            ),
            Some(e) => (
                format!("Ranks · {} of job {}", report.files.len(), e.job),
                match e.read {
                    (d, t) if d == t => format!("all {t} summary parts read"),
                    (d, t) if reading => format!("{d} of {t} summary parts read"),
                    (d, t) => format!("{d} of {t} summary parts read · stopped"),
                },
            ),
        };
        let (progress_done, progress_total) = match &exported {
            None => (done as u64, total as u64),
            Some(e) => e.read,
        };
        let busy = working.is_some() || (exported.is_some() && reading);
        view! {
            <section class="panel ranks" data-testid="ranks-view" data-source=if exported.is_some() { "summary" } else { "files" }>
                <div class="ranks-head">
                    <h2>{title}</h2>
                    <span class="muted" data-testid="ranks-progress" data-done=progress_done.to_string() data-total=progress_total.to_string()>
                        {progress}
                    </span>
                    {busy.then(|| view! {
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
                    {exported.as_ref().filter(|e| e.jobs.len() > 1).map(|e| {
                        let shown = e.job.clone();
                        view! {
                            <label class="small">"job "
                                <select data-testid="ranks-job" on:change=move |ev| {
                                    TABLE.with(|t| t.borrow_mut().choose(event_target_value(&ev)));
                                    page.set(0);
                                    show_summary(state);
                                }>
                                    {e.jobs.iter().map(|j| view! {
                                        <option value=j.clone() selected=*j == shown>{j.clone()}</option>
                                    }).collect_view()}
                                </select>
                            </label>
                        }
                    })}
                    {exported.is_none().then(|| view! { <CompareButton report=(*report).clone()/> })}
                </div>
                <p class="muted small">
                    {match &exported {
                        None => view! {
                            {rank_note(&report)}
                            " Each file's numbers are what " <code>"pt-snap ranks"</code>
                            " gives for it; an outlier's active peak is more than 3 scaled MADs (1.4826·MAD) and at least 10% from the median of the files summarised. Click a rank to open it; pick two as A and B to compare them."
                        }.into_any(),
                        Some(_) => view! {
                            "From an exported summary table (" <code>"pt-snap export --format parquet"</code>
                            "): each rank's numbers are what " <code>"pt-snap ranks"</code>
                            " gave for it at export, ranks as the export stated them. Outliers are judged here, across the ranks shown: an active peak more than 3 scaled MADs (1.4826·MAD) and at least 10% from their median. The snapshots are not here, so a rank cannot be opened or compared; drop its snapshot or "
                            <code>".db"</code> " to open it."
                        }.into_any(),
                    }}
                </p>
                <RankBars report=Rc::clone(&report) exported=exported.is_some()/>
                <RankTable report=report sort=sort page=page exported=exported.is_some()/>
                {(!failures.is_empty()).then(|| view! {
                    <div class="ranks-failed" data-testid="ranks-failed">
                        <h3>{if exported.is_some() { "Parts that could not be read" } else { "Files that could not be summarised" }}</h3>
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

/// Opens the Compare view on the ranks picked as A and B (by default the first rank and
/// the first outlier).
#[component]
fn CompareButton(report: RanksReport) -> impl IntoView {
    let state = expect_context::<AppState>();
    // Closures, not values: a pick in the table changes them without rebuilding the view.
    let report = StoredValue::new(report);
    let ranks = move || {
        let rank_of = |pick: Option<Pick>| {
            let pick = pick?;
            state.job.with_untracked(|job| {
                let job = job.as_ref()?;
                report.with_value(|report| {
                    let file =
                        (0..report.files.len()).find(|&f| job.member_of(f) == Some(pick.file))?;
                    Some(report.files[file].rank)
                })
            })
        };
        let [a, b] = compare::picks(state);
        (rank_of(a), rank_of(b))
    };
    view! {
        <button class="button small primary" data-testid="ranks-compare"
            disabled=move || { let (a, b) = ranks(); a.is_none() || b.is_none() }
            on:click=move |_| compare::show(state)>
            {move || match ranks() {
                (Some(a), Some(b)) => format!("Compare rank {a} (A) with rank {b} (B)"),
                _ => "Compare".to_owned(),
            }}
        </button>
    }
}

fn rank_note(report: &RanksReport) -> String {
    match &report.rank_note {
        None => "Ranks from the file names.".to_owned(),
        Some(why) => format!("Ranks are positions in name order ({why})."),
    }
}

/// Past this many rows the bars are drawn as one path per counter, without a label or a
/// click of their own: thousands of ranks stay one cheap element each.
const BARS_ONE_BY_ONE: usize = 256;

/// What the Ranks view shows of an exported summary table besides its rows (which the
/// report holds): read per rebuild without copying the table's ranks.
struct Exported {
    job: String,
    jobs: Vec<String>,
    read: (u64, u64),
}

/// One group of three bars per row (allocated, active, reserved), the median of the active
/// peak as a line, outliers in the warning colour.
#[component]
fn RankBars(report: Rc<RanksReport>, exported: bool) -> impl IntoView {
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
    let series = ["allocated", "active", "reserved"];
    let value = |s: &pt_snap_report::ranks::DeviceSummary, j: usize| match j {
        0 => s.peaks.allocated.bytes,
        1 => s.peaks.active.bytes,
        _ => s.peaks.reserved.bytes,
    };
    let many = rows.len() > BARS_ONE_BY_ONE;
    let bars = if many {
        // Too many for three bars each: the active peak as one bar per rank (one path, the
        // outliers' another, in red) and the reserved peak as a line over them.
        let (mut active, mut outliers, mut reserved) =
            (String::new(), String::new(), String::new());
        for (k, (row, s)) in rows.iter().enumerate() {
            let x = slot * k as f64;
            if let Some(v) = s.peaks.active.bytes {
                let outlier = row.verdict.as_ref().is_some_and(|v| v.outlier);
                let path = if outlier { &mut outliers } else { &mut active };
                let _ = std::fmt::Write::write_fmt(
                    path,
                    format_args!("M{x:.2} {H}V{:.2}h{slot:.3}V{H}Z", y(v)),
                );
            }
            if let Some(v) = s.peaks.reserved.bytes {
                let step = if reserved.is_empty() { 'M' } else { 'L' };
                let _ = std::fmt::Write::write_fmt(
                    &mut reserved,
                    format_args!("{step}{x:.2} {y:.2}h{slot:.3}", y = y(v)),
                );
            }
        }
        view! {
            <path class="rank-bar active" d=active shape-rendering="crispEdges"></path>
            <path class="rank-bar active outlier-bars" d=outliers shape-rendering="crispEdges"></path>
            <path class="reserved-line" d=reserved></path>
            <text x=0 y=H + 14.0>{format!("{} rows, in rank order", rows.len())}</text>
        }
        .into_any()
    } else {
        rows.iter().enumerate().map(|(k, (row, s))| {
            let x0 = slot * k as f64 + (slot - 3.0 * bar) / 2.0;
            let outlier = row.verdict.as_ref().is_some_and(|v| v.outlier);
            let file = row.file;
            let rank = report.files[file].rank;
            view! {
                <g class="rank" class:outlier=outlier class:openable=!exported on:click=move |_| open(state, file_index(state, file))>
                    <title>{format!("rank {rank} · device {} · active {} · reserved {}", s.device,
                        s.peaks.active.bytes.map_or("—".into(), fmt::bytes), s.peaks.reserved.bytes.map_or("—".into(), fmt::bytes))}</title>
                    {series.into_iter().enumerate().map(|(j, name)| value(s, j).map(|v| view! {
                        <rect class=format!("rank-bar {name}") x=x0 + bar * j as f64 y=y(v) width=bar * 0.9 height=H - y(v)></rect>
                    })).collect_view()}
                    <text x=x0 + 1.5 * bar y=H + 14.0 text-anchor="middle">{rank.to_string()}</text>
                </g>
            }
        }).collect_view().into_any()
    };
    view! {
        <svg class="rank-bars" data-testid="ranks-bars" viewBox=format!("0 0 {W} {}", H + 18.0) preserveAspectRatio="none" role="img"
            aria-label="Peak allocated, active and reserved per rank">
            {bars}
            {median.map(|m| view! {
                <line class="median" x1=0 x2=W y1=y(m as i64) y2=y(m as i64)></line>
            })}
        </svg>
        <div class="legend small rank-legend">
            {(!many).then(|| view! { <span><span class="key allocated"></span>"allocated"</span> })}
            <span><span class="key active"></span>"active (an outlier's in red)"</span>
            <span><span class="key reserved"></span>{if many { "reserved (the line)" } else { "reserved" }}</span>
            <span><span class="key median"></span>{format!("median active peak {}", median.map_or("—".into(), |m| fmt::bytes(m as i64)))}</span>
            <span class="muted">{format!("scale: 0 to {}", fmt::bytes(max as i64))}</span>
        </div>
    }
}

/// The job's index of the file `RanksReport::files[file]`.
fn file_index(state: AppState, file: usize) -> usize {
    state
        .job
        .with_untracked(|j| j.as_ref().and_then(|j| j.member_of(file)))
        .unwrap_or(0)
}

/// A row's "A" and "B": which side of the Compare view it is.
fn pick_buttons(state: AppState, pick: Pick) -> impl IntoView {
    [0, 1].map(|side| {
        let name = ["A", "B"][side];
        view! {
            <button class=format!("pick side-{}", name.to_ascii_lowercase())
                class:selected=move || compare::picks(state)[side] == Some(pick)
                data-testid=format!("ranks-pick-{}", name.to_ascii_lowercase())
                title=format!("Compare this rank as {name}")
                on:click=move |e| {
                    // Not the row's click, which opens the rank.
                    e.stop_propagation();
                    compare::choose(state, side, pick);
                }>{name}</button>
        }
    })
}

#[component]
fn RankTable(
    report: Rc<RanksReport>,
    sort: RwSignal<(Column, bool)>,
    page: RwSignal<usize>,
    exported: bool,
) -> impl IntoView {
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
    let count = rows.len();
    let pages = count.div_ceil(TABLE_PAGE).max(1);
    let shown = page.get_untracked().min(pages - 1);
    let first = shown * TABLE_PAGE;
    let rows: Vec<_> = rows.into_iter().skip(first).take(TABLE_PAGE).collect();
    let pager = (pages > 1).then(|| {
        let go = move |to: usize| move |_| page.set(to);
        view! {
            <div class="pager small" data-testid="ranks-pager">
                <button class="button small" disabled=shown == 0 on:click=go(shown.saturating_sub(1))>"‹ previous"</button>
                <span data-testid="ranks-page">{format!("rows {}–{} of {count}", first + 1, first + TABLE_PAGE.min(count - first))}</span>
                <button class="button small" data-testid="ranks-next" disabled=shown + 1 == pages on:click=go(shown + 1)>"next ›"</button>
            </div>
        }
    });
    let header = move |label: &'static str, c: Column, id: &'static str| {
        let mark = match sort.get() {
            (s, true) if s == c => " ▾",
            (s, false) if s == c => " ▴",
            _ => "",
        };
        view! {
            <th class="num sortable" data-testid=format!("ranks-sort-{id}") on:click=move |_| {
                page.set(0);
                sort.update(|(s, d)| {
                    *d = if *s == c { !*d } else { c != Column::Rank };
                    *s = c;
                })
            }>{format!("{label}{mark}")}</th>
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
                {(!exported).then(|| view! { <th title="Pick two ranks to compare">"compare"</th> })}
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
                    <tr class="rank-row" class:outlier=outlier class:openable=!exported data-testid="ranks-row" data-rank=f.rank.to_string()
                        data-device=s.device.to_string() data-outlier=outlier.to_string()
                        data-peak-active=s.peaks.active.bytes.map(|v| v.to_string())
                        title=reason.clone().unwrap_or_default()
                        on:click=move |_| open(state, file_index(state, file))>
                        <td class="num">{if exported {
                            view! { <span>{f.rank.to_string()}</span> }.into_any()
                        } else {
                            view! { <button class="link" data-testid="ranks-open">{f.rank.to_string()}</button> }.into_any()
                        }}</td>
                        <td class="wrap" title=f.path.clone()>{f.path.rsplit('/').next().unwrap_or_default().to_owned()}</td>
                        <td class="num">{s.device.to_string()}</td>
                        {cell(s.peaks.allocated.bytes)}
                        {cell(s.peaks.active.bytes)}
                        {cell(s.peaks.reserved.bytes)}
                        {cell(s.reserved_minus_allocated)}
                        <td class="num">{s.oom_events.to_string()}</td>
                        <td class="num">{vs.map_or("—".into(), |p| format!("{p:+.1}%"))}
                            {outlier.then(|| view! { <span class="outlier-mark" title=reason.clone().unwrap_or_default()>" outlier"</span> })}</td>
                        <td class="wrap small">{s.top_group.as_ref().map(|g| format!("{} · {}", site(g), fmt::bytes(g.size_bytes)))}</td>
                        {(!exported).then(|| view! {
                            <td class="picks">{pick_buttons(state, Pick { file: file_index(state, file), device: s.device })}</td>
                        })}
                    </tr>
                }
            }).collect_view()}
            </tbody>
        </table>
        {pager}
    }
}
