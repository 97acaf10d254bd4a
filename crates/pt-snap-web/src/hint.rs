//! A failure's hint as the page gives it. Failures carry the CLI's hints (`pt_snap_contract`),
//! which name its flags and commands: `--force`, `--lenient`, `--timeout`, `--params`. The
//! page has controls for some of them and no use for the others, so each hint a failure on
//! the page can carry is said in the page's words here; any other is shown as it is.

use pt_snap_contract::hint;
use pt_snap_engine::ErrorCode;

/// The words the page shows for `hint`, a hint the CLI gives with `code`.
pub fn on_page(code: ErrorCode, hint: &str) -> String {
    page_words(code, hint).map_or_else(|| hint.to_owned(), str::to_owned)
}

fn page_words(code: ErrorCode, text: &str) -> Option<&'static str> {
    let default = code.hint() == Some(text);
    Some(match code {
        // Nothing makes the page import a refused file anyway.
        ErrorCode::ImportFailed if default => "Confirm the snapshot is trusted and replayable.",
        ErrorCode::ImportFailed if text == hint::REPLAY_FAILED => {
            "The trace contradicts the allocator state at the event named. Import it leniently \
             to read it anyway: such events are then applied from the trace alone, the numbers \
             are approximate, and each one is listed in the table pt_snap_x_replay_issues."
        }
        ErrorCode::QueryTimeout if default => {
            "Raise the time limit, or ask for less: fewer rows, a narrower window."
        }
        ErrorCode::QueryFailed if default => {
            "Check the statement or the template's parameters against the database's tables."
        }
        ErrorCode::InvalidParameter if text == hint::PARAMS => {
            "Check each parameter against what the template takes."
        }
        ErrorCode::DeviceNotFound if default => "Choose a device the file has.",
        ErrorCode::TemplateNotFound if default => "Choose one of the templates listed.",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CLI's hints that a failure on the page can carry: those of the import, the
    /// engine's questions and the templates.
    fn reachable() -> Vec<(ErrorCode, &'static str)> {
        let default = |code: ErrorCode| (code, code.hint().unwrap());
        vec![
            default(ErrorCode::ImportFailed),
            (ErrorCode::ImportFailed, hint::REPLAY_FAILED),
            default(ErrorCode::QueryTimeout),
            default(ErrorCode::QueryFailed),
            (ErrorCode::InvalidParameter, hint::PARAMS),
            default(ErrorCode::DeviceNotFound),
            default(ErrorCode::SnapshotInvalid),
            default(ErrorCode::DatabaseSchemaInvalid),
            default(ErrorCode::TemplateNotFound),
            default(ErrorCode::Internal),
            default(ErrorCode::NotOpen),
        ]
    }

    #[test]
    fn no_hint_on_the_page_names_a_command_line_flag() {
        for (code, hint) in reachable() {
            let shown = on_page(code, hint);
            assert!(!shown.is_empty(), "{code}");
            assert!(!shown.contains("--"), "{code}: {shown}");
        }
    }

    #[test]
    fn hints_that_need_no_change_are_shown_as_the_cli_gives_them() {
        let same = ErrorCode::SnapshotInvalid.hint().unwrap();
        assert_eq!(on_page(ErrorCode::SnapshotInvalid, same), same);
        assert_eq!(
            on_page(ErrorCode::QueryFailed, "a hint of its own"),
            "a hint of its own"
        );
        assert_eq!(
            on_page(
                ErrorCode::QueryTimeout,
                ErrorCode::QueryTimeout.hint().unwrap()
            ),
            "Raise the time limit, or ask for less: fewer rows, a narrower window."
        );
    }
}
