//! The writing side: a streaming pickle protocol-4 writer that lays bytes out like CPython's C pickler
//! (`_pickle.c`): PROTO 4, FRAME chunks (a frame is committed at the start of an
//! object save once it holds >= 64 KiB), MEMOIZE after every str / container /
//! tuple, BINGET/LONG_BINGET for shared objects, batched APPENDS/SETITEMS (<= 1000
//! per MARK), single-element lists/dicts with APPEND/SETITEM.
//!
//! The writer never holds the object graph: the caller streams values in order and
//! declares container lengths up front (CPython's batching depends on the length).
//! Sharing is the caller's business: it keeps the memo index returned when an object
//! was first written and calls [`PickleWriter::get`] for later references.

use std::collections::HashMap;
use std::io::{self, Write};

// The opcodes from `op`, the decoder's table, so that each byte is named once.
use crate::op::{
    APPEND, APPENDS, BINBYTES, BINBYTES8, BINFLOAT, BINGET, BININT, BININT1, BININT2, BINUNICODE,
    BINUNICODE8, EMPTY_DICT, EMPTY_LIST, EMPTY_TUPLE, FRAME, LONG1, LONG4, LONG_BINGET, MARK,
    MEMOIZE, NEWFALSE, NEWTRUE, NONE, PROTO, SETITEM, SETITEMS, SHORT_BINBYTES, SHORT_BINUNICODE,
    STOP, TUPLE, TUPLE1, TUPLE2, TUPLE3,
};
use crate::{Arena, Node, NodeId, Val};

const FRAME_SIZE_TARGET: usize = 64 * 1024;
const FRAME_SIZE_MIN: usize = 4;
const BATCHSIZE: usize = 1000;

#[derive(Debug)]
struct Container {
    dict: bool,
    /// Tuples are built from their elements on the stack: no MARK batching.
    tuple: bool,
    len: usize,
    /// completed values (for dicts: keys and values both count)
    values: usize,
}

/// Streaming protocol-4 pickler.
pub struct PickleWriter<W: Write> {
    out: W,
    frame: Vec<u8>,
    memo_next: u32,
    written: u64,
    stack: Vec<Container>,
    /// CPython caches '' and 1-character latin-1 strings: such strings are always the
    /// same object, so they are memoized once and referenced afterwards.
    singleton_strs: HashMap<String, u32>,
}

impl<W: Write> PickleWriter<W> {
    /// Start a pickle: writes PROTO 4 and opens the first frame.
    pub fn new(mut out: W) -> io::Result<Self> {
        out.write_all(&[PROTO, 4])?;
        Ok(PickleWriter {
            out,
            frame: Vec::with_capacity(FRAME_SIZE_TARGET + 4096),
            memo_next: 0,
            written: 2,
            stack: Vec::new(),
            singleton_strs: HashMap::new(),
        })
    }

    /// Bytes emitted so far (committed frames plus the open frame).
    pub fn position(&self) -> u64 {
        self.written + self.frame.len() as u64
    }

    /// Number of memo entries created so far.
    pub fn memo_len(&self) -> u32 {
        self.memo_next
    }

    fn commit_frame(&mut self) -> io::Result<()> {
        let n = self.frame.len();
        if n >= FRAME_SIZE_MIN {
            let mut hdr = [0u8; 9];
            hdr[0] = FRAME;
            hdr[1..].copy_from_slice(&(n as u64).to_le_bytes());
            self.out.write_all(&hdr)?;
            self.written += 9;
        }
        self.out.write_all(&self.frame)?;
        self.written += n as u64;
        self.frame.clear();
        Ok(())
    }

    /// Called at the start of every object save (like CPython's save()).
    #[inline]
    fn begin_value(&mut self) -> io::Result<()> {
        if self.frame.len() >= FRAME_SIZE_TARGET {
            self.commit_frame()?;
        }
        Ok(())
    }

