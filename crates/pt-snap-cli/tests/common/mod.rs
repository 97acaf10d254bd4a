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
