//! The views of an open file. Each asks the file's worker (`client.rs`) when its inputs
//! change, shows a spinner until the answer comes, and renders plain typed results: a view
//! asks with a `pt_snap_engine::question` type and is handed that question's own answer type.

use std::cell::RefCell;

use leptos::html;
use leptos::prelude::*;
use pt_snap_engine::{question, ErrorCode, Failure, Metric, PeakReport, Peaks, Table};
use serde_json::{Map, Value as Json};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::client::{Asker, Reply};
use crate::fmt;
use crate::link::Tab;
use crate::state::AppState;

#[wasm_bindgen]
extern "C" {
    /// `www/flamegraph/flamegraph.js`, the same component as the HTML report.
    #[wasm_bindgen(js_namespace = PtSnapFlamegraph, js_name = render, catch)]
    fn flamegraph_render(
        container: &web_sys::HtmlElement,
        data: &JsValue,
        options: &JsValue,
    ) -> Result<JsValue, JsValue>;

    /// The trees `flamegraph_render` draws, made ahead: what it takes in place of the data.
    #[wasm_bindgen(js_namespace = PtSnapFlamegraph, js_name = prepare, catch)]
    fn flamegraph_prepare(data: &JsValue) -> Result<JsValue, JsValue>;
}

pub(crate) fn error_box(f: &Failure) -> AnyView {
    view! {
        <div class="status error inline" role="alert" data-testid="view-error">
            <code>{f.code.as_str()}</code><span>{f.message.clone()}</span>{hint_line(f)}
        </div>
    }
    .into_any()
}

/// What to do about a failure, in the page's words (`hint`), on its own line under it.
pub(crate) fn hint_line(f: &Failure) -> Option<AnyView> {
    let hint = crate::hint::on_page(f.code, f.hint.as_deref()?);
    Some(view! { <span class="hint" data-testid="error-hint">{hint}</span> }.into_any())
}

/// A byte count in human units with the exact count on hover.
pub(crate) fn bytes_cell(n: i64) -> AnyView {
    view! { <span class="num" title=fmt::exact(n)>{fmt::bytes(n)}</span> }.into_any()
}

/// The "include static blocks" switch of the views whose template takes `include_static`.
pub(crate) fn include_static_field(include_static: RwSignal<bool>) -> impl IntoView {
    view! {
        <label class="field check">
            <input type="checkbox" prop:checked=move || include_static.get()
                on:change=move |e| include_static.set(event_target_checked(&e))/>
            "include static blocks"
        </label>
    }
}

