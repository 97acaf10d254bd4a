//! Differential tests of `pt-snap report peak-memory` and `report memory-tree` against
//! pt-snap-cli 0.4.1: `tests/golden/report/<set>/cases/*.json` (made by
//! `tests/oracle/regen_reports.sh` on the query goldens' databases) replayed on the
//! reference's databases and on ours.

mod golden;

#[test]
fn reports_equal_the_reference_on_its_own_databases() {
    golden::replay("report", false);
}

#[test]
fn reports_equal_the_reference_on_our_databases() {
    golden::replay("report", true);
}

/// `--stacks all`, the default, changes no byte of the reference's text reports.
#[test]
fn stacks_all_is_the_reference_text() {
    golden::replay_with("report", false, &["--stacks", "all"]);
}
