//! How our own commands (`diff`, `ranks`, `report oom`), the web app and the HTML pages write
//! numbers for a person, so a page and the text beside it read alike.

/// Binary units, smallest first: the steps of [`human_bytes`].
const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/// `13.26 GiB`: binary units with two decimals, whole bytes below 1 KiB — the one rule for a
/// byte count read by a person, in the CLI's text, the web app and the HTML pages (in
/// JavaScript: `formatBytes` of `www/flamegraph/flamegraph.js`, held to this function by
/// `tests/browser/rules.test.mjs` over the table the tests below write). Rounds half away
/// from zero; what would read `1024.00` of a unit reads `1.00` of the next (1,048,575 B is
/// `1.00 MiB`). Takes `f64` because a median of byte counts can fall between two of them;
/// `n/a` for a value that is not finite.
pub fn human_bytes(bytes: f64) -> String {
    if !bytes.is_finite() {
        return "n/a".to_owned();
    }
    let magnitude = bytes.abs();
    let sign = |zero: bool| if bytes < 0.0 && !zero { "-" } else { "" };
    let whole = magnitude.round();
    if whole < 1024.0 {
        return format!("{}{whole} B", sign(whole == 0.0));
    }
    let (mut value, mut unit) = (magnitude / 1024.0, 1);
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let mut hundredths = (value * 100.0).round();
    if hundredths >= 102_400.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
        hundredths = (value * 100.0).round();
    }
    let (int, frac) = ((hundredths / 100.0).floor(), hundredths % 100.0);
    format!("{}{int}.{frac:02} {}", sign(false), UNITS[unit])
}

/// A change: `+1.50 KiB`, `-2.00 MiB`, `0 B`.
pub fn signed_human_bytes(bytes: i64) -> String {
    let human = human_bytes(bytes as f64);
    if bytes > 0 {
        format!("+{human}")
    } else {
        human
    }
}

/// `1,234,567`.
pub fn grouped(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        out.insert(0, '-');
    }
    out
}

/// A duration in microseconds as seconds: `12.345 s`, `0.000042 s` below a millisecond,
/// `-1.500 s`; minutes and hours past a minute (`3 min 05.250 s`, `2 h 01 min 00.000 s`).
/// The diff page writes them alike (`duration` of `www/diff/diff.js`, held to this by
/// `tests/browser/rules.test.mjs`).
pub fn seconds(us: i64) -> String {
    let sign = if us < 0 { "-" } else { "" };
    let us = us.unsigned_abs();
    if us < 1_000 {
        return format!("{sign}{:.6} s", us as f64 / 1e6);
    }
    let (s, ms) = (us / 1_000_000, us % 1_000_000 / 1_000);
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, sec) => format!("{sign}{sec}.{ms:03} s"),
        (0, min, sec) => format!("{sign}{min} min {sec:02}.{ms:03} s"),
        (h, min, sec) => format!("{sign}{h} h {min:02} min {sec:02}.{ms:03} s"),
    }
}

