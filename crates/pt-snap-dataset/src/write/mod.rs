//! Building sharded datasets from a decoded snapshot (spec §10.2–10.3): the
//! `pt-snap-native-v2` dataset of `import --events-per-slice K` and the `compatibility-v1`
//! export of `import --format msinsight`.
//!
//! [`plan`] replays every selected device once and cuts it into shards held in memory
//! ([`plan::Shard`]); [`DatasetPlan::check`] refuses what the reference refuses (its
//! validation of the staged dataset); [`write_shard`] writes one shard into an empty
//! database, so the caller can write the shards of a dataset in parallel; the manifest
//! builders take the shards' hashes. Files, directories, threads and clocks are the caller's
//! (the CLI): everything here also builds for the browser.

pub mod plan;
mod shard_db;

use std::path::Path;

use pt_snap_db::Metadata;
use pt_snap_model::{Action, Snapshot};

use crate::manifest::{
    CompatibilityExtension, CompatibilityIdentity, CompatibilityManifest, CompatibilitySlice,
    Entries, ManifestDevice, NativeIdentity, NativeManifest, NativeSlice, MANIFEST_SCHEMA_VERSION,
    NATIVE_FORMAT,
};
use crate::reuse::{DatasetReport, MsinsightSource};
use plan::{DevicePlan, Shard, Texts};
pub use shard_db::{write_shard, Layout, ShardSource};

/// Why a dataset cannot be built. The message is what follows the reference's
/// "Dataset import backend failed: ".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    #[error("{0}")]
    Backend(String),
}

fn backend(e: impl std::fmt::Display) -> WriteError {
    WriteError::Backend(e.to_string())
}

/// Every selected device of a snapshot, replayed and cut into shards.
pub struct DatasetPlan<'s> {
    pub snapshot: &'s Snapshot,
    pub events_per_slice: usize,
    /// Selected devices, ascending.
    pub devices: Vec<DevicePlan>,
    /// Indices of `device_traces` not in the dataset (no events, or not requested).
    pub omitted_devices: Vec<i64>,
    pub texts: Texts,
}

/// Replays the devices of `snapshot` (all with events, or only `device`) into shards of
/// `events_per_slice` events.
pub fn plan(
    snapshot: &Snapshot,
    device: Option<usize>,
    events_per_slice: usize,
) -> Result<DatasetPlan<'_>, WriteError> {
    assert!(
        events_per_slice > 0,
        "events_per_slice is validated by the caller"
    );
    let available = snapshot.devices_with_events();
    let selected = match device {
        _ if available.is_empty() => None,
        None => Some(available),
        Some(d) => available.contains(&d).then(|| vec![d]),
    }
    .ok_or_else(|| {
        WriteError::Backend("Requested device is absent or has no trace events".into())
    })?;
    let mut texts = Texts::new(snapshot);
    let devices = selected
        .iter()
        .map(|&d| plan::plan_device(snapshot, d, events_per_slice, &mut texts))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(DatasetPlan {
        snapshot,
        events_per_slice,
        devices,
        omitted_devices: (0..snapshot.device_traces.len())
            .filter(|d| !selected.contains(d))
            .map(|d| d as i64)
            .collect(),
        texts,
    })
}