    /// Called after every completed object save: counts it in the enclosing
    /// container and emits batch boundaries.
    #[inline]
    fn end_value(&mut self) {
        let Some(top) = self.stack.last_mut() else {
            return;
        };
        top.values += 1;
        if top.tuple {
            return;
        }
        let items = if top.dict {
            if !top.values.is_multiple_of(2) {
                return;
            }
            top.values / 2
        } else {
            top.values
        };
        debug_assert!(items <= top.len, "container overflow");
        if top.len > 1 && items.is_multiple_of(BATCHSIZE) {
            let (dict, len) = (top.dict, top.len);
            self.frame.push(if dict { SETITEMS } else { APPENDS });
            // CPython's dict batching loops once more after a full batch, even when
            // it turns out empty; its list batching does not.
            if items < len || dict {
                self.frame.push(MARK);
            }
        }
    }

    /// `payload` behind the opcode for its size, as CPython picks: the three opcodes take a 1-,
    /// 4- and 8-byte little-endian length.
    fn sized(&mut self, payload: &[u8], [short, long, long8]: [u8; 3]) {
        let len = payload.len();
        if len < 256 {
            self.frame.push(short);
            self.frame.push(len as u8);
        } else if len <= u32::MAX as usize {
            self.frame.push(long);
            self.frame.extend_from_slice(&(len as u32).to_le_bytes());
        } else {
            self.frame.push(long8);
            self.frame.extend_from_slice(&(len as u64).to_le_bytes());
        }
        self.frame.extend_from_slice(payload);
    }

    fn memoize(&mut self) -> u32 {
        self.frame.push(MEMOIZE);
        let id = self.memo_next;
        self.memo_next += 1;
        id
    }

    fn write_get(&mut self, id: u32) {
        if id < 256 {
            self.frame.push(BINGET);
            self.frame.push(id as u8);
        } else {
            self.frame.push(LONG_BINGET);
            self.frame.extend_from_slice(&id.to_le_bytes());
        }
    }

    /// Reference an already memoized object.
    pub fn get(&mut self, id: u32) -> io::Result<()> {
        self.begin_value()?;
        self.write_get(id);
        self.end_value();
        Ok(())
    }

    pub fn int(&mut self, v: i64) -> io::Result<()> {
        self.begin_value()?;
        self.int_bytes(v);
        self.end_value();
        Ok(())
    }

    fn int_bytes(&mut self, v: i64) {
        if (0..=0xff).contains(&v) {
            self.frame.push(BININT1);
            self.frame.push(v as u8);
        } else if (0..=0xffff).contains(&v) {
            self.frame.push(BININT2);
            self.frame.extend_from_slice(&(v as u16).to_le_bytes());
        } else if i32::try_from(v).is_ok() {
            self.frame.push(BININT);
            self.frame.extend_from_slice(&(v as i32).to_le_bytes());
        } else {
            // LONG1: minimal little-endian two's complement, as pickle.encode_long
            let bytes = v.to_le_bytes();
            let mut n = 8;
            while n > 1 {
                let top = bytes[n - 1];
                let next_sign = bytes[n - 2] & 0x80;
                if (top == 0 && next_sign == 0) || (top == 0xff && next_sign != 0) {
                    n -= 1;
                } else {
                    break;
                }
            }
            self.frame.push(LONG1);
            self.frame.push(n as u8);
            self.frame.extend_from_slice(&bytes[..n]);
        }
    }

    pub fn bool(&mut self, v: bool) -> io::Result<()> {
        self.begin_value()?;
        self.frame.push(if v { NEWTRUE } else { NEWFALSE });
        self.end_value();
        Ok(())
    }

    pub fn float(&mut self, v: f64) -> io::Result<()> {
        self.begin_value()?;
        self.frame.push(BINFLOAT);
        self.frame.extend_from_slice(&v.to_be_bytes());
        self.end_value();
        Ok(())
    }

    fn is_singleton_str(s: &str) -> bool {
        let mut it = s.chars();
        match (it.next(), it.next()) {
            (None, _) => true,
            (Some(c), None) => (c as u32) < 256,
            _ => false,
        }
    }

