//! Reading a `summary` table back: the ranks of a job as `pt-snap ranks` summarised them,
//! without their snapshots. The browser's Ranks view shows thousands of ranks this way.
//!
//! A reader takes a part as the export wrote it (`summary/job=J/rank=R/part-0.parquet`) or
//! the whole table rewritten as one file by another engine (Spark's or DuckDB's
//! `summary.parquet`, with `job` and `rank` as columns). Each rank's job and rank come from
//! its columns when the file has them, else from the `job=` / `rank=` directories of its
//! path, else from the part's footer.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{ArrowError, DataType};
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use pt_snap_query::NoTimes;
use pt_snap_report::ranks::{
    DeviceSummary, FileSummary, Frame, InputKind, PeakTimes, RankSource, TopGroup,
};
use pt_snap_report::{Peak, Peaks};
use serde::{Deserialize, Serialize};

use crate::{Table, KEY_JOB, KEY_RANK};

/// One rank of a summary table: one exported file and its devices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryRank {
    pub job: String,
    pub rank: u64,
    /// How the export read the rank: `name` or `position` (`ranks`' `rank_source`).
    pub rank_source: String,
    /// The snapshot or database the export read.
    pub path: String,
    /// `snapshot` or `database`.
    pub input: String,
    /// The database the export read: the input itself, or the snapshot's import.
    pub db_path: Option<String>,
    /// Whether the export reused the snapshot's import.
    pub reused: Option<bool>,
    pub lenient_replay_issues: Option<i64>,
    pub devices: Vec<DeviceSummary>,
}

impl SummaryRank {
    /// The file as `pt_snap_report::ranks` judges a set of them.
    pub fn file_summary(&self) -> FileSummary {
        FileSummary {
            path: self.path.clone(),
            rank: self.rank,
            rank_source: if self.rank_source == "position" {
                RankSource::Position
            } else {
                RankSource::Name
            },
            input: if self.input == "database" {
                InputKind::Database
            } else {
                InputKind::Snapshot
            },
            db_path: self.db_path.clone(),
            reused: self.reused,
            lenient_replay_issues: self.lenient_replay_issues,
            devices: Ok(self.devices.clone()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    #[error("not a readable Parquet file: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error("cannot read the Parquet columns: {0}")]
    Arrow(#[from] ArrowError),
    #[error(
        "not a pt-snap summary table: it has no column `{0}` (export one with `pt-snap export --format parquet`)"
    )]
    NotSummary(String),
    #[error("no rank for its rows: no `rank` column, no `rank=` directory in `{0}`, no `pt_snap.rank` in its footer")]
    NoRank(String),
}

/// The ranks in one Parquet file of a summary table, in the order of its rows. `path` is
/// where the file was found (relative to what was chosen), read for `job=` and `rank=`.
pub fn read_summary(bytes: impl Into<Bytes>, path: &str) -> Result<Vec<SummaryRank>, SummaryError> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes.into())?;
    let footer = |key: &str| {
        builder
            .metadata()
            .file_metadata()
            .key_value_metadata()
            .and_then(|kv| kv.iter().find(|k| k.key == key))
            .and_then(|k| k.value.clone())
    };
    let directory = |key: &str| {
        path.split('/')
            .find_map(|part| part.strip_prefix(key)?.strip_prefix('='))
            .map(str::to_owned)
    };
    // The directories first: they are what every engine reads as the partition columns, so
    // a part moved to another partition reads as the engines read it.
    let job = directory("job").or_else(|| footer(KEY_JOB));
    let rank = directory("rank")
        .or_else(|| footer(KEY_RANK))
        .and_then(|r| r.parse::<u64>().ok());
    let schema = builder.schema().clone();
    for field in Table::Summary.schema().fields() {
        if schema.field_with_name(field.name()).is_err() {
            return Err(SummaryError::NotSummary(field.name().clone()));
        }
    }
    let mut ranks: Vec<SummaryRank> = Vec::new();
    for batch in builder.build()? {
        let batch = batch?;
        let columns = Columns::of(&batch)?;
        for i in 0..batch.num_rows() {
            let job = columns
                .job
                .as_ref()
                .and_then(|c| text(c, i))
                .or_else(|| job.clone())
                .unwrap_or_default();
            let rank = columns
                .rank
                .as_ref()
                .and_then(|c| int(c, i))
                .and_then(|r| u64::try_from(r).ok())
                .or(rank)
                .ok_or_else(|| SummaryError::NoRank(path.to_owned()))?;
            let path = columns.text("path", i).unwrap_or_default();
            let device = columns.device(i);
            match ranks.last_mut() {
                Some(last) if last.job == job && last.rank == rank && last.path == path => {
                    last.devices.push(device)
                }
                _ => ranks.push(SummaryRank {
                    job,
                    rank,
                    rank_source: columns.text("rank_source", i).unwrap_or_default(),
                    path,
                    input: columns.text("input", i).unwrap_or_default(),
                    db_path: columns.text("db_path", i),
                    reused: columns.flag("reused", i),
                    lenient_replay_issues: columns.int("lenient_replay_issues", i),
                    devices: vec![device],
                }),
            }
        }
    }
    Ok(ranks)
}

