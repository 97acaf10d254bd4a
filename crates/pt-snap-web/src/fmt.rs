//! Numbers for people, as the CLI's own commands and the HTML pages write them
//! ([`pt_snap_report::units`]): binary units with two decimals, exact bytes on hover.

/// `1.50 KiB`: [`pt_snap_report::units::human_bytes`] of a count.
pub fn bytes(n: i64) -> String {
    pt_snap_report::units::human_bytes(n as f64)
}

/// `605,360,992`: as the CLI's own commands write counts.
pub use pt_snap_report::units::grouped;

pub fn exact(n: i64) -> String {
    format!("{} bytes", grouped(n))
}

/// The events a column or bucket covers, as every readout starts: `event N`, `events N–M`.
pub fn events(first: i64, last: i64) -> String {
    if first == last {
        format!("event {first}")
    } else {
        format!("events {first}–{last}")
    }
}

/// Seconds for a budget field: `60`, `0.5`.
pub fn seconds(s: f64) -> String {
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s}")
    }
}

/// A budget typed by a person: positive seconds, at most a day.
pub fn parse_seconds(text: &str) -> Option<f64> {
    let s: f64 = text.trim().parse().ok()?;
    (s.is_finite() && s > 0.0 && s <= 86_400.0).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_as_the_reports_write_them() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1024), "1.00 KiB");
        assert_eq!(bytes(1_048_575), "1.00 MiB");
        assert_eq!(bytes(15 * 1024 * 1024 + 1), "15.00 MiB");
        assert_eq!(bytes(150 << 30), "150.00 GiB");
        assert_eq!(bytes(-2048), "-2.00 KiB");
        assert_eq!(bytes(i64::MIN), "-8192.00 PiB");
    }

    #[test]
    fn counts_are_grouped_by_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(605_360_992), "605,360,992");
        assert_eq!(grouped(-1_000), "-1,000");
        assert_eq!(exact(1_024), "1,024 bytes");
    }

    #[test]
    fn a_range_of_one_event_is_that_event() {
        assert_eq!(events(7, 7), "event 7");
        assert_eq!(events(7, 9), "events 7–9");
    }

    #[test]
    fn budgets_are_positive_seconds() {
        assert_eq!(parse_seconds(" 60 "), Some(60.0));
        assert_eq!(parse_seconds("0.5"), Some(0.5));
        for bad in ["0", "-1", "abc", "", "inf", "NaN", "100000"] {
            assert_eq!(parse_seconds(bad), None, "{bad}");
        }
        assert_eq!(seconds(60.0), "60");
        assert_eq!(seconds(0.5), "0.5");
    }
}
