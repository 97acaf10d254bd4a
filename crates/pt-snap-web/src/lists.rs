//! The block views: leak candidates (`leak_detection`), blocks alive at the selected event
//! (`active_blocks_at_event`) and freed-block lifetimes (`freed_block_lifetime`). Each runs
//! its template from the shared registry, pages the answer, and opens an allocation's stack
//! on demand (the `event` template at its `allocEventId`).

use leptos::prelude::*;
use serde_json::{Map, Value as Json};
use wasm_bindgen::JsCast;

use pt_snap_engine::{question, Failure, Table};

use crate::client::{self, Asker};
use crate::fmt;
use crate::link::Tab;
use crate::state::AppState;
use crate::views::{
    active_peak_event, bytes_cell, error_box, grid_table, include_static_field, pending,
    stack_body, PeaksReply,
};

const PAGE: i64 = 50;
/// `leak_detection` has no offset, so its pages are cut from one capped answer.
const LEAK_CAP: i64 = 5000;

/// The template's own description and the limits that apply to a single SnapshotDB.
fn contract_note(template: &str) -> impl IntoView {
    let (description, limits) = pt_snap_engine::contract_notes(template);
    let limits: Vec<String> = limits
        .into_iter()
        .filter(|l| !l.starts_with("Dataset") && !l.starts_with("Standalone"))
        .collect();
    view! {
        <p class="muted">
            {description} " "
            <span class="small">"(template " <code>{template.to_owned()}</code> ")"</span>
        </p>
        {(!limits.is_empty()).then(|| view! {
            <ul class="limits small muted">{limits.into_iter().map(|l| view! { <li>{l}</li> }).collect_view()}</ul>
        })}
    }
}

/// A template's table, asked again whenever what `params` reads changes.
fn watch_template(
    state: AppState,
    template: &'static str,
    params: impl Fn() -> Option<Map<String, Json>> + 'static,
    max_rows: i64,
    exact_total: bool,
) -> RwSignal<client::Reply<Table>> {
    state.watch(move |device| {
        Some(question::Template {
            device,
            template: template.to_owned(),
            params: params()?,
            max_rows,
            exact_total,
        })
    })
}

/// A row's value by column name.
fn col<'a>(t: &Table, row: &'a [Json], name: &str) -> Option<&'a Json> {
    t.columns
        .iter()
        .position(|c| c == name)
        .and_then(|i| row.get(i))
}

fn int(t: &Table, row: &[Json], name: &str) -> i64 {
    col(t, row, name).and_then(Json::as_i64).unwrap_or(0)
}

/// A link that selects `event` and shows the memory tree after it.
fn event_link(state: AppState, event: i64) -> AnyView {
    if event < 0 {
        return view! { <span class="muted" title="no captured event (-1)">"–"</span> }.into_any();
    }
    view! {
        <button class="link num" title="Select this event and show the memory tree after it"
            on:click=move |_| { state.event.set(Some(event)); state.tab.set(Tab::Tree); }>{event}</button>
    }
    .into_any()
}

/// The allocating stack of a block, fetched the first time it is opened.
#[component]
fn StackCell(alloc_event: i64) -> impl IntoView {
    let state = expect_context::<AppState>();
    if alloc_event < 0 {
        return view! { <span class="muted small">"no allocation captured (static or pre-existing block)"</span> }
            .into_any();
    }
    let stack = RwSignal::new(None::<Result<Option<(String, String)>, Failure>>);
    let asker = Asker::new();
    let on_toggle = move |e: leptos::ev::Event| {
        let open = e
            .target()
            .and_then(|t| t.dyn_into::<web_sys::HtmlDetailsElement>().ok())
            .is_some_and(|d| d.open());
        if open && stack.with_untracked(Option::is_none) {
            let device = state.device.get_untracked();
            let question = question::Event {
                device,
                id: alloc_event,
            };
            asker.ask(question, state.budget_s.get_untracked(), move |answer| {
                stack.set(Some(answer.map(|e| {
                    e.and_then(|e| {
                        let label = e.label.unwrap_or_default();
                        e.callstack.map(|s| (label, s))
                    })
                })))
            });
        }
    };
    view! {
        <details class="stack" on:toggle=on_toggle>
            <summary>{move || match stack.get() {
                Some(Ok(Some((label, _)))) => label,
                Some(Ok(None)) => "no stack recorded".to_owned(),
                Some(Err(_)) => "stack unavailable".to_owned(),
                None => "allocation stack".to_owned(),
            }}</summary>
            {move || match stack.get() {
                Some(Ok(Some((_, s)))) => stack_body(s).into_any(),
                Some(Err(f)) => error_box(&f),
                _ => ().into_any(),
            }}
        </details>
    }
    .into_any()
}

