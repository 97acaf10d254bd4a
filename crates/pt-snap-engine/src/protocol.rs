//! What the page and an open file's worker say to each other. Both sides are Rust and share
//! these types; a message crosses as JSON text. JSON rather than structured-clone objects
//! (serde-wasm-bindgen) because byte counts and addresses are i64: as JS numbers they lose
//! precision past 2^53, as BigInts every consumer must special-case them, while JSON text
//! keeps every integer exact and is the same bytes natively, where these tests run. The
//! only things that cross as JS objects are those JSON cannot carry: the dropped `File`,
//! the cancel flag's `SharedArrayBuffer`, the downloaded `Blob`, and a read helper's job
//! and message port ([`FromWorker::StartReader`]).

pub use pt_snap_query::{Extent, Timeline, TimelineBucket};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// A failure shown to people: the one failure type, its hint included.
pub use pt_snap_contract::{ErrorCode, Failure};

/// The answer to a question a newer one replaced; the page drops it unseen.
pub fn superseded() -> Failure {
    Failure::cancelled("Superseded by a newer question.")
}

/// What a view shows for a question the person stopped (Esc).
pub fn stopped() -> Failure {
    Failure::cancelled("Stopped (Esc).")
        .with_hint(Some("Change a setting or run it again to ask again."))
}

/// What a question still waiting gets when another file takes the screen.
pub fn replaced() -> Failure {
    Failure::cancelled("Another file was opened.").with_hint(Some("Ask again."))
}

/// Which counter's peak a report explains: the report's own type.
pub use pt_snap_report::Metric;

pub mod question;
pub use question::{answer_of, Query, Question};

/// What a [`Query`] gets: each [`Question`] says which variant carries its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Answer {
    Peaks(Peaks),
    RankSummary(Vec<pt_snap_report::ranks::DeviceSummary>),
    DiffSide(Box<pt_snap_report::diff::Side>),
    Allocations(AllocationView),
    Oom(Box<pt_snap_report::OomReport>),
    Timeline(Timeline),
    Event(Option<EventInfo>),
    PeakReport(PeakReport),
    /// The flamegraph component's data, as JSON text: it goes to JavaScript untouched.
    Tree(String),
    Table(Table),
    /// The segment map component's data, as JSON text: it goes to JavaScript untouched.
    Segments(String),
    SegmentTimeline(pt_snap_report::allocations::Allocations),
    Capture(CaptureCheck),
}

/// `memory_peak`'s six values for one device: the report's type, so the CLI and the page
/// read the peaks the same way.
pub use pt_snap_report::{Peak, Peaks};

/// One trace event as the `event` template gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventInfo {
    pub id: i64,
    pub action: String,
    pub size: i64,
    pub address: i64,
    pub allocated: i64,
    pub active: i64,
    pub reserved: i64,
    pub callstack: Option<String>,
    /// Where the stack allocated, in one line (`pt_snap_report::stack::label`).
    pub label: Option<String>,
}

/// `report peak-memory` as the page shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeakReport {
    pub metric: Metric,
    /// The metric's peak event; `None` when the trace has none.
    pub event_id: Option<i64>,
    pub groups: Vec<CallstackGroup>,
    /// More groups exist than the report kept.
    pub has_more: bool,
    /// Σ of the groups' bytes: the percentages' denominator.
    pub included_bytes: i64,
    pub active_bytes_at_event: Option<i64>,
    pub coverage_percent: Option<f64>,
    /// `allocator_gap`'s row, in its column order.
    pub allocator_gap: Vec<(String, Json)>,
}

/// Live blocks at the peak sharing one allocation callstack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallstackGroup {
    pub size_bytes: i64,
    pub requested_bytes: i64,
    pub block_count: i64,
    pub percent_of_active_blocks: Option<f64>,
    pub category: String,
    pub callstack: String,
    /// Where the group allocated, in one line ([`pt_snap_report::Group::label`]): the user's
    /// innermost frame and the torch call below it; the callstack text for memory without
    /// a stack.
    pub label: String,
}

/// The allocation timeline of a window, and where its kept blocks were allocated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AllocationView {
    pub allocations: pt_snap_report::allocations::Allocations,
    /// `(callstack id, where it allocated)` for the kept blocks' stacks.
    pub sites: Vec<(i64, String)>,
    /// Coloured by category: `(block id, the rule that chose its category)` for the kept
    /// blocks, by block id.
    pub rules: Vec<(i64, String)>,
}

