//! A SnapshotDB as Parquet tables (`pt-snap export --format parquet`, `docs/parquet.md`).
//!
//! Four tables, each one Parquet part per (job, rank) of a Hive-partitioned dataset
//! `DIR/<table>/job=<J>/rank=<R>/part-0.parquet`:
//!
//! * `events`: every trace event of every device (`trace_entry_<d>`), the action by name,
//!   the time it was recorded where the database kept it (`pt_snap_x_event_time_<d>`);
//! * `blocks`: every block lifetime (`Analyzer::lifetimes`), the state by name;
//! * `callstacks`: every callstack with its text, its text normalised to match across
//!   machines (`pt_snap_report::diff`'s key) and its frames as a list of structs;
//! * `summary`: one row per device with the fields `pt-snap ranks --json` gives that row
//!   (`pt_snap_report::ranks`), but those judged against the rest of a set.
//!
//! The partition columns `job` and `rank` are in the directory names only (Hive's layout):
//! every reader of such datasets (DataFusion, Spark, DuckDB, pyarrow) adds them. Each part's
//! key-value metadata carries the SHA-256 of the input it was made from, so an export can
//! tell a part it would write again. This crate builds parts as bytes, reads them from any
//! [`ChunkReader`], and writes and keeps them in the dataset's directory ([`layout`]).

#![forbid(unsafe_code)]

pub mod layout;
pub mod summary;

pub use summary::{read_summary, read_summary_ranges, SummaryError, SummaryRank};

use std::sync::{mpsc, Arc};

use arrow_array::builder::{
    BooleanBuilder, Int64Builder, ListBuilder, StringBuilder, StructBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::reader::{ChunkReader, FileReader, SerializedFileReader};
use parquet::schema::types::ColumnPath;
use pt_snap_query::{Analyzer, CallstackRow, EventRow, QueryError};
use serde_json::Value as Json;

/// The layout version of the parts this crate writes (`pt_snap.format` in their metadata).
/// A part of another version is written again, whatever its source.
pub const FORMAT: &str = "pt-snap-parquet-1";
/// Key-value metadata: the SHA-256 (hex) of the snapshot or database the part was made from.
pub const KEY_SOURCE_SHA256: &str = "pt_snap.source_sha256";
pub const KEY_FORMAT: &str = "pt_snap.format";
pub const KEY_JOB: &str = "pt_snap.job";
pub const KEY_RANK: &str = "pt_snap.rank";
pub const KEY_SOURCE: &str = "pt_snap.source";
/// The file name of a partition's one part.
pub const PART_NAME: &str = "part-0.parquet";

/// Rows per record batch (and so the most any column builder holds at once).
const BATCH_ROWS: usize = 65_536;

/// The four tables, in the order they are written and listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Table {
    Events,
    Blocks,
    Callstacks,
    Summary,
}

