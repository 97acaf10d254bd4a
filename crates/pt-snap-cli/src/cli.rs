//! The command line, with the reference's command and flag names.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "pt-snap",
    version,
    about = "PyTorch memory-snapshot forensics: import snapshots into a SnapshotDB and query it.",
    after_help = "For agents: start with 'pt-snap overview --json' on an imported database, \
                  or 'pt-snap import <snapshot.pickle> --json' to make one.",
    disable_help_subcommand = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Import a PyTorch memory snapshot into a SQLite database.
    Import(ImportArgs),
    /// Show the devices and event ranges of a database.
    Overview(DbArgs),
    /// Show the import metadata of a database.
    Metadata(DbArgs),
    /// Set the current analysis focus (database and optional device).
    Focus(FocusArgs),
    /// Show or manage pt-snap configuration.
    Config(ConfigArgs),
    /// Manage bundled agent skills
    Skill(SkillArgs),
    /// Execute queries on the memory snapshot database.
    Query(QueryArgs),
    /// List CLI version, query template contracts, and bundled skills.
    Capabilities(JsonArgs),
    /// Generate memory analysis reports.
    #[command(subcommand)]
    Report(ReportCommand),
    /// Split a snapshot into independently replayable device slices.
    Split(SplitArgs),
    /// Compare two runs: peaks, live memory at each peak by call stack, both timelines.
    Diff(DiffArgs),
    /// Summarise many snapshots of one job side by side (one per rank): peaks, OOMs and the
    /// largest callstack group of each, and the ranks whose peak is an outlier.
    Ranks(RanksArgs),
    /// A memory gate for CI: record a baseline from repeats of a run, or judge a new run
    /// against one; a regression names the allocation sites that grew (exit 0 pass,
    /// 1 regressed, 2 could not judge).
    Check(CheckArgs),
    /// Export snapshots or SnapshotDBs as a Hive-partitioned Parquet dataset
    /// (DIR/<table>/job=<J>/rank=<R>/part-0.parquet) for Spark, DuckDB, DataFusion.
    Export(ExportArgs),
    /// Run SQL (DataFusion) over a dataset `export` wrote, or one of the named queries.
    #[cfg_attr(
        not(feature = "sql"),
        command(
            about = "Run SQL (DataFusion) over a dataset `export` wrote: not in this build \
                     (`pt-snap sql` says how to get it)."
        )
    )]
    Sql(SqlArgs),
    /// Open a snapshot, a database or a directory of a job's files in the browser app, served
    /// from this machine: prints the URL (with its token) and opens a browser where there is
    /// a display; over SSH, forward the port.
    View(ViewArgs),
}

