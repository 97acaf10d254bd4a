//! The supervisor: seeds, corpus, mutation loop, the worker child and its limits, findings.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashSet};
use std::hash::{Hash, Hasher};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pt_snap_fuzz::mutate::Seed;
use pt_snap_fuzz::pickle_ops::{self, op, Op};
use pt_snap_fuzz::rng::Rng;
use sha2::{Digest, Sha256};

use crate::worker::unescape;
use crate::{workspace_root, Options};

/// A worker whose peak RSS passed this is replaced after its input, so each input's peak
/// is measured from a low baseline (VmHWM never goes down).
const RESTART_KIB: u64 = 256 << 10;
/// The corpus keeps at most this many bytes of inputs.
const CORPUS_BYTES: usize = 256 << 20;
/// Kept stderr of a worker, for the report of its death.
const STDERR_TAIL: usize = 16 << 10;

/// Something a target must never do.
#[derive(Debug, Clone)]
pub struct Finding {
    /// Artifact prefix: `crash`, `timeout` or `oom`.
    pub kind: &'static str,
    /// What identifies the bug: the panic's location, or how the worker died.
    pub signature: String,
    pub detail: String,
}

pub enum Verdict {
    /// The target returned; its description of the path taken.
    Fine(String),
    Finding(Finding),
}

struct Worker {
    child: Child,
    stdin: ChildStdin,
    replies: Receiver<String>,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_thread: JoinHandle<()>,
}

/// Runs inputs in a worker child, one at a time, with the limits of the options.
pub struct Executor<'o> {
    opts: &'o Options,
    worker: Option<Worker>,
    scratch: PathBuf,
    pub spawned: u64,
}

impl Drop for Executor<'_> {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

fn classify_death(status: ExitStatus, stderr: &str) -> Finding {
    let tail: String = {
        let lines: Vec<&str> = stderr.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    };
    let (kind, signature) = if stderr.contains("memory allocation of") {
        (
            "oom",
            "allocation failed under the address-space cap (--as-mb)".to_owned(),
        )
    } else if stderr.contains("has overflowed its stack") {
        ("crash", "stack overflow".to_owned())
    } else {
        #[cfg(unix)]
        let signal = std::os::unix::process::ExitStatusExt::signal(&status);
        #[cfg(not(unix))]
        let signal: Option<i32> = None;
        match (signal, status.code()) {
            (Some(s), _) => ("crash", format!("killed by signal {s}")),
            (None, Some(c)) => ("crash", format!("worker exited with status {c}")),
            (None, None) => ("crash", "worker died".to_owned()),
        }
    };
    Finding {
        kind,
        signature,
        detail: format!("worker {status}; stderr tail:\n{tail}"),
    }
}

impl<'o> Executor<'o> {
    pub fn new(opts: &'o Options) -> io::Result<Self> {
        let scratch = std::env::temp_dir().join(format!(
            "pt-snap-fuzz-{}-{}",
            std::process::id(),
            opts.target.name
        ));
        std::fs::create_dir_all(&scratch)?;
        Ok(Executor {
            opts,
            worker: None,
            scratch,
            spawned: 0,
        })
    }

