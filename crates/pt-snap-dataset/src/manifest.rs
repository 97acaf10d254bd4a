//! `manifest.json` of the two dataset layouts the reference writes and reads (spec §10.2–10.4):
//!
//! * `pt-snap-native-v2` ([`NativeManifest`]): `import --events-per-slice K`;
//! * `compatibility-v1` ([`CompatibilityManifest`]): `import --format msinsight`, the
//!   MindStudio Insight sharded layout, with pt-snap's attestation under `ptSnap`.
//!
//! The serde types serialise with the reference's key names and key order, so the writer
//! produces manifests byte-compatible with pt-snap-cli's (modulo indentation of its
//! `json.dumps`). [`parse`] is the reader side: it accepts exactly what the reference's
//! `parse_native_manifest` / `parse_manifest` accept (duplicate keys, booleans where integers
//! belong, non-canonical device keys, gaps in the slice coverage, … are all refused) and returns
//! a format-independent [`DeviceRecord`] list. Nothing here touches files.

use std::collections::BTreeSet;
use std::fmt;

use pt_snap_db::Metadata;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

pub const NATIVE_FORMAT: &str = "pt-snap-native-v2";
pub const COMPATIBILITY_FORMAT: &str = "compatibility-v1";
pub const MANIFEST_SCHEMA_VERSION: i64 = 1;
/// The Ascend/msinsight revision whose documented layout `compatibility-v1` follows.
pub const MSINSIGHT_REVISION: &str = "101f65b877a267ffd5f66ea3834706057ba243e5";
/// `cacheHash` of a compatibility manifest = SHA-256 of these bytes followed by the source
/// file's bytes (MindStudio Insight's cache key).
pub const MSINSIGHT_CACHE_SALT: &[u8] = b"mem_snapshot_parser_v2";
/// Default `--events-per-slice` of `import --format msinsight`.
pub const MSINSIGHT_DEFAULT_EVENTS_PER_SLICE: i64 = 500_000;

/// Which dataset an import builds: `import --events-per-slice K` or `import --format msinsight`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatasetKind {
    /// `pt-snap-native-v2`.
    Native,
    /// `compatibility-v1`, MindStudio Insight's sharded layout.
    Msinsight,
}

impl DatasetKind {
    /// The format the import reports (`format` of its output).
    pub fn format(self) -> &'static str {
        match self {
            DatasetKind::Native => NATIVE_FORMAT,
            DatasetKind::Msinsight => COMPATIBILITY_FORMAT,
        }
    }

    /// Where the reference puts the dataset of the source `source_name`: `<name>.<suffix>` in
    /// the output directory.
    pub fn target(self, out_dir: &std::path::Path, source_name: &str) -> std::path::PathBuf {
        let suffix = match self {
            DatasetKind::Native => "pt-snap-native-v2",
            DatasetKind::Msinsight => "msinsight",
        };
        out_dir.join(format!("{source_name}.{suffix}"))
    }

    /// The physical layout of its shards.
    pub fn layout(self) -> crate::write::Layout {
        match self {
            DatasetKind::Native => crate::write::Layout::Native,
            DatasetKind::Msinsight => crate::write::Layout::Msinsight,
        }
    }

    /// `import_format_version` of its shards' metadata.
    pub fn import_format_version(self) -> i64 {
        match self {
            DatasetKind::Native => 2,
            DatasetKind::Msinsight => 1,
        }
    }

    /// Events per shard: `given` (`--events-per-slice`), which a native dataset requires
    /// (`None` without it), else msinsight's default.
    pub fn events_per_slice(self, given: Option<i64>) -> Option<i64> {
        match self {
            DatasetKind::Native => given,
            DatasetKind::Msinsight => Some(given.unwrap_or(MSINSIGHT_DEFAULT_EVENTS_PER_SLICE)),
        }
    }
}

