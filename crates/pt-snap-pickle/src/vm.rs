//! The pickle virtual machine: an iterative stack machine over the opcode stream.

use std::borrow::Cow;
use std::cell::Cell;
use std::io::Read;
use std::rc::Rc;

use foldhash::HashMap;

use crate::memo::{Memo, MAX_NODE};
use crate::op;
use crate::source::Source;
use crate::text::{self, Int};
use crate::value::{Arena, Handle, Node, NodeId, Val};
use crate::{Error, Limits, Pickle, Sink};

/// Live objects the decoder holds before the input has to justify them (small files) …
const NODES_BEFORE_INPUT: usize = 1 << 20;
/// … and past that, at most one per this many bytes read. Real snapshots decoded whole
/// (`KeepAll`) hold one node per 16–165 bytes; an empty dict costs the input one byte and the
/// arena 40, which is how 68 MB of `}` used to reach 3.6 GB.
const INPUT_BYTES_PER_NODE: u64 = 4;

/// Opcodes per [`Machine::run_batch`] call: a few hundred microseconds of decoding.
const BATCH: u32 = 1 << 16;

pub(crate) struct Machine<'a, R, S: ?Sized> {
    src: Source<R>,
    sink: &'a mut S,
    limits: Limits,
    arena: Arena,
    stack: Vec<Val>,
    /// Stack heights at each open MARK.
    marks: Vec<usize>,
    memo: Memo,
    /// Equal strings share one node. Frame filenames and names repeat millions of times
    /// as distinct objects in some writers; sharing keeps them from filling the arena.
    /// foldhash: several times faster than SipHash on these short keys, and still seeded
    /// per process, so a hostile pickle cannot precompute colliding strings.
    strings: HashMap<Box<str>, NodeId>,
    /// Offset of the opcode being executed, for error messages.
    at: u64,
    /// Where progress is counted when the opcodes are made from another input (JSON): the
    /// bytes of that input consumed so far.
    input_position: Option<Rc<Cell<u64>>>,
    /// The innermost protocol-4 FRAME: where it starts and the offset its declared length
    /// ends at.
    frame: Option<(u64, u64)>,
}

impl<'a, R: Read, S: Sink + ?Sized> Machine<'a, R, S> {
    pub fn new(reader: R, sink: &'a mut S, limits: &Limits) -> Self {
        Machine {
            src: Source::new(reader, limits.max_len),
            sink,
            limits: limits.clone(),
            arena: Arena::default(),
            stack: Vec::new(),
            marks: Vec::new(),
            memo: Memo::default(),
            strings: HashMap::default(),
            at: 0,
            input_position: None,
            frame: None,
        }
    }

    /// Reports progress in bytes of the input that `reader` transcodes, read from `position`.
    pub fn with_input_position(mut self, position: Rc<Cell<u64>>) -> Self {
        self.input_position = Some(position);
        self
    }

    pub fn run(mut self) -> Result<Pickle, Error> {
        while !self.run_batch()? {}
        let root = self.pop()?;
        let root = self.arena.resolve(root);
        let bytes_read = self.src.offset();
        self.check_frame_complete()?;
        Ok(Pickle {
            bytes_read,
            arena: self.arena,
            root,
        })
    }

    /// Runs up to [`BATCH`] opcodes; `true` once STOP is reached. The batches are for V8: a
    /// wasm call runs to its end in the code it started in, so one call looping over the
    /// whole file ran almost all of a decode in the baseline (Liftoff) code, which V8 starts
    /// with, instead of the optimized code it compiles meanwhile (the 109 MB benchmark
    /// decoded in 1.63 s instead of 1.39 s in node). Natively the call per batch is free.
    #[inline(never)]
    fn run_batch(&mut self) -> Result<bool, Error> {
        for _ in 0..BATCH {
            if self.src.take_refilled() {
                let read = match &self.input_position {
                    Some(p) => p.get(),
                    None => self.src.offset(),
                };
                self.sink.progress(read);
            }
            self.at = self.src.offset();
            let Some(code) = self.src.next_byte()? else {
                return Err(if self.at == 0 {
                    Error::malformed(0, "empty input: not a pickle")
                } else {
                    Error::malformed(self.at, "pickle data was truncated (no STOP opcode)")
                });
            };
            if code == op::STOP {
                return Ok(true);
            }
            self.step(code)?;
        }
        Ok(false)
    }

