//! The import progress bar: on stderr, only on a terminal, never under `--json`.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};
use pt_snap_import::Stage;
use pt_snap_model::Progress;

pub struct ImportProgress {
    bar: Option<ProgressBar>,
    total_bytes: u64,
}

impl ImportProgress {
    pub fn new(total_bytes: u64, enabled: bool) -> Self {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(total_bytes);
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} {msg:<24} [{bar:30}] {percent:>3}% {elapsed}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            bar
        });
        ImportProgress { bar, total_bytes }
    }

    pub fn decoding(&mut self, p: Progress) {
        let Some(bar) = &self.bar else { return };
        bar.set_length(self.total_bytes);
        bar.set_position(p.bytes_read);
        bar.set_message(format!("decoding ({} events)", p.events));
    }

    pub fn update(&mut self, stage: Stage) {
        let Some(bar) = &self.bar else { return };
        match stage {
            Stage::Replaying {
                device,
                done,
                total,
            } => {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
                bar.set_message(format!("replaying device {device}"));
            }
            Stage::Indexing => {
                bar.set_message("indexing");
                bar.tick();
            }
        }
    }

    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
