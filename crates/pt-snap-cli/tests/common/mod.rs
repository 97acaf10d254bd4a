//! What the CLI's integration tests share: the built binary run in a scratch directory.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// `pt-snap ARGS` run in `dir`, with `dir` as HOME (so no focus or config of the user's is
/// read) and without `PT_SNAP_DB_PATH`.
pub fn pt_snap(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pt-snap"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("PT_SNAP_DB_PATH")
        .output()
        .unwrap()
}

/// The arguments of `import SOURCE -o OUT --no-focus --json`: an import into a directory of the
/// test's own, leaving the focus alone.
pub fn import_into<'a>(source: &'a Path, out: &'a Path) -> Vec<&'a str> {
    vec![
        "import",
        source.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--no-focus",
        "--json",
    ]
}

/// [`pt_snap`], which must succeed; its stdout, which is JSON.
pub fn ok_json(dir: &Path, args: &[&str]) -> Value {
    pt_snap_testkit::stdout_json(&pt_snap(dir, args), format_args!("{args:?}"))
}

/// `<repo>/<relative>` (a committed snapshot) as canonical JSON, for a test to alter and
/// write back with [`write_pickle`].
pub fn fixture_json(relative: &str) -> Value {
    let path = pt_snap_testkit::repo_root().join(relative);
    let json = pt_snap_split::canonical_json(&std::fs::read(path).unwrap()).unwrap();
    serde_json::from_slice(&json).unwrap()
}

/// `snapshot` pickled as `json.load` + `pickle.dumps` would, as `dir/name`.
pub fn write_pickle(dir: &Path, name: &str, snapshot: &Value) {
    let bytes = pt_snap_split::json_to_pickle(snapshot).unwrap();
    std::fs::write(dir.join(name), bytes).unwrap();
}