    fn spawn(&mut self) -> io::Result<Worker> {
        let exe = std::env::current_exe()?;
        // `exec` keeps the pid, so killing the child kills the worker itself.
        let script = if self.opts.as_mb > 0 {
            r#"ulimit -c 0 2>/dev/null; ulimit -v "$1" || exit 97; shift; exec "$@""#
        } else {
            r#"ulimit -c 0 2>/dev/null; shift; exec "$@""#
        };
        let mut child = Command::new("/bin/sh")
            .args(["-c", script, "sh", &(self.opts.as_mb * 1024).to_string()])
            .arg(exe)
            .args(["worker", self.opts.target.name])
            .env("PT_SNAP_FUZZ_TMPDIR", &self.scratch)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let mut err = child.stderr.take().expect("piped");
        let (tx, replies) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let tail = Arc::clone(&stderr);
        let stderr_thread = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = err.read(&mut buf) {
                let mut t = tail.lock().expect("stderr tail");
                t.extend_from_slice(&buf[..n]);
                if t.len() > STDERR_TAIL {
                    let cut = t.len() - STDERR_TAIL;
                    t.drain(..cut);
                }
            }
        });
        self.spawned += 1;
        Ok(Worker {
            child,
            stdin,
            replies,
            stderr,
            stderr_thread,
        })
    }

    /// Kills the worker (if any) and clears its scratch directory.
    fn stop(&mut self) -> Option<(ExitStatus, String)> {
        let mut w = self.worker.take()?;
        let _ = w.child.kill();
        let status = w.child.wait().ok();
        let _ = w.stderr_thread.join();
        let stderr = String::from_utf8_lossy(&w.stderr.lock().expect("stderr tail")).into_owned();
        if let Ok(entries) = std::fs::read_dir(&self.scratch) {
            for e in entries.flatten() {
                let _ = std::fs::remove_dir_all(e.path());
                let _ = std::fs::remove_file(e.path());
            }
        }
        status.map(|s| (s, stderr))
    }

    /// Runs one input. `Err` only when the worker cannot be run at all.
    pub fn run(&mut self, input: &[u8]) -> io::Result<Verdict> {
        if self.worker.is_none() {
            self.worker = Some(self.spawn()?);
        }
        let w = self.worker.as_mut().expect("spawned");
        let len = u32::try_from(input.len()).expect("inputs are < 4 GiB");
        let sent = w
            .stdin
            .write_all(&len.to_le_bytes())
            .and_then(|()| w.stdin.write_all(input))
            .and_then(|()| w.stdin.flush());
        let reply = match sent {
            Ok(()) => w.replies.recv_timeout(self.opts.timeout),
            Err(_) => Err(RecvTimeoutError::Disconnected),
        };
        match reply {
            Ok(line) => Ok(self.judge(&line, input.len())),
            Err(RecvTimeoutError::Timeout) => {
                self.stop();
                Ok(Verdict::Finding(Finding {
                    kind: "timeout",
                    signature: format!("no answer within {:?} (--timeout)", self.opts.timeout),
                    detail: String::new(),
                }))
            }
            Err(RecvTimeoutError::Disconnected) => {
                // Give the dying child a moment so its exit status is that of its death.
                let deadline = Instant::now() + Duration::from_secs(5);
                while Instant::now() < deadline {
                    match w.child.try_wait() {
                        Ok(Some(_)) | Err(_) => break,
                        Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
                let (status, stderr) = self
                    .stop()
                    .ok_or_else(|| io::Error::other("lost the worker"))?;
                match status.code() {
                    Some(97) => Err(io::Error::other(format!(
                        "ulimit -v {} failed: run with --as-mb 0 on this system",
                        self.opts.as_mb * 1024
                    ))),
                    Some(2 | 3) => Err(io::Error::other(format!(
                        "the worker could not start ({status}): {stderr}"
                    ))),
                    _ => Ok(Verdict::Finding(classify_death(status, &stderr))),
                }
            }
        }
    }

    fn judge(&mut self, line: &str, input_len: usize) -> Verdict {
        let mut parts = line.splitn(3, ' ');
        let status = parts.next().unwrap_or_default();
        let rss_kib: u64 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        let text = unescape(parts.next().unwrap_or_default());
        let rss = rss_kib << 10;
        let verdict = if status == "panic" {
            let (location, rest) = text.split_once('\n').unwrap_or((&text, ""));
            // A panic may leave the process in a state the next input should not see.
            self.stop();
            // The location, and the message's start: one assertion can report several bugs.
            let message: String = normalize(rest.lines().next().unwrap_or_default())
                .chars()
                .take(160)
                .collect();
            return Verdict::Finding(Finding {
                kind: "crash",
                signature: format!("panic at {location}: {message}"),
                detail: rest.to_owned(),
            });
        } else if rss > self.opts.rss_mb << 20 {
            Verdict::Finding(Finding {
                kind: "oom",
                signature: format!("peak RSS over {} MB (--rss-mb)", self.opts.rss_mb),
                detail: format!("peak RSS {} MiB for a {input_len}-byte input", rss >> 20),
            })
        } else if let Some(bound) = self
            .opts
            .target
            .memory_bound
            .map(|f| f(input_len))
            .filter(|&b| rss > b)
        {
            Verdict::Finding(Finding {
                kind: "oom",
                signature: "peak RSS over the documented memory bound".to_owned(),
                detail: format!(
                    "peak RSS {} MiB for a {input_len}-byte input; bound {} MiB",
                    rss >> 20,
                    bound >> 20
                ),
            })
        } else {
            Verdict::Fine(text)
        };
        if rss_kib > RESTART_KIB {
            self.stop();
        }
        verdict
    }
}

/// Notes on findings that match bugs being fixed elsewhere (see docs/fuzzing.md).
fn known(f: &Finding, input: &[u8]) -> Option<&'static str> {
    if f.signature.contains("pt-snap-replay/src/stepwise.rs") {
        return Some("known: stepwise replay panic on a free of size 0 (dataset writer)");
    }
    if f.signature.contains("pt-snap-replay/src/") && f.detail.contains("overflow") {
        return Some("known: unchecked i64 arithmetic in pt-snap-replay");
    }
    let memo_gap = pickle_ops::scan(input).iter().any(|o| {
        o.code == op::LONG_BINPUT
            && input[o.start + 1..o.end]
                .iter()
                .rev()
                .fold(0u64, |a, &b| (a << 8) | u64::from(b))
                > 1 << 20
    });
    (f.kind != "crash" && memo_gap).then_some("likely known: memo-gap memory bomb (LONG_BINPUT)")
}