/// Which rule of the dataset contract a manifest or member breaks: the reference's
/// `DatasetContractError` codes, the middle part of its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    Block,
    BlockIdentity,
    Building,
    Callstack,
    Capacity,
    Columns,
    Count,
    Coverage,
    Device,
    DeviceTables,
    Dictionary,
    Duplicate,
    Empty,
    EventAction,
    EventIdentity,
    EventValues,
    Extension,
    Format,
    Hash,
    Identity,
    Index,
    Layout,
    Lifecycle,
    Members,
    Metadata,
    Missing,
    NotReady,
    Path,
    PrimaryKey,
    Range,
    Read,
    Readiness,
    Schema,
    Sqlite,
    Status,
    Table,
    Type,
    Version,
}

impl Rule {
    /// The rule as the reference's message spells it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Rule::Block => "block",
            Rule::BlockIdentity => "block_identity",
            Rule::Building => "building",
            Rule::Callstack => "callstack",
            Rule::Capacity => "capacity",
            Rule::Columns => "columns",
            Rule::Count => "count",
            Rule::Coverage => "coverage",
            Rule::Device => "device",
            Rule::DeviceTables => "device_tables",
            Rule::Dictionary => "dictionary",
            Rule::Duplicate => "duplicate",
            Rule::Empty => "empty",
            Rule::EventAction => "event_action",
            Rule::EventIdentity => "event_identity",
            Rule::EventValues => "event_values",
            Rule::Extension => "extension",
            Rule::Format => "format",
            Rule::Hash => "hash",
            Rule::Identity => "identity",
            Rule::Index => "index",
            Rule::Layout => "layout",
            Rule::Lifecycle => "lifecycle",
            Rule::Members => "members",
            Rule::Metadata => "metadata",
            Rule::Missing => "missing",
            Rule::NotReady => "not_ready",
            Rule::Path => "path",
            Rule::PrimaryKey => "primary_key",
            Rule::Range => "range",
            Rule::Read => "read",
            Rule::Readiness => "readiness",
            Rule::Schema => "schema",
            Rule::Sqlite => "sqlite",
            Rule::Status => "status",
            Rule::Table => "table",
            Rule::Type => "type",
            Rule::Version => "version",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A manifest that breaks the contract. Displays as the reference's
/// `DatasetContractError` does: `<location>: <rule>: <detail>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{location}: {rule}: {detail}")]
pub struct ContractError {
    pub location: String,
    pub rule: Rule,
    pub detail: String,
}

impl ContractError {
    pub fn new(location: impl Into<String>, rule: Rule, detail: impl Into<String>) -> Self {
        Self {
            location: location.into(),
            rule,
            detail: detail.into(),
        }
    }
}

fn need(
    ok: bool,
    location: impl Into<String>,
    rule: Rule,
    detail: &str,
) -> Result<(), ContractError> {
    if ok {
        Ok(())
    } else {
        Err(ContractError::new(location, rule, detail))
    }
}

/// The reference's rule for an integer outside its allowed range.
fn in_range(ok: bool, location: impl Into<String>) -> Result<(), ContractError> {
    need(ok, location, Rule::Range, "integer out of range")
}

/// The reference's rule for a string that must not be empty.
fn non_empty(s: &str, location: impl Into<String>) -> Result<(), ContractError> {
    need(
        !s.is_empty(),
        location,
        Rule::Range,
        "string must not be empty",
    )
}

/// An object whose keys keep their document order (device ids, member files). The reference
/// writes devices in ascending numeric order, which a string-keyed `BTreeMap` would not keep
/// (`"10"` < `"2"`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Entries<V>(pub Vec<(String, V)>);

impl<V> Entries<V> {
    pub fn get(&self, key: &str) -> Option<&V> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

impl<V: Serialize> Serialize for Entries<V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Entries<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V2<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for V2<V> {
            type Value = Entries<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = access.next_entry::<String, V>()? {
                    out.push((k, v));
                }
                Ok(Entries(out))
            }
        }
        deserializer.deserialize_map(V2(std::marker::PhantomData))
    }
}

/// The reference's `metadata_from_mapping` value rules for the metadata a manifest records
/// (the same nine fields as the `pt_snap_metadata` row, so the same type).
pub fn validate_metadata(metadata: &Metadata) -> Result<Metadata, ContractError> {
    // The reference's rule is "any version >= 1"; `Metadata::validate` (made for DB rows)
    // pins the schema version to 1, which is also the only one the manifest identity allows.
    metadata
        .clone()
        .validate()
        .map_err(|p| ContractError::new("metadata", Rule::Metadata, format!("{p:?}")))
}