    /// Write a fresh str object (memoized). Returns its memo index. Empty and
    /// 1-char latin-1 strings are CPython singletons and are shared automatically.
    pub fn str(&mut self, s: &str) -> io::Result<u32> {
        if Self::is_singleton_str(s) {
            if let Some(&id) = self.singleton_strs.get(s) {
                self.get(id)?;
                return Ok(id);
            }
        }
        self.begin_value()?;
        self.sized(s.as_bytes(), [SHORT_BINUNICODE, BINUNICODE, BINUNICODE8]);
        let id = self.memoize();
        if Self::is_singleton_str(s) {
            self.singleton_strs.insert(s.to_string(), id);
        }
        self.end_value();
        Ok(id)
    }

    /// Write a shared str: the first call writes and memoizes it, later calls emit a
    /// memo reference. `slot` holds the memo index between calls.
    pub fn shared_str(&mut self, slot: &mut Option<u32>, s: &str) -> io::Result<()> {
        match *slot {
            Some(id) => self.get(id),
            None => {
                *slot = Some(self.str(s)?);
                Ok(())
            }
        }
    }

    /// A fresh 2-tuple of ints (memoized after TUPLE2, like CPython).
    pub fn tuple2_int(&mut self, a: i64, b: i64) -> io::Result<u32> {
        self.begin_value()?;
        // the elements are saved (frame check included) inside the tuple's save
        self.begin_value()?;
        self.int_bytes(a);
        self.begin_value()?;
        self.int_bytes(b);
        self.frame.push(TUPLE2);
        let id = self.memoize();
        self.end_value();
        Ok(id)
    }

    fn begin_container(&mut self, dict: bool, len: usize) -> io::Result<u32> {
        self.begin_value()?;
        self.frame.push(if dict { EMPTY_DICT } else { EMPTY_LIST });
        let id = self.memoize();
        if len > 1 {
            self.frame.push(MARK);
        }
        self.stack.push(Container {
            dict,
            tuple: false,
            len,
            values: 0,
        });
        Ok(id)
    }

    /// Open a list of exactly `len` elements; returns its memo index.
    pub fn begin_list(&mut self, len: usize) -> io::Result<u32> {
        self.begin_container(false, len)
    }

    /// Open a dict of exactly `len` key/value pairs; returns its memo index.
    pub fn begin_dict(&mut self, len: usize) -> io::Result<u32> {
        self.begin_container(true, len)
    }

    /// Open a tuple of exactly `len` elements, closed by [`end_tuple`](Self::end_tuple)
    /// (CPython memoizes a tuple after its elements, not when it opens).
    pub fn begin_tuple(&mut self, len: usize) -> io::Result<()> {
        self.begin_value()?;
        if len > 3 {
            self.frame.push(MARK);
        }
        self.stack.push(Container {
            dict: false,
            tuple: true,
            len,
            values: 0,
        });
        Ok(())
    }

    pub fn none(&mut self) -> io::Result<()> {
        self.begin_value()?;
        self.frame.push(NONE);
        self.end_value();
        Ok(())
    }

    /// A `bytes` object (memoized). Returns its memo index.
    pub fn bytes(&mut self, b: &[u8]) -> io::Result<u32> {
        self.begin_value()?;
        self.sized(b, [SHORT_BINBYTES, BINBYTES, BINBYTES8]);
        let id = self.memoize();
        self.end_value();
        Ok(id)
    }

    /// An integer given as minimal little-endian two's complement (LONG1/LONG4), for values
    /// wider than `i64`.
    pub fn long_bytes(&mut self, le: &[u8]) -> io::Result<()> {
        self.begin_value()?;
        if le.len() < 256 {
            self.frame.push(LONG1);
            self.frame.push(le.len() as u8);
        } else {
            let n = i32::try_from(le.len())
                .map_err(|_| io::Error::other("integer too wide for LONG4"))?;
            self.frame.push(LONG4);
            self.frame.extend_from_slice(&n.to_le_bytes());
        }
        self.frame.extend_from_slice(le);
        self.end_value();
        Ok(())
    }

