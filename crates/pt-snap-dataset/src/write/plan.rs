//! The replay of a device cut into slices: what each shard of a dataset holds (spec §10.2).
//!
//! The reference replays a device backwards once, pausing at every slice start to record
//! the state just before the slice (the *left boundary*), writes provisional rows, and
//! patches block ids and lifetimes into every shard once the whole device is replayed. Here
//! the replay only collects compact rows; the lifetimes are final when the replay ends, so
//! each shard can then be written in one pass, independently of the others (in parallel).

use std::collections::HashMap;

use pt_snap_model::{Action, BlockState, Snapshot, StackId};
use pt_snap_replay::{BlockChange, BlockView, Replayer};

use super::WriteError;

/// Callstack texts of a snapshot, interned by text (the native shards' identity: two
/// different frame lists with the same text are one callstack there).
#[derive(Debug, Default)]
pub struct Texts {
    of_stack: Vec<Option<u32>>,
    by_text: HashMap<String, u32>,
    texts: Vec<String>,
}

impl Texts {
    pub fn new(snapshot: &Snapshot) -> Self {
        Texts {
            of_stack: vec![None; snapshot.stacks.stack_count()],
            ..Texts::default()
        }
    }

    fn intern(&mut self, snapshot: &Snapshot, stack: StackId) -> u32 {
        if let Some(id) = self.of_stack[stack.0 as usize] {
            return id;
        }
        let text = snapshot.stacks.render(stack);
        let next = self.texts.len() as u32;
        let id = *self.by_text.entry(text).or_insert_with_key(|text| {
            self.texts.push(text.clone());
            next
        });
        self.of_stack[stack.0 as usize] = Some(id);
        id
    }

    pub fn text(&self, id: u32) -> &str {
        &self.texts[id as usize]
    }
}

/// One block lifetime of a device, followed across slices.
#[derive(Debug, Clone)]
pub struct Lifetime {
    /// Provisional id: -1, -2, … in order of first observation during the backward replay.
    pub token: i64,
    pub address: i64,
    pub size: i64,
    pub requested_size: i64,
    pub stream: i64,
    pub alloc_event: Option<i64>,
    pub free_event: Option<i64>,
    /// Text ids of the allocating / freeing events' callstacks, when in the trace.
    pub alloc_text: Option<u32>,
    pub free_text: Option<u32>,
    /// The last shard (sequence number of writing) that holds a row of this lifetime.
    written_in: usize,
}

impl Lifetime {
    /// The block id: the allocating event's id when the trace has it, else the token.
    pub fn id(&self) -> i64 {
        self.alloc_event.unwrap_or(self.token)
    }
}

/// A trace row of a shard: the computed part (the rest is read back from the snapshot for
/// real events).
#[derive(Debug, Clone, Copy)]
pub struct Totals {
    pub allocated: i64,
    pub active: i64,
    pub reserved: i64,
    /// The shard-local callstack id.
    pub callstack: u32,
}

/// A left-boundary synthetic segment event.
#[derive(Debug, Clone, Copy)]
pub struct BoundaryEvent {
    pub id: i64,
    pub action: Action,
    pub address: i64,
    pub size: i64,
    pub stream: i64,
    pub totals: Totals,
}

/// The rows of one shard.
#[derive(Debug, Clone)]
pub struct Shard {
    pub device: usize,
    pub index: usize,
    pub start_position: usize,
    pub end_position: usize,
    pub start_event_id: i64,
    pub end_event_id: i64,
    /// Totals of the slice's events, by position − `start_position`.
    pub events: Vec<Totals>,
    pub boundary: Vec<BoundaryEvent>,
    /// `(lifetime index, state when first observed in this shard)`, in observation order.
    pub blocks: Vec<(u32, BlockState)>,
    /// Text ids of the shard's callstack table, by shard-local id.
    pub callstacks: Vec<u32>,
}

impl Shard {
    /// The member file, relative to the dataset directory.
    pub fn file(&self) -> String {
        format!("device_{}/slice_{:05}.db", self.device, self.index)
    }

    pub fn event_count(&self) -> usize {
        self.end_position - self.start_position + 1
    }
}

/// One device cut into shards, with the lifetimes its block rows refer to.
#[derive(Debug)]
pub struct DevicePlan {
    pub device: usize,
    /// Shards in index order.
    pub shards: Vec<Shard>,
    pub lifetimes: Vec<Lifetime>,
    /// Inconsistencies the replay tolerated.
    pub warnings: Vec<String>,
}

/// Per-shard interning of callstack texts, in order of first use.
struct ShardStacks {
    local: HashMap<u32, u32>,
    order: Vec<u32>,
}

impl ShardStacks {
    fn new() -> Self {
        ShardStacks {
            local: HashMap::new(),
            order: Vec::new(),
        }
    }

    fn intern(&mut self, text: u32) -> u32 {
        let next = self.order.len() as u32;
        *self.local.entry(text).or_insert_with(|| {
            self.order.push(text);
            next
        })
    }
}