impl DatasetPlan<'_> {
    /// Every shard with its device, devices ascending, shards in index order.
    pub fn shards(&self) -> impl Iterator<Item = (&DevicePlan, &Shard)> {
        self.devices
            .iter()
            .flat_map(|p| p.shards.iter().map(move |s| (p, s)))
    }

    pub fn shard_count(&self) -> usize {
        self.devices.iter().map(|p| p.shards.len()).sum()
    }

    /// What a shard writer needs, with the metadata every shard carries.
    pub fn source<'a>(&'a self, plan: &'a DevicePlan, metadata: &'a Metadata) -> ShardSource<'a> {
        ShardSource {
            snapshot: self.snapshot,
            plan,
            texts: &self.texts,
            metadata,
        }
    }

    /// Creates the directory of every device (`device_<d>`) in the dataset directory `root`.
    pub fn create_device_dirs(&self, root: &Path) -> Result<(), WriteError> {
        for p in &self.devices {
            std::fs::create_dir(root.join(format!("device_{}", p.device))).map_err(backend)?;
        }
        Ok(())
    }

    /// Writes `shard` of `device_plan` as its member file below `root` (its device directory
    /// made), and returns the file's SHA-256; shards are independent, so the caller may write
    /// them in parallel.
    pub fn write_shard_file(
        &self,
        root: &Path,
        device_plan: &DevicePlan,
        shard: &Shard,
        metadata: &Metadata,
        layout: Layout,
    ) -> Result<String, WriteError> {
        let path = root.join(shard.file());
        let conn = pt_snap_db::rusqlite::Connection::open(&path).map_err(backend)?;
        write_shard(&conn, &self.source(device_plan, metadata), shard, layout).map_err(backend)?;
        conn.close().map_err(|(_, e)| backend(e))?;
        crate::hash::sha256_file(&path).map_err(backend)
    }

    /// Writes every shard under `root` (creating the device directories), one after the
    /// other, and returns each member's SHA-256 by file name — for tools and tests that need a
    /// dataset on disk; the CLI writes the shards on all cores as it stages them.
    pub fn write_shards(
        &self,
        root: &Path,
        metadata: &Metadata,
        layout: Layout,
    ) -> Result<std::collections::HashMap<String, String>, WriteError> {
        self.create_device_dirs(root)?;
        let mut hashes = std::collections::HashMap::new();
        for (device_plan, shard) in self.shards() {
            let hash = self.write_shard_file(root, device_plan, shard, metadata, layout)?;
            hashes.insert(shard.file(), hash);
        }
        Ok(hashes)
    }

    /// What the import reports about the dataset this plan builds.
    pub fn report(&self, metadata: Metadata) -> DatasetReport {
        DatasetReport {
            metadata,
            devices: self.devices.iter().map(|p| p.device as i64).collect(),
            slice_count: self.shard_count(),
            omitted_devices: self.omitted_devices.clone(),
        }
    }

    /// The `manifest.json` text of the dataset: an msinsight export's, recording `msinsight`,
    /// or without it the native manifest; `sha256` gives each member file's hash.
    pub fn manifest_text(
        &self,
        metadata: &Metadata,
        msinsight: Option<&MsinsightSource>,
        sha256: &dyn Fn(&str) -> String,
    ) -> String {
        match msinsight {
            None => manifest_json(&self.native_manifest(metadata, sha256)),
            Some(source) => manifest_json(&self.msinsight_manifest(
                metadata,
                &source.file,
                &source.cache_hash,
                sha256,
            )),
        }
    }

    /// Writes the plan as a native dataset in the empty directory `root`: the checks, the
    /// shards one after the other, the manifest last.
    pub fn write_native(&self, root: &Path, metadata: &Metadata) -> Result<(), WriteError> {
        self.check(Layout::Native)?;
        let hashes = self.write_shards(root, metadata, Layout::Native)?;
        let manifest = self.native_manifest(metadata, &|f: &str| hashes[f].clone());
        std::fs::write(root.join("manifest.json"), manifest_json(&manifest)).map_err(backend)
    }

    /// Refuses what the reference refuses once the shards are staged: for a native dataset
    /// its validation of every shard (`event_values`: known actions, non-negative sizes and
    /// totals; `block_identity`), for an msinsight export the real ids `0..N−1` and the eight
    /// actions it knows (no `oom`, nothing unknown).
    pub fn check(&self, layout: Layout) -> Result<(), WriteError> {
        match layout {
            Layout::Native => self.check_native(),
            Layout::Msinsight => self.check_msinsight(),
        }
    }

    fn check_native(&self) -> Result<(), WriteError> {
        let invalid = |shard: &Shard, what: &str| {
            Err(WriteError::Backend(format!(
                "Invalid dataset: {}: {what}",
                shard.file()
            )))
        };
        for (plan, shard) in self.shards() {
            if self.bad_event_values(plan, shard) {
                return invalid(shard, "event_values: invalid native event/scalar/callstack");
            }
            if bad_block_values(plan, shard) {
                return invalid(shard, "block_identity: unfinalized/invalid block");
            }
        }
        Ok(())
    }

    /// An unknown action, or a negative size or total, in a shard's events or boundary: what
    /// the reader's `event_values` check refuses, in either layout.
    fn bad_event_values(&self, plan: &plan::DevicePlan, shard: &plan::Shard) -> bool {
        let events =
            &self.snapshot.device_traces[plan.device][shard.start_position..=shard.end_position];
        let bad_totals = |t: &plan::Totals| t.allocated < 0 || t.active < 0 || t.reserved < 0;
        events
            .iter()
            .zip(&shard.events)
            .any(|(e, t)| e.action.code().is_none() || e.size < 0 || bad_totals(t))
            || shard
                .boundary
                .iter()
                .any(|b| b.size < 0 || bad_totals(&b.totals))
    }

    fn check_msinsight(&self) -> Result<(), WriteError> {
        for plan in &self.devices {
            let events = &self.snapshot.device_traces[plan.device];
            let mut next = 0i64;
            for shard in &plan.shards {
                let count = shard.event_count() as i64;
                if shard.start_event_id != next || shard.end_event_id != next + count - 1 {
                    return Err(WriteError::Backend(format!(
                        "events[{next}]: event_identity: compatibility requires original real IDs 0..N-1; do not silently renumber"
                    )));
                }
                next += count;
                let unsupported = events[shard.start_position..=shard.end_position]
                    .iter()
                    .any(|e| !msinsight_action(e.action));
                if unsupported {
                    return Err(WriteError::Backend(
                        "msinsight compatibility does not support OOM/unknown actions".into(),
                    ));
                }
                // The reader validates an export's values as a native dataset's (a fuzzed
                // negative size was written, then refused on reading).
                if self.bad_event_values(plan, shard) {
                    return Err(WriteError::Backend(format!(
                        "Invalid dataset: {}: event_values: invalid scalar type or negative byte metric",
                        shard.file()
                    )));
                }
                if bad_block_values(plan, shard) {
                    return Err(WriteError::Backend(format!(
                        "Invalid dataset: {}: block_identity: unfinalized/invalid block",
                        shard.file()
                    )));
                }
            }
        }
        Ok(())
    }

    /// The native manifest; `sha256` gives each member file's hash.
    pub fn native_manifest(
        &self,
        metadata: &Metadata,
        sha256: &dyn Fn(&str) -> String,
    ) -> NativeManifest {
        NativeManifest {
            format: NATIVE_FORMAT.to_owned(),
            schema_version: MANIFEST_SCHEMA_VERSION,
            status: "complete".to_owned(),
            source_file: metadata.source_name.clone(),
            identity: NativeIdentity::new(
                &metadata.source_sha256,
                metadata.requested_device,
                self.events_per_slice as i64,
            ),
            metadata: metadata.clone(),
            omitted_devices: self.omitted_devices.clone(),
            devices: self.manifest_devices(|s| NativeSlice {
                index: s.index as i64,
                start_position: s.start_position as i64,
                end_position: s.end_position as i64,
                start_event_id: s.start_event_id,
                end_event_id: s.end_event_id,
                file: s.file(),
                ready: true,
                sha256: sha256(&s.file()),
            }),
        }
    }

    /// The msinsight manifest: `source_file` is the source's absolute resolved path,
    /// `cache_hash` its salted hash; `sha256` gives each member file's hash.
    pub fn msinsight_manifest(
        &self,
        metadata: &Metadata,
        source_file: &str,
        cache_hash: &str,
        sha256: &dyn Fn(&str) -> String,
    ) -> CompatibilityManifest {
        let mut manifest = CompatibilityManifest {
            schema_version: MANIFEST_SCHEMA_VERSION,
            status: "complete".to_owned(),
            source_file: source_file.to_owned(),
            cache_hash: cache_hash.to_owned(),
            events_per_slice: self.events_per_slice as i64,
            devices: self.manifest_devices(|s| CompatibilitySlice {
                index: s.index as i64,
                start_event_id: s.start_event_id,
                end_event_id: s.end_event_id,
                file: s.file(),
                ready: true,
            }),
            pt_snap: None,
        };
        manifest.set_extension(&CompatibilityExtension {
            identity: CompatibilityIdentity::new(
                &metadata.source_sha256,
                metadata.requested_device,
                self.events_per_slice as i64,
            ),
            metadata: metadata.clone(),
            omitted_devices: self.omitted_devices.clone(),
            members: Entries(
                self.shards()
                    .map(|(_, s)| (s.file(), sha256(&s.file())))
                    .collect(),
            ),
        });
        manifest
    }

    /// Every device's manifest entry (both formats: every slice ready), by device id in
    /// ascending order; `slice` describes one shard in the manifest's format.
    fn manifest_devices<S>(&self, slice: impl Fn(&Shard) -> S) -> Entries<ManifestDevice<S>> {
        Entries(
            self.devices
                .iter()
                .map(|p| {
                    let device = ManifestDevice {
                        event_count: self.snapshot.device_traces[p.device].len() as i64,
                        slice_count: p.shards.len() as i64,
                        ready_slices: (0..p.shards.len() as i64).collect(),
                        slices: p.shards.iter().map(&slice).collect(),
                    };
                    (p.device.to_string(), device)
                })
                .collect(),
        )
    }
}

/// `manifest.json` text as the reference writes it (`json.dump(…, indent=2)`): two-space
/// indentation, ASCII only (other characters as `\uXXXX` escapes), no final newline.
pub fn manifest_json<T: serde::Serialize>(manifest: &T) -> String {
    pt_snap_contract::python::ensure_ascii(
        &serde_json::to_string_pretty(manifest).expect("manifests serialise"),
    )
}

/// Whether an action is one of the eight an msinsight export may hold.
fn msinsight_action(action: Action) -> bool {
    action.code().is_some_and(|c| c <= 7)
}

/// A block of the shard with a negative size, a request above its size, or a free before its
/// alloc: what the reader's `block_identity` check refuses.
fn bad_block_values(plan: &plan::DevicePlan, shard: &plan::Shard) -> bool {
    shard.blocks.iter().any(|&(i, _)| {
        let l = &plan.lifetimes[i as usize];
        let alloc = l.alloc_event.unwrap_or(-1);
        let free = l.free_event.unwrap_or(-1);
        l.size < 0
            || l.requested_size < 0
            || l.requested_size > l.size
            || !(free == -1 || (free >= 0 && (alloc == -1 || free >= alloc)))
    })
}
