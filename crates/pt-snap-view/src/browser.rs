//! Opening the URL `pt-snap view` prints in a browser of this machine, where it has one.

use std::process::{Command, Stdio};

/// How [`open`] went.
pub enum Opened {
    /// The program named started on the URL.
    Started(String),
    /// Nothing to show a browser on: no `$BROWSER`, no display (or a Mac over SSH).
    NoDisplay,
    /// The program could not start, and why.
    Failed(String),
}

/// Starts a browser on `url`: `$BROWSER` when set (as Python's `webbrowser` reads it: the
/// first of its `:`-separated commands, `%s` standing for the URL), else the desktop's
/// opener where there is a display. An opener that starts and then fails (it hands the URL
/// on and exits) is reaped and its failure given to `failed_later`.
pub fn open(url: &str, failed_later: impl FnOnce(String) + Send + 'static) -> Opened {
    let configured = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty());
    let (program, args): (String, Vec<String>) = if let Some(browser) = configured {
        let first = browser.split(':').next().unwrap_or_default();
        let mut words = first.split_whitespace().map(str::to_owned);
        let Some(program) = words.next() else {
            return Opened::Failed(format!("$BROWSER is {browser:?}"));
        };
        let mut args: Vec<String> = words.collect();
        if args.iter().any(|a| a.contains("%s")) {
            args = args.iter().map(|a| a.replace("%s", url)).collect();
        } else {
            args.push(url.to_owned());
        }
        (program, args)
    } else if cfg!(target_os = "macos") {
        if std::env::var_os("SSH_CONNECTION").is_some() {
            return Opened::NoDisplay;
        }
        ("open".to_owned(), vec![url.to_owned()])
    } else if cfg!(windows) {
        (
            "rundll32".to_owned(),
            vec!["url.dll,FileProtocolHandler".to_owned(), url.to_owned()],
        )
    } else {
        let display = ["DISPLAY", "WAYLAND_DISPLAY"]
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|d| !d.is_empty()));
        if !display {
            return Opened::NoDisplay;
        }
        ("xdg-open".to_owned(), vec![url.to_owned()])
    };
    match Command::new(&program)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(mut child) => {
            let name = program.clone();
            std::thread::spawn(move || {
                if let Ok(status) = child.wait() {
                    if !status.success() {
                        failed_later(format!("{name} could not open a browser ({status})"));
                    }
                }
            });
            Opened::Started(program)
        }
        Err(e) => Opened::Failed(format!("{program}: {e}")),
    }
}
