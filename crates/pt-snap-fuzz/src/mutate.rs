//! The runner's mutator: byte-level mutations (bit and byte flips, interesting integers,
//! insert/delete/duplicate ranges, splices of two seeds, truncation) and pickle-aware ones
//! on whole opcodes (length and index fields set to interesting values, opcodes swapped for
//! others of the same shape, dropped, repeated, moved, or new opcodes inserted, with the
//! snapshot's own key and action names as strings). A compressed input is mutated as its
//! payload, packed again (`packing`), and now and then its container is damaged. SQL text
//! (the `sql` target) gets [`mutate_sql`].

use crate::packing::{self, Packing};
use crate::pickle_ops::{self, op, Op};
use crate::rng::Rng;

/// An input to mutate, with its opcodes (`pickle_ops::scan`), cached by the caller.
#[derive(Debug, Clone, Copy)]
pub struct Seed<'a> {
    pub data: &'a [u8],
    pub ops: &'a [Op],
}

/// Values that break arithmetic and bounds: 0, ±1, powers of two and their neighbours at
/// each width, i64::MAX/MIN. Written little-endian and cut to the field's width.
pub const INTERESTING: [u64; 24] = [
    0,
    1,
    2,
    0x7f,
    0x80,
    0xff,
    0x100,
    0xfff,
    0x1000,
    0x7fff,
    0x8000,
    0xffff,
    0x1_0000,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_fffe,
    0xffff_ffff,
    0x1_0000_0000,
    1 << 53,
    0x7fff_ffff_ffff_ffff,
    0x8000_0000_0000_0000,
    0xffff_ffff_ffff_fffe,
    u64::MAX,
    0x0001_0000_0000_0000,
];

/// Strings a snapshot is made of: the keys the decoder looks for and the action and block
/// state names.
pub const WORDS: [&str; 40] = [
    "segments",
    "device_traces",
    "address",
    "total_size",
    "stream",
    "allocated_size",
    "active_size",
    "requested_size",
    "blocks",
    "segment_type",
    "frames",
    "device",
    "is_expandable",
    "size",
    "state",
    "history",
    "action",
    "addr",
    "id",
    "filename",
    "line",
    "name",
    "alloc",
    "free",
    "free_requested",
    "free_completed",
    "segment_alloc",
    "segment_free",
    "segment_map",
    "segment_unmap",
    "workspace_snapshot",
    "oom",
    "snapshot",
    "active_allocated",
    "active_pending_free",
    "inactive",
    "large",
    "small",
    "",
    "\u{0}\u{ff}\u{10ffff}",
];

/// One mutant of `base`, at most `max_len` bytes; `other` is a second input for splices.
pub fn mutate(rng: &mut Rng, base: Seed<'_>, other: Seed<'_>, max_len: usize) -> Vec<u8> {
    // A compressed input: mostly its payload is mutated (bytes flipped in the compressed
    // stream rarely get past the decompressor), now and then the stream as bytes.
    if let Some(packing) = Packing::of(base.data).filter(|_| !rng.one_in(4)) {
        return packed_mutation(rng, packing, base, other, max_len);
    }
    plain_mutation(rng, base, other, max_len)
}

/// [`mutate`] of a compressed input: its payload mutated and packed again the same way;
/// a quarter of the time its container damaged too (`packing::damage`).
fn packed_mutation(
    rng: &mut Rng,
    packing: Packing,
    base: Seed<'_>,
    other: Seed<'_>,
    max_len: usize,
) -> Vec<u8> {
    let payload = packing.unpack(base.data, max_len);
    let other_payload = match Packing::of(other.data) {
        Some(p) => p.unpack(other.data, max_len),
        None => other.data.to_vec(),
    };
    let (ops, other_ops) = (pickle_ops::scan(&payload), pickle_ops::scan(&other_payload));
    // One level only: a payload that is itself compressed is mutated as bytes.
    let inner = plain_mutation(
        rng,
        Seed {
            data: &payload,
            ops: &ops,
        },
        Seed {
            data: &other_payload,
            ops: &other_ops,
        },
        max_len,
    );
    let mut out = packing.pack(&inner);
    if rng.one_in(4) {
        packing::damage(rng, packing, &mut out, &other_payload);
    }
    out.truncate(max_len);
    out
}

