//! `pt-snap view [SNAPSHOT|DB|DIR]`: the browser app built into this binary, served on this
//! machine with the one file or directory given (`pt-snap-view`), its URL printed and opened
//! in a browser where there is a display. The input is checked as every command checks it
//! before anything listens; the terminal then says what the page reads, until Ctrl+C.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::path::{Path, PathBuf};

use pt_snap_contract::{ErrorCode, Failure};
use pt_snap_store::inputs::{self, InputKind};
use pt_snap_view::browser::Opened;
use pt_snap_view::served::Kind;
use pt_snap_view::{App, Served, Server};

use crate::cli::ViewArgs;
use crate::error::{CliError, CliResult};
use crate::progress::{megabytes, PageReads};

pub fn run(args: &ViewArgs) -> CliResult {
    let served = served(args.path.as_deref())?;
    let listener = listen(&args.host, args.port)?;
    // After the checks of what was asked, so that they answer the same in every build.
    let app = App::built().ok_or_else(no_app)?;
    let addr = listener
        .local_addr()
        .map_err(|e| CliError::internal(format!("Cannot read the server's address: {e}")))?;
    if !addr.ip().is_loopback() {
        eprintln!(
            "warning: listening on {addr}, not on this machine's loopback: whoever can reach \
             it can load the app, and with the URL's token the file; the connection is plain \
             HTTP. The default (127.0.0.1) and an SSH port forward keep it to you: \
             ssh -L {port}:127.0.0.1:{port} <this host> pt-snap view FILE --no-open",
            port = addr.port()
        );
    }
    let server = Server::new(listener, app, served.clone())
        .map_err(|e| CliError::internal(format!("Cannot make the URL's token: {e}")))?;
    let url = server
        .url()
        .map_err(|e| CliError::internal(format!("Cannot read the server's address: {e}")))?;

    println!("{}", what(&served));
    println!("  {url}");
    if addr.ip().is_unspecified() {
        println!(
            "  (from another machine: this machine's name or address instead of {})",
            addr.ip()
        );
    }
    let _ = std::io::stdout().flush();
    for left in &served.left_out {
        eprintln!("warning: not served: {left}");
    }
    if args.no_open {
        eprintln!("Open the URL in a browser. Ctrl+C stops the server.");
    } else {
        let said = |why: String| eprintln!("{why}: open the URL yourself.");
        match pt_snap_view::browser::open(&url, said) {
            Opened::Started(how) => eprintln!("Opening it with {how}. Ctrl+C stops the server."),
            Opened::NoDisplay => eprintln!(
                "No display here: open the URL in a browser (from another machine through an \
                 SSH port forward: ssh -L {port}:127.0.0.1:{port} <this host>). Ctrl+C stops \
                 the server.",
                port = addr.port()
            ),
            Opened::Failed(why) => eprintln!(
                "Could not start a browser ({why}): open the URL yourself. Ctrl+C stops the \
                 server."
            ),
        }
    }
    stop_cleanly_on_interrupt();
    let report = PageReads::new(&served);
    server.serve(move |event| report.event(event))
}

/// What the page will show, in one line above the URL.
fn what(served: &Served) -> String {
    match served.kind {
        Kind::File => format!(
            "pt-snap view: {} ({}) at",
            served.name,
            megabytes(served.total_bytes())
        ),
        Kind::Directory => format!(
            "pt-snap view: {}/ ({} files, {}) at",
            served.name,
            served.entries.len(),
            megabytes(served.total_bytes())
        ),
        Kind::Nothing => "pt-snap view: the app (drop a snapshot on it) at".to_owned(),
    }
}

fn no_app() -> CliError {
    CliError::new(
        ErrorCode::Other,
        "This pt-snap was built without its browser app, so it cannot serve one.",
    )
    .with_hint(Some(
        "Install the wheel, which has it: pip install pt_snap-*.whl (scripts/wheel builds \
         one). From a checkout: scripts/web-build, then build pt-snap with \
         PT_SNAP_WEB_DIST=$PWD/dist (an absolute path) set.",
    ))
}

