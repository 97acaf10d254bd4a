//! Runs one template on a SnapshotDB and prints the outcome as JSON:
//! `cargo run -p pt-snap-query --example run_template -- DB TEMPLATE ['{"param": 1}'] [N]`.

use pt_snap_query::{Analyzer, QueryRequest};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [db, template, rest @ ..] = args.as_slice() else {
        return Err("usage: run_template DB TEMPLATE [PARAMS_JSON] [MAX_ROWS]".into());
    };
    let mut request = QueryRequest::new(template);
    if let Some(raw) = rest.first() {
        request.params = serde_json::from_str(raw)?;
    }
    if let Some(n) = rest.get(1) {
        request = request.max_rows(n.parse()?);
    }
    let analyzer = Analyzer::open(db.as_ref())?;
    if std::env::var_os("EXPLAIN").is_some() {
        let (sql, binds) = analyzer.statement(&request)?;
        let plan = analyzer
            .db()
            .conn()
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?
            .query_map(
                pt_snap_query::rusqlite::params_from_iter(
                    binds.iter().map(|b| b.to_json().to_string()),
                ),
                |r| r.get::<_, String>(3),
            )?
            .collect::<Result<Vec<_>, _>>()?;
        eprintln!("{sql}\n-- binds: {binds:?}\n-- plan:\n{}", plan.join("\n"));
    }
    let out = analyzer.run(&request)?;
    let summary = serde_json::json!({
        "device_id": out.device_id,
        "effective_params": out.effective_params.to_json(),
        "total": out.total,
        "returned": out.returned,
        "has_more": out.has_more,
        "truncated": out.truncated,
        "total_is_exact": out.total_is_exact,
        "rows": out.rows_json(),
    });
    println!("{}", serde_json::to_string_pretty(&summary)?);
    Ok(())
}