/// The first 20 bytes of the input's SHA-256, in hex: an artifact's name.
fn sha_hex(data: &[u8]) -> String {
    pt_snap_contract::python::hex(&Sha256::digest(data)[..20])
}

/// Saved findings, one artifact per signature (three for timeouts and OOMs, which have no
/// location to tell bugs apart).
struct Findings {
    dir: PathBuf,
    by_signature: BTreeMap<String, (u64, Vec<PathBuf>, Option<&'static str>)>,
    total: u64,
}

impl Findings {
    fn save(&mut self, o: &Options, input: &[u8], f: &Finding) -> io::Result<Option<PathBuf>> {
        self.total += 1;
        let note = known(f, input);
        let entry = self
            .by_signature
            .entry(format!("{}: {}", f.kind, f.signature))
            .or_insert((0, Vec::new(), note));
        entry.0 += 1;
        let keep = if f.kind == "crash" { 1 } else { 3 };
        if entry.1.len() >= keep {
            return Ok(None);
        }
        std::fs::create_dir_all(&self.dir)?;
        let path = self.dir.join(format!("{}-{}", f.kind, sha_hex(input)));
        std::fs::write(&path, input)?;
        let rel = path
            .strip_prefix(workspace_root())
            .unwrap_or(&path)
            .display()
            .to_string();
        let text = format!(
            "target: {}\nkind: {}\nsignature: {}\n{}input: {} bytes\nseed: {}\nreproduce: scripts/fuzz --run {} {rel}\n\n{}\n",
            o.target.name,
            f.kind,
            f.signature,
            note.map(|n| format!("note: {n}\n")).unwrap_or_default(),
            input.len(),
            o.seed,
            o.target.name,
            f.detail
        );
        std::fs::write(path.with_extension("txt"), text)?;
        entry.1.push(path.clone());
        Ok(Some(path))
    }
}

/// Every seed file of the target: the repository's fixtures, `../shared/fixtures/hostile`
/// and `synthetic` when present (files with the target's suffixes), every file of
/// `fuzz/seeds/TARGET` (and of the targets it shares seeds with), `fuzz/corpus/TARGET` and
/// `--seeds` directories; no file larger than `--max-seed-len`; deduplicated, smallest first.
pub fn load_seeds(o: &Options) -> Vec<Vec<u8>> {
    let root = workspace_root();
    let mut dirs: Vec<(PathBuf, bool)> = Vec::new();
    if o.default_seeds {
        dirs.push((root.join("fixtures"), true));
        dirs.push((root.join("../shared/fixtures/hostile"), true));
        dirs.push((root.join("../shared/fixtures/synthetic"), true));
    }
    dirs.push((root.join("fuzz/seeds").join(o.target.name), false));
    for shared in o.target.shared_seeds {
        dirs.push((root.join("fuzz/seeds").join(shared), false));
    }
    dirs.push((root.join("fuzz/corpus").join(o.target.name), false));
    dirs.extend(o.seed_dirs.iter().map(|d| (d.clone(), false)));
    let mut files = Vec::new();
    for (dir, filtered) in dirs {
        let mut todo = vec![dir];
        while let Some(d) = todo.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                let (path, meta) = (e.path(), e.metadata());
                let Ok(meta) = meta else { continue };
                if meta.is_dir() {
                    todo.push(path);
                } else if meta.len() <= o.max_seed_len
                    && (!filtered || {
                        let name = path.to_string_lossy();
                        o.target.seed_suffixes.iter().any(|s| name.ends_with(s))
                    })
                {
                    files.push(path);
                }
            }
        }
    }
    let mut seen = HashSet::new();
    let mut seeds: Vec<Vec<u8>> = files
        .iter()
        .filter_map(|p| std::fs::read(p).ok())
        .filter(|d| seen.insert(sha_hex(d)))
        .collect();
    // A minimal snapshot, so there is always something to start from.
    let tiny = b"\x80\x04}\x94.".to_vec();
    if seen.insert(sha_hex(&tiny)) {
        seeds.push(tiny);
    }
    seeds.sort_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
    seeds
}

