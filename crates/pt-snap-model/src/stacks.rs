// foldhash rather than SipHash: interning runs once per frame list of the pickle (hundreds
// of thousands), and its random seed still keeps hostile input from forcing collisions.
use foldhash::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// One Python (or C++) frame of a callstack.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Frame {
    pub filename: Arc<str>,
    pub line: i64,
    pub name: Arc<str>,
}

/// Index of a frame in [`Stacks::frames`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct FrameId(pub u32);

impl Hash for FrameId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }

    /// Interning hashes a whole stack per frame list of the input. Hashed one id at a time,
    /// foldhash buffers every id in a `u128`, whose shifts wasm32 has no instruction for
    /// (a call each); handed over as bytes, as `[u32]` is, it reads 16 at once.
    fn hash_slice<H: Hasher>(data: &[Self], state: &mut H) {
        for chunk in data.chunks(16) {
            let mut bytes = [0u8; 64];
            for (b, f) in bytes.chunks_exact_mut(4).zip(chunk) {
                b.copy_from_slice(&f.0.to_le_bytes());
            }
            state.write(&bytes[..4 * chunk.len()]);
        }
    }
}

/// Index of an interned callstack in [`Stacks`].
///
/// Two stacks get the same id exactly when their frame sequences are equal, which is the
/// identity the SnapshotDB's `callstack` table uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StackId(pub u32);

impl StackId {
    /// The empty stack (no frames recorded, or no `frames` key at all).
    pub const EMPTY: StackId = StackId(0);
}

/// Interned frames and callstacks.
///
/// Stacks keep PyTorch's order: position 0 is the innermost frame.
#[derive(Debug)]
pub struct Stacks {
    frames: Vec<Frame>,
    frame_ids: HashMap<Frame, FrameId>,
    stacks: Vec<Box<[FrameId]>>,
    stack_ids: HashMap<Box<[FrameId]>, StackId>,
    strings: HashMap<Box<str>, Arc<str>>,
}

impl Default for Stacks {
    fn default() -> Self {
        let mut stack_ids = HashMap::default();
        stack_ids.insert(Box::default(), StackId::EMPTY);
        Stacks {
            frames: Vec::new(),
            frame_ids: HashMap::default(),
            stacks: vec![Box::default()],
            stack_ids,
            strings: HashMap::default(),
        }
    }
}

impl Stacks {
    /// Interns a string so equal filenames and names share one allocation.
    pub fn intern_str(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.strings.get(s) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(s);
        self.strings.insert(Box::from(s), a.clone());
        a
    }

    pub fn intern_frame(&mut self, filename: &str, line: i64, name: &str) -> FrameId {
        let frame = Frame {
            filename: self.intern_str(filename),
            line,
            name: self.intern_str(name),
        };
        if let Some(&id) = self.frame_ids.get(&frame) {
            return id;
        }
        let id = FrameId(self.frames.len() as u32);
        self.frames.push(frame.clone());
        self.frame_ids.insert(frame, id);
        id
    }

    pub fn intern_stack(&mut self, frames: &[FrameId]) -> StackId {
        if let Some(&id) = self.stack_ids.get(frames) {
            return id;
        }
        let id = StackId(self.stacks.len() as u32);
        let key: Box<[FrameId]> = frames.into();
        self.stacks.push(key.clone());
        self.stack_ids.insert(key, id);
        id
    }

    /// The frames of a stack, innermost first.
    pub fn stack(&self, id: StackId) -> &[FrameId] {
        &self.stacks[id.0 as usize]
    }

    pub fn frame(&self, id: FrameId) -> &Frame {
        &self.frames[id.0 as usize]
    }

    /// Number of distinct stacks, the empty one included.
    pub fn stack_count(&self) -> usize {
        self.stacks.len()
    }

    pub fn frame_count(&self) -> usize {
        self.frames.len()
    }

    /// The callstack text the SnapshotDB stores: `"{filename}:{line} {name}"` per frame,
    /// outermost caller first, joined by newlines; `""` for the empty stack.
    pub fn render(&self, id: StackId) -> String {
        let mut out = String::new();
        for (i, f) in self.stack(id).iter().rev().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            let f = self.frame(*f);
            out.push_str(&f.filename);
            out.push(':');
            out.push_str(&f.line.to_string());
            out.push(' ');
            out.push_str(&f.name);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_frame_sequences_share_an_id_and_render_outermost_first() {
        let mut s = Stacks::default();
        let inner = s.intern_frame("a.py", 1, "inner");
        let outer = s.intern_frame("b.py", 2, "outer");
        let x = s.intern_stack(&[inner, outer]);
        let inner_again = s.intern_frame("a.py", 1, "inner");
        let y = s.intern_stack(&[inner_again, outer]);
        assert_eq!(x, y);
        assert_ne!(x, StackId::EMPTY);
        assert_eq!(s.intern_stack(&[]), StackId::EMPTY);
        assert_eq!(s.render(x), "b.py:2 outer\na.py:1 inner");
        assert_eq!(s.render(StackId::EMPTY), "");
    }
}
