//! `pt-snap query`: list templates, show their contracts, run one.

use std::path::Path;

use pt_snap_contract::{envelope, python, ErrorCode};
use pt_snap_query::{registry, QueryOutcome, QueryRequest, WorkLimits, CATEGORIES};
use serde_json::{json, Map, Value};

use crate::budget::Deadline;
use crate::cli::QueryArgs;
use crate::error::{CliError, CliResult};
use crate::focus::{self, Resolved};
use crate::output;
use crate::source::{self, QUERY_PREFIX};

pub fn run(a: &QueryArgs) -> CliResult {
    let limits = a.limits.resolve()?;
    // `--category` alone lists that category.
    if a.list || (a.category.is_some() && a.template_use.is_none() && a.template_info.is_none()) {
        return list(a.category.as_deref(), a.json);
    }
    if let Some(name) = &a.template_info {
        return template_info(name, a.db_path.as_deref(), &limits, a.json);
    }
    let Some(template) = &a.template_use else {
        return Err(CliError::invalid_parameter(
            "--template-use is required when not using --list or --template-info",
            "Pass --template-use, --list, or --template-info.",
        ));
    };
    // Failures from here on read `Error executing query: …` in text mode, except those
    // about finding the database or device.
    let prefixed = |e: CliError| e.with_text_prefix(QUERY_PREFIX);
    let params = parse_params(a.params.as_deref()).map_err(prefixed)?;
    let deadline = Deadline::start(a.timeout).map_err(prefixed)?;
    let resolved = source::readable(
        focus::resolve_required(a.db_path.as_deref())?,
        a.json,
        "query",
    )?;
    let absolute = focus::absolute(&resolved.db_path)?;
    let source = match source::dataset(&absolute, limits, &deadline, a.slice).map_err(prefixed)? {
        Some(dataset) => dataset,
        None if a.slice.is_some() => {
            return Err(prefixed(CliError::invalid_parameter(
                "slice_index requires a manifest dataset.",
                "Pass --slice only with a dataset directory or its manifest.json.",
            )))
        }
        None => Box::new(source::database(&resolved, &deadline)?.0),
    };
    deadline.check()?;
    let request = QueryRequest {
        template: template.clone(),
        params,
        device: a.device.or(resolved.device_id),
        max_rows: a.max_rows,
        exact_total: a.exact_total,
    };
    let outcome = source
        .run(&request)
        .map_err(|e| CliError::query(e, Some(&deadline), QUERY_PREFIX))?;
    deadline.check()?;
    if a.json {
        print_json(&outcome, &absolute, &resolved, &deadline);
    } else {
        print_text(&outcome);
    }
    Ok(())
}

/// `--params`: a JSON object, or nothing.
fn parse_params(raw: Option<&str>) -> CliResult<Map<String, Value>> {
    let hint = "Check --params against 'pt-snap query --template-info <name> --json'.";
    let Some(raw) = raw.filter(|r| !r.is_empty()) else {
        return Ok(Map::new());
    };
    let value: Value = serde_json::from_str(raw)
        .map_err(|e| CliError::invalid_parameter(format!("Invalid JSON in --params: {e}"), hint))?;
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(CliError::invalid_parameter(
            "Query parameters must be a JSON object.",
            hint,
        )),
    }
}

fn print_json(outcome: &QueryOutcome, path: &Path, resolved: &Resolved, deadline: &Deadline) {
    let mut fields = vec![
        ("db_path", json!(path.display().to_string())),
        ("focus_source", json!(resolved.source.name())),
        ("device_id", json!(outcome.device_id)),
        ("template", json!(outcome.template)),
        ("effective_params", outcome.effective_params.to_json()),
        ("semantics_version", json!(outcome.semantics_version)),
        ("total", json!(outcome.total)),
        ("returned", json!(outcome.returned)),
        ("has_more", json!(outcome.has_more)),
        ("truncated", json!(outcome.truncated)),
        ("total_is_exact", json!(outcome.total_is_exact)),
        ("timeout_s", json!(deadline.seconds)),
        ("rows", Value::Array(outcome.rows_json())),
    ];
    // Datasets only: the reference prints `scope` only when it is not null.
    if let Some(scope) = &outcome.scope {
        fields.push(("scope", scope.clone()));
    }
    output::print_json(&envelope::success(fields));
}

/// Rows as the reference prints them: one Python dict repr per line.
fn print_text(outcome: &QueryOutcome) {
    use std::fmt::Write as _;
    use std::io::Write as _;
    if outcome.rows.is_empty() {
        println!("No results found.");
        return;
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Found {} results, showing {}:",
        outcome.total, outcome.returned
    );
    for row in &outcome.rows {
        let fields: Vec<String> = outcome
            .columns
            .iter()
            .zip(row)
            .map(|(c, v)| format!("{}: {}", python::repr_str(c), v.python_repr()))
            .collect();
        let _ = writeln!(out, "  {{{}}}", fields.join(", "));
    }
    if outcome.has_more {
        if outcome.total_is_exact && outcome.total > outcome.returned {
            let _ = writeln!(
                out,
                "  ... and {} more (use -n to show more)",
                outcome.total - outcome.returned
            );
        } else {
            out.push_str("  ... more available (use -n, offset, top_n, or --exact-total)\n");
        }
    }
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
}

fn list(category: Option<&str>, json: bool) -> CliResult {
    if let Some(c) = category {
        if !registry::is_category(c) {
            return Err(CliError::invalid_parameter(
                format!(
                    "Invalid category '{c}'. Must be one of: {}",
                    CATEGORIES.join(", ")
                ),
                "Use 'pt-snap query --list --json' to see valid categories.",
            ));
        }
    }
    let categories: Vec<&str> = match category {
        Some(c) => vec![c],
        None => CATEGORIES.to_vec(),
    };
    if json {
        let templates: Vec<Value> = categories
            .iter()
            .flat_map(|c| registry::in_category(c))
            .map(|t| {
                json!({
                    "name": t.contract.name,
                    "description": t.contract.description,
                    "category": t.contract.category,
                })
            })
            .collect();
        output::print_json(&envelope::success(vec![
            ("category", json!(category)),
            ("templates", Value::Array(templates)),
        ]));
        return Ok(());
    }
    for c in categories {
        let mut label: Vec<char> = c.chars().collect();
        label[0] = label[0].to_ascii_uppercase();
        println!("{} Queries:", label.into_iter().collect::<String>());
        for t in registry::in_category(c) {
            println!("  {}", t.contract.name);
            println!("    {}", t.contract.description);
        }
        println!();
    }
    Ok(())
}

fn template_info(name: &str, db_path: Option<&Path>, limits: &WorkLimits, json: bool) -> CliResult {
    let t = registry::find(name).ok_or_else(|| {
        CliError::new(
            ErrorCode::TemplateNotFound,
            format!("Template '{name}' not found"),
        )
    })?;
    let c = &t.contract;
    let info = c.info_json(limits);
    if json {
        let mut fields = vec![("template", json!(c.name))];
        fields.extend(info.iter().map(|(k, v)| (k.as_str(), v.clone())));
        output::print_json(&envelope::success(fields));
        return Ok(());
    }
    let db = db_path.map(|p| p.display().to_string());
    print!("{}", c.info_text(limits, db.as_deref()));
    Ok(())
}