/// The outcome with what varies per input blurred, so the corpus grows with new paths
/// rather than new values: in each stage's part (`a | b`), runs of words with digits and
/// short hex words ("00 ff 3a") become one `#`, and the part ends at the first quote,
/// backslash or non-printable character (quoted or echoed input follows there).
fn normalize(outcome: &str) -> String {
    let parts: Vec<String> = outcome
        .split(" | ")
        .map(|part| {
            let mut out = String::new();
            let mut chars = part.chars().peekable();
            while let Some(c) = chars.next() {
                if c.is_ascii_alphanumeric() {
                    let mut word = String::from(c);
                    while let Some(&d) = chars.peek().filter(|d| d.is_ascii_alphanumeric()) {
                        word.push(d);
                        chars.next();
                    }
                    let number = word.bytes().any(|b| b.is_ascii_digit())
                        || (word.len() <= 2 && word.bytes().all(|b| b.is_ascii_hexdigit()));
                    if !number {
                        out.push_str(&word);
                    } else if out.ends_with("# ") {
                        // "# # #" (a run of bytes) reads as one "#".
                        out.pop();
                    } else if !out.ends_with('#') {
                        out.push('#');
                    }
                } else if "'\"`\\".contains(c) || !(c == ' ' || c.is_ascii_graphic()) {
                    out.push('…');
                    break;
                } else {
                    out.push(c);
                }
                if out.len() > 200 {
                    break;
                }
            }
            out
        })
        .collect();
    parts.join(" | ")
}

fn key(outcome: &str) -> u64 {
    let mut h = DefaultHasher::new();
    normalize(outcome).hash(&mut h);
    h.finish()
}

/// Whether some stage accepted the input completely.
fn deep(outcome: &str) -> bool {
    outcome.contains("ok ") || outcome.starts_with("imported")
}

struct Entry {
    data: Vec<u8>,
    ops: Vec<Op>,
}

impl Entry {
    fn new(data: Vec<u8>) -> Self {
        let ops = pickle_ops::scan(&data);
        Entry { data, ops }
    }

    fn seed(&self) -> Seed<'_> {
        Seed {
            data: &self.data,
            ops: &self.ops,
        }
    }
}

