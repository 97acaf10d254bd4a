//! pt-snap-gen: deterministic generator of realistic PyTorch memory snapshots
//! (`torch.cuda.memory._dump_snapshot()` pickles), from a few MB to 1 GB.
//!
//! The generator simulates the CUDA caching allocator forward in time (small/large
//! pools, best fit, splitting, merging, cudaMalloc/empty_cache, expandable segments,
//! several streams with deferred frees, several devices) and streams the result into
//! a CPython-compatible protocol-4 pickle. Memory use is bounded by the live
//! allocator state: each device is simulated twice with the same seed, once to learn
//! the final state (written first, as `segments`) and once to stream its trace.

#![forbid(unsafe_code)]

/// The streaming protocol-4 writer lives with the decoder in `pt-snap-pickle` (split shares it).
pub use pt_snap_pickle::write as pickle;
pub mod rng;
pub mod sim;
pub mod stacks;

use pickle::PickleWriter;
use rng::Rng;
use sim::{Action, DeviceSim, Event, SimConfig, State};
use stacks::{Catalog, Role};
use std::collections::{BTreeSet, HashMap};
use std::io::{self, Write};

/// Generation parameters.
#[derive(Clone, Debug)]
pub struct Config {
    pub seed: u64,
    /// simulated events per device (before ring-buffer truncation)
    pub events_per_device: u64,
    pub devices: u32,
    pub streams: u8,
    pub expandable: bool,
    /// keep only the last N events per device (ring buffer)
    pub max_entries: Option<u64>,
    pub oom: bool,
    /// approximate number of distinct call stacks
    pub sites: usize,
    pub layers: u32,
    /// reserved-memory cap per device in bytes
    pub device_cap: u64,
    /// Extra allocation sites, each allocated once before the workload starts and held to
    /// the end (`--planted-site`): two runs that differ only here differ by exactly these
    /// blocks, whatever else happens.
    pub planted: Vec<PlantedSite>,
    /// The rank of a data-parallel job: every rank of one `seed` trains the same model (same
    /// stacks, parameters and streams), and the rank varies the workload's random choices
    /// (tensor sizes, frees, streams). Rank 0 is the plain `seed` output.
    pub rank: u32,
    /// The fraction of frees that never happen: the block stays allocated to the end, as a
    /// tensor kept alive by a forgotten reference would, so the peaks grow with the trace.
    /// Drawn from a generator of its own, so 0 leaves the output unchanged.
    pub leak_rate: f64,
    /// The batch's size against the seed's: every input and activation (and the backward
    /// pass's temporaries) scaled by it, parameters, gradients and optimizer state not.
    /// 1 leaves the output unchanged.
    pub batch_scale: f64,
}

/// An allocation site added to the run: `<project>/planted.py` function `name` holds
/// `bytes` (as requested; the block is that rounded up to the allocator's sizes) from the
/// first event on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlantedSite {
    pub name: String,
    pub bytes: u64,
}

impl Config {
    /// A small default configuration (~20k events, ~2 MB).
    pub fn small(seed: u64) -> Config {
        Config {
            seed,
            events_per_device: 20_000,
            devices: 1,
            streams: 3,
            expandable: false,
            max_entries: None,
            oom: false,
            sites: 300,
            layers: 12,
            device_cap: 40 << 30,
            planted: Vec::new(),
            rank: 0,
            leak_rate: 0.0,
            batch_scale: 1.0,
        }
    }

    /// The simulation parameters derived from this config.
    pub fn sim_config(&self) -> SimConfig {
        SimConfig {
            streams: self.streams.clamp(1, 8),
            expandable: self.expandable,
            oom: self.oom,
            layers: self.layers.max(1),
            cap: self.device_cap,
            empty_cache_per_step: 0.08,
            defer_prob: 0.06,
            no_context_prob: 0.01,
            rank: self.rank,
            leak_rate: self.leak_rate.clamp(0.0, 1.0),
            batch_scale: if self.batch_scale.is_finite() && self.batch_scale > 0.0 {
                self.batch_scale
            } else {
                1.0
            },
        }
    }
}

/// What was written.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub bytes: u64,
    /// events kept in the file, per device
    pub events: Vec<u64>,
    /// events simulated, per device
    pub simulated: Vec<u64>,
    pub segments: u64,
    pub blocks: u64,
    pub active_blocks: u64,
    pub pending_free_blocks: u64,
    /// distinct call stacks referenced by the file
    pub distinct_stacks: u64,
    /// frames lists written (one per traceback object)
    pub frame_lists: u64,
    pub memo_entries: u32,
}

