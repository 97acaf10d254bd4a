//! The fuzz targets, one function each, shared by `fuzz/fuzz_targets/*.rs` (cargo-fuzz) and
//! the stable runner (`pt-snap-fuzz`): one way to run each.
//!
//! Each function takes arbitrary bytes and must return, whatever they are; errors are
//! expected answers, not findings. The returned string names the path the input took (the
//! stage that refused it and its message, or what succeeded) and is the runner's feedback.
//! Work is kept small — row windows of 20, at most two devices, at most 16 shards per
//! device — so one input runs in milliseconds.
//!
//! Some targets also check a property, and panic (a finding) when it does not hold:
//! `dataset_write` that a dataset it wrote validates, the decode targets that a compressed
//! input decodes exactly as its payload and a damaged stream is refused
//! ([`compressed_twin`]), `sql` that no statement changes a file and the dataset still
//! answers.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use pt_snap_dataset::read::{Dataset, ValidationCache};
use pt_snap_dataset::write::{self, Layout};
use pt_snap_db::{Metadata, SnapshotDb, METADATA_SCHEMA_VERSION};
use pt_snap_import::{ImportRequest, ReplayMode};
use pt_snap_model::decode::Detected;
use pt_snap_model::DecodeError;
use pt_snap_pickle::{Arena, KeepAll, Limits, Node, Val};
use pt_snap_query::{registry, Analyzer, QueryRequest, TimelineRequest};
use pt_snap_report::{Metric, PeakRequest, TreeRequest};
use pt_snap_testkit::ShortReads;
use rusqlite::Connection;
use sha2::{Digest, Sha256};

use crate::mutate::{self, Seed};
use crate::packing::Packing;
use crate::rng::Rng;

/// A fuzz target.
pub struct Target {
    /// The name used by `scripts/fuzz`, the runner and `fuzz/fuzz_targets/<name>.rs`.
    pub name: &'static str,
    pub about: &'static str,
    pub run: fn(&[u8]) -> String,
    /// File name endings of the fixtures used as seeds.
    pub seed_suffixes: &'static [&'static str],
    /// Other targets whose `fuzz/seeds/<name>/` are seeds of this one too.
    pub shared_seeds: &'static [&'static str],
    /// How its mutants are made.
    pub mutator: fn(&mut Rng, Seed<'_>, Seed<'_>, usize) -> Vec<u8>,
    /// The most memory (bytes) an input of `n` bytes may take, when the code under test
    /// documents such a bound; the runner reports inputs that exceed it.
    pub memory_bound: Option<fn(usize) -> u64>,
}

const PICKLES: &[&str] = &[".pkl", ".pickle"];
const JSON: &[&str] = &[".json"];

pub static TARGETS: &[Target] = &[
    Target {
        name: "pickle_decode",
        about: "pt_snap_pickle::load with KeepAll (then a walk of the object graph), and \
                pt_snap_model::decode (the compacting streaming decoder) reading in odd-sized slices",
        run: pickle_decode,
        seed_suffixes: PICKLES,
        shared_seeds: &[],
        mutator: mutate::mutate,
        memory_bound: Some(pickle_memory_bound),
    },
    Target {
        name: "import_query",
        about: "decode → pt_snap_import into an in-memory SQLite → every query template \
                (required event ids: first, last, peak, -1), both timelines, their times, and both reports \
                (peak-memory per metric, memory-tree as text/JSON/HTML) on up to two devices",
        run: import_query,
        seed_suffixes: PICKLES,
        // JSON and compressed snapshots, and through them the lenient replay of each shape.
        shared_seeds: &["pickle_decode", "json_decode"],
        mutator: mutate::mutate,
        memory_bound: None,
    },
    Target {
        name: "dataset_write",
        about: "decode → pt_snap_dataset::write plan with a small events-per-slice → check → \
                shards, manifest (native; msinsight for half the inputs it accepts) in a temp dir → \
                read back with Dataset::open (full validation)",
        run: dataset_write,
        seed_suffixes: PICKLES,
        shared_seeds: &["pickle_decode", "json_decode"],
        mutator: mutate::mutate,
        memory_bound: None,
    },
    Target {
        name: "json_decode",
        about: "JSON snapshots: pt_snap_pickle::load_json with KeepAll (then a walk of the \
                object graph), and pt_snap_model::decode (which detects JSON by its first bytes) \
                reading in odd-sized slices; seeds are fuzz/seeds/json_decode/",
        run: json_decode,
        seed_suffixes: JSON,
        shared_seeds: &[],
        mutator: mutate::mutate,
        memory_bound: Some(pickle_memory_bound),
    },
    Target {
        name: "sql",
        about: "one statement through `pt-snap sql` (the debug binary, or $PT_SNAP_FUZZ_CLI) \
                over a small two-rank Parquet dataset `pt-snap export` made: whatever the \
                statement, pt-snap must not die, no file in or beside the dataset may change, \
                and the dataset must still answer; seeds are fuzz/seeds/sql/ ($DS: the dataset, \
                $OUT: a directory beside it)",
        run: sql,
        seed_suffixes: &[],
        shared_seeds: &[],
        mutator: mutate::mutate_sql,
        memory_bound: None,
    },
];

