//! Call stacks as a person reads them: frames parsed from the SnapshotDB's callstack text,
//! their paths normalised so the same code matches across machines, each frame's origin
//! (the user's own code, torch, another package, the standard library, native code), and
//! the one-line label of a whole stack ([`label`]) that every report, the HTML pages and the
//! browser show where they name a stack.
//!
//! A SnapshotDB's callstack text is one line per frame, outermost caller first:
//! `{filename}:{line} {name}`. Two runs of the same code on two machines differ in the
//! path prefixes of those filenames — the interpreter's site-packages, the user's home,
//! the checkout's root — so frames are compared by a normalised path that keeps only what
//! belongs to the code itself, with the function name and line number unchanged:
//!
//! | rule (first that applies) | example | key path |
//! | --- | --- | --- |
//! | after the last `site-packages/` or `dist-packages/` | `/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py`, `C:\venv\Lib\site-packages\torch\nn\modules\module.py` | `torch/nn/modules/module.py` |
//! | the standard library: after `lib/pythonX.Y/` (or Windows `Lib/`) | `/usr/lib/python3.11/threading.py` | `threading.py` |
//! | a source checkout of a known package: from its last directory named like the package | `/home/alice/src/pytorch/torch/autograd/graph.py`, `/work/torchtitan/torchtitan/train.py` | `torch/autograd/graph.py`, `torchtitan/train.py` |
//! | anything else: the file's name alone | `/home/alice/llm/model.py`, `/builds/ci-4/llm-v2/model.py`, `??`, `<frozen runpy>`, `CUDACachingAllocator.cpp` | `model.py`, `model.py`, `??`, `<frozen runpy>`, `CUDACachingAllocator.cpp` |
//!
//! The last rule drops every directory of user code because that is exactly where machines
//! differ (home directory, checkout name, CI workspace). It cannot merge unrelated code by
//! accident in practice: a group's key is its *whole* stack, so two sites collide only if
//! every frame — function, file name and line — agrees from the allocator up to `<module>`.
//!
//! A frame is a **Python frame** when its file is Python source (`….py`) or one of
//! CPython's pseudo-files (`<frozen runpy>`, `<string>`, `<stdin>`, …); every other frame
//! (`??`, an empty file, `….cpp`, `….so`) is **native**: C++ of torch, CPython's own C,
//! the unwinder that captured the stack. With `stacks='all'` a stack interleaves both, and
//! its first frames are the process entry (`_start` … `Py_BytesMain` … `pyrun_file`), its
//! last ones the allocator and `torch::unwind::unwind()`: never what a label should show.

use serde::{Deserialize, Serialize};

/// Where a frame's code comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Origin {
    /// Python source outside installed packages, the standard library and known packages'
    /// checkouts: the user's own code (also `<stdin>` and IPython's `<ipython-input-…>`).
    User,
    /// Python source of torch (`torch/…`, `torchvision/…`, `functorch/…`, …).
    Torch,
    /// Python source of another installed package or known package's checkout.
    Package,
    /// The standard library, and CPython's pseudo-files (`<frozen runpy>`, `<string>`).
    Stdlib,
    /// Not Python source, but CPython's own C running it: the eval loop, calls through the
    /// C API, the process entry (`_PyEval_EvalFrameDefault`, `PyObject_Call`, `_start`,
    /// `Py_BytesMain`: `is_interpreter`).
    Interpreter,
    /// Any other frame that is not Python source: C++ of torch and its kernels, other C,
    /// unsymbolised `??` frames.
    Native,
}

impl Origin {
    /// How the flamegraph's data names it (`origin` of a frame row).
    pub fn name(self) -> &'static str {
        match self {
            Origin::User => "user",
            Origin::Torch => "torch",
            Origin::Package => "package",
            Origin::Stdlib => "stdlib",
            Origin::Interpreter => "interpreter",
            Origin::Native => "native",
        }
    }

    /// The code of a Python source file (or pseudo-file), not a native frame.
    pub fn is_python(self) -> bool {
        !matches!(self, Origin::Interpreter | Origin::Native)
    }
}

/// Which frames a text report prints (`--stacks`): every frame, as the reference does, or
/// the Python view — what a person reads first in a `stacks='all'` capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Stacks {
    #[default]
    All,
    Python,
}

