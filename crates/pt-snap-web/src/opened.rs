//! The open file as the page knows it: what the replay previewed while the database was
//! being written, then the database's own overview.

use pt_snap_engine::{Overview, Peaks, Preview, Storage, Timeline};

use crate::fmt;

#[derive(Debug, Clone, PartialEq)]
pub struct Opened {
    pub name: String,
    /// From the replay, for an imported snapshot (kept after the database is ready: its
    /// peaks and whole-trace timeline are the database's answers, computed earlier).
    pub preview: Option<Preview>,
    /// The database is ready.
    pub overview: Option<Overview>,
}

impl Opened {
    pub fn ready(&self) -> bool {
        self.overview.is_some()
    }

    /// The engine's state as the page exposes it (`[data-testid=engine-state]`).
    pub fn engine_state(&self) -> &'static str {
        if self.ready() {
            "ready"
        } else {
            "peaks"
        }
    }

    pub fn devices(&self) -> Vec<i64> {
        match (&self.overview, &self.preview) {
            (Some(o), _) => o.devices.clone(),
            (None, Some(p)) => p.importing.clone(),
            (None, None) => Vec::new(),
        }
    }

    /// `(device, (first, last))` real-event ids; a device not replayed yet has `None`.
    pub fn bounds(&self) -> Vec<(i64, Option<(i64, i64)>)> {
        match (&self.overview, &self.preview) {
            (Some(o), _) => o.bounds.clone(),
            (None, Some(p)) => p
                .importing
                .iter()
                .map(|&d| (d, self.preview_of(d).and_then(|p| p.timeline.bounds)))
                .collect(),
            (None, None) => Vec::new(),
        }
    }

    fn preview_of(&self, device: i64) -> Option<&pt_snap_engine::DevicePreview> {
        self.preview
            .as_ref()?
            .devices
            .iter()
            .find(|p| p.device == device)
    }

    /// The device's peaks, if the replay gave them.
    pub fn peaks(&self, device: i64) -> Option<Peaks> {
        self.preview_of(device).map(|p| p.peaks)
    }

    /// The device's whole-trace timeline at `buckets`, if the replay gave it at that size.
    pub fn timeline(&self, device: i64, buckets: usize) -> Option<&Timeline> {
        self.preview_of(device)
            .map(|p| &p.timeline)
            .filter(|t| t.buckets.len() <= buckets)
    }

    /// The source file's SHA-256, from the ready database's import metadata.
    pub fn source_sha256(&self) -> Option<&str> {
        let rows = self.overview.as_ref()?.metadata.as_ref().ok()?;
        rows.iter()
            .find(|(k, _)| k == "source sha256")
            .map(|(_, v)| v.as_str())
    }

    /// What the open file is, beside its name: where its database came from and how large
    /// it is.
    pub fn describe(&self) -> String {
        match &self.overview {
            // The size is the database's, which an imported pickle's name would not suggest.
            Some(o) if o.imported => {
                format!("imported here · {} database", fmt::bytes(o.db_bytes as i64))
            }
            Some(o) => format!("SnapshotDB · {}", fmt::bytes(o.db_bytes as i64)),
            None => "peaks shown · database being written".to_owned(),
        }
    }

    /// Whether this browser keeps an import (an import in memory is gone with the tab).
    pub fn kept(&self) -> Option<&'static str> {
        match self.overview.as_ref().filter(|o| o.imported)?.storage {
            Storage::Opfs => Some("kept in this browser"),
            Storage::Memory => Some("in this tab only"),
        }
    }

    /// The imported database's size, once it is ready.
    pub fn db_bytes(&self) -> Option<u64> {
        self.overview.as_ref().map(|o| o.db_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pt_snap_engine::{DevicePreview, Peak};

    fn preview(devices: &[i64], replayed: &[i64]) -> Preview {
        Preview {
            name: "x.pkl".into(),
            importing: devices.to_vec(),
            devices: replayed
                .iter()
                .map(|&d| DevicePreview {
                    device: d,
                    peaks: Peaks {
                        active: Peak {
                            bytes: Some(100 + d),
                            event_id: Some(3),
                        },
                        ..Peaks::default()
                    },
                    timeline: Timeline {
                        device_id: d,
                        bounds: Some((0, 9)),
                        window: Some((0, 9)),
                        buckets: Vec::new(),
                    },
                })
                .collect(),
        }
    }

    #[test]
    fn a_preview_shows_replayed_devices_and_waits_for_the_rest() {
        let o = Opened {
            name: "x.pkl".into(),
            preview: Some(preview(&[0, 1], &[0])),
            overview: None,
        };
        assert_eq!(o.engine_state(), "peaks");
        assert_eq!(o.devices(), vec![0, 1]);
        assert_eq!(o.bounds(), vec![(0, Some((0, 9))), (1, None)]);
        assert_eq!(o.peaks(0).unwrap().active.bytes, Some(100));
        assert_eq!(o.peaks(1), None);
        assert!(o.timeline(0, 1000).is_some());
        assert_eq!(o.db_bytes(), None);
        assert_eq!(o.source_sha256(), None);
    }

    #[test]
    fn the_overview_is_the_truth_once_ready() {
        let o = Opened {
            name: "x.db".into(),
            preview: None,
            overview: Some(Overview {
                name: "x.db".into(),
                imported: false,
                db_bytes: 4096,
                devices: vec![2],
                bounds: vec![(2, Some((5, 6)))],
                metadata: Ok(vec![
                    ("source".into(), "x.pkl".into()),
                    ("source sha256".into(), "ab".repeat(32)),
                ]),
                warnings: Vec::new(),
                lenient_issues: None,
                storage: Storage::Memory,
                cache_hit: false,
                source_unchecked: false,
            }),
        };
        assert_eq!(o.engine_state(), "ready");
        assert_eq!(o.devices(), vec![2]);
        assert_eq!(o.bounds(), vec![(2, Some((5, 6)))]);
        assert_eq!(o.peaks(2), None);
        assert_eq!(o.db_bytes(), Some(4096));
        assert_eq!(o.source_sha256(), Some("ab".repeat(32).as_str()));
        assert_eq!(o.describe(), "SnapshotDB · 4.00 KiB");
        assert_eq!(o.kept(), None);
    }

    #[test]
    fn an_import_says_whether_this_browser_keeps_it() {
        let mut o = Opened {
            name: "x.pkl".into(),
            preview: Some(preview(&[0], &[0])),
            overview: None,
        };
        assert_eq!(o.describe(), "peaks shown · database being written");
        assert_eq!(o.kept(), None);
        let mut overview = Overview {
            name: "x.pkl".into(),
            imported: true,
            db_bytes: 3 << 20,
            devices: vec![0],
            bounds: vec![(0, Some((0, 9)))],
            metadata: Ok(Vec::new()),
            warnings: Vec::new(),
            lenient_issues: None,
            storage: Storage::Opfs,
            cache_hit: false,
            source_unchecked: false,
        };
        o.overview = Some(overview.clone());
        assert_eq!(o.describe(), "imported here · 3.00 MiB database");
        assert_eq!(o.kept(), Some("kept in this browser"));
        overview.storage = Storage::Memory;
        o.overview = Some(overview);
        assert_eq!(o.kept(), Some("in this tab only"));
    }
}
