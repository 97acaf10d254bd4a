//! The wasm build of the core imports a real fixture to the same database as the native
//! build. Each test runs natively under `cargo test` and, compiled to wasm32, in a dedicated
//! worker of headless Chromium (`scripts/wasm-test`), the way the browser app's import
//! worker runs. Both compare against the same golden: the canonical dump of the database
//! pt-snap-cli 0.4.1 made from this fixture (`tests/golden/import/`), which the native CLI's
//! differential test also matches — so native and wasm write identical content.

use pt_snap_wasm_tests::{first_difference, import_like_the_worker};
use serde_json::Value;

#[cfg(all(target_family = "wasm", target_os = "unknown"))]
use wasm_bindgen_test::wasm_bindgen_test as test;

#[cfg(all(target_family = "wasm", target_os = "unknown"))]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_dedicated_worker);

const NAME: &str = "snapshot_with_multi_devices.pkl";
const PICKLE: &[u8] =
    include_bytes!("../../../fixtures/upstream-pkg/snapshots/snapshot_with_multi_devices.pkl");
const GOLDEN_ALL: &str = include_str!(
    "../../../tests/golden/import/upstream-pkg/snapshots/snapshot_with_multi_devices.pkl.json"
);
const GOLDEN_DEVICE_1: &str = include_str!(
    "../../../tests/golden/import/upstream-pkg/snapshots/snapshot_with_multi_devices.pkl.device-1.json"
);

fn check(golden: &str, device: Option<usize>, slice: usize, events: usize) {
    let golden: Value = serde_json::from_str(golden).expect("golden JSON");
    let expected = &golden["db"];
    assert!(expected.is_object(), "the golden holds no database");
    let got = import_like_the_worker(PICKLE, NAME, device, slice).expect("import");
    assert_eq!(got.events, events, "trace events replayed");
    assert!(got.image_len > 0);
    if let Some(diff) = first_difference(&got.canonical, expected) {
        panic!("{NAME} (device {device:?}): database differs from the reference's: {diff}");
    }
}

/// Every device with events (0 and 1), read in odd 64 KiB + 3 slices.
#[test]
fn multi_device_fixture_imports_to_the_reference_database() {
    check(GOLDEN_ALL, None, (64 << 10) + 3, 8132 + 9700);
}

/// `--device 1` (a `requested_device` in the metadata), read in slices as the worker does.
#[test]
fn one_device_of_the_fixture_imports_to_the_reference_database() {
    check(
        GOLDEN_DEVICE_1,
        Some(1),
        pt_snap_model::SLICE as usize,
        9700,
    );
}