#[derive(Debug, Args)]
pub struct ViewArgs {
    /// A snapshot, a SnapshotDB, an exported Parquet part, or a directory (its files open as
    /// a dropped folder's: the ranks of a job, or an exported summary table). Default: the
    /// focused database; without one, the app alone.
    #[arg(value_name = "SNAPSHOT|DB|DIR")]
    pub path: Option<PathBuf>,
    /// The port to listen on; 0 takes any free one.
    #[arg(long, default_value_t = 8765)]
    pub port: u16,
    /// The address to listen on. Anything but a loopback address lets other machines connect.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Print the URL without starting a browser.
    #[arg(long)]
    pub no_open: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckFormat {
    Text,
    Json,
    Markdown,
    Junit,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The run: a snapshot, a SnapshotDB, or a directory of a job's ranks (as `ranks` reads
    /// it). With --record, every RUN is a repeat of the same configuration.
    #[arg(value_name = "RUN", required = true)]
    pub runs: Vec<PathBuf>,
    /// Record a baseline from the RUNs into this file (written atomically).
    #[arg(long, value_name = "BASELINE.json", conflicts_with = "baseline")]
    pub record: Option<PathBuf>,
    /// Judge the RUN against this baseline.
    #[arg(long, value_name = "BASELINE.json", required_unless_present = "record")]
    pub baseline: Option<PathBuf>,
    /// With --record: the peak to gate on (default allocated, which does not depend on the
    /// allocator's history; reserved flakes with it).
    #[arg(long, value_enum)]
    pub metric: Option<MetricArg>,
    /// With --record: how far above the baseline's peak a run may go, `PCT%` or bytes
    /// (`64MiB`); default: 3 × the spread of three or more repeats (at least 0.25%), else 2%.
    #[arg(long, value_name = "PCT%|BYTES")]
    pub tolerance: Option<String>,
    /// With --record: this device only (default: every device with events).
    #[arg(short = 'd', long, allow_negative_numbers = true)]
    pub device: Option<i64>,
    /// The report's form (default text; json with --json).
    #[arg(long, value_enum)]
    pub format: Option<CheckFormat>,
    /// Write the report to FILE (atomically) instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Files measured at once (default: the number of cores).
    #[arg(short = 'j', long = "jobs", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Parquet,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Snapshots, SnapshotDBs, or directories of them (their *.pkl, *.pickle and *.db files).
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// The dataset's format.
    #[arg(long, value_enum, default_value = "parquet")]
    pub format: ExportFormat,
    /// The dataset directory (created if missing; parts already there are kept or replaced).
    #[arg(short = 'o', long = "output", value_name = "DIR", required = true)]
    pub output: PathBuf,
    /// The job's name: the `job=` partition (default: the name of the first input's directory).
    #[arg(long, value_name = "NAME")]
    pub job: Option<String>,
    /// The rank of the one input (default: from the file names, as `ranks` reads them).
    #[arg(long, value_name = "R")]
    pub rank: Option<u64>,
    /// Files exported at once (default: the number of cores).
    #[arg(short = 'j', long = "jobs", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

/// `pt-snap sql` in a build without it: whatever follows is taken, so that the answer is
/// always the error saying how to get it (`--json` still asks for an envelope).
#[cfg(not(feature = "sql"))]
#[derive(Debug, Args)]
pub struct SqlArgs {
    #[arg(
        value_name = "ARGS",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        hide = true
    )]
    pub args: Vec<String>,
}

#[cfg(not(feature = "sql"))]
impl SqlArgs {
    pub fn json(&self) -> bool {
        self.args.iter().any(|a| a == "--json")
    }
}

