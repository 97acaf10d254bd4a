//! Embeds the repository's `skills/` folder, so the binary carries its skills wherever it is
//! copied. Only file names and bytes are embedded; which folders are skills, their front matter
//! and their digests are worked out at run time by the same code that reads
//! `PT_SNAP_SKILLS_DIR`, so the two sources cannot disagree.

use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest.join("..").join("..").join("skills");
    // A directory here makes cargo rerun on any change below it, new files included.
    println!("cargo:rerun-if-changed={}", root.display());

    let mut files = Vec::new();
    if root.is_dir() {
        collect(&root, &root, &mut files);
    }
    files.sort();
    let mut out = String::from("pub(crate) static EMBEDDED: &[(&str, &[u8])] = &[\n");
    for (relative, absolute) in &files {
        out.push_str(&format!(
            "    ({relative:?}, include_bytes!({:?})),\n",
            absolute.display().to_string()
        ));
    }
    out.push_str("];\n");
    let dest =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo")).join("embedded.rs");
    fs::write(dest, out).expect("write embedded.rs");
}

/// Regular files below `dir` (symlinked files followed, symlinked folders not entered, like the
/// run-time walk), as `("<skill>/<path>", absolute path)`.
fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        let is_real_dir = fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        if is_real_dir {
            collect(root, &path, out);
        } else if path.is_file() {
            let relative = path.strip_prefix(root).expect("below root");
            let relative: Vec<String> = relative
                .components()
                .map(|c| {
                    c.as_os_str()
                        .to_str()
                        .expect("skill file names are UTF-8")
                        .to_owned()
                })
                .collect();
            let absolute = path.canonicalize().expect("canonical path");
            out.push((relative.join("/"), absolute));
        }
    }
}
