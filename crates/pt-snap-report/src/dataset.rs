//! The reports on sharded datasets (spec §8, §10.4), answered by the dataset query engine of
//! `pt-snap-dataset`: `peak-memory` is the same composition as on a standalone database, its
//! two queries charged to one work budget (`--max-work-rows`, `--max-work-bytes`,
//! `--max-scratch-db-bytes`) under one deadline; `memory-tree` gets the engine's answer for
//! the frame-tree template, which datasets do not support (no structured frames).

use std::path::PathBuf;

use pt_snap_dataset::read::{run_charged, Budget, Dataset, DatasetRequest};
use pt_snap_query::QueryError;
use pt_snap_query::{Interrupt, WorkLimits};
use serde_json::{Map, Value as Json};

use crate::peak::{compose, Answer};
use crate::{PeakReport, PeakRequest, TreeRequest};

/// The budget and clock of one report on a dataset.
#[derive(Clone, Default)]
pub struct DatasetBudget {
    pub limits: WorkLimits,
    /// The deadline, polled by every shard read.
    pub interrupt: Option<Interrupt>,
    /// Where derived lifecycle databases may be kept between calls (see [`DatasetRequest`]).
    pub lifecycle_cache: Option<PathBuf>,
}

impl DatasetBudget {
    fn request(
        &self,
        template: &str,
        params: Map<String, Json>,
        device: Option<i64>,
    ) -> DatasetRequest {
        DatasetRequest {
            template: template.to_owned(),
            params,
            device,
            max_rows: None,
            exact_total: false,
            slice: None,
            limits: self.limits,
            interrupt: self.interrupt.clone(),
            lifecycle_cache: self.lifecycle_cache.clone(),
        }
    }
}

/// `report peak-memory` on a dataset: the dataset-global peaks of the device's real events,
/// and the attribution at the metric's peak event with the dataset's source identities
/// (`source_stack_id`, `text_kind`, `frames_status` …). The report's `scope` is the peak
/// search's, its `source_coverage` the attribution's.
pub fn peak_memory_dataset(
    ds: &Dataset,
    req: &PeakRequest,
    budget: &DatasetBudget,
) -> Result<PeakReport, QueryError> {
    let mut charged = Budget::new(budget.limits, budget.interrupt.clone());
    compose(req, |template, params| {
        let o = run_charged(
            ds,
            &budget.request(template, params, req.device),
            &mut charged,
        )?;
        Ok(Answer {
            device_id: o.device_id,
            rows: o.rows,
            has_more: o.has_more,
            truncated: o.truncated,
            total_is_exact: o.total_is_exact,
            scope: Some(o.scope),
        })
    })
}

/// `report memory-tree` on a dataset: the engine checks the device, then refuses the frame
/// tree (`active_memory_frame_tree_at_event` is not a dataset-global template), as the
/// reference does; this is that refusal.
pub fn memory_tree_dataset(ds: &Dataset, req: &TreeRequest, budget: &DatasetBudget) -> QueryError {
    let mut params = Map::new();
    params.insert("event_id".into(), req.event_id.into());
    params.insert("include_static".into(), req.include_static.into());
    params.insert("min_size".into(), req.min_size.into());
    let request = budget.request("active_memory_frame_tree_at_event", params, req.device);
    match pt_snap_dataset::read::run(ds, &request) {
        Err(e) => e,
        // Not reachable while the engine has no frame tree; refuse rather than show rows
        // no renderer here was checked against.
        Ok(_) => QueryError::Failed(
            "Unsupported dataset-global template/custom SQL or runtime override; select an \
             explicit standalone member. A built-in name is not a merge contract."
                .into(),
        ),
    }
}
