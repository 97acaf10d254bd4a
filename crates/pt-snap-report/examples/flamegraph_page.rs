//! A flamegraph page from a frame tree in a JSON file, made as `pt-snap report memory-tree
//! --format html` makes one (`flamegraph_data`: each frame's origin and the Python frames
//! view, then the page): the browser tests' hand-made and generated trees
//! (`tests/browser/run.sh`).
//!
//!   flamegraph_page <tree.json> <out.html>
//!
//! `<tree.json>`: the data (`{title, event_id, device_id, nodes}`, or a diff-mode tree), or
//! a memory tree as `--json` prints it (`{event_id, device_id, rows, …}`).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, out] = args.as_slice() else {
        eprintln!("usage: flamegraph_page <tree.json> <out.html>");
        return ExitCode::from(2);
    };
    let data = match std::fs::read_to_string(input)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
    {
        Ok(data) => pt_snap_report::flamegraph_data(data),
        Err(e) => {
            eprintln!("{input}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let title = data["title"].as_str().unwrap_or_default().to_owned();
    if let Err(e) = std::fs::write(out, pt_snap_report::flamegraph_page(&title, &data)) {
        eprintln!("{out}: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