/// One batch's columns, each cast to the type the export writes, so that a table another
/// engine rewrote (dictionary-encoded text, 32-bit integers, string partitions) reads alike.
struct Columns<'a> {
    batch: &'a RecordBatch,
    job: Option<ArrayRef>,
    rank: Option<ArrayRef>,
}

impl<'a> Columns<'a> {
    fn of(batch: &'a RecordBatch) -> Result<Self, ArrowError> {
        let cast = |name: &str, to: &DataType| {
            batch
                .column_by_name(name)
                .map(|c| arrow_cast::cast(c, to))
                .transpose()
        };
        Ok(Columns {
            batch,
            job: cast("job", &DataType::Utf8)?,
            rank: cast("rank", &DataType::Int64)?,
        })
    }

    fn column(&self, name: &str, to: &DataType) -> Option<ArrayRef> {
        let c = self.batch.column_by_name(name)?;
        if c.data_type() == to {
            return Some(Arc::clone(c));
        }
        arrow_cast::cast(c, to).ok()
    }

    fn int(&self, name: &str, i: usize) -> Option<i64> {
        int(&self.column(name, &DataType::Int64)?, i)
    }

    fn text(&self, name: &str, i: usize) -> Option<String> {
        text(&self.column(name, &DataType::Utf8)?, i)
    }

    fn flag(&self, name: &str, i: usize) -> Option<bool> {
        let c = self.column(name, &DataType::Boolean)?;
        let c = c.as_boolean_opt()?;
        c.is_valid(i).then(|| c.value(i))
    }

    fn device(&self, i: usize) -> DeviceSummary {
        let peak = |name: &str| Peak {
            bytes: self.int(&format!("peak_{name}"), i),
            event_id: self.int(&format!("peak_{name}_event_id"), i),
        };
        let time = |name: &str| self.int(&format!("peak_{name}_time_us"), i);
        let unknown = match self.text("time_us_status", i).as_deref() {
            Some("not_in_trace") => Some(NoTimes::NotInTrace),
            Some("not_in_database") => Some(NoTimes::NotInDatabase),
            Some("dataset") => Some(NoTimes::Dataset),
            _ => None,
        };
        let top_group = self.int("top_group_event_id", i).map(|event_id| TopGroup {
            event_id,
            category: self.text("top_group_category", i).unwrap_or_default(),
            size_bytes: self.int("top_group_size_bytes", i).unwrap_or_default(),
            block_count: self.int("top_group_block_count", i).unwrap_or_default(),
            callstack: self.text("top_group_callstack", i).unwrap_or_default(),
            frames: self
                .batch
                .column_by_name("top_group_frames")
                .and_then(|c| frames(c, i)),
        });
        DeviceSummary {
            device: self.int("device", i).unwrap_or_default(),
            peaks: Peaks {
                allocated: peak("allocated"),
                active: peak("active"),
                reserved: peak("reserved"),
            },
            reserved_minus_allocated: self.int("reserved_minus_allocated", i),
            oom_events: self.int("oom_events", i).unwrap_or_default(),
            top_group,
            peak_times: PeakTimes {
                allocated: time("allocated"),
                active: time("active"),
                reserved: time("reserved"),
                unknown,
            },
        }
    }
}

fn int(column: &ArrayRef, i: usize) -> Option<i64> {
    let c: &Int64Array = column.as_primitive_opt::<Int64Type>()?;
    c.is_valid(i).then(|| c.value(i))
}

fn text(column: &ArrayRef, i: usize) -> Option<String> {
    let c: &StringArray = column.as_string_opt::<i32>()?;
    c.is_valid(i).then(|| c.value(i).to_owned())
}

/// Row `i` of a list of frame structs (`None` for a null list, as the export writes a
/// database without structured frames).
fn frames(column: &ArrayRef, i: usize) -> Option<Vec<Frame>> {
    let list = match column.data_type() {
        DataType::List(_) => column.as_list::<i32>().clone(),
        DataType::LargeList(_) => {
            let cast = arrow_cast::cast(column, &DataType::List(list_item(column)?)).ok()?;
            cast.as_list::<i32>().clone()
        }
        _ => return None,
    };
    if list.is_null(i) {
        return None;
    }
    let items = list.value(i);
    let items = items.as_struct_opt()?;
    let field = |name: &str, to: &DataType| {
        items
            .column_by_name(name)
            .and_then(|c| arrow_cast::cast(c, to).ok())
    };
    let (names, files, lines) = (
        field("name", &DataType::Utf8)?,
        field("filename", &DataType::Utf8)?,
        field("line", &DataType::Int64)?,
    );
    Some(
        (0..items.len())
            .map(|k| Frame {
                name: text(&names, k).unwrap_or_default(),
                filename: text(&files, k).unwrap_or_default(),
                line: int(&lines, k).unwrap_or_default(),
            })
            .collect(),
    )
}

fn list_item(column: &ArrayRef) -> Option<arrow_schema::FieldRef> {
    match column.data_type() {
        DataType::LargeList(f) => Some(Arc::clone(f)),
        _ => None,
    }
}
