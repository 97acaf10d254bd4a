//! Reports: compositions of query templates that answer the questions people open a
//! snapshot for — what was live at the peak ([`peak_memory`], by callstack or by memory
//! [`categories`]), which code paths hold the memory at an event ([`memory_tree`], as text,
//! JSON or an interactive flamegraph), why an allocation failed ([`oom`]), and what changed
//! between two runs ([`diff`]), the allocator's segments and blocks at an event
//! ([`segments`]), and how a file was captured ([`capture`]).
//!
//! Reports ask a [`pt_snap_query::Source`] like any query, so they answer the same on a
//! database and on a sharded dataset, on the command line and in the browser; the deadline
//! (and a dataset's work budget) covers the whole composition.

#![forbid(unsafe_code)]

pub mod allocations;
pub mod capture;
pub mod categories;
pub mod check;
pub mod commands;
pub mod diff;
pub mod oom;
mod peak;
mod python_view;
pub mod ranks;
pub mod replayed;
pub mod segments;
pub mod stack;
mod tree;
pub mod units;

pub use oom::{oom_report, OomReport, OomRequest};
pub use peak::{
    peak_memory, AttributionParams, ByCategory, Group, Grouping, Metric, Peak, PeakReport,
    PeakRequest, Peaks,
};
pub use python_view::python_view;
pub use stack::Stacks;
pub use tree::{
    flamegraph_data, flamegraph_page, memory_tree, IncompleteTree, MemoryTree, Node, TreeRequest,
};