struct Registry {
    lifetimes: Vec<Lifetime>,
    /// Lifetime index by block uid.
    by_uid: Vec<u32>,
}

impl Registry {
    const NONE: u32 = u32::MAX;

    fn observe(&mut self, block: &BlockView, stream: i64) -> Result<usize, WriteError> {
        let uid = block.uid as usize;
        if self.by_uid.len() <= uid {
            self.by_uid.resize(uid + 1, Self::NONE);
        }
        let index = self.by_uid[uid];
        if index != Self::NONE {
            let lifetime = &self.lifetimes[index as usize];
            if lifetime.stream != stream {
                return Err(WriteError::Backend(
                    "Block changed stream during its lifetime".into(),
                ));
            }
            return Ok(index as usize);
        }
        let index = self.lifetimes.len();
        self.lifetimes.push(Lifetime {
            token: -(index as i64) - 1,
            address: block.address,
            size: block.size,
            requested_size: block.requested_size,
            stream,
            alloc_event: None,
            free_event: (block.free_event_id >= 0).then_some(block.free_event_id),
            alloc_text: None,
            free_text: None,
            written_in: usize::MAX,
        });
        self.by_uid[uid] = index as u32;
        Ok(index)
    }

    /// Records a block row in shard `seq` unless the shard already has this lifetime.
    fn write(
        &mut self,
        shard: &mut Shard,
        seq: usize,
        block: &BlockView,
        stream: i64,
    ) -> Result<(), WriteError> {
        let index = self.observe(block, stream)?;
        let lifetime = &mut self.lifetimes[index];
        if lifetime.written_in != seq {
            lifetime.written_in = seq;
            shard.blocks.push((index as u32, block.state));
        }
        Ok(())
    }
}

