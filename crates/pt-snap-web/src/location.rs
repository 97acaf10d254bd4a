//! The page's address: a deep link (`#device=…&event=…&view=…`, `#sample`) followed into
//! the page or edited while a file is open, and the current choice written back as it
//! changes, without a history entry.

use leptos::ev;
use leptos::prelude::*;

use crate::link::{self, parse_hash, Tab};
use crate::opened::Opened;
use crate::state::AppState;

/// Applies the URL's deep link to `opened`: the first file opened (a link followed into the
/// page) or the open one on `hashchange`. A device it lacks falls back to the current one,
/// then to its lowest; an event outside that device's trace falls back to the active peak.
/// A later file keeps the device and view but not the event, which belonged to the file
/// before.
pub fn apply_link(state: AppState, opened: &Opened, with_event: bool) {
    let link = parse_hash(&window().location().hash().unwrap_or_default());
    let current = state.device.get_untracked();
    let device = [link.device, Some(current)]
        .into_iter()
        .flatten()
        .find(|d| opened.devices().contains(d))
        .or_else(|| opened.devices().first().copied())
        .unwrap_or(0);
    let bounds = opened
        .bounds()
        .iter()
        .find(|(d, _)| *d == device)
        .and_then(|(_, b)| *b);
    let event = link
        .event
        .filter(|_| with_event)
        .filter(|e| bounds.is_some_and(|(lo, hi)| (lo..=hi).contains(e)));
    if state.device.get_untracked() != device {
        state.device.set(device);
    }
    if state.event.get_untracked() != event {
        state.event.set(event);
    }
    if let Some(tab) = link.view {
        if state.tab.get_untracked() != tab {
            state.tab.set(tab);
        }
    }
}

/// Writes the current choice into the URL without a history entry (and without firing
/// `hashchange`).
fn write_hash(sample: bool, device: i64, event: Option<i64>, tab: Tab) {
    let hash = link::hash(sample, device, event, tab);
    if window().location().hash().ok().as_deref() == Some(hash.as_str()) {
        return;
    }
    if let Ok(history) = window().history() {
        let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&hash));
    }
}

/// Keeps the URL and the page in step: a link edited or followed while a file is open moves
/// the page there (before that, the hash waits for the file), and each choice is written
/// back.
pub fn follow(state: AppState) {
    let _ = window_event_listener(ev::hashchange, move |_| {
        if let Some(opened) = state.opened.get_untracked() {
            apply_link(state, &opened, true);
            // What could not be followed (an unknown device or event) leaves the URL too.
            write_hash(
                state.sample.get_untracked(),
                state.device.get_untracked(),
                state.event.get_untracked(),
                state.tab.get_untracked(),
            );
        }
    });
    Effect::new(move |_| {
        if state.opened.with(Option::is_some) {
            // Read to be run again on each choice; written from the state as it is then.
            let _choice = (state.device.get(), state.event.get(), state.tab.get());
            // Written once the next frame has laid the page out: `replaceState` right after
            // a view is swapped in forces that layout within the click's own task.
            request_animation_frame(move || {
                set_timeout(
                    move || {
                        if state.opened.with_untracked(Option::is_some) {
                            write_hash(
                                state.sample.get_untracked(),
                                state.device.get_untracked(),
                                state.event.get_untracked(),
                                state.tab.get_untracked(),
                            );
                        }
                    },
                    std::time::Duration::ZERO,
                )
            });
        }
    });
}
