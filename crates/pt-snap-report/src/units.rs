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
}
