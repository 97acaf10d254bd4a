//! Progress bars and warnings: on stderr, bars only on a terminal, neither under `--json`.
//! `import` shows one bar per snapshot ([`ImportProgress`]); `ranks`, `check` and `export`
//! one bar for a whole set of files ([`SetProgress`]), each file's decode or import reporting
//! its share through the store's same [`Observer`]; `view` how much of its file the page has read ([`PageReads`]).

use std::io::IsTerminal;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressStyle};
use pt_snap_store::{Observer, Progress, Stage};
use pt_snap_view::{Event, Served};

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .expect("valid template")
        .progress_chars("=> ")
}

pub struct ImportProgress {
    enabled: bool,
    bar: Option<ProgressBar>,
    total_bytes: u64,
}

impl ImportProgress {
    /// A bar shown once the import [begins](Observer::begin) (a reused database shows none),
    /// and warnings printed; neither unless `enabled` (not under `--json`).
    pub fn pending(enabled: bool) -> Self {
        ImportProgress {
            enabled,
            bar: None,
            total_bytes: 0,
        }
    }
}

impl Observer for ImportProgress {
    fn begin(&mut self, total_bytes: u64) {
        self.total_bytes = total_bytes;
        self.bar = (self.enabled && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(total_bytes);
            bar.set_style(style(
                "{spinner} {msg:<24} [{bar:30}] {percent:>3}% {elapsed}",
            ));
            bar
        });
    }

    fn decoding(&mut self, p: Progress) {
        let Some(bar) = &self.bar else { return };
        bar.set_length(self.total_bytes);
        bar.set_position(p.bytes_read);
        bar.set_message(format!("decoding ({} events)", p.events));
    }

    fn update(&mut self, stage: Stage) {
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

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    fn warn(&mut self, warning: &str) {
        if !self.enabled {
            return;
        }
        match &self.bar {
            Some(bar) => bar.println(format!("warning: {warning}")),
            None => eprintln!("warning: {warning}"),
        }
    }
}

/// One bar for a set of inputs worked on in parallel. Its length is the sum of their sizes
/// in bytes; each file moves it by its own size, in shares for the stages of its import
/// (decoding reads the bytes, then the replay and the indexes), and all at once when its
/// database is reused or read, or it fails.
#[derive(Clone)]
pub struct SetProgress {
    bar: Option<ProgressBar>,
    files: u64,
    /// Warnings are printed (not under `--json`).
    enabled: bool,
}

/// Of a file's share of the bar: decoding moves it to this fraction, the replay to
/// [`REPLAYED`], the rest comes when the database is published.
const DECODED: f64 = 0.5;
const REPLAYED: f64 = 0.9;

impl SetProgress {
    pub fn new(total_bytes: u64, files: u64, enabled: bool) -> Self {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(total_bytes.max(1));
            bar.set_style(style(
                "{spinner} {msg:<28} [{bar:30}] {percent:>3}% {elapsed} (eta {eta})",
            ));
            bar.set_message(format!("0/{files} files"));
            bar
        });
        SetProgress {
            bar,
            files,
            enabled,
        }
    }

    /// The share of one file of `bytes`, whose warnings are prefixed with `name`.
    pub fn file(&self, bytes: u64, name: &str) -> FileProgress<'_> {
        FileProgress {
            set: self,
            name: name.to_owned(),
            bytes,
            moved: 0,
            fraction: 0.0,
        }
    }

    /// `done` files summarised so far.
    pub fn files_done(&self, done: u64) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{done}/{} files", self.files));
        }
    }

    /// Prints a line above the bar (or plainly when there is none).
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// One file's share of a [`SetProgress`]; what it has not moved when dropped, it moves then.
pub struct FileProgress<'a> {
    set: &'a SetProgress,
    name: String,
    bytes: u64,
    /// Bytes of the bar this file has moved so far.
    moved: u64,
    /// The stage's fraction of `bytes` reached, so that a later stage never moves it back.
    fraction: f64,
}

impl FileProgress<'_> {
    fn reach(&mut self, fraction: f64) {
        let Some(bar) = &self.set.bar else { return };
        if fraction <= self.fraction {
            return;
        }
        self.fraction = fraction.min(1.0);
        let target = (self.bytes as f64 * self.fraction) as u64;
        if target > self.moved {
            bar.inc(target - self.moved);
            self.moved = target;
        }
    }
}