    /// Writes a decoded value as it was. Strings, bytes and containers are memoized per node
    /// in `shared`, so a value reached twice (PyTorch shares frame lists and dicts) is
    /// written once and referenced afterwards, as the pickler that made it did. Iterative:
    /// hostile nesting cannot overflow the stack.
    pub fn value(
        &mut self,
        arena: &Arena,
        v: Val,
        shared: &mut HashMap<NodeId, u32>,
    ) -> io::Result<()> {
        enum Task {
            Put(Val),
            /// Close a list/dict and remember its memo index under the node.
            Close(Option<(NodeId, u32)>),
            /// Close a tuple and memoize it under the node.
            CloseTuple(NodeId),
        }
        let mut tasks = vec![Task::Put(v)];
        while let Some(task) = tasks.pop() {
            let v = match task {
                Task::Put(v) => v,
                Task::Close(memo) => {
                    self.end()?;
                    if let Some((id, m)) = memo {
                        shared.insert(id, m);
                    }
                    continue;
                }
                Task::CloseTuple(id) => {
                    if let Some(m) = self.end_tuple()? {
                        shared.insert(id, m);
                    }
                    continue;
                }
            };
            let id = match v {
                Val::None => {
                    self.none()?;
                    continue;
                }
                Val::Bool(b) => {
                    self.bool(b)?;
                    continue;
                }
                Val::Int(i) => {
                    self.int(i)?;
                    continue;
                }
                Val::Float(f) => {
                    self.float(f)?;
                    continue;
                }
                Val::Handle(_) => {
                    return Err(io::Error::other(
                        "cannot write a container compacted by the decoder's sink",
                    ))
                }
                Val::Ref(id) => id,
            };
            if let Some(&m) = shared.get(&id) {
                self.get(m)?;
                continue;
            }
            match &arena[id] {
                Node::Str(s) => {
                    let m = self.str(s)?;
                    shared.insert(id, m);
                }
                Node::Bytes(b) => {
                    let m = self.bytes(b)?;
                    shared.insert(id, m);
                }
                Node::BigInt(le) => self.long_bytes(le)?,
                Node::List(items) => {
                    let m = self.begin_list(items.len())?;
                    tasks.push(Task::Close(Some((id, m))));
                    tasks.extend(items.iter().rev().map(|&v| Task::Put(v)));
                }
                Node::Dict(items) => {
                    let m = self.begin_dict(items.len())?;
                    tasks.push(Task::Close(Some((id, m))));
                    for &(k, v) in items.iter().rev() {
                        tasks.push(Task::Put(v));
                        tasks.push(Task::Put(k));
                    }
                }
                Node::Tuple(items) => {
                    self.begin_tuple(items.len())?;
                    tasks.push(Task::CloseTuple(id));
                    tasks.extend(items.iter().rev().map(|&v| Task::Put(v)));
                }
                other => {
                    return Err(io::Error::other(format!(
                        "cannot write a {} in a snapshot pickle",
                        other.type_name()
                    )))
                }
            }
        }
        Ok(())
    }

    /// Close the innermost tuple. Returns its memo index (the empty tuple is a singleton
    /// CPython does not memoize).
    pub fn end_tuple(&mut self) -> io::Result<Option<u32>> {
        let c = self.stack.pop().expect("end_tuple() without open tuple");
        if !c.tuple || c.values != c.len {
            return Err(io::Error::other(format!(
                "pickle tuple declared {} items but got {}",
                c.len, c.values
            )));
        }
        let memo = if c.len == 0 {
            self.frame.push(EMPTY_TUPLE);
            None
        } else {
            self.frame.push(match c.len {
                1 => TUPLE1,
                2 => TUPLE2,
                3 => TUPLE3,
                _ => TUPLE,
            });
            Some(self.memoize())
        };
        self.end_value();
        Ok(memo)
    }

    /// Close the innermost list or dict.
    pub fn end(&mut self) -> io::Result<()> {
        let c = self.stack.pop().expect("end() without open container");
        if c.tuple {
            return Err(io::Error::other("end() on a tuple; use end_tuple()"));
        }
        let items = if c.dict { c.values / 2 } else { c.values };
        if items != c.len || (c.dict && !c.values.is_multiple_of(2)) {
            return Err(io::Error::other(format!(
                "pickle container declared {} items but got {} values",
                c.len, c.values
            )));
        }
        if c.len == 1 {
            self.frame.push(if c.dict { SETITEM } else { APPEND });
        } else if c.len > 1 && (c.dict || !c.len.is_multiple_of(BATCHSIZE)) {
            self.frame.push(if c.dict { SETITEMS } else { APPENDS });
        }
        self.end_value();
        Ok(())
    }