/// [`mutate`] of an uncompressed input.
fn plain_mutation(rng: &mut Rng, base: Seed<'_>, other: Seed<'_>, max_len: usize) -> Vec<u8> {
    let mut out = base.data.to_vec();
    let json = looks_like_json(base.data);
    let structured = (json || !base.ops.is_empty()) && !rng.one_in(3);
    if structured && json {
        json_mutation(rng, &mut out);
    } else if structured {
        pickle_mutation(rng, &mut out, base.ops, other);
    }
    // Stacked byte mutations; after a pickle-aware one, often none, so the opcode stream
    // stays well formed and the mutant gets past the decoder.
    let rounds = if structured && rng.one_in(2) {
        0
    } else {
        let most = rng.below(8);
        1 + rng.below(1 + most)
    };
    for _ in 0..rounds {
        byte_mutation(rng, &mut out, other.data, max_len);
    }
    out.truncate(max_len);
    out
}

/// Whether `data` starts like a JSON document (a pickle never starts with `{` or `[`).
pub fn looks_like_json(data: &[u8]) -> bool {
    data.iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| matches!(b, b'{' | b'['))
}

/// JSON numbers at the edges: of i64, of u64, of doubles, and Python's extensions.
const JSON_NUMBERS: [&str; 16] = [
    "0",
    "-0",
    "-1",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551616",
    "1e999",
    "-1e999",
    "1.5",
    "4e-324",
    "NaN",
    "Infinity",
    "-Infinity",
    "123456789012345678901234567890",
    "true",
];

/// JSON fragments: values, half-open containers, separators.
const JSON_TOKENS: [&str; 16] = [
    "null",
    "[]",
    "{}",
    "[[[[[[[[[[[[[[[[",
    "]]]]]]]]",
    "}",
    ",",
    ":",
    "\"\\ud800\"",
    "\"\\u0000\"",
    "\"\\uD83D\\uDE00\"",
    "\"",
    "{\"a\":1,\"a\":2}",
    "\u{feff}",
    " \t\r\n",
    "\"\u{10ffff}\"",
];