/// Replays `device` of `snapshot` and cuts it into slices of `events_per_slice` events from
/// the start (the last slice is the short one).
pub fn plan_device(
    snapshot: &Snapshot,
    device: usize,
    events_per_slice: usize,
    texts: &mut Texts,
) -> Result<DevicePlan, WriteError> {
    let events = &snapshot.device_traces[device];
    let id_at = |pos: usize| events[pos].id.unwrap_or(pos as i64);
    if (0..events.len()).any(|p| id_at(p) < 0) {
        return Err(WriteError::Backend(
            "Real event IDs must be nonnegative integers".into(),
        ));
    }
    if (1..events.len()).any(|p| id_at(p - 1) >= id_at(p)) {
        return Err(WriteError::Backend(
            "Real event IDs must be unique and chronological".into(),
        ));
    }
    let count = events.len().div_ceil(events_per_slice);
    let failed = |index: usize| {
        WriteError::Backend(format!("Replay failed for device {device}, slice {index}"))
    };
    let mut replayer =
        Replayer::new(snapshot, device).map_err(|_| failed(count.saturating_sub(1)))?;
    let mut registry = Registry {
        lifetimes: Vec::new(),
        by_uid: Vec::new(),
    };
    let mut shards = Vec::with_capacity(count);
    for (seq, index) in (0..count).rev().enumerate() {
        let start = index * events_per_slice;
        let end = (start + events_per_slice).min(events.len()) - 1;
        let mut shard = Shard {
            device,
            index,
            start_position: start,
            end_position: end,
            start_event_id: id_at(start),
            end_event_id: id_at(end),
            events: Vec::with_capacity(end - start + 1),
            boundary: Vec::new(),
            blocks: Vec::new(),
            callstacks: Vec::new(),
        };
        let mut stacks = ShardStacks::new();
        while replayer.remaining() > start {
            let step = replayer
                .undo_last()
                .expect("events remain")
                .map_err(|_| failed(index))?;
            let event = &events[step.row.position.expect("a real event")];
            let text = texts.intern(snapshot, event.frames);
            shard.events.push(Totals {
                allocated: step.row.allocated,
                active: step.row.active,
                reserved: step.row.reserved,
                callstack: stacks.intern(text),
            });
            match step.change {
                BlockChange::None => {}
                BlockChange::Created(block) => {
                    let i = registry.observe(&block, event.stream)?;
                    registry.lifetimes[i].free_text = Some(text);
                }
                BlockChange::Detached(block) => {
                    let i = registry.observe(&block, event.stream)?;
                    let lifetime = &mut registry.lifetimes[i];
                    lifetime.alloc_text = Some(text);
                    lifetime.alloc_event = Some(step.row.id);
                    registry.write(&mut shard, seq, &block, event.stream)?;
                }
            }
        }
        // The events were collected last first.
        shard.events.reverse();
        let (allocated, active, reserved) = replayer.totals();
        for (k, seg) in replayer.segments().enumerate() {
            for block in seg.blocks() {
                registry.write(&mut shard, seq, &block, seg.stream)?;
            }
            let text = texts.intern(snapshot, seg.frames);
            shard.boundary.push(BoundaryEvent {
                id: -(k as i64) - 1,
                action: if seg.is_expandable {
                    Action::SegmentMap
                } else {
                    Action::SegmentAlloc
                },
                address: seg.address,
                size: seg.total_size,
                stream: seg.stream,
                totals: Totals {
                    allocated,
                    active,
                    reserved,
                    callstack: stacks.intern(text),
                },
            });
        }
        shard.callstacks = stacks.order;
        shards.push(shard);
    }
    shards.reverse();
    Ok(DevicePlan {
        device,
        shards,
        lifetimes: registry.lifetimes,
        warnings: replayer.warnings().to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pt_snap_model::{Block, Segment, TraceEvent};

    /// One 4 KiB segment; A is allocated (event 0, stack "a"), B (event 1, stack "b"),
    /// then A is freed (events 2, 3, stack "f"). B is live at dump time.
    fn snapshot() -> Snapshot {
        let mut snapshot = Snapshot::default();
        let mut stack = |name: &str| {
            let f = snapshot.stacks.intern_frame("x.py", 1, name);
            snapshot.stacks.intern_stack(&[f])
        };
        let (a, b, f) = (stack("a"), stack("b"), stack("f"));
        let ev = |action, addr, frames| TraceEvent {
            action,
            addr,
            size: 1024,
            stream: 0,
            frames,
            id: None,
            time_low: 0,
        };
        snapshot.device_traces = vec![vec![
            ev(Action::Alloc, 0, a),
            ev(Action::Alloc, 1024, b),
            ev(Action::FreeRequested, 0, f),
            ev(Action::FreeCompleted, 0, f),
        ]];
        snapshot.segments = vec![Segment {
            device: 0,
            address: 0,
            total_size: 4096,
            stream: 0,
            segment_type: "small".into(),
            allocated_size: 1024,
            active_size: 1024,
            is_expandable: false,
            pool_id: None,
            frames: StackId::EMPTY,
            blocks: vec![Block {
                address: 1024,
                size: 1024,
                requested_size: 1000,
                state: BlockState::ActiveAllocated,
                frames: b,
            }],
        }];
        snapshot
    }

    #[test]
    fn lifetimes_are_final_in_every_shard_and_boundaries_restart() {
        let snapshot = snapshot();
        let mut texts = Texts::new(&snapshot);
        let plan = plan_device(&snapshot, 0, 2, &mut texts).unwrap();
        let [first, second] = &plan.shards[..] else {
            panic!("{} shards", plan.shards.len())
        };
        assert_eq!((second.start_position, second.end_position), (2, 3));

        // The backward replay meets A's free (event 3) first: token -1; B at the left
        // boundary of the second shard: token -2. Both have their allocation in the first
        // shard, so both ids are the allocating events', everywhere.
        let a = &plan.lifetimes[0];
        let b = &plan.lifetimes[1];
        assert_eq!(
            (a.token, a.id(), a.alloc_event, a.free_event),
            (-1, 0, Some(0), Some(3))
        );
        assert_eq!(
            (b.token, b.id(), b.alloc_event, b.free_event),
            (-2, 1, Some(1), None)
        );
        assert_eq!(texts.text(a.alloc_text.unwrap()), "x.py:1 a");
        assert_eq!(texts.text(a.free_text.unwrap()), "x.py:1 f");
        assert_eq!(b.free_text, None);

        // The second shard holds both blocks as they were just before event 2 (A allocated:
        // its free_requested is event 2 itself), and one synthetic segment event -1 with the
        // totals of that moment.
        assert_eq!(
            second.blocks,
            [
                (0, BlockState::ActiveAllocated),
                (1, BlockState::ActiveAllocated)
            ]
        );
        let boundary = &second.boundary[..];
        assert_eq!(boundary.len(), 1);
        assert_eq!(
            (
                boundary[0].id,
                boundary[0].totals.allocated,
                boundary[0].totals.reserved
            ),
            (-1, 2048, 4096)
        );
        // Callstacks are interned per shard, events last to first, then the boundary.
        let shard_texts: Vec<&str> = second.callstacks.iter().map(|&t| texts.text(t)).collect();
        assert_eq!(shard_texts, ["x.py:1 f", ""]);

        // The first shard restarts the boundary ids and sees both allocations undone.
        assert_eq!(first.boundary[0].id, -1);
        assert_eq!(
            (
                first.boundary[0].totals.allocated,
                first.boundary[0].totals.active
            ),
            (0, 0)
        );
        assert_eq!(first.blocks.len(), 2);
        let totals: Vec<i64> = first.events.iter().map(|t| t.allocated).collect();
        assert_eq!(totals, [1024, 2048]);
    }

    #[test]
    fn explicit_ids_must_increase() {
        let mut snapshot = snapshot();
        snapshot.device_traces[0][1].id = Some(0);
        let mut texts = Texts::new(&snapshot);
        let err = plan_device(&snapshot, 0, 2, &mut texts).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Real event IDs must be unique and chronological"
        );
    }
}
