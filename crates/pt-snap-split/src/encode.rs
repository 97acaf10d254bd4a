//! A slice written out: pickle protocol 4, or canonical JSON (spec §10.1).
//!
//! Both encoders walk the same slice: constructed segment and block dicts (the reference's
//! `Segment.to_dict`/`Block.to_dict` keys), then the events, each the source's own dict with
//! an explicit `id`. Values that come from the source (event dicts, frame lists) are written
//! as decoded, so whatever keys PyTorch put there survive.

use std::collections::HashMap;
use std::io;

use pt_snap_pickle::write::PickleWriter;
use pt_snap_pickle::{Arena, Node, NodeId, Val};

use crate::state::{Blk, Frames, Seg};

/// What a slice holds, borrowed from the split in progress.
pub(crate) struct SliceView<'s, 'a> {
    pub arena: &'a Arena,
    pub device: usize,
    pub segs: &'s [Seg<'a>],
    /// `(event dict, id)` in chronological order.
    pub events: &'s [(NodeId, i64)],
}

/// A constructed field value.
enum F<'x> {
    Int(i64),
    Bool(bool),
    Str(&'x str),
    Frames(Frames),
    Blocks(&'x [Blk]),
}

/// The reference's `Segment.to_dict` keys, in its order.
fn segment_fields<'x>(s: &'x Seg<'_>, device: usize) -> [(&'static str, F<'x>); 10] {
    [
        ("address", F::Int(s.address)),
        ("total_size", F::Int(s.total_size)),
        ("stream", F::Int(s.stream)),
        ("segment_type", F::Str(s.segment_type)),
        ("allocated_size", F::Int(s.allocated_size)),
        ("active_size", F::Int(s.active_size)),
        ("device", F::Int(device as i64)),
        ("is_expandable", F::Bool(s.is_expandable)),
        ("frames", F::Frames(s.frames)),
        ("blocks", F::Blocks(&s.blocks)),
    ]
}

/// The reference's `Block.to_dict` keys, in its order.
fn block_fields(b: &Blk) -> [(&'static str, F<'static>); 5] {
    [
        ("size", F::Int(b.size)),
        ("requested_size", F::Int(b.requested_size)),
        ("address", F::Int(b.address)),
        ("state", F::Str(b.state.name())),
        ("frames", F::Frames(b.frames)),
    ]
}

/// The value of string key `key` in a dict's items: the last one, as in a Python dict.
pub(crate) fn dict_get(arena: &Arena, items: &[(Val, Val)], key: &str) -> Option<Val> {
    items
        .iter()
        .rev()
        .find(|(k, _)| arena.as_str(*k) == Some(key))
        .map(|&(_, v)| v)
}

/// An event dict as `dict(origin)` plus `id` has it: each key once, at its first position
/// with its last value, and `id` replaced in place or appended.
fn event_items(arena: &Arena, node: NodeId, id: i64) -> Vec<(Val, EventVal)> {
    let Node::Dict(items) = &arena[node] else {
        unreachable!("event records are dicts (checked when the source was read)")
    };
    let mut out: Vec<(Val, EventVal)> = Vec::with_capacity(items.len() + 1);
    for &(k, v) in items {
        let same = |o: &(Val, EventVal)| match (arena.as_str(o.0), arena.as_str(k)) {
            (Some(a), Some(b)) => a == b,
            _ => o.0 == k,
        };
        match out.iter_mut().find(|o| same(o)) {
            Some(slot) => slot.1 = EventVal::Raw(v),
            None => out.push((k, EventVal::Raw(v))),
        }
    }
    match out.iter_mut().find(|o| arena.as_str(o.0) == Some("id")) {
        Some(slot) => slot.1 = EventVal::Id(id),
        None => out.push((Val::None, EventVal::Id(id))),
    }
    out
}

/// A value of an event dict; the key of an appended `id` is `Val::None` (it has no node).
#[derive(Clone, Copy)]
enum EventVal {
    Raw(Val),
    Id(i64),
}