fn pager(page: RwSignal<i64>, pages: i64) -> impl IntoView {
    view! {
        <div class="pager">
            <button class="button small" data-testid="page-prev" disabled=move || page.get() == 0
                on:click=move |_| page.update(|p| *p = (*p - 1).max(0))>"‹ Prev"</button>
            <span data-testid="page-label">{move || format!("page {} / {}", page.get() + 1, pages.max(1))}</span>
            <button class="button small" data-testid="page-next" disabled=move || { page.get() + 1 >= pages }
                on:click=move |_| page.update(|p| *p += 1)>"Next ›"</button>
        </div>
    }
}

/// One page of a block list: its `grid results` table (`head`: the header cells, `rows`: the
/// page's rows), scrolling sideways, and the pager under it.
fn paged_table(
    testid: &'static str,
    head: impl IntoView,
    rows: impl IntoView,
    page: RwSignal<i64>,
    pages: i64,
) -> impl IntoView {
    view! {
        <div class="scroll">{grid_table("grid results", Some(testid), head, rows)}</div>
        {pager(page, pages)}
    }
}

fn parse_bytes(text: &str) -> i64 {
    text.trim().parse::<i64>().unwrap_or(0).max(0)
}

#[component]
pub fn LeaksView() -> impl IntoView {
    let state = expect_context::<AppState>();
    let min_size = RwSignal::new(0i64);
    let min_text = RwSignal::new("0".to_owned());
    let page = RwSignal::new(0i64);
    let answer = watch_template(
        state,
        "leak_detection",
        move || {
            let mut params = Map::new();
            params.insert("min_size".into(), min_size.get().into());
            Some(params)
        },
        LEAK_CAP,
        true,
    );
    Effect::new(move |_| {
        answer.track();
        page.set(0);
    });
    view! {
        <section class="panel">
            <h2>"Leak candidates"</h2>
            {contract_note("leak_detection")}
            <form class="form-row" on:submit=move |e| { e.prevent_default(); min_size.set(parse_bytes(&min_text.get_untracked())); }>
                <label class="field">"Minimum size (bytes) "
                    <input type="number" min="0" step="1" class="narrow" data-testid="leaks-min-size"
                        prop:value=move || min_text.get()
                        on:input=move |e| min_text.set(event_target_value(&e))
                        on:change=move |e| min_size.set(parse_bytes(&event_target_value(&e)))/>
                </label>
                <button class="button" type="submit">"Apply"</button>
            </form>
        </section>
        {move || match answer.get() {
            None => pending("Looking for blocks never freed…"),
            Some(Err(f)) => error_box(&f),
            Some(Ok(t)) => {
                let shown = t.rows.len() as i64;
                let listed: i64 = t.rows.iter().map(|r| int(&t, r, "size")).sum();
                let pages = (shown + PAGE - 1) / PAGE;
                let summary = if t.total == 0 {
                    "No leak candidates: every captured allocation has a recorded free.".to_owned()
                } else if shown < t.total {
                    format!("{} candidates; the {} largest are listed here ({} in all).",
                        fmt::grouped(t.total), fmt::grouped(shown), fmt::bytes(listed))
                } else {
                    format!("{} candidates, {} in all.", fmt::grouped(t.total), fmt::bytes(listed))
                };
                let rows = t.rows.clone();
                let total = t.total;
                view! {
                    <section class="panel">
                        <p data-testid="leaks-summary" data-total=total.to_string()>
                            {summary} " " <span class="muted small">"Largest first."</span>
                        </p>
                        {paged_table(
                            "leaks-table",
                            view! {
                                <th class="num">"block"</th><th class="num">"size"</th><th>"address"</th>
                                <th class="num">"allocated at event"</th><th>"where allocated"</th>
                            },
                            move || {
                                let p = page.get();
                                rows.iter().skip((p * PAGE) as usize).take(PAGE as usize).map(|r| {
                                    let alloc = int(&t, r, "allocEventId");
                                    view! {
                                        <tr>
                                            <td class="num">{int(&t, r, "id")}</td>
                                            <td class="num">{bytes_cell(int(&t, r, "size"))}</td>
                                            <td><code>{format!("{:#x}", int(&t, r, "address"))}</code></td>
                                            <td class="num">{event_link(state, alloc)}</td>
                                            <td><StackCell alloc_event=alloc/></td>
                                        </tr>
                                    }
                                }).collect_view()
                            },
                            page,
                            pages,
                        )}
                    </section>
                }.into_any()
            }
        }}
    }
}

