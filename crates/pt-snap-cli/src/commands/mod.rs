pub mod config;
pub mod focus;
pub mod import;
pub mod metadata;
pub mod overview;