/// One frame of a normalised stack: `function (file:line)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Frame {
    pub function: String,
    /// The normalised path (see the module documentation).
    pub file: String,
    /// `None` when the text had no `:<line>` to read.
    pub line: Option<i64>,
    pub origin: Origin,
}

impl Frame {
    /// A frame from a snapshot's `filename`, `line` and `name`, its path normalised.
    pub fn new(filename: &str, line: Option<i64>, function: &str) -> Frame {
        let (file, rule) = normalize(filename);
        Frame {
            function: function.to_owned(),
            origin: origin(filename, &file, rule, function),
            file,
            line,
        }
    }

    /// `function (file:line)`, the form shown everywhere.
    pub fn label(&self) -> String {
        match (self.file.is_empty(), self.line) {
            (true, _) => self.function.clone(),
            (false, Some(line)) => format!("{} ({}:{line})", self.function, self.file),
            (false, None) => format!("{} ({})", self.function, self.file),
        }
    }

    /// Python source (the frames a user reads first in a long native stack).
    pub fn is_python(&self) -> bool {
        self.origin.is_python()
    }

    /// Not the user's own code: an installed package, torch, the standard library.
    pub fn library(&self) -> bool {
        matches!(
            self.origin,
            Origin::Torch | Origin::Package | Origin::Stdlib
        )
    }
}

/// Whether a snapshot's frame `filename` is Python source (module documentation): the one
/// test of the reports and of the memory tree's Python view, which the flamegraph reads
/// from the data its page is given (each frame's `origin`, and the Python view itself).
pub fn is_python_file(filename: &str) -> bool {
    let f = filename.trim();
    let lower = f.to_ascii_lowercase();
    lower.ends_with(".py") || lower.ends_with(".pyw") || (f.starts_with('<') && f.contains('>'))
}

/// Packages commonly run from a source checkout (editable installs, `PYTHONPATH`): a
/// directory with one of these names is where the package's own paths begin.
const PACKAGE_ROOTS: &[&str] = &[
    "torch",
    "torchvision",
    "torchaudio",
    "torchtext",
    "torchrec",
    "torchtitan",
    "torchtune",
    "torch_npu",
    "functorch",
    "fbgemm_gpu",
    "triton",
    "transformers",
    "accelerate",
    "peft",
    "diffusers",
    "deepspeed",
    "megatron",
    "apex",
    "nemo",
    "vllm",
    "flash_attn",
    "xformers",
    "lightning",
    "pytorch_lightning",
];

/// The key path of a frame's filename (rules in the module documentation).
pub fn normalize_path(filename: &str) -> String {
    normalize(filename).0
}

/// Which rule of the module documentation's table gave a key path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    Installed,
    Stdlib,
    Checkout,
    FileName,
}

/// The key path, and the rule that gave it.
fn normalize(filename: &str) -> (String, Rule) {
    let path = filename.replace('\\', "/");
    // `??`, `<frozen …>`, `<string>`, an empty name: nothing machine-specific to strip.
    if !path.contains('/') {
        return (path, Rule::FileName);
    }
    for marker in ["site-packages/", "dist-packages/"] {
        if let Some(at) = path.rfind(marker) {
            let rest = &path[at + marker.len()..];
            if !rest.is_empty() {
                return (rest.to_owned(), Rule::Installed);
            }
        }
    }
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let (dirs, file) = parts.split_at(parts.len().saturating_sub(1));
    let Some(&file) = file.first() else {
        return (path, Rule::FileName);
    };
    // The standard library: `…/lib/python3.11/…`, `…/lib64/python3.9/…`, Windows `…/Lib/…`.
    for (i, dir) in dirs.iter().enumerate() {
        let python_lib =
            (is_python_version_dir(dir) && i > 0 && matches!(dirs[i - 1], "lib" | "lib64"))
                || *dir == "Lib";
        if python_lib {
            return (parts[i + 1..].join("/"), Rule::Stdlib);
        }
    }
    if let Some(i) = dirs.iter().rposition(|d| PACKAGE_ROOTS.contains(d)) {
        return (parts[i..].join("/"), Rule::Checkout);
    }
    (file.to_owned(), Rule::FileName)
}

