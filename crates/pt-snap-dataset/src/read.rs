//! Reading datasets (spec §10.4, §11): validation ([`Dataset::open`], with a verified
//! fingerprint cache), the `overview` object and the import metadata. Queries on a validated
//! dataset are `pt-snap-dataset-query`'s.

mod validate;

use pt_snap_query::{ImportMetadata, MetadataStatus};
use serde_json::{json, Map, Value};

pub use validate::{is_dataset_path, Dataset, ValidationCache};

use crate::manifest::{validate_metadata, Manifest};

/// The template → dataset semantics table (Appendix B), in the reference's order.
pub const SUPPORTED: [(&str, &str); 11] = [
    ("event", "real_events_global_filter_sort_page"),
    ("allocation", "real_events_global_filter_sort_page"),
    ("memory_peak", "independent_real_counter_peaks_earliest_id"),
    ("allocator_gap", "global_peaks_same_event_counters"),
    (
        "active_blocks_at_event",
        "owner_event_active_set_cross_slice_sources",
    ),
    (
        "active_memory_callstack_at_event",
        "owner_event_global_source_groups_before_top_n",
    ),
    ("preexisting_live", "owner_event_preexisting_occupancy"),
    ("block", "proved_lifecycles_dedup_latest_observation"),
    ("freed_block_lifetime", "proved_completed_lifecycles_once"),
    (
        "leak_detection",
        "terminal_dataset_dynamic_survivors_not_confirmed_leaks",
    ),
    (
        "callstack_analysis",
        "all_real_stack_bearing_actions_global_identity_weighted_stats",
    ),
];