    /// After STOP: the bytes the last FRAME declared must all be there, as CPython requires.
    fn check_frame_complete(&mut self) -> Result<(), Error> {
        let Some((at, end)) = self.frame else {
            return Ok(());
        };
        let here = self.src.offset();
        if end > here && !self.src.skip(end - here)? {
            return Err(Error::malformed(
                at,
                format!(
                    "pickle data was truncated: the FRAME here declares {} bytes, the input ends at byte {}",
                    end - at - 9,
                    self.src.offset()
                ),
            ));
        }
        Ok(())
    }

    fn err(&self, message: impl Into<String>) -> Error {
        Error::malformed(self.at, message)
    }

    /// The opcodes that make up snapshots, inlined into the loop; the rest are out of line,
    /// which keeps the loop small for V8 to optimize early (see [`Machine::run_batch`]).
    #[inline(always)]
    fn step(&mut self, code: u8) -> Result<(), Error> {
        // Opcodes that push one value yield it, pushed at one place below; keeping a single
        // copy of the push keeps the loop small.
        let v = match code {
            op::BINGET => {
                let idx = self.src.byte()?;
                self.memo_val(idx.into())?
            }
            op::LONG_BINGET => {
                let idx = u32::from_le_bytes(self.src.array()?);
                self.memo_val(idx)?
            }
            op::BININT => Val::Int(i32::from_le_bytes(self.src.array()?).into()),
            op::BININT1 => Val::Int(self.src.byte()?.into()),
            op::BININT2 => Val::Int(u16::from_le_bytes(self.src.array()?).into()),
            op::LONG1 => {
                let n = self.src.byte()?;
                match self.src.small_int(n) {
                    Some(v) => Val::Int(v),
                    None => return self.long(n.into()),
                }
            }
            op::NONE => Val::None,
            op::NEWTRUE => Val::Bool(true),
            op::NEWFALSE => Val::Bool(false),
            op::BINFLOAT => Val::Float(f64::from_be_bytes(self.src.array()?)),
            op::MARK => {
                self.check_room()?;
                self.marks.push(self.stack.len());
                return Ok(());
            }
            op::MEMOIZE => {
                let idx = u32::try_from(self.memo.len()).map_err(|_| self.err("memo is full"))?;
                return self.memo_put(idx);
            }
            op::BINPUT => {
                let idx = self.src.byte()?;
                return self.memo_put(idx.into());
            }
            op::LONG_BINPUT => {
                let idx = u32::from_le_bytes(self.src.array()?);
                return self.memo_put(idx);
            }
            op::SHORT_BINUNICODE => {
                let n = self.src.byte()?;
                return self.unicode(n.into());
            }
            op::BINUNICODE => {
                let n = u32::from_le_bytes(self.src.array()?);
                return self.unicode(n.into());
            }
            op::EMPTY_LIST => {
                let list = self.arena.new_list();
                return self.push_node(list);
            }
            op::EMPTY_DICT => {
                let dict = self.arena.new_dict();
                return self.push_node(dict);
            }
            op::APPEND => {
                let from = self.above_floor(1)?;
                return self.extend_list(from);
            }
            op::APPENDS => {
                let from = self.take_mark()?;
                return self.extend_list(from);
            }
            op::SETITEM => {
                let from = self.above_floor(2)?;
                return self.extend_dict(from);
            }
            op::SETITEMS => {
                let from = self.take_mark()?;
                return self.extend_dict(from);
            }
            _ => {
                // Through a pointer the optimizers cannot see through: `wasm-opt -O3` inlines
                // a function that has a single caller (up to the size `www/index.html` sets),
                // and this one would double the loop, which V8 then takes twice as long to
                // optimize (node: 107 ms instead of 52 ms) while the decode runs in its
                // baseline code.
                let rare: fn(&mut Self, u8) -> Result<(), Error> = Self::step_rare;
                return std::hint::black_box(rare)(self, code);
            }
        };
        self.push(v)
    }