#[cfg(feature = "sql")]
#[derive(Debug, Args)]
pub struct SqlArgs {
    /// The dataset directory `pt-snap export --format parquet` wrote.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// A read-only SQL statement, a query (tables: events, blocks, callstacks, summary, each
    /// with job and rank).
    #[arg(
        value_name = "SQL",
        required_unless_present = "query",
        conflicts_with = "query"
    )]
    pub sql: Option<String>,
    /// A named query instead of SQL (`--query list` names them).
    #[arg(long, value_name = "NAME")]
    pub query: Option<String>,
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RanksArgs {
    /// Snapshots, SnapshotDBs, or directories of them (their *.pkl, *.pickle and *.db files).
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// Summarise only this device of every file (default: every device).
    #[arg(short = 'd', long, allow_negative_numbers = true)]
    pub device: Option<i64>,
    /// The peak compared across the files.
    #[arg(long, value_enum, default_value = "active")]
    pub metric: MetricArg,
    /// Files replayed or read and summarised at once (default: the number of cores).
    #[arg(short = 'j', long = "jobs", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The first run (A): a snapshot (imported beside it through the reuse cache, as
    /// `import` would) or a SnapshotDB.
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// The second run (B), likewise.
    #[arg(value_name = "B")]
    pub b: PathBuf,
    /// Whose peak to compare: live memory is taken at each side's peak of this counter.
    #[arg(long, value_enum, default_value = "active")]
    pub metric: MetricArg,
    /// Device ID on both sides (default: each side's lowest).
    #[arg(short = 'd', long, allow_negative_numbers = true)]
    pub device: Option<i64>,
    /// Match live blocks by allocation site (your innermost frame, then the torch call) or
    /// by whole normalised stack.
    #[arg(long, value_enum, default_value = "site")]
    pub by: DiffBy,
    /// Groups to list, largest change first (<= 0: all); totals are always over every group.
    #[arg(short = 'n', long, default_value_t = 20, allow_negative_numbers = true)]
    pub limit: i64,
    /// Readable text, or one self-contained HTML page (timelines and a differential
    /// flamegraph).
    #[arg(long, value_enum, default_value = "text")]
    pub format: DiffFormat,
    /// Write the output to FILE (a temporary file renamed over it) instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Import snapshots with the lenient replay, as `import --lenient` (numbers approximate).
    #[arg(long)]
    pub lenient: bool,
    /// One deadline in seconds for the queries of both sides (not the imports); <=0
    /// disables.
    #[arg(long, allow_negative_numbers = true)]
    pub timeout: Option<f64>,
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffBy {
    Site,
    Stack,
}

impl From<DiffBy> for pt_snap_report::diff::By {
    fn from(by: DiffBy) -> Self {
        match by {
            DiffBy::Site => Self::Site,
            DiffBy::Stack => Self::Stack,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffFormat {
    Text,
    Html,
}

#[derive(Debug, Args)]
pub struct SplitArgs {
    /// Path to .pkl or .pickle snapshot
    #[arg(value_name = "SNAPSHOT_PATH")]
    pub snapshot_file: PathBuf,
    /// New output directory
    #[arg(short = 'o', long)]
    pub output: PathBuf,
    #[arg(short = 'd', long, allow_negative_numbers = true)]
    pub device: Option<i64>,
    #[arg(short = 's', long, allow_negative_numbers = true)]
    pub slices: Option<i64>,
    #[arg(short = 'm', long, allow_negative_numbers = true)]
    pub max_entries: Option<i64>,
    /// Output format: pickle or json
    #[arg(long, value_name = "{pickle,json}", default_value = "pickle")]
    pub format: String,
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The snapshot: a pickle or JSON, possibly gzip/zstd/bzip2-compressed (told by content).
    pub snapshot_file: PathBuf,
    /// Directory for the database (default: the snapshot's directory).
    #[arg(short = 'o', long)]
    pub output_dir: Option<PathBuf>,
    /// Import only this device.
    #[arg(short = 'd', long, allow_negative_numbers = true)]
    pub device: Option<i64>,
    /// Skip the focus update.
    #[arg(long)]
    pub no_focus: bool,
    /// Rebuild the database even if it could be reused.
    #[arg(long)]
    pub force: bool,
    /// Real events per device shard (sharded dataset formats).
    #[arg(long, allow_negative_numbers = true)]
    pub events_per_slice: Option<i64>,
    /// single-db (default).
    #[arg(long)]
    pub format: Option<String>,
    /// Import a trace the allocator replay cannot reconcile: such events are applied from
    /// the trace alone and listed in pt_snap_x_replay_issues (numbers are approximate).
    #[arg(long)]
    pub lenient: bool,
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct QueryArgs {
    /// Path to database, manifest.json, or dataset directory (optional if configured).
    pub db_path: Option<PathBuf>,
    /// Query template name to execute.
    #[arg(long)]
    pub template_use: Option<String>,
    /// Query parameters as JSON string.
    #[arg(long)]
    pub params: Option<String>,
    /// Device ID to query.
    #[arg(long, allow_negative_numbers = true)]
    pub device: Option<i64>,
    /// Explicit dataset slice index for event inspection.
    #[arg(long = "slice", allow_negative_numbers = true)]
    pub slice: Option<i64>,
    /// List all available query templates.
    #[arg(long)]
    pub list: bool,
    /// Filter templates by category.
    #[arg(long)]
    pub category: Option<String>,
    /// Show detailed information about a template (parameters, output schema, field semantics).
    #[arg(long)]
    pub template_info: Option<String>,
    /// Maximum number of result rows to display (<= 0 for unlimited, default: unlimited).
    #[arg(short = 'n', allow_negative_numbers = true)]
    pub max_rows: Option<i64>,
    /// Compute an exact matching-row total with a COUNT query (default: total equals returned rows).
    #[arg(long)]
    pub exact_total: bool,
    /// Query execution timeout in seconds (separate from -n; <= 0 disables; default:
    /// PT_SNAP_QUERY_TIMEOUT or unlimited).
    #[arg(long, allow_negative_numbers = true)]
    pub timeout: Option<f64>,
    #[command(flatten)]
    pub limits: crate::budget::WorkLimitArgs,
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// Generate a peak memory attribution report.
    PeakMemory(PeakMemoryArgs),
    /// Decompose event-time active memory by ordered allocation frames.
    MemoryTree(MemoryTreeArgs),
    /// Explain each OOM event: the request, the free memory by pool and stream, a verdict.
    Oom(OomArgs),
    /// The allocator's state right after an event: every segment with its blocks, and the
    /// free space and fragmentation per pool and stream.
    Segments(SegmentsArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SegmentsFormat {
    Text,
    Html,
}

#[derive(Debug, Args)]
pub struct SegmentsArgs {
    /// A SnapshotDB, or a snapshot (imported beside it through the reuse cache, as `import`
    /// would); the focus when omitted.
    pub path: Option<PathBuf>,
    /// The state right after this event (a real event of the device).
    #[arg(long, allow_negative_numbers = true)]
    pub event_id: i64,
    /// Device ID (default: the focus's, else the lowest).
    #[arg(short = 'd', long, allow_negative_numbers = true)]
    pub device: Option<i64>,
    /// The text map, or one self-contained HTML page.
    #[arg(long, value_enum, default_value = "text")]
    pub format: SegmentsFormat,
    /// Write the output to FILE (a temporary file renamed over it) instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Print the JSON envelope.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct OomArgs {
    /// A SnapshotDB, or a snapshot (imported beside it through the reuse cache, as `import`
    /// would); the focus when omitted.
    pub path: Option<PathBuf>,
    /// Device ID to report (default: every device).
    #[arg(short = 'd', long, allow_negative_numbers = true)]
    pub device: Option<i64>,
    /// Callstack groups and largest live blocks shown per OOM event.
    #[arg(short = 'n', long, default_value_t = 10)]
    pub top: i64,
    /// The stack of each OOM's request in the text: every frame (all), or its Python
    /// frames only (python).
    #[arg(long, value_enum, default_value = "all")]
    pub stacks: StacksArg,
    /// Memory-category rules replacing the built-in ones (TOML; see docs/categories.md).
    #[arg(long, value_name = "RULES.toml")]
    pub categories: Option<PathBuf>,
    /// Print the JSON envelope.
    #[arg(long)]
    pub json: bool,
}

impl ReportCommand {
    pub fn json(&self) -> bool {
        match self {
            ReportCommand::PeakMemory(a) => a.json,
            ReportCommand::MemoryTree(a) => a.json,
            ReportCommand::Oom(a) => a.json,
            ReportCommand::Segments(a) => a.json,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MetricArg {
    Active,
    Allocated,
    Reserved,
}

impl From<MetricArg> for pt_snap_report::Metric {
    fn from(m: MetricArg) -> Self {
        match m {
            MetricArg::Active => Self::Active,
            MetricArg::Allocated => Self::Allocated,
            MetricArg::Reserved => Self::Reserved,
        }
    }
}

/// `report peak-memory --by`: what the live memory at the peak is grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GroupBy {
    Callstack,
    Category,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StacksArg {
    All,
    Python,
}

impl From<StacksArg> for pt_snap_report::Stacks {
    fn from(s: StacksArg) -> Self {
        match s {
            StacksArg::All => Self::All,
            StacksArg::Python => Self::Python,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TreeFormat {
    Text,
    Html,
}

#[derive(Debug, Args)]
pub struct PeakMemoryArgs {
    /// Path to database file (optional if configured).
    pub db_path: Option<PathBuf>,
    /// Device ID to report.
    #[arg(short = 'd', long, allow_negative_numbers = true)]
    pub device: Option<i64>,
    /// Peak metric to report.
    #[arg(long, value_enum, default_value = "active")]
    pub metric: MetricArg,
    /// Include the static memory group (default).
    #[arg(long, overrides_with = "exclude_static")]
    pub include_static: bool,
    /// Leave out static and preexisting memory.
    #[arg(long, overrides_with = "include_static")]
    pub exclude_static: bool,
    /// Maximum dynamic callstack groups (static/preexisting are extra).
    #[arg(short = 'n', long, default_value_t = 20, allow_negative_numbers = true)]
    pub limit: i64,
    /// Opt-in UTF-8 byte budget per callstack (0: identity only; negative: full text). Not
    /// a response byte cap or token budget.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub stack_bytes: i64,
    /// Stacks in the text: every frame (all, the reference's text), or each group's label
    /// and its Python frames only (python: what to read in a stacks='all' capture).
    #[arg(long, value_enum, default_value = "all")]
    pub stacks: StacksArg,
    /// First real event ID in peak range.
    #[arg(long, allow_negative_numbers = true)]
    pub start_id: Option<i64>,
    /// Last real event ID in peak range.
    #[arg(long, allow_negative_numbers = true)]
    pub end_id: Option<i64>,
    /// Group live memory at the peak by allocation callstack, or by memory category (a
    /// heuristic from the callstacks; see docs/categories.md).
    #[arg(long, value_enum, default_value = "callstack")]
    pub by: GroupBy,
    /// Memory-category rules replacing the built-in ones, with --by category (TOML; see
    /// docs/categories.md).
    #[arg(long, value_name = "RULES.toml")]
    pub categories: Option<PathBuf>,
    /// One report-wide deadline in seconds; <=0 disables.
    #[arg(long, allow_negative_numbers = true)]
    pub timeout: Option<f64>,
    #[command(flatten)]
    pub limits: crate::budget::WorkLimitArgs,
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct MemoryTreeArgs {
    /// Path to database (optional if configured).
    pub db_path: Option<PathBuf>,
    /// Analyze live memory after this event.
    #[arg(long, allow_negative_numbers = true)]
    pub event_id: i64,
    /// Device ID to report.
    #[arg(short = 'd', long, allow_negative_numbers = true)]
    pub device: Option<i64>,
    /// Include static and preexisting memory (default).
    #[arg(long, overrides_with = "exclude_static")]
    pub include_static: bool,
    /// Leave out static and preexisting memory.
    #[arg(long, overrides_with = "include_static")]
    pub exclude_static: bool,
    /// Minimum individual block size in bytes.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub min_size: i64,
    /// Text breakdown or interactive HTML flamegraph on stdout.
    #[arg(long, value_enum, default_value = "text")]
    pub format: TreeFormat,
    /// Frames in the tree: every frame (all, the reference's text), or the Python view
    /// (python: native frames of stacks with Python frames folded into their nearest
    /// Python caller). With --format html: the flamegraph's "Python frames" switch as the
    /// page opens (default: on when the tree has native frames) [default: all]
    #[arg(long, value_enum)]
    pub stacks: Option<StacksArg>,
    /// Query deadline in seconds; <=0 disables.
    #[arg(long, allow_negative_numbers = true)]
    pub timeout: Option<f64>,
    #[command(flatten)]
    pub limits: crate::budget::WorkLimitArgs,
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct JsonArgs {
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DbArgs {
    /// Path to the SQLite database (default: the focused one).
    pub db_path: Option<PathBuf>,
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct FocusArgs {
    /// Path to the SQLite database.
    pub db_path: Option<PathBuf>,
    /// Device ID to focus on.
    #[arg(short = 'd', long, allow_negative_numbers = true)]
    pub device: Option<i64>,
    /// Print a shell export for this session only.
    #[arg(long)]
    pub session: bool,
    /// Store the focus in the global config.
    #[arg(long)]
    pub global: bool,
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Clear all configuration.
    #[arg(long)]
    pub clear: bool,
    /// Show the config file path.
    #[arg(long)]
    pub path: bool,
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

impl Command {
    pub fn json(&self) -> bool {
        match self {
            Command::Import(a) => a.json,
            Command::Check(a) => a.json,
            Command::Overview(a) | Command::Metadata(a) => a.json,
            Command::Focus(a) => a.json,
            Command::Config(a) => a.json,
            Command::Skill(a) => a.command.json(),
            Command::Query(a) => a.json,
            Command::Capabilities(a) => a.json,
            Command::Report(r) => r.json(),
            Command::Split(a) => a.json,
            Command::Diff(a) => a.json,
            Command::Ranks(a) => a.json,
            Command::Export(a) => a.json,
            #[cfg(feature = "sql")]
            Command::Sql(a) => a.json,
            #[cfg(not(feature = "sql"))]
            Command::Sql(a) => a.json(),
            Command::View(_) => false,
        }
    }
}

#[derive(Debug, Args)]
pub struct SkillArgs {
    #[command(subcommand)]
    pub command: SkillCommand,
}

#[derive(Debug, Subcommand)]
pub enum SkillCommand {
    /// List bundled agent skills and whether they are installed.
    List(SkillListArgs),
    /// Install bundled agent skills into shared agent, Claude, Cursor, Codex, or custom
    /// directories.
    Install(SkillInstallArgs),
    /// Replace outdated installed skills with the bundled copies.
    Upgrade(SkillUpgradeArgs),
    /// Remove bundled agent skills.
    ///
    /// Without --target, --project, or --dir, remove every SKILL.md copy that `pt-snap skill
    /// list` would report. A same-named path without SKILL.md aborts the whole uninstall. Use
    /// those flags to limit destinations.
    Uninstall(SkillUninstallArgs),
}

impl SkillCommand {
    pub fn json(&self) -> bool {
        match self {
            SkillCommand::List(a) => a.json,
            SkillCommand::Install(a) => a.json,
            SkillCommand::Upgrade(a) => a.json,
            SkillCommand::Uninstall(a) => a.json,
        }
    }
}

#[derive(Debug, Args)]
pub struct SkillListArgs {
    /// Comma-separated hosts to inspect: agents,claude,cursor,codex
    #[arg(short = 't', long)]
    pub target: Option<String>,
    /// Inspect only project-local skill directories
    #[arg(long)]
    pub project: bool,
    /// Inspect only user-level skill directories
    #[arg(long)]
    pub user: bool,
    /// Inspect this skills directory instead of built-in agent/Claude/Cursor/Codex paths
    #[arg(long = "dir")]
    pub dir: Option<PathBuf>,
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SkillInstallArgs {
    /// Skill names to install. Omit to install every bundled skill.
    #[arg(value_name = "names")]
    pub names: Vec<String>,
    /// Comma-separated hosts: agents,claude,cursor,codex (default: agents,claude)
    #[arg(short = 't', long)]
    pub target: Option<String>,
    /// Install into the current project
    #[arg(long)]
    pub project: bool,
    /// Replace existing skills that differ
    #[arg(long)]
    pub force: bool,
    /// Install into this skills directory (Windows, other agents, or a custom path)
    #[arg(long = "dir")]
    pub dir: Option<PathBuf>,
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SkillUpgradeArgs {
    /// Skill names to upgrade. Omit to upgrade every installed bundled skill.
    #[arg(value_name = "names")]
    pub names: Vec<String>,
    /// Comma-separated hosts: agents,claude,cursor,codex (default: agents,claude)
    #[arg(short = 't', long)]
    pub target: Option<String>,
    /// Upgrade skills in the current project
    #[arg(long)]
    pub project: bool,
    /// Upgrade skills in this directory instead of a built-in host
    #[arg(long = "dir")]
    pub dir: Option<PathBuf>,
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SkillUninstallArgs {
    /// Skill names to uninstall. Omit to uninstall every bundled skill.
    #[arg(value_name = "names")]
    pub names: Vec<String>,
    /// Comma-separated hosts: agents,claude,cursor,codex. Defaults to agents,claude when
    /// --project is set
    #[arg(short = 't', long)]
    pub target: Option<String>,
    /// Uninstall skills from the current project
    #[arg(long)]
    pub project: bool,
    /// Uninstall skills from this directory instead of a built-in host
    #[arg(long = "dir")]
    pub dir: Option<PathBuf>,
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}
