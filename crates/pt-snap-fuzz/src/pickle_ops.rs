//! Just enough of the pickle opcode table to cut a stream into opcodes, so the mutator can
//! change length fields, swap, drop or repeat whole opcodes and insert new ones instead of
//! only flipping bytes.

/// The shape of an opcode's argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    None,
    /// A fixed-width little-endian field (ints, memo indices, FRAME's length, floats).
    Fixed(u8),
    /// A little-endian length of this width, then that many payload bytes.
    Len(u8),
    /// Newline-terminated text lines (protocol 0 opcodes; GLOBAL and INST have two).
    Lines(u8),
}

/// Opcodes used by the mutator by name: the decoder's own table.
pub use pt_snap_pickle::op;

/// The argument shape of `code`, `None` for bytes that are not opcodes.
pub fn arg(code: u8) -> Option<Arg> {
    use Arg::*;
    Some(match code {
        b'(' | b'.' | b'0' | b'1' | b'2' | b'N' | 0x88 | 0x89 | b']' | b'a' | b'e' | b'l'
        | b')' | b't' | 0x85 | 0x86 | 0x87 | b'}' | b'd' | b's' | b'u' | 0x8f | 0x90 | 0x91
        | 0x94 | b'b' | b'R' | 0x81 | 0x92 | 0x93 | b'Q' | 0x97 | 0x98 | b'o' => None,
        0x80 | b'K' | b'h' | b'q' | 0x82 => Fixed(1),
        b'M' | 0x83 => Fixed(2),
        b'J' | b'j' | b'r' | 0x84 => Fixed(4),
        b'G' | 0x95 => Fixed(8),
        0x8c | b'C' | b'U' | 0x8a => Len(1),
        b'X' | b'B' | b'T' | 0x8b => Len(4),
        0x8d | 0x8e | 0x96 => Len(8),
        b'I' | b'L' | b'F' | b'S' | b'V' | b'g' | b'p' | b'P' => Lines(1),
        b'c' | b'i' => Lines(2),
        _ => return Option::None,
    })
}

/// Every opcode byte, grouped by argument shape: replacing an opcode by another of its group
/// keeps the stream parseable.
pub fn siblings(code: u8) -> Vec<u8> {
    let shape = arg(code);
    (0..=255u8).filter(|&c| arg(c) == shape).collect()
}

/// One opcode in a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    pub start: usize,
    pub code: u8,
    /// The numeric field (a fixed argument or a length) and its width, if any.
    pub field: Option<(usize, u8)>,
    /// One past the last byte of the opcode and its argument.
    pub end: usize,
}

fn le(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .rev()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

/// Cuts `data` into opcodes, up to and including STOP; stops early at an unknown opcode or a
/// truncated argument (what follows is kept by the mutator as opaque bytes).
pub fn scan(data: &[u8]) -> Vec<Op> {
    let mut ops = Vec::new();
    let mut at = 0usize;
    while at < data.len() {
        let code = data[at];
        let Some(shape) = arg(code) else { break };
        let body = at + 1;
        let (field, end) = match shape {
            Arg::None => (None, Some(body)),
            Arg::Fixed(w) => (Some((body, w)), body.checked_add(usize::from(w))),
            Arg::Len(w) => {
                let w = usize::from(w);
                match data.get(body..body + w) {
                    Some(len) => (
                        Some((body, w as u8)),
                        usize::try_from(le(len))
                            .ok()
                            .and_then(|n| (body + w).checked_add(n)),
                    ),
                    None => (None, None),
                }
            }
            Arg::Lines(n) => {
                let mut end = Some(body);
                for _ in 0..n {
                    end = end.and_then(|from| {
                        data.get(from..)?
                            .iter()
                            .position(|&b| b == b'\n')
                            .map(|p| from + p + 1)
                    });
                }
                (None, end)
            }
        };
        match end {
            Some(end) if end <= data.len() => {
                ops.push(Op {
                    start: at,
                    code,
                    field,
                    end,
                });
                at = end;
                if code == op::STOP {
                    break;
                }
            }
            _ => break,
        }
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_a_protocol_4_dict() {
        // {'a': [1, 300]} as pickle.dumps(…, protocol=4) writes it.
        let data =
            b"\x80\x04\x95\x11\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x01a\x94]\x94(K\x01M,\x01es.";
        let ops = scan(data);
        let codes: Vec<u8> = ops.iter().map(|o| o.code).collect();
        assert_eq!(
            codes,
            [
                op::PROTO,
                op::FRAME,
                op::EMPTY_DICT,
                op::MEMOIZE,
                op::SHORT_BINUNICODE,
                op::MEMOIZE,
                op::EMPTY_LIST,
                op::MEMOIZE,
                op::MARK,
                op::BININT1,
                op::BININT2,
                op::APPENDS,
                op::SETITEM,
                op::STOP
            ]
        );
        assert_eq!(ops.last().unwrap().end, data.len());
        assert_eq!(ops[4].field, Some((ops[4].start + 1, 1)));
    }

    #[test]
    fn stops_at_truncation_and_unknown_bytes() {
        assert_eq!(scan(b"X\xff\xff\x00\x00ab").len(), 0);
        assert_eq!(scan(b"N\xffN").len(), 1);
        assert_eq!(scan(b"Ifoo").len(), 0);
        assert_eq!(scan(b"I12\nN").len(), 2);
        assert_eq!(scan(b"\x8d\xff\xff\xff\xff\xff\xff\xff\xff").len(), 0);
    }

    #[test]
    fn siblings_share_the_shape() {
        assert!(siblings(op::BINPUT).contains(&op::BINGET));
        assert!(siblings(op::EMPTY_LIST).contains(&op::EMPTY_DICT));
        assert!(!siblings(op::EMPTY_LIST).contains(&op::BINGET));
    }
}