    #[inline(never)]
    fn step_rare(&mut self, code: u8) -> Result<(), Error> {
        match code {
            op::EMPTY_TUPLE => self.push_node(Node::Tuple(Box::new([])))?,
            op::TUPLE1 | op::TUPLE2 | op::TUPLE3 => {
                let n = usize::from(code - op::TUPLE1 + 1);
                if self.stack.len() < self.floor() + n {
                    return Err(self.err("stack underflow building a tuple"));
                }
                let items = self.stack.split_off(self.stack.len() - n);
                let items = self.attach_all(items);
                self.push_node(Node::Tuple(items.into()))?;
            }
            op::PROTO => {
                let v = self.src.byte()?;
                if v > 5 {
                    return Err(self.err(format!("unsupported pickle protocol: {v}")));
                }
            }
            op::FRAME => {
                // Frames only group opcodes for buffered writers, so reading straight through
                // decodes the same values; but CPython reads each frame whole and refuses a
                // pickle whose frame is cut short, and so do we (checked at STOP).
                let len = u64::from_le_bytes(self.src.array()?);
                if len > i64::MAX as u64 {
                    return Err(self.err(format!("FRAME length {len} exceeds sys.maxsize")));
                }
                let start = self.src.offset();
                self.frame = Some((self.at, start.saturating_add(len)));
            }
            op::POP => {
                if self.stack.len() > self.floor() {
                    self.stack.pop();
                } else {
                    self.pop_mark()?;
                }
            }
            op::POP_MARK => {
                self.pop_mark()?;
            }
            op::DUP => {
                let v = self.top()?;
                self.note_copy(v);
                self.push(v)?;
            }
            op::LONG4 => {
                let n = i32::from_le_bytes(self.src.array()?);
                let n =
                    u64::try_from(n).map_err(|_| self.err("LONG4 has a negative byte count"))?;
                self.long(n)?;
            }
            op::INT => {
                let line = self.src.line()?;
                // Protocol 0 spells booleans as INT 00 / 01.
                let parsed = match &*line {
                    b"00" => Ok(Err(false)),
                    b"01" => Ok(Err(true)),
                    l => text::parse_decimal(l).map(Ok),
                };
                match parsed.map_err(|m| Error::malformed(self.at, m))? {
                    Ok(i) => self.push_int(i)?,
                    Err(b) => self.push(Val::Bool(b))?,
                }
            }
            op::LONG => {
                let line = self.src.line()?;
                let v = text::parse_decimal(&line).map_err(|m| Error::malformed(self.at, m))?;
                self.push_int(v)?;
            }
            op::FLOAT => {
                let line = self.src.line()?;
                let v = text::parse_float(&line).map_err(|m| Error::malformed(self.at, m))?;
                self.push(Val::Float(v))?;
            }
            op::BINUNICODE8 => {
                let n = u64::from_le_bytes(self.src.array()?);
                self.unicode(n)?;
            }
            op::UNICODE => {
                let line = self.src.line()?;
                let s =
                    text::raw_unicode_escape(&line).map_err(|m| Error::malformed(self.at, m))?;
                self.push_str(&s)?;
            }
            op::SHORT_BINSTRING => {
                let n = self.src.byte()?;
                let b = self.src.bytes(n.into())?.into_owned();
                self.py2_str(&b)?;
            }
            op::BINSTRING => {
                let n = i32::from_le_bytes(self.src.array()?);
                let n = u64::try_from(n)
                    .map_err(|_| self.err("BINSTRING has a negative byte count"))?;
                let b = self.src.bytes(n)?.into_owned();
                self.py2_str(&b)?;
            }
            op::STRING => {
                let line = self.src.line()?;
                let b = text::unescape_string(&line).map_err(|m| Error::malformed(self.at, m))?;
                self.py2_str(&b)?;
            }
            op::SHORT_BINBYTES => {
                let n = self.src.byte()?;
                self.bytes(n.into(), false)?;
            }
            op::BINBYTES => {
                let n = u32::from_le_bytes(self.src.array()?);
                self.bytes(n.into(), false)?;
            }
            op::BINBYTES8 => {
                let n = u64::from_le_bytes(self.src.array()?);
                self.bytes(n, false)?;
            }
            op::BYTEARRAY8 => {
                let n = u64::from_le_bytes(self.src.array()?);
                self.bytes(n, true)?;
            }
            op::EMPTY_SET => self.push_node(Node::Set(Vec::new()))?,
            op::TUPLE => {
                let items = self.pop_mark()?;
                let items = self.attach_all(items);
                self.push_node(Node::Tuple(items.into()))?;
            }
            op::LIST => {
                let items = self.pop_mark()?;
                let items = self.attach_all(items);
                self.push_node(Node::List(items))?;
            }
            op::DICT => {
                let items = self.pop_mark()?;
                let pairs = self.pairs(items)?;
                self.push_node(Node::Dict(pairs))?;
            }
            op::FROZENSET => {
                let items = self.pop_mark()?;
                let items = self.attach_all(items);
                self.push_node(Node::FrozenSet(items.into()))?;
            }
            op::ADDITEMS => {
                let items = self.pop_mark()?;
                let set = self.container_on_top("ADDITEMS")?;
                let items = self.attach_all(items);
                match self.arena.get_mut(set) {
                    Node::Set(s) => s.extend(items),
                    other => {
                        let t = other.type_name();
                        return Err(self.err(format!("ADDITEMS on a {t}, expected a set")));
                    }
                }
            }
            op::PUT => {
                let idx = self.text_index()?;
                self.memo_put(idx)?;
            }
            op::GET => {
                let idx = self.text_index()?;
                let v = self.memo_val(idx)?;
                self.push(v)?;
            }
            op::GLOBAL | op::INST => {
                let module = String::from_utf8_lossy(&self.src.line()?).into_owned();
                let name = String::from_utf8_lossy(&self.src.line()?).into_owned();
                return Err(Error::global(&module, &name));
            }
            op::STACK_GLOBAL => {
                // Refused whatever the operands; they only improve the message.
                let n = self.stack.len();
                let names = (n >= self.floor() + 2).then(|| {
                    (
                        self.arena.as_str(self.stack[n - 2]),
                        self.arena.as_str(self.stack[n - 1]),
                    )
                });
                return Err(match names {
                    Some((Some(m), Some(n))) => Error::global(m, n),
                    _ => Error::opcode("STACK_GLOBAL"),
                });
            }
            _ => {
                return Err(match op::refused_name(code) {
                    Some(name) => Error::opcode(name),
                    None => self.err(format!("invalid opcode 0x{code:02x}")),
                })
            }
        }
        Ok(())
    }
}

