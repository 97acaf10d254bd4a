//! What the two stacked-band charts share (the allocation timeline's blocks and the segment
//! timeline's segments, both [`pt_snap_report::allocations::Allocations`]): a canvas `W`
//! wide with a column per pixel between the counter timeline's paddings, so all three
//! timelines share x; bytes on y from 0 to the window's top; a pointer read back into a
//! column and bytes; and the wheel zooming the window every timeline follows.

use leptos::prelude::*;
use pt_snap_report::allocations::{Allocations, Item};
use wasm_bindgen::{Clamped, JsCast};
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, MouseEvent, WheelEvent};

use crate::fmt;
use crate::timeline::{set_window, PAD, W};

/// Columns: one per pixel between the counter timeline's paddings.
pub const COLUMNS: usize = W as usize - 2 * PAD as usize;
/// Room above the window's top, so its highest band does not touch the edge.
const TOP_PAD: usize = 8;
/// The selected event's or block's colour.
pub const SELECTED: [u8; 3] = [20, 24, 33];

/// A chart `height` pixels tall (its width is `W`).
#[derive(Clone, Copy)]
pub struct Chart {
    pub height: usize,
}

impl Chart {
    /// The pixel row of `bytes` when the chart's top stands for `top` bytes.
    pub fn y_of(self, bytes: i64, top: i64) -> usize {
        let usable = (self.height - TOP_PAD) as f64;
        self.height
            - ((bytes as f64 / top as f64) * usable)
                .round()
                .clamp(0.0, usable) as usize
    }

    /// The column and bytes under the pointer of `e` (on the chart's canvas); `None` in
    /// the paddings.
    pub fn pointer(self, e: &MouseEvent, top: i64) -> Option<(usize, i64)> {
        let el: web_sys::Element = e.current_target()?.dyn_into().ok()?;
        let rect = el.get_bounding_client_rect();
        let px = (e.client_x() as f64 - rect.left()) / rect.width().max(1.0) * W;
        let py = (e.client_y() as f64 - rect.top()) / rect.height().max(1.0) * self.height as f64;
        let column = (px - PAD).floor();
        if column < 0.0 || column >= COLUMNS as f64 {
            return None;
        }
        let usable = (self.height - TOP_PAD) as f64;
        Some((
            column as usize,
            ((self.height as f64 - py) / usable * top as f64) as i64,
        ))
    }

    /// A blank picture to paint the columns into.
    pub fn pixels(self) -> Pixels {
        Pixels {
            height: self.height,
            rgba: vec![0; W as usize * self.height * 4],
        }
    }
}

/// The band (or folded key) of `a` at `bytes` in `column`.
pub fn item_at(a: &Allocations, column: usize, bytes: i64) -> Option<Item> {
    (a.stack_at(column).into_iter())
        .find(|(_, from, to)| (*from..*to).contains(&bytes))
        .map(|(item, _, _)| item)
}

/// A chart's picture, painted a column at a time and put on its canvas in one call.
pub struct Pixels {
    height: usize,
    rgba: Vec<u8>,
}

impl Pixels {
    /// Paints rows `y0..y1` of canvas column `x`.
    pub fn paint(&mut self, x: usize, y0: usize, y1: usize, rgb: [u8; 3]) {
        for y in y0..y1.min(self.height) {
            let i = (y * W as usize + x) * 4;
            self.rgba[i..i + 4].copy_from_slice(&[rgb[0], rgb[1], rgb[2], 255]);
        }
    }

    pub fn put(&self, canvas: &HtmlCanvasElement) {
        let Ok(Some(ctx)) = canvas.get_context("2d") else {
            return;
        };
        let Ok(ctx) = ctx.dyn_into::<CanvasRenderingContext2d>() else {
            return;
        };
        if let Ok(image) = web_sys::ImageData::new_with_u8_clamped_array_and_sh(
            Clamped(&self.rgba),
            W as u32,
            self.height as u32,
        ) {
            let _ = ctx.put_image_data(&image, 0.0, 0.0);
        }
    }
}

/// The wheel over a chart zooms `window` (every timeline's) about the pointer, within the
/// trace's `bounds`; `now` is `(bounds, window)` as the chart last drew them.
pub fn zoom(
    window: RwSignal<Option<(i64, i64)>>,
    e: &WheelEvent,
    now: Option<((i64, i64), (i64, i64))>,
) {
    e.prevent_default();
    let Some(el) = e
        .current_target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
    else {
        return;
    };
    let Some(((first, last), (lo, hi))) = now else {
        return;
    };
    let rect = el.get_bounding_client_rect();
    let px = (e.client_x() as f64 - rect.left()) / rect.width().max(1.0) * W;
    let anchor = ((px - PAD) / (W - 2.0 * PAD)).clamp(0.0, 1.0);
    let factor = if e.delta_y() < 0.0 { 0.8 } else { 1.25 };
    let width =
        (((hi - lo) as f64 * factor).round() as i64).clamp(20.min(last - first), last - first);
    let pivot = lo as f64 + anchor * (hi - lo) as f64;
    let start = (pivot - anchor * width as f64).round() as i64;
    set_window(window, first, last, start, width);
}

/// `rgb` mixed with white, `parts` twentieths of the way: a folded band's paler colour.
pub fn paler(rgb: [u8; 3], parts: u16) -> [u8; 3] {
    rgb.map(|v| (v as u16 + (255 - v as u16) * parts / 20) as u8)
}

/// A colour as CSS, for an SVG swatch's fill (the page's CSP allows no inline style).
pub fn css(rgb: [u8; 3]) -> String {
    format!("rgb({},{},{})", rgb[0], rgb[1], rgb[2])
}

/// The events a column covers, as a readout starts ([`fmt::events`]).
pub fn events_text(a: &Allocations, column: usize) -> Option<String> {
    a.column_events(column).map(|(x, y)| fmt::events(x, y))
}

/// The y axis beside a plot: `label(1.0)` at the top, `label(0.5)` half way, 0 at the
/// bottom; `label` gives `None` while nothing is drawn.
pub fn y_axis(
    label: impl Fn(f64) -> Option<String> + Copy + Send + Sync + 'static,
) -> impl IntoView {
    view! {
        <div class="tl-yaxis small muted" aria-hidden="true">
            <span>{move || label(1.0)}</span>
            <span>{move || label(0.5)}</span>
            <span>"0"</span>
        </div>
    }
}

/// When a band starts or ends, as the readouts say it (`-1`: beyond the trace).
pub fn at_event(event: i64, otherwise: &str) -> String {
    if event < 0 {
        otherwise.to_owned()
    } else {
        format!("at event {event}")
    }
}