/// The slice as a protocol-4 pickle.
pub(crate) fn pickle(slice: &SliceView<'_, '_>) -> io::Result<Vec<u8>> {
    let mut w = PickleWriter::new(Vec::new())?;
    let mut shared: HashMap<NodeId, u32> = HashMap::new();
    let mut strs: HashMap<&str, u32> = HashMap::new();
    let arena = slice.arena;

    fn put_str<'k>(
        w: &mut PickleWriter<Vec<u8>>,
        strs: &mut HashMap<&'k str, u32>,
        s: &'k str,
    ) -> io::Result<()> {
        match strs.get(s) {
            Some(&m) => w.get(m),
            None => {
                let m = w.str(s)?;
                strs.insert(s, m);
                Ok(())
            }
        }
    }

    fn put_frames(
        w: &mut PickleWriter<Vec<u8>>,
        arena: &Arena,
        shared: &mut HashMap<NodeId, u32>,
        f: Frames,
    ) -> io::Result<()> {
        match f {
            Some(v) => w.value(arena, v, shared),
            None => {
                w.begin_list(0)?;
                w.end()
            }
        }
    }

    w.begin_dict(2)?;
    put_str(&mut w, &mut strs, "segments")?;
    w.begin_list(slice.segs.len())?;
    for seg in slice.segs {
        w.begin_dict(10)?;
        for (k, f) in segment_fields(seg, slice.device) {
            put_str(&mut w, &mut strs, k)?;
            match f {
                F::Int(i) => w.int(i)?,
                F::Bool(b) => w.bool(b)?,
                F::Str(s) => put_str(&mut w, &mut strs, s)?,
                F::Frames(f) => put_frames(&mut w, arena, &mut shared, f)?,
                F::Blocks(blocks) => {
                    w.begin_list(blocks.len())?;
                    for b in blocks {
                        w.begin_dict(5)?;
                        for (k, f) in block_fields(b) {
                            put_str(&mut w, &mut strs, k)?;
                            match f {
                                F::Int(i) => w.int(i)?,
                                F::Str(s) => put_str(&mut w, &mut strs, s)?,
                                F::Frames(f) => put_frames(&mut w, arena, &mut shared, f)?,
                                F::Bool(_) | F::Blocks(_) => unreachable!("not a block field"),
                            }
                        }
                        w.end()?;
                    }
                    w.end()?;
                }
            }
        }
        w.end()?;
    }
    w.end()?;
    put_str(&mut w, &mut strs, "device_traces")?;
    w.begin_list(slice.device + 1)?;
    for _ in 0..slice.device {
        w.begin_list(0)?;
        w.end()?;
    }
    w.begin_list(slice.events.len())?;
    for &(node, id) in slice.events {
        let items = event_items(arena, node, id);
        w.begin_dict(items.len())?;
        for (k, v) in items {
            match v {
                EventVal::Id(id) => {
                    if k == Val::None {
                        put_str(&mut w, &mut strs, "id")?;
                    } else {
                        w.value(arena, k, &mut shared)?;
                    }
                    w.int(id)?;
                }
                EventVal::Raw(v) => {
                    w.value(arena, k, &mut shared)?;
                    w.value(arena, v, &mut shared)?;
                }
            }
        }
        w.end()?;
    }
    w.end()?;
    w.end()?;
    w.end()?;
    Ok(w.finish()?.0)
}

/// Why a slice has no canonical JSON form (the reference's `canonicalize_snapshot` errors).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct JsonError(pub String);

/// The slice as canonical JSON: UTF-8, keys sorted, `,`/`:` separators, no NaN, floats
/// spelled as Python's `repr` (the reference's `canonical_snapshot_bytes`).
pub(crate) fn json(slice: &SliceView<'_, '_>) -> Result<Vec<u8>, JsonError> {
    let arena = slice.arena;
    let mut out = Vec::new();
    out.extend_from_slice(b"{\"device_traces\":[");
    for _ in 0..slice.device {
        out.extend_from_slice(b"[],");
    }
    out.push(b'[');
    for (i, &(node, id)) in slice.events.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let mut items = Vec::new();
        for (k, v) in event_items(arena, node, id) {
            let key = if k == Val::None {
                "id"
            } else {
                arena.as_str(k).ok_or_else(non_str_key)?
            };
            items.push((key, v));
        }
        items.sort_by(|a, b| a.0.cmp(b.0));
        out.push(b'{');
        for (j, (k, v)) in items.into_iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            write_str(&mut out, k);
            out.push(b':');
            match v {
                EventVal::Id(id) => out.extend_from_slice(id.to_string().as_bytes()),
                EventVal::Raw(v) => write_value(&mut out, arena, v)?,
            }
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"]],\"segments\":[");
    for (i, seg) in slice.segs.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let mut fields = segment_fields(seg, slice.device);
        fields.sort_by(|a, b| a.0.cmp(b.0));
        write_fields(&mut out, arena, &fields)?;
    }
    out.extend_from_slice(b"]}");
    Ok(out)
}