#[derive(Clone, Copy)]
enum K {
    Segments,
    DeviceTraces,
    AllocatorSettings,
    ExternalAnnotations,
    Device,
    Address,
    TotalSize,
    AllocatedSize,
    ActiveSize,
    RequestedSize,
    Stream,
    SegmentType,
    SegmentPoolId,
    IsExpandable,
    Frames,
    Blocks,
    Size,
    State,
    Action,
    Addr,
    DeviceFree,
    TimeUs,
    CompileContext,
    UserMetadata,
    Name,
    Filename,
    Line,
    Large,
    Small,
    StActive,
    StPending,
    StInactive,
    AAlloc,
    AFreeReq,
    AFreeComp,
    ASegAlloc,
    ASegFree,
    ASegMap,
    ASegUnmap,
    AOom,
    Count,
}

const KEY_STR: [&str; K::Count as usize] = [
    "segments",
    "device_traces",
    "allocator_settings",
    "external_annotations",
    "device",
    "address",
    "total_size",
    "allocated_size",
    "active_size",
    "requested_size",
    "stream",
    "segment_type",
    "segment_pool_id",
    "is_expandable",
    "frames",
    "blocks",
    "size",
    "state",
    "action",
    "addr",
    "device_free",
    "time_us",
    "compile_context",
    "user_metadata",
    "name",
    "filename",
    "line",
    "large",
    "small",
    "active_allocated",
    "active_pending_free",
    "inactive",
    "alloc",
    "free_requested",
    "free_completed",
    "segment_alloc",
    "segment_free",
    "segment_map",
    "segment_unmap",
    "oom",
];

/// Snapshot writer state: shared (memoized) objects.
struct Out<'c, W: Write> {
    w: PickleWriter<W>,
    cat: &'c Catalog,
    keys: [Option<u32>; K::Count as usize],
    frame_memo: Vec<Option<u32>>,
    /// traceback id (per device) -> memo index of its frames list
    tb_memo: HashMap<u64, u32>,
    empty_frames: Option<u32>,
    sites_used: BTreeSet<u32>,
    frame_lists: u64,
}

