//! The Segments view: the allocator's segments right after the selected event (the map of
//! `pt-snap report segments`, drawn by the same component, `www/segments/`), and under it
//! the reserved segments over events (memory_viz's "Active Cached Segment Timeline") on the
//! timelines' x-axis. Both follow the event and window every view shares: a click on a
//! block of the map selects the event that allocated it, a click on the segment timeline
//! the event under the pointer.
//!
//! The worker replays the state to the event from the nearest checkpoint it kept and sends
//! the component's compact data as JSON text, parsed by JavaScript in one task and drawn in
//! the next (on a canvas, the rows in view only), so no task of the page's grows with the
//! trace.

use std::cell::RefCell;

use leptos::html;
use leptos::prelude::*;
use pt_snap_engine::{question, Failure};
use pt_snap_query::bucket_index;
use pt_snap_report::allocations::{Allocations, Item};
use pt_snap_report::units::grouped;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::WheelEvent;

use crate::band_chart::{self, at_event, css, events_text, paler, Chart, COLUMNS, SELECTED};
use crate::fmt;
use crate::state::AppState;
use crate::timeline::W;
use crate::views::{active_peak_event, error_box, event_form, pending, PeaksReply, Redraw};

#[wasm_bindgen]
extern "C" {
    /// `www/segments/segments.js`, the same component as `report segments --format html`.
    #[wasm_bindgen(js_namespace = PtSnapSegments, js_name = render, catch)]
    fn segments_render(
        container: &web_sys::HtmlElement,
        data: &JsValue,
        options: &JsValue,
    ) -> Result<JsValue, JsValue>;
}

/// The map on screen and the callback it selects events through; destroyed (and the
/// callback dropped) before another is drawn or the view goes away.
struct Drawn {
    view: JsValue,
    _select: Closure<dyn Fn(f64)>,
}

thread_local! {
    static MAP: RefCell<Option<Drawn>> = const { RefCell::new(None) };
}

fn destroy_map() {
    MAP.with(|m| {
        if let Some(drawn) = m.borrow_mut().take() {
            if let Ok(destroy) = js_sys::Reflect::get(&drawn.view, &"destroy".into()) {
                if let Some(destroy) = destroy.dyn_ref::<js_sys::Function>() {
                    let _ = destroy.call0(&drawn.view);
                }
            }
        }
    });
}

/// How far the map's rows were scrolled, so the next event's map opens where the last
/// one was read (a click on a block far down must not throw the reader back to the top).
fn map_scroll(host: &web_sys::HtmlElement) -> Option<web_sys::Element> {
    host.query_selector(".ps-map").ok().flatten()
}

#[component]
pub fn SegmentsView() -> impl IntoView {
    let state = expect_context::<AppState>();
    let peak_event = active_peak_event(expect_context::<PeaksReply>());
    let event = move || state.event.get().or_else(|| peak_event.get());
    let map = state.watch(move |device| {
        Some(question::Segments {
            device,
            event_id: event()?,
        })
    });
    let container = NodeRef::<html::Div>::new();
    let failure = RwSignal::new(None::<Failure>);
    let redraw = Redraw::new(failure);
    Effect::new(move |_| {
        let answer = map.get();
        let Some(host) = container.get() else { return };
        let scrolled = map_scroll(&host).map_or(0, |m| m.scroll_top());
        let json = match answer {
            // The last map stays while the next event's is replayed.
            None => {
                redraw.supersede();
                return;
            }
            Some(Err(f)) => {
                redraw.supersede();
                destroy_map();
                failure.set(Some(f));
                return;
            }
            Some(Ok(json)) => json,
        };
        failure.set(None);
        redraw.in_two_tasks(
            move || js_sys::JSON::parse(&json),
            move |data| {
                destroy_map();
                let select = Closure::<dyn Fn(f64)>::new(move |e: f64| {
                    state.event.set(Some(e as i64));
                });
                let options = js_sys::Object::new();
                let _ = js_sys::Reflect::set(&options, &"onSelectEvent".into(), select.as_ref());
                let _ = js_sys::Reflect::set(&options, &"maxHeight".into(), &"60vh".into());
                // Applied by the component once the frame has laid the map out: set here,
                // right after it is built, the scroll would force that layout in this task.
                let _ = js_sys::Reflect::set(&options, &"scrollTop".into(), &scrolled.into());
                let view = segments_render(&host, &data, &options)?;
                MAP.with(|m| {
                    *m.borrow_mut() = Some(Drawn {
                        view,
                        _select: select,
                    })
                });
                Ok(())
            },
        );
    });
    on_cleanup(move || {
        redraw.supersede();
        destroy_map();
    });
    view! {
        {event_form(event, "segments-event", view! {
            <span class="muted small">"The allocator's segments right after the event, as "<code>"pt-snap report segments"</code>" replays them."</span>
        })}
        {move || match (event(), map.with(Option::is_none)) {
            (None, _) => Some(view! { <p class="muted">"This device has no events to choose from."</p> }.into_any()),
            (Some(_), true) => Some(pending("Replaying the allocator's segments…")),
            _ => failure.get().map(|f| error_box(&f)),
        }}
        <section class="panel segments-host">
            <div node_ref=container></div>
        </section>
        <SegmentTimelinePanel/>
    }
}

