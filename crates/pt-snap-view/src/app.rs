//! The browser app as built into this binary (`build.rs`: the `dist/` named by
//! `PT_SNAP_WEB_DIST` at build time), or none.

/// One file of the app.
#[derive(Debug, Clone, Copy)]
pub struct Asset {
    /// Its path below the app's root, `/`-separated (`index.html`, `snippets/…/inline0.js`).
    pub path: &'static str,
    pub content_type: &'static str,
    /// A strong entity tag of its bytes, so a browser revalidates instead of downloading
    /// again (and keeps the wasm it compiled from them).
    pub etag: &'static str,
    pub bytes: &'static [u8],
}

include!(concat!(env!("OUT_DIR"), "/app.rs"));

/// The files of an app, found by their exact path.
#[derive(Debug, Clone, Copy)]
pub struct App {
    assets: &'static [Asset],
}

impl App {
    /// The app built into this binary; `None` when it was built without one.
    pub fn built() -> Option<App> {
        BUILT.map(App::new)
    }

    /// An app of these files (any order; the first of two with the same path wins).
    pub fn new(assets: &'static [Asset]) -> App {
        App { assets }
    }

    /// The file at exactly `path` (no leading `/`; no decoding, no normalisation: a path
    /// with `..`, `%2F` or a doubled `/` names no file of the app).
    pub fn get(&self, path: &str) -> Option<&'static Asset> {
        self.assets.iter().find(|a| a.path == path)
    }

    /// Its total size in bytes.
    pub fn bytes(&self) -> usize {
        self.assets.iter().map(|a| a.bytes.len()).sum()
    }
}
