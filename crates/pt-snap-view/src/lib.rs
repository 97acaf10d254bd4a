//! The server behind `pt-snap view`: the browser app built into the binary ([`app`]), the one
//! file or directory it was given ([`served`]), and the HTTP that hands both to a browser
//! ([`server`]): the app to anyone who can connect, the file only to a request that carries
//! the URL's token; and [`browser`] opens it.
//!
//! The page reads the file by HTTP ranges: its first bytes, then the rest in one streamed
//! answer (or, for an exported table's parts, range by range), so the server never holds
//! more of it than the slice it is sending, whatever its size.
#![forbid(unsafe_code)]

pub mod app;
pub mod browser;
mod http;
pub mod served;
pub mod server;

pub use app::App;
pub use served::Served;
pub use server::{Event, Server};