/// One JSON-aware mutation: a number swapped for an edge value, a snapshot key or action
/// name swapped for another, or a token inserted.
pub fn json_mutation(rng: &mut Rng, out: &mut Vec<u8>) {
    let n = out.len();
    let at = rng.below(n + 1);
    match rng.below(3) {
        0 => {
            // The number (or literal) at or after `at`.
            let start = out[at.min(n)..]
                .iter()
                .position(|b| b.is_ascii_digit())
                .map(|p| at + p);
            if let Some(mut start) = start {
                while start > 0 && matches!(out[start - 1], b'-' | b'0'..=b'9' | b'.') {
                    start -= 1;
                }
                let len = out[start..]
                    .iter()
                    .position(|b| !matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                    .unwrap_or(n - start);
                let new = rng.pick(&JSON_NUMBERS).as_bytes();
                out.splice(start..start + len, new.iter().copied());
                return;
            }
            let new = rng.pick(&JSON_NUMBERS).as_bytes();
            out.splice(at..at, new.iter().copied());
        }
        1 => {
            // The string at or after `at` becomes a snapshot word.
            let quote = out[at.min(n)..]
                .iter()
                .position(|&b| b == b'"')
                .map(|p| at + p);
            if let Some(open) = quote {
                if let Some(len) = out[open + 1..].iter().position(|&b| b == b'"') {
                    let word = rng.pick(&WORDS).as_bytes();
                    out.splice(open + 1..open + 1 + len, word.iter().copied());
                    return;
                }
            }
            let new = rng.pick(&JSON_TOKENS).as_bytes();
            out.splice(at..at, new.iter().copied());
        }
        _ => {
            let new = rng.pick(&JSON_TOKENS).as_bytes();
            out.splice(at..at, new.iter().copied());
        }
    }
}

/// SQL pieces for the `sql` target: statements that would write, declare tables or change
/// the session, the dataset's tables and columns, clauses, and the target's placeholders
/// (`$DS`: the dataset directory, `$OUT`: a directory beside it).
pub const SQL_TOKENS: [&str; 72] = [
    "SELECT ",
    "* ",
    " FROM ",
    "summary",
    "events",
    "blocks",
    "callstacks",
    " WHERE ",
    " GROUP BY ",
    " ORDER BY ",
    " LIMIT ",
    " JOIN ",
    " UNION ALL ",
    "WITH t AS (SELECT 1) ",
    "(",
    ")",
    ", ",
    ";",
    "'",
    "\"",
    "--",
    "/*",
    "COPY ",
    " TO ",
    "'$OUT/x.csv'",
    "'$DS/summary/job=fuzz/rank=9/part-0.parquet'",
    "'$DS/'",
    "'relative.csv'",
    " STORED AS PARQUET",
    " STORED AS CSV",
    " STORED AS JSON",
    " PARTITIONED BY (job)",
    "INSERT INTO ",
    "INSERT OVERWRITE ",
    " VALUES (1)",
    "DELETE FROM ",
    "UPDATE summary SET device = 1",
    "CREATE EXTERNAL TABLE x ",
    "CREATE TABLE t AS ",
    "CREATE OR REPLACE TABLE summary AS ",
    "CREATE VIEW v AS ",
    "CREATE SCHEMA s",
    "DROP TABLE ",
    "DROP VIEW ",
    " LOCATION ",
    "SET datafusion.execution.batch_size = 1",
    "SET TIME ZONE = 'UTC'",
    "RESET datafusion.execution.batch_size",
    "PREPARE p AS ",
    "EXECUTE p",
    "BEGIN",
    "COMMIT",
    "EXPLAIN ",
    "EXPLAIN ANALYZE ",
    "DESCRIBE ",
    "SHOW TABLES",
    "SHOW ALL",
    "information_schema.tables",
    "job",
    "rank",
    "device",
    "size",
    "action",
    "peak_active",
    "top_group_frames",
    "unnest(top_group_frames)",
    "count(*)",
    "max(size)",
    "array_agg(path)",
    "CAST(rank AS VARCHAR)",
    "9223372036854775807",
    "NULL",
];

/// One mutant of SQL text: tokens of [`SQL_TOKENS`] inserted or put in place of a word,
/// two statements spliced at a space, and byte mutations now and then.
pub fn mutate_sql(rng: &mut Rng, base: Seed<'_>, other: Seed<'_>, max_len: usize) -> Vec<u8> {
    let mut out = base.data.to_vec();
    for _ in 0..rng.between(1, 3) {
        let n = out.len();
        match rng.below(5) {
            0 | 1 => {
                let at = rng.below(n + 1);
                out.splice(at..at, rng.pick(&SQL_TOKENS).bytes());
            }
            2 => {
                // The word (letters, digits, `_`) at or after a random place.
                let start = rng.below(n + 1);
                let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
                if let Some(from) = out[start..].iter().position(word).map(|p| start + p) {
                    let len = out[from..].iter().take_while(|b| word(b)).count();
                    out.splice(from..from + len, rng.pick(&SQL_TOKENS).bytes());
                }
            }
            3 if !other.data.is_empty() => {
                let spaces = |d: &[u8]| -> Vec<usize> {
                    d.iter()
                        .enumerate()
                        .filter(|(_, &b)| b == b' ')
                        .map(|(i, _)| i)
                        .collect()
                };
                let (mine, theirs) = (spaces(&out), spaces(other.data));
                let cut = mine.get(rng.below(mine.len().max(1))).copied().unwrap_or(n);
                let from = theirs
                    .get(rng.below(theirs.len().max(1)))
                    .copied()
                    .unwrap_or(0);
                out.truncate(cut);
                out.extend_from_slice(&other.data[from..]);
            }
            _ => byte_mutation(rng, &mut out, other.data, max_len),
        }
    }
    out.truncate(max_len);
    out
}

fn put_le(out: &mut [u8], at: usize, width: usize, value: u64) {
    let bytes = value.to_le_bytes();
    let end = (at + width).min(out.len());
    if at < end {
        out[at..end].copy_from_slice(&bytes[..end - at]);
    }
}

fn interesting(rng: &mut Rng) -> u64 {
    *rng.pick(&INTERESTING)
}

/// A random range `(start, len)` of `n` bytes, short more often than long.
fn range(rng: &mut Rng, n: usize) -> (usize, usize) {
    let start = rng.below(n);
    let room = n - start;
    let len = if rng.one_in(4) {
        rng.between(1, room)
    } else {
        rng.between(1, room.min(32))
    };
    (start, len)
}

/// One byte-level mutation in place.
pub fn byte_mutation(rng: &mut Rng, out: &mut Vec<u8>, other: &[u8], max_len: usize) {
    if out.is_empty() {
        out.extend((0..rng.between(1, 8)).map(|_| rng.byte()));
        return;
    }
    let n = out.len();
    match rng.below(14) {
        0 => {
            let i = rng.below(n);
            out[i] ^= 1 << rng.below(8);
        }
        1 => {
            let i = rng.below(n);
            out[i] = rng.byte();
        }
        2 => {
            let i = rng.below(n);
            out[i] = *rng.pick(&[0, 1, 0x7f, 0x80, 0xfe, 0xff, b'\n', op::STOP, op::MARK]);
        }
        3 => {
            let width = *rng.pick(&[1usize, 2, 4, 8]);
            let i = rng.below(n);
            let v = interesting(rng);
            if rng.one_in(4) {
                // Big-endian now and then, for fields other than pickle's.
                let be = v.to_be_bytes();
                let end = (i + width).min(n);
                out[i..end].copy_from_slice(&be[8 - width..8 - width + end - i]);
            } else {
                put_le(out, i, width, v);
            }
        }
        4 => {
            // Small arithmetic on a byte or a little-endian u32.
            let i = rng.below(n);
            let delta = rng.between(1, 35) as u64;
            let width = if n - i >= 4 && rng.one_in(2) { 4 } else { 1 };
            let mut old = [0u8; 8];
            old[..width].copy_from_slice(&out[i..i + width]);
            let old = u64::from_le_bytes(old);
            let new = if rng.one_in(2) {
                old.wrapping_add(delta)
            } else {
                old.wrapping_sub(delta)
            };
            put_le(out, i, width, new);
        }
        5 => {
            let at = rng.below(n + 1);
            let k = rng.between(1, 16);
            let bytes: Vec<u8> = (0..k).map(|_| rng.byte()).collect();
            out.splice(at..at, bytes);
        }
        6 => {
            let at = rng.below(n + 1);
            let k = rng.between(1, 256);
            let b = rng.byte();
            out.splice(at..at, std::iter::repeat_n(b, k));
        }
        7 => {
            let (start, len) = range(rng, n);
            out.drain(start..start + len);
        }
        8 => {
            let (start, len) = range(rng, n);
            let copy = out[start..start + len].to_vec();
            let at = rng.below(n + 1);
            let times = if rng.one_in(8) { rng.between(2, 64) } else { 1 };
            for _ in 0..times {
                if out.len() + copy.len() > max_len {
                    break;
                }
                out.splice(at..at, copy.iter().copied());
            }
        }
        9 => {
            let (start, len) = range(rng, n);
            let to = rng.below(n);
            let copy = out[start..start + len].to_vec();
            let end = (to + len).min(n);
            out[to..end].copy_from_slice(&copy[..end - to]);
        }
        10 if !other.is_empty() => {
            // Splice: a head of this input and a tail of the other.
            let cut = rng.below(n + 1);
            let from = rng.below(other.len());
            out.truncate(cut);
            out.extend_from_slice(&other[from..]);
        }
        11 if !other.is_empty() => {
            let (start, len) = range(rng, other.len());
            let at = rng.below(n + 1);
            out.splice(at..at, other[start..start + len].iter().copied());
        }
        12 => out.truncate(rng.below(n)),
        _ => {
            let (a, len) = range(rng, n);
            let b = rng.below(n);
            if b + len <= n && (b >= a + len || a >= b + len) {
                for k in 0..len {
                    out.swap(a + k, b + k);
                }
            } else {
                out[a] ^= 0xff;
            }
        }
    }
}

/// Opcode boundaries: every opcode's start and the end of the last one.
fn boundaries(ops: &[Op]) -> impl Iterator<Item = usize> + '_ {
    ops.iter().map(|o| o.start).chain(ops.last().map(|o| o.end))
}

