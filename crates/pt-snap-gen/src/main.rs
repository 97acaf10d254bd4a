use clap::Parser;
use pt_snap_gen::{calibrate_events, generate, Config, PlantedSite};
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::time::Instant;

/// Generate a realistic, deterministic PyTorch memory-snapshot pickle.
#[derive(Parser, Debug)]
#[command(name = "pt-snap-gen", version)]
struct Args {
    /// PRNG seed (same arguments -> byte-identical output)
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// approximate output size, e.g. 5M, 100M, 1G (ignored with --events; with
    /// --max-entries it sizes the simulated, un-truncated trace)
    #[arg(long, value_parser = parse_size, default_value = "5M")]
    target_bytes: u64,
    /// simulated events per device (overrides --target-bytes)
    #[arg(long)]
    events: Option<u64>,
    /// output file
    #[arg(long, short)]
    out: PathBuf,
    /// number of devices (one trace list each)
    #[arg(long, default_value_t = 1)]
    devices: u32,
    /// number of CUDA streams per device (1..=8)
    #[arg(long, default_value_t = 3)]
    streams: u8,
    /// expandable_segments:True mode (segment_map/segment_unmap)
    #[arg(long)]
    expandable: bool,
    /// keep only the last N events per device (ring buffer)
    #[arg(long)]
    max_entries: Option<u64>,
    /// emit an `oom` entry now and then
    #[arg(long)]
    oom: bool,
    /// approximate number of distinct call stacks
    #[arg(long, default_value_t = 300)]
    stacks: usize,
    /// an extra allocation site NAME holding BYTES (e.g. 256M) from the first event to the
    /// end, with its own frames (`<project>/planted.py`, function NAME); repeatable. Without
    /// --expandable the rest of the run is the run without it, so two runs differ by exactly
    /// these blocks (give BYTES as a multiple of 2 MiB of at least 10 MiB to keep every other
    /// block's size too)
    #[arg(long, value_name = "NAME:BYTES", value_parser = parse_planted)]
    planted_site: Vec<PlantedSite>,
    /// rank of a data-parallel job: the model is --seed's, the workload's random choices
    /// differ per rank (0: the plain --seed output)
    #[arg(long, default_value_t = 0)]
    rank: u32,
    /// fraction of frees that never happen (0..1): leaked allocations make the peaks grow
    #[arg(long, default_value_t = 0.0, value_parser = parse_fraction)]
    leak_rate: f64,
    /// the batch's size against --seed's (e.g. 1.25): inputs, activations and backward
    /// temporaries scale with it, parameters, gradients and optimizer state do not
    #[arg(long, default_value_t = 1.0, value_parser = parse_scale)]
    batch_scale: f64,
}

fn parse_scale(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 64.0 => Ok(v),
        _ => Err(format!("{s:?} is not a scale in (0, 64]")),
    }
}

fn parse_fraction(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        Ok(f) => Err(format!("{f} is not a fraction between 0 and 1")),
        Err(e) => Err(format!("bad fraction {s:?}: {e}")),
    }
}

fn parse_planted(s: &str) -> Result<PlantedSite, String> {
    let (name, bytes) = s
        .rsplit_once(':')
        .ok_or_else(|| format!("expected NAME:BYTES, got {s:?}"))?;
    if name.is_empty() {
        return Err(format!("the site in {s:?} has no name"));
    }
    let bytes = parse_size(bytes)?;
    if bytes == 0 {
        return Err(format!("the site in {s:?} holds no bytes"));
    }
    Ok(PlantedSite {
        name: name.to_owned(),
        bytes,
    })
}

fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mul) = match s.chars().last() {
        Some('k' | 'K') => (&s[..s.len() - 1], 1e3),
        Some('m' | 'M') => (&s[..s.len() - 1], 1e6),
        Some('g' | 'G') => (&s[..s.len() - 1], 1e9),
        _ => (s, 1.0),
    };
    num.parse::<f64>()
        .map(|n| (n * mul) as u64)
        .map_err(|e| format!("bad size {s:?}: {e}"))
}

fn main() {
    let a = Args::parse();
    let mut cfg = Config::small(a.seed);
    cfg.devices = a.devices.clamp(1, 8);
    cfg.streams = a.streams.clamp(1, 8);
    cfg.expandable = a.expandable;
    cfg.max_entries = a.max_entries;
    cfg.oom = a.oom;
    cfg.sites = a.stacks;
    cfg.planted = a.planted_site;
    cfg.rank = a.rank;
    cfg.leak_rate = a.leak_rate;
    cfg.batch_scale = a.batch_scale;
    let t0 = Instant::now();
    cfg.events_per_device = match a.events {
        Some(n) => n,
        None => calibrate_events(&cfg, a.target_bytes),
    };
    let file = match File::create(&a.out) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("pt-snap-gen: cannot create {}: {e}", a.out.display());
            std::process::exit(1);
        }
    };
    match generate(&cfg, BufWriter::with_capacity(1 << 20, file)) {
        Ok(s) => {
            eprintln!(
                "pt-snap-gen: wrote {} ({} bytes, {:.1} MB) in {:.1}s",
                a.out.display(),
                s.bytes,
                s.bytes as f64 / 1e6,
                t0.elapsed().as_secs_f64()
            );
            eprintln!(
                "  events per device: {:?} (simulated {:?})",
                s.events, s.simulated
            );
            eprintln!(
                "  segments: {}, blocks: {} ({} active_allocated, {} active_pending_free)",
                s.segments, s.blocks, s.active_blocks, s.pending_free_blocks
            );
            eprintln!(
                "  distinct stacks: {}, frame lists: {}, memo entries: {}",
                s.distinct_stacks, s.frame_lists, s.memo_entries
            );
        }
        Err(e) => {
            eprintln!("pt-snap-gen: write failed: {e}");
            let _ = std::fs::remove_file(&a.out);
            std::process::exit(1);
        }
    }
}