impl Table {
    pub const ALL: [Table; 4] = [
        Table::Events,
        Table::Blocks,
        Table::Callstacks,
        Table::Summary,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Table::Events => "events",
            Table::Blocks => "blocks",
            Table::Callstacks => "callstacks",
            Table::Summary => "summary",
        }
    }

    /// The table's columns (the partition columns `job` and `rank` aside).
    pub fn schema(self) -> SchemaRef {
        let i64_ = |name: &str| Field::new(name, DataType::Int64, true);
        let str_ = |name: &str| Field::new(name, DataType::Utf8, true);
        let fields = match self {
            Table::Events => vec![
                Field::new("device", DataType::Int64, false),
                Field::new("id", DataType::Int64, false),
                str_("action"),
                i64_("address"),
                i64_("size"),
                i64_("stream"),
                i64_("time_us"),
                i64_("allocated"),
                i64_("active"),
                i64_("reserved"),
                i64_("callstack_id"),
            ],
            Table::Blocks => vec![
                Field::new("device", DataType::Int64, false),
                Field::new("id", DataType::Int64, false),
                Field::new("address", DataType::Int64, false),
                Field::new("size", DataType::Int64, false),
                str_("state"),
                Field::new("alloc_event_id", DataType::Int64, false),
                Field::new("free_event_id", DataType::Int64, false),
                i64_("callstack_id"),
            ],
            Table::Callstacks => vec![
                Field::new("id", DataType::Int64, false),
                str_("text"),
                str_("normalized"),
                frames_field("frames"),
            ],
            Table::Summary => vec![
                str_("path"),
                str_("rank_source"),
                Field::new("device", DataType::Int64, false),
                i64_("peak_allocated"),
                i64_("peak_allocated_event_id"),
                i64_("peak_active"),
                i64_("peak_active_event_id"),
                i64_("peak_reserved"),
                i64_("peak_reserved_event_id"),
                i64_("peak_allocated_time_us"),
                i64_("peak_active_time_us"),
                i64_("peak_reserved_time_us"),
                str_("time_us_status"),
                i64_("reserved_minus_allocated"),
                i64_("oom_events"),
                str_("top_group_metric"),
                i64_("top_group_event_id"),
                str_("top_group_category"),
                i64_("top_group_size_bytes"),
                i64_("top_group_block_count"),
                str_("top_group_callstack"),
                frames_field("top_group_frames"),
                str_("input"),
                str_("db_path"),
                Field::new("reused", DataType::Boolean, true),
                i64_("lenient_replay_issues"),
            ],
        };
        Arc::new(Schema::new(fields))
    }
}

/// The struct of one frame, as `frames` lists hold it.
fn frame_fields() -> Fields {
    Fields::from(vec![
        Field::new("name", DataType::Utf8, true),
        Field::new("filename", DataType::Utf8, true),
        Field::new("line", DataType::Int64, true),
    ])
}

fn frames_field(name: &str) -> Field {
    Field::new(
        name,
        DataType::List(Arc::new(Field::new(
            "element",
            DataType::Struct(frame_fields()),
            true,
        ))),
        true,
    )
}

fn frames_builder() -> ListBuilder<StructBuilder> {
    ListBuilder::new(StructBuilder::from_fields(frame_fields(), 0)).with_field(Arc::new(
        Field::new("element", DataType::Struct(frame_fields()), true),
    ))
}