/// Not a fuzz target: misbehaves on purpose so the runner's limits can be tested
/// (`tests/runner.rs`). Never listed, found by name only.
pub static SELFTEST: Target = Target {
    name: "_selftest",
    about: "misbehaves as its input says: panic, hang, alloc (8 GiB at once), rss (touch \
            512 MiB), stack (unbounded recursion), abort; anything else returns",
    run: selftest,
    seed_suffixes: &[],
    shared_seeds: &[],
    mutator: mutate::mutate,
    memory_bound: None,
};

pub fn find(name: &str) -> Option<&'static Target> {
    TARGETS.iter().chain([&SELFTEST]).find(|t| t.name == name)
}

fn selftest(data: &[u8]) -> String {
    fn recurse(n: u64, pad: &mut [u8; 256]) -> u64 {
        pad[n as usize % 256] = n as u8;
        if n == u64::MAX {
            return 0;
        }
        let mut inner = [0u8; 256];
        recurse(std::hint::black_box(n + 1), &mut inner) + u64::from(pad[0])
    }
    match data {
        b"panic" => panic!("selftest panic"),
        b"hang" => loop {
            std::thread::sleep(std::time::Duration::from_millis(50));
        },
        b"alloc" => format!("{}", std::hint::black_box(vec![1u8; 8 << 30]).len()),
        b"rss" => {
            // A byte a page makes each page resident: fast even unoptimised, where filling
            // all 512 MiB byte by byte outlasted the runner's 2 s timeout on a loaded machine.
            let mut big = vec![0u8; 512 << 20];
            for page in big.chunks_mut(4096) {
                page[0] = 1;
            }
            format!("{}", std::hint::black_box(big).len())
        }
        b"stack" => format!("{}", recurse(0, &mut [0; 256])),
        b"abort" => std::process::abort(),
        _ => "ok".to_owned(),
    }
}

/// `pt-snap-pickle`'s documented bound (crate docs, "Hostile input"): 64 bytes of heap
/// per input byte plus 192 MiB; 64 MiB more for the process around it.
pub fn pickle_memory_bound(n: usize) -> u64 {
    64 * n as u64 + (192 << 20) + (64 << 20)
}