// ---------------------------------------------------------------------------------------------
// pt-snap-native-v2

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NativeIdentity {
    pub source_sha256: String,
    pub requested_device: Option<i64>,
    pub events_per_slice: i64,
    pub output_format: String,
    pub manifest_contract_version: i64,
    pub format_contract_version: i64,
    pub import_contract_version: i64,
    pub extension_contract_version: i64,
    pub metadata_schema_version: i64,
    pub import_format_version: i64,
}

impl NativeIdentity {
    /// The identity the reference writes (and the only one it reads): all contract versions 1,
    /// shards in import format 2.
    pub fn new(source_sha256: &str, requested_device: Option<i64>, events_per_slice: i64) -> Self {
        Self {
            source_sha256: source_sha256.to_owned(),
            requested_device,
            events_per_slice,
            output_format: NATIVE_FORMAT.to_owned(),
            manifest_contract_version: 1,
            format_contract_version: 1,
            import_contract_version: 1,
            extension_contract_version: 1,
            metadata_schema_version: 1,
            import_format_version: 2,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NativeSlice {
    pub index: i64,
    pub start_position: i64,
    pub end_position: i64,
    pub start_event_id: i64,
    pub end_event_id: i64,
    pub file: String,
    pub ready: bool,
    pub sha256: String,
}

/// A device of either manifest, with the slices of its format ([`NativeSlice`] or
/// [`CompatibilitySlice`]): both formats describe a device with the same four keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestDevice<S> {
    pub event_count: i64,
    pub slice_count: i64,
    pub ready_slices: Vec<i64>,
    pub slices: Vec<S>,
}

pub type NativeDevice = ManifestDevice<NativeSlice>;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NativeManifest {
    pub format: String,
    pub schema_version: i64,
    pub status: String,
    /// The source pickle's file name (not a path).
    pub source_file: String,
    pub identity: NativeIdentity,
    pub metadata: Metadata,
    pub omitted_devices: Vec<i64>,
    pub devices: Entries<NativeDevice>,
}

// ---------------------------------------------------------------------------------------------
// compatibility-v1 (msinsight)

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompatibilityIdentity {
    pub source_sha256: String,
    pub requested_device: Option<i64>,
    pub events_per_slice: i64,
    pub output_format: String,
    pub manifest_contract_version: i64,
    pub export_contract_version: i64,
    pub reference_contract_version: i64,
    pub metadata_schema_version: i64,
    pub import_format_version: i64,
    pub target_revision: String,
}

impl CompatibilityIdentity {
    pub fn new(source_sha256: &str, requested_device: Option<i64>, events_per_slice: i64) -> Self {
        Self {
            source_sha256: source_sha256.to_owned(),
            requested_device,
            events_per_slice,
            output_format: COMPATIBILITY_FORMAT.to_owned(),
            manifest_contract_version: MANIFEST_SCHEMA_VERSION,
            export_contract_version: 1,
            reference_contract_version: 1,
            metadata_schema_version: 1,
            import_format_version: 1,
            target_revision: MSINSIGHT_REVISION.to_owned(),
        }
    }
}

/// pt-snap's attestation inside a compatibility manifest (`ptSnap`). Manifests written by
/// other producers (MindStudio Insight itself) have none; the reader then reports metadata as
/// unavailable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompatibilityExtension {
    pub identity: CompatibilityIdentity,
    pub metadata: Metadata,
    pub omitted_devices: Vec<i64>,
    /// Member file (relative path) → SHA-256 of its bytes.
    pub members: Entries<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompatibilitySlice {
    pub index: i64,
    pub start_event_id: i64,
    pub end_event_id: i64,
    pub file: String,
    pub ready: bool,
}

pub type CompatibilityDevice = ManifestDevice<CompatibilitySlice>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompatibilityManifest {
    pub schema_version: i64,
    pub status: String,
    /// Absolute resolved path of the source pickle.
    pub source_file: String,
    pub cache_hash: String,
    pub events_per_slice: i64,
    pub devices: Entries<CompatibilityDevice>,
    /// Kept as raw JSON on read: a malformed attestation does not make the dataset unreadable,
    /// only its metadata `invalid` (see [`CompatibilityManifest::extension`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pt_snap: Option<Value>,
}

impl CompatibilityManifest {
    /// `None` for external manifests without `ptSnap`; `Some(Err)` for a malformed one.
    pub fn extension(&self) -> Option<Result<CompatibilityExtension, ContractError>> {
        self.pt_snap.as_ref().map(|v| {
            CompatibilityExtension::deserialize(v)
                .map_err(|e| ContractError::new("ptSnap", Rule::Type, e.to_string()))
        })
    }

    pub fn set_extension(&mut self, extension: &CompatibilityExtension) {
        self.pt_snap = Some(serde_json::to_value(extension).expect("plain data serialises"));
    }
}

// ---------------------------------------------------------------------------------------------
// Reading

/// One shard as both formats describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SliceRecord {
    pub index: usize,
    pub start_event_id: i64,
    pub end_event_id: i64,
    /// Relative member path, `device_<d>/slice_<iiiii>.db`.
    pub file: String,
    /// Declared content hash (native manifests only).
    pub sha256: Option<String>,
    /// Real events in the shard (native ids may be sparse: counted by positions).
    pub event_count: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceRecord {
    pub device_id: i64,
    pub event_count: i64,
    pub slices: Vec<SliceRecord>,
}

// One manifest per command: the size difference between the variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Manifest {
    Native(NativeManifest),
    Compatibility(CompatibilityManifest),
}

/// A manifest that passed every rule, with its devices in document order.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidManifest {
    pub manifest: Manifest,
    pub devices: Vec<DeviceRecord>,
}

