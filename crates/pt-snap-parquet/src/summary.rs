//! Reading a `summary` table back: the ranks of a job as `pt-snap ranks` summarised them,
//! without their snapshots. The browser's Ranks view shows thousands of ranks this way.
//!
//! A reader takes a part as the export wrote it (`summary/job=J/rank=R/part-0.parquet`) or
//! the whole table rewritten as one file by another engine (Spark's or DuckDB's
//! `summary.parquet`, with `job` and `rank` as columns). Each rank's job and rank come from
//! its columns when the file has them, else from the `job=` / `rank=` directories of its
//! path, else from the part's footer.

use std::collections::hash_map::{Entry, HashMap};

use bytes::Bytes;
use parquet::errors::ParquetError;
use parquet::file::metadata::{FooterTail, ParquetMetaDataReader};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::FOOTER_SIZE;
use parquet::record::{Field, Row};
use parquet::schema::types::SchemaDescriptor;
use pt_snap_query::NoTimes;
use pt_snap_report::ranks::{
    DeviceSummary, FileSummary, Frame, InputKind, PeakTimes, RankSource, TopGroup,
};
use pt_snap_report::{Peak, Peaks};
use serde::{Deserialize, Serialize};

use crate::{Table, KEY_JOB, KEY_RANK};

/// One rank of a summary table: the job it was exported under, and the file as `ranks`
/// summarised it (its devices always read: a rank that failed has no rows in the table).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryRank {
    pub job: String,
    pub file: FileSummary,
}

#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    #[error("not a readable Parquet file: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error(
        "not a pt-snap summary table: it has no column `{0}` (export one with `pt-snap export --format parquet`)"
    )]
    NotSummary(String),
    #[error("cannot read the file: {0}")]
    Read(String),
    #[error("no rank for its rows: no `rank` column, no `rank=` directory in `{0}`, no `pt_snap.rank` in its footer")]
    NoRank(String),
}