/// The node holding `s`, shared by all equal strings; `None` past the node limit.
fn intern(
    strings: &mut HashMap<Box<str>, NodeId>,
    arena: &mut Arena,
    limit: usize,
    s: &str,
) -> Option<NodeId> {
    if let Some(&id) = strings.get(s) {
        return Some(id);
    }
    let id = arena.alloc(Node::Str(s.into()), limit)?;
    strings.insert(s.into(), id);
    Some(id)
}

/// Stack, memo and container plumbing.
impl<R: Read, S: Sink + ?Sized> Machine<'_, R, S> {
    /// The lowest stack index the current MARK frame may pop to.
    fn floor(&self) -> usize {
        self.marks.last().copied().unwrap_or(0)
    }

    #[inline]
    fn check_room(&self) -> Result<(), Error> {
        if self.stack.len() + self.marks.len() >= self.limits.max_stack {
            return Err(self.stack_full());
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn stack_full(&self) -> Error {
        self.err(format!(
            "stack depth exceeds the limit of {}",
            self.limits.max_stack
        ))
    }

    #[inline]
    fn push(&mut self, v: Val) -> Result<(), Error> {
        self.check_room()?;
        self.stack.push(v);
        Ok(())
    }

    fn pop(&mut self) -> Result<Val, Error> {
        if self.stack.len() <= self.floor() {
            return Err(self.err("unpickling stack underflow"));
        }
        Ok(self.stack.pop().expect("checked above"))
    }

    fn top(&self) -> Result<Val, Error> {
        if self.stack.len() <= self.floor() {
            return Err(self.err("unpickling stack underflow"));
        }
        Ok(self.stack[self.stack.len() - 1])
    }

    /// Pops everything above the innermost MARK, and the MARK.
    fn pop_mark(&mut self) -> Result<Vec<Val>, Error> {
        let mark = self.take_mark()?;
        Ok(self.stack.split_off(mark))
    }

    /// Pops the innermost MARK, returning where its items start.
    fn take_mark(&mut self) -> Result<usize, Error> {
        self.marks
            .pop()
            .ok_or_else(|| self.err("could not find MARK"))
    }

    /// Where the top `n` values start, if they are all above the innermost MARK.
    fn above_floor(&self, n: usize) -> Result<usize, Error> {
        if self.stack.len() < self.floor() + n {
            return Err(self.err("unpickling stack underflow"));
        }
        Ok(self.stack.len() - n)
    }

    /// A second reference to a node now exists, so compaction must not recycle it.
    fn note_copy(&mut self, v: Val) {
        if let Val::Ref(id) = v {
            self.arena.note_shared(id);
        }
    }

    /// Live nodes allowed now: the configured cap, and no more than the bytes read so far
    /// can justify (see the crate docs' memory bound).
    #[inline]
    fn node_limit(&self) -> usize {
        let justified = NODES_BEFORE_INPUT.saturating_add(
            usize::try_from(self.src.offset() / INPUT_BYTES_PER_NODE).unwrap_or(usize::MAX),
        );
        self.limits.max_nodes.min(MAX_NODE as usize).min(justified)
    }

    #[cold]
    #[inline(never)]
    fn too_many_nodes(&self) -> Error {
        let limit = self.node_limit();
        if limit < self.limits.max_nodes.min(MAX_NODE as usize) {
            self.err(format!(
                "more than {limit} live objects after {} bytes: more than one per {INPUT_BYTES_PER_NODE} bytes of input, which no snapshot needs",
                self.src.offset()
            ))
        } else {
            self.err(format!("more than {limit} live objects"))
        }
    }

    #[inline]
    fn new_node(&mut self, node: Node) -> Result<NodeId, Error> {
        let limit = self.node_limit();
        self.arena
            .alloc(node, limit)
            .ok_or_else(|| self.too_many_nodes())
    }

    #[inline]
    fn push_node(&mut self, node: Node) -> Result<(), Error> {
        self.check_room()?;
        let id = self.new_node(node)?;
        self.stack.push(Val::Ref(id));
        Ok(())
    }

    fn push_int(&mut self, i: Int) -> Result<(), Error> {
        match i {
            Int::Small(v) => self.push(Val::Int(v)),
            Int::Big(b) => self.push_node(Node::BigInt(b.into())),
        }
    }

    fn long(&mut self, len: u64) -> Result<(), Error> {
        let i = text::int_from_le(&self.src.bytes(len)?);
        self.push_int(i)
    }

    /// BINUNICODE payloads are UTF-8 with `surrogatepass`: lone surrogates, which Rust
    /// strings cannot hold, become U+FFFD rather than failing a whole import over a path.
    fn unicode(&mut self, len: u64) -> Result<(), Error> {
        self.check_room()?;
        let limit = self.node_limit();
        let bytes = self.src.bytes(len)?;
        let text = match std::str::from_utf8(&bytes) {
            Ok(s) => Cow::Borrowed(s),
            Err(_) => Cow::Owned(String::from_utf8_lossy(&bytes).into_owned()),
        };
        // Field-wise borrows: the text may still point into the read buffer.
        let id = intern(&mut self.strings, &mut self.arena, limit, &text);
        drop(text);
        let id = id.ok_or_else(|| self.too_many_nodes())?;
        self.stack.push(Val::Ref(id));
        Ok(())
    }

    fn push_str(&mut self, s: &str) -> Result<(), Error> {
        self.check_room()?;
        let limit = self.node_limit();
        let id = intern(&mut self.strings, &mut self.arena, limit, s)
            .ok_or_else(|| self.too_many_nodes())?;
        self.stack.push(Val::Ref(id));
        Ok(())
    }

    /// Python 2 `str`: decoded with pickle's default ASCII encoding, as CPython does.
    fn py2_str(&mut self, bytes: &[u8]) -> Result<(), Error> {
        if !bytes.is_ascii() {
            return Err(self.err(
                "non-ASCII Python 2 string; CPython's default ASCII decoding refuses it too",
            ));
        }
        let s = std::str::from_utf8(bytes).expect("ASCII is UTF-8");
        self.push_str(s)
    }

    fn bytes(&mut self, len: u64, bytearray: bool) -> Result<(), Error> {
        let b: Box<[u8]> = self.src.bytes(len)?.into_owned().into();
        self.push_node(if bytearray {
            Node::ByteArray(b)
        } else {
            Node::Bytes(b)
        })
    }

    /// Offers a container to the sink the first time it becomes an element of another
    /// container; from then on every reference to it is the sink's handle.
    fn attach(&mut self, v: Val) -> Val {
        match v {
            Val::Ref(id) => self.attach_ref(id).map_or(v, Val::Handle),
            v => v,
        }
    }

    /// [`Machine::attach`] of a node: the handle that now stands for it, if any.
    ///
    /// Runs for every item of every container; most are strings and handles, which return
    /// here inline: only containers go on to the sink, out of line.
    #[inline]
    fn attach_ref(&mut self, id: NodeId) -> Option<Handle> {
        match self.arena[id] {
            Node::Handle(h) => Some(h),
            Node::Str(_) | Node::Bytes(_) | Node::ByteArray(_) | Node::BigInt(_) => None,
            _ => self.offer(id),
        }
    }

    #[inline(never)]
    fn offer(&mut self, id: NodeId) -> Option<Handle> {
        if !self.arena.take_offer(id) {
            return None;
        }
        let h = self.sink.compact(&self.arena, id)?;
        if let Some(slot) = self.arena.compact(id, h) {
            self.memo.repoint(slot, id, h);
        }
        Some(h)
    }

    fn attach_all(&mut self, mut items: Vec<Val>) -> Vec<Val> {
        for v in &mut items {
            *v = self.attach(*v);
        }
        items
    }

    fn pairs(&mut self, items: Vec<Val>) -> Result<Vec<(Val, Val)>, Error> {
        if !items.len().is_multiple_of(2) {
            return Err(self.err("odd number of items for a dict"));
        }
        let items = self.attach_all(items);
        Ok(items.chunks_exact(2).map(|kv| (kv[0], kv[1])).collect())
    }

    /// Attaches `stack[from..]` in place, writing back only what became a handle.
    #[inline]
    fn attach_from(&mut self, from: usize) {
        for i in from..self.stack.len() {
            if let Val::Ref(id) = self.stack[i] {
                if let Some(h) = self.attach_ref(id) {
                    self.stack[i] = Val::Handle(h);
                }
            }
        }
    }

    /// The container just below `stack[from..]`, which the opcode is about to fill.
    fn container_at(&self, from: usize, opcode: &str) -> Result<NodeId, Error> {
        if from <= self.floor() {
            return Err(self.err("unpickling stack underflow"));
        }
        self.container_val(self.stack[from - 1], opcode)
    }

    /// The node on top of the stack, which the opcode is about to fill.
    fn container_on_top(&self, opcode: &str) -> Result<NodeId, Error> {
        self.container_val(self.top()?, opcode)
    }

    fn container_val(&self, v: Val, opcode: &str) -> Result<NodeId, Error> {
        match v {
            Val::Ref(id) => Ok(id),
            v => Err(self.err(format!(
                "{opcode} on a {}, expected a container",
                self.arena.type_name(v)
            ))),
        }
    }

    /// Moves `stack[from..]` into the list below it. Works in place on the stack: SETITEMS
    /// and APPENDS run once per container, so per-call allocations would dominate.
    fn extend_list(&mut self, from: usize) -> Result<(), Error> {
        let list = self.container_at(from, "APPEND")?;
        self.attach_from(from);
        match self.arena.get_mut(list) {
            Node::List(l) => {
                // A copy of the slice: `extend(drain(..))` moved the items one at a time,
                // several times slower than this for a callstack's 20 frames.
                l.extend_from_slice(&self.stack[from..]);
                self.stack.truncate(from);
                Ok(())
            }
            other => {
                let got = other.type_name();
                Err(self.mutation_error(got, "APPEND", "list"))
            }
        }
    }

    fn extend_dict(&mut self, from: usize) -> Result<(), Error> {
        let dict = self.container_at(from, "SETITEM")?;
        if !(self.stack.len() - from).is_multiple_of(2) {
            return Err(self.err("odd number of items for a dict"));
        }
        self.attach_from(from);
        match self.arena.get_mut(dict) {
            Node::Dict(d) => {
                d.extend(self.stack[from..].chunks_exact(2).map(|kv| (kv[0], kv[1])));
                self.stack.truncate(from);
                Ok(())
            }
            other => {
                let got = other.type_name();
                Err(self.mutation_error(got, "SETITEM", "dict"))
            }
        }
    }

    fn mutation_error(&self, got: &str, opcode: &str, want: &str) -> Error {
        if got == "compacted container" {
            // Only a container that contains itself can be filled after being attached.
            self.err(format!(
                "{opcode} into a container that was already handed to the consumer \
                 (self-referencing structures are not supported)"
            ))
        } else {
            self.err(format!("{opcode} on a {got}, expected a {want}"))
        }
    }

    #[inline]
    fn memo_put(&mut self, idx: u32) -> Result<(), Error> {
        let v = self.top()?;
        if let Val::Ref(id) = v {
            self.arena.note_memoized(id, idx);
        }
        self.memo.put(idx, v);
        Ok(())
    }

    /// The value a memo read pushes. Two of every three opcodes of a snapshot are memo reads.
    #[inline(always)]
    fn memo_val(&mut self, idx: u32) -> Result<Val, Error> {
        let Some(v) = self.memo.get(idx) else {
            return Err(self.memo_missing(idx));
        };
        Ok(self.arena.share(v))
    }

    #[cold]
    #[inline(never)]
    fn memo_missing(&self, idx: u32) -> Error {
        self.err(format!("memo key {idx} not found"))
    }

    fn text_index(&mut self) -> Result<u32, Error> {
        let line = self.src.line()?;
        match text::parse_decimal(&line) {
            Ok(Int::Small(i)) => u32::try_from(i).ok(),
            _ => None,
        }
        .ok_or_else(|| self.err("invalid memo index"))
    }
}
