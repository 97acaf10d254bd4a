//! Integer normalisation and the literal syntaxes of the protocol-0 text opcodes.

/// An integer as the VM stores it: inline when it fits, else minimal two's-complement bytes.
#[derive(Debug, PartialEq)]
pub(crate) enum Int {
    Small(i64),
    Big(Vec<u8>),
}

/// CPython refuses to convert longer decimal strings (`sys.int_info.default_max_str_digits`);
/// the conversion below is quadratic, so the same cap keeps hostile input cheap.
const MAX_DIGITS: usize = 4300;

/// Normalises little-endian two's complement (LONG1/LONG4 payloads) to its shortest form.
/// Snapshots hold two LONG1s per trace entry (addresses, timestamps), so the common case,
/// one that fits `i64`, is made without a heap allocation.
pub(crate) fn int_from_le(bytes: &[u8]) -> Int {
    let mut len = bytes.len();
    while len > 1 {
        let last = bytes[len - 1];
        let sign_of_prev = bytes[len - 2] & 0x80 != 0;
        if (last == 0 && !sign_of_prev) || (last == 0xff && sign_of_prev) {
            len -= 1;
        } else {
            break;
        }
    }
    let b = &bytes[..len];
    if len <= 8 {
        let fill = if b.last().is_some_and(|&x| x & 0x80 != 0) {
            0xff
        } else {
            0
        };
        let mut le = [fill; 8];
        le[..len].copy_from_slice(b);
        Int::Small(i64::from_le_bytes(le))
    } else {
        Int::Big(b.to_vec())
    }
}

/// Parses the argument of INT/LONG/GET/PUT: optional sign, decimal digits, optional `L`.
pub(crate) fn parse_decimal(text: &[u8]) -> Result<Int, String> {
    let t = trim(text);
    let t = t.strip_suffix(b"L").unwrap_or(t);
    let (neg, digits) = match t.first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(format!(
            "invalid integer literal {:?}",
            String::from_utf8_lossy(text)
        ));
    }
    if digits.len() > MAX_DIGITS {
        return Err(format!(
            "integer literal of {} digits exceeds the limit of {MAX_DIGITS}",
            digits.len()
        ));
    }
    let mut small: i64 = 0;
    let fits = digits.iter().try_for_each(|&d| {
        let d = i64::from(d - b'0');
        small = small
            .checked_mul(10)?
            .checked_add(if neg { -d } else { d })?;
        Some(())
    });
    if fits.is_some() {
        return Ok(Int::Small(small));
    }
    Ok(int_from_le(&twos_complement(neg, digits)))
}

/// The little-endian two's complement of `±digits` (decimal), with room for the sign bit.
pub(crate) fn twos_complement(negative: bool, digits: &[u8]) -> Vec<u8> {
    // Magnitude in base 2^32, least significant limb first.
    let mut limbs: Vec<u32> = vec![0];
    for &d in digits {
        let mut carry = u64::from(d - b'0');
        for limb in &mut limbs {
            let v = u64::from(*limb) * 10 + carry;
            *limb = v as u32;
            carry = v >> 32;
        }
        if carry > 0 {
            limbs.push(carry as u32);
        }
    }
    let mut bytes: Vec<u8> = limbs.iter().flat_map(|l| l.to_le_bytes()).collect();
    bytes.push(0);
    if negative {
        let mut carry = true;
        for b in &mut bytes {
            let (v, c) = (!*b).overflowing_add(u8::from(carry));
            *b = v;
            carry = c;
        }
    }
    // Drop bytes that only repeat the sign.
    while bytes.len() > 1 {
        let (top, next) = (bytes[bytes.len() - 1], bytes[bytes.len() - 2]);
        if (top == 0 && next & 0x80 == 0) || (top == 0xff && next & 0x80 != 0) {
            bytes.pop();
        } else {
            break;
        }
    }
    bytes
}

pub(crate) fn parse_float(text: &[u8]) -> Result<f64, String> {
    std::str::from_utf8(trim(text))
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .ok_or_else(|| format!("invalid float literal {:?}", String::from_utf8_lossy(text)))
}

fn trim(t: &[u8]) -> &[u8] {
    t.trim_ascii()
}