impl ValidManifest {
    pub fn format(&self) -> &'static str {
        match self.manifest {
            Manifest::Native(_) => NATIVE_FORMAT,
            Manifest::Compatibility(_) => COMPATIBILITY_FORMAT,
        }
    }

    pub fn is_native(&self) -> bool {
        matches!(self.manifest, Manifest::Native(_))
    }

    pub fn schema_version(&self) -> i64 {
        match &self.manifest {
            Manifest::Native(m) => m.schema_version,
            Manifest::Compatibility(m) => m.schema_version,
        }
    }

    pub fn status(&self) -> &str {
        match &self.manifest {
            Manifest::Native(m) => &m.status,
            Manifest::Compatibility(m) => &m.status,
        }
    }

    pub fn device(&self, id: i64) -> Option<&DeviceRecord> {
        self.devices.iter().find(|d| d.device_id == id)
    }

    /// Device ids ascending.
    pub fn device_ids(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = self.devices.iter().map(|d| d.device_id).collect();
        ids.sort_unstable();
        ids
    }
}

/// Parses and validates a manifest's bytes with the reference's rules; the format is chosen
/// by the top-level `format` key, as the reference does.
pub fn parse(bytes: &[u8]) -> Result<ValidManifest, ContractError> {
    let read_err =
        |e: &dyn fmt::Display| ContractError::new("manifest.json", Rule::Read, e.to_string());
    let text = std::str::from_utf8(bytes).map_err(|e| read_err(&e))?;
    // The reference loads with a hook refusing duplicate members at any depth; serde_json
    // would silently keep the last one.
    let mut de = serde_json::Deserializer::from_str(text);
    DuplicateCheck("manifest".into())
        .deserialize(&mut de)
        .map_err(|e| {
            let msg = e.to_string();
            match msg.strip_prefix("duplicate:") {
                Some(loc) => ContractError::new(
                    loc.split(" at line").next().unwrap_or(loc),
                    Rule::Duplicate,
                    "duplicate JSON member",
                ),
                None => read_err(&e),
            }
        })?;
    de.end().map_err(|e| read_err(&e))?;
    let value: Value = serde_json::from_str(text).map_err(|e| read_err(&e))?;
    let Value::Object(obj) = &value else {
        return Err(ContractError::new(
            "manifest",
            Rule::Type,
            "expected object",
        ));
    };
    let type_err = |e: serde_json::Error| ContractError::new("manifest", Rule::Type, e.to_string());
    if obj.get("format").and_then(Value::as_str) == Some(NATIVE_FORMAT) {
        let m: NativeManifest = serde_json::from_value(value).map_err(type_err)?;
        let devices = validate_native(&m)?;
        Ok(ValidManifest {
            manifest: Manifest::Native(m),
            devices,
        })
    } else {
        let m: CompatibilityManifest = serde_json::from_value(value).map_err(type_err)?;
        let devices = validate_compatibility(&m)?;
        Ok(ValidManifest {
            manifest: Manifest::Compatibility(m),
            devices,
        })
    }
}

