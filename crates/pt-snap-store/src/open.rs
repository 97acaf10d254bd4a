//! The database an input stands for: a SnapshotDB as it is, or a snapshot's, imported or
//! reused beside it exactly as `pt-snap import PATH --no-focus` would (a command that only
//! reads never moves the focus). What `diff`, `export`, `report` and the other read
//! commands open; `ranks` and `check` replay a snapshot without one instead.

use std::path::{Path, PathBuf};

use pt_snap_contract::{ErrorCode, Failure};
pub use pt_snap_report::ranks::InputKind;

use crate::import::{self, Imported};
use crate::{inputs, snapshot, Observer, ReplayMode};

/// An input and its database.
#[derive(Debug, Clone)]
pub struct Database {
    /// The input, absolute (a link stays the link).
    pub input: PathBuf,
    /// The database: the input itself, or the snapshot's beside it.
    pub path: PathBuf,
    /// How a snapshot's database came to be; `None` when the input was a database.
    pub import: Option<Imported>,
}

/// The database of `path`: told by [`inputs::kind_of`] (a file that is neither is taken as
/// what the command `expects`); a snapshot is imported through the reuse cache with
/// `replay`, its progress and warnings to `observer`.
pub fn database(
    path: &Path,
    expects: InputKind,
    replay: ReplayMode,
    observer: &mut dyn Observer,
) -> Result<Database, Failure> {
    let input = snapshot::absolute(path).map_err(pt_snap_import::failure::backend)?;
    match inputs::kind_of(&input, expects) {
        InputKind::Database => {
            if !input.is_file() {
                return Err(Failure::new(
                    ErrorCode::DatabaseNotFound,
                    format!("Database not found: {}", path.display()),
                ));
            }
            Ok(Database {
                path: input.clone(),
                input,
                import: None,
            })
        }
        InputKind::Snapshot => {
            let source = snapshot::check(path)?;
            let target = snapshot::database_beside(&source)?;
            let imported = import::import(
                &import::Job {
                    source: &source,
                    target: &target,
                    name: &snapshot::name(&source)?,
                    device: None,
                    replay,
                    force: false,
                },
                observer,
            )?;
            Ok(Database {
                input,
                path: target,
                import: Some(imported),
            })
        }
    }
}
