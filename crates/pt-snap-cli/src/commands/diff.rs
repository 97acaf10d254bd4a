//! `pt-snap diff A B`: open both runs (a snapshot through the import's reuse cache, or a
//! database), have `pt-snap-report` measure and compare them, print or publish the result.

use std::path::Path;

use pt_snap_contract::{envelope, publish, python};
use pt_snap_import::ReplayMode;
use pt_snap_query::{Analyzer, TimelineRequest};
use pt_snap_report::diff::{measure, Diff, DiffRequest, Timelines, PAGE_BUCKETS};
use pt_snap_report::Metric;
use serde_json::{json, Map, Value};

use crate::budget::Deadline;
use crate::cli::{DiffArgs, DiffFormat};
use crate::commands::import;
use crate::commands::metadata::LenientReplay;
use crate::error::{CliError, CliResult};
use crate::focus;
use crate::progress::ImportProgress;

/// Timeline buckets per side in JSON and text: enough to see the shape.
const JSON_BUCKETS: usize = 100;

pub fn run(args: &DiffArgs) -> CliResult {
    if args.json && args.format == DiffFormat::Html {
        return Err(CliError::invalid_parameter(
            "--json cannot be combined with --format html.",
            "Use --json for the JSON report, or --format html -o FILE for the page.",
        ));
    }
    if args.device.is_some_and(|d| d < 0) {
        return Err(CliError::invalid_parameter(
            "device must be a nonnegative integer.",
            "Pass --device with an id present in both inputs, or omit it.",
        ));
    }
    let replay = if args.lenient {
        ReplayMode::Lenient
    } else {
        ReplayMode::Strict
    };
    let a = Input::open(&args.a, replay, args.json)?;
    let b = Input::open(&args.b, replay, args.json)?;

    // One deadline for the queries of both sides; the imports above are not queries.
    let deadline = Deadline::start(args.timeout)?;
    let request = DiffRequest {
        device: args.device,
        metric: Metric::from(args.metric),
    };
    let buckets = match args.format {
        DiffFormat::Html => PAGE_BUCKETS,
        DiffFormat::Text => JSON_BUCKETS,
    };
    let side = |input: &Input| {
        input.analyzer.set_interrupt(deadline.interrupt());
        measure(&input.analyzer, &request, |device| {
            let req = TimelineRequest {
                device: Some(device),
                ..TimelineRequest::new(buckets)
            };
            let (by_event, by_time) = input.analyzer.timelines(&req)?;
            Ok(Timelines { by_event, by_time })
        })
        .map_err(|e| CliError::query(e, Some(&deadline), "Error: "))
    };
    let diff = Diff::new(side(&a)?, side(&b)?);
    deadline.check()?;

    let limit = usize::try_from(args.limit).ok().filter(|n| *n > 0);
    let fields = [&a.fields, &b.fields];
    let labels = [a.label.as_str(), b.label.as_str()];
    let out = if args.json {
        python::pretty(&envelope::success(diff.to_json(limit, fields))) + "\n"
    } else if args.format == DiffFormat::Html {
        diff.to_html(limit, labels, fields)
    } else {
        let mut text = String::new();
        for (name, input) in [("A", &a), ("B", &b)] {
            if let Some(r) = &input.lenient {
                text += &format!("{name}: {}\n", r.line());
            }
        }
        text + &diff.to_text(limit, labels)
    };
    match &args.output {
        Some(path) => publish::write_file(path, out.as_bytes(), 0o666).map_err(|e| {
            CliError::internal(format!("cannot write {}: {e}", path.display())).with_hint(Some(
                "Check that the directory of -o exists and is writable, and that FILE is not a \
                 directory; an existing FILE is left as it was.",
            ))
        }),
        None => {
            print!("{out}");
            Ok(())
        }
    }
}

/// One side of the comparison (or `report oom`'s input), opened read-only.
pub(crate) struct Input {
    pub analyzer: Analyzer,
    /// The path as given, for text and the page.
    pub label: String,
    /// What `--json` says about the input before its numbers: `path`, `db_path`, `import`
    /// (`null` for a database argument), and `replay` for a lenient database.
    pub fields: Map<String, Value>,
    pub lenient: Option<LenientReplay>,
}

impl Input {
    /// A SnapshotDB (told by SQLite's header, whatever its name) is opened as it is; any
    /// other path is a snapshot, checked, imported or reused beside it exactly as
    /// `import PATH --no-focus` would (the focus is left alone: `diff` only reads).
    pub(crate) fn open(path: &Path, replay: ReplayMode, json: bool) -> CliResult<Input> {
        let absolute = focus::absolute(path)?;
        let (db_path, import) = if pt_snap_db::is_sqlite_file(&absolute).unwrap_or(false) {
            (absolute.clone(), Value::Null)
        } else if !absolute.exists() && path.extension().is_some_and(|e| e == "db") {
            return Err(CliError::database_not_found(format!(
                "Database not found: {}",
                path.display()
            )));
        } else {
            let source = import::check_source(path)?;
            let name = import::source_name(&source)?;
            let target = source.with_file_name(format!("{name}.db"));
            let (_, miss) = import::single_db(
                &import::SingleDb {
                    source: &source,
                    target: &target,
                    name: &name,
                    device: None,
                    replay,
                    force: false,
                },
                &mut ImportProgress::pending(!json),
                &mut |w| {
                    if !json {
                        eprintln!("warning: {w}");
                    }
                },
            )?;
            let import = json!({"reused": miss.is_none(), "cache_miss_reason": miss});
            (target, import)
        };
        let analyzer = Analyzer::open(&db_path)
            .map_err(|e| CliError::schema_invalid(format!("{}: {e}", db_path.display())))?;
        let lenient = analyzer
            .db()
            .lenient_replay_issues()?
            .map(|issues| LenientReplay { issues });
        let mut fields = Map::new();
        fields.insert("path".into(), json!(absolute.display().to_string()));
        fields.insert("db_path".into(), json!(db_path.display().to_string()));
        fields.insert("import".into(), import);
        if let Some(r) = &lenient {
            fields.insert("replay".into(), r.to_json());
        }
        Ok(Input {
            analyzer,
            label: path.display().to_string(),
            fields,
            lenient,
        })
    }
}
