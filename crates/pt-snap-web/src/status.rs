//! The strip under the header: the file being read or imported with its progress and a
//! Cancel button, or the failure with its code, message and hint (and, for a trace the
//! strict replay refused, the offer to import it leniently).

use leptos::prelude::*;
use pt_snap_engine::Progress;

use crate::fmt;
use crate::loader;
use crate::state::{AppState, Status};

#[component]
pub fn StatusStrip() -> impl IntoView {
    let state = expect_context::<AppState>();
    move || {
        match state.status.get() {
            Status::Idle => ().into_any(),
            Status::Reading(name) => view! {
                <div class="status" role="status">{format!("Opening {name}…")}</div>
            }
            .into_any(),
            Status::Importing {
                name,
                progress,
                total,
            } => {
                let (value, detail) = progress_text(progress.as_ref(), total);
                view! {
                <div class="status" role="status" data-testid="import-progress">
                    <span>{format!("{name} — {detail}")}</span>
                    <progress max="1" value=value.to_string()></progress>
                    <button class="button" data-testid="cancel-import" on:click=move |_| loader::cancel(state)>"Cancel"</button>
                </div>
            }
            .into_any()
            }
            Status::Failed(f) => {
                let dismiss = move || {
                    view! {
                        <button class="button" data-testid="dismiss-error"
                            on:click=move |_| state.status.set(Status::Idle)>"Dismiss"</button>
                    }
                };
                // A trace the strict replay cannot reconcile can still be imported, approximately:
                // offered on a row of its own, beside the dismissal, in place of the hint that
                // says so.
                let offered = loader::lenient_retry_possible(&f);
                let actions = if offered {
                    view! {
                        <div class="lenient-offer" data-testid="lenient-offer">
                            <button class="button primary" data-testid="import-lenient"
                                on:click=move |_| loader::import_leniently(state)>"Import leniently"</button>
                            <span>
                                "Approximate: events the allocator replay cannot reconcile are applied from "
                                "the trace alone and listed (table " <code>"pt_snap_x_replay_issues"</code> ")."
                            </span>
                            {dismiss()}
                        </div>
                    }
                    .into_any()
                } else {
                    dismiss().into_any()
                };
                view! {
                    <div class="status error" role="alert" data-testid="error">
                        <code data-testid="error-code">{f.code.as_str()}</code>
                        <span data-testid="error-message">{f.message.clone()}</span>
                        {actions}
                        {(!offered).then(|| crate::views::hint_line(&f))}
                    </div>
                }
                .into_any()
            }
        }
    }
}

/// The progress bar's fraction and words for where an import is.
fn progress_text(progress: Option<&Progress>, total: f64) -> (f64, String) {
    match progress {
        None => (0.0, "starting".to_owned()),
        Some(Progress::Decoding { bytes, events, .. }) => (
            if total > 0.0 { bytes / total } else { 0.0 },
            format!(
                "decoding: {} of {} read, {} events",
                fmt::bytes(*bytes as i64),
                fmt::bytes(total as i64),
                fmt::grouped(*events as i64)
            ),
        ),
        Some(Progress::Hashing {
            bytes: Some(bytes),
            total,
        }) => (
            if *total > 0.0 { bytes / total } else { 0.0 },
            format!(
                "looking for it in the cache: {} of {} hashed",
                fmt::bytes(*bytes as i64),
                fmt::bytes(*total as i64)
            ),
        ),
        Some(Progress::Hashing { bytes: None, total }) => (
            0.0,
            format!(
                "looking for it in the cache: hashing {}",
                fmt::bytes(*total as i64)
            ),
        ),
        Some(Progress::Replaying { device, done, of }) => (
            if *of > 0 {
                *done as f64 / *of as f64
            } else {
                1.0
            },
            format!(
                "replaying device {device}: {} / {} events",
                fmt::grouped(*done as i64),
                fmt::grouped(*of as i64)
            ),
        ),
        Some(Progress::Writing { device }) => (
            1.0,
            format!("writing the database (device {device}); the peaks are ready"),
        ),
        Some(Progress::Indexing) => (
            1.0,
            "finishing the database; the peaks are ready".to_owned(),
        ),
    }
}
