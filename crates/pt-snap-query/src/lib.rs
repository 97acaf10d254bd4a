//! The query engine: the 13 SnapshotDB templates of pt-snap-cli 0.4.1 and our own
//! ([`registry::OURS`]), their contracts, and the row-window rules that make their answers
//! honest about completeness; [`category`], the memory-category rules one of ours applies.
//!
//! ```no_run
//! use pt_snap_query::{Analyzer, QueryRequest};
//!
//! let analyzer = Analyzer::open("train.pkl.db".as_ref())?;
//! let peak = analyzer.run(&QueryRequest::new("memory_peak"))?;
//! let event = peak.get(0, "peak_active_event_id").and_then(|v| v.as_i64()).unwrap();
//! let live = analyzer.run(
//!     &QueryRequest::new("active_memory_callstack_at_event")
//!         .param("event_id", event)
//!         .param("top_n", 5)
//!         .exact_total(true),
//! )?;
//! for row in live.rows_json() {
//!     println!("{row}");
//! }
//! assert!(live.total_is_exact);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`registry`] holds every template: its [`Contract`] (parameters, output columns, units,
//! interpretation limits — data in `contracts/`, word for word the reference's, ours in the
//! same form) and its SQL (`templates/`, built with bound parameters only). [`Analyzer`]
//! opens a database file or image read-only and runs them; it needs no clock, filesystem or
//! thread, so the same code answers in the browser. [`Analyzer::timeline`] gives the counters over events,
//! downsampled so that no extreme is lost.

#![forbid(unsafe_code)]

mod allocator;
pub mod category;
pub mod contract;
mod engine;
mod error;
mod functions;
mod lifetimes;
pub mod params;
/// Python's spellings, shared with every crate that writes what the reference writes.
pub use pt_snap_contract::python;
pub mod registry;
mod rows;
mod scan;
mod source;
mod sql;
mod stack;
mod templates;
mod timeline;
mod value;

pub use allocator::{BlocksBy, EventStacks, StateBlock, StateEvent};
pub use contract::{Contract, OutputColumn, ParamType, Parameter, WorkLimits, CATEGORIES};
pub use engine::{Analyzer, Interrupt, QueryOutcome, QueryRequest};
pub use error::QueryError;
pub use lifetimes::Lifetime;
pub use params::{ParamValue, Params};
pub use pt_snap_db::{rusqlite, CallstackLayout, DeviceBounds, Metadata, NoTimes, OpenError};
pub use registry::Template;
pub use rows::{Action, CallstackRow, EventRow, FrameRow};
pub use source::{metadata_json, ImportMetadata, MetadataStatus, Source, Times, TraceBuffer};
pub use timeline::{
    bucket_index, Downsampler, Extent, TimeBucket, TimeDownsampler, TimeExtent, TimeTimeline,
    Timeline, TimelineBucket, TimelineRequest,
};
pub use value::Value;