fn boundary(rng: &mut Rng, ops: &[Op]) -> usize {
    let k = rng.below(ops.len() + 1);
    boundaries(ops).nth(k).unwrap_or(0)
}

/// A run of 1..=8 consecutive opcodes of `ops`, as a byte range.
fn op_run(rng: &mut Rng, ops: &[Op]) -> (usize, usize) {
    let i = rng.below(ops.len());
    let k = if rng.one_in(2) {
        1
    } else {
        rng.between(1, 8).min(ops.len() - i)
    };
    (ops[i].start, ops[i + k - 1].end)
}

/// One mutation on whole opcodes; `ops` are `out`'s (not yet changed) opcodes.
pub fn pickle_mutation(rng: &mut Rng, out: &mut Vec<u8>, ops: &[Op], other: Seed<'_>) {
    debug_assert!(!ops.is_empty());
    match rng.below(9) {
        0 | 1 => {
            // A length, memo index, integer or FRAME size set to an interesting value.
            let with_field: Vec<&Op> = ops.iter().filter(|o| o.field.is_some()).collect();
            let Some(o) = (!with_field.is_empty()).then(|| *rng.pick(&with_field)) else {
                return byte_mutation(rng, out, other.data, usize::MAX);
            };
            let (at, width) = o.field.expect("filtered");
            let width = usize::from(width);
            let mut old = [0u8; 8];
            old[..width].copy_from_slice(&out[at..at + width]);
            let old = u64::from_le_bytes(old);
            let remaining = (out.len() - at - width) as u64;
            let value = match rng.below(6) {
                0 => old.wrapping_add(1),
                1 => old.wrapping_sub(1),
                2 => old.wrapping_mul(2).wrapping_add(rng.below(3) as u64),
                3 => remaining.wrapping_add(rng.below(3) as u64),
                _ => interesting(rng),
            };
            put_le(out, at, width, value);
        }
        2 => {
            let o = *rng.pick(ops);
            let siblings = pickle_ops::siblings(o.code);
            out[o.start] = *rng.pick(&siblings);
        }
        3 => {
            let (a, b) = op_run(rng, ops);
            out.drain(a..b);
        }
        4 => {
            let (a, b) = op_run(rng, ops);
            let copy = out[a..b].to_vec();
            let at = boundary(rng, ops);
            let times = if rng.one_in(8) { rng.between(2, 32) } else { 1 };
            for _ in 0..times {
                out.splice(at..at, copy.iter().copied());
            }
        }
        5 => {
            let at = boundary(rng, ops);
            let new = synth(rng);
            out.splice(at..at, new);
        }
        6 => {
            let at = boundary(rng, ops);
            out.truncate(at);
            if rng.one_in(2) {
                out.push(op::STOP);
            }
        }
        7 => {
            let i = rng.below(ops.len());
            if i + 1 < ops.len() {
                let (a, m, b) = (ops[i].start, ops[i].end, ops[i + 1].end);
                out[a..b].rotate_left(m - a);
            }
        }
        _ => {
            let source = if other.ops.is_empty() {
                Seed {
                    data: &out[..],
                    ops,
                }
            } else {
                other
            };
            let (a, b) = op_run(rng, source.ops);
            let copy = source.data[a..b].to_vec();
            let at = boundary(rng, ops);
            out.splice(at..at, copy);
        }
    }
}