impl<W: Write> Out<'_, W> {
    fn k(&mut self, k: K) -> io::Result<()> {
        let i = k as usize;
        let mut slot = self.keys[i];
        self.w.shared_str(&mut slot, KEY_STR[i])?;
        self.keys[i] = slot;
        Ok(())
    }

    fn empty_list(&mut self) -> io::Result<()> {
        match self.empty_frames {
            Some(id) => self.w.get(id),
            None => {
                let id = self.w.begin_list(0)?;
                self.w.end()?;
                self.empty_frames = Some(id);
                Ok(())
            }
        }
    }

    /// The frames list of traceback `tb` (shared by every object of that traceback).
    fn frames(&mut self, tb: u64, site: u32) -> io::Result<()> {
        if tb == 0 {
            return self.empty_list();
        }
        if let Some(&id) = self.tb_memo.get(&tb) {
            return self.w.get(id);
        }
        let cat = self.cat;
        let frames = &cat.sites[site as usize].frames;
        self.sites_used.insert(site);
        self.frame_lists += 1;
        let id = self.w.begin_list(frames.len())?;
        for &f in frames {
            if let Some(fid) = self.frame_memo[f as usize] {
                self.w.get(fid)?;
                continue;
            }
            let fr = &cat.frames[f as usize];
            let fid = self.w.begin_dict(3)?;
            self.k(K::Name)?;
            self.w.str(&fr.name)?;
            self.k(K::Filename)?;
            self.w.str(&fr.filename)?;
            self.k(K::Line)?;
            self.w.int(fr.line as i64)?;
            self.w.end()?;
            self.frame_memo[f as usize] = Some(fid);
        }
        self.w.end()?;
        self.tb_memo.insert(tb, id);
        Ok(())
    }

    fn segment(&mut self, sim: &DeviceSim, s: &sim::Segment) -> io::Result<()> {
        self.w.begin_dict(12)?;
        self.k(K::Device)?;
        self.w.int(sim.device as i64)?;
        self.k(K::Address)?;
        self.w.int(s.addr as i64)?;
        self.k(K::TotalSize)?;
        self.w.int(s.size as i64)?;
        self.k(K::AllocatedSize)?;
        self.w.int(s.allocated_size() as i64)?;
        self.k(K::ActiveSize)?;
        self.w.int(s.active_size() as i64)?;
        self.k(K::RequestedSize)?;
        self.w.int(s.requested_size() as i64)?;
        self.k(K::Stream)?;
        self.w.int(sim.stream_value(s.stream) as i64)?;
        self.k(K::SegmentType)?;
        self.k(if s.small { K::Small } else { K::Large })?;
        self.k(K::SegmentPoolId)?;
        self.w.tuple2_int(0, 0)?;
        self.k(K::IsExpandable)?;
        self.w.bool(s.expandable)?;
        // PyTorch adds 'frames' after the fact when a context exists (so it comes
        // last), and in place (as the shared empty list) when it does not.
        if s.tb == 0 {
            self.k(K::Frames)?;
            self.empty_list()?;
        }
        self.k(K::Blocks)?;
        self.w.begin_list(s.blocks.len())?;
        for (&ba, b) in &s.blocks {
            self.w.begin_dict(5)?;
            self.k(K::Address)?;
            self.w.int(ba as i64)?;
            self.k(K::Size)?;
            self.w.int(b.size as i64)?;
            self.k(K::RequestedSize)?;
            self.w.int(b.requested as i64)?;
            self.k(K::State)?;
            self.k(match b.state {
                State::Allocated => K::StActive,
                State::PendingFree => K::StPending,
                State::Inactive => K::StInactive,
            })?;
            self.k(K::Frames)?;
            if b.state == State::Inactive {
                self.empty_list()?;
            } else {
                self.frames(b.tb, b.site)?;
            }
            self.w.end()?;
        }
        self.w.end()?;
        if s.tb != 0 {
            self.k(K::Frames)?;
            self.frames(s.tb, s.site)?;
        }
        self.w.end()
    }

    fn event(&mut self, sim: &DeviceSim, e: &Event) -> io::Result<()> {
        let has_frames = e.tb != 0;
        self.w.begin_dict(7 + has_frames as usize)?;
        self.k(K::Action)?;
        self.k(match e.action {
            Action::Alloc => K::AAlloc,
            Action::FreeRequested => K::AFreeReq,
            Action::FreeCompleted => K::AFreeComp,
            Action::SegmentAlloc => K::ASegAlloc,
            Action::SegmentFree => K::ASegFree,
            Action::SegmentMap => K::ASegMap,
            Action::SegmentUnmap => K::ASegUnmap,
            Action::Oom => K::AOom,
        })?;
        if e.action == Action::Oom {
            self.k(K::DeviceFree)?;
            self.w.int(e.device_free as i64)?;
        } else {
            self.k(K::Addr)?;
            self.w.int(e.addr as i64)?;
        }
        self.k(K::Size)?;
        self.w.int(e.size as i64)?;
        self.k(K::Stream)?;
        self.w.int(sim.stream_value(e.stream) as i64)?;
        self.k(K::TimeUs)?;
        self.w.int(e.time_us as i64)?;
        self.k(K::CompileContext)?;
        self.w.str("N/A")?; // a fresh std::string -> str per entry in PyTorch
        self.k(K::UserMetadata)?;
        self.w.str("")?;
        if has_frames {
            self.k(K::Frames)?;
            self.frames(e.tb, e.site)?;
        }
        self.w.end()?;
        if e.action == Action::FreeCompleted {
            // last use of an allocation's traceback
            self.tb_memo.remove(&e.tb);
        }
        Ok(())
    }

    fn allocator_settings(&mut self, expandable: bool) -> io::Result<()> {
        self.w.begin_dict(9)?;
        self.w.str("PYTORCH_CUDA_ALLOC_CONF")?;
        self.w.str(if expandable {
            "expandable_segments:True"
        } else {
            ""
        })?;
        self.w.str("max_split_size")?;
        self.w.int(-1)?;
        self.w.str("garbage_collection_threshold")?;
        self.w.float(0.0)?;
        self.w.str("expandable_segments")?;
        self.w.bool(expandable)?;
        self.w.str("pinned_num_register_threads")?;
        self.w.int(1)?;
        self.w.str("release_lock_on_cudamalloc")?;
        self.w.bool(false)?;
        self.w.str("pinned_use_cuda_host_register")?;
        self.w.bool(false)?;
        self.w.str("graph_capture_record_stream_reuse")?;
        self.w.bool(false)?;
        self.w.str("roundup_power2_divisions")?;
        self.w.begin_dict(16)?;
        for i in 0..16 {
            self.w.str(&(1u64 << i).to_string())?;
            self.w.int(0)?;
        }
        self.w.end()?;
        self.w.end()
    }
}

/// The `time_us` of each event of `device`'s trace, by position (= event id): the
/// simulation run again, for tests that check what a decoder read from a written file.
pub fn event_times(cfg: &Config, device: u32) -> Vec<i64> {
    let cat = catalog(cfg);
    let mut times = Vec::new();
    run_device(cfg, &cat, device, |_, _, e| {
        times.push(e.time_us as i64);
        Ok(())
    })
    .expect("collecting times never fails");
    times
}

