//! The capture banner: what the open file's capture cannot answer, and how to capture
//! better — `overview`'s capture warnings for the selected device (or the file's, when it
//! has no trace event at all), from `pt_snap_report::capture` through the worker.

use leptos::prelude::*;
use pt_snap_engine::question;

use crate::state::AppState;
use crate::views::PeaksReply;

#[component]
pub fn CaptureBanner() -> impl IntoView {
    let state = expect_context::<AppState>();
    let peaks = expect_context::<PeaksReply>();
    // Asked once the peaks are in: the peak cards come first, and this one question's
    // passes over the trace wait for them in the worker's queue.
    let peaks_in = Memo::new(move |_| peaks.with(Option::is_some));
    let check = state.watch(move |device| {
        peaks_in.get().then_some(())?;
        Some(question::Capture { device })
    });
    move || {
        let Some(Ok(check)) = check.get() else {
            return None;
        };
        if check.warnings.is_empty() {
            // Answered, and nothing to say: a hook for the tests, nothing on screen.
            return Some(view! { <span hidden data-testid="capture-checked"></span> }.into_any());
        }
        let n = check.warnings.len();
        Some(
            view! {
                <div class="capture-banner" role="note" data-testid="capture-warnings">
                    <strong>{if n == 1 {
                        "This capture cannot answer everything:".to_owned()
                    } else {
                        format!("This capture cannot answer everything ({n} warnings):")
                    }}</strong>
                    <ul>
                        {check.warnings.into_iter().map(|w| {
                            let code = w.code.clone();
                            view! {
                                <li data-testid="capture-warning" data-code=code>
                                    <code>{w.code}</code>" "<span>{w.message}</span>
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                </div>
            }
            .into_any(),
        )
    }
}
