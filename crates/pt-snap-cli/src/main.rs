//! `pt-snap`: the command-line face of the pipeline, with pt-snap-cli 0.4.1's commands,
//! flags, JSON envelopes, error codes and exit statuses.

mod budget;
mod cli;
mod commands;
mod error;
mod focus;
mod job;
mod output;
mod progress;
mod source;

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use cli::{Cli, Command};
use error::{CliError, CliResult};

fn main() -> ExitCode {
    end_quietly_on_closed_pipe();
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => return usage_error(e, output::json_requested(&args, &Cli::command())),
    };
    let json = cli.command.json();
    match run(&cli.command) {
        Ok(status) => status,
        Err(e) => {
            e.report(json);
            // `check` is a gate: 1 says the run regressed, so every failure to judge is 2.
            match cli.command {
                Command::Check(_) => ExitCode::from(2),
                _ => ExitCode::from(e.exit()),
            }
        }
    }
}

/// `pt-snap query … | head` must end like any Unix filter when its reader goes away. Rust
/// ignores SIGPIPE, so every `println!` after that would panic with a backtrace-ish message;
/// the default action ends the process silently instead.
fn end_quietly_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any thread exists; SIG_DFL is a valid action.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn run(command: &Command) -> CliResult<ExitCode> {
    let done = |result: CliResult| result.map(|()| ExitCode::SUCCESS);
    match command {
        Command::Import(a) => done(commands::import::run(a)),
        Command::Overview(a) => done(commands::overview::run(a.db_path.as_deref(), a.json)),
        Command::Metadata(a) => done(commands::metadata::run(a.db_path.as_deref(), a.json)),
        Command::Focus(a) => done(commands::focus::run(a)),
        Command::Config(a) => done(commands::config::run(a)),
        Command::Skill(a) => done(commands::skill::run(a)),
        Command::Query(a) => done(commands::query::run(a)),
        Command::Capabilities(a) => done(commands::capabilities::run(a.json)),
        Command::Report(r) => done(commands::report::run(r)),
        Command::Split(a) => done(commands::split::run(a)),
        Command::Diff(a) => done(commands::diff::run(a)),
        Command::Ranks(a) => done(commands::ranks::run(a)),
        Command::Export(a) => done(commands::export::run(a)),
        Command::Check(a) => commands::check::run(a).map(|verdict| match verdict {
            pt_snap_report::check::Verdict::Pass => ExitCode::SUCCESS,
            pt_snap_report::check::Verdict::Regressed => ExitCode::from(1),
        }),
        #[cfg(feature = "sql")]
        Command::Sql(a) => done(commands::sql::run(a)),
        #[cfg(not(feature = "sql"))]
        Command::Sql(_) => Err(commands::without_sql()),
        Command::View(a) => done(commands::view::run(a)),
    }
}

/// Help and version go to stdout with status 0; real usage errors exit 2, as an envelope
/// when `--json` was asked for.
fn usage_error(e: clap::Error, json: bool) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    if json {
        let message = e
            .render()
            .to_string()
            .lines()
            .next()
            .unwrap_or("invalid usage")
            .trim_start_matches("error: ")
            .to_owned();
        CliError::usage(message).report(true);
        ExitCode::from(2)
    } else {
        let _ = e.print();
        ExitCode::from(2)
    }
}