const CHART: Chart = Chart { height: 200 };
/// Segments kept exactly; the rest fold into one band per stream.
const TOP: usize = 2000;

/// Stream colours (the first is the default stream's).
const STREAMS: [[u8; 3]; 6] = [
    [58, 111, 176],
    [46, 160, 103],
    [155, 89, 182],
    [224, 115, 58],
    [22, 160, 170],
    [199, 92, 150],
];

fn stream_colour(key: u16) -> [u8; 3] {
    STREAMS[usize::from(key) % STREAMS.len()]
}

/// Segments told apart: every other band (in the answer's order, which stacks them, so
/// neighbours mostly differ) a shade lighter.
fn shade(rgb: [u8; 3], band: usize) -> [u8; 3] {
    if band.is_multiple_of(2) {
        rgb
    } else {
        paler(rgb, 5)
    }
}

/// The item under a pointer: which column, and which segment or folded stream there.
#[derive(Debug, Clone, PartialEq)]
struct Hit {
    column: usize,
    item: Option<Item>,
}

/// The segment timeline `drawn` on `canvas`, on a scale of `top` bytes, with the selected
/// event's column marked.
fn draw(
    canvas: NodeRef<html::Canvas>,
    drawn: Memo<Option<Allocations>>,
    top: i64,
    mark: Option<usize>,
) -> Result<(), JsValue> {
    drawn.with_untracked(|a| {
        let (Some(a), Some(canvas)) = (a, canvas.get_untracked()) else {
            return;
        };
        let mut pixels = CHART.pixels();
        let x_of = |c: usize| crate::timeline::PAD as usize + c;
        a.each_stacked(|c, item, from, to| {
            if c >= COLUMNS {
                return;
            }
            let (y_top, y_bottom) = (CHART.y_of(to, top), CHART.y_of(from, top));
            let rgb = match item {
                // The folded segments of a stream: its colour, paler still.
                Item::Rest(k) => paler(stream_colour(k), 12),
                Item::Band(i) => shade(stream_colour(a.bands[i].key), i),
            };
            pixels.paint(x_of(c), y_top, y_bottom.max(y_top + 1), rgb);
        });
        if let Some(c) = mark.filter(|&c| c < COLUMNS) {
            pixels.paint(x_of(c), 0, CHART.height, SELECTED);
        }
        pixels.put(&canvas);
    });
    Ok(())
}

