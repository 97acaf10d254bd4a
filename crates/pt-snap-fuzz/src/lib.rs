//! Fuzzing pt-snap: the target bodies, one function per target, and the pieces of the
//! stable runner that are worth unit-testing (RNG, pickle opcode scanner, mutator).
//!
//! The same [`targets`] functions are called by the cargo-fuzz targets in `fuzz/` (libFuzzer,
//! nightly or `RUSTC_BOOTSTRAP=1`) and by the `pt-snap-fuzz` binary of this crate, a
//! libFuzzer-free runner that works on stable Rust: it mutates seed files for a time budget
//! and runs every input in a child process with a time limit and an address-space cap
//! (`docs/fuzzing.md`).
//!
//! A target must never panic, hang or run away with memory whatever its input: doing so is
//! a finding. Target functions return a short description of the path the input took
//! (which stage refused it and why, or what succeeded); the runner keeps inputs that reach
//! a description it has not seen yet, a coarse stand-in for coverage feedback.

#![forbid(unsafe_code)]

pub mod mutate;
pub mod packing;
pub mod pickle_ops;
pub mod rng;
pub mod targets;

pub use targets::{find, Target, TARGETS};
