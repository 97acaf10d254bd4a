//! cargo-fuzz target `sql`. The body is `pt_snap_fuzz::targets::sql`, shared with the stable
//! runner (`scripts/fuzz`, docs/fuzzing.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    pt_snap_fuzz::targets::sql(data);
});