/// The ranks in one Parquet file of a summary table, in the order of their first rows. `path` is
/// where the file was found (relative to what was chosen), read for `job=` and `rank=`.
///
/// Rows are read with Parquet's record API rather than as Arrow arrays: a summary table is
/// small, and the browser's worker, which reads it, stays megabytes smaller without Arrow's
/// readers and casts.
pub fn read_summary(bytes: impl Into<Bytes>, path: &str) -> Result<Vec<SummaryRank>, SummaryError> {
    let file = SerializedFileReader::new(bytes.into())?;
    let meta = file.metadata().file_metadata();
    let footer = |key: &str| {
        meta.key_value_metadata()
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
    has_summary_columns(meta.schema_descr())?;
    let mut ranks: Vec<SummaryRank> = Vec::new();
    // An engine's rewrite may order rows by anything (device, peak), so a rank's devices
    // are gathered wherever its rows stand, not only when they are adjacent.
    let mut index: HashMap<(String, u64, String), usize> = HashMap::new();
    for row in file.get_row_iter(None)? {
        let row = Values(row?);
        let job = row
            .get("job")
            .and_then(text)
            .or_else(|| job.clone())
            .unwrap_or_default();
        let rank = row
            .get("rank")
            .and_then(int)
            .and_then(|r| u64::try_from(r).ok())
            .or(rank)
            .ok_or_else(|| SummaryError::NoRank(path.to_owned()))?;
        let path = row.text("path").unwrap_or_default();
        let device = row.device();
        match index.entry((job, rank, path)) {
            Entry::Occupied(at) => {
                if let Ok(devices) = &mut ranks[*at.get()].file.devices {
                    devices.push(device);
                }
            }
            Entry::Vacant(at) => {
                let (job, rank, path) = at.key().clone();
                at.insert(ranks.len());
                let rank_source = match row.text("rank_source").as_deref() {
                    Some("position") => RankSource::Position,
                    _ => RankSource::Name,
                };
                let input = match row.text("input").as_deref() {
                    Some("database") => InputKind::Database,
                    _ => InputKind::Snapshot,
                };
                ranks.push(SummaryRank {
                    job,
                    file: FileSummary {
                        path,
                        rank,
                        rank_source,
                        input,
                        db_path: row.text("db_path"),
                        reused: row.get("reused").and_then(flag),
                        lenient_replay_issues: row.int("lenient_replay_issues"),
                        devices: Ok(vec![device]),
                    },
                });
            }
        }
    }
    Ok(ranks)
}

/// [`read_summary`] of a file of `len` bytes read through `read(start, end)`: its footer
/// first, so that a file that is not a summary table (an `events` part of gigabytes, chosen
/// by mistake) is turned down having read only its footer.
pub fn read_summary_ranges(
    len: u64,
    path: &str,
    mut read: impl FnMut(u64, u64) -> std::io::Result<Vec<u8>>,
) -> Result<Vec<SummaryRank>, SummaryError> {
    let read_error = |e: std::io::Error| SummaryError::Read(e.to_string());
    // Shorter than a footer and its magic: Parquet's own reader says what is wrong.
    if len < FOOTER_SIZE as u64 + 4 {
        return read_summary(read(0, len).map_err(read_error)?, path);
    }
    let tail = read(len - FOOTER_SIZE as u64, len).map_err(read_error)?;
    let metadata_len = FooterTail::try_from(tail.as_slice())?.metadata_length() as u64;
    let Some(start) = (len - FOOTER_SIZE as u64).checked_sub(metadata_len) else {
        return Err(SummaryError::Parquet(ParquetError::General(format!(
            "its footer says {metadata_len} bytes of metadata, more than the file holds"
        ))));
    };
    let metadata = read(start, len - FOOTER_SIZE as u64).map_err(read_error)?;
    let metadata = ParquetMetaDataReader::decode_metadata(&metadata)?;
    has_summary_columns(metadata.file_metadata().schema_descr())?;
    read_summary(read(0, len).map_err(read_error)?, path)
}

/// Every column the export writes to `summary` is there (another engine may add some).
fn has_summary_columns(schema: &SchemaDescriptor) -> Result<(), SummaryError> {
    let columns: Vec<&str> = schema
        .root_schema()
        .get_fields()
        .iter()
        .map(|f| f.name())
        .collect();
    match Table::Summary
        .schema()
        .fields()
        .iter()
        .find(|field| !columns.contains(&field.name().as_str()))
    {
        Some(missing) => Err(SummaryError::NotSummary(missing.name().clone())),
        None => Ok(()),
    }
}

/// One row's values by column name. Values are read by what they hold, not by the type
/// the export writes, so that a table another engine rewrote (32-bit integers, partition
/// columns as text, text as bytes) reads alike.
struct Values(Row);

impl Values {
    fn get(&self, name: &str) -> Option<&Field> {
        self.0
            .get_column_iter()
            .find(|(n, _)| n.as_str() == name)
            .map(|(_, f)| f)
    }

    fn int(&self, name: &str) -> Option<i64> {
        self.get(name).and_then(int)
    }

    fn text(&self, name: &str) -> Option<String> {
        self.get(name).and_then(text)
    }

    fn device(&self) -> DeviceSummary {
        let peak = |name: &str| Peak {
            bytes: self.int(&format!("peak_{name}")),
            event_id: self.int(&format!("peak_{name}_event_id")),
        };
        let time = |name: &str| self.int(&format!("peak_{name}_time_us"));
        let unknown = match self.text("time_us_status").as_deref() {
            Some("not_in_trace") => Some(NoTimes::NotInTrace),
            Some("not_in_database") => Some(NoTimes::NotInDatabase),
            Some("dataset") => Some(NoTimes::Dataset),
            _ => None,
        };
        let top_group = self.int("top_group_event_id").map(|event_id| TopGroup {
            event_id,
            category: self.text("top_group_category").unwrap_or_default(),
            size_bytes: self.int("top_group_size_bytes").unwrap_or_default(),
            block_count: self.int("top_group_block_count").unwrap_or_default(),
            callstack: self.text("top_group_callstack").unwrap_or_default(),
            frames: self.get("top_group_frames").and_then(frames),
            // The summary table keeps the top group only (its columns are `ranks`' first).
            largest_dynamic: None,
        });
        DeviceSummary {
            device: self.int("device").unwrap_or_default(),
            peaks: Peaks {
                allocated: peak("allocated"),
                active: peak("active"),
                reserved: peak("reserved"),
            },
            reserved_minus_allocated: self.int("reserved_minus_allocated"),
            oom_events: self.int("oom_events").unwrap_or_default(),
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

fn int(field: &Field) -> Option<i64> {
    match field {
        Field::Long(v) => Some(*v),
        Field::Int(v) => Some(i64::from(*v)),
        Field::Short(v) => Some(i64::from(*v)),
        Field::Byte(v) => Some(i64::from(*v)),
        Field::UInt(v) => Some(i64::from(*v)),
        Field::UShort(v) => Some(i64::from(*v)),
        Field::UByte(v) => Some(i64::from(*v)),
        Field::ULong(v) => i64::try_from(*v).ok(),
        Field::Str(s) => s.parse().ok(),
        _ => None,
    }
}

fn text(field: &Field) -> Option<String> {
    match field {
        Field::Str(s) => Some(s.clone()),
        Field::Bytes(b) => std::str::from_utf8(b.data()).ok().map(str::to_owned),
        Field::Long(_) | Field::Int(_) | Field::ULong(_) | Field::UInt(_) => {
            int(field).map(|v| v.to_string())
        }
        _ => None,
    }
}

fn flag(field: &Field) -> Option<bool> {
    match field {
        Field::Bool(b) => Some(*b),
        _ => None,
    }
}

/// A list of frame structs (`None` for a null list, as the export writes a database
/// without structured frames).
fn frames(field: &Field) -> Option<Vec<Frame>> {
    let Field::ListInternal(list) = field else {
        return None;
    };
    Some(
        list.elements()
            .iter()
            .filter_map(|item| {
                let Field::Group(frame) = item else {
                    return None;
                };
                let frame = Values(frame.clone());
                Some(Frame {
                    name: frame.text("name").unwrap_or_default(),
                    filename: frame.text("filename").unwrap_or_default(),
                    line: frame.int("line").unwrap_or_default(),
                })
            })
            .collect(),
    )
}
