//! Forward simulation of the CUDA caching allocator (one device) driven by a
//! training-loop-like workload. Emits trace events in order; the final state is
//! the allocator state right after the last emitted event.

use crate::rng::Rng;
use crate::stacks::{Catalog, Role};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

pub const MIN_BLOCK: u64 = 512;
pub const SMALL_SIZE: u64 = 1 << 20;
pub const SMALL_BUFFER: u64 = 2 << 20;
pub const LARGE_BUFFER: u64 = 20 << 20;
pub const MIN_LARGE_ALLOC: u64 = 10 << 20;
pub const ROUND_LARGE: u64 = 2 << 20;
const ER_SPAN: u64 = 64 << 30; // VA reserved per expandable range
const DEVICE_SPAN: u64 = 1 << 42;
const VA_BASE: u64 = 0x4000_0000_0000;

pub fn round_size(req: u64) -> u64 {
    if req < MIN_BLOCK {
        MIN_BLOCK
    } else {
        req.div_ceil(MIN_BLOCK) * MIN_BLOCK
    }
}

pub fn allocation_size(rounded: u64) -> u64 {
    if rounded <= SMALL_SIZE {
        SMALL_BUFFER
    } else if rounded < MIN_LARGE_ALLOC {
        LARGE_BUFFER
    } else {
        rounded.div_ceil(ROUND_LARGE) * ROUND_LARGE
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Allocated,
    PendingFree,
    Inactive,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Allocated => "active_allocated",
            State::PendingFree => "active_pending_free",
            State::Inactive => "inactive",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    pub size: u64,
    pub requested: u64,
    pub state: State,
    /// traceback id (0 = no context)
    pub tb: u64,
    pub site: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub addr: u64,
    pub size: u64,
    pub stream: u8,
    pub small: bool,
    pub expandable: bool,
    pub tb: u64,
    pub site: u32,
    pub blocks: BTreeMap<u64, Block>,
}

impl Segment {
    /// The blocks the program holds: not free, not pending free.
    fn allocated_blocks(&self) -> impl Iterator<Item = &Block> {
        self.blocks.values().filter(|b| b.state == State::Allocated)
    }
    pub fn allocated_size(&self) -> u64 {
        self.allocated_blocks().map(|b| b.size).sum()
    }
    pub fn active_size(&self) -> u64 {
        self.blocks
            .values()
            .filter(|b| b.state != State::Inactive)
            .map(|b| b.size)
            .sum()
    }
    pub fn requested_size(&self) -> u64 {
        self.allocated_blocks().map(|b| b.requested).sum()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Alloc,
    FreeRequested,
    FreeCompleted,
    SegmentAlloc,
    SegmentFree,
    SegmentMap,
    SegmentUnmap,
    Oom,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Alloc => "alloc",
            Action::FreeRequested => "free_requested",
            Action::FreeCompleted => "free_completed",
            Action::SegmentAlloc => "segment_alloc",
            Action::SegmentFree => "segment_free",
            Action::SegmentMap => "segment_map",
            Action::SegmentUnmap => "segment_unmap",
            Action::Oom => "oom",
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Event {
    pub action: Action,
    pub addr: u64,
    pub size: u64,
    pub stream: u8,
    pub time_us: u64,
    pub tb: u64,
    pub site: u32,
    pub device_free: u64,
}

#[derive(Clone, Debug)]
pub struct SimConfig {
    pub streams: u8,
    pub expandable: bool,
    pub oom: bool,
    pub layers: u32,
    /// reserved-memory cap (bytes) per device
    pub cap: u64,
    pub empty_cache_per_step: f64,
    pub defer_prob: f64,
    pub no_context_prob: f64,
    /// A data-parallel rank: the same model, another draw of the workload (0: the seed's own).
    pub rank: u32,
    /// The fraction of frees skipped for good (leaked allocations).
    pub leak_rate: f64,
    /// Inputs, activations and backward temporaries scaled by this (a larger batch).
    pub batch_scale: f64,
}

#[derive(Clone, Copy, Debug)]
struct Live {
    addr: u64,
    stream: u8,
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Malloc { site: u32, slot: u32, size: u64 },
    Free { slot: u32 },
    EmptyCache { site: u32 },
    Oom { site: u32 },
}

const PERSIST: u32 = u32::MAX;
const RANK_SALT: u64 = 0xD1B5_4A32_D192_ED03;
const LEAK_SALT: u64 = 0x1EA4_1EA4_1EA4_1EA4;

pub struct DeviceSim<'c> {
    cat: &'c Catalog,
    cfg: SimConfig,
    rng: Rng,
    /// Decides which frees leak; separate from `rng` so that a leak rate of 0 (never asked)
    /// leaves every other draw, and so the file, unchanged.
    leak_rng: Rng,
    pub device: u32,
    pub stream_ids: Vec<u64>,
    pub segments: BTreeMap<u64, Segment>,
    pools: Vec<BTreeSet<(u64, u64)>>,
    va_next: u64,
    va_free: BTreeMap<u64, Vec<u64>>,
    pub reserved: u64,
    pub n_events: u64,
    time_us: u64,
    next_tb: u64,
    /// Set while a planted allocation is made: its events take no random draw (the clock
    /// stands still), so the run after it is draw for draw the run without it.
    quiet: bool,
    pub out: Vec<Event>,
    // workload
    queue: VecDeque<Op>,
    slots: Vec<Option<Live>>,
    free_slots: Vec<u32>,
    pending: Vec<(u64, u64)>,
    op_count: u64,
    step: u64,
    grads: Vec<u32>,
    param_sizes: Vec<u64>,
    sites_fwd: Vec<u32>,
    sites_bwd_temp: Vec<u32>,
    sites_grad: Vec<u32>,
    sites_param: Vec<u32>,
    sites_data: Vec<u32>,
    sites_opt_state: Vec<u32>,
    sites_opt_temp: Vec<u32>,
    sites_empty: Vec<u32>,
}

impl<'c> DeviceSim<'c> {
    pub fn new(cat: &'c Catalog, cfg: SimConfig, seed: u64, device: u32) -> Self {
        let mut rng = Rng::new(seed ^ (device as u64 + 1).wrapping_mul(0x9E37_79B9));
        let mut stream_ids = vec![0u64];
        for k in 1..cfg.streams.max(1) {
            stream_ids
                .push(0x5555_0000_0000 + (rng.range(0x10_0000, 0xff_ffff) << 8) + k as u64 * 16);
        }
        let n_pools = stream_ids.len() * 2;
        // model parameters: embedding + per layer qkv/proj/fc1/fc2/biases/norms (fp32)
        let hidden = cat.hidden;
        let mut param_sizes = vec![hidden * rng.range(32000, 50257) * 4];
        for _ in 0..cfg.layers {
            for (mul_num, mul_den) in [(3u64, 1u64), (1, 1), (4, 1), (4, 1)] {
                param_sizes.push(hidden * hidden * 4 * mul_num / mul_den);
            }
            param_sizes.extend([
                hidden * 12,
                hidden * 4,
                hidden * 16,
                hidden * 4,
                hidden * 4,
                hidden * 4,
            ]);
        }
        param_sizes.push(hidden * 4);
        // The model (parameter sizes, streams) is the seed's; another rank of the same job
        // draws its workload from a generator of its own. Rank 0 keeps the seed's, byte for
        // byte.
        if cfg.rank != 0 {
            rng = rng.fork(RANK_SALT.wrapping_mul(cfg.rank as u64));
        }
        let leak_rng = Rng::new(seed ^ LEAK_SALT).fork(((device as u64) << 32) | cfg.rank as u64);
        let by = |r| cat.of_role(r);
        let device_base = VA_BASE + device as u64 * DEVICE_SPAN;
        DeviceSim {
            cat,
            rng,
            leak_rng,
            device,
            stream_ids,
            segments: BTreeMap::new(),
            pools: vec![BTreeSet::new(); n_pools],
            va_next: device_base + (1 << 30),
            va_free: BTreeMap::new(),
            reserved: 0,
            n_events: 0,
            time_us: 1_772_688_692_000_000 + seed % 1_000_000_000,
            next_tb: 1,
            quiet: false,
            out: Vec::new(),
            queue: VecDeque::new(),
            slots: Vec::new(),
            free_slots: Vec::new(),
            pending: Vec::new(),
            op_count: 0,
            step: 0,
            grads: Vec::new(),
            param_sizes,
            sites_fwd: [by(Role::Act), by(Role::Temp)]
                .concat()
                .into_iter()
                .filter(|&s| !is_bwd(cat, s))
                .collect(),
            sites_bwd_temp: by(Role::Temp)
                .into_iter()
                .filter(|&s| is_bwd(cat, s))
                .collect(),
            sites_grad: by(Role::Grad),
            sites_param: by(Role::Param),
            sites_data: by(Role::Data),
            sites_opt_state: by(Role::OptState),
            sites_opt_temp: by(Role::OptTemp),
            sites_empty: by(Role::EmptyCache),
            cfg,
        }
    }

    fn device_base(&self) -> u64 {
        VA_BASE + self.device as u64 * DEVICE_SPAN
    }

    fn er_base(&self, pool: usize) -> u64 {
        self.device_base() + (pool as u64 + 1) * ER_SPAN * 2
    }

    fn emit(&mut self, action: Action, addr: u64, size: u64, stream: u8, tb: u64, site: u32) {
        if !self.quiet {
            self.time_us += self.rng.range(0, 40);
        }
        let device_free = if action == Action::Oom {
            self.cfg.cap.saturating_sub(self.reserved)
        } else {
            0
        };
        self.out.push(Event {
            action,
            addr,
            size,
            stream,
            time_us: self.time_us,
            tb,
            site,
            device_free,
        });
        self.n_events += 1;
    }

    fn new_tb(&mut self) -> u64 {
        let t = self.next_tb;
        self.next_tb += 1;
        t
    }

    fn seg_key(&self, addr: u64) -> u64 {
        let (&k, s) = self
            .segments
            .range(..=addr)
            .next_back()
            .expect("no segment");
        debug_assert!(addr < k + s.size);
        k
    }

    fn best_fit(&self, pool: usize, rounded: u64) -> Option<(u64, u64)> {
        self.pools[pool].range((rounded, 0)..).next().copied()
    }

    fn va_alloc(&mut self, size: u64) -> u64 {
        if let Some(v) = self.va_free.get_mut(&size) {
            if let Some(a) = v.pop() {
                if v.is_empty() {
                    self.va_free.remove(&size);
                }
                return a;
            }
        }
        let a = self.va_next;
        self.va_next += size.div_ceil(ROUND_LARGE) * ROUND_LARGE;
        a
    }

    /// Create room for `rounded` bytes in `pool` (cudaMalloc or expandable map).
    fn grow(&mut self, pool: usize, rounded: u64, tb: u64, site: u32) -> Option<(u64, u64)> {
        let stream = (pool / 2) as u8;
        let small = pool % 2 == 1;
        if !self.cfg.expandable {
            let size = allocation_size(rounded);
            if self.reserved + size > self.cfg.cap {
                return None;
            }
            let addr = self.va_alloc(size);
            self.emit(Action::SegmentAlloc, addr, size, stream, tb, site);
            self.reserved += size;
            let mut blocks = BTreeMap::new();
            blocks.insert(addr, inactive(size, 0));
            self.segments.insert(
                addr,
                Segment {
                    addr,
                    size,
                    stream,
                    small,
                    expandable: false,
                    tb,
                    site,
                    blocks,
                },
            );
            self.pools[pool].insert((size, addr));
            return Some((size, addr));
        }
        let gran = if small { SMALL_BUFFER } else { LARGE_BUFFER };
        let base = self.er_base(pool);
        let runs: Vec<(u64, u64)> = self
            .segments
            .range(base..base + ER_SPAN)
            .map(|(&a, s)| (a, a + s.size))
            .collect();
        let mut gap_start = base;
        let mut prev: Option<u64> = None;
        let mut chosen = None;
        for i in 0..=runs.len() {
            let gap_end = if i < runs.len() {
                runs[i].0
            } else {
                base + ER_SPAN
            };
            if gap_end > gap_start {
                let tail_free = prev
                    .and_then(|p| {
                        let s = &self.segments[&p];
                        let (_, b) = s.blocks.iter().next_back().unwrap();
                        (b.state == State::Inactive).then_some(b.size)
                    })
                    .unwrap_or(0);
                let need = rounded.saturating_sub(tail_free).div_ceil(gran) * gran;
                if need > 0 && need <= gap_end - gap_start {
                    chosen = Some((gap_start, need, prev, (i < runs.len()).then(|| runs[i].0)));
                    break;
                }
            }
            if i < runs.len() {
                gap_start = runs[i].1;
                prev = Some(runs[i].0);
            }
        }
        let (at, need, prev, next) = chosen?;
        if self.reserved + need > self.cfg.cap {
            return None;
        }
        self.emit(Action::SegmentMap, at, need, stream, tb, site);
        self.reserved += need;
        let mut free_addr = at;
        let run_key = match prev {
            Some(p) => {
                let seg = self.segments.get_mut(&p).unwrap();
                seg.size += need;
                let (&la, lb) = seg.blocks.iter().next_back().unwrap();
                if lb.state == State::Inactive {
                    let ls = lb.size;
                    self.pools[pool].remove(&(ls, la));
                    seg.blocks.get_mut(&la).unwrap().size += need;
                    free_addr = la;
                } else {
                    seg.blocks.insert(at, inactive(need, 0));
                }
                p
            }
            None => {
                let mut blocks = BTreeMap::new();
                blocks.insert(at, inactive(need, 0));
                self.segments.insert(
                    at,
                    Segment {
                        addr: at,
                        size: need,
                        stream,
                        small,
                        expandable: true,
                        tb,
                        site,
                        blocks,
                    },
                );
                at
            }
        };
        if let Some(n) = next {
            if at + need == n {
                let nseg = self.segments.remove(&n).unwrap();
                let seg = self.segments.get_mut(&run_key).unwrap();
                seg.size += nseg.size;
                for (ba, b) in nseg.blocks {
                    let (&la, lb) = seg.blocks.iter().next_back().unwrap();
                    if lb.state == State::Inactive
                        && b.state == State::Inactive
                        && la + lb.size == ba
                    {
                        self.pools[pool].remove(&(b.size, ba));
                        seg.blocks.get_mut(&la).unwrap().size += b.size;
                    } else {
                        seg.blocks.insert(ba, b);
                    }
                }
            }
        }
        let fb = &self.segments[&run_key].blocks[&free_addr];
        debug_assert_eq!(fb.state, State::Inactive);
        let fs = fb.size;
        self.pools[pool].insert((fs, free_addr));
        self.best_fit(pool, rounded)
    }

    /// torch.cuda.empty_cache(): release fully free segments / unmap free pages.
    fn release_cached(&mut self, tb: u64, site: u32) {
        if !self.cfg.expandable {
            let victims: Vec<u64> = self
                .segments
                .values()
                .filter(|s| {
                    s.blocks.len() == 1
                        && s.blocks.values().next().unwrap().state == State::Inactive
                })
                .map(|s| s.addr)
                .collect();
            for a in victims {
                let s = self.segments.remove(&a).unwrap();
                let pool = s.stream as usize * 2 + s.small as usize;
                self.pools[pool].remove(&(s.size, a));
                self.emit(Action::SegmentFree, a, s.size, s.stream, tb, site);
                self.reserved -= s.size;
                self.va_free.entry(s.size).or_default().push(a);
            }
            return;
        }
        let mut cuts = Vec::new();
        for s in self.segments.values() {
            let pool = s.stream as usize * 2 + s.small as usize;
            let base = self.er_base(pool);
            let gran = if s.small { SMALL_BUFFER } else { LARGE_BUFFER };
            for (&ba, b) in &s.blocks {
                if b.state != State::Inactive {
                    continue;
                }
                let lo = base + (ba - base).div_ceil(gran) * gran;
                let hi = base + (ba + b.size - base) / gran * gran;
                if lo < hi {
                    cuts.push((ba, lo, hi));
                }
            }
        }
        for (ba, lo, hi) in cuts {
            let key = self.seg_key(ba);
            let mut seg = self.segments.remove(&key).unwrap();
            let pool = seg.stream as usize * 2 + seg.small as usize;
            let b = seg.blocks.remove(&ba).unwrap();
            self.pools[pool].remove(&(b.size, ba));
            self.emit(Action::SegmentUnmap, lo, hi - lo, seg.stream, tb, site);
            self.reserved -= hi - lo;
            if lo > ba {
                seg.blocks.insert(ba, inactive(lo - ba, b.requested));
                self.pools[pool].insert((lo - ba, ba));
            }
            if ba + b.size > hi {
                seg.blocks.insert(hi, inactive(ba + b.size - hi, 0));
                self.pools[pool].insert((ba + b.size - hi, hi));
            }
            let end = seg.addr + seg.size;
            let right_blocks = seg.blocks.split_off(&hi);
            if end > hi {
                let r = Segment {
                    addr: hi,
                    size: end - hi,
                    blocks: right_blocks,
                    ..seg.clone()
                };
                self.segments.insert(hi, r);
            }
            if lo > seg.addr {
                seg.size = lo - seg.addr;
                self.segments.insert(seg.addr, seg);
            }
        }
    }

    fn malloc(&mut self, req: u64, stream: u8, site: u32) -> Option<u64> {
        let tb = if self.rng.chance(self.cfg.no_context_prob) {
            0
        } else {
            self.new_tb()
        };
        self.malloc_with(req, stream, site, tb)
    }

    /// Allocates `site`'s bytes (a `Role::Planted` site of the catalog) on the default
    /// stream, held to the end of the trace. It draws nothing from the random generator,
    /// so the workload after it is unchanged: called before the first step, the trace is
    /// the trace without it plus these events, and every later state holds this block too.
    pub fn plant(&mut self, site: u32) -> Option<u64> {
        let size = self.cat.sites[site as usize].size.max(1);
        let tb = self.new_tb();
        self.quiet = true;
        let addr = self.malloc_with(size, 0, site, tb);
        self.quiet = false;
        addr
    }

    fn malloc_with(&mut self, req: u64, stream: u8, site: u32, tb: u64) -> Option<u64> {
        let rounded = round_size(req);
        let small = rounded <= SMALL_SIZE;
        let pool = stream as usize * 2 + small as usize;
        let mut found = self.best_fit(pool, rounded);
        if found.is_none() {
            found = self.grow(pool, rounded, tb, site);
            if found.is_none() {
                self.release_cached(tb, site);
                found = self.grow(pool, rounded, tb, site);
            }
        }
        let Some((bsize, baddr)) = found else {
            self.emit(Action::Oom, 0, req, stream, tb, site);
            return None;
        };
        self.pools[pool].remove(&(bsize, baddr));
        let remaining = bsize - rounded;
        let split = if small {
            remaining >= MIN_BLOCK
        } else {
            remaining > SMALL_SIZE
        };
        let key = self.seg_key(baddr);
        let seg = self.segments.get_mut(&key).unwrap();
        let blk = seg.blocks.get_mut(&baddr).unwrap();
        debug_assert_eq!(blk.state, State::Inactive);
        *blk = Block {
            size: if split { rounded } else { bsize },
            requested: req,
            state: State::Allocated,
            tb,
            site,
        };
        if split {
            seg.blocks.insert(baddr + rounded, inactive(remaining, 0));
            self.pools[pool].insert((remaining, baddr + rounded));
        }
        self.emit(Action::Alloc, baddr, req, stream, tb, site);
        Some(baddr)
    }

    fn free_requested(&mut self, addr: u64) {
        let key = self.seg_key(addr);
        let seg = self.segments.get_mut(&key).unwrap();
        let stream = seg.stream;
        let b = seg.blocks.get_mut(&addr).unwrap();
        debug_assert_eq!(b.state, State::Allocated);
        b.state = State::PendingFree;
        let (req, tb, site) = (b.requested, b.tb, b.site);
        self.emit(Action::FreeRequested, addr, req, stream, tb, site);
    }

    fn free_completed(&mut self, addr: u64) {
        let key = self.seg_key(addr);
        let seg = self.segments.get_mut(&key).unwrap();
        let stream = seg.stream;
        let pool = seg.stream as usize * 2 + seg.small as usize;
        let b = seg.blocks.remove(&addr).unwrap();
        debug_assert_eq!(b.state, State::PendingFree);
        let mut start = addr;
        let mut size = b.size;
        if let Some((&pa, pb)) = seg.blocks.range(..addr).next_back() {
            if pb.state == State::Inactive && pa + pb.size == addr {
                self.pools[pool].remove(&(pb.size, pa));
                start = pa;
                size += pb.size;
                seg.blocks.remove(&pa);
            }
        }
        if let Some(nb) = seg.blocks.get(&(addr + b.size)) {
            if nb.state == State::Inactive {
                self.pools[pool].remove(&(nb.size, addr + b.size));
                size += nb.size;
                seg.blocks.remove(&(addr + b.size));
            }
        }
        seg.blocks.insert(start, inactive(size, b.requested));
        self.pools[pool].insert((size, start));
        self.emit(
            Action::FreeCompleted,
            addr,
            b.requested,
            stream,
            b.tb,
            b.site,
        );
    }

    fn slot(&mut self) -> u32 {
        if let Some(s) = self.free_slots.pop() {
            s
        } else {
            self.slots.push(None);
            (self.slots.len() - 1) as u32
        }
    }

    fn vary(&mut self, site: u32) -> u64 {
        let s = &self.cat.sites[site as usize];
        let mut size = s.size.max(1);
        if s.vary {
            size = (size as f64 * (0.5 + self.rng.f64())) as u64;
            if size > 4096 {
                size = size / 2 * 2;
            }
        }
        // After the draw, so the generator's stream (and a scale of 1's output) is unchanged.
        if self.cfg.batch_scale != 1.0 {
            size = (size as f64 * self.cfg.batch_scale) as u64;
            if size > 4096 {
                size = size / 2 * 2;
            }
        }
        size.max(1)
    }

    fn build_step(&mut self) {
        let step = self.step;
        self.step += 1;
        let mut ops: Vec<Op> = Vec::new();
        if step == 0 {
            for i in 0..self.param_sizes.len() {
                let site = self.sites_param[i % self.sites_param.len()];
                ops.push(Op::Malloc {
                    site,
                    slot: PERSIST,
                    size: self.param_sizes[i],
                });
            }
        }
        // zero_grad(set_to_none=True): free last step's gradients
        for g in std::mem::take(&mut self.grads) {
            ops.push(Op::Free { slot: g });
        }
        let mut data = Vec::new();
        for &site in &self.sites_data.clone() {
            let slot = self.slot();
            let size = self.vary(site);
            ops.push(Op::Malloc { site, slot, size });
            data.push(slot);
        }
        // forward
        let mut acts = Vec::new();
        let mut temps: Vec<u32> = Vec::new();
        let nf = self.sites_fwd.len();
        let per_layer = (nf / self.cfg.layers as usize).max(8);
        for layer in 0..self.cfg.layers as usize {
            for j in 0..per_layer {
                let site = self.sites_fwd[(layer * per_layer + j) % nf];
                let slot = self.slot();
                let size = self.vary(site);
                ops.push(Op::Malloc { site, slot, size });
                if self.cat.sites[site as usize].role == Role::Temp {
                    temps.push(slot);
                } else {
                    acts.push(slot);
                }
                if !temps.is_empty() && self.rng.chance(0.6) {
                    let k = temps.len() - 1 - self.rng.below(temps.len().min(3) as u64) as usize;
                    ops.push(Op::Free {
                        slot: temps.remove(k),
                    });
                }
            }
        }
        for t in temps.drain(..) {
            ops.push(Op::Free { slot: t });
        }
        // backward
        let n_grads = self.param_sizes.len();
        let per_act = n_grads.div_ceil(acts.len().max(1));
        let mut g_i = 0;
        while let Some(a) = acts.pop() {
            for _ in 0..self.rng.range(1, 2) {
                let site = *self.rng.pick(&self.sites_bwd_temp);
                let slot = self.slot();
                let size = self.vary(site);
                ops.push(Op::Malloc { site, slot, size });
                ops.push(Op::Free { slot });
            }
            ops.push(Op::Free { slot: a });
            for _ in 0..per_act {
                if g_i < n_grads {
                    let site = self.sites_grad[g_i % self.sites_grad.len()];
                    let slot = self.slot();
                    ops.push(Op::Malloc {
                        site,
                        slot,
                        size: self.param_sizes[g_i],
                    });
                    self.grads.push(slot);
                    g_i += 1;
                }
            }
        }
        // optimizer
        if step == 0 {
            for i in 0..n_grads * 2 {
                let site = self.sites_opt_state[i % self.sites_opt_state.len()];
                ops.push(Op::Malloc {
                    site,
                    slot: PERSIST,
                    size: self.param_sizes[i / 2],
                });
            }
        }
        for i in 0..(n_grads / 3).max(2) {
            let site = self.sites_opt_temp[i % self.sites_opt_temp.len()];
            let slot = self.slot();
            let size = self.param_sizes[self.rng.below(n_grads as u64) as usize];
            ops.push(Op::Malloc { site, slot, size });
            ops.push(Op::Free { slot });
        }
        for d in data {
            ops.push(Op::Free { slot: d });
        }
        if self.cfg.oom && step % 50 == 7 {
            ops.push(Op::Oom {
                site: self.sites_fwd[0],
            });
        }
        if step > 0 && self.rng.chance(self.cfg.empty_cache_per_step) {
            let site = *self.rng.pick(&self.sites_empty);
            ops.push(Op::EmptyCache { site });
        }
        self.queue.extend(ops);
    }

    /// Execute one workload operation (emits zero or more events into `self.out`).
    pub fn step_op(&mut self) {
        self.op_count += 1;
        if !self.pending.is_empty() {
            let now = self.op_count;
            let mut i = 0;
            while i < self.pending.len() {
                if self.pending[i].0 <= now {
                    let (_, addr) = self.pending.remove(i);
                    self.free_completed(addr);
                } else {
                    i += 1;
                }
            }
        }
        let op = loop {
            if let Some(op) = self.queue.pop_front() {
                break op;
            }
            self.build_step();
        };
        match op {
            Op::Malloc { site, slot, size } => {
                let side = self.cat.sites[site as usize].side_stream;
                let ns = self.stream_ids.len() as u64;
                let stream = if ns > 1 && (side || self.rng.chance(0.04)) {
                    1 + self.rng.below(ns - 1) as u8
                } else {
                    0
                };
                let r = self.malloc(size, stream, site);
                if slot != PERSIST {
                    self.slots[slot as usize] = r.map(|addr| Live { addr, stream });
                }
            }
            Op::Free { slot } => {
                let live = self.slots[slot as usize].take();
                self.free_slots.push(slot);
                let leaked = live.is_some()
                    && self.cfg.leak_rate > 0.0
                    && self.leak_rng.chance(self.cfg.leak_rate);
                if let Some(l) = live.filter(|_| !leaked) {
                    self.free_requested(l.addr);
                    let p = if l.stream != 0 {
                        0.5
                    } else {
                        self.cfg.defer_prob
                    };
                    if self.rng.chance(p) {
                        let due = self.op_count + self.rng.range(1, 300);
                        self.pending.push((due, l.addr));
                    } else {
                        self.free_completed(l.addr);
                    }
                }
            }
            Op::EmptyCache { site } => {
                let tb = self.new_tb();
                self.release_cached(tb, site);
            }
            Op::Oom { site } => {
                let tb = self.new_tb();
                let size = self.cfg.cap + (1 << 30);
                self.emit(Action::Oom, 0, size, 0, tb, site);
            }
        }
    }

    pub fn stream_value(&self, s: u8) -> u64 {
        self.stream_ids[s as usize]
    }

    /// Check the final-state invariants of the simulation's own structures.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut reserved = 0;
        let mut prev_end = 0;
        let mut pool_blocks: Vec<BTreeSet<(u64, u64)>> = vec![BTreeSet::new(); self.pools.len()];
        for (&a, s) in &self.segments {
            if a != s.addr {
                return Err(format!("segment key {a} != addr {}", s.addr));
            }
            if a < prev_end {
                return Err(format!("segment {a:#x} overlaps previous"));
            }
            prev_end = a + s.size;
            reserved += s.size;
            let mut cur = a;
            let mut prev_inactive = false;
            for (&ba, b) in &s.blocks {
                if ba != cur {
                    return Err(format!(
                        "segment {a:#x}: block {ba:#x} not contiguous (expected {cur:#x})"
                    ));
                }
                if b.size == 0 || b.size % MIN_BLOCK != 0 {
                    return Err(format!("block {ba:#x} bad size {}", b.size));
                }
                if b.state == State::Inactive {
                    if prev_inactive {
                        return Err(format!("unmerged inactive blocks at {ba:#x}"));
                    }
                    pool_blocks[s.stream as usize * 2 + s.small as usize].insert((b.size, ba));
                } else if b.requested > b.size || round_size(b.requested) > b.size {
                    return Err(format!(
                        "block {ba:#x} requested {} > size {}",
                        b.requested, b.size
                    ));
                }
                prev_inactive = b.state == State::Inactive;
                cur += b.size;
            }
            if cur != a + s.size {
                return Err(format!(
                    "segment {a:#x}: blocks sum {} != total {}",
                    cur - a,
                    s.size
                ));
            }
            if !s.expandable && s.small && s.size != SMALL_BUFFER {
                return Err(format!("small segment {a:#x} of size {}", s.size));
            }
        }
        if reserved != self.reserved {
            return Err(format!("reserved {} != sum {}", self.reserved, reserved));
        }
        if pool_blocks != self.pools {
            return Err("free pools differ from inactive blocks".into());
        }
        for &(_, addr) in &self.pending {
            let s = &self.segments[&self.seg_key(addr)];
            if s.blocks[&addr].state != State::PendingFree {
                return Err(format!("pending block {addr:#x} not pending"));
            }
        }
        let n_pending: usize = self
            .segments
            .values()
            .flat_map(|s| s.blocks.values())
            .filter(|b| b.state == State::PendingFree)
            .count();
        if n_pending != self.pending.len() {
            return Err(format!(
                "{} pending blocks vs {} pending frees",
                n_pending,
                self.pending.len()
            ));
        }
        for l in self.slots.iter().flatten() {
            let s = &self.segments[&self.seg_key(l.addr)];
            if s.blocks.get(&l.addr).map(|b| b.state) != Some(State::Allocated) {
                return Err(format!(
                    "live allocation {:#x} not an allocated block",
                    l.addr
                ));
            }
        }
        Ok(())
    }
}

fn inactive(size: u64, requested: u64) -> Block {
    Block {
        size,
        requested,
        state: State::Inactive,
        tb: 0,
        site: u32::MAX,
    }
}

fn is_bwd(cat: &Catalog, s: u32) -> bool {
    cat.sites[s as usize]
        .frames
        .iter()
        .any(|&f| cat.frames[f as usize].name.contains("Engine::thread_main"))
}