/// How a device was captured, and what that limits: `overview`'s `capture` of the device
/// and its warnings, each with what to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaptureCheck {
    /// `None` for a device without trace events.
    pub capture: Option<pt_snap_report::capture::Capture>,
    /// The device's warnings; for a file without any trace event, the file's (`overview`
    /// says those once, for the file).
    pub warnings: Vec<CaptureWarning>,
}

/// One of [`CaptureCheck::warnings`]: [`pt_snap_report::capture::Warning`] as the wire
/// carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaptureWarning {
    /// Stable: `history_not_recorded`, `no_stacks`, `allocated_before_recording`,
    /// `trace_may_have_wrapped`.
    pub code: String,
    /// What the capture cannot answer, and what to do.
    pub message: String,
}

impl From<pt_snap_report::capture::Warning> for CaptureWarning {
    fn from(w: pt_snap_report::capture::Warning) -> Self {
        CaptureWarning {
            code: w.code.to_owned(),
            message: w.message,
        }
    }
}

/// A page of rows (a template's answer or a console statement's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Json>>,
    pub total: i64,
    pub has_more: bool,
    pub truncated: bool,
    pub total_is_exact: bool,
    pub note: Option<String>,
}

/// Where the open database lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Storage {
    /// In the Origin Private File System, cached under the source's SHA-256.
    Opfs,
    /// In the worker's memory (no OPFS here, or a `.db` opened as it is).
    Memory,
}

/// What the page knows about the open database.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Overview {
    pub name: String,
    /// Made here from a snapshot (so it can be downloaded), rather than opened as a `.db`.
    pub imported: bool,
    pub db_bytes: u64,
    pub devices: Vec<i64>,
    /// `(device, (first, last))` real-event ids.
    pub bounds: Vec<(i64, Option<(i64, i64)>)>,
    /// The `pt_snap_metadata` row as `(field, value)`, or why it is not valid.
    pub metadata: Result<Vec<(String, String)>, String>,
    pub warnings: Vec<String>,
    /// Events a lenient replay applied from the trace alone; `None` for a strict database.
    pub lenient_issues: Option<i64>,
    pub storage: Storage,
    /// Reopened from the OPFS cache instead of imported again.
    pub cache_hit: bool,
    /// Reopened by the dropped file's name, size and modification time, before its
    /// SHA-256 was known: the worker is hashing it and says whether it is the file
    /// imported ([`FromWorker::SourceChecked`]).
    pub source_unchecked: bool,
}

/// What the replay knows before a row is written: enough for the peak cards, the timeline
/// and the device table while the database is being made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Preview {
    pub name: String,
    /// Devices replayed so far, in import order.
    pub devices: Vec<DevicePreview>,
    /// Devices the import will write, replayed or not.
    pub importing: Vec<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DevicePreview {
    pub device: i64,
    pub peaks: Peaks,
    /// The whole trace at the page's bucket count: what the timeline query will give.
    pub timeline: Timeline,
}

/// How far an import is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Progress {
    /// Reading and decoding; `events` decoded so far.
    Decoding {
        bytes: f64,
        total: f64,
        events: u64,
    },
    Replaying {
        device: i64,
        done: u64,
        of: u64,
    },
    /// Writing a replayed device's rows.
    Writing {
        device: i64,
    },
    /// The callstacks, the indexes (unless the import defers them: [`ToWorker::BuildIndexes`]),
    /// the dictionary and the commit.
    Indexing,
    /// Hashing the file to look it up in the cache; `bytes` hashed so far, `None` until the
    /// helper that hashes it first tells (every 64 MiB).
    Hashing {
        bytes: Option<f64>,
        total: f64,
    },
}

