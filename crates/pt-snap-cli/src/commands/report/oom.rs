//! `pt-snap report oom`: why each OOM event failed (`pt_snap_report::oom`).

use pt_snap_contract::envelope;
use pt_snap_query::QueryError;
use pt_snap_report::{oom_report, OomRequest};
use pt_snap_store::ReplayMode;

use super::{category_rules, text_only_stacks};
use crate::cli::OomArgs;
use crate::error::{CliError, CliResult};
use crate::{focus, output, source};

/// `report oom`: a database or a snapshot (through the reuse cache), or the focus.
pub(super) fn run(a: &OomArgs) -> CliResult {
    text_only_stacks(Some(a.stacks), a.json)?;
    if a.device.is_some_and(|d| d < 0) {
        return Err(CliError::invalid_parameter(
            "device must be a nonnegative integer.",
            "Pass --device with an id present in the input, or omit it.",
        ));
    }
    if a.top < 0 {
        return Err(CliError::invalid_parameter(
            "top must be a nonnegative integer.",
            "Pass -n with how many callstack groups and blocks to show.",
        ));
    }
    let category_rules = category_rules(a.categories.as_deref())?;
    let (path, device) = match &a.path {
        Some(p) => (p.clone(), a.device),
        None => {
            let resolved = focus::resolve_required(None)?;
            (resolved.db_path, a.device.or(resolved.device_id))
        }
    };
    let input = source::Opened::open(&path, ReplayMode::Strict, a.json)
        .map_err(|e| crate::job::for_reading(e, "report oom"))?;
    let request = OomRequest {
        device,
        top_n: a.top,
        category_rules,
    };
    let db = input.analyzer.db();
    let report = oom_report(&input.analyzer, &request, &|d| {
        let d = usize::try_from(d).map_err(|_| QueryError::DeviceNotFound(d.to_string()))?;
        db.oom_device_free(d)
            .map_err(|e| QueryError::ReadFailed(e.to_string()))
    })
    .map_err(|e| CliError::query(e, None, "Error: "))?;
    if a.json {
        // The input's `path`, `db_path`, `import` (and `replay`) as `diff` prints them.
        let mut fields = input.fields.clone();
        for (k, v) in report.json_fields() {
            fields.insert(k.into(), v);
        }
        let out = envelope::success(fields.iter().map(|(k, v)| (k.as_str(), v.clone())));
        output::print_json(&out);
    } else {
        if let Some(r) = &input.lenient {
            println!("{}", r.line());
        }
        print!("{}", report.to_text_stacks(a.stacks.into()));
    }
    Ok(())
}