/// A deterministic number from the input, to vary settings per input.
fn mix(data: &[u8]) -> u64 {
    data.iter().take(256).fold(data.len() as u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// An error message cut to 240 bytes (some echo long stretches of the input).
fn short(e: &dyn std::fmt::Display) -> String {
    let mut s = e.to_string();
    if s.len() > 240 {
        let mut end = 240;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

/// `2^k` bucket of `n`, so outcomes differ by magnitude, not by exact counts.
fn log2(n: usize) -> u32 {
    usize::BITS - n.leading_zeros()
}

/// Visits every node reachable from `root` once (iteratively: depth is unbounded) and
/// returns how many there were.
fn walk(arena: &Arena, root: Val) -> usize {
    let mut seen = vec![false; arena.capacity_used()];
    let mut todo = vec![root];
    let mut count = 0;
    while let Some(v) = todo.pop() {
        let Val::Ref(id) = arena.resolve(v) else {
            continue;
        };
        if std::mem::replace(&mut seen[id.index()], true) {
            continue;
        }
        count += 1;
        match &arena[id] {
            Node::List(items) | Node::Set(items) => todo.extend(items),
            Node::Tuple(items) | Node::FrozenSet(items) => todo.extend(items.iter()),
            Node::Dict(items) => todo.extend(items.iter().flat_map(|(k, v)| [*k, *v])),
            Node::Str(s) => count += usize::from(s.is_empty()),
            Node::Bytes(_) | Node::ByteArray(_) | Node::BigInt(_) | Node::Handle(_) => {}
        }
    }
    count
}

/// KeepAll decode through `load` (a pickle or JSON loader), summarised.
fn keep_all(
    loaded: Result<pt_snap_pickle::Pickle, pt_snap_pickle::Error>,
    input_len: usize,
) -> String {
    match loaded {
        Ok(p) => {
            assert!(p.bytes_read <= input_len as u64, "read past the input");
            let root = match p.arena.resolve(p.root) {
                Val::Ref(id) => p.arena[id].type_name(),
                v => p.arena.type_name(v),
            };
            format!("ok {root} nodes~2^{}", log2(walk(&p.arena, p.root)))
        }
        Err(e) => format!("err {}", short(&e)),
    }
}

/// `pt_snap_model::decode`, reading `data` in slices of a size chosen by the input.
fn model_decode(data: &[u8]) -> String {
    let slice = [1, 7, 4096, 1 << 16][(mix(data) % 4) as usize];
    match pt_snap_model::decode(ShortReads::new(data, slice), &mut |_| {}) {
        Ok(s) => format!(
            "ok {:?} devices={} events~2^{} stacks~2^{}",
            s.layout,
            s.device_traces.len(),
            log2(s.device_traces.iter().map(Vec::len).sum()),
            log2(s.stacks.stack_count()),
        ),
        Err(e) => format!("err {}", short(&e)),
    }
}

/// Target `pickle_decode`.
pub fn pickle_decode(data: &[u8]) -> String {
    let plain = keep_all(
        pt_snap_pickle::load(data, &mut KeepAll, &Limits::default()),
        data.len(),
    );
    format!(
        "load: {plain} | decode: {} | {}",
        model_decode(data),
        compressed_twin(data)
    )
}

/// Target `json_decode`.
pub fn json_decode(data: &[u8]) -> String {
    let plain = keep_all(
        pt_snap_pickle::load_json(data, &mut KeepAll, &Limits::default()),
        data.len(),
    );
    format!(
        "load_json: {plain} | decode: {} | {}",
        model_decode(data),
        compressed_twin(data)
    )
}

/// Inputs up to this size also get a compressed twin (compressing costs more than decoding).
const TWIN_MAX: usize = 256 << 10;

/// A summary of a decode that two shapes of one payload must agree on.
fn decode_summary(result: &Result<pt_snap_model::Snapshot, DecodeError>) -> String {
    match result {
        Ok(s) => format!("{:?}\n{:?}\n{:?}", s.segments, s.device_traces, s.layout),
        // Where the bytes are no snapshot the words differ ("the gzip stream holds neither").
        Err(DecodeError::Unrecognized(_)) => "unrecognized".into(),
        Err(e) => format!("err {e}"),
    }
}

/// `data` compressed (the format chosen by the input), and for most inputs altered after
/// compression: the decoder must read an intact stream exactly as the payload it holds (a
/// second member or NUL padding after a gzip member included), and refuse a damaged one — a
/// flipped checksum byte, a cut end, bytes after the stream — as a corrupt stream whenever
/// the payload alone decodes. A failure of either is a finding.
pub fn compressed_twin(data: &[u8]) -> String {
    if data.len() > TWIN_MAX || matches!(Detected::of(data), Detected::Compressed(_)) {
        return "twin: -".into();
    }
    let h = mix(data).rotate_right(17);
    let packing = Packing::ALL[(h % 3) as usize];
    let mut bytes = packing.pack(data);
    let n = bytes.len();
    let tail: &[u8] = b"\x00 more bytes after the payload";
    // (what was done, whether the stream stays intact, the payload it then holds)
    let (what, intact, payload) = match (h / 3) % 7 {
        0 => ("intact", true, data.to_vec()),
        1 => {
            bytes.extend_from_slice(&packing.pack(tail));
            ("second unit", true, [data, tail].concat())
        }
        2 if packing == Packing::Gzip => {
            bytes.extend_from_slice(&[0; 7]);
            ("nul padding", true, data.to_vec())
        }
        2 => {
            bytes.extend_from_slice(&[0; 7]);
            ("nul bytes after", false, data.to_vec())
        }
        3 => {
            bytes[packing.checksum_byte(n)] ^= 0x20;
            ("checksum flipped", false, data.to_vec())
        }
        4 => {
            bytes.truncate(n - 1 - (h >> 40) as usize % n.min(12));
            ("cut", false, data.to_vec())
        }
        5 => {
            bytes.extend_from_slice(b"garbage");
            ("garbage after", false, data.to_vec())
        }
        _ => {
            // The first byte of another member, frame or stream, and nothing more.
            bytes.push(packing.pack(b"")[0]);
            ("a unit's first byte after", false, data.to_vec())
        }
    };
    let want = pt_snap_model::decode_slice(&payload);
    let got = pt_snap_model::decode_slice(&bytes);
    let name = packing.name();
    if intact {
        let (w, g) = (decode_summary(&want), decode_summary(&got));
        assert!(
            w == g,
            "{name} {what}: the compressed input decodes otherwise than its payload:\n payload: {}\n {name}: {}",
            short(&w),
            short(&g)
        );
    } else {
        match (&want, &got) {
            (_, Err(DecodeError::Compression(f, _))) if *f == name => {}
            (Err(_), Err(_)) => {}
            _ => panic!(
                "{name} {what}: a damaged stream was not refused as one: {}",
                short(&decode_summary(&got))
            ),
        }
    }
    format!(
        "twin {name} {what}: {}",
        match &got {
            Ok(_) => "ok".to_owned(),
            Err(e) => short(e),
        }
    )
}

fn request(data: &[u8], name: &str, replay: ReplayMode) -> ImportRequest {
    ImportRequest {
        replay,
        ..ImportRequest::new(
            name,
            pt_snap_import::sha256_hex(data).expect("hashing a slice cannot fail"),
            data.len() as u64,
            "2026-01-01T00:00:00.000000+00:00",
        )
    }
}

/// Target `import_query`.
pub fn import_query(data: &[u8]) -> String {
    let snapshot = match pt_snap_model::decode_slice(data) {
        Ok(s) => s,
        Err(e) => return format!("decode: {}", short(&e)),
    };
    // The strict replay (the reference's) for most inputs, the lenient one for a quarter.
    let replay = if mix(data) % 4 == 3 {
        ReplayMode::Lenient
    } else {
        ReplayMode::Strict
    };
    let conn = Connection::open_in_memory().expect("in-memory SQLite");
    let summary = match pt_snap_import::import_snapshot(
        &snapshot,
        &conn,
        &request(data, "fuzz.pickle", replay),
        &mut |_| {},
    ) {
        Ok(s) => s,
        Err(e) => return format!("import: {}", short(&e)),
    };
    drop(snapshot);
    let db = SnapshotDb::from_connection(conn).expect("an imported database has its schema");
    let analyzer = Analyzer::new(db).expect("an imported database opens");
    let mut outcome = format!(
        "imported {replay:?} devices={} events~2^{} warnings={}",
        summary.devices.len(),
        log2(summary.events.iter().sum()),
        summary.warnings.len().min(3)
    );
    for &device in analyzer.devices().iter().take(2) {
        let mut events = vec![-1];
        if let Ok(Some((first, last))) = analyzer.db().device_bounds(device) {
            events.extend([first, last]);
        }
        if let Ok(peak) = analyzer.run(&QueryRequest::new("memory_peak").device(device)) {
            if let Some(id) = peak.get(0, "peak_active_event_id").and_then(|v| v.as_i64()) {
                events.push(id);
            }
        }
        events.sort_unstable();
        events.dedup();
        for (i, template) in registry::all().iter().enumerate() {
            let c = &template.contract;
            let ids: &[i64] = if c.has_parameter("event_id") {
                &events
            } else {
                &[0]
            };
            for (j, &event) in ids.iter().enumerate() {
                let mut req = QueryRequest::new(&c.name)
                    .device(device)
                    .max_rows(20)
                    .exact_total((i + j) % 2 == 0);
                if c.has_parameter("event_id") {
                    req = req.param("event_id", event);
                }
                if c.has_parameter("stack_bytes") && j % 2 == 1 {
                    req = req.param("stack_bytes", 64);
                }
                match analyzer.run(&req) {
                    Ok(o) => {
                        let _ = o.rows_json();
                    }
                    Err(e) => outcome.push_str(&format!(" | {}: {}", c.name, short(&e))),
                }
            }
        }
        let mut timeline = TimelineRequest::new(16);
        timeline.device = Some(device);
        if let Err(e) = analyzer.timeline(&timeline) {
            outcome.push_str(&format!(" | timeline: {}", short(&e)));
        }
        if let Err(e) = analyzer.time_timeline(&timeline) {
            outcome.push_str(&format!(" | time timeline: {}", short(&e)));
        }
        if let Err(e) = pt_snap_query::Source::event_times(&analyzer, device, &events) {
            outcome.push_str(&format!(" | event times: {}", short(&e)));
        }
        for metric in [Metric::Active, Metric::Allocated, Metric::Reserved] {
            let req = PeakRequest {
                device: Some(device),
                metric,
                limit: 5,
                stack_bytes: if metric == Metric::Active { 64 } else { -1 },
                ..PeakRequest::default()
            };
            match pt_snap_report::peak_memory(&analyzer, &req) {
                Ok(report) => {
                    let _ = (report.to_json(), report.to_text());
                }
                Err(e) => {
                    outcome.push_str(&format!(" | peak-memory {}: {}", metric.name(), short(&e)))
                }
            }
        }
        let tree = TreeRequest {
            device: Some(device),
            event_id: *events.last().expect("-1 at least"),
            include_static: true,
            min_size: 0,
        };
        match pt_snap_report::memory_tree(&analyzer, &tree) {
            Ok(tree) => {
                let _ = tree.to_json(None);
                let python = tree.to_text_stacks(pt_snap_report::Stacks::Python);
                match (tree.to_text(), tree.to_html(None), python) {
                    (Ok(_), Ok(_), Ok(_)) => {}
                    (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
                        outcome.push_str(&format!(" | memory-tree: {}", short(&e)))
                    }
                }
            }
            Err(e) => outcome.push_str(&format!(" | memory-tree: {}", short(&e))),
        }
    }
    outcome
}

/// Where `dataset_write` and `sql` create their temporary directories: `$PT_SNAP_FUZZ_TMPDIR` (the
/// runner points it at a directory it removes after a killed child), else the system's.
fn scratch_root() -> PathBuf {
    let dir = std::env::var_os("PT_SNAP_FUZZ_TMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    // Dataset::open wants canonical paths.
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

/// Target `dataset_write`.
pub fn dataset_write(data: &[u8]) -> String {
    let snapshot = match pt_snap_model::decode_slice(data) {
        Ok(s) => s,
        Err(e) => return format!("decode: {}", short(&e)),
    };
    let h = mix(data);
    // A small events-per-slice, but never more than 16 shards per device.
    let longest = snapshot
        .device_traces
        .iter()
        .map(Vec::len)
        .max()
        .unwrap_or(0);
    let events_per_slice = [1, 2, 3, 5, 8][(h >> 1) as usize % 5].max(longest.div_ceil(16));
    let plan = match write::plan(&snapshot, None, events_per_slice) {
        Ok(p) => p,
        Err(e) => return format!("plan: {}", short(&e)),
    };
    // An msinsight export for half the inputs, when it accepts the snapshot (it refuses
    // OOM and unknown actions, which most real snapshots have); else the native dataset.
    let layout = if h & 1 == 1 && plan.check(Layout::Msinsight).is_ok() {
        Layout::Msinsight
    } else {
        Layout::Native
    };
    if let Err(e) = plan.check(layout) {
        return format!("check {layout:?}: {}", short(&e));
    }
    let request = request(data, "fuzz.pickle", ReplayMode::Strict);
    let metadata = Metadata {
        metadata_schema_version: METADATA_SCHEMA_VERSION,
        import_format_version: if layout == Layout::Native { 2 } else { 1 },
        source_sha256: request.source_sha256,
        source_size: request.source_size as i64,
        source_name: request.source_name,
        requested_device: None,
        importer_name: pt_snap_import::IMPORTER_NAME.to_owned(),
        importer_version: pt_snap_import::IMPORTER_VERSION.to_owned(),
        completed_at: request.completed_at,
    };
    let dir = tempfile::Builder::new()
        .prefix("dataset-")
        .tempdir_in(scratch_root())
        .expect("a scratch directory");
    let root = dir.path();
    let hashes = match plan.write_shards(root, &metadata, layout) {
        Ok(hashes) => hashes,
        Err(e) => return format!("write_shard {layout:?}: {}", short(&e)),
    };
    let member = |f: &str| hashes[f].clone();
    let manifest = match layout {
        Layout::Native => write::manifest_json(&plan.native_manifest(&metadata, &member)),
        Layout::Msinsight => {
            let mut salted = Sha256::new();
            salted.update(pt_snap_dataset::manifest::MSINSIGHT_CACHE_SALT);
            salted.update(data);
            write::manifest_json(&plan.msinsight_manifest(
                &metadata,
                "/fuzz/fuzz.pickle",
                &format!("{:x}", salted.finalize()),
                &member,
            ))
        }
    };
    std::fs::write(root.join("manifest.json"), manifest).expect("write manifest");
    // A dataset the writer accepted and wrote must read back as valid.
    match Dataset::open(root, &mut ValidationCache::disabled()) {
        Ok(Some(ds)) => format!(
            "ok {layout:?} shards={} events~2^{}",
            plan.shard_count().min(64),
            log2(ds.real_event_count as usize)
        ),
        Ok(None) => panic!("{} is not a dataset path", root.display()),
        Err(e) => {
            // PT_SNAP_FUZZ_KEEP=1 keeps the refused dataset for a look.
            let kept = std::env::var_os("PT_SNAP_FUZZ_KEEP")
                .map(|_| format!(" (kept in {})", dir.keep().display()))
                .unwrap_or_default();
            panic!("the {layout:?} dataset just written does not validate: {e}{kept}")
        }
    }
}

/// The statement every check of `sql` runs: a few columns of every table, in a fixed order.
const SQL_CHECK: &str = "SELECT 'summary' AS t, job, rank, device, peak_active AS v FROM summary \
     UNION ALL SELECT 'events', job, rank, count(*), sum(size) FROM events GROUP BY job, rank \
     UNION ALL SELECT 'blocks', job, rank, count(*), sum(size) FROM blocks GROUP BY job, rank \
     UNION ALL SELECT 'callstacks', job, rank, count(*), NULL FROM callstacks GROUP BY job, rank \
     ORDER BY t, job, rank, device";

/// The snapshots of the `sql` target's dataset, one per rank.
const SQL_RANKS: [(&str, &[u8]); 2] = [
    (
        "rank0.pkl",
        include_bytes!("../../../fixtures/synthetic/synth_small_2dev.pkl"),
    ),
    (
        "rank1.pkl",
        include_bytes!("../../../fixtures/synthetic/synth_small_1dev.pkl"),
    ),
];

/// How long one `pt-snap sql` may take on the tiny dataset before it is a finding (the
/// runner's own limit, 10 s by default, would kill the worker and leave the child running).
const SQL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(8);

/// The `pt-snap` binary the `sql` target runs: `$PT_SNAP_FUZZ_CLI` (`scripts/fuzz` builds
/// the debug binary and names it), else the workspace's `target/debug/pt-snap`.
pub fn pt_snap_cli() -> PathBuf {
    if let Some(cli) = std::env::var_os("PT_SNAP_FUZZ_CLI") {
        return PathBuf::from(cli);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("debug/pt-snap")
}

/// The `sql` target's world, made once per worker process in a directory of its own: the
/// dataset `ds/` that `pt-snap export` makes of two small snapshots (`input/`, job `fuzz`,
/// ranks 0 and 1), `out/` beside it, `cwd/` (the working directory of every command, so
/// relative paths land where the target looks) and `home/` (its `HOME`); what every file
/// there held, and the dataset's answer to [`SQL_CHECK`], before any statement ran.
///
/// Statements run through the `pt-snap` binary, as a user runs them: what is checked is the
/// command itself, and the fuzz runner does not link DataFusion (built with the runner's
/// optimised profile it took 50 CPU minutes here; the tests build the debug binary anyway).
pub struct SqlWorld {
    cli: PathBuf,
    root: PathBuf,
    dataset: PathBuf,
    outside: PathBuf,
    files: Vec<(String, String)>,
    answer: serde_json::Value,
}

/// Every file and directory below `dir`: its path and, for a file, its size and SHA-256.
fn inventory(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).expect("the sql world is readable") {
            let path = entry.expect("the sql world is readable").path();
            let name = path.strip_prefix(dir).expect("below").display().to_string();
            let meta = std::fs::symlink_metadata(&path).expect("the sql world is readable");
            if meta.is_dir() {
                out.push((name + "/", String::new()));
                todo.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_default();
                let hash = format!("{} {:x}", meta.len(), Sha256::digest(&bytes));
                out.push((name, hash));
            }
        }
    }
    out.sort();
    out
}

/// What one `pt-snap` command ended with: its exit status and its JSON document (stdout on
/// success, the error envelope on stderr), or what it printed if that was no JSON.
struct Ran {
    status: Option<i32>,
    document: Result<serde_json::Value, String>,
}

impl SqlWorld {
    /// Makes the world in a new directory under `parent`, with the `pt-snap` binary `cli`.
    pub fn new(parent: &Path, cli: &Path) -> SqlWorld {
        assert!(
            cli.is_file(),
            "the sql target runs {}, which is not there: build it (cargo build -p pt-snap-cli) \
             or name another in PT_SNAP_FUZZ_CLI",
            cli.display()
        );
        let root = tempfile::Builder::new()
            .prefix("sql-")
            .tempdir_in(parent)
            .expect("a scratch directory")
            .keep();
        for sub in ["input", "out", "cwd", "home"] {
            std::fs::create_dir_all(root.join(sub)).expect("the sql world's directories");
        }
        let mut world = SqlWorld {
            cli: cli.to_path_buf(),
            dataset: root.join("ds"),
            outside: root.join("out"),
            root,
            files: Vec::new(),
            answer: serde_json::Value::Null,
        };
        let mut export = vec!["export".to_owned()];
        for (name, bytes) in SQL_RANKS {
            let path = world.root.join("input").join(name);
            std::fs::write(&path, bytes).expect("a snapshot of the sql world");
            export.push(path.display().to_string());
        }
        let ds = world.dataset.display().to_string();
        export.extend(["-o", &ds, "--job", "fuzz", "--json"].map(str::to_owned));
        let ran = world.run(&export);
        assert!(ran.status == Some(0), "export: {:?}", ran.document);
        world.answer = world.answer_now().expect("the dataset answers");
        let rows = world.answer.as_array().map_or(0, Vec::len);
        assert!(rows >= 8, "{}", world.answer);
        world.files = inventory(&world.root);
        world
    }

    fn run(&self, args: &[String]) -> Ran {
        let mut child = std::process::Command::new(&self.cli)
            .args(args)
            .current_dir(self.root.join("cwd"))
            .env("HOME", self.root.join("home"))
            .env_remove("PT_SNAP_DB_PATH")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("pt-snap starts");
        // Both pipes are read beside the wait, so a full pipe cannot stall the child.
        let pipe = |r: Option<Box<dyn std::io::Read + Send>>| {
            std::thread::spawn(move || {
                let mut v = Vec::new();
                if let Some(mut r) = r {
                    let _ = r.read_to_end(&mut v);
                }
                v
            })
        };
        let stdout = pipe(child.stdout.take().map(|p| Box::new(p) as _));
        let stderr = pipe(child.stderr.take().map(|p| Box::new(p) as _));
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("waiting for pt-snap") {
                break status;
            }
            if start.elapsed() > SQL_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "pt-snap ran for more than {SQL_TIMEOUT:?}: {}",
                    short(&args.join(" "))
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        };
        let (stdout, stderr) = (
            stdout.join().expect("a pipe"),
            stderr.join().expect("a pipe"),
        );
        let text = if status.success() { stdout } else { stderr };
        Ran {
            status: status.code(),
            document: serde_json::from_slice(&text)
                .map_err(|_| String::from_utf8_lossy(&text).into_owned()),
        }
    }

    /// The rows of [`SQL_CHECK`], or why there are none.
    fn answer_now(&self) -> Result<serde_json::Value, String> {
        let ds = self.dataset.display().to_string();
        let ran = self.run(&["sql", &ds, "--json", "--", SQL_CHECK].map(str::to_owned));
        match ran.document {
            Ok(doc) if ran.status == Some(0) => Ok(doc["rows"].clone()),
            Ok(doc) => Err(doc.to_string()),
            Err(text) => Err(text),
        }
    }

    /// Runs one statement (`$DS` and `$OUT` replaced by the directories' paths); panics if
    /// `pt-snap` died, if any file below the world's directory changed, or if the dataset
    /// answers otherwise.
    pub fn check(&self, statement: &str) -> String {
        if statement.contains('\0') {
            return "a NUL byte: no command line holds it".into();
        }
        let statement = statement
            .replace("$DS", &self.dataset.display().to_string())
            .replace("$OUT", &self.outside.display().to_string());
        let ds = self.dataset.display().to_string();
        let ran = self.run(&["sql", &ds, "--json", "--", &statement].map(str::to_owned));
        let outcome = match (ran.status, &ran.document) {
            (Some(0), Ok(doc)) => format!(
                "ok columns={} rows~2^{}",
                doc["columns"].as_array().map_or(0, Vec::len),
                log2(doc["row_count"].as_u64().unwrap_or(0) as usize)
            ),
            (Some(1 | 2), Ok(doc)) => format!(
                "err {} {}",
                doc["error"]["code"].as_str().unwrap_or("?"),
                short(&doc["error"]["message"].as_str().unwrap_or("?"))
            ),
            (status, document) => panic!(
                "pt-snap sql ended with status {status:?}: {}",
                short(&format!("{document:?}"))
            ),
        };
        let now = inventory(&self.root);
        if now != self.files {
            let changed: Vec<_> = now
                .iter()
                .filter(|f| !self.files.contains(f))
                .chain(self.files.iter().filter(|f| !now.contains(f)))
                .map(|(name, _)| name.as_str())
                .collect();
            panic!("the statement changed files: {changed:?} ({outcome})");
        }
        match self.answer_now() {
            Ok(answer) if answer == self.answer => {}
            Ok(answer) => panic!("the dataset answers otherwise ({outcome}): {answer}"),
            Err(e) => panic!("the dataset no longer answers ({outcome}): {}", short(&e)),
        }
        outcome
    }
}

static SQL_WORLD: OnceLock<SqlWorld> = OnceLock::new();

/// Target `sql`.
pub fn sql(data: &[u8]) -> String {
    let Ok(statement) = std::str::from_utf8(data) else {
        return "not UTF-8".into();
    };
    SQL_WORLD
        .get_or_init(|| SqlWorld::new(&scratch_root(), &pt_snap_cli()))
        .check(statement)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_runs_on_garbage_and_on_a_fixture() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
        // `sql` needs the pt-snap binary: `sql_statements_change_nothing` instead.
        for t in TARGETS.iter().filter(|t| t.name != "sql") {
            let fixture = if t.seed_suffixes.contains(&".json") {
                "fuzz/seeds/json_decode/synth_small_1dev.json"
            } else {
                "fixtures/synthetic/caseE_devices.pkl"
            };
            let fixture = std::fs::read(format!("{root}/{fixture}")).unwrap();
            let refused = (t.run)(b"garbage");
            assert!(!refused.contains("ok"), "{}: {refused}", t.name);
            let outcome = (t.run)(&fixture);
            assert!(
                outcome.contains("ok") || outcome.starts_with("imported"),
                "{}: {outcome}",
                t.name
            );
        }
    }

    #[test]
    fn sql_statements_change_nothing() {
        let parent = tempfile::tempdir().unwrap();
        let world = SqlWorld::new(parent.path(), &pt_snap_cli());
        assert!(world
            .check("SELECT count(*) FROM events")
            .starts_with("ok "));
        for refused in [
            "COPY (SELECT 1) TO '$OUT/x.csv'",
            "INSERT INTO summary SELECT * FROM summary",
            "CREATE EXTERNAL TABLE x STORED AS PARQUET LOCATION '$DS/summary/'",
        ] {
            let outcome = world.check(refused);
            assert!(
                outcome.starts_with("err QUERY_FAILED only read-only queries are allowed"),
                "{refused}: {outcome}"
            );
        }
        // A statement beginning like an option is still the statement.
        assert!(world.check("-- a comment\nSELECT 1").starts_with("ok "));
        // The check sees a file that appears beside the dataset, and one changed in it.
        std::fs::write(world.outside.join("x.csv"), "1\n").unwrap();
        let caught = std::panic::catch_unwind(|| world.check("SELECT 1"));
        assert!(caught.is_err(), "a new file went unnoticed");
        std::fs::remove_file(world.outside.join("x.csv")).unwrap();
        world.check("SELECT 1");
        let part = world.dataset.join("summary/job=fuzz/rank=1/part-0.parquet");
        let bytes = std::fs::read(&part).unwrap();
        std::fs::write(&part, [&bytes[..], b"x"].concat()).unwrap();
        let caught = std::panic::catch_unwind(|| world.check("SELECT 1"));
        assert!(caught.is_err(), "a changed part went unnoticed");
    }

    #[test]
    fn compressed_twins_hold_on_the_seeds() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
        let mut kinds = std::collections::BTreeSet::new();
        for dir in ["fixtures/synthetic", "fuzz/seeds/json_decode"] {
            for e in std::fs::read_dir(format!("{root}/{dir}")).unwrap() {
                let path = e.unwrap().path();
                let data = std::fs::read(&path).unwrap();
                let outcome = compressed_twin(&data);
                kinds.insert(outcome.split(':').next().unwrap().to_owned());
            }
        }
        assert!(kinds.len() >= 6, "{kinds:?}");
    }

    #[test]
    fn names_are_unique() {
        for t in TARGETS {
            assert!(std::ptr::eq(find(t.name).unwrap(), t));
        }
    }
}