fn write_fields(
    out: &mut Vec<u8>,
    arena: &Arena,
    fields: &[(&str, F<'_>)],
) -> Result<(), JsonError> {
    out.push(b'{');
    for (j, (k, f)) in fields.iter().enumerate() {
        if j > 0 {
            out.push(b',');
        }
        write_str(out, k);
        out.push(b':');
        match f {
            F::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
            F::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            F::Str(s) => write_str(out, s),
            F::Frames(Some(v)) => write_value(out, arena, *v)?,
            F::Frames(None) => out.extend_from_slice(b"[]"),
            F::Blocks(blocks) => {
                out.push(b'[');
                for (i, b) in blocks.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    let mut fields = block_fields(b);
                    fields.sort_by(|a, b| a.0.cmp(b.0));
                    write_fields(out, arena, &fields)?;
                }
                out.push(b']');
            }
        }
    }
    out.push(b'}');
    Ok(())
}

fn non_str_key() -> JsonError {
    JsonError("Canonical snapshots require string dictionary keys.".into())
}

/// Writes a decoded value as canonical JSON. Iterative: hostile nesting cannot overflow the
/// stack.
pub fn write_value(out: &mut Vec<u8>, arena: &Arena, v: Val) -> Result<(), JsonError> {
    enum Task<'x> {
        Put(Val),
        Raw(&'x [u8]),
        Key(&'x str),
    }
    let mut tasks = vec![Task::Put(v)];
    while let Some(task) = tasks.pop() {
        let v = match task {
            Task::Raw(b) => {
                out.extend_from_slice(b);
                continue;
            }
            Task::Key(k) => {
                write_str(out, k);
                out.push(b':');
                continue;
            }
            Task::Put(v) => v,
        };
        match arena.resolve(v) {
            Val::None => out.extend_from_slice(b"null"),
            Val::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
            Val::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
            Val::Float(f) => out.extend_from_slice(python_float(f)?.as_bytes()),
            Val::Handle(_) => {
                return Err(JsonError("a compacted container cannot be written".into()))
            }
            Val::Ref(id) => match &arena[id] {
                Node::Str(s) => write_str(out, s),
                Node::BigInt(le) => out.extend_from_slice(big_int(le)?.as_bytes()),
                Node::List(_) | Node::Tuple(_) => {
                    let items: &[Val] = match &arena[id] {
                        Node::List(l) => l,
                        Node::Tuple(t) => t,
                        _ => unreachable!(),
                    };
                    out.push(b'[');
                    tasks.push(Task::Raw(b"]"));
                    for (i, &item) in items.iter().enumerate().rev() {
                        tasks.push(Task::Put(item));
                        if i > 0 {
                            tasks.push(Task::Raw(b","));
                        }
                    }
                }
                Node::Dict(items) => {
                    // Python keeps each key once (first position, last value); sorted output
                    // makes the position moot.
                    let mut entries: Vec<(&str, Val)> = Vec::with_capacity(items.len());
                    for &(k, v) in items {
                        let k = arena.as_str(k).ok_or_else(non_str_key)?;
                        entries.push((k, v));
                    }
                    entries.sort_by(|a, b| a.0.cmp(b.0));
                    // Stable sort: of equal keys the last written is last; keep that one.
                    let mut dedup: Vec<(&str, Val)> = Vec::with_capacity(entries.len());
                    for e in entries {
                        match dedup.last_mut() {
                            Some(last) if last.0 == e.0 => *last = e,
                            _ => dedup.push(e),
                        }
                    }
                    out.push(b'{');
                    tasks.push(Task::Raw(b"}"));
                    for (i, &(k, v)) in dedup.iter().enumerate().rev() {
                        tasks.push(Task::Put(v));
                        tasks.push(Task::Key(k));
                        if i > 0 {
                            tasks.push(Task::Raw(b","));
                        }
                    }
                }
                other => {
                    return Err(JsonError(format!(
                        "Canonical snapshots do not support {} values.",
                        other.type_name()
                    )))
                }
            },
        }
    }
    Ok(())
}

/// Python's `json.dumps` string with `ensure_ascii=False`.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&s.as_bytes()[start..i]);
        if esc.is_empty() {
            out.extend_from_slice(format!("\\u{b:04x}").as_bytes());
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(&s.as_bytes()[start..]);
    out.push(b'"');
}

/// `repr(float)`, refusing what canonical JSON cannot hold.
pub fn python_float(f: f64) -> Result<String, JsonError> {
    if !f.is_finite() {
        return Err(JsonError(
            "Canonical snapshots do not support non-finite floats.".into(),
        ));
    }
    Ok(pt_snap_contract::python::float_repr(f))
}

/// A LONG1 payload (minimal little-endian two's complement) in decimal.
fn big_int(le: &[u8]) -> Result<String, JsonError> {
    if le.len() > 16 {
        return Err(JsonError(format!(
            "integer of {} bytes is too wide to write",
            le.len()
        )));
    }
    let fill = if le.last().is_some_and(|b| b & 0x80 != 0) {
        0xff
    } else {
        0
    };
    let mut buf = [fill; 16];
    buf[..le.len()].copy_from_slice(le);
    Ok(i128::from_le_bytes(buf).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_are_spelled_like_python_repr() {
        for (f, py) in [
            (1.0, "1.0"),
            (-0.0, "-0.0"),
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123456.789, "123456.789"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
        ] {
            assert_eq!(python_float(f).unwrap(), py, "{f:e}");
        }
        assert!(python_float(f64::NAN).is_err());
    }

    #[test]
    fn strings_are_escaped_like_json_dumps_without_ensure_ascii() {
        let mut out = Vec::new();
        write_str(&mut out, "a\"b\\c\n\u{1}\u{7f}é→");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"a\\\"b\\\\c\\n\\u0001\u{7f}é→\""
        );
    }

    #[test]
    fn wide_integers_in_decimal() {
        // LONG1 payload of 2**70 and of -(2**64)
        assert_eq!(
            big_int(&[0, 0, 0, 0, 0, 0, 0, 0, 0x40]).unwrap(),
            "1180591620717411303424"
        );
        assert_eq!(
            big_int(&[0, 0, 0, 0, 0, 0, 0, 0, 0xff]).unwrap(),
            "-18446744073709551616"
        );
    }
}
