//! Why the run ran out of memory: `report oom` in the browser. A banner over every view
//! whenever the file has an `oom` event, and the OOM view explaining each one — the request,
//! the verdict with its arithmetic, the free space by pool and stream, and what was live, by
//! callstack group and by category. Every figure is the report's (`question::Oom`).

use leptos::prelude::*;
use pt_snap_engine::question;
use pt_snap_report::oom::{FreeSummary, OomEvent, Verdict};
use pt_snap_report::units::grouped;
use pt_snap_report::OomReport;
use wasm_bindgen::JsCast;

use crate::client::Reply;
use crate::fmt;
use crate::link::Tab;
use crate::state::AppState;
use crate::views::{bytes_cell, error_box, pending, stack_body, stack_details};

/// The file's OOM report: every device's, so asked once per file and category rules, not
/// again for another device.
#[derive(Clone, Copy)]
pub struct OomReply {
    reply: RwSignal<Reply<OomReport>>,
    /// The open file's last report answered. The banner and the tab read this one, so they
    /// stay while the report is asked again: other category rules change what was live, never
    /// whether the run ran out of memory.
    known: RwSignal<Option<OomReport>>,
}

pub fn oom_signal(state: AppState) -> OomReply {
    let reply = crate::client::watch(state.budget_s.into(), move || {
        state.generation();
        Some(question::Oom {
            rules: state.category_rules.get().map(|r| r.1),
        })
    });
    let known = RwSignal::new(None);
    Effect::new(move |_| {
        state.generation();
        known.set(None);
    });
    Effect::new(move |_| {
        if let Some(Ok(report)) = reply.get() {
            known.set(Some(report));
        }
    });
    OomReply { reply, known }
}

/// Whether the file has an `oom` event (false until its report is first in).
pub fn has_oom(reply: OomReply) -> bool {
    reply
        .known
        .with(|r| r.as_ref().is_some_and(|r| !r.events.is_empty()))
}

fn verdict_text(v: Verdict) -> &'static str {
    match v {
        Verdict::Fragmentation => "fragmentation: enough memory was free, but no single block could hold the request",
        Verdict::Capacity => "capacity: all the free memory together was short of the request",
        Verdict::OtherPoolsOrStreams => "other pools or streams held the free memory, which this request cannot use",
        Verdict::BlockFits => "a cached free block could have held it: the replayed state differs from the allocator's",
        Verdict::Unknown => "unknown: device_free was not recorded, and the cached free memory alone does not decide",
    }
}

/// Above every view: the first OOM's verdict, and the way to the OOM view.
#[component]
pub fn OomBanner() -> impl IntoView {
    let state = expect_context::<AppState>();
    let reply = expect_context::<OomReply>();
    move || {
        reply.known.with(|r| {
            let report = r.as_ref()?;
            let first = report.events.first()?;
            let n = report.events.len();
            Some(view! {
                <div class="oom-banner" role="status" data-testid="oom-banner" data-verdict=first.verdict.name()>
                    <strong>{if n == 1 { "This run ran out of memory.".to_owned() } else { format!("This run ran out of memory {n} times.") }}</strong>
                    <span>{format!(
                        " Device {}, event {}: {} requested — {}.",
                        first.device, first.event_id, fmt::bytes(first.requested_bytes), verdict_text(first.verdict)
                    )}</span>
                    <button class="button small" data-testid="oom-explain" class:hidden=move || state.tab.get() == Tab::Oom
                        on:click=move |_| state.tab.set(Tab::Oom)>"Explain"</button>
                </div>
            })
        })
    }
}

fn free_row(label: String, f: &FreeSummary) -> impl IntoView {
    view! {
        <tr>
            <td>{label}</td>
            <td class="num">{bytes_cell(f.total_bytes)}</td>
            <td class="num">{bytes_cell(f.largest_block_bytes)}</td>
            <td class="num">{f.blocks.to_string()}</td>
            <td class="num">{f.blocks_fitting.to_string()}</td>
        </tr>
    }
}

