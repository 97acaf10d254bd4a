//! A summary table read back in the shapes it reaches a reader: the export's own parts, and
//! the whole table rewritten as one file by another engine (partition columns inside it,
//! other integer and text encodings).

use std::sync::Arc;

use arrow_array::{ArrayRef, DictionaryArray, Int32Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use pt_snap_parquet::{read_summary, read_summary_ranges, summary_part, PartInfo, SummaryError};
use pt_snap_report::ranks::{
    DeviceSummary, FileSummary, Frame, InputKind, PeakTimes, RankSource, RanksReport, TopGroup,
};
use pt_snap_report::{Metric, Peak, Peaks};

fn device(device: i64, active: i64) -> DeviceSummary {
    let peak = |b: i64, e: i64| Peak {
        bytes: Some(b),
        event_id: Some(e),
    };
    DeviceSummary {
        device,
        peaks: Peaks {
            allocated: peak(active - 10, 3),
            active: peak(active, 4),
            reserved: peak(active + 100, 5),
        },
        reserved_minus_allocated: Some(110),
        oom_events: device,
        top_group: Some(TopGroup {
            event_id: 4,
            category: "dynamic_live_at_event".into(),
            size_bytes: active / 2,
            block_count: 2,
            callstack: "f at a.py:1".into(),
            frames: Some(vec![Frame {
                name: "f".into(),
                filename: "a.py".into(),
                line: 1,
            }]),
            largest_dynamic: None,
        }),
        peak_times: PeakTimes {
            allocated: Some(30),
            active: None,
            reserved: Some(50),
            unknown: None,
        },
    }
}

fn file(rank: u64, devices: Vec<DeviceSummary>) -> FileSummary {
    FileSummary {
        path: format!("/runs/a/rank{rank}.pickle"),
        rank,
        rank_source: RankSource::Name,
        input: InputKind::Snapshot,
        db_path: Some(format!("/runs/a/rank{rank}.pickle.db")),
        reused: Some(false),
        lenient_replay_issues: None,
        devices: Ok(devices),
    }
}

/// The part the export writes for `file`, as bytes.
fn part_of(file: FileSummary) -> Vec<u8> {
    let rank = file.rank;
    let rows = RanksReport::new(Metric::Active, vec![file], None).rows_json();
    let info = PartInfo {
        source_sha256: "00".repeat(32),
        job: "a".into(),
        rank,
        source: format!("rank{rank}.pickle"),
    };
    summary_part(&rows, &info).unwrap().bytes
}

#[test]
fn an_exported_part_reads_back_as_the_file_it_was_made_of() {
    let made = file(3, vec![device(0, 1000), device(1, 2000)]);
    let bytes = part_of(made.clone());
    let read = read_summary(bytes.clone(), "x/summary/job=a/rank=3/part-0.parquet").unwrap();
    assert_eq!(read.len(), 1, "one file, both devices");
    let ranged = read_summary_ranges(
        bytes.len() as u64,
        "x/summary/job=a/rank=3/part-0.parquet",
        |a, b| Ok(bytes[a as usize..b as usize].to_vec()),
    )
    .unwrap();
    assert_eq!(ranged, read, "footer first, then the file");
    assert_eq!((read[0].job.as_str(), read[0].file.rank), ("a", 3));
    assert_eq!(read[0].file, made);
    // The directories are what engines read as the partition: a part moved reads as moved.
    let moved = read_summary(bytes.clone(), "summary/job=b/rank=7/part-0.parquet").unwrap();
    assert_eq!((moved[0].job.as_str(), moved[0].file.rank), ("b", 7));
    // Alone, without its directories: its footer says whose it is.
    let alone = read_summary(bytes, "part-0.parquet").unwrap();
    assert_eq!((alone[0].job.as_str(), alone[0].file.rank), ("a", 3));
}

#[test]
fn a_table_rewritten_as_one_file_reads_with_its_partition_columns() {
    // What `COPY (SELECT * FROM summary ORDER BY device) TO 'summary.parquet'` gives in
    // another engine: every rank's rows in one file, a rank's devices apart, `job`
    // dictionary-encoded and `rank` a 32-bit integer.
    let files: Vec<FileSummary> = (0..3)
        .map(|r| {
            let base = 1000 * (r as i64 + 1);
            file(r, vec![device(0, base), device(1, base + 1)])
        })
        .collect();
    let mut batches = Vec::new();
    for (r, f) in files.iter().enumerate() {
        let bytes = bytes::Bytes::from(part_of(f.clone()));
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
            .unwrap()
            .build()
            .unwrap();
        for batch in reader {
            let batch = batch.unwrap();
            let n = batch.num_rows();
            let job: DictionaryArray<arrow_array::types::Int32Type> =
                vec!["night"; n].into_iter().collect();
            let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
            columns.push(Arc::new(job));
            columns.push(Arc::new(Int32Array::from(vec![r as i32 * 10; n])));
            let mut fields: Vec<Field> = batch
                .schema()
                .fields()
                .iter()
                .map(|f| f.as_ref().clone())
                .collect();
            fields.push(Field::new(
                "job",
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                false,
            ));
            fields.push(Field::new("rank", DataType::Int32, false));
            batches.push(RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap());
        }
    }
    let mut out = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut out, batches[0].schema(), None).unwrap();
    for device in 0..2 {
        for b in &batches {
            writer.write(&b.slice(device, 1)).unwrap();
        }
    }
    writer.close().unwrap();
    let read = read_summary(out, "summary.parquet").unwrap();
    assert_eq!(
        read.iter()
            .map(|r| (r.job.as_str(), r.file.rank))
            .collect::<Vec<_>>(),
        [("night", 0), ("night", 10), ("night", 20)],
        "the columns, not the footer (an engine's rewrite keeps none of ours)"
    );
    for (r, f) in read.iter().zip(&files) {
        let mut want = f.clone();
        want.rank = r.file.rank;
        assert_eq!(r.file, want);
    }
}