/// Page → worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ToWorker {
    /// Import the attached `File` (any snapshot shape), or reopen its cached database.
    Import {
        lenient: bool,
        /// The timeline's bucket count, for the preview.
        buckets: usize,
        /// The source SHA-256 of the file on screen: the same file dropped again is not
        /// opened twice (its cache entry is held by the worker showing it).
        shown_sha256: Option<String>,
        /// Reopen a cached import of a file of this name, size and modification time at
        /// once, and check its SHA-256 after ([`Overview::source_unchecked`]); `false`:
        /// hash first (the file was found changed under that name).
        quick_match: bool,
    },
    /// Open the attached `File` as a SnapshotDB.
    Open,
    /// Reopen a cached database by its source's SHA-256: one just imported by another
    /// worker (`warnings`: its replay's), or one found in the cache (`cache_hit`).
    Reopen {
        sha256: String,
        warnings: Vec<String>,
        cache_hit: bool,
    },
    /// A question; `budget_s` bounds it like the CLI's `--timeout`.
    Ask {
        id: u64,
        budget_s: f64,
        query: Query,
    },
    /// The database file as a `Blob`, for "Download .db".
    Download,
    /// Build the indexes an import deferred, one at a time between questions (answered by
    /// [`FromWorker::Indexes`]). The page's file asks; a worker that answers one question
    /// and ends (a Compare side's) does not.
    BuildIndexes,
    /// Read the attached `files` (an array, in the order of `paths`, each where it was
    /// found) as parts of an exported `summary` table. The page sends a table's parts a
    /// batch at a time: posting thousands of `File`s at once blocks its thread.
    ReadSummaries { paths: Vec<String> },
}

/// Worker → page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FromWorker {
    /// The worker can take messages (earlier ones would be lost).
    Ready,
    Progress(Progress),
    Preview(Preview),
    /// The database is ready for every question.
    Opened(Overview),
    /// The import is complete in the OPFS cache and this worker has let go of it: the page
    /// reopens it in a fresh worker, so the memory the import took goes with this one.
    Stored {
        sha256: String,
        warnings: Vec<String>,
    },
    /// The file is the one on screen (its SHA-256 says so); nothing was opened.
    AlreadyOpen,
    /// The SHA-256 of a file reopened by name, size and time ([`Overview::source_unchecked`]):
    /// `same`, it is the file imported; otherwise the page imports it again.
    SourceChecked {
        same: bool,
    },
    /// The import or open failed; the worker holds nothing.
    Failed(Failure),
    Answer {
        id: u64,
        answer: Result<Answer, Failure>,
    },
    /// The attached `Blob` is the database (or why there is none).
    Download(Result<String, Failure>),
    /// The summary parts of one [`ToWorker::ReadSummaries`], in its order.
    Summaries(Vec<SummaryRead>),
    /// Answering [`ToWorker::BuildIndexes`]: how many indexes a deferred import left
    /// (posted again after each is built), and the database's size once none is; or why one
    /// could not be built (the views still answer, more slowly).
    Indexes(Result<IndexesLeft, Failure>),
    /// Start a read helper (`www/read-worker.js`) for this worker: the attached `job` is
    /// posted to it, and what it posts goes to the attached `port`. The page starts it, not
    /// the worker: in Chromium a worker ended soon after its own worker started or ended
    /// sometimes never finishes ending (see pt-snap-web's `file_worker`).
    StartReader {
        reader: u32,
    },
    /// End that read helper: the file is read, or no longer wanted.
    EndReader {
        reader: u32,
    },
}

/// See [`FromWorker::Indexes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexesLeft {
    pub left: usize,
    pub db_bytes: u64,
}

/// One file read as a part of an exported `summary` table: its ranks, or why it has none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRead {
    pub path: String,
    pub ranks: Result<Vec<pt_snap_parquet::SummaryRank>, Failure>,
}

impl SummaryRead {
    /// The file found at `path`, `len` bytes read through `read(start, end)`, read as a
    /// part of a summary table (its footer first: see [`pt_snap_parquet::read_summary_ranges`]).
    pub fn of(
        path: &str,
        len: u64,
        read: impl FnMut(u64, u64) -> std::io::Result<Vec<u8>>,
    ) -> Self {
        let ranks = pt_snap_parquet::read_summary_ranges(len, path, read)
            .map_err(|e| Failure::new(ErrorCode::InvalidParameter, format!("{path}: {e}")));
        SummaryRead {
            path: path.to_owned(),
            ranks,
        }
    }
}

/// A message as JSON text.
pub fn encode<T: Serialize>(message: &T) -> String {
    // Every type here serializes (no maps with non-string keys, no failing Serialize).
    serde_json::to_string(message).expect("protocol types always serialize")
}

/// A message from JSON text; `INTERNAL_ERROR` when the other side speaks another version.
pub fn decode<'a, T: Deserialize<'a>>(text: &'a str) -> Result<T, Failure> {
    serde_json::from_str(text).map_err(|e| {
        Failure::new(
            ErrorCode::Internal,
            format!("The page and its worker disagree on a message ({e}); reload the page."),
        )
    })
}