fn event_card(e: OomEvent) -> impl IntoView {
    let state = expect_context::<AppState>();
    let (device, event_id) = (e.device, e.event_id);
    let others: Vec<_> = e
        .others
        .iter()
        .map(|((pool, stream), f)| free_row(format!("{} pool, stream {stream}", pool.name()), f))
        .collect();
    let live_total: i64 = e.categories.rows.iter().map(|r| r.bytes).sum();
    view! {
        <section class="panel oom-event" data-testid="oom-event" data-device=device.to_string() data-event=event_id.to_string()
            data-verdict=e.verdict.name()>
            <div class="panel-head">
                <h2>{format!("Device {device} · event {event_id}")}</h2>
                <span class="oom-links">
                    <button class="link" on:click=move |_| {
                        state.device.set(device);
                        state.event.set(Some(event_id));
                        state.tab.set(Tab::Tree);
                    }>"Memory tree there"</button>
                    <button class="link" data-testid="oom-segments" on:click=move |_| {
                        state.device.set(device);
                        state.event.set(Some(event_id));
                        state.tab.set(Tab::Segments);
                    }>"Segment map there"</button>
                </span>
            </div>
            <div class="oom-request">
                <div><span class="muted">"Requested "</span><strong>{fmt::bytes(e.requested_bytes)}</strong>
                    <span class="muted">{format!(" ({} B, rounded to {} B; a new segment would be {}) · {} pool · stream {}",
                        grouped(e.requested_bytes), grouped(e.rounded_bytes), fmt::bytes(e.segment_bytes), e.pool.name(), e.stream)}</span></div>
                <div><span class="muted">"device_free (free on the device, as the allocator saw it): "</span>
                    {e.device_free.map_or_else(|| "not recorded".to_owned(), |b| format!("{} ({} B)", fmt::bytes(b), grouped(b)))}</div>
                <div><span class="muted">{format!("Just before (event {}): ", e.before.event_id)}</span>
                    {format!("allocated {} · active {} · reserved {}", fmt::bytes(e.before.allocated), fmt::bytes(e.before.active), fmt::bytes(e.before.reserved))}</div>
            </div>
            <div class=format!("oom-verdict v-{}", e.verdict.name()) data-testid="oom-verdict">
                <strong>{e.verdict.name().replace('_', " ")}</strong>
                <span>{format!(" — {}", e.arithmetic)}</span>
            </div>
            <h3>"Free space inside reserved segments"</h3>
            <table class="grid">
                <thead><tr><th>"where"</th><th class="num">"free"</th><th class="num">"largest block"</th><th class="num">"blocks"</th><th class="num">"could hold it"</th></tr></thead>
                <tbody>
                    {free_row(format!("{} pool, stream {} (the request's)", e.pool.name(), e.stream), &e.own)}
                    {others}
                </tbody>
            </table>
            <div class="two">
                <div>
                    <h3>"Live by category"</h3>
                    <p class="muted small">"A heuristic from each block's allocation stack; the rule that matched is in brackets (docs/categories.md)."</p>
                    <RulesPicker/>
                    <table class="grid" data-testid="oom-categories">
                        <tbody>
                        {e.categories.rows.iter().map(|r| view! {
                            <tr><td>{r.category.clone()}</td><td class="muted small">{format!("[{}]", r.rule)}</td>
                                <td class="num">{bytes_cell(r.bytes)}</td>
                                <td class="num">{r.percent_of_live_bytes.map(|p| format!("{p:.1}%"))}</td></tr>
                        }).collect_view()}
                        </tbody>
                    </table>
                    <p class="muted small">{format!("Every block live at the event: {}.", fmt::bytes(live_total))}</p>
                </div>
                <div>
                    <h3>"Largest live blocks"</h3>
                    <table class="grid">
                        <thead><tr><th class="num">"size"</th><th class="num">"address"</th><th class="num">"allocated at"</th></tr></thead>
                        <tbody>
                        {e.largest_blocks.iter().map(|b| view! {
                            <tr><td class="num">{bytes_cell(b.size)}</td><td class="num">{format!("{:#x}", b.address)}</td>
                                <td class="num">{if b.alloc_event_id < 0 { "before the trace".to_owned() } else { b.alloc_event_id.to_string() }}</td></tr>
                        }).collect_view()}
                        </tbody>
                    </table>
                </div>
            </div>
            <h3>"Live by callstack group"</h3>
            <table class="grid">
                <thead><tr><th class="num">"bytes"</th><th class="num">"blocks"</th><th>"kind"</th><th>"allocated at"</th></tr></thead>
                <tbody>
                {e.groups.iter().map(|g| view! {
                    <tr><td class="num">{bytes_cell(g.size_bytes)}</td><td class="num">{g.block_count.to_string()}</td>
                        <td class="small">{g.category.clone()}</td>
                        <td class="wrap small stack">{stack_details(g.label(), g.callstack.clone())}</td></tr>
                }).collect_view()}
                </tbody>
            </table>
            {match pt_snap_report::stack::label_text(&e.callstack) {
                Some(label) => view! {
                    <details class="oom-stack stack"><summary>"The failing request's stack: "
                        <span data-testid="oom-request-label">{label}</span></summary>
                        {stack_body(e.callstack.clone())}</details>
                }.into_any(),
                None => view! { <p class="muted small" data-testid="oom-request-label">"The failing request's stack: none recorded."</p> }.into_any(),
            }}
        </section>
    }
}

