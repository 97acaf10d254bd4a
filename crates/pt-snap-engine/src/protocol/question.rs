//! One type per kind of question, each naming the type of its answer ([`Question`]): the page
//! asks with one and gets the other, the engine answers with it, so a view cannot be written
//! against another question's answer. On the wire a question is a [`Query`] and its answer
//! an [`Answer`] (serde's JSON of a variant that wraps a struct is that of a variant with
//! the struct's fields: the messages are the same text as before these types).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

use super::{AllocationView, Answer, CaptureCheck, ErrorCode, EventInfo, Failure, Metric, Table};

/// A question for the open file, and the type of its answer.
pub trait Question: Clone + Into<Query> + 'static {
    type Answer: 'static;
    /// The answer as the wire carries it.
    fn wrap(answer: Self::Answer) -> Answer;
    /// This question's answer out of the wire's; `None` for another question's.
    fn unwrap(answer: Answer) -> Option<Self::Answer>;
}

/// The worker's answer to a `Q`, typed. Another question's answer can only come from a page
/// and a worker of different builds (the engine answers each question through its type).
pub fn answer_of<Q: Question>(answer: Result<Answer, Failure>) -> Result<Q::Answer, Failure> {
    answer.and_then(|a| {
        Q::unwrap(a).ok_or_else(|| {
            Failure::new(
                ErrorCode::Internal,
                "The worker answered another question; reload the page.",
            )
        })
    })
}

/// `memory_peak`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Peaks {
    pub device: i64,
}

/// The counters over a window of events, in at most `buckets` buckets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    pub device: i64,
    pub window: Option<(i64, i64)>,
    pub buckets: usize,
}

/// One trace event (the `event` template); `None` when the trace has no such event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub device: i64,
    pub id: i64,
}

/// `report peak-memory`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeakReport {
    pub device: i64,
    pub metric: Metric,
    pub include_static: bool,
}

/// The memory tree at an event, as the flamegraph component's data: JSON text, which goes
/// to JavaScript untouched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tree {
    pub device: i64,
    pub event_id: i64,
    pub include_static: bool,
}

/// Any template, with the CLI's parameters and row window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Template {
    pub device: i64,
    pub template: String,
    pub params: Map<String, Json>,
    pub max_rows: i64,
    pub exact_total: bool,
}

/// One read-only statement of the SQL console, keeping at most `cap` rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sql {
    pub sql: String,
    pub cap: usize,
}

/// Every device's row of `pt-snap ranks`: the peaks, the allocator gap at the reserved
/// peak, the OOM events and the largest callstack group at `metric`'s peak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankSummary {
    pub metric: Metric,
}

/// The allocation timeline over a window: the `top` largest blocks live there kept exactly,
/// the rest folded, in `columns` columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Allocations {
    pub device: i64,
    pub window: Option<(i64, i64)>,
    pub columns: usize,
    pub top: usize,
    pub colour: pt_snap_report::allocations::Colour,
    /// The category rules (a rules file's TOML, as `--categories` reads it); `None`: the
    /// built-in ones.
    pub rules: Option<String>,
}

/// `report oom`: every `oom` event of the file explained (none: the file has no OOM), its
/// live memory by category under `rules` (a rules file's TOML; `None`: built-in).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Oom {
    pub rules: Option<String>,
}

/// One side of `pt-snap diff`: the peaks, every block live at `metric`'s peak by normalised
/// stack, and the timeline in `buckets` buckets. The page compares two.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffSide {
    pub device: Option<i64>,
    pub metric: Metric,
    pub buckets: usize,
}

/// The allocator's segments right after an event (`report segments`), as the segment map
/// component's data ([`pt_snap_report::segments::page_data`]): JSON text, which goes to
/// JavaScript untouched. The engine keeps each device's replay, so a question replays from
/// the nearest checkpoint before `event_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Segments {
    pub device: i64,
    pub event_id: i64,
}

/// The reserved segments over a window of events (memory_viz's "Active Cached Segment
/// Timeline"), cut like the allocation timeline: the `top` largest segments kept exactly,
/// the rest folded per stream, in `columns` columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentTimeline {
    pub device: i64,
    pub window: Option<(i64, i64)>,
    pub columns: usize,
    pub top: usize,
}

/// How a device was captured and what that limits (`overview`'s `capture`), with its
/// warnings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capture {
    pub device: i64,
}

/// Each question's [`Query`] variant (named as it is), the [`Answer`] variant that carries
/// its answer, and the answer's type; `boxed`: the variant holds it in a `Box` (a large
/// answer, kept out of the enum's size).
macro_rules! questions {
    ($($question:ident => $variant:ident($answer:ty) $($boxed:ident)?;)*) => {
        /// A question for the open file, as it crosses to the worker: one variant per
        /// [`Question`] type.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        pub enum Query {
            $($question($question),)*
        }

        $(
            impl From<$question> for Query {
                fn from(q: $question) -> Query {
                    Query::$question(q)
                }
            }

            impl Question for $question {
                type Answer = $answer;
                fn wrap(answer: $answer) -> Answer {
                    Answer::$variant(questions!(@box answer $($boxed)?))
                }
                fn unwrap(answer: Answer) -> Option<$answer> {
                    match answer {
                        Answer::$variant(a) => Some(questions!(@unbox a $($boxed)?)),
                        _ => None,
                    }
                }
            }
        )*
    };
    (@box $a:ident) => { $a };
    (@box $a:ident boxed) => { Box::new($a) };
    (@unbox $a:ident) => { $a };
    (@unbox $a:ident boxed) => { *$a };
}

questions! {
    Peaks => Peaks(super::Peaks);
    Timeline => Timeline(super::Timeline);
    Event => Event(Option<EventInfo>);
    PeakReport => PeakReport(super::PeakReport);
    Tree => Tree(String);
    Template => Table(Table);
    Sql => Table(Table);
    RankSummary => RankSummary(Vec<pt_snap_report::ranks::DeviceSummary>);
    Allocations => Allocations(AllocationView);
    Oom => Oom(pt_snap_report::OomReport) boxed;
    DiffSide => DiffSide(pt_snap_report::diff::Side) boxed;
    Segments => Segments(String);
    SegmentTimeline => SegmentTimeline(pt_snap_report::allocations::Allocations);
    Capture => Capture(CaptureCheck);
}
