//! pt-snap in the browser: open a snapshot pickle (imported in a Web Worker) or a SnapshotDB
//! and analyse it with the CLI's own crates. Nothing is uploaded or fetched.

#[cfg(not(target_arch = "wasm32"))]
fn main() {}

// Modules that use the browser's APIs: built for wasm32 only.
#[cfg(target_arch = "wasm32")]
mod allocations;
#[cfg(target_arch = "wasm32")]
mod app;
#[cfg(target_arch = "wasm32")]
mod band_chart;
#[cfg(target_arch = "wasm32")]
mod capture;
#[cfg(target_arch = "wasm32")]
mod client;
#[cfg(target_arch = "wasm32")]
mod compare;
#[cfg(target_arch = "wasm32")]
mod file_drop;
#[cfg(target_arch = "wasm32")]
mod file_worker;
#[cfg(target_arch = "wasm32")]
mod header;
#[cfg(target_arch = "wasm32")]
mod lists;
#[cfg(target_arch = "wasm32")]
mod loader;
#[cfg(target_arch = "wasm32")]
mod location;
#[cfg(target_arch = "wasm32")]
mod oneshot;
#[cfg(target_arch = "wasm32")]
mod oom;
#[cfg(target_arch = "wasm32")]
mod ranks;
#[cfg(target_arch = "wasm32")]
mod segments;
#[cfg(target_arch = "wasm32")]
mod served;
#[cfg(target_arch = "wasm32")]
mod source;
#[cfg(target_arch = "wasm32")]
mod state;
#[cfg(target_arch = "wasm32")]
mod status;
#[cfg(target_arch = "wasm32")]
mod timeline;
#[cfg(target_arch = "wasm32")]
mod views;
#[cfg(target_arch = "wasm32")]
mod welcome;
#[cfg(target_arch = "wasm32")]
mod workspace;
// Plain logic (no browser API), so it is built and unit-tested natively too, where the app
// that calls it is not.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod fmt;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod hint;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod job;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod link;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod opened;
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod sniff;

#[cfg(target_arch = "wasm32")]
fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(app::App);
}