#[component]
pub fn OomView() -> impl IntoView {
    let reply = expect_context::<OomReply>();
    move || {
        match reply.reply.get() {
        None => pending("Explaining the OOM…"),
        Some(Err(f)) => view! { {error_box(&f)} <RulesPicker/> }.into_any(),
        Some(Ok(report)) if report.events.is_empty() => view! {
            <p class="panel muted" data-testid="oom-none">"No oom event in this file: the allocator never failed while the trace was recorded."</p>
        }
        .into_any(),
        Some(Ok(report)) => view! {
            <p class="muted small oom-intro">
                "What " <code>"pt-snap report oom"</code> " says: for each " <code>"oom"</code>
                " event, the request, the free space the allocator had in its reserved segments of the request's pool and stream (and elsewhere), a verdict with its arithmetic, and what was live."
            </p>
            {report.events.into_iter().map(event_card).collect_view()}
        }
        .into_any(),
    }
    }
}

/// Which memory-category rules the views judge with: the built-in ones, or a rules file of
/// the user's in the form `--categories` reads (docs/categories.md), read here and sent to
/// the worker with each question.
#[component]
pub fn RulesPicker() -> impl IntoView {
    let state = expect_context::<AppState>();
    let on_pick = move |e: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = e.target().expect("an input").unchecked_into();
        let Some(file) = input.files().and_then(|f| f.get(0)) else {
            return;
        };
        input.set_value("");
        wasm_bindgen_futures::spawn_local(async move {
            let text = wasm_bindgen_futures::JsFuture::from(file.text()).await;
            if let Some(text) = text.ok().and_then(|t| t.as_string()) {
                state.category_rules.set(Some((file.name(), text)));
            }
        });
    };
    view! {
        <div class="rules-picker small" data-testid="rules-picker">
            <span class="muted">"Category rules: "</span>
            <strong data-testid="rules-name">{move || state.category_rules.with(|r| r.as_ref().map_or("built-in".to_owned(), |r| r.0.clone()))}</strong>
            <label class="button small">"Load rules…"
                <input class="visually-hidden" type="file" accept=".toml,text/plain" data-testid="rules-input" on:change=on_pick/>
            </label>
            <Show when=move || state.category_rules.with(Option::is_some)>
                <button class="button small" data-testid="rules-builtin" on:click=move |_| state.category_rules.set(None)>"Built-in"</button>
            </Show>
        </div>
    }
}
