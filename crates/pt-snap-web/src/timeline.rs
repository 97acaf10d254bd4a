//! The timeline of allocated/active/reserved over event ids: zoom (wheel, buttons, `+`/`-`),
//! pan (drag, buttons, arrow keys), reset (button, `0`), the three peaks marked, and a click
//! that selects the event under the pointer. The series comes downsampled from the shared
//! library with each bucket's minimum and maximum, so no peak vanishes at any zoom.

use leptos::prelude::*;
use pt_snap_engine::question;
use pt_snap_query::{Extent, Timeline, TimelineBucket};
use wasm_bindgen::JsCast;
use web_sys::{KeyboardEvent, PointerEvent, WheelEvent};

use crate::client::Reply;
use crate::fmt;
use crate::link::Tab;
use crate::state::AppState;
use crate::views::PeaksReply;

pub(crate) const W: f64 = 1000.0;
const H: f64 = 240.0;
pub(crate) const PAD: f64 = 6.0;
/// About one bucket per drawn pixel of a wide screen (also the import preview's count).
pub const BUCKETS: usize = 1000;
/// Zooming stops at this many events across the plot.
const MIN_SPAN: i64 = 20;

/// Which counters a bucket keeps, and how each is drawn.
type Counter = fn(&TimelineBucket) -> Extent;

const SERIES: [(&str, Counter); 3] = [
    ("reserved", |b| b.reserved),
    ("allocated", |b| b.allocated),
    ("active", |b| b.active),
];

/// Where the plot is: the device's events, the visible window and the value at the top.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Frame {
    first: i64,
    last: i64,
    lo: i64,
    hi: i64,
    top: f64,
}

impl Frame {
    fn of(t: &Timeline) -> Option<Frame> {
        let ((first, last), (lo, hi)) = (t.bounds?, t.window?);
        let top = t
            .buckets
            .iter()
            .map(|b| b.reserved.max.max(b.active.max).max(b.allocated.max))
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        Some(Frame {
            first,
            last,
            lo,
            hi,
            top,
        })
    }

    fn span(&self) -> f64 {
        (self.hi - self.lo).max(1) as f64
    }

    fn x(&self, id: i64) -> f64 {
        PAD + (id - self.lo) as f64 / self.span() * (W - 2.0 * PAD)
    }

    fn y(&self, v: i64) -> f64 {
        H - PAD - v as f64 / self.top * (H - 2.0 * PAD)
    }

    fn zoomed(&self) -> bool {
        (self.lo, self.hi) != (self.first, self.last)
    }
}

/// A 0..1 fraction of the plot's width at a pointer's `client_x`.
fn fraction_at(client_x: f64, el: &web_sys::Element) -> f64 {
    let rect = el.get_bounding_client_rect();
    let px = (client_x - rect.left()) / rect.width().max(1.0) * W;
    ((px - PAD) / (W - 2.0 * PAD)).clamp(0.0, 1.0)
}

/// The bucket nearest to `fraction` of the window.
fn bucket_at(t: &Timeline, f: Frame, fraction: f64) -> Option<TimelineBucket> {
    let id = f.lo + (fraction * f.span()).round() as i64;
    let i = t.buckets.partition_point(|b| b.last_id < id);
    let near = |b: &TimelineBucket| (b.first_id - id).max(id - b.last_id).max(0);
    [i.checked_sub(1), Some(i)]
        .into_iter()
        .flatten()
        .filter_map(|i| t.buckets.get(i))
        .min_by_key(|b| near(b))
        .copied()
}

fn element(e: &web_sys::Event) -> Option<web_sys::Element> {
    e.current_target()?.dyn_into().ok()
}