#[component]
pub fn BlocksView() -> impl IntoView {
    let state = expect_context::<AppState>();
    let peak_event = active_peak_event(expect_context::<PeaksReply>());
    let event = Memo::new(move |_| state.event.get().or_else(|| peak_event.get()));
    let include_static = RwSignal::new(true);
    let min_size = RwSignal::new(0i64);
    let order_by = RwSignal::new("size".to_owned());
    let order_dir = RwSignal::new("DESC".to_owned());
    let page = RwSignal::new(0i64);
    // Any other question starts again at the first page.
    Effect::new(move |_| {
        state.generation();
        event.track();
        include_static.track();
        min_size.track();
        order_by.track();
        order_dir.track();
        page.set(0);
    });
    let answer = watch_template(
        state,
        "active_blocks_at_event",
        move || {
            let e = event.get()?;
            let mut params = Map::new();
            params.insert("event_id".into(), e.into());
            params.insert("include_static".into(), include_static.get().into());
            params.insert("min_size".into(), min_size.get().into());
            params.insert("order_by".into(), order_by.get().into());
            params.insert("order_dir".into(), order_dir.get().into());
            params.insert("limit".into(), PAGE.into());
            params.insert("offset".into(), (page.get() * PAGE).into());
            Some(params)
        },
        PAGE,
        true,
    );
    let input = RwSignal::new(String::new());
    Effect::new(move |_| input.set(event.get().map(|e| e.to_string()).unwrap_or_default()));
    let go = move || {
        if let Ok(e) = input.get_untracked().trim().parse::<i64>() {
            state.event.set(Some(e));
        }
    };
    view! {
        <section class="panel">
            <h2 data-testid="blocks-event">{move || match (state.event.get(), event.get()) {
                (Some(e), _) => format!("Blocks alive after event {e}"),
                (None, Some(e)) => format!("Blocks alive after event {e} (the active peak)"),
                (None, None) => "Blocks alive at an event".to_owned(),
            }}</h2>
            {contract_note("active_blocks_at_event")}
            <form class="form-row" on:submit=move |e| { e.prevent_default(); go(); }>
                <label class="field">"After event "
                    <input type="number" class="narrow" data-testid="blocks-event-input" prop:value=move || input.get()
                        on:input=move |e| input.set(event_target_value(&e))/>
                </label>
                <button class="button" type="submit">"Show"</button>
                <button class="button" type="button" on:click=move |_| state.event.set(None)>"Active peak"</button>
                <label class="field">"Min size "
                    <input type="number" min="0" class="narrow" prop:value=move || min_size.get().to_string()
                        on:change=move |e| min_size.set(parse_bytes(&event_target_value(&e)))/>
                </label>
                <label class="field">"Sort by "
                    <select data-testid="blocks-order" on:change=move |e| order_by.set(event_target_value(&e))>
                        {["size", "requestedSize", "allocEventId", "freeEventId", "id"].map(|k| view! {
                            <option value=k selected=move || order_by.get() == k>{k}</option>
                        }).into_iter().collect_view()}
                    </select>
                    <select aria-label="Sort direction" on:change=move |e| order_dir.set(event_target_value(&e))>
                        <option value="DESC">"largest first"</option>
                        <option value="ASC">"smallest first"</option>
                    </select>
                </label>
                {include_static_field(include_static)}
            </form>
        </section>
        {move || match (event.get(), answer.get()) {
            (None, _) => view! { <p class="muted">"This device has no events to choose from."</p> }.into_any(),
            (Some(_), None) => pending("Listing the live blocks…"),
            (Some(_), Some(Err(f))) => error_box(&f),
            (Some(_), Some(Ok(t))) => {
                let pages = (t.total + PAGE - 1) / PAGE;
                let first = page.get_untracked() * PAGE;
                view! {
                    <section class="panel">
                        <p data-testid="blocks-summary" data-total=t.total.to_string()>
                            {format!("{} blocks", fmt::grouped(t.total))}
                            {(t.total > 0).then(|| format!("; rows {}–{} shown", first + 1, first + t.rows.len() as i64))}
                        </p>
                        {paged_table(
                            "blocks-table",
                            view! {
                                <th class="num">"block"</th><th class="num">"size"</th><th class="num">"requested"</th>
                                <th>"address"</th><th>"kind"</th><th class="num">"allocated at"</th><th class="num">"freed at"</th>
                                <th>"where allocated"</th>
                            },
                            t.rows.iter().map(|r| {
                                let alloc = int(&t, r, "allocEventId");
                                let kind = col(&t, r, "category").and_then(Json::as_str).unwrap_or("").to_owned();
                                let label = match kind.as_str() {
                                    "dynamic_live_at_event" => "allocated in trace",
                                    "static" => "static",
                                    "preexisting_live_at_event" => "pre-existing",
                                    other => other,
                                }.to_owned();
                                view! {
                                    <tr>
                                        <td class="num">{int(&t, r, "id")}</td>
                                        <td class="num">{bytes_cell(int(&t, r, "size"))}</td>
                                        <td class="num">{bytes_cell(int(&t, r, "requestedSize"))}</td>
                                        <td><code>{format!("{:#x}", int(&t, r, "address"))}</code></td>
                                        <td class="kind" title=kind>{label}</td>
                                        <td class="num">{event_link(state, alloc)}</td>
                                        <td class="num">{event_link(state, int(&t, r, "freeEventId"))}</td>
                                        <td><StackCell alloc_event=alloc/></td>
                                    </tr>
                                }
                            }).collect_view(),
                            page,
                            pages,
                        )}
                    </section>
                }.into_any()
            }
        }}
    }
}