fn append_frame(list: &mut ListBuilder<StructBuilder>, name: &str, filename: &str, line: i64) {
    let s = list.values();
    s.field_builder::<StringBuilder>(0)
        .expect("name")
        .append_value(name);
    s.field_builder::<StringBuilder>(1)
        .expect("filename")
        .append_value(filename);
    s.field_builder::<Int64Builder>(2)
        .expect("line")
        .append_value(line);
    s.append(true);
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Query(#[from] QueryError),
    #[error("cannot write Parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error("cannot build Arrow arrays: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    #[error("cannot write Parquet: {0}")]
    Encoder(String),
}

/// Who a part belongs to and what it was made from: its key-value metadata.
#[derive(Debug, Clone)]
pub struct PartInfo {
    pub source_sha256: String,
    pub job: String,
    pub rank: u64,
    /// The input as given (for people reading the file alone).
    pub source: String,
}

impl PartInfo {
    fn key_values(&self) -> Vec<KeyValue> {
        vec![
            KeyValue::new(KEY_FORMAT.to_owned(), FORMAT.to_owned()),
            KeyValue::new(KEY_SOURCE_SHA256.to_owned(), self.source_sha256.clone()),
            KeyValue::new(KEY_JOB.to_owned(), self.job.clone()),
            KeyValue::new(KEY_RANK.to_owned(), self.rank.to_string()),
            KeyValue::new(KEY_SOURCE.to_owned(), self.source.clone()),
        ]
    }
}

/// A part being written into memory, batch by batch.
/// Encoding runs on a thread of its own, fed batch by batch through a short queue, so that
/// reading the database's rows and encoding the previous batch overlap.
struct Part {
    schema: SchemaRef,
    batches: Option<mpsc::SyncSender<RecordBatch>>,
    encoder: std::thread::JoinHandle<Result<Vec<u8>, parquet::errors::ParquetError>>,
    rows: u64,
}

impl Part {
    fn new(table: Table, info: &PartInfo) -> Result<Self, ExportError> {
        let schema = table.schema();
        // Snappy: fast, pure Rust, and read by every engine. Statistics per column chunk
        // (min/max per row group: enough to skip row groups by event id or size; per page
        // cost a fifth of the export). Dictionary encoding only for the columns of a few
        // distinct texts: on the integer columns (mostly distinct) the writer tries it, gives
        // it up and pays for both.
        let mut props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_statistics_enabled(EnabledStatistics::Chunk)
            .set_dictionary_enabled(false);
        for column in [
            "action",
            "state",
            "top_group_category",
            "rank_source",
            "input",
        ] {
            props = props.set_column_dictionary_enabled(ColumnPath::from(column), true);
        }
        let props = props
            .set_key_value_metadata(Some(info.key_values()))
            .set_created_by(format!("pt-snap {}", env!("CARGO_PKG_VERSION")))
            .build();
        let mut writer = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props))?;
        let (batches, queue) = mpsc::sync_channel::<RecordBatch>(2);
        let encoder = std::thread::spawn(move || {
            for batch in queue {
                writer.write(&batch)?;
            }
            writer.into_inner()
        });
        Ok(Part {
            schema,
            batches: Some(batches),
            encoder,
            rows: 0,
        })
    }

    fn write(&mut self, columns: Vec<ArrayRef>) -> Result<(), ExportError> {
        let batch = RecordBatch::try_new(self.schema.clone(), columns)?;
        self.rows += batch.num_rows() as u64;
        if batch.num_rows() > 0 {
            let sent = self.batches.as_ref().map(|b| b.send(batch));
            if !matches!(sent, Some(Ok(()))) {
                // The encoder stopped: its error is the part's.
                self.batches = None;
                return Err(self.join_error());
            }
        }
        Ok(())
    }

    fn join_error(&mut self) -> ExportError {
        let placeholder = std::thread::spawn(|| Ok(Vec::new()));
        let encoder = std::mem::replace(&mut self.encoder, placeholder);
        match encoder.join() {
            Ok(Err(e)) => e.into(),
            Ok(Ok(_)) => ExportError::Encoder("the encoder stopped early".into()),
            Err(_) => ExportError::Encoder("the encoder panicked".into()),
        }
    }

    fn finish(mut self) -> Result<Built, ExportError> {
        self.batches = None;
        let rows = self.rows;
        let bytes = match self.encoder.join() {
            Ok(result) => result?,
            Err(_) => return Err(ExportError::Encoder("the encoder panicked".into())),
        };
        Ok(Built { bytes, rows })
    }
}

/// One finished part: the file's bytes and its row count.
#[derive(Debug)]
pub struct Built {
    pub bytes: Vec<u8>,
    pub rows: u64,
}

fn state_name(code: i64) -> Option<&'static str> {
    pt_snap_db::schema::BLOCK_STATES
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, n)| *n)
}

/// `table`'s part of one file: the rows `analyzer` holds, or for the summary the `ranks`
/// rows already made of it (`summary`).
pub fn part(
    table: Table,
    analyzer: &Analyzer,
    summary: &[Json],
    info: &PartInfo,
) -> Result<Built, ExportError> {
    match table {
        Table::Events => events_part(analyzer, info),
        Table::Blocks => blocks_part(analyzer, info),
        Table::Callstacks => callstacks_part(analyzer, info),
        Table::Summary => summary_part(summary, info),
    }
}

