//! The dataset on disk: `DIR/<table>/job=<J>/rank=<R>/part-0.parquet`, Hive's layout, and
//! the parts of one (job, rank) written and kept there. Every part is published through
//! `pt_snap_contract::publish` (a hidden temporary file beside it, renamed into place), so a
//! reader never sees half a part; a partition whose four parts were all made from the same
//! input bytes by this format is kept as it is.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::{Built, Table, PART_NAME};

/// Whether `job` can be a partition value that every reader takes as it is: one path
/// component of letters, digits, `.`, `_` and `-`, not starting with `.`.
pub fn is_job_name(job: &str) -> bool {
    !job.is_empty()
        && !job.starts_with('.')
        && job
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A job name made of `name` (a directory's name): its other characters as `_`, no leading
/// dot; `job` when nothing is left.
pub fn job_name_of(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let cleaned = cleaned.trim_start_matches('.');
    if cleaned.is_empty() {
        "job".to_owned()
    } else {
        cleaned.to_owned()
    }
}

/// The parts of one (job, rank) under a dataset directory.
pub struct Partition<'a> {
    pub dir: &'a Path,
    pub job: &'a str,
    pub rank: u64,
}

impl Partition<'_> {
    /// `DIR/<table>/job=<J>/rank=<R>/part-0.parquet`.
    pub fn path(&self, table: Table) -> PathBuf {
        self.dir
            .join(table.name())
            .join(format!("job={}", self.job))
            .join(format!("rank={}", self.rank))
            .join(PART_NAME)
    }

    /// Each table's rows, in [`Table::ALL`] order, when every part there was made from the
    /// input whose SHA-256 is `source_sha256` by this format: then it is kept.
    pub fn current(&self, source_sha256: &str) -> Option<[i64; 4]> {
        let mut rows = [0; 4];
        for (i, table) in Table::ALL.into_iter().enumerate() {
            let meta = fs::File::open(self.path(table))
                .ok()
                .and_then(crate::part_metadata)
                .filter(|m| m.is_current(source_sha256))?;
            rows[i] = meta.rows;
        }
        Some(rows)
    }

    /// Publishes `built` as the part of `table`, its directories made as needed; an existing
    /// part is replaced only once the new one is whole. `Err` names the path that failed.
    pub fn write(&self, table: Table, built: &Built) -> Result<(), (PathBuf, io::Error)> {
        let path = self.path(table);
        let parent = path.parent().expect("a part has a directory");
        fs::create_dir_all(parent).map_err(|e| (parent.to_path_buf(), e))?;
        pt_snap_contract::publish::write_file(&path, &built.bytes, 0o644).map_err(|e| (path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_names_are_one_plain_path_component() {
        assert!(is_job_name("train-7b.v2_a"));
        for bad in ["", ".hidden", "a/b", "a b", "..", "ü"] {
            assert!(!is_job_name(bad), "{bad}");
        }
        assert_eq!(job_name_of("my job (1)"), "my_job__1_");
        assert_eq!(job_name_of("..."), "job");
        let dir = Path::new("/d");
        let p = Partition {
            dir,
            job: "j",
            rank: 3,
        };
        assert_eq!(
            p.path(Table::Summary),
            Path::new("/d/summary/job=j/rank=3/part-0.parquet")
        );
    }
}