impl Observer for FileProgress<'_> {
    fn begin(&mut self, total_bytes: u64) {
        // The bar was sized by the file's length when the set was listed; a file that grew
        // since keeps its listed share.
        let _ = total_bytes;
    }

    fn decoding(&mut self, p: Progress) {
        let read = p.bytes_read as f64 / self.bytes.max(1) as f64;
        self.reach(DECODED * read.min(1.0));
    }

    fn update(&mut self, stage: Stage) {
        match stage {
            Stage::Replaying { done, total, .. } => {
                let replayed = done as f64 / total.max(1) as f64;
                self.reach(DECODED + (REPLAYED - DECODED) * replayed.min(1.0));
            }
            Stage::Indexing => self.reach(REPLAYED),
        }
    }

    fn finish(&mut self) {
        self.reach(1.0);
    }

    fn warn(&mut self, warning: &str) {
        if self.set.enabled {
            self.set
                .println(&format!("warning: {}: {warning}", self.name));
        }
    }
}

impl Drop for FileProgress<'_> {
    fn drop(&mut self) {
        self.reach(1.0);
    }
}

/// Bytes in MB with one decimal, as `pt-snap view` says sizes.
pub(crate) fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// What `pt-snap view`'s server tells the terminal: that the page connected, how much of the file it has
/// read (a bar on a terminal, a line every tenth elsewhere), and refused requests.
pub(crate) struct PageReads {
    names: Vec<String>,
    sizes: Vec<u64>,
    total: u64,
    bar: Option<ProgressBar>,
    state: Mutex<ReadState>,
}

#[derive(Default)]
struct ReadState {
    listed: bool,
    /// The furthest byte sent of each file, and their sum.
    furthest: Vec<u64>,
    read: u64,
    /// Tenths of the total said so far (without a bar).
    tenths: u64,
}

impl PageReads {
    pub fn new(served: &Served) -> PageReads {
        let bar = (std::io::stderr().is_terminal() && served.total_bytes() > 0).then(|| {
            let bar = ProgressBar::hidden();
            bar.set_length(served.total_bytes());
            bar.set_style(style(
                "{spinner} {msg:<18} [{bar:30}] {percent:>3}% {bytes}/{total_bytes}",
            ));
            bar.set_message("the page reads it");
            bar
        });
        PageReads {
            names: served.entries.iter().map(|e| e.path.clone()).collect(),
            sizes: served.entries.iter().map(|e| e.size).collect(),
            total: served.total_bytes(),
            bar,
            state: Mutex::new(ReadState {
                furthest: vec![0; served.entries.len()],
                ..ReadState::default()
            }),
        }
    }

    fn say(&self, line: &str) {
        match &self.bar {
            Some(bar) if !bar.is_hidden() => bar.println(line),
            _ => eprintln!("{line}"),
        }
    }

    pub fn event(&self, event: Event<'_>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            Event::Listed { peer } => {
                if !state.listed {
                    state.listed = true;
                    self.say(&format!("The page is open (from {peer})."));
                }
            }
            Event::Refused { peer, path } => self.say(&format!(
                "warning: refused {path} to {peer}: no valid token (a page opened from an \
                 old or edited URL?)"
            )),
            Event::Unavailable { file, error } => {
                let name = self.names.get(file).map_or("?", String::as_str);
                self.say(&format!("warning: cannot serve {name}: {error}"));
            }
            Event::Sent { file, start, end } => {
                let Some(size) = self.sizes.get(file).copied() else {
                    return;
                };
                let furthest = state.furthest[file];
                // Read again from the start (the page reloaded, or reads it a second time: to
                // hash it before a cache lookup, or to check a database it reopened by the
                // file's name, size and time): its share starts over.
                if start == 0 && furthest >= size && end < size {
                    state.read -= furthest;
                    state.furthest[file] = 0;
                    state.tenths = state.read * 10 / self.total.max(1);
                }
                let furthest = state.furthest[file];
                if end <= furthest {
                    return;
                }
                state.read += end.min(size).saturating_sub(furthest);
                state.furthest[file] = end.min(size).max(furthest);
                let read = state.read;
                match &self.bar {
                    Some(bar) => {
                        if bar.is_hidden() {
                            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                        }
                        bar.set_position(read);
                    }
                    None => {
                        let tenths = read * 10 / self.total.max(1);
                        if tenths > state.tenths {
                            state.tenths = tenths;
                            eprintln!(
                                "The page has read {}% ({} of {}).",
                                tenths * 10,
                                megabytes(read),
                                megabytes(self.total)
                            );
                        }
                    }
                }
                if state.furthest[file] >= size && self.names.len() > 1 {
                    self.say(&format!(
                        "The page has read {} ({}).",
                        self.names[file],
                        megabytes(size)
                    ));
                }
                if read >= self.total {
                    if let Some(bar) = &self.bar {
                        bar.finish_and_clear();
                        eprintln!("The page has read all of it ({}).", megabytes(self.total));
                    }
                }
            }
        }
    }
}