/// `pt-snap-fuzz fuzz`: returns the number of findings.
pub fn fuzz(o: &Options) -> Result<usize, String> {
    let seeds = load_seeds(o);
    let seed_bytes: usize = seeds.iter().map(Vec::len).sum();
    println!(
        "pt-snap-fuzz: target {} | seed {} | {} seed inputs ({} KiB) | {} s | timeout {:?} | rss {} MB | ulimit -v {} MB",
        o.target.name,
        o.seed,
        seeds.len(),
        seed_bytes >> 10,
        o.seconds,
        o.timeout,
        o.rss_mb,
        o.as_mb
    );
    let mut exec = Executor::new(o).map_err(|e| e.to_string())?;
    let mut rng = Rng::new(o.seed);
    let mut findings = Findings {
        dir: o.artifacts.clone(),
        by_signature: BTreeMap::new(),
        total: 0,
    };
    let mut outcomes = HashSet::new();
    let mut corpus: Vec<Entry> = Vec::new();
    // Indices of deep entries (an index may since hold a replacement: harmless).
    let mut deep_entries: Vec<usize> = Vec::new();
    let seed_count = seeds.len();
    let mut corpus_bytes = 0usize;
    let (mut execs, mut deep_execs) = (0u64, 0u64);
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(o.seconds);
    let mut next_status = start + Duration::from_secs(10);
    let mut pending = seeds.into_iter();
    let mut stop = false;
    while !stop && Instant::now() < deadline {
        // Every seed as it is first (libFuzzer's INITED), then mutants.
        let (input, from_seed) = match pending.next() {
            Some(s) => (s, true),
            None => {
                // Half the time from the inputs that got all the way through; the smaller of
                // two picks, so small (fast) inputs are mutated more.
                let n = corpus.len();
                let from_deep = !deep_entries.is_empty() && rng.one_in(2);
                let draw = |rng: &mut Rng| {
                    if from_deep {
                        deep_entries[rng.below(deep_entries.len())]
                    } else {
                        rng.below(n)
                    }
                };
                let (a, b) = (draw(&mut rng), draw(&mut rng));
                let base = if corpus[a].data.len() <= corpus[b].data.len() {
                    a
                } else {
                    b
                };
                let other = rng.below(n);
                let m = (o.target.mutator)(
                    &mut rng,
                    corpus[base].seed(),
                    corpus[other].seed(),
                    o.max_len,
                );
                (m, false)
            }
        };
        let verdict = exec.run(&input).map_err(|e| e.to_string())?;
        execs += 1;
        match verdict {
            Verdict::Fine(outcome) => {
                deep_execs += u64::from(deep(&outcome));
                let new = outcomes.insert(key(&outcome));
                if new && o.print_outcomes {
                    println!("new outcome: {}", normalize(&outcome));
                }
                let is_deep = deep(&outcome);
                if new || from_seed {
                    let slot = if from_seed || corpus_bytes + input.len() <= CORPUS_BYTES {
                        corpus_bytes += input.len();
                        corpus.push(Entry::new(input));
                        Some(corpus.len() - 1)
                    } else if corpus.len() > seed_count {
                        let i = rng.between(seed_count, corpus.len() - 1);
                        corpus_bytes = corpus_bytes - corpus[i].data.len() + input.len();
                        corpus[i] = Entry::new(input);
                        Some(i)
                    } else {
                        None
                    };
                    if let Some(i) = slot.filter(|_| is_deep) {
                        deep_entries.push(i);
                    }
                }
            }
            Verdict::Finding(f) => {
                if from_seed {
                    // Keep crashing seeds too: mutants of them find the other bugs nearby.
                    corpus_bytes += input.len();
                    corpus.push(Entry::new(input.clone()));
                }
                let saved = findings.save(o, &input, &f).map_err(|e| e.to_string())?;
                if let Some(path) = saved {
                    println!(
                        "finding #{}: {}: {}{} -> {}",
                        findings.total,
                        f.kind,
                        f.signature,
                        known(&f, &input)
                            .map(|n| format!(" ({n})"))
                            .unwrap_or_default(),
                        path.display()
                    );
                }
                stop = o.exit_on_first;
            }
        }
        if corpus.is_empty() && pending.len() == 0 {
            corpus.push(Entry::new(b"\x80\x04}\x94.".to_vec()));
        }
        if Instant::now() >= next_status {
            next_status += Duration::from_secs(10);
            let secs = start.elapsed().as_secs_f64();
            println!(
                "[{secs:>6.0} s] execs {execs} ({:.0}/s) corpus {} outcomes {} deep {:.0}% findings {}",
                execs as f64 / secs,
                corpus.len(),
                outcomes.len(),
                100.0 * deep_execs as f64 / execs.max(1) as f64,
                findings.total
            );
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "SUMMARY target={} seed={} seconds={secs:.0} execs={execs} execs_per_s={:.0} corpus={} outcomes={} deep={:.0}% workers={} findings={} unique={}",
        o.target.name,
        o.seed,
        execs as f64 / secs,
        corpus.len(),
        outcomes.len(),
        100.0 * deep_execs as f64 / execs.max(1) as f64,
        exec.spawned,
        findings.total,
        findings.by_signature.len()
    );
    for (signature, (count, paths, note)) in &findings.by_signature {
        println!(
            "  {count:>6} x {signature}{}",
            note.map(|n| format!(" ({n})")).unwrap_or_default()
        );
        for p in paths {
            println!("           {}", p.display());
        }
    }
    Ok(findings.by_signature.len())
}

/// `pt-snap-fuzz seeds`: the seed set, one file per seed, into a directory (the libFuzzer
/// engine's corpus starts from the same seeds as the runner).
pub fn write_seeds(o: &Options) -> Result<usize, String> {
    let dir = &o.files[0];
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let seeds = load_seeds(o);
    for s in &seeds {
        let path = dir.join(format!("seed-{}", sha_hex(s)));
        std::fs::write(&path, s).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    println!("{} seeds -> {}", seeds.len(), dir.display());
    Ok(0)
}

/// `pt-snap-fuzz run`: each file once; returns the number of findings.
pub fn run_files(o: &Options) -> Result<usize, String> {
    let mut exec = Executor::new(o).map_err(|e| e.to_string())?;
    let mut found = 0;
    for path in &o.files {
        let data = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let t = Instant::now();
        match exec.run(&data).map_err(|e| e.to_string())? {
            Verdict::Fine(outcome) => {
                println!("{}: ok in {:.2?}: {outcome}", path.display(), t.elapsed());
            }
            Verdict::Finding(f) => {
                found += 1;
                println!(
                    "{}: {}: {}{}\n{}",
                    path.display(),
                    f.kind,
                    f.signature,
                    known(&f, &data)
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default(),
                    f.detail
                );
            }
        }
    }
    Ok(found)
}

/// `pt-snap-fuzz minimize`: removes ever smaller chunks while the finding stays the same.
pub fn minimize(o: &Options) -> Result<usize, String> {
    let path = &o.files[0];
    let mut data = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut exec = Executor::new(o).map_err(|e| e.to_string())?;
    let signature = |v: &Verdict| match v {
        Verdict::Finding(f) => Some(format!("{}: {}", f.kind, f.signature)),
        Verdict::Fine(_) => None,
    };
    let target = signature(&exec.run(&data).map_err(|e| e.to_string())?)
        .ok_or_else(|| format!("{}: no finding to keep", path.display()))?;
    println!("minimizing {} bytes keeping [{target}]", data.len());
    let deadline = Instant::now() + Duration::from_secs_f64(o.seconds);
    let mut chunk = data.len().div_ceil(2).max(1);
    'outer: loop {
        let mut i = 0;
        while i < data.len() {
            if Instant::now() >= deadline {
                break 'outer;
            }
            let end = (i + chunk).min(data.len());
            let candidate: Vec<u8> = [&data[..i], &data[end..]].concat();
            let v = exec.run(&candidate).map_err(|e| e.to_string())?;
            if signature(&v).as_deref() == Some(target.as_str()) {
                data = candidate;
            } else {
                i += chunk;
            }
        }
        if chunk == 1 {
            break;
        }
        chunk = chunk.div_ceil(2);
    }
    std::fs::create_dir_all(&o.artifacts).map_err(|e| e.to_string())?;
    let out = o.artifacts.join(format!("minimized-{}", sha_hex(&data)));
    std::fs::write(&out, &data).map_err(|e| e.to_string())?;
    println!("{} bytes -> {}", data.len(), out.display());
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_blurs_numbers_and_quotes() {
        assert_eq!(
            normalize("err at byte 123: key 'abc' 0x1f"),
            normalize("err at byte 9: key 'zz' 0x2")
        );
        assert_ne!(normalize("err dict"), normalize("err list"));
        assert_eq!(
            normalize("it starts with the bytes d3 00 ba ff ('x')"),
            normalize("it starts with the bytes 7f (\"'\\\"a'b\")")
        );
        assert_eq!(
            normalize("err global 'x\n\u{fffd}' | decode: ok"),
            normalize("err global 'y' | decode: ok")
        );
    }

    #[cfg(unix)]
    #[test]
    fn deaths_are_classified_by_stderr() {
        use std::os::unix::process::ExitStatusExt;
        let abort = ExitStatus::from_raw(6);
        let f = classify_death(abort, "memory allocation of 8589934592 bytes failed\n");
        assert_eq!(f.kind, "oom");
        let f = classify_death(abort, "thread 'main' has overflowed its stack\n");
        assert_eq!(f.signature, "stack overflow");
        assert_eq!(classify_death(abort, "").signature, "killed by signal 6");
    }
}