/// `events`: every device's trace, in (device, id) order.
pub fn events_part(analyzer: &Analyzer, info: &PartInfo) -> Result<Built, ExportError> {
    let mut part = Part::new(Table::Events, info)?;
    #[derive(Default)]
    struct Columns {
        device: Int64Builder,
        id: Int64Builder,
        action: StringBuilder,
        address: Int64Builder,
        size: Int64Builder,
        stream: Int64Builder,
        time_us: Int64Builder,
        allocated: Int64Builder,
        active: Int64Builder,
        reserved: Int64Builder,
        callstack: Int64Builder,
        len: usize,
    }
    impl Columns {
        fn push(&mut self, device: i64, e: &EventRow) {
            self.device.append_value(device);
            self.id.append_value(e.id);
            // A code outside the dictionary (a hand-made database) keeps its number.
            self.action.append_option(e.action.name());
            self.address.append_option(e.address);
            self.size.append_option(e.size);
            self.stream.append_option(e.stream);
            self.time_us.append_option(e.time_us);
            self.allocated.append_option(e.allocated);
            self.active.append_option(e.active);
            self.reserved.append_option(e.reserved);
            self.callstack.append_option(e.callstack);
            self.len += 1;
        }
        fn take(&mut self) -> Vec<ArrayRef> {
            self.len = 0;
            vec![
                Arc::new(self.device.finish()),
                Arc::new(self.id.finish()),
                Arc::new(self.action.finish()),
                Arc::new(self.address.finish()),
                Arc::new(self.size.finish()),
                Arc::new(self.stream.finish()),
                Arc::new(self.time_us.finish()),
                Arc::new(self.allocated.finish()),
                Arc::new(self.active.finish()),
                Arc::new(self.reserved.finish()),
                Arc::new(self.callstack.finish()),
            ]
        }
    }
    let mut columns = Columns::default();
    let mut failure: Option<ExportError> = None;
    for &device in analyzer.devices() {
        analyzer.for_each_event(device, &mut |e| {
            columns.push(device, e);
            if columns.len == BATCH_ROWS && failure.is_none() {
                if let Err(err) = part.write(columns.take()) {
                    failure = Some(err);
                }
            }
        })?;
        if let Some(err) = failure.take() {
            return Err(err);
        }
    }
    part.write(columns.take())?;
    part.finish()
}

/// `blocks`: every device's block lifetimes (`Analyzer::lifetimes`), in (device, id) order.
pub fn blocks_part(analyzer: &Analyzer, info: &PartInfo) -> Result<Built, ExportError> {
    let mut part = Part::new(Table::Blocks, info)?;
    for &device in analyzer.devices() {
        let (_, lifetimes) = analyzer.lifetimes(Some(device))?;
        for chunk in lifetimes.chunks(BATCH_ROWS) {
            let n = chunk.len();
            let col = |f: &dyn Fn(&pt_snap_query::Lifetime) -> i64| -> ArrayRef {
                Arc::new(arrow_array::Int64Array::from_iter_values(
                    chunk.iter().map(f),
                ))
            };
            let mut state = StringBuilder::with_capacity(n, n * 16);
            for b in chunk {
                match b.state {
                    Some(s) => match state_name(s) {
                        Some(name) => state.append_value(name),
                        None => state.append_value(s.to_string()),
                    },
                    None => state.append_null(),
                }
            }
            part.write(vec![
                col(&|_| device),
                col(&|b| b.block),
                col(&|b| b.address),
                col(&|b| b.size),
                Arc::new(state.finish()),
                col(&|b| b.alloc),
                col(&|b| b.free),
                Arc::new(arrow_array::Int64Array::from_iter(
                    chunk.iter().map(|b| b.callstack),
                )),
            ])?;
        }
    }
    part.finish()
}

/// The normalised text of a callstack text: each frame `file:line function` with the file's
/// machine-independent key path (`pt_snap_report::diff::normalize`), outermost first.
pub fn normalized_text(text: &str) -> String {
    let frames = pt_snap_report::diff::normalize_stack(text);
    let mut out = String::with_capacity(text.len() / 2);
    for (i, f) in frames.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&f.file);
        if let Some(line) = f.line {
            out.push(':');
            out.push_str(&line.to_string());
        }
        out.push(' ');
        out.push_str(&f.function);
    }
    out
}