fn with_le(code: u8, width: usize, value: u64) -> Vec<u8> {
    let mut v = vec![code];
    v.extend_from_slice(&value.to_le_bytes()[..width]);
    v
}

/// Opcodes that would run code: they must be refused, never run.
const UNSAFE: [&[u8]; 6] = [
    b"cbuiltins\neval\n",
    b"\x8c\x08builtins\x8c\x04eval\x93",
    b"R",
    b"b",
    b"\x81",
    b"Q",
];

/// Protocol 0 opcodes with values at the edges.
const TEXT_OPS: [&[u8]; 9] = [
    b"I9223372036854775808\n",
    b"I-9223372036854775809\n",
    b"I01\n",
    b"L99999999999999999999999L\n",
    b"F1e999\n",
    b"Vx\\u0000\n",
    b"S'x'\n",
    b"g4294967296\n",
    b"p99999999\n",
];

/// A new opcode with an argument chosen to hurt.
pub fn synth(rng: &mut Rng) -> Vec<u8> {
    match rng.below(16) {
        0 => with_le(op::LONG_BINPUT, 4, interesting(rng)),
        1 => with_le(op::LONG_BINGET, 4, interesting(rng)),
        2 => vec![*rng.pick(&[op::BINPUT, op::BINGET]), rng.byte()],
        3 => with_le(op::BININT, 4, interesting(rng)),
        4 => {
            // LONG1: 8 or 9 bytes, at and past the edges of i64.
            let k = rng.between(0, 10);
            let mut v = vec![op::LONG1, k as u8];
            let fill = *rng.pick(&[0x00, 0xff, 0x7f, 0x80]);
            v.extend(std::iter::repeat_n(fill, k));
            if k > 0 && rng.one_in(2) {
                v[1 + k] ^= 0x80;
            }
            v
        }
        5 => {
            let bits = *rng.pick(&[
                f64::NAN.to_bits(),
                f64::INFINITY.to_bits(),
                (-0.0f64).to_bits(),
                1e300f64.to_bits(),
                (i64::MAX as f64).to_bits(),
            ]);
            let mut v = vec![op::BINFLOAT];
            v.extend_from_slice(&bits.to_be_bytes());
            v
        }
        6 => with_le(op::FRAME, 8, interesting(rng)),
        7 => {
            // A declared length with too few or no payload bytes behind it.
            let (code, width) = *rng.pick(&[
                (op::BINUNICODE, 4),
                (op::BINUNICODE8, 8),
                (op::BINBYTES, 4),
                (op::BINBYTES8, 8),
                (op::BYTEARRAY8, 8),
                (op::LONG4, 4),
                (op::BINSTRING, 4),
            ]);
            let mut v = with_le(code, width, interesting(rng));
            v.extend((0..rng.below(4)).map(|_| b'x'));
            v
        }
        8..=10 => {
            let word = rng.pick(&WORDS).as_bytes();
            let mut v = vec![op::SHORT_BINUNICODE, word.len() as u8];
            v.extend_from_slice(word);
            if rng.one_in(2) {
                v.push(op::MEMOIZE);
            }
            v
        }
        11 => vec![op::PROTO, *rng.pick(&[0, 2, 4, 5, 6, 255])],
        12 => {
            // Unsafe opcodes must be refused, never run.
            rng.pick(&UNSAFE).to_vec()
        }
        13 => rng.pick(&TEXT_OPS).to_vec(),
        _ => vec![*rng.pick(&[
            op::MARK,
            op::POP,
            op::POP_MARK,
            op::DUP,
            op::NONE,
            op::NEWTRUE,
            op::EMPTY_LIST,
            op::EMPTY_DICT,
            op::EMPTY_TUPLE,
            op::EMPTY_SET,
            op::APPEND,
            op::APPENDS,
            op::SETITEM,
            op::SETITEMS,
            op::TUPLE1,
            op::TUPLE2,
            op::TUPLE3,
            op::TUPLE,
            op::LIST,
            op::DICT,
            op::ADDITEMS,
            op::FROZENSET,
            op::MEMOIZE,
            op::STOP,
        ])],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pickle_ops::scan;

    const SAMPLE: &[u8] =
        b"\x80\x04\x95\x11\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x01a\x94]\x94(K\x01M,\x01es.";

    #[test]
    fn mutants_respect_max_len_and_differ() {
        let ops = scan(SAMPLE);
        let seed = Seed {
            data: SAMPLE,
            ops: &ops,
        };
        let mut rng = Rng::new(1);
        let mut changed = 0;
        for _ in 0..5000 {
            let m = mutate(&mut rng, seed, seed, 64);
            assert!(m.len() <= 64);
            changed += usize::from(m != SAMPLE);
        }
        assert!(changed > 4500, "{changed}");
    }

    #[test]
    fn json_mutations_stay_mostly_json() {
        let doc = br#"{"segments": [], "device_traces": [[{"action": "alloc", "size": 512}]]}"#;
        assert!(looks_like_json(doc) && !looks_like_json(SAMPLE));
        let mut rng = Rng::new(9);
        let mut numbers = 0;
        for _ in 0..500 {
            let mut out = doc.to_vec();
            json_mutation(&mut rng, &mut out);
            assert!(out.len() >= 2);
            numbers += usize::from(!out.windows(3).any(|w| w == b"512"));
        }
        assert!(numbers > 50, "{numbers}");
    }

    #[test]
    fn sql_mutations_use_the_token_list_and_stay_text_mostly() {
        let base = b"SELECT count(*) FROM summary";
        let seed = Seed {
            data: base,
            ops: &[],
        };
        let mut rng = Rng::new(11);
        let (mut text, mut writes) = (0, 0);
        for _ in 0..1000 {
            let m = mutate_sql(&mut rng, seed, seed, 4096);
            text += usize::from(std::str::from_utf8(&m).is_ok());
            writes += usize::from(
                ["COPY", "INSERT", "CREATE", "SET "]
                    .iter()
                    .any(|w| m.windows(w.len()).any(|x| x == w.as_bytes())),
            );
        }
        assert!(text > 800, "{text}");
        assert!(writes > 100, "{writes}");
    }

    #[test]
    fn a_compressed_input_is_mutated_as_its_payload() {
        let packed = Packing::Gzip.pack(SAMPLE);
        let seed = Seed {
            data: &packed,
            ops: &[],
        };
        let mut rng = Rng::new(7);
        let mut intact = 0;
        for _ in 0..400 {
            let m = mutate(&mut rng, seed, seed, 1 << 20);
            let payload = Packing::Gzip.unpack(&m, 1 << 20);
            // A mutant that decompresses whole is a new payload packed again.
            let whole = Packing::Gzip.pack(&payload) == m;
            intact += usize::from(whole && payload != SAMPLE);
        }
        assert!(intact > 150, "{intact}");
    }

    #[test]
    fn empty_inputs_grow() {
        let mut rng = Rng::new(3);
        let empty = Seed {
            data: &[],
            ops: &[],
        };
        assert!(!mutate(&mut rng, empty, empty, 16).is_empty());
    }

    #[test]
    fn pickle_mutations_often_keep_the_stream_parseable() {
        let ops = scan(SAMPLE);
        let seed = Seed {
            data: SAMPLE,
            ops: &ops,
        };
        let mut rng = Rng::new(5);
        let parseable = (0..2000)
            .filter(|_| {
                let mut out = SAMPLE.to_vec();
                pickle_mutation(&mut rng, &mut out, &ops, seed);
                let scanned = scan(&out);
                scanned.last().is_some_and(|o| o.end == out.len())
            })
            .count();
        assert!(parseable > 800, "{parseable}");
    }
}
