//! What the OPFS tests (in a worker and on the page) share.

use js_sys::futures::JsFuture;
use wasm_bindgen::JsCast;

/// The file `name` in `dir`, created if it is missing.
pub async fn file_in(
    dir: &web_sys::FileSystemDirectoryHandle,
    name: &str,
) -> web_sys::FileSystemFileHandle {
    let options = web_sys::FileSystemGetFileOptions::new();
    options.set_create(true);
    JsFuture::from(dir.get_file_handle_with_options(name, &options))
        .await
        .unwrap()
        .unchecked_into()
}