/// `callstacks`: every callstack with its text, normalised text and frames, in id order.
pub fn callstacks_part(analyzer: &Analyzer, info: &PartInfo) -> Result<Built, ExportError> {
    let mut part = Part::new(Table::Callstacks, info)?;
    let mut id = Int64Builder::new();
    let mut text = StringBuilder::new();
    let mut normalized = StringBuilder::new();
    let mut frames = frames_builder();
    let mut len = 0usize;
    let mut failure: Option<ExportError> = None;
    let mut flush = |id: &mut Int64Builder,
                     text: &mut StringBuilder,
                     normalized: &mut StringBuilder,
                     frames: &mut ListBuilder<StructBuilder>|
     -> Result<(), ExportError> {
        part.write(vec![
            Arc::new(id.finish()),
            Arc::new(text.finish()),
            Arc::new(normalized.finish()),
            Arc::new(frames.finish()),
        ])
    };
    analyzer.for_each_callstack(&mut |row: &CallstackRow| {
        let (t, fs) = (row.text, row.frames);
        id.append_value(row.id);
        text.append_option(t);
        normalized.append_option(t.map(normalized_text));
        for f in fs {
            append_frame(&mut frames, &f.name, &f.filename, f.line);
        }
        frames.append(true);
        len += 1;
        if len == BATCH_ROWS && failure.is_none() {
            len = 0;
            if let Err(e) = flush(&mut id, &mut text, &mut normalized, &mut frames) {
                failure = Some(e);
            }
        }
    })?;
    if let Some(e) = failure {
        return Err(e);
    }
    flush(&mut id, &mut text, &mut normalized, &mut frames)?;
    part.finish()
}

/// `summary`: the rows `pt-snap ranks --json` gives for one file
/// (`pt_snap_report::ranks::RanksReport::rows_json`), one per device.
pub fn summary_part(rows: &[Json], info: &PartInfo) -> Result<Built, ExportError> {
    let mut part = Part::new(Table::Summary, info)?;
    let schema = Table::Summary.schema();
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    let top = |r: &Json, k: &str| -> Json { r["top_callstack_group"][k].clone() };
    let value = |r: &Json, name: &str| -> Json {
        match name.strip_prefix("top_group_") {
            Some(k) => top(r, k),
            None => r[name].clone(),
        }
    };
    for field in schema.fields() {
        let name = field.name().as_str();
        let array: ArrayRef = match field.data_type() {
            DataType::Int64 => Arc::new(arrow_array::Int64Array::from_iter(
                rows.iter().map(|r| value(r, name).as_i64()),
            )),
            DataType::Utf8 => Arc::new(arrow_array::StringArray::from_iter(
                rows.iter()
                    .map(|r| value(r, name).as_str().map(str::to_owned)),
            )),
            DataType::Boolean => {
                let mut b = BooleanBuilder::new();
                for r in rows {
                    b.append_option(value(r, name).as_bool());
                }
                Arc::new(b.finish())
            }
            DataType::List(_) => {
                let mut list = frames_builder();
                for r in rows {
                    match value(r, name).as_array() {
                        Some(frames) => {
                            for f in frames {
                                append_frame(
                                    &mut list,
                                    f["name"].as_str().unwrap_or_default(),
                                    f["filename"].as_str().unwrap_or_default(),
                                    f["line"].as_i64().unwrap_or_default(),
                                );
                            }
                            list.append(true);
                        }
                        None => list.append(false),
                    }
                }
                Arc::new(list.finish())
            }
            other => unreachable!("summary has no {other} column"),
        };
        columns.push(array);
    }
    part.write(columns)?;
    part.finish()
}

/// What a part's footer says: its key-value metadata and its row count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartMeta {
    pub key_values: Vec<(String, String)>,
    pub rows: i64,
}

impl PartMeta {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.key_values
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Made by this layout version from the input whose SHA-256 is `source_sha256`.
    pub fn is_current(&self, source_sha256: &str) -> bool {
        self.get(KEY_FORMAT) == Some(FORMAT) && self.get(KEY_SOURCE_SHA256) == Some(source_sha256)
    }
}

/// A part's footer; `None` when it is not a readable Parquet file.
pub fn part_metadata<R: ChunkReader + 'static>(reader: R) -> Option<PartMeta> {
    let file = SerializedFileReader::new(reader).ok()?;
    let meta = file.metadata().file_metadata();
    let key_values = meta
        .key_value_metadata()
        .map(|kv| {
            kv.iter()
                .map(|k| (k.key.clone(), k.value.clone().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    Some(PartMeta {
        key_values,
        rows: meta.num_rows(),
    })
}
