//! `pt-snap sql DIR "SELECT …"` / `--query NAME`: SQL over a Parquet dataset `export` wrote,
//! answered by `pt-snap-sql` (DataFusion, read-only); this file parses, opens and prints.

use pt_snap_contract::{envelope, ErrorCode};
use pt_snap_sql::{Dataset, SqlError, QUERIES};
use serde_json::{json, Value as Json};

use crate::cli::SqlArgs;
use crate::error::{CliError, CliResult};
use crate::output;

pub fn run(args: &SqlArgs) -> CliResult {
    if args.query.as_deref() == Some("list") {
        return list(args.json);
    }
    let (sql, name) = match (&args.query, &args.sql) {
        (Some(name), _) => match pt_snap_sql::named(name) {
            Some(q) => (q.sql.to_owned(), Some(q.name)),
            None => {
                let names: Vec<&str> = QUERIES.iter().map(|q| q.name).collect();
                return Err(CliError::invalid_parameter(
                    format!(
                        "Unknown query {name:?}; the named queries are: {}.",
                        names.join(", ")
                    ),
                    "List them with 'pt-snap sql DIR --query list', or pass SQL instead.",
                ));
            }
        },
        (None, Some(sql)) => (sql.clone(), None),
        (None, None) => unreachable!("clap requires SQL or --query"),
    };
    let dir = crate::focus::absolute(&args.dir)?;
    let dataset = Dataset::open(&dir).map_err(error)?;
    let answer = dataset.run(&sql).map_err(error)?;
    if args.json {
        let rows: Vec<Json> = answer
            .rows
            .into_iter()
            .map(|r| Json::Object(answer.columns.iter().cloned().zip(r).collect()))
            .collect();
        output::print_json(&envelope::success([
            ("dir", json!(dir.display().to_string())),
            ("query", json!(name)),
            ("tables", json!(dataset.tables)),
            ("columns", json!(answer.columns)),
            ("row_count", json!(rows.len())),
            ("rows", Json::Array(rows)),
        ]));
    } else {
        println!("{}", answer.text);
    }
    Ok(())
}

fn error(e: SqlError) -> CliError {
    match e {
        SqlError::NotADataset(m) => CliError::new(ErrorCode::DatabaseNotFound, m).with_hint(Some(
            "Pass the directory 'pt-snap export --format parquet -o DIR' wrote.",
        )),
        SqlError::Query(m) => CliError::new(ErrorCode::QueryFailed, m).with_hint(Some(
            "Check the statement against the tables in docs/parquet.md (events, blocks, \
             callstacks, summary; each with job and rank).",
        )),
        e @ SqlError::NotReadOnly(_) => CliError::new(ErrorCode::QueryFailed, e.to_string())
            .with_hint(Some(
                "'pt-snap sql' only reads the dataset: ask with SELECT (WITH, EXPLAIN, SHOW and \
                 DESCRIBE too), and save an answer with --json and a redirect.",
            )),
    }
}

fn list(json: bool) -> CliResult {
    if json {
        let queries: Vec<Json> = QUERIES
            .iter()
            .map(|q| json!({"name": q.name, "description": q.description(), "sql": q.sql}))
            .collect();
        output::print_json(&envelope::success([("queries", Json::Array(queries))]));
    } else {
        for q in QUERIES {
            println!("{}\n  {}\n", q.name, q.description());
        }
    }
    Ok(())
}