/// A `grid` table: `head` is the header row's cells, `rows` the body's rows.
pub(crate) fn grid_table(
    class: &'static str,
    testid: Option<&'static str>,
    head: impl IntoView,
    rows: impl IntoView,
) -> impl IntoView {
    view! {
        <table class=class data-testid=testid>
            <thead><tr>{head}</tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

/// A question being answered: a spinner, with how to stop it.
pub(crate) fn pending(what: &'static str) -> AnyView {
    view! {
        <div class="pending" role="status" aria-busy="true" data-testid="pending">
            <span class="spinner" aria-hidden="true"></span>
            <span>{what}</span>
            <span class="muted small">" (Esc stops it)"</span>
        </div>
    }
    .into_any()
}

/// Something on its way that is not a question (nothing to stop): a spinner alone.
pub(crate) fn coming(what: &'static str) -> AnyView {
    view! {
        <div class="pending" role="status" aria-busy="true">
            <span class="spinner" aria-hidden="true"></span>
            <span>{what}</span>
        </div>
    }
    .into_any()
}

/// The selected device's peaks: the replay's while the database is being written (and
/// after: they are `memory_peak`'s answer), else asked of the database.
pub type PeaksReply = Signal<Reply<Peaks>>;

pub fn peaks_signal(state: AppState) -> PeaksReply {
    let previewed = Memo::new(move |_| {
        let device = state.device.get();
        state.opened.with(|o| o.as_ref()?.peaks(device))
    });
    let asked = state.watch(move |device| {
        previewed
            .get()
            .is_none()
            .then_some(question::Peaks { device })
    });
    Signal::derive(move || match previewed.get() {
        Some(p) => Some(Ok(p)),
        None => asked.get(),
    })
}

/// The active peak's event, for views that default to it.
pub fn active_peak_event(peaks: PeaksReply) -> Memo<Option<i64>> {
    Memo::new(move |_| {
        peaks
            .get()
            .and_then(|p| p.ok())
            .and_then(|p| p.active.event_id)
    })
}

/// The three peaks of the selected device, above every view (the page's test contract:
/// `data-value` holds the exact `memory_peak` byte count).
#[component]
pub fn PeakCards(peaks: PeaksReply) -> impl IntoView {
    let state = expect_context::<AppState>();
    move || match peaks.get() {
        None => pending("Finding the peaks…"),
        Some(Err(f)) => error_box(&f),
        Some(Ok(p)) => {
            let card = move |label: &'static str, id: &'static str, peak: pt_snap_engine::Peak| {
                let (v, ev) = (peak.bytes, peak.event_id);
                let selected = move || ev.is_some() && state.event.get() == ev;
                view! {
                    <div class="card" class:selected=selected>
                        <div class="card-label">{label}</div>
                        // A counter NULL on every event has no peak: no value, as memory_peak says.
                        <div class="card-value" data-testid=id data-value=v.map(|v| v.to_string()) title=v.map(fmt::exact)>
                            {v.map_or_else(|| "—".to_owned(), fmt::bytes)}
                        </div>
                        <div class="card-sub">
                            {match ev {
                                Some(e) => view! {
                                    <button class="link" title="Select this event (timeline, memory tree, active blocks)"
                                        on:click=move |_| state.event.set(Some(e))>{format!("at event {e}")}</button>
                                }.into_any(),
                                None => view! { <span class="muted">"no event"</span> }.into_any(),
                            }}
                        </div>
                    </div>
                }
            };
            view! {
                <section class="cards" aria-label="Peaks">
                    {card("Peak allocated", "peak-allocated", p.allocated)}
                    {card("Peak active", "peak-active", p.active)}
                    {card("Peak reserved", "peak-reserved", p.reserved)}
                </section>
            }
            .into_any()
        }
    }
}

#[component]
pub fn Overview(peaks: PeaksReply) -> impl IntoView {
    let state = expect_context::<AppState>();
    let overview = move || {
        state
            .opened
            .with(|o| o.as_ref().and_then(|o| o.overview.clone()))
    };
    // The timeline is built in the task after the one that shows a file, so the peaks are
    // painted first and neither task holds the page for long.
    let drawn = RwSignal::new(None::<u32>);
    Effect::new(move |_| {
        let shown = state.generation();
        if drawn.get_untracked() != Some(shown) {
            request_animation_frame(move || {
                set_timeout(move || drawn.set(Some(shown)), std::time::Duration::ZERO)
            });
        }
    });
    view! {
        <Show when=move || drawn.get() == Some(state.generation())
            fallback=|| coming("Drawing the timeline…")>
            <crate::timeline::TimelinePanel peaks=peaks/>
            <crate::allocations::AllocationPanel/>
        </Show>
        <section class="panel two">
            <div>
                <h2>"Devices"</h2>
                <table class="grid">
                    <thead><tr><th>"device"</th><th class="num">"first event"</th><th class="num">"last event"</th></tr></thead>
                    <tbody>
                    {move || state.opened.get().map(|o| o.bounds().into_iter().map(|(d, b)| view! {
                        <tr class:selected=move || state.device.get() == d>
                            <td>{d}</td>
                            <td class="num">{b.map_or("–".to_owned(), |b| b.0.to_string())}</td>
                            <td class="num">{b.map_or("–".to_owned(), |b| b.1.to_string())}</td>
                        </tr>
                    }).collect_view())}
                    </tbody>
                </table>
            </div>
            <div>
                <h2>"Import metadata"</h2>
                {move || match overview().map(|o| o.metadata) {
                    None => coming("Written with the database…"),
                    Some(Ok(rows)) => view! {
                        <table class="grid kv" data-testid="metadata">
                            <tbody>{rows.into_iter().map(|(k, v)| view! { <tr><th>{k}</th><td class="wrap">{v}</td></tr> }).collect_view()}</tbody>
                        </table>
                    }.into_any(),
                    Some(Err(why)) => view! { <p class="muted">{why}</p> }.into_any(),
                }}
                {move || overview().filter(|o| !o.warnings.is_empty()).map(|o| view! {
                    <details class="warnings">
                        <summary>{format!("{} replay warnings", o.warnings.len())}</summary>
                        <ul>{o.warnings.into_iter().map(|w| view! { <li>{w}</li> }).collect_view()}</ul>
                    </details>
                })}
            </div>
        </section>
    }
}

/// The peak report's metrics, in the order its menu lists them (the first is the default).
const METRICS: [Metric; 3] = [Metric::Active, Metric::Allocated, Metric::Reserved];

#[component]
pub fn PeakView() -> impl IntoView {
    let state = expect_context::<AppState>();
    let metric = RwSignal::new(METRICS[0]);
    let include_static = RwSignal::new(true);
    let report = state.watch(move |device| {
        Some(question::PeakReport {
            device,
            metric: metric.get(),
            include_static: include_static.get(),
        })
    });
    view! {
        <div class="form-row">
            <label class="field">"Metric "
                <select on:change=move |e| {
                    let name = event_target_value(&e);
                    metric.set(METRICS.into_iter().find(|m| m.name() == name).unwrap_or(Metric::Active));
                }>
                    {METRICS.map(|m| view! { <option value=m.name()>{m.name()}</option> }).into_iter().collect_view()}
                </select>
            </label>
            {include_static_field(include_static)}
        </div>
        {move || match report.get() {
            None => pending("Attributing the peak to callstacks…"),
            Some(Err(f)) => error_box(&f),
            Some(Ok(r)) => peak_body(state, r).into_any(),
        }}
    }
}

fn peak_body(state: AppState, r: PeakReport) -> impl IntoView {
    let PeakReport {
        metric,
        event_id: event,
        groups,
        has_more,
        included_bytes: included,
        active_bytes_at_event: active_at,
        coverage_percent: coverage,
        allocator_gap: gap,
    } = r;
    view! {
        <section class="panel">
            <h2>{format!("Peak of {} memory", metric.name())}</h2>
            <p>
                {match event {
                    Some(e) => view! {
                        "At event " <strong>{e}</strong> ". "
                        <button class="link" on:click=move |_| { state.event.set(Some(e)); state.tab.set(Tab::Tree); }>"Memory tree there"</button>
                    }.into_any(),
                    None => view! { "No peak: the range has no events." }.into_any(),
                }}
            </p>
            <p data-testid="coverage">
                "The groups below cover " {bytes_cell(included)}
                {active_at.map(|a| view! { " of " {bytes_cell(a)} " active" })}
                {coverage.map(|c| format!(" ({c:.1}%)"))}
                {has_more.then_some(" — more groups exist than are shown (top 20).")}
            </p>
        </section>
        <section class="panel">
            <h2>"Callstack groups"</h2>
            {grid_table(
                "grid groups",
                None,
                view! { <th class="num">"size"</th><th class="num">"requested"</th><th class="num">"blocks"</th><th class="num">"%"</th><th>"category"</th><th title="The innermost frame of your own code, then the torch call below it; open a row for its frames">"where allocated"</th> },
                groups.into_iter().map(|g| {
                    view! {
                        <tr>
                            <td class="num">{bytes_cell(g.size_bytes)}</td>
                            <td class="num">{bytes_cell(g.requested_bytes)}</td>
                            <td class="num">{fmt::grouped(g.block_count)}</td>
                            <td class="num">{g.percent_of_active_blocks.map(|p| format!("{p:.1}"))}</td>
                            <td>{g.category}</td>
                            <td class="stack">{stack_details(g.label, g.callstack)}</td>
                        </tr>
                    }
                }).collect_view(),
            )}
        </section>
        <section class="panel">
            <details>
                <summary>"Allocator gap (reserved vs active/allocated at each peak)"</summary>
                <table class="grid kv">
                    <tbody>
                    {gap.into_iter().map(|(k, v)| {
                        let cell = match v.as_i64() {
                            Some(n) if !k.ends_with("event_id") && !k.ends_with("same_event") => bytes_cell(n),
                            _ => view! { <span class="num">{v.to_string()}</span> }.into_any(),
                        };
                        view! { <tr><th>{k}</th><td>{cell}</td></tr> }
                    }).collect_view()}
                    </tbody>
                </table>
            </details>
        </section>
    }
}

/// A stack as a person reads it: its label ([`pt_snap_report::stack::label`]) to open,
/// then [`stack_body`].
pub fn stack_details(label: String, text: String) -> impl IntoView {
    view! {
        <details>
            <summary data-testid="stack-label">{label}</summary>
            {stack_body(text)}
        </details>
    }
}

/// A stack's frames: its Python frames as `function (file:line)` with the paths cut as
/// `diff` cuts them and the user's own frames in bold, and every frame as captured one more
/// click away — or every frame at once when the stack has no native frames (or no Python
/// ones) to tell apart.
pub fn stack_body(text: String) -> AnyView {
    use pt_snap_report::stack::{normalize_stack, Origin};
    let frames = normalize_stack(&text);
    let python: Vec<_> = frames.iter().filter(|f| f.is_python()).collect();
    let native = frames.len() - python.len();
    if python.is_empty() || native == 0 {
        return view! { <pre data-testid="stack-text">{text}</pre> }.into_any();
    }
    let items = python
        .iter()
        .map(|f| {
            let user = f.origin == Origin::User;
            view! { <li class:user=user>{f.label()}</li> }
        })
        .collect_view();
    let total = frames.len();
    view! {
        <p class="muted small">{format!("Python frames, outermost first; your code in bold ({native} native frames hidden):")}</p>
        <ol class="py-frames" data-testid="stack-python">{items}</ol>
        <details class="all-frames">
            <summary class="small">{format!("All {total} frames, as captured")}</summary>
            <pre data-testid="stack-text">{text}</pre>
        </details>
    }
    .into_any()
}

thread_local! {
    /// The flamegraph on screen; destroyed before another is drawn or the view goes away.
    static FLAMEGRAPH: RefCell<Option<JsValue>> = const { RefCell::new(None) };
}

fn destroy_flamegraph() {
    destroy_js_view(&FLAMEGRAPH);
}

/// Ends the view of a `www/` component (the flamegraph, the diff) held in `slot`, through
/// its `destroy()`: its observers and listeners go with it.
pub(crate) fn destroy_js_view(slot: &'static std::thread::LocalKey<RefCell<Option<JsValue>>>) {
    slot.with(|s| {
        if let Some(view) = s.borrow_mut().take() {
            if let Ok(destroy) = js_sys::Reflect::get(&view, &"destroy".into()) {
                if let Some(destroy) = destroy.dyn_ref::<js_sys::Function>() {
                    let _ = destroy.call0(&view);
                }
            }
        }
    });
}

/// The form above the views drawn at one event (the memory tree, the segment map): the
/// event shown, typed in to show another; "Active peak" goes back to it. `extra` ends the row.
pub(crate) fn event_form(
    event: impl Fn() -> Option<i64> + Copy + Send + Sync + 'static,
    testid: &'static str,
    extra: impl IntoView + 'static,
) -> impl IntoView {
    let state = expect_context::<AppState>();
    let input = RwSignal::new(String::new());
    Effect::new(move |_| input.set(event().map(|e| e.to_string()).unwrap_or_default()));
    let go = move || {
        if let Ok(e) = input.get_untracked().trim().parse::<i64>() {
            state.event.set(Some(e));
        }
    };
    view! {
        <form class="form-row" on:submit=move |e| { e.prevent_default(); go(); }>
            <label class="field">"After event "
                <input type="number" data-testid=testid class="narrow" prop:value=move || input.get()
                    on:input=move |e| input.set(event_target_value(&e))/>
            </label>
            <button class="button" type="submit">"Show"</button>
            <button class="button" type="button" on:click=move |_| state.event.set(None)>"Active peak"</button>
            {extra}
        </form>
    }
}

/// An answer drawn by a JavaScript component in two tasks after the one it came in:
/// prepared (parsed, its models made) in the first and drawn in the second, as each can
/// take tens of ms at 1M events, together over the page's 100 ms budget for a task. Only
/// the latest answer is drawn: one superseded meanwhile, or a view gone, is not.
#[derive(Clone, Copy)]
pub(crate) struct Redraw {
    latest: StoredValue<u64>,
    failure: RwSignal<Option<Failure>>,
}

impl Redraw {
    /// A failure to prepare or draw goes to `failure`.
    pub fn new(failure: RwSignal<Option<Failure>>) -> Self {
        Redraw {
            latest: StoredValue::new(0),
            failure,
        }
    }

    /// Whatever is pending is not drawn.
    pub fn supersede(self) -> Option<u64> {
        self.latest.try_update_value(|n| {
            *n += 1;
            *n
        })
    }

    pub fn in_two_tasks<T: 'static>(
        self,
        prepare: impl FnOnce() -> Result<T, JsValue> + 'static,
        draw: impl FnOnce(T) -> Result<(), JsValue> + 'static,
    ) {
        let this = self.supersede();
        // A view gone (`None`) draws nothing.
        let current = move || this.is_some() && self.latest.try_get_value() == this;
        let failed = move |err: JsValue| {
            (self.failure).set(Some(Failure::new(ErrorCode::Internal, format!("{err:?}"))))
        };
        let zero = std::time::Duration::ZERO;
        set_timeout(
            move || {
                if !current() {
                    return;
                }
                match prepare() {
                    Err(err) => failed(err),
                    Ok(prepared) => set_timeout(
                        move || {
                            if current() {
                                if let Err(err) = draw(prepared) {
                                    failed(err);
                                }
                            }
                        },
                        zero,
                    ),
                }
            },
            zero,
        );
    }
}

#[component]
pub fn TreeView() -> impl IntoView {
    let state = expect_context::<AppState>();
    let include_static = RwSignal::new(true);
    let container = NodeRef::<html::Div>::new();
    let peak_event = active_peak_event(expect_context::<PeaksReply>());
    let event = move || state.event.get().or_else(|| peak_event.get());
    let tree = state.watch(move |device| {
        Some(question::Tree {
            device,
            event_id: event()?,
            include_static: include_static.get(),
        })
    });
    let failure = RwSignal::new(None::<Failure>);
    let redraw = Redraw::new(failure);
    Effect::new(move |_| {
        let answer = tree.get();
        let Some(el) = container.get() else { return };
        destroy_flamegraph();
        match answer {
            Some(Ok(json)) => {
                failure.set(None);
                redraw.in_two_tasks(
                    move || {
                        flamegraph_prepare(&js_sys::JSON::parse(&json).unwrap_or(JsValue::NULL))
                    },
                    move |models| {
                        let el: &web_sys::HtmlElement = &el;
                        let view = flamegraph_render(el, &models, &js_sys::Object::new())?;
                        FLAMEGRAPH.with(|f| *f.borrow_mut() = Some(view));
                        Ok(())
                    },
                );
            }
            other => {
                redraw.supersede();
                failure.set(other.and_then(Result::err));
            }
        }
    });
    on_cleanup(move || {
        redraw.supersede();
        destroy_flamegraph();
    });
    view! {
        {event_form(event, "tree-event", include_static_field(include_static))}
        {move || match (event(), tree.get()) {
            (None, _) => Some(view! { <p class="muted">"This device has no events to choose from."</p> }.into_any()),
            (Some(_), None) => Some(pending("Building the memory tree…")),
            _ => failure.get().map(|f| error_box(&f)),
        }}
        <div class="flamegraph-host" data-testid="flamegraph" node_ref=container></div>
    }
}

#[component]
pub fn TemplatesView() -> impl IntoView {
    let state = expect_context::<AppState>();
    let templates = pt_snap_engine::templates();
    let asker = Asker::new();
    let chosen = RwSignal::new("memory_peak".to_owned());
    let values = RwSignal::new(Map::<String, Json>::new());
    let result = RwSignal::new(None::<Reply<Table>>);
    let page = RwSignal::new(0usize);
    const PAGE: usize = 50;
    const MAX_ROWS: i64 = 1000;
    let contract = move || pt_snap_query::registry::find(&chosen.get()).map(|t| &t.contract);
    let params_json = move || {
        let mut out = Map::new();
        let Some(c) = pt_snap_query::registry::find(&chosen.get_untracked()).map(|t| &t.contract)
        else {
            return Err(Failure::new(
                ErrorCode::TemplateNotFound,
                "No template chosen.",
            ));
        };
        let raw = values.get_untracked();
        for (name, p) in &c.parameters {
            let Some(v) = raw.get(name) else { continue };
            let text = v.as_str().unwrap_or("").trim();
            if text.is_empty() {
                continue;
            }
            let value = match p.kind {
                pt_snap_query::ParamType::Int => {
                    text.parse::<i64>().map(Json::from).map_err(|_| ())
                }
                pt_snap_query::ParamType::Float => {
                    text.parse::<f64>().map(Json::from).map_err(|_| ())
                }
                pt_snap_query::ParamType::Bool => Ok(Json::Bool(text == "true")),
                pt_snap_query::ParamType::Str => Ok(Json::from(text)),
            }
            .map_err(|_| {
                Failure::new(
                    ErrorCode::InvalidParameter,
                    format!("{name} must be {}", p.kind.name()),
                )
            })?;
            out.insert(name.clone(), value);
        }
        Ok(out)
    };
    let run = move || {
        page.set(0);
        let device = state.device.get_untracked();
        let template = chosen.get_untracked();
        match params_json() {
            Err(f) => result.set(Some(Some(Err(f)))),
            Ok(params) => {
                result.set(Some(None));
                let question = question::Template {
                    device,
                    template,
                    params,
                    max_rows: MAX_ROWS,
                    exact_total: false,
                };
                asker.ask(question, state.budget_s.get_untracked(), move |answer| {
                    result.set(Some(Some(answer)))
                });
            }
        }
    };
    let cli_preview = move || {
        let name = chosen.get();
        values.track();
        let params = params_json().unwrap_or_default();
        let mut cli = format!("pt-snap query --template-use {name}");
        if !params.is_empty() {
            cli.push_str(&format!(" --params '{}'", Json::Object(params)));
        }
        let budget = state.budget_s.get();
        let timeout = if budget == crate::state::DEFAULT_BUDGET_S {
            String::new()
        } else {
            format!(" --timeout {}", fmt::seconds(budget))
        };
        format!("{cli} --device {}{timeout} --json", state.device.get())
    };
    view! {
        <form class="panel template-form" on:submit=move |e| { e.prevent_default(); run(); }>
            <div class="form-row">
                <label class="field">"Template "
                    <select data-testid="template-select" on:change=move |e| {
                        chosen.set(event_target_value(&e)); values.set(Map::new()); result.set(None);
                    }>
                        {templates.into_iter().map(|(name, cat, _)| {
                            let selected = name == "memory_peak";
                            view! { <option value=name.clone() selected=selected>{format!("{name} ({cat})")}</option> }
                        }).collect_view()}
                    </select>
                </label>
            </div>
            <p class="muted">{move || contract().map(|c| c.description.clone())}</p>
            <div class="params">
                {move || contract().map(|c| c.parameters.iter().map(|(name, p)| {
                    let key = name.clone();
                    let key2 = name.clone();
                    let default = match &p.default { Json::Null => "none".to_owned(), v => v.to_string() };
                    let input = match (p.kind, &p.choices) {
                        (_, Some(choices)) => {
                            let opts = choices.iter().map(|c| {
                                let s = c.as_str().map(str::to_owned).unwrap_or_else(|| c.to_string());
                                view! { <option value=s.clone()>{s.clone()}</option> }
                            }).collect_view();
                            view! {
                                <select data-param=key.clone() on:change=move |e| values.update(|m| { m.insert(key.clone(), event_target_value(&e).into()); })>
                                    <option value="">"(default)"</option>{opts}
                                </select>
                            }.into_any()
                        }
                        (pt_snap_query::ParamType::Bool, None) => view! {
                            <select data-param=key.clone() on:change=move |e| values.update(|m| { m.insert(key.clone(), event_target_value(&e).into()); })>
                                <option value="">"(default)"</option><option value="true">"true"</option><option value="false">"false"</option>
                            </select>
                        }.into_any(),
                        (kind, None) => view! {
                            <input data-param=key.clone() type=if matches!(kind, pt_snap_query::ParamType::Str) { "text" } else { "number" }
                                step=if matches!(kind, pt_snap_query::ParamType::Float) { "any" } else { "1" }
                                placeholder=default.clone()
                                on:input=move |e| values.update(|m| { m.insert(key.clone(), event_target_value(&e).into()); })/>
                        }.into_any(),
                    };
                    view! {
                        <label class="param">
                            <span class="param-name">{key2}{p.required.then_some(" *")}<span class="muted">{format!(" {} · default {default}", p.kind.name())}</span></span>
                            {input}
                            <span class="muted small">{p.description.clone()}</span>
                        </label>
                    }
                }).collect_view())}
            </div>
            <div class="form-row">
                <button class="button primary" type="submit" data-testid="run-template">"Run"</button>
                <BudgetField/>
                <code class="cli" data-testid="cli-command">{cli_preview}</code>
                <button class="button" type="button" on:click=move |_| {
                    let text = cli_preview();
                    let _ = window().navigator().clipboard().write_text(&text);
                }>"Copy as CLI command"</button>
            </div>
        </form>
        {move || result.get().map(|r| match r {
            None => pending("Running the template…"),
            Some(Err(f)) => error_box(&f),
            Some(Ok(t)) => paged_table(t, page, PAGE).into_any(),
        })}
    }
}

/// The time budget of one question, shared by every view (the CLI's `--timeout`).
#[component]
fn BudgetField() -> impl IntoView {
    let state = expect_context::<AppState>();
    let text = RwSignal::new(fmt::seconds(state.budget_s.get_untracked()));
    let invalid = RwSignal::new(false);
    view! {
        <label class="field" title="How long one question may run before it stops with QUERY_TIMEOUT (the CLI's --timeout)">
            "Time limit "
            <input type="number" min="0.1" step="any" class="narrow" data-testid="budget-input"
                class:invalid=move || invalid.get()
                prop:value=move || text.get()
                on:input=move |e| text.set(event_target_value(&e))
                on:change=move |e| match fmt::parse_seconds(&event_target_value(&e)) {
                    Some(s) => { invalid.set(false); state.budget_s.set(s); }
                    None => invalid.set(true),
                }/>
            " s"
        </label>
    }
}

fn paged_table(t: Table, page: RwSignal<usize>, size: usize) -> impl IntoView {
    let n = t.rows.len();
    let pages = n.div_ceil(size).max(1);
    let summary = format!(
        "{} rows returned; total {}{}{}",
        fmt::grouped(n as i64),
        if t.total_is_exact { "" } else { "at least " },
        fmt::grouped(t.total),
        if t.has_more {
            " — more rows exist than were fetched"
        } else if t.truncated {
            " — the template's own row limit cut the answer"
        } else {
            ""
        }
    );
    let columns = t.columns.clone();
    let rows = t.rows;
    let note = t.note;
    view! {
        <section class="panel">
            <p class="muted" data-testid="result-summary">{summary}{note.map(|n| format!(" {n}"))}</p>
            <div class="scroll">
                <table class="grid results" data-testid="result-table">
                    <thead><tr>{columns.iter().map(|c| view! { <th>{c.clone()}</th> }).collect_view()}</tr></thead>
                    <tbody>
                        {move || {
                            let p = page.get();
                            rows.iter().skip(p * size).take(size).map(|r| view! {
                                <tr>{r.iter().map(cell).collect_view()}</tr>
                            }).collect_view()
                        }}
                    </tbody>
                </table>
            </div>
            <div class="pager">
                <button class="button small" disabled=move || page.get() == 0 on:click=move |_| page.update(|p| *p = p.saturating_sub(1))>"‹ Prev"</button>
                <span>{move || format!("page {} / {pages}", page.get() + 1)}</span>
                <button class="button small" disabled=move || { page.get() + 1 >= pages } on:click=move |_| page.update(|p| *p += 1)>"Next ›"</button>
            </div>
        </section>
    }
}

fn cell(v: &Json) -> impl IntoView {
    match v {
        Json::Null => view! { <td class="muted">"null"</td> }.into_any(),
        Json::Number(n) => view! { <td class="num">{n.to_string()}</td> }.into_any(),
        Json::String(s) if s.contains('\n') => {
            let last = s.lines().last().unwrap_or("").to_owned();
            view! { <td class="stack"><details><summary>{last}</summary><pre>{s.clone()}</pre></details></td> }.into_any()
        }
        Json::String(s) => view! { <td>{s.clone()}</td> }.into_any(),
        other => view! { <td>{other.to_string()}</td> }.into_any(),
    }
}

#[component]
pub fn SqlView() -> impl IntoView {
    let state = expect_context::<AppState>();
    const CAP: usize = 1000;
    let sql = RwSignal::new(format!(
        "SELECT id, action, size, allocated, active, reserved\nFROM trace_entry_{}\nWHERE id >= 0\nORDER BY active DESC\nLIMIT 20",
        state.device.get_untracked()
    ));
    let result = RwSignal::new(None::<Reply<Table>>);
    let page = RwSignal::new(0usize);
    let asker = Asker::new();
    let run = move || {
        page.set(0);
        result.set(Some(None));
        let question = question::Sql {
            sql: sql.get_untracked(),
            cap: CAP,
        };
        asker.ask(question, state.budget_s.get_untracked(), move |answer| {
            result.set(Some(Some(answer)))
        });
    };
    view! {
        <form class="panel" on:submit=move |e| { e.prevent_default(); run(); }>
            <p class="muted">{format!("Read-only SQL over the SnapshotDB (at most {CAP} rows). Ctrl+Enter runs.")}</p>
            <textarea data-testid="sql-input" class="sql" rows="7" spellcheck="false" aria-label="SQL statement"
                prop:value=move || sql.get()
                on:input=move |e| sql.set(event_target_value(&e))
                on:keydown=move |e: web_sys::KeyboardEvent| if e.key() == "Enter" && (e.ctrl_key() || e.meta_key()) { e.prevent_default(); run(); }>
            </textarea>
            <div class="form-row">
                <button class="button primary" type="submit" data-testid="run-sql">"Run"</button>
                <BudgetField/>
            </div>
        </form>
        {move || result.get().map(|r| match r {
            None => pending("Running the statement…"),
            Some(Err(f)) => error_box(&f),
            Some(Ok(t)) => paged_table(t, page, 50).into_any(),
        })}
    }
}
