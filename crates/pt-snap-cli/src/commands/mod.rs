pub mod capabilities;
pub mod config;
pub mod focus;
pub mod import;
pub mod metadata;
pub mod overview;
pub mod query;
pub mod skill;
