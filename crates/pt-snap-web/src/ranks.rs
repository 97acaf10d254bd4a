//! Many snapshots at once, one per rank of a job: the Ranks view.
//!
//! Each file, one at a time, is asked one question by a worker of its own (`oneshot`): its
//! rows of `pt-snap ranks` (`Query::RankSummary`, the CLI's `summarize`). So the page keeps
//! a few numbers per file and the memory of at most one file at a time, however many there
//! are. Clicking a rank opens that file in every other view (from the cache, when the
//! browser has one); two ranks picked as A and B open in the Compare view.

use std::cell::{Cell, RefCell};

use leptos::prelude::*;
use pt_snap_engine::{Answer, EngineError, Query};
use pt_snap_report::ranks::{site, RanksReport};
use pt_snap_report::Metric;
use web_sys::File;

use crate::app::{AppState, Screen};
use crate::compare;
use crate::fmt;
use crate::job::{order, Job, Member, Pick};
use crate::loader;
use crate::oneshot::{self, Asking};

thread_local! {
    /// The job's files, in the job's order (the page's signal holds only their names).
    static FILES: RefCell<Vec<File>> = const { RefCell::new(Vec::new()) };
    /// The file being summarised.
    static RUNNING: RefCell<Option<Asking>> = const { RefCell::new(None) };
    /// Bumped by every job started or stopped: a late answer of an older one is dropped.
    static SERIAL: Cell<u64> = const { Cell::new(0) };
}

/// Starts a job over `files` (a drop or pick of several, or a folder), replacing any other.
pub fn start(state: AppState, files: Vec<File>) {
    stop();
    crate::compare::forget(state);
    let names: Vec<String> = files.iter().map(File::name).collect();
    let order = order(&names);
    let files: Vec<File> = order.iter().map(|&i| files[i].clone()).collect();
    let names: Vec<String> = order.iter().map(|&i| names[i].clone()).collect();
    FILES.with(|f| *f.borrow_mut() = files);
    state.job.set(Some(Job::new(names, Metric::Active)));
    state.screen.set(Screen::Ranks);
    next(state, SERIAL.with(Cell::get));
}

/// Ends the file being summarised; the rows already there stay.
pub fn stop() {
    SERIAL.with(|s| s.set(s.get() + 1));
    drop(RUNNING.with(|r| r.borrow_mut().take()));
}

/// File `i` of the job.
pub fn file(i: usize) -> Option<File> {
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
        Query::RankSummary { metric },
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
                Ok(Answer::RankSummary(rows)) => Member::Done(rows),
                Ok(_) => Member::Failed(EngineError::new(
                    "INTERNAL_ERROR",
                    "The worker answered another question.",
                )),
                Err(f) => Member::Failed(f),
            };
            set_member(state, i, member);
            next(state, serial);
        },
    );
    RUNNING.with(|r| *r.borrow_mut() = Some(asking));
}

/// Opens file `i` of the job in every other view.
fn open(state: AppState, i: usize) {
    if let Some(file) = FILES.with(|f| f.borrow().get(i).cloned()) {
        state.screen.set(Screen::File);
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
                    <CompareButton report=report.clone()/>
                </div>
                <p class="muted small">
                    {rank_note(&report)}
                    " Each file's numbers are what " <code>"pt-snap ranks"</code>
                    " gives for it; an outlier's active peak is more than 3 scaled MADs (1.4826·MAD) and at least 10% from the median of the files summarised. Click a rank to open it; pick two as A and B to compare them."
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
                <th title="Pick two ranks to compare">"compare"</th>
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
                        <td class="picks">{pick_buttons(state, Pick { file: file_index(state, file), device: s.device })}</td>
                    </tr>
                }
            }).collect_view()}
            </tbody>
        </table>
    }
}
