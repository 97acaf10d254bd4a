//! `pt-snap split`: a snapshot → a new directory of per-device slices, each an
//! independently replayable snapshot (spec §10.1): `pt_snap_store::split` checks, slices,
//! stages and publishes; this prints.

use pt_snap_contract::envelope;
use pt_snap_contract::python::py_path;
use pt_snap_store::split::{self, Request};
use serde_json::json;

use crate::cli::SplitArgs;
use crate::error::CliResult;
use crate::output;
use crate::progress::ImportProgress;

pub fn run(args: &SplitArgs) -> CliResult {
    let request = Request {
        source: &args.snapshot_file,
        output: &args.output,
        device: args.device,
        slices: args.slices,
        max_entries: args.max_entries,
        format: &args.format,
    };
    let done = split::split(&request, &mut ImportProgress::pending(!args.json))?;
    let out_str = py_path(&done.output);
    let files: Vec<String> = done
        .files
        .iter()
        .map(|n| py_path(&done.output.join(n)))
        .collect();
    if args.json {
        output::print_json(&envelope::success(vec![
            ("output", json!(out_str)),
            ("files", json!(files)),
            ("devices", json!(done.devices)),
            ("format", json!(done.format.name())),
        ]));
    } else {
        println!("Split: {out_str}");
        let devices: Vec<String> = done.devices.iter().map(usize::to_string).collect();
        println!("Devices: {}", devices.join(", "));
        println!("Files: {}", files.len());
    }
    Ok(())
}
