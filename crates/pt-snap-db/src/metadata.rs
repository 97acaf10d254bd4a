//! `pt_snap_metadata`: what was imported, from which bytes, by whom, and when.

use rusqlite::{Connection, OptionalExtension};

pub const METADATA_SCHEMA_VERSION: i64 = 1;

/// The one row of `pt_snap_metadata`, in the column (and JSON key) order of the reference.
///
/// The same nine fields, keys and order are what a dataset manifest records of its import
/// (`metadata` of a native manifest, `ptSnap.metadata` of an msinsight export), so the
/// manifests serialise and read this type too.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Metadata {
    pub metadata_schema_version: i64,
    pub import_format_version: i64,
    pub source_sha256: String,
    pub source_size: i64,
    pub source_name: String,
    pub requested_device: Option<i64>,
    pub importer_name: String,
    pub importer_version: String,
    pub completed_at: String,
}

/// Why a database's metadata cannot be used; the names are the reference's cache-miss reasons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadataProblem {
    /// No `pt_snap_metadata` table (a DB from an older importer; still queryable).
    Missing,
    /// Missing columns, not exactly one row with id 1, or a value out of range.
    Invalid(String),
    /// A `metadata_schema_version` other than 1.
    VersionUnsupported(i64),
}

impl MetadataProblem {
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Missing => "metadata_missing",
            Self::Invalid(_) => "metadata_invalid",
            Self::VersionUnsupported(_) => "metadata_version_unsupported",
        }
    }
}

const COLUMNS: [&str; 10] = [
    "id",
    "metadata_schema_version",
    "import_format_version",
    "source_sha256",
    "source_size",
    "source_name",
    "requested_device",
    "importer_name",
    "importer_version",
    "completed_at",
];

impl Metadata {
    pub fn insert(&self, conn: &Connection) -> rusqlite::Result<()> {
        conn.execute(
            "INSERT INTO pt_snap_metadata (id, metadata_schema_version, import_format_version, \
             source_sha256, source_size, source_name, requested_device, importer_name, \
             importer_version, completed_at) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rusqlite::params![
                self.metadata_schema_version,
                self.import_format_version,
                self.source_sha256,
                self.source_size,
                self.source_name,
                self.requested_device,
                self.importer_name,
                self.importer_version,
                self.completed_at,
            ],
        )?;
        Ok(())
    }

    /// Reads and validates the metadata row with the reference's rules.
    pub fn read(conn: &Connection) -> rusqlite::Result<Result<Metadata, MetadataProblem>> {
        let exists: bool = conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'pt_snap_metadata'",
            [],
            |r| r.get::<_, i64>(0).map(|n| n > 0),
        )?;
        if !exists {
            return Ok(Err(MetadataProblem::Missing));
        }
        let mut stmt = conn.prepare("SELECT name FROM pragma_table_info('pt_snap_metadata')")?;
        let have: Vec<String> = stmt
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        if let Some(missing) = COLUMNS.iter().find(|c| !have.iter().any(|h| h == *c)) {
            return Ok(Err(MetadataProblem::Invalid(format!(
                "column {missing} is missing"
            ))));
        }
        let rows: i64 =
            conn.query_row("SELECT count(*) FROM pt_snap_metadata", [], |r| r.get(0))?;
        if rows != 1 {
            return Ok(Err(MetadataProblem::Invalid(format!(
                "{rows} rows, expected 1"
            ))));
        }
        let row = conn
            .query_row(
                "SELECT metadata_schema_version, import_format_version, source_sha256, \
                 source_size, source_name, requested_device, importer_name, importer_version, \
                 completed_at FROM pt_snap_metadata WHERE id = 1",
                [],
                |r| {
                    Ok(Metadata {
                        metadata_schema_version: r.get(0)?,
                        import_format_version: r.get(1)?,
                        source_sha256: r.get(2)?,
                        source_size: r.get(3)?,
                        source_name: r.get(4)?,
                        requested_device: r.get(5)?,
                        importer_name: r.get(6)?,
                        importer_version: r.get(7)?,
                        completed_at: r.get(8)?,
                    })
                },
            )
            .optional();
        let meta = match row {
            Ok(Some(m)) => m,
            Ok(None) => return Ok(Err(MetadataProblem::Invalid("no row with id 1".into()))),
            Err(e) => return Ok(Err(MetadataProblem::Invalid(e.to_string()))),
        };
        Ok(meta.validate())
    }

    /// The reference's value checks (`validate_import_metadata`), also applied to the metadata
    /// a dataset manifest carries.
    pub fn validate(self) -> Result<Metadata, MetadataProblem> {
        let bad = |what: &str| Err(MetadataProblem::Invalid(what.to_owned()));
        if self.metadata_schema_version != METADATA_SCHEMA_VERSION {
            return Err(MetadataProblem::VersionUnsupported(
                self.metadata_schema_version,
            ));
        }
        if self.import_format_version < 1 {
            return bad("import_format_version < 1");
        }
        let hex = |c: char| c.is_ascii_digit() || ('a'..='f').contains(&c);
        if self.source_sha256.len() != 64 || !self.source_sha256.chars().all(hex) {
            return bad("source_sha256 is not 64 lowercase hex digits");
        }
        if self.source_size < 0 {
            return bad("source_size < 0");
        }
        if self.source_name.is_empty()
            || self.importer_name.is_empty()
            || self.importer_version.is_empty()
        {
            return bad("empty source_name, importer_name or importer_version");
        }
        if self.requested_device.is_some_and(|d| d < 0) {
            return bad("requested_device < 0");
        }
        if !is_utc_timestamp(&self.completed_at) {
            return bad("completed_at is not an ISO-8601 UTC timestamp");
        }
        Ok(self)
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.ffffff](+00:00|Z)`: what Python's `datetime.fromisoformat` accepts
/// with a zero UTC offset, in the shapes importers write.
fn is_utc_timestamp(s: &str) -> bool {
    let body = s
        .strip_suffix("+00:00")
        .or_else(|| s.strip_suffix('Z'))
        .unwrap_or("");
    let (main, frac) = body.split_once('.').unwrap_or((body, ""));
    let b = main.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    main.len() == 19
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && (b[10] == b'T' || b[10] == b' ')
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && frac.len() <= 6
        && frac.bytes().all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_like_pythons_isoformat_are_accepted() {
        assert!(is_utc_timestamp("2026-12-02T13:21:45.664383+00:00"));
        assert!(is_utc_timestamp("2026-12-02T13:21:45+00:00"));
        assert!(!is_utc_timestamp("2026-12-02T13:21:45.664383+01:00"));
        assert!(!is_utc_timestamp("yesterday"));
    }
}
