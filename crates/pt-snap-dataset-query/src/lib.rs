//! The dataset query engine (spec §10.4, §6.6): [`DatasetSource`] answers the 11 templates the
//! reference supports on a sharded dataset — validated by `pt-snap-dataset` — with its
//! dataset-global semantics, merging the shards of one device, and is a
//! [`pt_snap_query::Source`] like a single database's `Analyzer`.
//!
//! Queries follow the reference's plan shard by shard (the same reads, in the same order),
//! because its work budget counts every fetched row and the serialised size of its values:
//! mirroring the plan is what makes `--max-work-rows`/`--max-work-bytes` fail at the same
//! point with the same `consumed_*` figures.
//!
//! This crate touches files: it attaches shards read-only, builds scratch databases in a
//! temporary directory, and keeps derived lifecycle databases in the cache directory the
//! caller names ([`DatasetOptions::lifecycle_cache`]).

#![forbid(unsafe_code)]

mod budget;
mod derived;
mod query;
mod sources;
#[cfg(test)]
mod testdata;

use std::cell::RefCell;
use std::path::PathBuf;

use pt_snap_dataset::read::Dataset;
use pt_snap_query::{
    DeviceBounds, ImportMetadata, Interrupt, NoTimes, QueryError, QueryOutcome, QueryRequest,
    Source, Times, WorkLimits,
};
use serde_json::Value as Json;

pub use budget::Budget;
use query::run_charged;

/// How a [`DatasetSource`] answers: the scope and limits of the command that opened it.
#[derive(Clone, Default)]
pub struct DatasetOptions {
    /// `--slice`: answer from one shard of the device only.
    pub slice: Option<i64>,
    /// The work budget shared by every query run through the source (a report's composition
    /// is charged to one budget, spec §8.1).
    pub limits: WorkLimits,
    /// The deadline, polled by every shard read.
    pub interrupt: Option<Interrupt>,
    /// Where derived lifecycle databases may be kept between calls (`None`: rebuilt by every
    /// call in a temporary directory, as the reference does).
    pub lifecycle_cache: Option<PathBuf>,
}

/// A validated dataset as a [`Source`].
pub struct DatasetSource {
    dataset: Dataset,
    options: DatasetOptions,
    /// Consumption of every query run so far, checked against `options.limits`.
    budget: RefCell<Budget>,
}

impl DatasetSource {
    pub fn new(dataset: Dataset, options: DatasetOptions) -> Self {
        let budget = Budget::new(options.limits, options.interrupt.clone());
        DatasetSource {
            dataset,
            options,
            budget: RefCell::new(budget),
        }
    }

    pub fn dataset(&self) -> &Dataset {
        &self.dataset
    }
}

impl Source for DatasetSource {
    fn run(&self, request: &QueryRequest) -> Result<QueryOutcome, QueryError> {
        run_charged(
            &self.dataset,
            request,
            &self.options,
            &mut self.budget.borrow_mut(),
        )
    }

    fn bounds(&self) -> Result<Vec<DeviceBounds>, QueryError> {
        Ok(self
            .dataset
            .device_bounds()
            .into_iter()
            .map(|(device, first, last)| DeviceBounds {
                device,
                events: Some((first, last)),
            })
            .collect())
    }

    fn metadata(&self) -> Result<ImportMetadata, QueryError> {
        Ok(self.dataset.import_metadata())
    }

    fn overview(&self) -> Option<Json> {
        Some(self.dataset.to_json())
    }

    /// Shards carry no times (the reference's formats have none, and our dataset writer
    /// adds none): every device of a dataset answers [`NoTimes::Dataset`].
    fn event_times(&self, device: i64, _ids: &[i64]) -> Result<Times, QueryError> {
        let ids = self.dataset.device_ids();
        if !ids.contains(&device) {
            return Err(QueryError::DeviceNotFound(format!(
                "Device {device} not found. Available: {ids:?}"
            )));
        }
        Ok(Err(NoTimes::Dataset))
    }
}

#[cfg(test)]
mod tests {
    use pt_snap_query::{NoTimes, Source};

    /// Shards carry no times: a dataset says so for each of its devices, where the same
    /// snapshot imported as one database answers the trace's `time_us`.
    #[test]
    fn a_dataset_has_no_event_times_and_says_why() {
        let p = crate::testdata::pair(4);
        for device in [0, 1] {
            assert_eq!(
                p.dataset.event_times(device, &[0, 1]).unwrap(),
                Err(NoTimes::Dataset)
            );
            assert_eq!(
                p.database.event_times(device, &[0, 1, -1]).unwrap(),
                Ok(vec![Some(1001), Some(1002), None])
            );
        }
        for source in [&p.dataset as &dyn Source, &p.database] {
            let e = source.event_times(5, &[0]).unwrap_err();
            assert_eq!(e.code(), "DEVICE_NOT_FOUND", "{e}");
        }
    }
}
