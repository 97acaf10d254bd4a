//! The worker child: reads `u32 length + bytes` frames from stdin, runs the target on each
//! under `catch_unwind`, and answers one line per input on stdout:
//! `ok <peak RSS KiB> <outcome>` or `panic <peak RSS KiB> <location>\n<message>\n<backtrace>`,
//! with newlines escaped. The supervisor enforces the time limit; the address-space cap is
//! the `ulimit -v` it started us under.

use std::io::{self, BufWriter, Read, Write};
use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;
use std::sync::Mutex;

use pt_snap_fuzz::Target;

static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// `VmHWM` of this process (peak resident set since start), in KiB.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

pub fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
}

pub fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

fn truncated(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

pub fn main(target: &'static Target) -> ExitCode {
    panic::set_hook(Box::new(|info| {
        let location = info.location().map_or_else(
            || "unknown location".to_owned(),
            |l| format!("{}:{}", l.file(), l.line()),
        );
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let backtrace = std::backtrace::Backtrace::force_capture();
        if let Ok(mut slot) = LAST_PANIC.lock() {
            *slot = Some(format!("{location}\n{message}\n{backtrace}"));
        }
    }));
    let mut stdin = io::stdin().lock();
    let mut stdout = BufWriter::new(io::stdout().lock());
    let mut input = Vec::new();
    loop {
        let mut len = [0u8; 4];
        if stdin.read_exact(&mut len).is_err() {
            return ExitCode::SUCCESS;
        }
        input.resize(u32::from_le_bytes(len) as usize, 0);
        if stdin.read_exact(&mut input).is_err() {
            return ExitCode::from(3);
        }
        let result = panic::catch_unwind(AssertUnwindSafe(|| (target.run)(&input)));
        let rss = peak_rss_kib();
        let line = match result {
            Ok(outcome) => format!("ok {rss} {}", escape(truncated(&outcome, 2000))),
            Err(_) => {
                let report = LAST_PANIC
                    .lock()
                    .ok()
                    .and_then(|mut s| s.take())
                    .unwrap_or_else(|| "unknown location\n\n".to_owned());
                format!("panic {rss} {}", escape(truncated(&report, 64_000)))
            }
        };
        if writeln!(stdout, "{line}")
            .and_then(|()| stdout.flush())
            .is_err()
        {
            return ExitCode::from(3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_round_trips() {
        for s in ["", "a\nb", "x\\ny", "\\", "é\r\n\\n"] {
            assert_eq!(unescape(&escape(s)), s);
            assert!(!escape(s).contains('\n'));
        }
    }

    #[test]
    fn truncation_keeps_char_boundaries() {
        assert_eq!(truncated("héllo", 2), "h");
        assert_eq!(truncated("abc", 10), "abc");
    }
}