impl Dataset {
    /// v1 (inline callstack text, compatibility-v1) or v2 (callstack table, native).
    pub fn layout_name(&self) -> &'static str {
        if self.manifest.is_native() {
            "v2"
        } else {
            "v1"
        }
    }

    /// Device ids, ascending.
    pub fn device_ids(&self) -> Vec<i64> {
        self.manifest.device_ids()
    }

    /// The `dataset` object of `overview --json`.
    pub fn to_json(&self) -> Value {
        let root = self.root.display().to_string();
        let mut devices = self.manifest.devices.clone();
        devices.sort_by_key(|d| d.device_id);
        let supported: Map<String, Value> = SUPPORTED
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect();
        json!({
            "manifest_path": format!("{root}/manifest.json"),
            "schema_version": self.manifest.schema_version(),
            "status": self.manifest.status(),
            "format": self.manifest.format(),
            "fingerprint": self.fingerprint,
            "real_event_count": self.real_event_count,
            "boundary_event_count": self.boundary_event_count,
            "text_callstacks": true,
            "structured_frames": false,
            "cross_slice_queries": true,
            "supported_queries": supported,
            "cross_slice_sources": true,
            "ordered_frames_reader_version": 1,
            "structured_frames_scope": "validation_only; query source coverage is separate",
            "devices": devices.iter().map(|d| json!({
                "device_id": d.device_id,
                "event_count": d.event_count,
                "slices": d.slices.iter().map(|s| json!({
                    "index": s.index,
                    "first_event_id": s.start_event_id,
                    "last_event_id": s.end_event_id,
                    "db_path": format!("{root}/{}", s.file),
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
    }

    /// `(first, last)` real event ids per device, ascending by device (overview's `devices`).
    pub fn device_bounds(&self) -> Vec<(i64, i64, i64)> {
        let mut v: Vec<(i64, i64, i64)> = self
            .manifest
            .devices
            .iter()
            .map(|d| {
                (
                    d.device_id,
                    d.slices.first().map_or(0, |s| s.start_event_id),
                    d.slices.last().map_or(-1, |s| s.end_event_id),
                )
            })
            .collect();
        v.sort_unstable();
        v
    }

    /// The import metadata as `metadata`/`overview` report it: the native manifest's
    /// metadata; a compatibility manifest's `ptSnap` attestation, checked against the members
    /// (missing → `unavailable`, inconsistent → `invalid`).
    pub fn import_metadata(&self) -> ImportMetadata {
        use MetadataStatus::{Available, Invalid, Unavailable};
        let (status, reason, metadata) = match &self.manifest.manifest {
            Manifest::Native(m) => match validate_metadata(&m.metadata) {
                Ok(meta) => (Available, None, Some(meta)),
                Err(_) => (Invalid, Some("metadata_invalid"), None),
            },
            Manifest::Compatibility(c) => match c.extension() {
                None => (Unavailable, Some("metadata_missing"), None),
                Some(ext) => match ext.ok().and_then(|e| self.owned_compatibility(c, &e)) {
                    Some(meta) => (Available, None, Some(meta)),
                    None => (Invalid, Some("metadata_invalid"), None),
                },
            },
        };
        ImportMetadata {
            status,
            reason,
            metadata,
            lenient_replay_issues: None,
        }
    }

    /// The reference's `inspect_owned_cache`: the attestation must describe exactly this
    /// dataset (identity, members and their hashes, member metadata, device selection).
    fn owned_compatibility(
        &self,
        c: &crate::manifest::CompatibilityManifest,
        e: &crate::manifest::CompatibilityExtension,
    ) -> Option<pt_snap_db::Metadata> {
        use crate::manifest::CompatibilityIdentity;
        let meta = validate_metadata(&e.metadata).ok()?;
        let want = CompatibilityIdentity::new(
            &meta.source_sha256,
            meta.requested_device,
            c.events_per_slice,
        );
        if e.identity != want
            || meta.importer_name != "pt-snap-cli"
            || meta.import_format_version != 1
            || meta.metadata_schema_version != 1
        {
            return None;
        }
        let files: std::collections::BTreeSet<&str> = self
            .manifest
            .devices
            .iter()
            .flat_map(|d| d.slices.iter().map(|s| s.file.as_str()))
            .collect();
        let attested: std::collections::BTreeSet<&str> =
            e.members.0.iter().map(|(k, _)| k.as_str()).collect();
        if files != attested {
            return None;
        }
        // Nothing but the manifest, the device directories and the members.
        let mut expected: std::collections::BTreeSet<String> =
            files.iter().map(|f| (*f).to_owned()).collect();
        expected.insert("manifest.json".into());
        for f in &files {
            if let Some((dir, _)) = f.rsplit_once('/') {
                expected.insert(dir.to_owned());
            }
        }
        let mut actual = std::collections::BTreeSet::new();
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).ok()?.flatten() {
                let p = entry.path();
                if p.is_symlink() {
                    return None;
                }
                let rel = p
                    .strip_prefix(&self.root)
                    .ok()?
                    .to_string_lossy()
                    .into_owned();
                if p.is_dir() {
                    stack.push(p);
                }
                actual.insert(rel);
            }
        }
        if actual != expected {
            return None;
        }
        for (file, sha) in &e.members.0 {
            if crate::hash::sha256_file(&self.root.join(file)).ok()? != *sha {
                return None;
            }
            let uri = format!(
                "file:{}?mode=ro&immutable=1",
                self.root.join(file).display()
            );
            let conn = pt_snap_db::rusqlite::Connection::open_with_flags(
                uri,
                pt_snap_db::rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                    | pt_snap_db::rusqlite::OpenFlags::SQLITE_OPEN_URI,
            )
            .ok()?;
            if pt_snap_db::Metadata::read(&conn).ok()?.ok()? != meta {
                return None;
            }
        }
        let devices: std::collections::BTreeSet<i64> =
            self.manifest.devices.iter().map(|d| d.device_id).collect();
        let omitted: std::collections::BTreeSet<i64> = e.omitted_devices.iter().copied().collect();
        if omitted.len() != e.omitted_devices.len()
            || e.omitted_devices
                .iter()
                .any(|d| *d < 0 || devices.contains(d))
        {
            return None;
        }
        if meta.requested_device.is_some_and(|r| devices != [r].into()) {
            return None;
        }
        let name = c.source_file.rsplit('/').next().unwrap_or("");
        (name == meta.source_name).then_some(meta)
    }
}
