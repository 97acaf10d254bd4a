//! pt-snap in the browser: open a snapshot pickle (imported in a Web Worker) or a SnapshotDB
//! and analyse it with the CLI's own crates. Nothing is uploaded or fetched.

#[cfg(not(target_arch = "wasm32"))]
fn main() {}

/// Modules that use the browser's APIs: built for wasm32 only.
macro_rules! browser_modules {
    ($($name:ident),* $(,)?) => { $( #[cfg(target_arch = "wasm32")] mod $name; )* };
}
/// Plain logic (no browser API), so it is built and unit-tested natively too, where the app
/// that calls it is not.
macro_rules! plain_modules {
    ($($name:ident),* $(,)?) => {
        $( #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] mod $name; )*
    };
}

browser_modules!(
    allocations,
    band_chart,
    app,
    capture,
    client,
    compare,
    file_drop,
    file_worker,
    header,
    lists,
    loader,
    location,
    oneshot,
    oom,
    ranks,
    segments,
    served,
    state,
    status,
    timeline,
    views,
    welcome,
    workspace
);
plain_modules!(hint, fmt, job, link, opened, sniff);

#[cfg(target_arch = "wasm32")]
fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(app::App);
}