/// The origin of a frame: the one classification of the reports, the web app and the
/// flamegraph (whose pages carry it in each frame row, [`Origin::name`]).
fn origin(raw: &str, key: &str, rule: Rule, function: &str) -> Origin {
    if !is_python_file(raw) {
        return if is_interpreter(function) {
            Origin::Interpreter
        } else {
            Origin::Native
        };
    }
    let raw = raw.trim();
    if raw.starts_with('<') {
        let user = raw.starts_with("<stdin>") || raw.starts_with("<ipython-input");
        return if user { Origin::User } else { Origin::Stdlib };
    }
    match rule {
        Rule::FileName => Origin::User,
        Rule::Stdlib => Origin::Stdlib,
        Rule::Installed | Rule::Checkout => {
            let top = key.split('/').next().unwrap_or("");
            if key.contains('/') && (top.starts_with("torch") || top == "functorch") {
                Origin::Torch
            } else {
                Origin::Package
            }
        }
    }
}

/// A native function of CPython itself: the eval loop and its calls through the C API
/// (`_PyEval_EvalFrameDefault`, `PyObject_Call`, `_PyFunction_Vectorcall`,
/// `method_vectorcall_O`, `cfunction_call`, `slot_tp_call`, `builtin_exec`), and the process
/// entry that runs it (`_start`, `__libc_start_main`, `Py_BytesMain`, `pymain_run_python`,
/// `run_mod`). Not the unwinder or torch's own C++.
fn is_interpreter(f: &str) -> bool {
    let unprefixed = f
        .strip_prefix("__")
        .or_else(|| f.strip_prefix('_'))
        .unwrap_or(f);
    let py_api = unprefixed
        .strip_prefix("Py")
        .and_then(|rest| rest.chars().next())
        .is_some_and(|c| c.is_ascii_uppercase() || c == '_');
    py_api
        || f == "_start"
        || f == "run_mod"
        || ["__libc_", "_libc_"].iter().any(|p| f.starts_with(p))
        || [
            "pymain_",
            "cfunction_",
            "method_vectorcall",
            "slot_tp_",
            "vectorcall_",
            "call_function",
            "function_code_fastcall",
            "builtin_",
            "run_eval_code_obj",
        ]
        .iter()
        .any(|p| f.starts_with(p))
}

/// `python3`, `python3.11`, `python2.7`.
fn is_python_version_dir(dir: &str) -> bool {
    dir.strip_prefix("python").is_some_and(|v| {
        !v.is_empty()
            && v.starts_with(|c: char| c.is_ascii_digit())
            && v.chars().all(|c| c.is_ascii_digit() || c == '.')
    })
}

/// Splits one line of callstack text, `{filename}:{line} {name}`, at the first `:` that is
/// followed by an integer and then a space (or the end): a filename may hold colons (`C:\…`,
/// `file:///…`) and a function name spaces and colons (`c10::…(unsigned long, …)`), but
/// neither holds `:<digits> ` before the line number does.
pub fn parse_line(text: &str) -> (&str, Option<i64>, &str) {
    let bytes = text.as_bytes();
    for (at, _) in text.match_indices(':') {
        let digits_start = at + 1 + usize::from(bytes.get(at + 1) == Some(&b'-'));
        let digits_end = bytes[digits_start..]
            .iter()
            .position(|b| !b.is_ascii_digit())
            .map_or(bytes.len(), |n| digits_start + n);
        if digits_end == digits_start {
            continue;
        }
        let name = match bytes.get(digits_end) {
            None => "",
            Some(b' ') => &text[digits_end + 1..],
            Some(_) => continue,
        };
        if let Ok(line) = text[at + 1..digits_end].parse::<i64>() {
            return (&text[..at], Some(line), name);
        }
    }
    // Not the SnapshotDB's shape (a hand-made database): the line is the function.
    ("", None, text)
}

