//! What the page's parts share: the open file, the choices that say what the views show
//! (device, window, event, view, screen), the job, and what the status strip says. All of
//! it `Copy` signals in [`AppState`], given to every component as context. This module
//! imports no view: the views import it.

use leptos::prelude::*;
use pt_snap_engine::{Failure, Progress, Question};
use pt_snap_report::Metric;

use crate::client::{self, Reply};
use crate::job::{Job, Pick};
use crate::link::Tab;
use crate::opened::Opened;

#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Idle,
    Reading(String),
    /// A worker is importing or opening `name` (`total` bytes).
    Importing {
        name: String,
        progress: Option<Progress>,
        total: f64,
    },
    Failed(Failure),
}

#[derive(Clone, Copy)]
pub struct AppState {
    pub opened: RwSignal<Option<Opened>>,
    pub status: RwSignal<Status>,
    pub device: RwSignal<i64>,
    /// The events the timelines show (counters and allocations); `None`: all of them.
    pub window: RwSignal<Option<(i64, i64)>>,
    /// The event the memory tree shows; `None` means the active peak.
    pub event: RwSignal<Option<i64>>,
    pub tab: RwSignal<Tab>,
    /// The open file is the bundled sample, so the URL can say `#sample` and a reload brings
    /// it back.
    pub sample: RwSignal<bool>,
    /// Bumped when another file (even one of the same name) is shown, so views ask again;
    /// not when the file shown becomes ready.
    pub generation: RwSignal<u32>,
    /// How long one question may run, in seconds (the CLI's `--timeout`).
    pub budget_s: RwSignal<f64>,
    /// Several snapshots opened together (the ranks of a job).
    pub job: RwSignal<Option<Job>>,
    /// What the page shows: the open file's views, or the job's Ranks or Compare view.
    pub screen: RwSignal<Screen>,
    /// What the Compare view compares.
    pub compare: RwSignal<Compare>,
    /// Bumped by each progress message of a Compare side being measured.
    pub compare_stage: RwSignal<u32>,
    /// The user's memory-category rules, `(file name, TOML)` as `--categories` reads them;
    /// `None`: the built-in ones.
    pub category_rules: RwSignal<Option<(String, String)>>,
    /// The open file's deferred indexes, which its worker builds between questions.
    pub indexing: RwSignal<Indexing>,
}

/// Where the open file's worker is with the indexes its import deferred.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Indexing {
    /// None left (or none deferred).
    #[default]
    Done,
    /// This many still to build.
    Left(usize),
    /// One failed, with the message: every view still answers, some more slowly.
    Failed(String),
}

/// What fills the page below the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    /// The open file's views (or the welcome, when none is open).
    File,
    Ranks,
    Compare,
}

impl AppState {
    /// Nothing open, the overview of device 0, the default budget.
    pub fn new() -> AppState {
        AppState {
            opened: RwSignal::new(None),
            status: RwSignal::new(Status::Idle),
            device: RwSignal::new(0),
            event: RwSignal::new(None),
            window: RwSignal::new(None),
            tab: RwSignal::new(Tab::Overview),
            sample: RwSignal::new(false),
            generation: RwSignal::new(0),
            budget_s: RwSignal::new(DEFAULT_BUDGET_S),
            job: RwSignal::new(None),
            screen: RwSignal::new(Screen::File),
            compare: RwSignal::new(Compare::default()),
            compare_stage: RwSignal::new(0),
            category_rules: RwSignal::new(None),
            indexing: RwSignal::new(Indexing::Done),
        }
    }

    /// Which file is open (0: none), tracked.
    pub fn generation(self) -> u32 {
        self.generation.get()
    }

    /// Whether the open file's database is ready for questions, tracked.
    pub fn ready(self) -> bool {
        self.opened.with(|o| o.as_ref().is_some_and(Opened::ready))
    }

    /// A question about the selected device, asked with the user's time budget and again
    /// whenever another file is shown, the device changes, or anything `question` reads
    /// does (see [`client::watch`]).
    pub fn watch<Q: Question>(
        self,
        question: impl Fn(i64) -> Option<Q> + 'static,
    ) -> RwSignal<Reply<Q::Answer>>
    where
        Q::Answer: Send + Sync + Clone,
    {
        client::watch(self.budget_s.into(), move || {
            self.generation();
            question(self.device.get())
        })
    }
}

/// A minute is far above what any view needs on a database a browser can hold (seconds for
/// a 1M-event one) and bounds a crafted one.
pub const DEFAULT_BUDGET_S: f64 = 60.0;

/// What the Compare view compares, and how far its measuring is.
#[derive(Debug, Clone, PartialEq)]
pub struct Compare {
    /// `None` until chosen: the view then takes [`default_picks`].
    pub picks: [Option<Pick>; 2],
    pub metric: Metric,
    /// Groups listed in the table (all are in the totals and the flamegraph); `None`: all.
    pub limit: Option<usize>,
    /// Bumped when a side is measured or fails, so the view looks again.
    pub epoch: u32,
}

impl Default for Compare {
    fn default() -> Self {
        Compare {
            picks: [None, None],
            metric: Metric::Active,
            limit: Some(DEFAULT_LIMIT),
            epoch: 0,
        }
    }
}

/// `pt-snap diff`'s default `-n`.
pub const DEFAULT_LIMIT: usize = 20;
