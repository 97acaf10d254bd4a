//! Two files of a job on one axis: the Compare view, `pt-snap diff` in the browser.
//!
//! Each side is measured by a worker of its own (`oneshot`, `question::DiffSide`: the CLI's
//! `diff::measure`), one at a time, and only the measured side is kept: peaks, the live
//! blocks at the peak by normalised stack, the timeline. The page compares two with the
//! CLI's `Diff::new` and draws them with `www/diff/diff.js`, the component of
//! `pt-snap diff --format html`, so the view, the page and `--json` agree by construction.

use std::cell::RefCell;
use std::rc::Rc;

use leptos::html;
use leptos::prelude::*;
use pt_snap_engine::{question, ErrorCode, Failure};
use pt_snap_report::diff::{By, Diff, Side, PAGE_BUCKETS};
use pt_snap_report::Metric;
use serde_json::{Map, Value as Json};
use wasm_bindgen::prelude::*;

use crate::job::{Job, Member, Pick};
use crate::oneshot::{self, Asking};
use crate::state::{AppState, Compare, Screen, DEFAULT_LIMIT};
use crate::views::error_box;

#[wasm_bindgen]
extern "C" {
    /// `www/diff/diff.js`, the component of `pt-snap diff --format html`.
    #[wasm_bindgen(js_namespace = PtSnapDiff, js_name = render, catch)]
    fn diff_render(
        container: &web_sys::HtmlElement,
        data: &JsValue,
        tree: &JsValue,
    ) -> Result<JsValue, JsValue>;
}

/// A measured side: which file, device and metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pick: Pick,
    metric: Metric,
}

/// Sides kept: enough to swap A and B and go back to the last pair without measuring again;
/// each holds every live group at its peak, so not more.
const KEEP: usize = 4;

thread_local! {
    /// Measured sides, the most recently used last.
    static SIDES: RefCell<Vec<(Key, Rc<Side>)>> = const { RefCell::new(Vec::new()) };
    /// Sides that could not be measured, with why (not asked again until the job changes).
    static FAILED: RefCell<Vec<(Key, Failure)>> = const { RefCell::new(Vec::new()) };
    /// The side being measured, and what its worker last said.
    static MEASURING: RefCell<Option<(Key, Asking)>> = const { RefCell::new(None) };
    static STAGE: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Forgets every side (another job: the file indexes mean other files now).
pub fn forget(state: AppState) {
    drop(MEASURING.with(|m| m.borrow_mut().take()));
    SIDES.with(|s| s.borrow_mut().clear());
    FAILED.with(|f| f.borrow_mut().clear());
    state.compare.set(Compare::default());
}

/// Where one side is.
#[derive(Debug, Clone, PartialEq)]
enum SideState {
    Waiting,
    Working(String),
    Done(Rc<Side>),
    Failed(Failure),
}

fn side_state(key: Key) -> SideState {
    if let Some(side) = SIDES.with(|s| {
        let mut s = s.borrow_mut();
        let at = s.iter().position(|(k, _)| *k == key)?;
        let entry = s.remove(at);
        let side = Rc::clone(&entry.1);
        s.push(entry);
        Some(side)
    }) {
        return SideState::Done(side);
    }
    if let Some(f) = FAILED.with(|f| {
        f.borrow()
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, e)| e.clone())
    }) {
        return SideState::Failed(f);
    }
    // Working only while its worker is: a superseded measurement's stage says nothing.
    if MEASURING.with(|m| m.borrow().as_ref().is_some_and(|(k, _)| *k == key)) {
        let stage = STAGE.with(|s| s.borrow().clone());
        return SideState::Working(stage);
    }
    SideState::Waiting
}

/// The picks in effect: those chosen, else the defaults.
pub fn picks(state: AppState) -> [Option<Pick>; 2] {
    let chosen = state.compare.with(|c| c.picks);
    let defaults = state
        .job
        .with(|j| j.as_ref().map_or([None, None], Job::default_pair));
    [chosen[0].or(defaults[0]), chosen[1].or(defaults[1])]
}

