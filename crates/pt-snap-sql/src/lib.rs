//! `pt-snap sql`: SQL over a Parquet dataset `pt-snap export` wrote
//! (`DIR/<table>/job=<J>/rank=<R>/part-0.parquet`), with Apache DataFusion, and the named
//! cross-rank queries (`queries/*.sql`, compiled in; the same text runs on Spark SQL and
//! DuckDB, `docs/parquet.md`).
//!
//! DataFusion lives in this crate only, so its build cost stays here: the CLI takes it through
//! its default `sql` feature.
//!
//! # Read-only
//!
//! A statement only reads the dataset. DataFusion's SQL can also write (`COPY … TO` any path,
//! `INSERT INTO` a table, which adds a part to the dataset's directory), declare tables over
//! other directories (`CREATE EXTERNAL TABLE … LOCATION`) and change the session (`SET`,
//! `PREPARE`, transactions): its [`SQLOptions`] refuse all of these at planning, before
//! anything runs ([`Dataset::run`]), and the refusal names what was refused. The session
//! cannot spill to disk either (no temporary files), and does not read paths given as table
//! names: the four tables of the directory are all a statement sees.

#![forbid(unsafe_code)]

use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::json::ArrayWriter;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::execution::context::SQLOptions;
use datafusion::execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::logical_expr::LogicalPlan;
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
    /// The statement would write, declare a table or change the session: refused before it
    /// ran. The message names what was refused.
    #[error("only read-only queries are allowed: {0} is not")]
    NotReadOnly(String),
}

/// What [`Dataset::run`] lets through: queries (`SELECT`, `WITH`, `VALUES`, `EXPLAIN`, `SHOW`,
/// `DESCRIBE`); no DDL, no DML (`INSERT`, `COPY`, …), no statements (`SET`, `PREPARE`,
/// transactions).
fn read_only() -> SQLOptions {
    SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false)
}

/// The first node of `plan` (or of its subqueries) that [`read_only`] refuses, as a person
/// names it: `COPY … TO '/x.csv'`, `INSERT INTO summary`, `CREATE EXTERNAL TABLE`, `SET
/// VARIABLE`.
fn refused_part(plan: &LogicalPlan) -> Option<String> {
    let mut found = None;
    let _ = plan.apply_with_subqueries(|node| {
        found = match node {
            LogicalPlan::Copy(copy) => Some(format!("COPY … TO '{}'", copy.output_url)),
            LogicalPlan::Dml(dml) => Some(format!(
                "{} {}",
                dml.op.to_string().to_uppercase(),
                dml.table_name
            )),
            LogicalPlan::Ddl(ddl) => Some(spaced_upper(ddl.name())),
            LogicalPlan::Statement(statement) => Some(spaced_upper(statement.name())),
            _ => None,
        };
        Ok(if found.is_some() {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    });
    found
}

/// `CreateExternalTable` → `CREATE EXTERNAL TABLE`.
fn spaced_upper(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if i > 0 && c.is_uppercase() {
            out.push(' ');
        }
        out.extend(c.to_uppercase());
    }
    out
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
        // No temporary files: a query that would spill fails instead of writing outside the
        // directory it was given.
        let env = RuntimeEnvBuilder::new()
            .with_disk_manager_builder(
                DiskManagerBuilder::default().with_mode(DiskManagerMode::Disabled),
            )
            .build_arc()
            .map_err(|e| SqlError::Query(format!("cannot start the query runtime: {e}")))?;
        let ctx = SessionContext::new_with_config_rt(config, env);
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

    /// Runs one read-only statement and collects its answer; any other is refused before
    /// it runs ([`SqlError::NotReadOnly`]).
    pub fn run(&self, sql: &str) -> Result<Answer, SqlError> {
        let ctx = &self.ctx;
        let failed = |e: datafusion::error::DataFusionError| SqlError::Query(e.to_string());
        let (schema, batches) = self.runtime.block_on(async move {
            // `SessionContext::sql_with_options`, with the plan kept to name what is refused.
            let plan = ctx.state().create_logical_plan(sql).await.map_err(failed)?;
            if let Err(e) = read_only().verify_plan(&plan) {
                return Err(SqlError::NotReadOnly(
                    refused_part(&plan).unwrap_or_else(|| e.strip_backtrace()),
                ));
            }
            let frame = ctx.execute_logical_plan(plan).await.map_err(failed)?;
            let schema: SchemaRef = Arc::new(frame.schema().as_arrow().clone());
            Ok((schema, frame.collect().await.map_err(failed)?))
        })?;
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