/// A callstack text as normalised frames, outermost caller first (the text's order).
pub fn normalize_stack(text: &str) -> Vec<Frame> {
    text.lines()
        .map(|line| {
            let (file, line, function) = parse_line(line);
            Frame::new(file, line, function)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// The label of a stack

/// One line naming where a stack allocated, for a person: its innermost frame in the
/// user's own code, then the innermost torch call below it —
/// `forward (adapters.py:588) → torch/nn/functional.py:linear`. `frames` are outermost
/// caller first (the callstack text's order). `None` for an empty stack.
///
/// * **Where**: the innermost [`Origin::User`] frame as `function (file:line)`; without
///   one, the innermost frame of another package ([`Origin::Package`], e.g. transformers);
///   without Python frames, the autograd node that ran (`MmBackward0 (autograd)`: backward
///   runs on the engine's threads, whose stacks hold no Python).
/// * **Torch call**, below that frame (or anywhere without one): the innermost torch Python
///   frame as `file:function`; else the Python binding the code called
///   (`torch::autograd::THPVariable_zeros_like` → `torch.zeros_like`,
///   `THPVariable_getitem` → `Tensor.__getitem__`); else the first ATen operator entered
///   (`at::_ops::mm::call` → `aten::mm`, overload suffixes dropped).
/// * Neither: the innermost Python frame, else the innermost native frame that is not the
///   unwinder, the interpreter or the process entry, its parameter list dropped.
///
/// Never a CPython runtime or unwinder frame (`torch::unwind::unwind()`, `Py_BytesMain`),
/// unless a stack holds nothing else.
pub fn label(frames: &[Frame]) -> Option<String> {
    let last = frames.len().checked_sub(1)?;
    let innermost = |origin: Origin| frames.iter().rposition(|f| f.origin == origin);
    let python = frames.iter().any(Frame::is_python);
    let anchor = innermost(Origin::User).or_else(|| innermost(Origin::Package));
    let (place, from) = match anchor {
        Some(i) => (Some(place_of(&frames[i])), i + 1),
        None if python => (None, 0),
        None => match frames
            .iter()
            .rposition(|f| autograd_node(&f.function).is_some())
        {
            Some(i) => (
                autograd_node(&frames[i].function).map(|n| format!("{n} (autograd)")),
                i + 1,
            ),
            None => (None, 0),
        },
    };
    let below = &frames[from.min(frames.len())..];
    let call = below
        .iter()
        .rposition(|f| f.origin == Origin::Torch)
        .map(|i| format!("{}:{}", below[i].file, below[i].function))
        .or_else(|| below.iter().find_map(binding))
        .or_else(|| below.iter().find_map(|f| aten_op(&f.function)));
    Some(match (place, call) {
        (Some(p), Some(c)) => format!("{p} → {c}"),
        (Some(p), None) => p,
        (None, Some(c)) => c,
        (None, None) => match frames.iter().rposition(Frame::is_python) {
            Some(i) => place_of(&frames[i]),
            None => {
                let f = frames
                    .iter()
                    .rev()
                    .find(|f| !is_runtime(&f.function))
                    .unwrap_or(&frames[last]);
                short_native(&f.function)
            }
        },
    })
}

/// [`label`] of a callstack text (outermost caller first).
pub fn label_text(text: &str) -> Option<String> {
    label(&normalize_stack(text))
}

/// The lines of a callstack text that are Python frames, and how many native ones there
/// were: what `--stacks python` prints.
pub fn python_lines(text: &str) -> (Vec<&str>, usize) {
    let mut kept = Vec::new();
    let mut native = 0;
    for line in text.lines() {
        if is_python_file(parse_line(line).0) {
            kept.push(line);
        } else {
            native += 1;
        }
    }
    (kept, native)
}

/// `function (file:line)` of a Python frame.
fn place_of(f: &Frame) -> String {
    f.label()
}

/// `torch::autograd::generated::MmBackward0::apply(…)` → `MmBackward0`; also the engine's
/// own nodes (`AccumulateGrad`, `CopySlices`, …) — not the engine (`Engine::…`).
fn autograd_node(function: &str) -> Option<&str> {
    let rest = function
        .split_once("torch::autograd::generated::")
        .map(|(_, r)| r)
        .or_else(|| {
            function
                .split_once("torch::autograd::")
                .map(|(_, r)| r)
                .filter(|r| r.split("::").nth(1).is_some_and(|m| m.starts_with("apply")))
        })?;
    let name = rest.split([':', '(', '<']).next()?;
    let name = name.strip_suffix("_apply_functional").unwrap_or(name);
    let is_node = name.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && !matches!(name, "Engine" | "GraphTask" | "ReadyQueue" | "Node");
    is_node.then_some(name)
}

/// `torch::autograd::THPVariable_zeros_like(_object*, …)`: the Python binding of an
/// operator, as the Python call that reached it.
fn binding(f: &Frame) -> Option<String> {
    let (_, rest) = f.function.split_once("torch::autograd::THPVariable_")?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if !rest[name.len()..].starts_with('(') || name.is_empty() {
        return None;
    }
    Some(match name.as_str() {
        "getitem" => "Tensor.__getitem__".to_owned(),
        "setitem" => "Tensor.__setitem__".to_owned(),
        _ if f.file.starts_with("python_nn_functions") => {
            format!("torch.nn.functional.{name}")
        }
        _ if f.file.starts_with("python_variable_methods") => format!("Tensor.{name}"),
        _ => format!("torch.{name}"),
    })
}

/// `at::_ops::sum_dim_IntList::call(…)` → `aten::sum`: the operator, without the overload
/// the generated name appends (`_Tensor`, `_Scalar`, `_dim_IntList`, `_out`, …).
fn aten_op(function: &str) -> Option<String> {
    let (_, rest) = function.split_once("at::_ops::")?;
    let (name, tail) = rest.split_once("::")?;
    if !(tail.starts_with("call") || tail.starts_with("redispatch")) || name.is_empty() {
        return None;
    }
    let mut op = name;
    // A capitalised part starts the overload (`div_Tensor`, `pow_Tensor_Scalar`).
    if let Some(at) = op
        .match_indices('_')
        .find(|(i, _)| op[i + 1..].starts_with(|c: char| c.is_ascii_uppercase()))
        .map(|(i, _)| i)
    {
        op = &op[..at];
    }
    for suffix in [
        "_out",
        "_start",
        "_dim",
        "_int",
        "_self",
        "_names",
        "_using_ints",
    ] {
        if let Some(s) = op.strip_suffix(suffix).filter(|s| !s.is_empty()) {
            op = s;
        }
    }
    Some(format!("aten::{op}"))
}

/// The unwinder, the interpreter's C and the process entry: frames every stack of a
/// capture shares, so they never tell stacks apart.
fn is_runtime(function: &str) -> bool {
    let f = function.trim_start_matches('_');
    function.contains("torch::unwind::")
        || function.contains("torch::CapturedTraceback::")
        || function.contains("gather_with_cpp")
        || f.starts_with("Py")
        || f.starts_with("pymain_")
        || f.starts_with("pyrun_")
        || f.starts_with("start")
        || f.starts_with("libc_")
        || f.starts_with("clone")
        || function.starts_with("run_mod")
        || function.starts_with("run_eval_code_obj")
}

/// A native function without its parameter list: `a::b::malloc(void**, int)` → `a::b::malloc`.
fn short_native(function: &str) -> String {
    let f = function.trim();
    if !f.ends_with(')') {
        return f.to_owned();
    }
    let mut depth = 0usize;
    for (i, c) in f.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    return f[..i].trim_end().to_owned();
                }
            }
            _ => {}
        }
    }
    f.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(path: &str) -> String {
        normalize_path(path)
    }

    #[test]
    fn two_machines_paths_give_one_key() {
        // (machine A, machine B, key)
        let cases = [
            // The interpreter's packages: conda vs a venv vs Debian's dist-packages vs Windows.
            (
                "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py",
                "/home/bob/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py",
                "torch/nn/modules/module.py",
            ),
            (
                "/usr/lib/python3/dist-packages/transformers/trainer.py",
                "C:\\Users\\Ann\\venv\\Lib\\site-packages\\transformers\\trainer.py",
                "transformers/trainer.py",
            ),
            // The standard library of two interpreters.
            (
                "/usr/lib/python3.11/threading.py",
                "/opt/conda/lib/python3.10/threading.py",
                "threading.py",
            ),
            (
                "/usr/lib64/python3.9/concurrent/futures/thread.py",
                "C:\\Python311\\Lib\\concurrent\\futures\\thread.py",
                "concurrent/futures/thread.py",
            ),
            // A source checkout of torch against an installed torch.
            (
                "/home/alice/src/pytorch/torch/autograd/graph.py",
                "/opt/conda/lib/python3.11/site-packages/torch/autograd/graph.py",
                "torch/autograd/graph.py",
            ),
            // A repository named like its package.
            (
                "/work/torchtitan/torchtitan/train.py",
                "/usr/local/lib/python3.12/dist-packages/torchtitan/train.py",
                "torchtitan/train.py",
            ),
            // User code: home directories, checkout names and CI workspaces differ.
            (
                "/home/alice/llm/model.py",
                "/builds/runner-4/llm-v2/model.py",
                "model.py",
            ),
            (
                "/workspace/train.py",
                "C:\\work\\proj\\train.py",
                "train.py",
            ),
        ];
        for (a, b, want) in cases {
            assert_eq!(key(a), want, "{a}");
            assert_eq!(key(b), want, "{b}");
        }
    }

    #[test]
    fn paths_without_directories_stay_as_they_are() {
        for p in [
            "??",
            "",
            "<frozen runpy>",
            "<string>",
            "CUDACachingAllocator.cpp",
        ] {
            assert_eq!(key(p), p);
        }
        // A trailing site-packages/ with nothing after it is not a package path.
        assert_eq!(key("/x/site-packages/"), "site-packages");
    }

    #[test]
    fn lines_split_at_the_line_number() {
        assert_eq!(
            parse_line("/a/b.py:12 forward"),
            ("/a/b.py", Some(12), "forward")
        );
        assert_eq!(parse_line("C:\\x\\b.py:7 f"), ("C:\\x\\b.py", Some(7), "f"));
        assert_eq!(
            parse_line("??:0 c10::cuda::CUDACachingAllocator::malloc(void**, int:3 x)"),
            (
                "??",
                Some(0),
                "c10::cuda::CUDACachingAllocator::malloc(void**, int:3 x)"
            )
        );
        assert_eq!(
            parse_line("a.py:-1 <lambda>"),
            ("a.py", Some(-1), "<lambda>")
        );
        assert_eq!(parse_line("a.py:3 "), ("a.py", Some(3), ""));
        assert_eq!(parse_line(":0 "), ("", Some(0), ""));
        assert_eq!(
            parse_line("file:///x.py:5 g"),
            ("file:///x.py", Some(5), "g")
        );
        assert_eq!(parse_line("no line here"), ("", None, "no line here"));
    }

    #[test]
    fn stacks_of_two_machines_match_frame_for_frame() {
        let a = "/home/alice/llm/train.py:311 <module>\n\
                 /home/alice/llm/train.py:288 main\n\
                 /opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py:1762 _call_impl\n\
                 ??:0 torch::unwind::unwind()";
        let b = "/mnt/ci/llm/train.py:311 <module>\n\
                 /mnt/ci/llm/train.py:288 main\n\
                 /usr/local/lib/python3.11/dist-packages/torch/nn/modules/module.py:1762 _call_impl\n\
                 ??:0 torch::unwind::unwind()";
        let (fa, fb) = (normalize_stack(a), normalize_stack(b));
        assert_eq!(fa, fb);
        let labels: Vec<String> = fa.iter().map(Frame::label).collect();
        assert_eq!(
            labels,
            [
                "<module> (train.py:311)",
                "main (train.py:288)",
                "_call_impl (torch/nn/modules/module.py:1762)",
                "torch::unwind::unwind() (??:0)"
            ]
        );
        // A different line is a different frame.
        assert_ne!(
            normalize_stack("/a/train.py:288 main"),
            normalize_stack("/a/train.py:289 main")
        );
    }

    /// Real stacks of `fixtures/real/cuda_cs336_nothanmin__memory_snapshot.pickle`
    /// (`stacks='all'`, CPython 3.12), as its SnapshotDB's callstack text.
    fn real(name: &str) -> &'static str {
        match name {
            "forward_einsum" => include_str!("../tests/stacks/nothanmin_forward_einsum.txt"),
            "forward_getitem" => include_str!("../tests/stacks/nothanmin_forward_getitem.txt"),
            "optimizer_sqrt" => include_str!("../tests/stacks/nothanmin_optimizer_sqrt.txt"),
            "tensor_backward" => include_str!("../tests/stacks/nothanmin_tensor_backward.txt"),
            "autograd_index_backward" => {
                include_str!("../tests/stacks/nothanmin_autograd_index_backward.txt")
            }
            _ => unreachable!("{name}"),
        }
    }

    /// [`real`] stack `name` without its lines that contain `cut`.
    fn real_without(name: &str, cut: &str) -> String {
        let kept: Vec<&str> = real(name).lines().filter(|l| !l.contains(cut)).collect();
        kept.join("\n")
    }

    #[test]
    fn real_stacks_are_labelled_by_the_users_frame_and_the_torch_call() {
        let cases = [
            // Python frames interleaved with the process entry (`_start` … `Py_BytesMain`
            // sits between `<module>` and the model), the dispatcher and the unwinder.
            (
                "forward_einsum",
                "forward (adapters.py:205) → torch/functional.py:einsum",
            ),
            // No torch Python frame below the user's: the binding it called.
            // `python_variable_methods.cpp`: a method of the tensor.
            ("optimizer_sqrt", "step (adapters.py:903) → Tensor.sqrt"),
            (
                "forward_getitem",
                "forward (adapters.py:75) → Tensor.__getitem__",
            ),
            (
                "tensor_backward",
                "run_benchmark_with_nvtx (benchmarking_script.py:106) → torch/_tensor.py:backward",
            ),
            // The autograd engine's thread: no Python frame at all.
            (
                "autograd_index_backward",
                "IndexBackward0 (autograd) → aten::_index_put_impl_",
            ),
        ];
        for (name, want) in cases {
            let text = real(name);
            assert_eq!(label_text(text).as_deref(), Some(want), "{name}");
            // The stack's own first and last frames are the runtime's and the unwinder's.
            let frames = normalize_stack(text);
            assert!(
                frames
                    .last()
                    .unwrap()
                    .function
                    .contains("torch::unwind::unwind")
                    || name == "autograd_index_backward",
                "{name}"
            );
        }
    }

    #[test]
    fn a_real_stack_without_user_frames_is_labelled_by_torch() {
        // tensor_backward with the user's three frames taken out: only torch's Python
        // frames and native ones remain.
        let text = real_without("tensor_backward", "benchmarking_script.py");
        let frames = normalize_stack(&text);
        assert!(frames.iter().all(|f| f.origin != Origin::User));
        assert_eq!(label(&frames).as_deref(), Some("torch/_tensor.py:backward"));
        // Another package's frame stands in for the user's.
        let with_package = format!(
            "/venv/lib/python3.12/site-packages/transformers/trainer.py:2240 train\n{text}"
        );
        assert_eq!(
            label_text(&with_package).as_deref(),
            Some("train (transformers/trainer.py:2240) → torch/_tensor.py:backward")
        );
    }

    #[test]
    fn a_real_stack_without_python_frames_is_labelled_by_its_native_frames() {
        // The autograd stack without its node: the first operator.
        let text = real_without("autograd_index_backward", "autograd::generated");
        assert_eq!(label_text(&text).as_deref(), Some("aten::_index_put_impl_"));
        // Nothing but the allocator and the unwinder: the allocator, without parameters.
        let text = "??:0 start_thread\n\
            CUDACachingAllocator.cpp:0 c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)\n\
            memory_snapshot.cpp:0 torch::cuda::(anonymous namespace)::gather_with_cpp()\n\
            ??:0 torch::CapturedTraceback::gather(bool, bool, bool)\n\
            ??:0 torch::unwind::unwind()";
        assert_eq!(
            label_text(text).as_deref(),
            Some("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc")
        );
        // Only the unwinder: it is all there is.
        assert_eq!(
            label_text("??:0 torch::unwind::unwind()").as_deref(),
            Some("torch::unwind::unwind")
        );
    }

    #[test]
    fn an_empty_stack_has_no_label() {
        assert_eq!(label(&[]), None);
        assert_eq!(label_text(""), None);
    }

    #[test]
    fn python_stacks_without_native_frames_keep_their_labels() {
        // stacks='python' (magma27's capture, Windows paths).
        let text = "D:\\Dev\\a2\\cs336_systems\\benchmarking_script.py:65 <module>\n\
            D:\\Dev\\a2\\.venv\\Lib\\site-packages\\torch\\nn\\modules\\module.py:1779 _wrapped_call_impl\n\
            D:\\Dev\\a2\\cs336-basics\\cs336_basics\\model.py:39 forward\n\
            D:\\Dev\\a2\\.venv\\Lib\\site-packages\\einops\\einops.py:939 einsum\n\
            D:\\Dev\\a2\\.venv\\Lib\\site-packages\\torch\\functional.py:373 einsum";
        assert_eq!(
            label_text(text).as_deref(),
            Some("forward (model.py:39) → torch/functional.py:einsum")
        );
        let (kept, native) = python_lines(real("forward_einsum"));
        assert_eq!(native, 80 - kept.len());
        assert!(kept.iter().all(|l| is_python_file(parse_line(l).0)));
        assert_eq!(
            kept.first().copied(),
            Some("/root/assignment2-systems/cs336_systems/benchmarking_script.py:169 <module>")
        );
    }

    #[test]
    fn origins_and_operator_names() {
        let o = |p: &str| Frame::new(p, Some(1), "f").origin;
        assert_eq!(o("/home/u/x/model.py"), Origin::User);
        assert_eq!(o("model.py"), Origin::User);
        assert_eq!(o("<stdin>"), Origin::User);
        // IPython's cells are the user's code, everywhere: the flamegraph's pages carry this
        // origin (tests/browser/flamegraph.test.mjs checks the page's colour of one).
        assert_eq!(o("<ipython-input-3-1b2c3d4e5f60>"), Origin::User);
        assert_eq!(
            o("/opt/conda/lib/python3.11/site-packages/torch/nn/functional.py"),
            Origin::Torch
        );
        assert_eq!(o("/src/pytorch/torch/autograd/graph.py"), Origin::Torch);
        assert_eq!(
            o("/venv/lib/python3.11/site-packages/torchvision/ops/boxes.py"),
            Origin::Torch
        );
        assert_eq!(
            o("/venv/lib/python3.11/site-packages/einops/einops.py"),
            Origin::Package
        );
        assert_eq!(o("/usr/lib/python3.11/threading.py"), Origin::Stdlib);
        assert_eq!(o("<frozen runpy>"), Origin::Stdlib);
        for native in [
            "??",
            "",
            "CUDACachingAllocator.cpp",
            "/usr/lib/libtorch_cuda.so",
        ] {
            assert_eq!(o(native), Origin::Native, "{native}");
        }
        // CPython's own C, symbolised or not, is the interpreter; torch's C++ is not.
        let f = |file: &str, name: &str| Frame::new(file, Some(0), name).origin;
        for (file, name) in [
            ("??", "_PyEval_EvalFrameDefault"),
            ("Python/ceval.c", "_PyEval_EvalFrameDefault"),
            ("??", "PyObject_Call"),
            ("??", "_start"),
            ("??", "__libc_start_main"),
            ("??", "method_vectorcall_O"),
        ] {
            assert_eq!(f(file, name), Origin::Interpreter, "{name}");
            assert!(!Frame::new(file, Some(0), name).is_python());
        }
        for name in [
            "torch::unwind::unwind()",
            "Pybind11Thing",
            "start_thread",
            "_startup",
        ] {
            assert_eq!(f("??", name), Origin::Native, "{name}");
        }
        // A Python file is Python whatever its function is called.
        assert_eq!(f("/home/u/x/PyObject.py", "PyObject_Call"), Origin::User);
        // An `at::_ops` frame names its aten op, without the overload the name appends.
        for (frame, op) in [
            ("at::_ops::div_Tensor::call(at::Tensor const&)", "aten::div"),
            ("at::_ops::sum_dim_IntList::call(x)", "aten::sum"),
            ("at::_ops::arange_start_out::call(x)", "aten::arange"),
            (
                "at::_ops::_index_put_impl_::call(x)",
                "aten::_index_put_impl_",
            ),
            (
                "at::_ops::empty_strided::redispatch(x)",
                "aten::empty_strided",
            ),
        ] {
            assert_eq!(aten_op(frame).as_deref(), Some(op), "{frame}");
        }
        assert_eq!(aten_op("at::native::empty_like(x)"), None);
        assert_eq!(short_native("a::b<c (d)>::f(int, g(h))"), "a::b<c (d)>::f");
        assert_eq!(short_native("no_parens"), "no_parens");
    }
}
