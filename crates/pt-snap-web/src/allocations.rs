//! The allocation timeline, memory_viz's main view: every block live in the window a band
//! stacked over event ids, the largest kept exactly and the rest folded into one grey band
//! (`pt_snap_report::allocations`). Drawn into a canvas pixel by pixel (a column per pixel,
//! so millions of events cost what a thousand columns cost), under the counter timeline
//! and on its x-axis: both follow `AppState::window`, so zoom and pan in either move both.

use leptos::html;
use leptos::prelude::*;
use pt_snap_engine::{question, AllocationView};
use pt_snap_report::allocations::{Colour, Item};
use pt_snap_report::units::grouped;
use wasm_bindgen::JsCast;
use web_sys::{PointerEvent, WheelEvent};

use crate::band_chart::{self, at_event, css, events_text, paler, Chart, COLUMNS, SELECTED};
use crate::fmt;
use crate::state::AppState;
use crate::timeline::{set_window, PAD, W};

const CHART: Chart = Chart { height: 240 };
const DETAILS: [usize; 3] = [100, 500, 2000];

/// Allocation-site colours, told apart at a glance in light and dark.
const PALETTE: [[u8; 3]; 12] = [
    [47, 128, 237],
    [224, 115, 58],
    [46, 160, 103],
    [155, 89, 182],
    [231, 76, 60],
    [22, 160, 170],
    [241, 176, 41],
    [94, 114, 228],
    [199, 92, 150],
    [120, 160, 40],
    [160, 110, 70],
    [70, 130, 160],
];
const REST: [u8; 3] = [190, 196, 205];
/// `MEMORY_CATEGORIES`' colours, in its order (unknown last, grey).
const CATEGORY_COLOURS: [[u8; 3]; 8] = [
    [47, 128, 237],
    [155, 89, 182],
    [46, 160, 103],
    [224, 115, 58],
    [241, 176, 41],
    [22, 160, 170],
    [160, 110, 70],
    [140, 148, 160],
];

