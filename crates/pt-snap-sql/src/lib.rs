//! `pt-snap sql`: SQL over a Parquet dataset `pt-snap export` wrote
//! (`DIR/<table>/job=<J>/rank=<R>/part-0.parquet`), with Apache DataFusion, and the named
//! cross-rank queries (`queries/*.sql`, compiled in; the same text runs on Spark SQL and
//! DuckDB, `docs/parquet.md`).
//!
//! DataFusion lives in this crate only, so its build cost stays here: the CLI takes it through
//! its default `sql` feature.

#![forbid(unsafe_code)]

use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::json::ArrayWriter;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use serde_json::Value as Json;

/// The tables a dataset may have (`pt_snap_parquet::Table`), each registered under its name.
pub const TABLES: [&str; 4] = ["events", "blocks", "callstacks", "summary"];

/// A named query: its name, what it answers (the SQL file's first comment) and its SQL.
#[derive(Debug, Clone, Copy)]
pub struct NamedQuery {
    pub name: &'static str,
    pub sql: &'static str,
}

impl NamedQuery {
    /// The SQL file's leading comment, without the `--` and the name.
    pub fn description(&self) -> String {
        let lines: Vec<&str> = self
            .sql
            .lines()
            .take_while(|l| l.starts_with("--"))
            .map(|l| l.trim_start_matches("--").trim())
            .collect();
        let text = lines.join(" ");
        text.strip_prefix(&format!("{}:", self.name))
            .unwrap_or(&text)
            .trim()
            .to_owned()
    }
}

/// A query of `queries/`, named after its file.
macro_rules! named_query {
    ($name:literal) => {
        NamedQuery {
            name: $name,
            sql: include_str!(concat!("../queries/", $name, ".sql")),
        }
    };
}

/// The library of named queries, as data.
pub const QUERIES: [NamedQuery; 4] = [
    named_query!("peak_by_rank"),
    named_query!("rank_outliers"),
    named_query!("top_sites_across_ranks"),
    named_query!("fragmentation_by_rank"),
];

pub fn named(name: &str) -> Option<&'static NamedQuery> {
    QUERIES.iter().find(|q| q.name == name)
}

#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// The directory is missing or holds none of the tables.
    #[error("{0}")]
    NotADataset(String),
    /// Planning or running the statement failed (DataFusion's message).
    #[error("{0}")]
    Query(String),
}

/// An answer: the column names and the rows, values as JSON (integers exact, lists and
/// structs nested).
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Json>>,
    /// The same as a text table.
    pub text: String,
}

/// One dataset, its tables registered with the partition columns `job` (text) and `rank`
/// (integer) read from the directory names.
pub struct Dataset {
    runtime: tokio::runtime::Runtime,
    ctx: SessionContext,
    /// The tables the directory has.
    pub tables: Vec<&'static str>,
}

impl Dataset {
    pub fn open(dir: &Path) -> Result<Self, SqlError> {
        if !dir.is_dir() {
            return Err(SqlError::NotADataset(format!(
                "Dataset not found: {} is not a directory",
                dir.display()
            )));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .build()
            .map_err(|e| SqlError::Query(format!("cannot start the query runtime: {e}")))?;
        let config = SessionConfig::new().with_information_schema(true);
        let ctx = SessionContext::new_with_config(config);
        let mut tables = Vec::new();
        for table in TABLES {
            let path = dir.join(table);
            if !path.is_dir() {
                continue;
            }
            let url = format!("{}/", path.display());
            let options = ParquetReadOptions::default()
                .file_extension(".parquet")
                .table_partition_cols(vec![
                    ("job".to_owned(), DataType::Utf8),
                    ("rank".to_owned(), DataType::Int64),
                ]);
            runtime
                .block_on(ctx.register_parquet(table, &url, options))
                .map_err(|e| SqlError::Query(format!("cannot read {}: {e}", path.display())))?;
            tables.push(table);
        }
        if tables.is_empty() {
            return Err(SqlError::NotADataset(format!(
                "No dataset tables in {} (expected {} directories written by 'pt-snap export')",
                dir.display(),
                TABLES.join(", ")
            )));
        }
        Ok(Dataset {
            runtime,
            ctx,
            tables,
        })
    }

    /// Runs one statement and collects its answer.
    pub fn run(&self, sql: &str) -> Result<Answer, SqlError> {
        let ctx = &self.ctx;
        let (schema, batches) = self
            .runtime
            .block_on(async move {
                let frame = ctx.sql(sql).await?;
                let schema: SchemaRef = Arc::new(frame.schema().as_arrow().clone());
                Ok::<_, datafusion::error::DataFusionError>((schema, frame.collect().await?))
            })
            .map_err(|e| SqlError::Query(e.to_string()))?;
        answer(schema, &batches)
    }
}

fn answer(schema: SchemaRef, batches: &[RecordBatch]) -> Result<Answer, SqlError> {
    let failed = |e: datafusion::arrow::error::ArrowError| SqlError::Query(e.to_string());
    let columns: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let mut rows = Vec::new();
    for batch in batches.iter().filter(|b| b.num_rows() > 0) {
        let mut writer = ArrayWriter::new(Vec::new());
        writer.write(batch).map_err(failed)?;
        writer.finish().map_err(failed)?;
        let objects: Vec<serde_json::Map<String, Json>> =
            serde_json::from_slice(&writer.into_inner())
                .map_err(|e| SqlError::Query(format!("cannot read the answer: {e}")))?;
        for mut o in objects {
            // Arrow's writer leaves nulls out: every column is in every row here.
            rows.push(
                columns
                    .iter()
                    .map(|c| o.remove(c).unwrap_or(Json::Null))
                    .collect(),
            );
        }
    }
    let text = datafusion::arrow::util::pretty::pretty_format_batches_with_schema(schema, batches)
        .map_err(failed)?
        .to_string();
    Ok(Answer {
        columns,
        rows,
        text,
    })
}