/// `AppState::window` is the visible id range, `None` for all events; it is kept per device
/// and file, and the allocation timeline below follows it.
/// The `<svg>` stays in place while its contents follow the window, so keyboard focus and a
/// drag in progress survive every redraw.
#[component]
pub fn TimelinePanel(peaks: PeaksReply) -> impl IntoView {
    let state = expect_context::<AppState>();
    let window = state.window;
    // The whole trace comes from the replay's preview where there is one; a zoomed window
    // is asked of the database. While a window is being answered the last picture stays.
    let previewed = Memo::new(move |_| {
        let device = state.device.get();
        if window.get().is_some() {
            return None;
        }
        state
            .opened
            .with(|o| o.as_ref()?.timeline(device, BUCKETS).cloned())
    });
    let asked = state.watch(move |device| {
        let window = window.get();
        previewed
            .with(Option::is_none)
            .then_some(question::Timeline {
                device,
                window,
                buckets: BUCKETS,
            })
    });
    let loading = move || previewed.with(Option::is_none) && asked.with(Option::is_none);
    let series = Memo::new(move |previous: Option<&Reply<Timeline>>| {
        if let Some(t) = previewed.get() {
            return Some(Ok(t));
        }
        asked.get().or_else(|| previous.cloned().flatten())
    });
    let frame = Memo::new(move |_| series.with(|s| drawn(s).and_then(Frame::of)));
    let now = move || frame.get_untracked();
    let hover = RwSignal::new(None::<TimelineBucket>);
    // `(pointer x at press, window start at press, moved)` while the button is down.
    let drag = RwSignal::new(None::<(f64, i64, bool)>);

    // Zooming keeps the id under `anchor` (a 0..1 fraction of the plot) where it is.
    let zoom = move |factor: f64, anchor: f64| {
        let Some(f) = now() else { return };
        let width = ((f.hi - f.lo) as f64 * factor).round() as i64;
        let width = width.clamp(MIN_SPAN.min(f.last - f.first), f.last - f.first);
        let pivot = f.lo as f64 + anchor * f.span();
        let start = (pivot - anchor * width as f64).round() as i64;
        set_window(window, f.first, f.last, start, width);
    };
    let pan = move |fraction: f64| {
        let Some(f) = now() else { return };
        let shift = ((f.hi - f.lo) as f64 * fraction).round() as i64;
        let shift = if shift == 0 {
            fraction.signum() as i64
        } else {
            shift
        };
        set_window(window, f.first, f.last, f.lo + shift, f.hi - f.lo);
    };
    let selected_fraction = move || {
        let f = now()?;
        state
            .event
            .get_untracked()
            .filter(|e| (f.lo..=f.hi).contains(e))
            .map(|e| (e - f.lo) as f64 / f.span())
    };

    let on_down = move |e: PointerEvent| {
        if e.button() != 0 {
            return;
        }
        if let Some(el) = element(&e) {
            let _ = el.set_pointer_capture(e.pointer_id());
        }
        if let Some(f) = now() {
            drag.set(Some((e.client_x() as f64, f.lo, false)));
        }
    };
    let on_move = move |e: PointerEvent| {
        let (Some(el), Some(f)) = (element(&e), now()) else {
            return;
        };
        match drag.get_untracked() {
            Some((x0, lo0, moved)) => {
                let dx = e.client_x() as f64 - x0;
                if !moved && dx.abs() < 4.0 {
                    return;
                }
                drag.set(Some((x0, lo0, true)));
                if f.zoomed() {
                    let width = el.get_bounding_client_rect().width().max(1.0);
                    let shift = (-dx / width * f.span()).round() as i64;
                    set_window(window, f.first, f.last, lo0 + shift, f.hi - f.lo);
                }
            }
            None => {
                let fraction = fraction_at(e.client_x() as f64, &el);
                let b = series.with_untracked(|s| drawn(s).and_then(|t| bucket_at(t, f, fraction)));
                if hover.get_untracked() != b {
                    hover.set(b);
                }
            }
        }
    };
    // A click (a press that did not drag) selects the active maximum of the bucket under the
    // pointer, so a click on a visible spike lands on the spike.
    let on_up = move |e: PointerEvent| {
        let Some((_, _, moved)) = drag.get_untracked() else {
            return;
        };
        drag.set(None);
        let (false, Some(el), Some(f)) = (moved, element(&e), now()) else {
            return;
        };
        let fraction = fraction_at(e.client_x() as f64, &el);
        let b = series.with_untracked(|s| drawn(s).and_then(|t| bucket_at(t, f, fraction)));
        if let Some(b) = b {
            state.event.set(Some(b.active.max_id));
        }
    };
    let on_wheel = move |e: WheelEvent| {
        let Some(el) = element(&e) else { return };
        e.prevent_default();
        let anchor = fraction_at(e.client_x() as f64, &el);
        zoom(if e.delta_y() < 0.0 { 0.8 } else { 1.25 }, anchor);
    };
    // Shift+arrows move the selected event by one column (one event when zoomed in fully),
    // panning when it leaves the window: selection without a pointer.
    let step_selection = move |dir: i64| {
        let Some(f) = now() else { return };
        let columns = series.with_untracked(|s| drawn(s).map_or(1, |t| t.buckets.len())) as i64;
        let step = ((f.hi - f.lo + 1) / columns.max(1)).max(1);
        let from = state
            .event
            .get_untracked()
            .filter(|e| (f.lo..=f.hi).contains(e))
            .unwrap_or(if dir > 0 { f.lo - step } else { f.hi + step });
        let next = (from + dir * step).clamp(f.first, f.last);
        if next < f.lo {
            set_window(window, f.first, f.last, next, f.hi - f.lo);
        } else if next > f.hi {
            set_window(window, f.first, f.last, next - (f.hi - f.lo), f.hi - f.lo);
        }
        state.event.set(Some(next));
    };
    let on_key = move |e: KeyboardEvent| {
        let center = selected_fraction().unwrap_or(0.5);
        match e.key().as_str() {
            "ArrowLeft" if e.shift_key() => step_selection(-1),
            "ArrowRight" if e.shift_key() => step_selection(1),
            "+" | "=" => zoom(0.5, center),
            "-" | "_" => zoom(2.0, center),
            "ArrowLeft" => pan(-0.2),
            "ArrowRight" => pan(0.2),
            "0" | "Home" => window.set(None),
            _ => return,
        }
        e.prevent_default();
    };

    let lines = move || {
        let f = frame.get()?;
        series.with(|s| {
            let t = drawn(s)?;
            Some(
                SERIES
                    .iter()
                    .map(|&(name, extent)| {
                        let mut points = String::with_capacity(t.buckets.len() * 24);
                        for b in &t.buckets {
                            let [a, z] = extent(b).in_order();
                            points.push_str(&format!("{:.1},{:.2} ", f.x(a.0), f.y(a.1)));
                            if a != z {
                                points.push_str(&format!("{:.1},{:.2} ", f.x(z.0), f.y(z.1)));
                            }
                        }
                        view! { <polyline class=format!("tl {name}") points=points></polyline> }
                    })
                    .collect_view(),
            )
        })
    };
    let marks = move || {
        let f = frame.get()?;
        let p = peaks.get()?.ok()?;
        Some(
            [
                ("allocated", p.allocated),
                ("active", p.active),
                ("reserved", p.reserved),
            ]
            .into_iter()
            .filter_map(|(name, peak)| {
                let v = peak.bytes?;
                let e = peak.event_id.filter(|e| (f.lo..=f.hi).contains(e))?;
                Some(view! {
                    <g class=format!("peak {name}") data-peak=name data-event=e.to_string()>
                        <line class="peak-mark" x1=f.x(e) x2=f.x(e) y1=PAD y2=H - PAD></line>
                        // A zero-length line with a round cap stays a circle in the stretched viewBox.
                        <line class="peak-dot" x1=f.x(e) x2=f.x(e) y1=f.y(v) y2=f.y(v)></line>
                    </g>
                })
            })
            .collect_view(),
        )
    };
    let selected_line = move || {
        let f = frame.get()?;
        let e = state.event.get().filter(|e| (f.lo..=f.hi).contains(e))?;
        Some(
            view! { <line class="selected-mark" data-testid="timeline-selected" x1=f.x(e) x2=f.x(e) y1=0.0 y2=H></line> },
        )
    };
    let hover_band = move || {
        let f = frame.get()?;
        let b = hover.get()?;
        let (x1, x2) = (f.x(b.first_id), f.x(b.last_id));
        Some(
            view! { <rect class="hover-band" x=x1 - 1.0 width=(x2 - x1) + 2.0 y=0.0 height=H></rect> },
        )
    };
    let mid_line = move || {
        let f = frame.get()?;
        let y = f.y((f.top / 2.0) as i64);
        Some(view! { <line class="grid-line" x1=0.0 x2=W y1=y y2=y></line> })
    };
    let readout = move || match hover.get() {
        Some(b) => {
            let range = fmt::events(b.first_id, b.last_id);
            let show = |e: Extent| {
                if e.min == e.max {
                    fmt::bytes(e.max)
                } else {
                    format!("{}–{}", fmt::bytes(e.min), fmt::bytes(e.max))
                }
            };
            format!(
                "{range}: allocated {}, active {}, reserved {}",
                show(b.allocated),
                show(b.active),
                show(b.reserved)
            )
        }
        None => "Point at the plot to read values.".to_owned(),
    };
    let axis = move || {
        let f = frame.get()?;
        let columns = series.with(|s| drawn(s).map_or(0, |t| t.buckets.len())) as i64;
        let events = f.hi - f.lo + 1;
        let mut note = format!("{} events", fmt::grouped(events));
        if f.zoomed() {
            note.push_str(&format!(" of {}", fmt::grouped(f.last - f.first + 1)));
        }
        if columns < events {
            note.push_str(&format!(" in {} columns", fmt::grouped(columns)));
        }
        Some(view! {
            <span data-testid="timeline-lo">{format!("event {}", f.lo)}</span>
            <span class="legend">
                <span class="key allocated">"allocated"</span>
                <span class="key active">"active"</span>
                <span class="key reserved">"reserved"</span>
                <span class="muted">{note}</span>
            </span>
            <span data-testid="timeline-hi">{format!("event {}", f.hi)}</span>
        })
    };
    let peak_buttons = move || {
        peaks.get().and_then(|p| p.ok()).map(|p| {
            [("allocated", p.allocated), ("active", p.active), ("reserved", p.reserved)]
                .into_iter()
                .filter_map(|(name, peak)| {
                    peak.event_id.map(|e| {
                        view! {
                            <button class="button small" data-testid=format!("select-peak-{name}")
                                class:current=move || state.event.get() == Some(e)
                                on:click=move |_| state.event.set(Some(e))>{format!("{name} · event {e}")}</button>
                        }
                    })
                })
                .collect_view()
        })
    };
    let zoomed = move || frame.get().is_some_and(|f| f.zoomed());
    let y_label = move |part: f64| frame.get().map(|f| fmt::bytes((f.top * part) as i64));
    let failure = move || match (series.get(), peaks.get()) {
        (Some(Err(f)), _) | (_, Some(Err(f))) => Some(crate::views::error_box(&f)),
        (None, _) => Some(crate::views::pending("Drawing the timeline…")),
        _ => None,
    };
    let empty = move || series.with(|s| drawn(s).is_some_and(|t| t.bounds.is_none()));
    view! {
        <section class="panel" aria-labelledby="timeline-title">
            <div class="panel-head">
                <h2 id="timeline-title">"Timeline"</h2>
                <span class="muted small">
                    "Each column spans its events' lowest to highest value, so no peak is lost. "
                    "Click or Shift+← / → selects an event · wheel or + / − zooms · drag or ← / → pans · 0 resets."
                </span>
            </div>
            {failure}
            <Show when=move || !empty() fallback=|| view! { <p class="muted">"This device has no real events."</p> }>
            <div class="timeline">
                <div class="tl-toolbar">
                    <span class="tl-readout small" data-testid="timeline-readout" aria-live="polite">{readout}</span>
                    {move || (loading() && series.with(Option::is_some)).then(|| view! {
                        <span class="spinner small" role="status" aria-label="Drawing the window" data-testid="timeline-loading"></span>
                    })}
                    <span class="tl-zoom">
                        <button class="button small" title="Zoom in (+)" aria-label="Zoom in" on:click=move |_| zoom(0.5, selected_fraction().unwrap_or(0.5))>"+"</button>
                        <button class="button small" title="Zoom out (−)" aria-label="Zoom out" disabled=move || !zoomed() on:click=move |_| zoom(2.0, selected_fraction().unwrap_or(0.5))>"−"</button>
                        <button class="button small" title="Pan left (←)" aria-label="Pan left" disabled=move || frame.get().is_none_or(|f| f.lo == f.first) on:click=move |_| pan(-0.2)>"←"</button>
                        <button class="button small" title="Pan right (→)" aria-label="Pan right" disabled=move || frame.get().is_none_or(|f| f.hi == f.last) on:click=move |_| pan(0.2)>"→"</button>
                        <button class="button small" data-testid="timeline-reset" title="Show all events (0)" disabled=move || !zoomed() on:click=move |_| window.set(None)>"Reset zoom"</button>
                    </span>
                </div>
                <div class="tl-plot">
                    {crate::band_chart::y_axis(y_label)}
                    <svg viewBox=format!("0 0 {W} {H}") preserveAspectRatio="none" data-testid="timeline"
                        data-window=move || frame.get().map(|f| format!("{}-{}", f.lo, f.hi))
                        data-buckets=move || series.with(|s| drawn(s).map_or(0, |t| t.buckets.len())).to_string()
                        class:zoomed=zoomed class:dragging=move || drag.get().is_some_and(|d| d.2)
                        tabindex="0" role="application" aria-keyshortcuts="+ - ArrowLeft ArrowRight Shift+ArrowLeft Shift+ArrowRight 0"
                        aria-label=move || frame.get().map(|f| format!(
                            "Allocated, active and reserved memory, events {} to {}. Plus and minus zoom, arrows pan, shift and arrows move the selected event, 0 resets.", f.lo, f.hi))
                        on:pointerdown=on_down on:pointermove=on_move on:pointerup=on_up
                        on:pointercancel=move |_| drag.set(None) on:pointerleave=move |_| hover.set(None)
                        on:wheel=on_wheel on:keydown=on_key>
                        {mid_line}
                        {hover_band}
                        {lines}
                        {marks}
                        {selected_line}
                    </svg>
                </div>
                <div class="axis">{axis}</div>
                <div class="peak-buttons"><span class="muted small">"Select a peak:"</span>{peak_buttons}</div>
                <SelectedEvent/>
            </div>
            </Show>
        </section>
    }
}