fn site_colour(callstack: Option<i64>) -> [u8; 3] {
    match callstack {
        // Fibonacci hashing spreads neighbouring ids over the palette.
        Some(id) => {
            PALETTE
                [((id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60) as usize % PALETTE.len()]
        }
        None => [150, 150, 150],
    }
}

/// The item under a pointer: which column, and which band or folded key there.
#[derive(Debug, Clone, PartialEq)]
struct Hit {
    column: usize,
    item: Item,
    bytes: i64,
}

#[component]
pub fn AllocationPanel() -> impl IntoView {
    let state = expect_context::<AppState>();
    let detail = RwSignal::new(DETAILS[1]);
    let colour = RwSignal::new(Colour::Category);
    let selected = RwSignal::new(None::<i64>);
    let hover = RwSignal::new(None::<Hit>);
    let canvas = NodeRef::<html::Canvas>::new();
    let asked = state.watch(move |device| {
        Some(question::Allocations {
            device,
            window: state.window.get(),
            columns: COLUMNS,
            top: detail.get(),
            colour: colour.get(),
            rules: state.category_rules.get().map(|r| r.1),
        })
    });
    // The last picture stays while the next window is answered.
    let view_memo = Memo::new(
        move |previous: Option<&Option<AllocationView>>| match asked.get() {
            Some(Ok(v)) => Some(v),
            Some(Err(_)) => None,
            None => previous.cloned().flatten(),
        },
    );
    let top = Memo::new(move |_| {
        view_memo.with(|v| v.as_ref().map_or(1, |v| v.allocations.top().max(1)))
    });
    Effect::new(move |_| {
        let sel = selected.get();
        let top = top.get();
        view_memo.with(|v| {
            let (Some(v), Some(canvas)) = (v, canvas.get()) else {
                return;
            };
            let a = &v.allocations;
            let mut pixels = CHART.pixels();
            let by_category = a.keys.len() > 1;
            a.each_stacked(|c, item, from, to| {
                if c >= COLUMNS {
                    return;
                }
                let x = PAD as usize + c;
                let (y_top, y_bottom) = (CHART.y_of(to, top), CHART.y_of(from, top));
                let rgb = match item {
                    Item::Rest(k) if by_category => {
                        paler(CATEGORY_COLOURS[usize::from(k).min(7)], 11)
                    }
                    Item::Rest(_) => REST,
                    Item::Band(i) => {
                        let b = &a.bands[i];
                        if Some(b.block.block) == sel {
                            SELECTED
                        } else if by_category {
                            CATEGORY_COLOURS[usize::from(b.key).min(7)]
                        } else {
                            site_colour(b.block.callstack)
                        }
                    }
                };
                pixels.paint(x, y_top, y_bottom.max(y_top + 1), rgb);
                // A darker edge on top of each band tall enough to keep one.
                if y_bottom > y_top + 3 {
                    pixels.paint(x, y_top, y_top + 1, rgb.map(|v| v / 2));
                }
            });
            pixels.put(&canvas);
        });
    });
    // Where the pointer is, in columns and bytes.
    let hit_at = move |e: &web_sys::MouseEvent| -> Option<Hit> {
        let (column, bytes) = CHART.pointer(e, top.get_untracked())?;
        view_memo.with_untracked(|v| {
            let item = band_chart::item_at(&v.as_ref()?.allocations, column, bytes)?;
            Some(Hit {
                column,
                item,
                bytes,
            })
        })
    };
    // `(pointer x at press, window at press, moved)` while the button is down: a drag pans
    // both timelines, as a drag on the counter timeline does.
    let drag = RwSignal::new(None::<(f64, (i64, i64), bool)>);
    let bounds_and_window = move || {
        view_memo.with_untracked(|v| {
            let a = &v.as_ref()?.allocations;
            Some((a.bounds?, a.window?))
        })
    };
    let on_down = move |e: PointerEvent| {
        if e.button() != 0 {
            return;
        }
        if let Some((_, window)) = bounds_and_window() {
            drag.set(Some((e.client_x() as f64, window, false)));
        }
    };
    let on_move = move |e: PointerEvent| {
        if let Some((x0, (lo, hi), moved)) = drag.get_untracked() {
            let dx = e.client_x() as f64 - x0;
            if moved || dx.abs() >= 4.0 {
                drag.set(Some((x0, (lo, hi), true)));
                let el: Option<web_sys::Element> =
                    e.current_target().and_then(|t| t.dyn_into().ok());
                if let (Some(el), Some(((first, last), _))) = (el, bounds_and_window()) {
                    let width = el.get_bounding_client_rect().width().max(1.0);
                    let shift = (-dx / width * W / (W - 2.0 * PAD) * (hi - lo) as f64).round();
                    set_window(state.window, first, last, lo + shift as i64, hi - lo);
                }
                return;
            }
        }
        let hit = hit_at(&e);
        if hover.get_untracked() != hit {
            hover.set(hit);
        }
    };
    // A click (a press that did not drag) selects the block and its allocation event,
    // which every view follows.
    let on_click = move |e: web_sys::MouseEvent| {
        let dragged = drag.get_untracked().is_some_and(|d| d.2);
        drag.set(None);
        if dragged {
            return;
        }
        let Some(Hit {
            item: Item::Band(i),
            ..
        }) = hit_at(&e)
        else {
            selected.set(None);
            return;
        };
        let block = view_memo.with_untracked(|v| v.as_ref().map(|v| v.allocations.bands[i].block));
        if let Some(b) = block {
            selected.set(Some(b.block));
            if b.alloc >= 0 {
                state.event.set(Some(b.alloc));
            }
        }
    };
    let on_wheel = move |e: WheelEvent| band_chart::zoom(state.window, &e, bounds_and_window());
    let readout = move || {
        let hit = hover.get()?;
        view_memo.with(|v| {
            let v = v.as_ref()?;
            let a = &v.allocations;
            let events = events_text(a, hit.column).unwrap_or_default();
            Some(match hit.item {
                Item::Rest(k) => format!(
                    "{events} · {} folded into “{}”: the blocks smaller than the {} kept",
                    fmt::bytes(a.rest[k as usize][hit.column]),
                    a.keys[k as usize],
                    a.bands.len()
                ),
                Item::Band(i) => {
                    let b = a.bands[i].block;
                    let site = b
                        .callstack
                        .and_then(|id| v.sites.iter().find(|s| s.0 == id))
                        .map_or(
                            if b.alloc < 0 {
                                "no call stack (live before the trace)"
                            } else {
                                "no call stack"
                            },
                            |s| s.1.as_str(),
                        );
                    let category = match v.rules.binary_search_by_key(&b.block, |r| r.0) {
                        Ok(k) => format!("{} [{}] · ", a.keys[usize::from(a.bands[i].key)], v.rules[k].1),
                        Err(_) => String::new(),
                    };
                    format!(
                        "{events} · block {} · {category}{} at {:#x} · allocated {} · freed {} · {site}",
                        b.block,
                        fmt::bytes(b.size),
                        b.address,
                        at_event(b.alloc, "before the trace"),
                        at_event(b.free, "never"),
                    )
                }
            })
        })
    };
    view! {
        <section class="panel allocations" data-testid="allocations">
            <div class="panel-head">
                <h2>"Allocation timeline"</h2>
                <label class="field">"Colour by "
                    <select data-testid="allocations-colour" on:change=move |e| {
                        colour.set(if event_target_value(&e) == "site" { Colour::Site } else { Colour::Category });
                    }>
                        <option value="category" selected=true>"category"</option>
                        <option value="site">"allocation site"</option>
                    </select>
                </label>
                <label class="field">"Blocks kept exactly "
                    <select data-testid="allocations-detail" on:change=move |e| {
                        if let Ok(n) = event_target_value(&e).parse() {
                            detail.set(n);
                        }
                    }>
                        {DETAILS.into_iter().map(|n| view! {
                            <option value=n.to_string() selected=n == DETAILS[1]>{n.to_string()}</option>
                        }).collect_view()}
                    </select>
                </label>
                <Show when=move || colour.get() == Colour::Category><crate::oom::RulesPicker/></Show>
                {move || asked.with(Option::is_none).then(|| view! {
                    <span class="spinner small" role="status" aria-label="Drawing the window" data-testid="allocations-loading"></span>
                })}
            </div>
            {move || match asked.get() {
                Some(Err(f)) => Some(crate::views::error_box(&f)),
                _ => None,
            }}
            <div class="tl-plot">
                {band_chart::y_axis(move |part| {
                    view_memo.with(|v| v.is_some().then(|| fmt::bytes((top.get() as f64 * part) as i64)))
                })}
                <canvas class="allocations-chart" data-testid="allocations-chart" node_ref=canvas width=W as u32 height=CHART.height as u32
                    data-window=move || view_memo.with(|v| v.as_ref().and_then(|v| v.allocations.window).map(|(a, b)| format!("{a}-{b}")))
                    data-colour=move || view_memo.with(|v| v.as_ref().map(|v| if v.allocations.keys.len() > 1 { "category" } else { "site" }))
                    data-bands=move || view_memo.with(|v| v.as_ref().map(|v| v.allocations.bands.len().to_string()))
                    data-live=move || view_memo.with(|v| v.as_ref().map(|v| v.allocations.live_blocks.to_string()))
                    data-selected=move || selected.get().map(|b| b.to_string())
                    on:pointerdown=on_down on:pointermove=on_move
                    on:pointerleave=move |_| { hover.set(None); drag.set(None); }
                    on:click=on_click on:wheel=on_wheel></canvas>
            </div>
            <p class="small readout" data-testid="allocations-readout">
                {move || readout().unwrap_or_else(|| "Point at a band to see its block; click it to select the block and its allocation event in every view. Wheel zooms (with the timeline above).".to_owned())}
            </p>
            {move || view_memo.with(|v| v.as_ref().filter(|v| v.allocations.keys.len() > 1).map(|v| view! {
                <div class="legend small" data-testid="allocations-categories">
                    {v.allocations.keys.iter().enumerate().map(|(k, name)| view! {
                        // An SVG fill, not a style attribute: the page's CSP allows no inline style.
                        <span><svg class="swatch" width="10" height="10" aria-hidden="true"><rect width="10" height="10" rx="2" fill=css(CATEGORY_COLOURS[k.min(7)])></rect></svg>{name.clone()}</span>
                    }).collect_view()}
                    <span class="muted">"(paler: the folded blocks) · a heuristic from the allocation stack: the rule is in the readout, see docs/categories.md"</span>
                </div>
            }))}
            <p class="muted small" data-testid="allocations-legend">
                {move || view_memo.with(|v| v.as_ref().map(|v| {
                    let a = &v.allocations;
                    format!(
                        "The {} largest of the {} blocks live in this window are drawn exactly, stacked in allocation order; the other {} are folded into the bands at the bottom. A column covering several events stacks every block live after any of them, so it can stand above the active counter there.",
                        grouped(a.bands.len() as i64),
                        grouped(a.live_blocks as i64),
                        grouped(a.live_blocks as i64 - a.bands.len() as i64),
                    )
                }))}
            </p>
        </section>
    }
}