    /// Write STOP, commit the last frame and flush. Returns the sink and total bytes.
    pub fn finish(mut self) -> io::Result<(W, u64)> {
        if !self.stack.is_empty() {
            return Err(io::Error::other("finish() with open containers"));
        }
        self.frame.push(STOP);
        self.commit_frame()?;
        self.out.flush()?;
        Ok((self.out, self.written))
    }
}

/// One whole pickle in memory: the header, what `write` streams, STOP.
pub fn to_vec(
    write: impl FnOnce(&mut PickleWriter<Vec<u8>>) -> io::Result<()>,
) -> io::Result<Vec<u8>> {
    let mut w = PickleWriter::new(Vec::new())?;
    write(&mut w)?;
    Ok(w.finish()?.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dumps(f: impl FnOnce(&mut PickleWriter<Vec<u8>>) -> io::Result<()>) -> Vec<u8> {
        to_vec(f).unwrap()
    }

    #[test]
    fn tiny_dict_matches_cpython() {
        // python3 -c 'import pickle; print(pickle.dumps({"a": 1}, 4))'
        let got = dumps(|w| {
            w.begin_dict(1)?;
            w.str("a")?;
            w.int(1)?;
            w.end()
        });
        assert_eq!(
            got,
            b"\x80\x04\x95\n\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x01a\x94K\x01s."
        );
    }

    #[test]
    fn decoded_value_is_written_back_as_cpython_wrote_it() {
        // l = ["x"]; pickle.dumps({"a": l, "b": l, "t": (1, 2**70, None, -1.5), "u": ("s",)}, 4)
        let original: &[u8] = b"\x80\x04\x95>\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01a\x94]\x94\x8c\x01x\x94a\x8c\x01b\x94h\x02\x8c\x01t\x94(K\x01\x8a\t\x00\x00\x00\x00\x00\x00\x00\x00@NG\xbf\xf8\x00\x00\x00\x00\x00\x00t\x94\x8c\x01u\x94\x8c\x01s\x94\x85\x94u.";
        let decoded = crate::from_slice(original).unwrap();
        let got = dumps(|w| w.value(&decoded.arena, decoded.root, &mut HashMap::new()));
        assert_eq!(got, original);
    }

    #[test]
    fn written_values_decode_to_the_same_values() {
        let path = pt_snap_testkit::repo_root().join("fixtures/synthetic/synth_small_2dev.pkl");
        let bytes = std::fs::read(path).unwrap();
        let a = crate::from_slice(&bytes).unwrap();
        let written = dumps(|w| w.value(&a.arena, a.root, &mut HashMap::new()));
        let b = crate::from_slice(&written).unwrap();
        assert!(same(&a.arena, a.root, &b.arena, b.root));
    }

    /// Structural equality of two decoded values (fixtures nest a few levels only).
    fn same(aa: &Arena, a: Val, ba: &Arena, b: Val) -> bool {
        match (a, b) {
            (Val::Ref(x), Val::Ref(y)) => match (&aa[x], &ba[y]) {
                (Node::List(l), Node::List(m)) => {
                    l.len() == m.len() && l.iter().zip(m).all(|(p, q)| same(aa, *p, ba, *q))
                }
                (Node::Tuple(l), Node::Tuple(m)) => {
                    l.len() == m.len() && l.iter().zip(m).all(|(p, q)| same(aa, *p, ba, *q))
                }
                (Node::Dict(l), Node::Dict(m)) => {
                    l.len() == m.len()
                        && l.iter()
                            .zip(m)
                            .all(|(p, q)| same(aa, p.0, ba, q.0) && same(aa, p.1, ba, q.1))
                }
                (x, y) => x == y,
            },
            (x, y) => x == y,
        }
    }

    #[test]
    fn empty_list_has_no_frame() {
        // pickle.dumps([], 4)
        let got = dumps(|w| {
            w.begin_list(0)?;
            w.end()
        });
        assert_eq!(got, b"\x80\x04]\x94.");
    }
}
