//! The open file's page: the device picker, the tabs of its views (the OOM tab only where
//! there is an OOM to explain), the OOM banner, the peak cards, and the view chosen.

use leptos::prelude::*;

use crate::link::Tab;
use crate::opened::Opened;
use crate::state::AppState;
use crate::{lists, views};

#[component]
pub fn Workspace() -> impl IntoView {
    let state = expect_context::<AppState>();
    let peaks = views::peaks_signal(state);
    provide_context(peaks);
    let oom = crate::oom::oom_signal(state);
    provide_context(oom);
    let devices = move || {
        state
            .opened
            .with(|o| o.as_ref().map(Opened::devices).unwrap_or_default())
    };
    view! {
        <div class="toolbar">
            <label class="field">
                "Device "
                <select data-testid="device-select" on:change=move |e| {
                    if let Ok(d) = event_target_value(&e).parse() { state.device.set(d); state.event.set(None); }
                } prop:value=move || state.device.get().to_string()>
                    {move || devices().into_iter().map(|d| view! {
                        <option value=d.to_string() selected=move || state.device.get() == d>{format!("device {d}")}</option>
                    }).collect_view()}
                </select>
            </label>
            <nav class="tabs" role="tablist" aria-label="Views">
                // The OOM view is offered only where there is an OOM to explain.
                {Tab::ALL.into_iter().filter(|t| *t != Tab::Oom).map(|t| view! {
                    <button role="tab" class="tab" data-testid=format!("tab-{}", t.key())
                        aria-selected=move || (state.tab.get() == t).to_string()
                        class:waiting=move || t != Tab::Overview && !state.ready()
                        on:click=move |_| state.tab.set(t)>{t.label()}</button>
                }).collect_view()}
                <Show when=move || crate::oom::has_oom(oom)>
                    <button role="tab" class="tab oom" data-testid="tab-oom"
                        aria-selected=move || (state.tab.get() == Tab::Oom).to_string()
                        on:click=move |_| state.tab.set(Tab::Oom)>{Tab::Oom.label()}</button>
                </Show>
            </nav>
        </div>
        <crate::oom::OomBanner/>
        <crate::capture::CaptureBanner/>
        <views::PeakCards peaks=peaks/>
        <div class="view">
            {move || (state.tab.get() != Tab::Overview && !state.ready()).then(|| view! {
                <p class="panel muted waiting-note" data-testid="waiting-for-db">
                    "This view answers from the database, which is still being written; it fills in as soon as it is ready (progress above)."
                </p>
            })}
            {move || match state.tab.get() {
                Tab::Overview => view! { <views::Overview peaks=peaks/> }.into_any(),
                Tab::Peak => view! { <views::PeakView/> }.into_any(),
                Tab::Tree => view! { <views::TreeView/> }.into_any(),
                Tab::Segments => view! { <crate::segments::SegmentsView/> }.into_any(),
                Tab::Leaks => view! { <lists::LeaksView/> }.into_any(),
                Tab::Blocks => view! { <lists::BlocksView/> }.into_any(),
                Tab::Lifetimes => view! { <lists::LifetimesView/> }.into_any(),
                Tab::Templates => view! { <views::TemplatesView/> }.into_any(),
                Tab::Sql => view! { <views::SqlView/> }.into_any(),
                Tab::Oom => view! { <crate::oom::OomView/> }.into_any(),
            }}
        </div>
    }
}
