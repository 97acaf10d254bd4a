//! Decodes snapshot pickles and prints what they hold, with the decode time.
//!
//! `cargo run --release -p pt-snap-model --example decode_stats -- FILE...`
//! (run under `/usr/bin/time -v` to see peak memory).

use std::time::Instant;

fn main() {
    let mut failed = false;
    for path in std::env::args().skip(1) {
        let file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("{path}: {e}");
                failed = true;
                continue;
            }
        };
        let start = Instant::now();
        let mut reports = 0u32;
        match pt_snap_model::decode(file, &mut |_| reports += 1) {
            Ok(s) => {
                let blocks: usize = s.segments.iter().map(|g| g.blocks.len()).sum();
                let per_device: Vec<usize> = s.device_traces.iter().map(Vec::len).collect();
                println!(
                    "{path}: {:.3} s, layout {:?}, {} segments, {blocks} blocks, events {per_device:?}, \
                     {} stacks, {} frames, other actions {:?}, {reports} progress reports",
                    start.elapsed().as_secs_f64(),
                    s.layout,
                    s.segments.len(),
                    s.stacks.stack_count(),
                    s.stacks.frame_count(),
                    s.other_actions,
                );
            }
            Err(e) => {
                println!("{path}: error: {e}");
                failed = true;
            }
        }
    }
    std::process::exit(i32::from(failed));
}