/// Chooses side `i` (0: A, 1: B) and measures what is missing.
pub fn choose(state: AppState, i: usize, pick: Pick) {
    let current = picks(state);
    state.compare.update(|c| {
        c.picks = current;
        c.picks[i] = Some(pick);
    });
    measure_next(state);
}

/// Measures the first side of the pair shown that is neither measured, failed nor being
/// measured; one worker at a time.
fn measure_next(state: AppState) {
    if state.screen.get_untracked() != Screen::Compare {
        return;
    }
    let metric = state.compare.with_untracked(|c| c.metric);
    let keys = untrack(|| picks(state)).map(|p| p.map(|pick| Key { pick, metric }));
    let busy = MEASURING.with(|m| m.borrow().as_ref().map(|(k, _)| *k));
    if busy.is_some_and(|k| keys.contains(&Some(k))) {
        return;
    }
    // A side no longer shown is not worth its worker.
    drop(MEASURING.with(|m| m.borrow_mut().take()));
    let Some(key) = keys
        .into_iter()
        .flatten()
        .find(|k| side_state(*k) == SideState::Waiting)
    else {
        return;
    };
    let Some(file) = crate::ranks::file(key.pick.file) else {
        return;
    };
    // What the worker says, shown by the progress line alone (not the pickers, which a
    // change of `state.compare` would rebuild).
    let stage = move |s: String| {
        STAGE.with(|t| *t.borrow_mut() = s);
        state.compare_stage.update(|n| *n += 1);
    };
    stage("starting".into());
    let asking = oneshot::ask(
        &file,
        question::DiffSide {
            device: Some(key.pick.device),
            metric: key.metric,
            buckets: PAGE_BUCKETS,
        },
        state.budget_s.get_untracked(),
        stage,
        move |answer| {
            let still = MEASURING.with(|m| m.borrow().as_ref().is_some_and(|(k, _)| *k == key));
            if !still {
                return;
            }
            drop(MEASURING.with(|m| m.borrow_mut().take()));
            match answer {
                Ok(side) => SIDES.with(|s| {
                    let mut s = s.borrow_mut();
                    s.push((key, Rc::new(side)));
                    let extra = s.len().saturating_sub(KEEP);
                    s.drain(..extra);
                }),
                Err(failure) => FAILED.with(|f| f.borrow_mut().push((key, failure))),
            }
            state.compare.update(|c| {
                c.epoch += 1;
            });
            measure_next(state);
        },
    );
    MEASURING.with(|m| *m.borrow_mut() = Some((key, asking)));
}

/// Shows the Compare view and starts measuring its pair.
pub fn show(state: AppState) {
    state.screen.set(Screen::Compare);
    measure_next(state);
}

/// A file of the job as a side's label: its name, and the device when it has several.
fn label(job: &Job, pick: Pick) -> String {
    let name = job.names.get(pick.file).cloned().unwrap_or_default();
    let devices = match job.members.get(pick.file) {
        Some(Member::Done(rows)) => rows.len(),
        _ => 1,
    };
    if devices > 1 {
        format!("{name} · device {}", pick.device)
    } else {
        name
    }
}

/// The pair on screen when both sides are measured: their labels and sides.
fn measured_pair(state: AppState) -> Option<([String; 2], [Rc<Side>; 2])> {
    let compare = state.compare.get();
    let [Some(a), Some(b)] = picks(state) else {
        return None;
    };
    let measured = |pick| match side_state(Key {
        pick,
        metric: compare.metric,
    }) {
        SideState::Done(side) => Some(side),
        _ => None,
    };
    let sides = [measured(a)?, measured(b)?];
    let labels = state
        .job
        .with(|j| j.as_ref().map(|j| [label(j, a), label(j, b)]))?;
    Some((labels, sides))
}