/// What was given, checked as the other commands check it: a directory must be listable;
/// a database (by its header, else by its `.db` name) must be a file; a Parquet part (by
/// name) is taken as it is; anything else is a snapshot, refused with `import`'s errors. No
/// path: the focused database, else the app alone.
fn served(path: Option<&Path>) -> CliResult<Served> {
    let path: PathBuf = match path {
        Some(path) => path.to_path_buf(),
        None => match crate::focus::resolve(None)? {
            Some(resolved) => resolved.db_path,
            None => return Ok(Served::nothing()),
        },
    };
    if path.is_dir() {
        return Served::directory(&path).map_err(|e| {
            CliError::from(pt_snap_import::failure::snapshot_invalid(format!(
                "Cannot list {}: {e}",
                path.display()
            )))
        });
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let parquet = name.to_ascii_lowercase().ends_with(".parquet");
    if !parquet {
        match inputs::kind_of(&path, InputKind::Snapshot) {
            InputKind::Database if !path.is_file() => {
                return Err(CliError::database_not_found(format!(
                    "Database not found: {}",
                    path.display()
                )))
            }
            InputKind::Database => {}
            InputKind::Snapshot => {
                pt_snap_store::snapshot::check(&path).map_err(CliError::from)?;
            }
        }
    }
    Served::file(&path).map_err(|e| {
        CliError::from(Failure::new(
            if parquet {
                ErrorCode::SnapshotInvalid
            } else {
                ErrorCode::Other
            },
            format!("Cannot read {}: {e}", path.display()),
        ))
    })
}

/// A socket on `host`:`port` (the first of the host's addresses that binds).
fn listen(host: &str, port: u16) -> CliResult<TcpListener> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| {
            CliError::invalid_parameter(
                format!("Cannot listen on --host {host}: {e}"),
                "Pass an address of this machine, such as 127.0.0.1 (the default).",
            )
        })?
        .collect();
    let mut last = None;
    for addr in &addrs {
        match TcpListener::bind(addr) {
            Ok(listener) => return Ok(listener),
            Err(e) => last = Some((addr, e)),
        }
    }
    let Some((addr, e)) = last else {
        return Err(CliError::invalid_parameter(
            format!("--host {host} names no address"),
            "Pass an address of this machine, such as 127.0.0.1 (the default).",
        ));
    };
    Err(match e.kind() {
        std::io::ErrorKind::AddrInUse => CliError::new(
            ErrorCode::Other,
            format!("Port {port} is already in use on {}.", addr.ip()),
        )
        .with_hint(Some(
            "Pass another port with --port, or --port 0 to take any free one (the URL printed \
             names it).",
        )),
        std::io::ErrorKind::AddrNotAvailable => CliError::invalid_parameter(
            format!("Cannot listen on {addr}: {e}"),
            "Pass an address of this machine with --host, such as 127.0.0.1 (the default).",
        ),
        _ => CliError::new(ErrorCode::Other, format!("Cannot listen on {addr}: {e}")).with_hint(
            Some("Pass another port with --port, or --port 0 to take any free one."),
        ),
    })
}

/// Ctrl+C (or SIGTERM) ends the server at once: it holds nothing to write back, so it says
/// so and exits 0.
fn stop_cleanly_on_interrupt() {
    #[cfg(unix)]
    {
        extern "C" fn stop(_: libc::c_int) {
            const SAID: &[u8] = b"\npt-snap view: stopped.\n";
            // SAFETY: write(2) and _exit(2) are async-signal-safe; SAID is a static buffer
            // of the length given.
            unsafe {
                libc::write(2, SAID.as_ptr().cast(), SAID.len());
                libc::_exit(0);
            }
        }
        let handler = stop as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: `stop` only calls async-signal-safe functions; installing a handler for
        // these two signals has no other effect on the process.
        unsafe {
            libc::signal(libc::SIGINT, handler);
            libc::signal(libc::SIGTERM, handler);
        }
    }
}
