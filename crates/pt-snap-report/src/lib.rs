//! Reports: compositions of query templates that answer the two questions people open a
//! snapshot for — what was live at the peak ([`peak_memory`]), and which code paths hold
//! the memory at an event ([`memory_tree`], as text, JSON or an interactive flamegraph).
//!
//! Reports run through [`pt_snap_query::Analyzer`] like any query, so they work the same
//! on the command line and in the browser; a deadline for the whole composition is the
//! analyzer's interrupt.
//!
//! With the `dataset` feature (the CLI's), the same reports answer on sharded datasets
//! through `pt-snap-dataset`'s query engine ([`peak_memory_dataset`],
//! [`memory_tree_dataset`]); the browser app, which opens no datasets, builds without it.

#![forbid(unsafe_code)]

#[cfg(feature = "dataset")]
mod dataset;
mod peak;
mod tree;

#[cfg(feature = "dataset")]
pub use dataset::{memory_tree_dataset, peak_memory_dataset, DatasetBudget};

pub use peak::{peak_memory, Metric, PeakReport, PeakRequest};
pub use tree::{flamegraph_page, memory_tree, IncompleteTree, MemoryTree, Node, TreeRequest};