/// What the page says of each input before its numbers (the CLI adds its paths and import).
fn inputs(labels: &[String; 2]) -> [Map<String, Json>; 2] {
    labels.clone().map(|l| {
        let mut m = Map::new();
        m.insert("path".into(), Json::String(l));
        m
    })
}

thread_local! {
    /// The diff on screen; destroyed before another is drawn or the view goes away.
    static DRAWN: RefCell<Option<JsValue>> = const { RefCell::new(None) };
}

fn destroy_drawn() {
    crate::views::destroy_js_view(&DRAWN);
}

const METRICS: [Metric; 3] = [Metric::Active, Metric::Allocated, Metric::Reserved];

#[component]
pub fn CompareView() -> impl IntoView {
    let state = expect_context::<AppState>();
    let container = NodeRef::<html::Div>::new();
    let failure = RwSignal::new(None::<Failure>);
    // The pair on screen, told apart by its labels, listing and sides' identity.
    let pair = Memo::new(move |_| {
        let (labels, sides) = measured_pair(state)?;
        let limit = state.compare.with(|c| c.limit);
        Some((labels, limit, sides.map(|s| Rc::as_ptr(&s) as usize)))
    });
    Effect::new(move |_| {
        let shown = pair.get();
        let Some(el) = container.get() else { return };
        destroy_drawn();
        el.set_inner_html("");
        failure.set(None);
        let Some((_, limit, _)) = shown else { return };
        let Some((labels, [a, b])) = untrack(|| measured_pair(state)) else {
            return;
        };
        let page = Diff::new((*a).clone(), (*b).clone(), By::Site).to_page_data(
            limit,
            [&labels[0], &labels[1]],
            inputs(&labels).each_ref(),
        );
        let parse = |v: &Json| js_sys::JSON::parse(&v.to_string()).unwrap_or(JsValue::NULL);
        let el: &web_sys::HtmlElement = &el;
        match diff_render(el, &parse(&page.data), &parse(&page.tree)) {
            Ok(view) => DRAWN.with(|d| *d.borrow_mut() = Some(view)),
            Err(err) => failure.set(Some(Failure::new(ErrorCode::Internal, format!("{err:?}")))),
        }
    });
    on_cleanup(destroy_drawn);
    // Whatever resolves the pair anew — a rank summarised, a default that changes, a pick,
    // the metric — measures what is missing (a no-op while the pair is being measured).
    Effect::new(move |_| {
        let _ = picks(state);
        state.compare.with(|c| c.metric);
        measure_next(state);
    });
    let save = move |_| {
        let Some((labels, [a, b])) = untrack(|| measured_pair(state)) else {
            return;
        };
        let limit = state.compare.with_untracked(|c| c.limit);
        let html = Diff::new((*a).clone(), (*b).clone(), By::Site).to_html(
            limit,
            [&labels[0], &labels[1]],
            inputs(&labels).each_ref(),
        );
        crate::loader::save_text("pt-snap-diff.html", "text/html", &html);
    };
    view! {
        <section class="panel compare" data-testid="compare-view">
            <div class="compare-head">
                <h2>"Compare"</h2>
                {move || state.job.with(|j| j.as_ref().map(|job| {
                    let report = job.report();
                    let [a, b] = picks(state);
                    let options: Vec<(Pick, String)> = report.rows.iter().filter_map(|r| {
                        let s = r.summary.as_ref()?;
                        let pick = Pick { file: job.member_of(r.file)?, device: s.device };
                        Some((pick, format!("rank {} · {}", report.files[r.file].rank, label(job, pick))))
                    }).collect();
                    let select = move |i: usize, current: Option<Pick>, options: Vec<(Pick, String)>| {
                        let picks_of: Vec<Pick> = options.iter().map(|o| o.0).collect();
                        view! {
                            <label class="field">
                                <span class=format!("side-tag side-{}", ["a", "b"][i])>{["A", "B"][i]}</span>
                                <select data-testid=format!("compare-{}", ["a", "b"][i]) on:change=move |e| {
                                    if let Some(p) = event_target_value(&e).parse::<usize>().ok().and_then(|k| picks_of.get(k)) {
                                        choose(state, i, *p);
                                    }
                                }>
                                    {options.into_iter().enumerate().map(|(k, (p, text))| view! {
                                        <option value=k.to_string() selected=Some(p) == current>{text}</option>
                                    }).collect_view()}
                                </select>
                            </label>
                        }
                    };
                    view! {
                        {select(0, a, options.clone())}
                        <button class="button small" data-testid="compare-swap" title="Swap A and B" on:click=move |_| {
                            if let [Some(a), Some(b)] = picks(state) {
                                state.compare.update(|c| c.picks = [Some(b), Some(a)]);
                                measure_next(state);
                            }
                        }>"⇄"</button>
                        {select(1, b, options)}
                    }
                }))}
                <label class="field">"Metric "
                    <select data-testid="compare-metric" on:change=move |e| {
                        let name = event_target_value(&e);
                        let metric = METRICS.into_iter().find(|m| m.name() == name).unwrap_or(Metric::Active);
                        state.compare.update(|c| c.metric = metric);
                        measure_next(state);
                    }>
                        {METRICS.into_iter().map(|m| view! {
                            <option value=m.name() selected=move || state.compare.with(|c| c.metric == m)>{m.name()}</option>
                        }).collect_view()}
                    </select>
                </label>
                <label class="field">"Groups listed "
                    <select data-testid="compare-limit" on:change=move |e| {
                        let limit = event_target_value(&e).parse::<usize>().ok();
                        state.compare.update(|c| c.limit = limit);
                    }>
                        {[Some(DEFAULT_LIMIT), Some(100), None].into_iter().map(|l| view! {
                            <option value=l.map(|n| n.to_string()).unwrap_or_default()
                                selected=move || state.compare.with(|c| c.limit == l)>
                                {l.map_or("all".to_owned(), |n| n.to_string())}
                            </option>
                        }).collect_view()}
                    </select>
                </label>
                <button class="button small" data-testid="compare-save" disabled=move || pair.with(Option::is_none)
                    title="The page pt-snap diff --format html writes, for these two" on:click=save>"Save page"</button>
            </div>
            <p class="muted small">
                "What " <code>"pt-snap diff A B"</code> " gives: each side's peaks, every block live at its "
                "peak grouped by a call stack normalised to match across machines, both timelines on one "
                "event axis and the differential flamegraph. Each file is measured by a worker of its own, one at a time."
            </p>
            {move || {
                state.compare_stage.track();
                let compare = state.compare.get();
                let [a, b] = picks(state);
                let (Some(a), Some(b)) = (a, b) else {
                    return Some(view! { <p class="muted" data-testid="compare-empty">"Two summarised ranks are needed: wait for the Ranks view, or open more files."</p> }.into_any());
                };
                let rows: Vec<AnyView> = [("A", a), ("B", b)].into_iter().filter_map(|(name, pick)| {
                    let text = match side_state(Key { pick, metric: compare.metric }) {
                        SideState::Done(_) => return None,
                        SideState::Waiting => "waiting".to_owned(),
                        SideState::Working(s) => s,
                        SideState::Failed(f) => return Some(view! {
                            <div>{format!("{name}: ")}{error_box(&f)}</div>
                        }.into_any()),
                    };
                    Some(view! { <p class="muted" data-testid="compare-progress">{format!("{name}: measuring · {text}")}</p> }.into_any())
                }).collect();
                (!rows.is_empty()).then(|| rows.into_iter().collect_view().into_any())
            }}
            {move || failure.get().map(|f| error_box(&f))}
            <div class="compare-host" data-testid="compare-diff" node_ref=container></div>
        </section>
    }
}
