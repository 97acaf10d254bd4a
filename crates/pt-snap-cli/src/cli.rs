//! The command line, with the reference's command and flag names.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "pt-snap",
    version,
    about = "PyTorch memory-snapshot forensics: import snapshots into a SnapshotDB and query it.",
    after_help = "For agents: start with 'pt-snap overview --json' on an imported database, \
                  or 'pt-snap import <snapshot.pickle> --json' to make one.",
    disable_help_subcommand = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Import a PyTorch memory snapshot into a SQLite database.
    Import(ImportArgs),
    /// Show the devices and event ranges of a database.
    Overview(DbArgs),
    /// Show the import metadata of a database.
    Metadata(DbArgs),
    /// Set the current analysis focus (database and optional device).
    Focus(FocusArgs),
    /// Show or manage pt-snap configuration.
    Config(ConfigArgs),
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Path to the .pkl/.pickle snapshot.
    pub snapshot_file: PathBuf,
    /// Directory for the database (default: the snapshot's directory).
    #[arg(short = 'o', long)]
    pub output_dir: Option<PathBuf>,
    /// Import only this device.
    #[arg(short = 'd', long, allow_negative_numbers = true)]
    pub device: Option<i64>,
    /// Skip the focus update.
    #[arg(long)]
    pub no_focus: bool,
    /// Rebuild the database even if it could be reused.
    #[arg(long)]
    pub force: bool,
    /// Real events per device shard (sharded dataset formats).
    #[arg(long, allow_negative_numbers = true)]
    pub events_per_slice: Option<i64>,
    /// single-db (default).
    #[arg(long)]
    pub format: Option<String>,
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DbArgs {
    /// Path to the SQLite database (default: the focused one).
    pub db_path: Option<PathBuf>,
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct FocusArgs {
    /// Path to the SQLite database.
    pub db_path: Option<PathBuf>,
    /// Device ID to focus on.
    #[arg(short = 'd', long, allow_negative_numbers = true)]
    pub device: Option<i64>,
    /// Print a shell export for this session only.
    #[arg(long)]
    pub session: bool,
    /// Store the focus in the global config.
    #[arg(long)]
    pub global: bool,
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Clear all configuration.
    #[arg(long)]
    pub clear: bool,
    /// Show the config file path.
    #[arg(long)]
    pub path: bool,
    /// Emit machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

impl Command {
    pub fn json(&self) -> bool {
        match self {
            Command::Import(a) => a.json,
            Command::Overview(a) | Command::Metadata(a) => a.json,
            Command::Focus(a) => a.json,
            Command::Config(a) => a.json,
        }
    }
}
