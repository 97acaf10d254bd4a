//! Streaming interns every frame list it meets, including ones the model never keeps
//! (torch-2.0 `history` entries after the first). They are dropped at the end so that
//! [`Stacks`] holds exactly the stacks the snapshot references.

use crate::{Snapshot, StackId, Stacks};

pub(super) fn drop_unused_stacks(s: &mut Snapshot) {
    let mut used = vec![false; s.stacks.stack_count()];
    used[StackId::EMPTY.0 as usize] = true;
    for seg in &s.segments {
        used[seg.frames.0 as usize] = true;
        for b in &seg.blocks {
            used[b.frames.0 as usize] = true;
        }
    }
    for e in s.device_traces.iter().flatten() {
        used[e.frames.0 as usize] = true;
    }
    if used.iter().all(|&u| u) {
        return;
    }
    // Re-intern in the original order, so ids stay in first-seen order.
    let mut kept = Stacks::default();
    let mut map = vec![StackId::EMPTY; used.len()];
    for (old, _) in used.iter().enumerate().filter(|(_, &u)| u) {
        let frames: Vec<_> = (s.stacks.stack(StackId(old as u32)).iter())
            .map(|&f| {
                let f = s.stacks.frame(f);
                kept.intern_frame(&f.filename, f.line, &f.name)
            })
            .collect();
        map[old] = kept.intern_stack(&frames);
    }
    let remap = |id: &mut StackId| *id = map[id.0 as usize];
    for seg in &mut s.segments {
        remap(&mut seg.frames);
        for b in &mut seg.blocks {
            remap(&mut b.frames);
        }
    }
    for e in s.device_traces.iter_mut().flatten() {
        remap(&mut e.frames);
    }
    s.stacks = kept;
}
