//! The snapshot model: what `torch.cuda.memory._dump_snapshot()` wrote, in compact typed form.
//!
//! A snapshot is the allocator state at dump time ([`Snapshot::segments`]) plus the
//! per-device event history ([`Snapshot::device_traces`]). Callstacks are interned once in
//! [`Stacks`]: PyTorch shares frame dicts and lists through the pickle memo, and millions of
//! events point at a few thousand distinct stacks, so every event carries a 4-byte
//! [`StackId`] instead of its own frame list.
//!
//! [`decode`] builds a `Snapshot` straight from a pickle stream (see that module for the
//! accepted layouts). Nothing here touches the filesystem, threads or clocks, so the same code
//! runs natively and in wasm.

#![forbid(unsafe_code)]

pub mod decode;
pub mod names;
mod pools;
mod slices;
mod stacks;
mod times;

pub use decode::{decode, decode_sized, decode_slice, DecodeError, Progress};
pub use pools::{EventPools, EventPoolsBuilder, PerDevice, PoolId, TraceBuffer};
pub use slices::{Slices, SLICE};
pub use stacks::{Frame, FrameId, StackId, Stacks};
pub use times::{EventTimes, EventTimesBuilder};

/// A whole snapshot, as dumped.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Dump-time segments of every device, in file order.
    pub segments: Vec<Segment>,
    /// One chronological event list per device ordinal (empty lists for idle devices).
    pub device_traces: Vec<Vec<TraceEvent>>,
    /// Interned frames and callstacks referenced by segments, blocks and events.
    pub stacks: Stacks,
    /// Action names outside the known set (`free`, `snapshot`, …), indexed by [`Action::Other`].
    pub other_actions: Vec<Box<str>>,
    /// How the file was laid out at the top level.
    pub layout: TopLevel,
    /// The `device_free` of every `oom` entry that has one, in device then trace order.
    /// Kept beside the traces rather than in [`TraceEvent`]: OOMs are a handful per file,
    /// and every event would pay for the field.
    pub oom_device_free: Vec<OomFree>,
    /// Which entries of each device's trace carry a `time_us`, and its high 32 bits; the low
    /// 32 bits are each event's [`TraceEvent::time_low`]. Indexed like
    /// [`Snapshot::device_traces`] (a device past its end has no times); read them through
    /// [`Snapshot::event_time`] or [`EventTimes::iter`].
    pub event_times: Vec<EventTimes>,
    /// Which entries of each device's trace name their memory pool (`pool_id`), and which;
    /// indexed like [`Snapshot::device_traces`]. Read them through [`Snapshot::event_pool`].
    pub event_pools: Vec<EventPools>,
    /// What `allocator_settings` says about the trace's ring buffer.
    pub trace_buffer: TraceBuffer,
}

/// The free device memory an `oom` trace entry recorded (`cudaMemGetInfo`/`aclrtGetMemInfo`
/// when the allocation failed, after the allocator released what cached memory it could).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OomFree {
    pub device: usize,
    /// The entry's position in `device_traces[device]`.
    pub position: usize,
    pub device_free: i64,
}

/// The top-level shape of a snapshot file.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum TopLevel {
    /// `{"segments": [...], "device_traces": [[...], ...], ...}` from `_dump_snapshot()`.
    #[default]
    Dict,
    /// A bare list of segment dicts, from pickling `torch.cuda.memory_snapshot()`.
    SegmentList,
}

/// One reserved device-memory range (a `cudaMalloc`, or one mapped run of an expandable
/// segment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Device ordinal; PyTorch always writes it, the reference defaults it to 0.
    pub device: i64,
    pub address: i64,
    pub total_size: i64,
    pub stream: i64,
    /// `large` or `small` (empty when absent).
    pub segment_type: Box<str>,
    pub allocated_size: i64,
    pub active_size: i64,
    pub is_expandable: bool,
    /// `segment_pool_id`: the memory pool holding the segment (`(0, 0)`: the default
    /// pool); `None` where the file has none (torch 2.0).
    pub pool_id: Option<PoolId>,
    pub frames: StackId,
    /// Blocks in file order (ascending address).
    pub blocks: Vec<Block>,
}

/// A sub-range of a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub address: i64,
    pub size: i64,
    pub requested_size: i64,
    pub state: BlockState,
    pub frames: StackId,
}

/// A block's state; the discriminants are the codes the SnapshotDB stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockState {
    /// Free, cached by the allocator.
    Inactive = -1,
    /// Freed by the user but still in use by another stream (`record_stream`).
    ActivePendingFree = 0,
    /// Handed out to the user.
    ActiveAllocated = 1,
}

impl BlockState {
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "inactive" => Self::Inactive,
            "active_pending_free" | "active_awaiting_free" => Self::ActivePendingFree,
            "active_allocated" => Self::ActiveAllocated,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Inactive => "inactive",
            Self::ActivePendingFree => "active_pending_free",
            Self::ActiveAllocated => "active_allocated",
        }
    }

    pub fn code(self) -> i64 {
        self as i64
    }
}

