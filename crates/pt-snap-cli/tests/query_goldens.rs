//! Differential tests of `pt-snap query` and `capabilities` against pt-snap-cli 0.4.1.
//!
//! `tests/golden/query/<set>/cases/*.json` are runs of the reference (made by
//! `tests/oracle/regen_queries.sh`) on the reference's own database of a fixture. Every case
//! is replayed with our binary on that same database, and again on the database our own
//! import makes of the fixture: the answers must be equal, up to the deliberate divergences
//! of docs/compatibility.md, each normalised here by name.

mod golden;

use std::collections::BTreeMap;
use std::path::Path;

use golden::*;

#[test]
fn query_answers_equal_the_reference_on_its_own_databases() {
    replay("query", false);
}

#[test]
fn query_answers_equal_the_reference_on_our_databases() {
    replay("query", true);
}

#[test]
fn contracts_equal_the_reference() {
    let dir = golden_root("query").join("contract");
    let mut failures = BTreeMap::new();
    let mut ran = 0;
    let mut all = case_files(&dir);
    all.extend(case_files(&dir.join("template_info")));
    for case in all {
        ran += 1;
        if let Err(e) = compare(&case, &run_ours(&case, Path::new("<none>"), &dir)) {
            failures.insert(case.name.clone(), e);
        }
    }
    report("query", failures, ran);
}
