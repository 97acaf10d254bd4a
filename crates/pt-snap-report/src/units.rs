//! How our own commands (`diff`, `ranks`, `report oom`) and the browser write numbers for a
//! person: the flamegraph's formatting, so a page and the text beside it read alike.

/// `13.26 GiB`: binary units with two decimals, exact below 1 KiB. Takes `f64` because a
/// median of byte counts can fall between two of them.
pub fn human_bytes(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes.abs() < 1024.0 {
        return format!("{bytes:.0} B");
    }
    let mut v = bytes / 1024.0;
    let mut unit = 0;
    while v.abs() >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.2} {}", UNITS[unit])
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