/// The timeline on screen, if there is one to draw.
fn drawn(s: &Reply<Timeline>) -> Option<&Timeline> {
    s.as_ref()?.as_ref().ok()
}

/// Moves the window to `[start, start + width]` kept inside `[first, last]`.
pub(crate) fn set_window(
    window: RwSignal<Option<(i64, i64)>>,
    first: i64,
    last: i64,
    start: i64,
    width: i64,
) {
    let width = width.clamp(0, last - first);
    let start = start.clamp(first, last - width);
    let next = (start, start + width);
    window.set(if next == (first, last) {
        None
    } else {
        Some(next)
    });
}

/// What the selected event is, and where to look at it next.
#[component]
fn SelectedEvent() -> impl IntoView {
    let state = expect_context::<AppState>();
    let info = state.watch(move |device| {
        Some(question::Event {
            device,
            id: state.event.get()?,
        })
    });
    let go = move |tab: Tab| state.tab.set(tab);
    move || {
        match state.event.get().map(|_| info.get()) {
        None => view! {
            <p class="selection muted small" data-testid="selected-event">"No event selected: the memory tree and active blocks show the active peak."</p>
        }
        .into_any(),
        Some(None) => crate::views::pending("Reading the event…"),
        Some(Some(Err(f))) => crate::views::error_box(&f),
        Some(Some(Ok(None))) => view! {
            <p class="selection muted" data-testid="selected-event">"The selected event is not in this device's trace."</p>
        }
        .into_any(),
        Some(Some(Ok(Some(e)))) => view! {
            <div class="selection" data-testid="selected-event" data-event=e.id.to_string()>
                <span><strong>{format!("Event {}", e.id)}</strong>" · " <code>{e.action.clone()}</code>
                    " of " {crate::views::bytes_cell(e.size)} " at " <code>{format!("{:#x}", e.address)}</code></span>
                <span class="muted">"after it: allocated " {crate::views::bytes_cell(e.allocated)}
                    ", active " {crate::views::bytes_cell(e.active)} ", reserved " {crate::views::bytes_cell(e.reserved)}</span>
                <span class="selection-actions">
                    <button class="button small primary" data-testid="open-tree" on:click=move |_| go(Tab::Tree)>"Memory tree here"</button>
                    <button class="button small" data-testid="open-blocks" on:click=move |_| go(Tab::Blocks)>"Active blocks here"</button>
                    <button class="button small" on:click=move |_| state.event.set(None)>"Clear"</button>
                </span>
            </div>
        }
        .into_any(),
    }
    }
}