#[test]
fn what_is_not_a_summary_table_says_so() {
    let garbage = read_summary(b"PAR1 not really".to_vec(), "summary.parquet");
    assert!(
        matches!(garbage, Err(SummaryError::Parquet(_))),
        "{garbage:?}"
    );
    // A Parquet file of other columns: names the first summary column it lacks.
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("id", DataType::Utf8, false)])),
        vec![Arc::new(StringArray::from(vec!["x"]))],
    )
    .unwrap();
    let mut out = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let other = read_summary(out, "summary/job=a/rank=0/part-0.parquet").unwrap_err();
    assert!(
        matches!(&other, SummaryError::NotSummary(c) if c == "path"),
        "{other}"
    );
    assert!(other
        .to_string()
        .contains("pt-snap export --format parquet"));
}

#[test]
fn a_large_file_of_other_columns_is_turned_down_from_its_footer() {
    // An `events`-like part of a few MB chosen by mistake: only its footer is read.
    let n = 500_000;
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("id", DataType::Int32, false)])),
        vec![Arc::new(Int32Array::from((0..n).collect::<Vec<i32>>()))],
    )
    .unwrap();
    let mut out = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let mut read_bytes = 0;
    let verdict = read_summary_ranges(out.len() as u64, "events/part-0.parquet", |a, b| {
        read_bytes += b - a;
        Ok(out[a as usize..b as usize].to_vec())
    });
    assert!(
        matches!(verdict, Err(SummaryError::NotSummary(_))),
        "{verdict:?}"
    );
    assert!(
        read_bytes < 4096 && (out.len() as u64) > 1_000_000,
        "{read_bytes} of {} bytes read",
        out.len()
    );
    // Too short for a footer, or a footer claiming more than the file: Parquet errors.
    for bad in [&b"PAR1"[..], &b"PAR1\xff\xff\xff\x7fPAR1"[..]] {
        let verdict = read_summary_ranges(bad.len() as u64, "x.parquet", |a, b| {
            Ok(bad[a as usize..b as usize].to_vec())
        });
        assert!(
            matches!(verdict, Err(SummaryError::Parquet(_))),
            "{verdict:?}"
        );
    }
    let failing = read_summary_ranges(1 << 20, "x.parquet", |_, _| {
        Err(std::io::Error::other("gone"))
    });
    assert!(matches!(failing, Err(SummaryError::Read(_))), "{failing:?}");
}