#[component]
fn SegmentTimelinePanel() -> impl IntoView {
    let state = expect_context::<AppState>();
    let canvas = NodeRef::<html::Canvas>::new();
    let hover = RwSignal::new(None::<Hit>);
    let asked = state.watch(move |device| {
        Some(question::SegmentTimeline {
            device,
            window: state.window.get(),
            columns: COLUMNS,
            top: TOP,
        })
    });
    // The last picture stays while the next window is answered.
    let drawn = Memo::new(
        move |previous: Option<&Option<Allocations>>| match asked.get() {
            Some(Ok(a)) => Some(a),
            Some(Err(_)) => None,
            None => previous.cloned().flatten(),
        },
    );
    let top = Memo::new(move |_| drawn.with(|a| a.as_ref().map_or(1, |a| a.top().max(1))));
    // The selected event's column, marked across the chart.
    let selected_column = move || {
        let e = state.event.get()?;
        drawn.with(|a| {
            let a = a.as_ref()?;
            let (lo, hi) = a.window?;
            (lo..=hi)
                .contains(&e)
                .then(|| bucket_index((lo, hi), a.columns, e))
                .flatten()
        })
    };
    // Drawn in a task of its own: the answer's task decodes it and updates the panel.
    let failure = RwSignal::new(None::<Failure>);
    let redraw = Redraw::new(failure);
    Effect::new(move |_| {
        let top = top.get();
        let mark = selected_column();
        drawn.track();
        redraw.in_two_tasks(|| Ok(()), move |()| draw(canvas, drawn, top, mark));
    });
    on_cleanup(move || {
        redraw.supersede();
    });
    // Where the pointer is, in columns and bytes.
    let hit_at = move |e: &web_sys::MouseEvent| -> Option<Hit> {
        let (column, bytes) = CHART.pointer(e, top.get_untracked())?;
        drawn.with_untracked(|a| {
            Some(Hit {
                column,
                item: band_chart::item_at(a.as_ref()?, column, bytes),
            })
        })
    };
    let on_move = move |e: web_sys::PointerEvent| {
        let hit = hit_at(&e);
        if hover.get_untracked() != hit {
            hover.set(hit);
        }
    };
    // A click selects the event under the pointer: the map above shows the segments there.
    let on_click = move |e: web_sys::MouseEvent| {
        let Some(hit) = hit_at(&e) else { return };
        let events = drawn.with_untracked(|a| a.as_ref()?.column_events(hit.column));
        if let Some((first, _)) = events {
            state.event.set(Some(first));
        }
    };
    let on_wheel = move |e: WheelEvent| {
        let now = drawn.with_untracked(|a| {
            let a = a.as_ref()?;
            Some((a.bounds?, a.window?))
        });
        band_chart::zoom(state.window, &e, now);
    };
    let readout = move || {
        let hit = hover.get()?;
        drawn.with(|a| {
            let a = a.as_ref()?;
            let events = events_text(a, hit.column)?;
            Some(match hit.item {
                None => format!("{events} · click to see the segments there"),
                Some(Item::Rest(k)) => format!(
                    "{events} · {} of smaller segments on {}, folded: the {} largest are drawn one by one",
                    fmt::bytes(a.rest[usize::from(k)][hit.column]),
                    a.keys[usize::from(k)],
                    a.bands.len()
                ),
                Some(Item::Band(i)) => {
                    let b = a.bands[i];
                    let s = b.block;
                    format!(
                        "{events} · segment at {:#x} · {} · {} · reserved {} · released {}",
                        s.address,
                        fmt::bytes(s.size),
                        a.keys[usize::from(b.key)],
                        at_event(s.alloc, "before the trace"),
                        at_event(s.free, "never"),
                    )
                }
            })
        })
    };
    view! {
        <section class="panel allocations segment-timeline" data-testid="segment-timeline">
            <div class="panel-head">
                <h2>"Segment timeline"</h2>
                <span class="muted small">"Reserved segments over events (memory_viz's “Active Cached Segment Timeline”): each segment a band from the event that reserved it to the one that released it."</span>
                {move || asked.with(Option::is_none).then(|| view! {
                    <span class="spinner small" role="status" aria-label="Drawing the window" data-testid="segment-timeline-loading"></span>
                })}
            </div>
            {move || match asked.get() {
                Some(Err(f)) => Some(error_box(&f)),
                _ => failure.get().map(|f| error_box(&f)),
            }}
            <div class="tl-plot">
                {band_chart::y_axis(move |part| {
                    drawn.with(|a| a.is_some().then(|| fmt::bytes((top.get() as f64 * part) as i64)))
                })}
                <canvas class="allocations-chart segment-chart" data-testid="segment-timeline-chart" node_ref=canvas width=W as u32 height=CHART.height as u32
                    data-window=move || drawn.with(|a| a.as_ref().and_then(|a| a.window).map(|(x, y)| format!("{x}-{y}")))
                    data-bands=move || drawn.with(|a| a.as_ref().map(|a| a.bands.len().to_string()))
                    data-segments=move || drawn.with(|a| a.as_ref().map(|a| a.live_blocks.to_string()))
                    on:pointermove=on_move on:pointerleave=move |_| hover.set(None)
                    on:click=on_click on:wheel=on_wheel></canvas>
            </div>
            <p class="small readout" data-testid="segment-timeline-readout">
                {move || readout().unwrap_or_else(|| "Point at a band to see its segment; click to see the segments at that event in the map above. Wheel zooms (with the timelines of the overview).".to_owned())}
            </p>
            {move || drawn.with(|a| a.as_ref().map(|a| view! {
                <div class="legend small">
                    {a.keys.iter().enumerate().map(|(k, name)| view! {
                        // An SVG fill, not a style attribute: the page's CSP allows no inline style.
                        <span><svg class="swatch" width="10" height="10" aria-hidden="true"><rect width="10" height="10" rx="2" fill=css(stream_colour(k as u16))></rect></svg>{name.clone()}</span>
                    }).collect_view()}
                    <span class="muted">{if a.bands.len() as u64 >= a.live_blocks {
                        format!(
                            "All {} segments reserved in this window, drawn one by one, every other a shade lighter.",
                            grouped(a.live_blocks as i64),
                        )
                    } else {
                        format!(
                            "{} of the {} segments reserved in this window drawn one by one, every other a shade lighter; the paler band at the bottom folds the rest.",
                            grouped(a.bands.len() as i64),
                            grouped(a.live_blocks as i64),
                        )
                    }}</span>
                </div>
            }))}
        </section>
    }
}
