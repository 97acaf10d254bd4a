pub mod capabilities;
pub mod check;
pub mod config;
pub mod diff;
pub mod export;
pub mod focus;
pub mod import;
pub mod metadata;
pub mod overview;
pub mod query;
pub mod ranks;
pub mod report;
pub mod skill;
pub mod split;
#[cfg(feature = "sql")]
pub mod sql;
pub mod view;

/// `pt-snap sql` in a build without the `sql` feature (the wheel's): what it would have
/// needed, and where to get it.
#[cfg(not(feature = "sql"))]
pub fn without_sql() -> crate::error::CliError {
    crate::error::CliError::new(
        pt_snap_contract::ErrorCode::Other,
        "This pt-snap was built without `pt-snap sql`: Apache DataFusion would make the \
         binary about 17 times larger, so the wheel leaves it out.",
    )
    .with_hint(Some(
        "The dataset `pt-snap export` writes is plain Parquet: query it with DuckDB (pip \
         install duckdb), where the named queries' SQL runs unchanged (crates/pt-snap-sql/\
         queries/ in pt-snap's repository), or build pt-snap with it from its repository: cargo install --locked \
         --path crates/pt-snap-cli (its default features include sql).",
    ))
}