/// One allocator event of a device trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceEvent {
    pub action: Action,
    /// `-1` when the entry has no `addr` (OOM entries).
    pub addr: i64,
    pub size: i64,
    pub stream: i64,
    pub frames: StackId,
    /// The explicit `id` key, when the entry carries one (split slices do).
    pub id: Option<i64>,
    /// The low 32 bits of the entry's `time_us` (0 without one). The rest of the time, and
    /// whether the entry has one at all, is in [`Snapshot::event_times`]: this field fills
    /// the 4 bytes the struct is padded with anyway, so keeping times costs the 56-byte
    /// events nothing, and the side table holds a run per change of the high bits (one or
    /// two per device: 2^32 µs is 71 minutes).
    pub time_low: u32,
}

// What the decoder's memory budget (and the browser's 20M-event files) rely on.
const _: () = assert!(std::mem::size_of::<TraceEvent>() == 56);

/// A trace action. The discriminants of the known actions are the integer codes of the
/// SnapshotDB `dictionary` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    SegmentMap,
    SegmentUnmap,
    SegmentAlloc,
    SegmentFree,
    Alloc,
    FreeRequested,
    FreeCompleted,
    WorkspaceSnapshot,
    Oom,
    /// Legacy (torch 2.0 era) single-step free: `free_requested` and `free_completed` at once.
    Free,
    /// Any other action name (e.g. `snapshot` markers); index into [`Snapshot::other_actions`].
    Other(u32),
}

impl Action {
    /// The known actions in code order; `KNOWN[code]` has that code.
    pub const KNOWN: [Action; 9] = [
        Action::SegmentMap,
        Action::SegmentUnmap,
        Action::SegmentAlloc,
        Action::SegmentFree,
        Action::Alloc,
        Action::FreeRequested,
        Action::FreeCompleted,
        Action::WorkspaceSnapshot,
        Action::Oom,
    ];

    /// Parses a known action name; `None` for names that must go to [`Action::Other`].
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "segment_map" => Self::SegmentMap,
            "segment_unmap" => Self::SegmentUnmap,
            "segment_alloc" => Self::SegmentAlloc,
            "segment_free" => Self::SegmentFree,
            "alloc" => Self::Alloc,
            "free_requested" => Self::FreeRequested,
            "free_completed" => Self::FreeCompleted,
            "workspace_snapshot" => Self::WorkspaceSnapshot,
            "oom" => Self::Oom,
            "free" => Self::Free,
            _ => return None,
        })
    }

    /// The integer code stored in the DB, or `None` for actions stored as text.
    pub fn code(self) -> Option<i64> {
        Self::KNOWN
            .iter()
            .position(|a| *a == self)
            .map(|i| i as i64)
    }

    /// The action's name; `other` resolves [`Action::Other`].
    pub fn name(self, other: &[Box<str>]) -> &str {
        match self {
            Self::SegmentMap => "segment_map",
            Self::SegmentUnmap => "segment_unmap",
            Self::SegmentAlloc => "segment_alloc",
            Self::SegmentFree => "segment_free",
            Self::Alloc => "alloc",
            Self::FreeRequested => "free_requested",
            Self::FreeCompleted => "free_completed",
            Self::WorkspaceSnapshot => "workspace_snapshot",
            Self::Oom => "oom",
            Self::Free => "free",
            Self::Other(i) => other.get(i as usize).map_or("?", |s| s),
        }
    }
}

impl Snapshot {
    /// The times of `device`'s trace entries (none for a device without any).
    pub fn times(&self, device: usize) -> &EventTimes {
        static NONE: EventTimes = EventTimes::NONE;
        self.event_times.get(device).unwrap_or(&NONE)
    }

    /// The `time_us` of the entry at `position` of `device`'s trace, if it has one.
    pub fn event_time(&self, device: usize, position: usize) -> Option<i64> {
        let event = self.device_traces.get(device)?.get(position)?;
        self.times(device).get(position, event)
    }

    /// The pools of `device`'s trace entries (none for a device without any).
    pub fn pools(&self, device: usize) -> &EventPools {
        static NONE: EventPools = EventPools::NONE;
        self.event_pools.get(device).unwrap_or(&NONE)
    }

    /// The `pool_id` of the entry at `position` of `device`'s trace, if it has one.
    pub fn event_pool(&self, device: usize, position: usize) -> Option<PoolId> {
        self.pools(device).get(position)
    }

    /// Devices whose trace list is non-empty, ascending: the devices an import writes.
    pub fn devices_with_events(&self) -> Vec<usize> {
        (0..self.device_traces.len())
            .filter(|&d| !self.device_traces[d].is_empty())
            .collect()
    }
}