/// Decodes the quoted, backslash-escaped argument of STRING (`codecs.escape_decode`).
pub(crate) fn unescape_string(line: &[u8]) -> Result<Vec<u8>, String> {
    let inner = match line {
        [q, inner @ .., q2] if q == q2 && (*q == b'\'' || *q == b'"') => inner,
        _ => return Err("the STRING opcode argument must be quoted".into()),
    };
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        let c = inner[i];
        i += 1;
        if c != b'\\' {
            out.push(c);
            continue;
        }
        let Some(&e) = inner.get(i) else {
            return Err("trailing backslash in STRING argument".into());
        };
        i += 1;
        match e {
            b'\n' => {}
            b'\\' | b'\'' | b'"' => out.push(e),
            b'a' => out.push(0x07),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0c),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(0x0b),
            b'0'..=b'7' => {
                let mut v = u32::from(e - b'0');
                for _ in 0..2 {
                    match inner.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push(v as u8); // Python keeps the low byte too
            }
            b'x' => {
                let hex = inner
                    .get(i..i + 2)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or("invalid \\x escape in STRING argument")?;
                out.push(hex);
                i += 2;
            }
            _ => {
                out.push(b'\\');
                out.push(e);
            }
        }
    }
    Ok(out)
}

/// Decodes the argument of UNICODE (`raw-unicode-escape`): Latin-1 text in which
/// `\uXXXX` and `\UXXXXXXXX` are escapes when preceded by an odd number of backslashes.
pub(crate) fn raw_unicode_escape(line: &[u8]) -> Result<String, String> {
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        if line[i] != b'\\' {
            out.push(char::from(line[i]));
            i += 1;
            continue;
        }
        let start = i;
        while i < line.len() && line[i] == b'\\' {
            out.push('\\');
            i += 1;
        }
        let width = match line.get(i) {
            Some(b'u') => 4,
            Some(b'U') => 8,
            _ => continue,
        };
        if (i - start) % 2 == 0 {
            continue;
        }
        out.pop();
        let code = line
            .get(i + 1..i + 1 + width)
            .and_then(|h| std::str::from_utf8(h).ok())
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or("truncated \\uXXXX escape in UNICODE argument")?;
        out.push(char::from_u32(code).ok_or_else(|| {
            format!("\\u escape {code:#x} is not a Unicode scalar value (lone surrogate?)")
        })?);
        i += 1 + width;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn le_ints_normalise_to_i64_when_they_fit() {
        assert_eq!(int_from_le(&[]), Int::Small(0));
        assert_eq!(int_from_le(&[0xff]), Int::Small(-1));
        assert_eq!(int_from_le(&[0x80, 0xff, 0xff]), Int::Small(-128));
        let max = i64::MAX.to_le_bytes();
        assert_eq!(int_from_le(&max), Int::Small(i64::MAX));
        let mut two63 = vec![0u8; 8];
        two63[7] = 0x80;
        two63.push(0);
        assert_eq!(int_from_le(&two63), Int::Big(two63.clone()));
        let mut padded = two63.clone();
        padded.extend([0, 0]);
        assert_eq!(int_from_le(&padded), Int::Big(two63));
    }

    #[test]
    fn decimal_literals_cover_bools_signs_and_big_values() {
        assert_eq!(parse_decimal(b"-42"), Ok(Int::Small(-42)));
        assert_eq!(parse_decimal(b"7L"), Ok(Int::Small(7)));
        assert_eq!(
            parse_decimal(b"-9223372036854775808"),
            Ok(Int::Small(i64::MIN))
        );
        // 2**64 = 0x1_0000_0000_0000_0000
        let mut want = vec![0u8; 8];
        want.extend([1]);
        assert_eq!(parse_decimal(b"18446744073709551616"), Ok(Int::Big(want)));
        // -(2**63) - 1
        let mut want = vec![0xff; 8];
        want[7] = 0x7f;
        want.push(0xff);
        assert_eq!(parse_decimal(b"-9223372036854775809"), Ok(Int::Big(want)));
        assert!(parse_decimal(b"12a").is_err());
        assert!(parse_decimal(b"").is_err());
        assert!(parse_decimal(&[b'9'; 5000]).is_err());
    }

    #[test]
    fn string_escapes_follow_python() {
        assert_eq!(unescape_string(br"'a\'b\x41\101\n'").unwrap(), b"a'bAA\n");
        assert_eq!(unescape_string(br#""q\z""#).unwrap(), br"q\z");
        assert!(unescape_string(b"unquoted").is_err());
        assert!(unescape_string(br"'\x4'").is_err());
    }

    #[test]
    fn raw_unicode_escape_decodes_odd_backslash_escapes_only() {
        assert_eq!(raw_unicode_escape(br"caf\u00e9").unwrap(), "café");
        assert_eq!(raw_unicode_escape(br"\\u00e9").unwrap(), r"\\u00e9");
        assert_eq!(raw_unicode_escape(br"\U0001F600").unwrap(), "😀");
        assert_eq!(raw_unicode_escape(&[0xe9]).unwrap(), "é");
        assert!(raw_unicode_escape(br"\ud800").is_err());
        assert!(raw_unicode_escape(br"\u12").is_err());
    }
}
