//! Embeds the browser app: the `dist/` that `scripts/web-build` wrote, named by
//! `PT_SNAP_WEB_DIST` (an absolute path) when the binary is built. Without it the build has
//! no app and `pt-snap view` says how to get one, so `cargo build` needs neither trunk nor a
//! wasm toolchain. The app is named rather than found beside the sources: a `dist/` left from
//! an older checkout would otherwise slip into a binary unasked, and a missing one would make
//! cargo run this script again on every build.

use std::fs;
use std::hash::{DefaultHasher, Hasher};
use std::path::{Path, PathBuf};

/// Paths the server answers itself; the app must not have files there.
const RESERVED: &[&str] = &["files"];

fn main() {
    println!("cargo:rerun-if-env-changed=PT_SNAP_WEB_DIST");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo")).join("app.rs");
    let Some(dist) = std::env::var_os("PT_SNAP_WEB_DIST").filter(|d| !d.is_empty()) else {
        fs::write(out, "static BUILT: Option<&[Asset]> = None;\n").expect("write app.rs");
        return;
    };
    let dist = PathBuf::from(dist);
    if !dist.is_absolute() {
        panic!(
            "PT_SNAP_WEB_DIST must be an absolute path (cargo runs this script in the crate's \
             directory), not {}",
            dist.display()
        );
    }
    if !dist.join("index.html").is_file() {
        panic!(
            "PT_SNAP_WEB_DIST={} has no index.html: build the app with scripts/web-build first",
            dist.display()
        );
    }
    // A directory here makes cargo rerun on any change below it, new files included.
    println!("cargo:rerun-if-changed={}", dist.display());

    let mut files = Vec::new();
    collect(&dist, &dist, &mut files);
    files.sort();
    let mut text = String::from("static BUILT: Option<&[Asset]> = Some(&[\n");
    for (relative, absolute) in &files {
        if RESERVED.contains(&relative.split('/').next().unwrap_or("")) {
            panic!("the app has a file at {relative}, a path pt-snap view answers itself");
        }
        let bytes =
            fs::read(absolute).unwrap_or_else(|e| panic!("read {}: {e}", absolute.display()));
        // DefaultHasher::new() has fixed keys: the same bytes give the same tag in every build.
        let mut hasher = DefaultHasher::new();
        hasher.write(&bytes);
        text.push_str(&format!(
            "    Asset {{ path: {relative:?}, content_type: {:?}, etag: \"\\\"{:016x}-{:x}\\\"\", bytes: include_bytes!({:?}) }},\n",
            content_type(relative),
            hasher.finish(),
            bytes.len(),
            absolute.display().to_string(),
        ));
    }
    text.push_str("]);\n");
    fs::write(out, text).expect("write app.rs");
}

/// What the browser is told each file is: `application/wasm` is what streaming compilation
/// needs, and `nosniff` (sent with every answer) makes the rest matter too.
fn content_type(path: &str) -> &'static str {
    let extension = path.rsplit_once('.').map_or("", |(_, e)| e);
    match extension {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "wasm" => "application/wasm",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// Regular files below `dir` as `("<path>", absolute path)`, `/`-separated.
fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            collect(root, &path, out);
        } else if path.is_file() {
            let relative: Vec<String> = path
                .strip_prefix(root)
                .expect("below root")
                .components()
                .map(|c| {
                    c.as_os_str()
                        .to_str()
                        .expect("the app's file names are UTF-8")
                        .to_owned()
                })
                .collect();
            let absolute = path.canonicalize().expect("canonical path");
            out.push((relative.join("/"), absolute));
        }
    }
}