/// An epoch time in microseconds (a trace entry's `time_us`) as its UTC date and time of
/// day to the millisecond: `("2025-09-07", "14:34:15.215")`.
pub fn utc(time_us: i64) -> (String, String) {
    let iso = pt_snap_contract::python::isoformat_utc(
        time_us.div_euclid(1_000_000),
        time_us.rem_euclid(1_000_000) as u32,
    );
    let (date, rest) = iso.split_once('T').unwrap_or((&iso, ""));
    // `HH:MM:SS.ffffff+00:00`: keep the milliseconds.
    (date.to_owned(), rest.get(..12).unwrap_or(rest).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_alike_everywhere() {
        assert_eq!(human_bytes(512.0), "512 B");
        assert_eq!(human_bytes(1536.0), "1.50 KiB");
        assert_eq!(human_bytes(13.26 * (1u64 << 30) as f64), "13.26 GiB");
        assert_eq!(human_bytes(-(3 << 20) as f64), "-3.00 MiB");
        assert_eq!(signed_human_bytes(1536), "+1.50 KiB");
        assert_eq!(signed_human_bytes(-1536), "-1.50 KiB");
        assert_eq!(signed_human_bytes(0), "0 B");
        assert_eq!(grouped(-1234567), "-1,234,567");
        assert_eq!(grouped(999), "999");
    }

    /// What rounds up to 1024 of a unit reads as 1 of the next, never `1024.00 KiB`; halves
    /// round away from zero (1,152 B is 1.125 KiB).
    #[test]
    fn a_figure_never_reads_1024_of_a_unit() {
        assert_eq!(human_bytes(1_048_575.0), "1.00 MiB");
        assert_eq!(human_bytes((1024 * 1024 - 1) as f64 * 1024.0), "1.00 GiB");
        assert_eq!(human_bytes(1_048_570.0), "1023.99 KiB");
        assert_eq!(human_bytes(1023.5), "1.00 KiB");
        assert_eq!(human_bytes(1023.4), "1023 B");
        assert_eq!(human_bytes(1152.0), "1.13 KiB");
        assert_eq!(human_bytes(-1_048_575.0), "-1.00 MiB");
        assert_eq!(human_bytes(-0.4), "0 B");
        assert_eq!(human_bytes((1u64 << 60) as f64), "1024.00 PiB");
        assert_eq!(human_bytes(f64::NAN), "n/a");
    }

    /// Inputs of the table the pages' formatter is held to: both sides of every boundary,
    /// halves, negatives, the ends of `i64` and of exact doubles.
    const TABLE_BYTES: &[f64] = &[
        0.0,
        1.0,
        -1.0,
        511.5,
        -0.4,
        1023.0,
        1023.4,
        1023.5,
        1024.0,
        1152.0,
        1536.0,
        -1536.0,
        10_240.0,
        1_047_552.0,
        1_048_064.0,
        1_048_570.0,
        1_048_571.0,
        1_048_575.0,
        -1_048_575.0,
        1_048_576.0,
        15_728_641.0,
        1_073_741_823.0,
        1_073_741_824.0,
        14_237_714_268.16,
        161_061_273_600.0,
        1_099_511_627_775.0,
        1_125_899_906_842_623.0,
        9_007_199_254_740_991.0,
        1_152_921_504_606_846_976.0,
        i64::MAX as f64,
        i64::MIN as f64,
    ];
    const TABLE_CHANGES: &[i64] = &[0, 1, -1, 1536, -1536, 1_048_575, -1_048_575, 1 << 40];
    const TABLE_COUNTS: &[i64] = &[0, 7, 999, 1000, -1000, 65_536, 605_360_992, -1_234_567];
    const TABLE_DURATIONS: &[i64] = &[
        0,
        42,
        999,
        1000,
        -1_500_000,
        12_345_678,
        59_999_999,
        60_000_000,
        185_250_000,
        3_599_999_999,
        7_260_000_000,
        -7_260_000_001,
    ];

    /// `tests/browser/units.json`: this file's rules over the inputs above, the table
    /// `tests/browser/rules.test.mjs` runs the pages' formatters over (the flamegraph's
    /// bytes and counts, the diff page's durations). Rewritten with
    /// `PT_SNAP_UPDATE_EXPECT=1`; otherwise it must be what these rules give today, so a
    /// rule changed here and not in `flamegraph.js` fails one of the two tests.
    #[test]
    fn the_pages_table_is_these_rules() {
        use serde_json::{json, Value};
        // One case a line, so a changed figure is a one-line diff.
        let section = |name: &str, cases: Vec<(Value, String)>| {
            let lines: Vec<String> = cases
                .iter()
                .map(|(input, text)| format!("    [{input}, {}]", json!(text)))
                .collect();
            format!("  {}: [\n{}\n  ]", json!(name), lines.join(",\n"))
        };
        let number = |v: f64| {
            if v.fract() == 0.0 && v.abs() < 9.3e18 {
                json!(v as i64)
            } else {
                json!(v)
            }
        };
        let about = "Written by pt-snap-report's units tests (PT_SNAP_UPDATE_EXPECT=1 cargo test \
                     -p pt-snap-report units) from the Rust rules; tests/browser/rules.test.mjs \
                     runs the pages' formatters over it. Do not edit.";
        let sections = [
            section(
                "human_bytes",
                TABLE_BYTES
                    .iter()
                    .map(|&b| (number(b), human_bytes(b)))
                    .collect(),
            ),
            section(
                "signed_human_bytes",
                TABLE_CHANGES
                    .iter()
                    .map(|&b| (json!(b), signed_human_bytes(b)))
                    .collect(),
            ),
            section(
                "grouped",
                TABLE_COUNTS
                    .iter()
                    .map(|&n| (json!(n), grouped(n)))
                    .collect(),
            ),
            section(
                "seconds",
                TABLE_DURATIONS
                    .iter()
                    .map(|&us| (json!(us), seconds(us)))
                    .collect(),
            ),
        ];
        let text = format!(
            "{{\n  \"about\": {},\n{}\n}}\n",
            json!(about),
            sections.join(",\n")
        );
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/browser/units.json"
        );
        if std::env::var_os("PT_SNAP_UPDATE_EXPECT").is_some() {
            std::fs::write(path, &text).unwrap();
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == text,
            "{path} is not what units.rs gives: rerun with PT_SNAP_UPDATE_EXPECT=1, then make the \
             pages' formatters agree (node tests/browser/rules.test.mjs)"
        );
    }

    #[test]
    fn times_read_as_seconds_and_utc() {
        assert_eq!(seconds(0), "0.000000 s");
        assert_eq!(seconds(42), "0.000042 s");
        assert_eq!(seconds(12_345_678), "12.345 s");
        assert_eq!(seconds(-1_500_000), "-1.500 s");
        assert_eq!(seconds(185_250_000), "3 min 05.250 s");
        assert_eq!(seconds(7_260_000_000), "2 h 01 min 00.000 s");
        let t = utc(1_757_253_255_215_904);
        assert_eq!((t.0.as_str(), t.1.as_str()), ("2025-09-07", "13:54:15.215"));
        assert_eq!(utc(-1).1, "23:59:59.999");
    }
}