fn is_digest(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

fn device_key(key: &str, location: &str) -> Result<i64, ContractError> {
    let canonical = key == "0"
        || (!key.is_empty() && !key.starts_with('0') && key.bytes().all(|c| c.is_ascii_digit()));
    need(
        canonical,
        location,
        Rule::Device,
        "expected canonical nonnegative device ID",
    )?;
    key.parse::<i64>()
        .ok()
        .filter(|d| *d <= i64::from(i32::MAX))
        .ok_or_else(|| ContractError::new(location, Rule::Range, "integer out of range"))
}

/// The devices of a manifest in document order: what both formats require of a device (a
/// canonical id as its key, at least one event), then `slices`, the format's own checks of
/// the device (`loc` is its location, `devices.<key>`) giving its slices.
fn device_records<S>(
    devices: &Entries<ManifestDevice<S>>,
    mut slices: impl FnMut(&str, i64, &ManifestDevice<S>) -> Result<Vec<SliceRecord>, ContractError>,
) -> Result<Vec<DeviceRecord>, ContractError> {
    let mut records = Vec::new();
    for (key, dev) in &devices.0 {
        let loc = format!("devices.{key}");
        let device_id = device_key(key, &loc)?;
        in_range(dev.event_count >= 1, format!("{loc}.eventCount"))?;
        records.push(DeviceRecord {
            device_id,
            event_count: dev.event_count,
            slices: slices(&loc, device_id, dev)?,
        });
    }
    Ok(records)
}

fn validate_native(m: &NativeManifest) -> Result<Vec<DeviceRecord>, ContractError> {
    need(
        m.schema_version == MANIFEST_SCHEMA_VERSION,
        "schemaVersion",
        Rule::Version,
        "unsupported native manifest",
    )?;
    need(
        m.status == "complete",
        "status",
        Rule::Building,
        "complete native dataset required",
    )?;
    non_empty(&m.source_file, "sourceFile")?;
    let id = &m.identity;
    need(
        is_digest(&id.source_sha256),
        "identity.sourceSha256",
        Rule::Hash,
        "expected SHA256",
    )?;
    if let Some(d) = id.requested_device {
        in_range(
            (0..=i64::from(i32::MAX)).contains(&d),
            "identity.requestedDevice",
        )?;
    }
    in_range(id.events_per_slice >= 1, "identity.eventsPerSlice")?;
    need(
        id.output_format == NATIVE_FORMAT,
        "identity",
        Rule::Format,
        "format identity mismatch",
    )?;
    let metadata = validate_metadata(&m.metadata)?;
    need(
        (
            metadata.source_sha256.as_str(),
            metadata.requested_device,
            metadata.metadata_schema_version,
            metadata.import_format_version,
        ) == (
            id.source_sha256.as_str(),
            id.requested_device,
            id.metadata_schema_version,
            id.import_format_version,
        ),
        "metadata",
        Rule::Identity,
        "metadata disagrees with dataset identity",
    )?;
    need(
        m.source_file == metadata.source_name,
        "sourceFile",
        Rule::Metadata,
        "source name disagrees with metadata",
    )?;
    let omitted: BTreeSet<i64> = m.omitted_devices.iter().copied().collect();
    in_range(m.omitted_devices.iter().all(|d| *d >= 0), "omittedDevices")?;
    need(
        omitted.len() == m.omitted_devices.len(),
        "omittedDevices",
        Rule::Duplicate,
        "duplicate device",
    )?;
    let capacity = id.events_per_slice;
    let devices = device_records(&m.devices, |loc, device_id, dev| {
        need(
            !dev.slices.is_empty() && dev.slice_count == dev.slices.len() as i64,
            loc,
            Rule::Count,
            "invalid sliceCount",
        )?;
        need(
            dev.ready_slices
                .iter()
                .copied()
                .eq(0..dev.slices.len() as i64),
            loc,
            Rule::Readiness,
            "all slices must be ready in order",
        )?;
        let (mut position, mut last_id) = (0i64, -1i64);
        let mut slices = Vec::new();
        let n = dev.slices.len();
        for (i, s) in dev.slices.iter().enumerate() {
            need(
                s.index == i as i64 && s.ready,
                loc,
                Rule::Index,
                "slice index/readiness mismatch",
            )?;
            in_range(
                s.start_position >= 0 && s.end_position >= s.start_position,
                format!("{loc}.endPosition"),
            )?;
            let len = s.end_position - s.start_position + 1;
            need(
                s.start_position == position && len <= capacity,
                loc,
                Rule::Coverage,
                "invalid positional coverage/capacity",
            )?;
            need(
                i == n - 1 || len == capacity,
                loc,
                Rule::Capacity,
                "nonfinal slice is not full",
            )?;
            in_range(s.start_event_id > last_id, format!("{loc}.startEventId"))?;
            in_range(
                s.end_event_id >= s.start_event_id,
                format!("{loc}.endEventId"),
            )?;
            need(
                s.file == format!("device_{device_id}/slice_{i:05}.db"),
                loc,
                Rule::Path,
                "noncanonical member",
            )?;
            need(is_digest(&s.sha256), loc, Rule::Hash, "expected SHA256")?;
            slices.push(SliceRecord {
                index: i,
                start_event_id: s.start_event_id,
                end_event_id: s.end_event_id,
                file: s.file.clone(),
                sha256: Some(s.sha256.clone()),
                event_count: len,
            });
            position = s.end_position + 1;
            last_id = s.end_event_id;
        }
        need(
            position == dev.event_count,
            loc,
            Rule::Coverage,
            "positions do not cover eventCount",
        )?;
        Ok(slices)
    })?;
    need(
        !devices.is_empty(),
        "devices",
        Rule::Empty,
        "event-bearing device required",
    )?;
    need(
        devices.iter().all(|d| !omitted.contains(&d.device_id)),
        "omittedDevices",
        Rule::Device,
        "selected device is omitted",
    )?;
    if let Some(r) = id.requested_device {
        need(
            devices.len() == 1 && devices[0].device_id == r,
            "identity",
            Rule::Device,
            "requested device mismatch",
        )?;
    }
    need(
        *id == NativeIdentity::new(&metadata.source_sha256, metadata.requested_device, capacity),
        "identity",
        Rule::Version,
        "unsupported native semantic contract",
    )?;
    Ok(devices)
}

fn validate_compatibility(m: &CompatibilityManifest) -> Result<Vec<DeviceRecord>, ContractError> {
    in_range(
        (0..=i64::from(i32::MAX)).contains(&m.schema_version),
        "schemaVersion",
    )?;
    need(
        m.schema_version == MANIFEST_SCHEMA_VERSION,
        "schemaVersion",
        Rule::Version,
        "unsupported base version",
    )?;
    non_empty(&m.status, "status")?;
    need(
        m.status == "building" || m.status == "complete",
        "status",
        Rule::Status,
        "unknown publication state",
    )?;
    non_empty(&m.source_file, "sourceFile")?;
    let capacity = m.events_per_slice;
    in_range(capacity >= 1, "eventsPerSlice")?;
    need(
        !m.devices.0.is_empty(),
        "devices",
        Rule::Empty,
        "at least one event-bearing device required",
    )?;
    let mut all_ready = true;
    let devices = device_records(&m.devices, |loc, device_id, dev| {
        in_range(
            (1..=i64::from(i32::MAX)).contains(&dev.slice_count),
            format!("{loc}.sliceCount"),
        )?;
        for r in &dev.ready_slices {
            in_range(
                (0..dev.slice_count).contains(r),
                format!("{loc}.readySlices"),
            )?;
        }
        let ready: BTreeSet<i64> = dev.ready_slices.iter().copied().collect();
        need(
            ready.len() == dev.ready_slices.len(),
            format!("{loc}.readySlices"),
            Rule::Duplicate,
            "duplicate ready index",
        )?;
        need(
            dev.slices.len() as i64 == dev.slice_count,
            format!("{loc}.sliceCount"),
            Rule::Count,
            "sliceCount differs from slices",
        )?;
        let mut expected_start = 0i64;
        let mut slices = Vec::new();
        for (i, s) in dev.slices.iter().enumerate() {
            let sloc = format!("{loc}.slices[{i}]");
            need(
                s.index == i as i64,
                format!("{sloc}.index"),
                Rule::Index,
                "indices must match array order",
            )?;
            in_range(s.start_event_id >= 0, format!("{sloc}.startEventId"))?;
            in_range(
                s.end_event_id >= s.start_event_id,
                format!("{sloc}.endEventId"),
            )?;
            need(
                s.start_event_id == expected_start,
                &sloc,
                Rule::Coverage,
                "ranges must cover continuously from zero",
            )?;
            need(
                s.end_event_id - s.start_event_id < capacity,
                &sloc,
                Rule::Capacity,
                "slice exceeds eventsPerSlice",
            )?;
            non_empty(&s.file, format!("{sloc}.file"))?;
            need(
                !s.file
                    .split('/')
                    .any(|p| p.is_empty() || p == "." || p == "..")
                    && !s.file.contains(['\\', ':', '\0']),
                format!("{sloc}.file"),
                Rule::Path,
                "unsafe relative path",
            )?;
            need(
                s.file == format!("device_{device_id}/slice_{i:05}.db"),
                format!("{sloc}.file"),
                Rule::Path,
                "file must match device and slice index",
            )?;
            need(
                s.ready == ready.contains(&(i as i64)),
                format!("{sloc}.ready"),
                Rule::Readiness,
                "ready disagrees with readySlices",
            )?;
            all_ready &= s.ready;
            slices.push(SliceRecord {
                index: i,
                start_event_id: s.start_event_id,
                end_event_id: s.end_event_id,
                file: s.file.clone(),
                sha256: None,
                event_count: s.end_event_id - s.start_event_id + 1,
            });
            expected_start = s.end_event_id + 1;
        }
        need(
            expected_start == dev.event_count,
            format!("{loc}.eventCount"),
            Rule::Coverage,
            "ranges do not cover eventCount",
        )?;
        Ok(slices)
    })?;
    // Readers only take complete publications (the reference's `require_complete`).
    need(
        m.status == "complete",
        "status",
        Rule::Building,
        "complete dataset required",
    )?;
    if !all_ready {
        let d = devices
            .iter()
            .zip(&m.devices.0)
            .find(|(_, (_, dev))| dev.slices.iter().any(|s| !s.ready))
            .map(|(d, _)| d.device_id)
            .unwrap_or_default();
        return Err(ContractError::new(
            format!("devices.{d}.readySlices"),
            Rule::NotReady,
            "complete requires every slice ready after finalization",
        ));
    }
    Ok(devices)
}

/// Walks a JSON document refusing duplicate object keys at any depth; the error message
/// starts with `duplicate:<location>`.
struct DuplicateCheck(String);

impl<'de> DeserializeSeed<'de> for DuplicateCheck {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DuplicateCheck {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq
            .next_element_seed(DuplicateCheck(self.0.clone()))?
            .is_some()
        {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let loc = format!("{}.{key}", self.0);
            if !seen.insert(key) {
                return Err(de::Error::custom(format!("duplicate:{loc}")));
            }
            map.next_value_seed(DuplicateCheck(loc))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NATIVE: &str = include_str!("../tests/data/native_manifest.json");
    const MSINSIGHT: &str = include_str!("../tests/data/msinsight_manifest.json");

    #[test]
    fn the_references_manifests_parse_and_round_trip() {
        let n = parse(NATIVE.as_bytes()).unwrap();
        assert_eq!(n.format(), NATIVE_FORMAT);
        assert_eq!(n.device_ids(), vec![0, 1]);
        assert_eq!(n.devices[0].event_count, 8132);
        assert_eq!(n.devices[1].slices.len(), 4);
        let Manifest::Native(m) = &n.manifest else {
            unreachable!()
        };
        // Same keys, same order, same values as the reference's file.
        let ours: Value = serde_json::to_value(m).unwrap();
        let theirs: Value = serde_json::from_str(NATIVE).unwrap();
        assert_eq!(
            serde_json::to_string(&ours).unwrap(),
            serde_json::to_string(&theirs).unwrap()
        );

        let c = parse(MSINSIGHT.as_bytes()).unwrap();
        assert_eq!(c.format(), COMPATIBILITY_FORMAT);
        let Manifest::Compatibility(m) = &c.manifest else {
            unreachable!()
        };
        let ext = m.extension().unwrap().unwrap();
        assert_eq!(ext.identity, {
            let mut i = CompatibilityIdentity::new(&ext.metadata.source_sha256, None, 3000);
            i.requested_device = None;
            i
        });
        assert_eq!(ext.members.0.len(), 7);
        let ours = serde_json::to_string(&serde_json::to_value(m).unwrap()).unwrap();
        let theirs =
            serde_json::to_string(&serde_json::from_str::<Value>(MSINSIGHT).unwrap()).unwrap();
        assert_eq!(ours, theirs);
    }

    fn edited(src: &str, f: impl FnOnce(&mut Value)) -> Vec<u8> {
        let mut v: Value = serde_json::from_str(src).unwrap();
        f(&mut v);
        serde_json::to_vec(&v).unwrap()
    }

    #[test]
    fn contract_breaches_are_refused_with_the_references_codes() {
        let code = |bytes: Vec<u8>| parse(&bytes).unwrap_err().rule.as_str();
        assert_eq!(
            code(edited(NATIVE, |v| v["devices"]["0"]["eventCount"] = 8133.into())),
            "coverage"
        );
        assert_eq!(
            code(edited(NATIVE, |v| v["devices"]["0"]["slices"][0]["file"] =
                "device_0/../x.db".into())),
            "path"
        );
        assert_eq!(
            code(edited(NATIVE, |v| v["identity"]["importFormatVersion"] = 3.into())),
            "identity"
        );
        assert_eq!(
            code(edited(NATIVE, |v| v["status"] = "building".into())),
            "building"
        );
        assert_eq!(
            code(edited(NATIVE, |v| v["schemaVersion"] = true.into())),
            "type"
        );
        assert_eq!(
            code(edited(MSINSIGHT, |v| v["devices"]["0"]["slices"][1]
                ["ready"] = false.into())),
            "readiness"
        );
        assert_eq!(
            code(edited(MSINSIGHT, |v| {
                let d = v["devices"]["0"].clone();
                v["devices"].as_object_mut().unwrap().insert("00".into(), d);
            })),
            "device"
        );
        let dup = MSINSIGHT.replacen("\"status\"", "\"status\": \"complete\",\n  \"status\"", 1);
        let err = parse(dup.as_bytes()).unwrap_err();
        assert_eq!(
            (err.rule.as_str(), err.location.as_str()),
            ("duplicate", "manifest.status")
        );
        assert_eq!(parse(b"{").unwrap_err().rule.as_str(), "read");
    }

    #[test]
    fn an_external_manifest_without_attestation_is_a_dataset_without_metadata() {
        let bytes = edited(MSINSIGHT, |v| {
            v.as_object_mut().unwrap().remove("ptSnap");
        });
        let m = parse(&bytes).unwrap();
        let Manifest::Compatibility(c) = m.manifest else {
            unreachable!()
        };
        assert!(c.extension().is_none());
    }
}
