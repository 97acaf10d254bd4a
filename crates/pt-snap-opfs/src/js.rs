//! The few OPFS calls the store makes, as `async` functions with string errors. They run
//! on the page and in a worker alike: nothing here assumes `window`.

use js_sys::futures::JsFuture;
use js_sys::{Array, Function, IteratorNext, Promise, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{
    FileSystemDirectoryHandle, FileSystemFileHandle, FileSystemGetDirectoryOptions,
    FileSystemGetFileOptions, FileSystemRemoveOptions, StorageManager,
};

/// `"<what>: <DOMException name>: <message>"`, the browser's words kept for the user.
pub(crate) fn describe(what: &str, err: &JsValue) -> String {
    let prop = |name: &str| {
        Reflect::get(err, &name.into())
            .ok()
            .and_then(|v| v.as_string())
    };
    match (prop("name"), prop("message")) {
        (Some(name), Some(message)) => format!("{what}: {name}: {message}"),
        (_, Some(message)) => format!("{what}: {message}"),
        _ => format!(
            "{what}: {}",
            err.as_string().unwrap_or_else(|| format!("{err:?}"))
        ),
    }
}

pub(crate) fn error_name(err: &JsValue) -> Option<String> {
    Reflect::get(err, &"name".into()).ok()?.as_string()
}

fn is_not_found(err: &JsValue) -> bool {
    // TypeMismatchError: a file where a directory was expected (or the reverse), which for
    // the store's fixed names means "not one of ours", handled like absence.
    matches!(
        error_name(err).as_deref(),
        Some("NotFoundError" | "TypeMismatchError")
    )
}

async fn wait(what: &str, promise: Promise) -> Result<JsValue, String> {
    JsFuture::from(promise)
        .await
        .map_err(|e| describe(what, &e))
}

/// `navigator.storage` of whatever global this runs in (`Window` or a worker scope), when it
/// offers `getDirectory`.
fn storage() -> Result<StorageManager, String> {
    let get = |target: &JsValue, name: &str| {
        if target.is_object() {
            Reflect::get(target, &name.into()).unwrap_or(JsValue::UNDEFINED)
        } else {
            JsValue::UNDEFINED
        }
    };
    let navigator = get(&js_sys::global(), "navigator");
    let storage = get(&navigator, "storage");
    if !get(&storage, "getDirectory").is_function() {
        return Err("the Origin Private File System is not available here \
                    (navigator.storage.getDirectory is missing: not a secure context, or an \
                    older browser)"
            .to_owned());
    }
    Ok(storage.unchecked_into())
}

pub(crate) async fn root() -> Result<FileSystemDirectoryHandle, String> {
    let root = wait("open the OPFS root", storage()?.get_directory()).await?;
    Ok(root.unchecked_into())
}

/// The subdirectory `name` of `parent`; `None` when it does not exist and `create` is false.
pub(crate) async fn dir(
    parent: &FileSystemDirectoryHandle,
    name: &str,
    create: bool,
) -> Result<Option<FileSystemDirectoryHandle>, String> {
    let options = FileSystemGetDirectoryOptions::new();
    options.set_create(create);
    match JsFuture::from(parent.get_directory_handle_with_options(name, &options)).await {
        Ok(handle) => Ok(Some(handle.unchecked_into())),
        Err(e) if !create && is_not_found(&e) => Ok(None),
        Err(e) => Err(describe(&format!("open OPFS directory {name:?}"), &e)),
    }
}

/// The file `name` in `parent`; `None` when it does not exist and `create` is false.
pub(crate) async fn file(
    parent: &FileSystemDirectoryHandle,
    name: &str,
    create: bool,
) -> Result<Option<FileSystemFileHandle>, String> {
    let options = FileSystemGetFileOptions::new();
    options.set_create(create);
    match JsFuture::from(parent.get_file_handle_with_options(name, &options)).await {
        Ok(handle) => Ok(Some(handle.unchecked_into())),
        Err(e) if !create && is_not_found(&e) => Ok(None),
        Err(e) => Err(describe(&format!("open OPFS file {name:?}"), &e)),
    }
}

pub(crate) enum Kind {
    File(FileSystemFileHandle),
    Directory(FileSystemDirectoryHandle),
}

/// The entries of `dir`, in the browser's order.
pub(crate) async fn children(
    dir: &FileSystemDirectoryHandle,
) -> Result<Vec<(String, Kind)>, String> {
    const WHAT: &str = "list an OPFS directory";
    let iter = dir.entries();
    let mut out = Vec::new();
    loop {
        let next = iter.next().map_err(|e| describe(WHAT, &e))?;
        let next: IteratorNext = wait(WHAT, next).await?.unchecked_into();
        if next.done() {
            return Ok(out);
        }
        let pair: Array = next.value().unchecked_into();
        let Some(name) = pair.get(0).as_string() else {
            continue;
        };
        let handle = pair.get(1);
        let kind = Reflect::get(&handle, &"kind".into()).map_err(|e| describe(WHAT, &e))?;
        out.push((
            name,
            match kind.as_string().as_deref() {
                Some("directory") => Kind::Directory(handle.unchecked_into()),
                _ => Kind::File(handle.unchecked_into()),
            },
        ));
    }
}

/// Removes `name` (and all below it) from `parent`; `false` when it was not there.
pub(crate) async fn remove(parent: &FileSystemDirectoryHandle, name: &str) -> Result<bool, String> {
    let options = FileSystemRemoveOptions::new();
    options.set_recursive(true);
    match JsFuture::from(parent.remove_entry_with_options(name, &options)).await {
        Ok(_) => Ok(true),
        Err(e) if is_not_found(&e) => Ok(false),
        Err(e) => Err(describe(&format!("remove OPFS entry {name:?}"), &e)),
    }
}

pub(crate) async fn get_file(handle: &FileSystemFileHandle) -> Result<web_sys::File, String> {
    Ok(wait("read an OPFS file", handle.get_file())
        .await?
        .unchecked_into())
}

pub(crate) async fn text(blob: &web_sys::Blob) -> Result<String, String> {
    wait("read an OPFS file", blob.text())
        .await?
        .as_string()
        .ok_or_else(|| "read an OPFS file: not text".to_owned())
}

pub(crate) async fn bytes(blob: &web_sys::Blob) -> Result<Vec<u8>, String> {
    let buffer = wait("read an OPFS file", blob.array_buffer()).await?;
    Ok(js_sys::Uint8Array::new(&buffer).to_vec())
}

/// Resolves after `ms` milliseconds (`setTimeout` of the current global).
pub(crate) async fn sleep(ms: u32) {
    let promise = Promise::new(&mut |resolve, _| {
        let global = js_sys::global();
        match Reflect::get(&global, &"setTimeout".into()) {
            Ok(f) if f.is_function() => {
                let _ = f
                    .unchecked_into::<Function>()
                    .call2(&global, &resolve, &JsValue::from(ms));
            }
            _ => {
                let _ = resolve.call0(&JsValue::UNDEFINED);
            }
        }
    });
    let _ = JsFuture::from(promise).await;
}

/// Replaces the contents of `name` in `dir` with `bytes` through a sync access handle
/// (worker only; every browser with OPFS has these, unlike `createWritable`).
pub(crate) async fn write_file(
    dir: &FileSystemDirectoryHandle,
    name: &str,
    bytes: &[u8],
) -> Result<(), String> {
    let what = format!("write OPFS file {name:?}");
    let handle = file(dir, name, true)
        .await?
        .ok_or_else(|| format!("{what}: not created"))?;
    let sah: web_sys::FileSystemSyncAccessHandle = wait(&what, handle.create_sync_access_handle())
        .await?
        .unchecked_into();
    let written = (|| {
        sah.truncate_with_u32(0)?;
        let n = sah.write_with_u8_array(bytes)?;
        sah.flush()?;
        Ok::<_, JsValue>(n)
    })();
    sah.close();
    match written {
        Ok(n) if n == bytes.len() as f64 => Ok(()),
        Ok(n) => Err(format!("{what}: wrote {n} of {} bytes", bytes.len())),
        Err(e) => Err(describe(&what, &e)),
    }
}
