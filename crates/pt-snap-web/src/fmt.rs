//! Numbers for people: binary units with three significant digits, exact bytes on hover.

pub fn bytes(n: i64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n.unsigned_abs() as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    let sign = if n < 0 { "-" } else { "" };
    if unit == 0 {
        format!("{sign}{v} B")
    } else if v >= 100.0 {
        format!("{sign}{v:.0} {}", UNITS[unit])
    } else if v >= 10.0 {
        format!("{sign}{v:.1} {}", UNITS[unit])
    } else {
        format!("{sign}{v:.2} {}", UNITS[unit])
    }
}

/// `605,360,992`.
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
        format!("-{out}")
    } else {
        out
    }
}

pub fn exact(n: i64) -> String {
    format!("{} bytes", grouped(n))
}