#[component]
pub fn LifetimesView() -> impl IntoView {
    let state = expect_context::<AppState>();
    let answer = watch_template(
        state,
        "freed_block_lifetime",
        || Some(Map::new()),
        -1,
        false,
    );
    view! {
        <section class="panel">
            <h2>"Freed-block lifetimes"</h2>
            {contract_note("freed_block_lifetime")}
        </section>
        {move || match answer.get() {
            None => pending("Measuring lifetimes…"),
            Some(Err(f)) => error_box(&f),
            Some(Ok(t)) => {
                let rows: Vec<(String, i64, i64)> = t.rows.iter().map(|r| (
                    col(&t, r, "lifetime_events").and_then(Json::as_str).unwrap_or("").to_owned(),
                    int(&t, r, "block_count"),
                    int(&t, r, "size_bytes"),
                )).collect();
                let blocks: i64 = rows.iter().map(|r| r.1).sum();
                let bytes: i64 = rows.iter().map(|r| r.2).sum();
                let max_blocks = rows.iter().map(|r| r.1).max().unwrap_or(0).max(1) as f64;
                let max_bytes = rows.iter().map(|r| r.2).max().unwrap_or(0).max(1) as f64;
                let share = |v: i64, of: i64| if of > 0 { format!("{:.1}%", v as f64 * 100.0 / of as f64) } else { "–".into() };
                view! {
                    <section class="panel">
                        <p data-testid="lifetimes-summary">
                            {format!("{} freed blocks", fmt::grouped(blocks))} ", " {bytes_cell(bytes)}
                            " freed in all. A lifetime is the number of events between a block's allocation and its free."
                        </p>
                        {if rows.is_empty() {
                            view! { <p class="muted">"No block was both allocated and freed within the trace."</p> }.into_any()
                        } else {
                            grid_table(
                                "grid lifetimes",
                                Some("lifetimes-table"),
                                view! {
                                    <th>"lifetime (events)"</th><th class="num">"blocks"</th><th class="bar-col"></th>
                                    <th class="num">"bytes freed"</th><th class="bar-col"></th>
                                },
                                rows.into_iter().map(|(label, n, size)| view! {
                                        <tr>
                                            <td><code>{label}</code></td>
                                            <td class="num" title=share(n, blocks)>{fmt::grouped(n)}</td>
                                            <td class="bar-col"><span class="bar count" style:width=format!("{:.1}%", n as f64 / max_blocks * 100.0)></span></td>
                                            <td class="num">{bytes_cell(size)}</td>
                                            <td class="bar-col"><span class="bar bytes" style:width=format!("{:.1}%", size as f64 / max_bytes * 100.0)></span></td>
                                        </tr>
                                    }).collect_view(),
                            ).into_any()
                        }}
                    </section>
                }.into_any()
            }
        }}
    }
}