fn run_device<'c>(
    cfg: &Config,
    cat: &'c Catalog,
    device: u32,
    mut on_event: impl FnMut(&DeviceSim<'c>, u64, &Event) -> io::Result<()>,
) -> io::Result<DeviceSim<'c>> {
    let mut sim = DeviceSim::new(cat, cfg.sim_config(), cfg.seed, device);
    for site in cat.of_role(Role::Planted) {
        sim.plant(site);
    }
    // Planted events come on top of the workload's, so that the workload runs as far as it
    // does without them.
    let budget = cfg.events_per_device + sim.n_events;
    let mut idx = 0u64;
    let mut buf = Vec::new();
    while sim.n_events < budget {
        sim.step_op();
        std::mem::swap(&mut buf, &mut sim.out);
        for e in buf.drain(..) {
            on_event(&sim, idx, &e)?;
            idx += 1;
        }
    }
    Ok(sim)
}

/// Build the call-stack catalog for a seed.
pub fn catalog(cfg: &Config) -> Catalog {
    let mut cat = Catalog::build(&mut Rng::new(cfg.seed).fork(0xCA7A), cfg.sites.max(40));
    for p in &cfg.planted {
        cat.plant(&p.name, p.bytes);
    }
    cat
}

/// Simulate all devices (no output) and return their final states.
pub fn simulate<'c>(cfg: &Config, cat: &'c Catalog) -> Vec<DeviceSim<'c>> {
    (0..cfg.devices.max(1))
        .map(|d| run_device(cfg, cat, d, |_, _, _| Ok(())).expect("no io"))
        .collect()
}

/// Generate a snapshot pickle into `out`.
pub fn generate<W: Write>(cfg: &Config, out: W) -> io::Result<Summary> {
    let cat = catalog(cfg);
    // pass 1: final states
    let finals = simulate(cfg, &cat);
    let mut summary = Summary::default();
    let mut starts = Vec::new();
    for f in &finals {
        let total = f.n_events;
        let keep = cfg.max_entries.map_or(total, |m| m.min(total));
        starts.push(total - keep);
        summary.events.push(keep);
        summary.simulated.push(total);
    }
    let mut o = Out {
        w: PickleWriter::new(out)?,
        cat: &cat,
        keys: [None; K::Count as usize],
        frame_memo: vec![None; cat.frames.len()],
        tb_memo: HashMap::new(),
        empty_frames: None,
        sites_used: BTreeSet::new(),
        frame_lists: 0,
    };
    o.w.begin_dict(4)?;
    o.k(K::Segments)?;
    let n_segs: usize = finals.iter().map(|f| f.segments.len()).sum();
    o.w.begin_list(n_segs)?;
    // traceback ids are per device: keep each device's map separate
    let mut tb_maps: Vec<HashMap<u64, u32>> = Vec::new();
    for f in &finals {
        o.tb_memo = HashMap::new();
        for s in f.segments.values() {
            o.segment(f, s)?;
            summary.segments += 1;
            for b in s.blocks.values() {
                summary.blocks += 1;
                match b.state {
                    State::Allocated => summary.active_blocks += 1,
                    State::PendingFree => summary.pending_free_blocks += 1,
                    State::Inactive => {}
                }
            }
        }
        tb_maps.push(std::mem::take(&mut o.tb_memo));
    }
    o.w.end()?;
    o.k(K::DeviceTraces)?;
    o.w.begin_list(finals.len())?;
    let n_dev = finals.len();
    drop(finals);
    for d in 0..n_dev {
        o.tb_memo = std::mem::take(&mut tb_maps[d]);
        o.w.begin_list(summary.events[d] as usize)?;
        let start = starts[d];
        let sim = run_device(cfg, &cat, d as u32, |sim, idx, e| {
            if idx >= start {
                o.event(sim, e)
            } else {
                Ok(())
            }
        })?;
        debug_assert_eq!(sim.n_events, summary.simulated[d]);
        o.w.end()?;
    }
    o.w.end()?;
    o.k(K::AllocatorSettings)?;
    o.allocator_settings(cfg.expandable)?;
    o.k(K::ExternalAnnotations)?;
    o.w.begin_list(0)?;
    o.w.end()?;
    o.w.end()?;
    summary.distinct_stacks = o.sites_used.len() as u64;
    summary.frame_lists = o.frame_lists;
    summary.memo_entries = o.w.memo_len();
    let (_, bytes) = o.w.finish()?;
    summary.bytes = bytes;
    Ok(summary)
}

/// A `Write` sink that only counts bytes.
pub struct CountingSink(pub u64);

impl Write for CountingSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Choose `events_per_device` so that the output is about `target_bytes`.
pub fn calibrate_events(cfg: &Config, target_bytes: u64) -> u64 {
    let probe_events = 40_000u64;
    let mut probe = cfg.clone();
    probe.events_per_device = probe_events;
    probe.max_entries = None;
    let s = generate(&probe, CountingSink(0)).expect("counting sink");
    let per_event = s.bytes as f64 / (probe_events * probe.devices.max(1) as u64) as f64;
    ((target_bytes as f64 / per_event) / cfg.devices.max(1) as f64).max(1000.0) as u64
}
