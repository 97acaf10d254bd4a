//! `pt-snap report segments`: the allocator's state right after an event
//! (`pt_snap_report::segments`), as a text map, JSON or one self-contained page.

use pt_snap_contract::{envelope, python, ErrorCode};
use pt_snap_report::segments::{page, segment_map};
use serde_json::json;

use super::lenient_replay;
use crate::budget::Deadline;
use crate::cli::{SegmentsArgs, SegmentsFormat};
use crate::error::{CliError, CliResult};
use crate::output::{self, LenientReplay};
use crate::{focus, source};

pub(super) fn run(a: &SegmentsArgs) -> CliResult {
    if a.json && a.format == SegmentsFormat::Html {
        return Err(CliError::invalid_parameter(
            "--json cannot be combined with --format html.",
            "Use --json for the JSON report, or --format html -o FILE for the page.",
        ));
    }
    let deadline = Deadline::start(None)?;
    let resolved = focus::resolve_required(a.path.as_deref())?;
    let resolved = source::readable(resolved, a.json, "report segments")?;
    let absolute = focus::absolute(&resolved.db_path)?;
    if source::open_dataset(&absolute)?.is_some() {
        return Err(CliError::new(
            ErrorCode::QueryFailed,
            "report segments replays one database; a sharded dataset is not supported.",
        )
        .with_hint(Some(
            "Run it on the snapshot (pt-snap report segments SNAPSHOT --event-id E), which is \
             imported as one database.",
        )));
    }
    let (analyzer, db_path) = source::database(&resolved, &deadline)?;
    let device = analyzer
        .resolve_device(a.device.or(resolved.device_id))
        .map_err(|e| CliError::query(e, None, "Error: "))?;
    match analyzer.db().device_bounds(device)? {
        Some((first, last)) if a.event_id < first || a.event_id > last => {
            return Err(CliError::invalid_parameter(
                format!(
                    "event_id {} is outside device {device}'s events.",
                    a.event_id
                ),
                &format!(
                    "Pass --event-id between {first} and {last} (device {device}'s real events)."
                ),
            ))
        }
        _ => {}
    }
    let lenient = lenient_replay(&analyzer)?;
    let map = segment_map(&analyzer, Some(device), a.event_id)
        .map_err(|e| CliError::query(e, Some(&deadline), "Error: "))?;
    deadline.check()?;
    let out = if a.json {
        let mut fields = vec![("db_path", json!(db_path.display().to_string()))];
        fields.extend(map.json_fields());
        let mut out = envelope::success(fields);
        LenientReplay::annotate(&lenient, &mut out);
        python::pretty(&out) + "\n"
    } else if a.format == SegmentsFormat::Html {
        let title = a.path.as_ref().unwrap_or(&db_path).display().to_string();
        page(&map, &title)
    } else {
        let mut text = String::new();
        if let Some(r) = &lenient {
            text += &format!("{}\n", r.line());
        }
        text + &map.to_text()
    };
    output::write_or_print(a.output.as_deref(), &out)
}
