//! Call stacks keyed so that the same code matches across machines.
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

use serde::{Deserialize, Serialize};

/// One frame of a normalised stack: `function (file:line)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Frame {
    pub function: String,
    /// The normalised path (see the module documentation).
    pub file: String,
    /// `None` when the text had no `:<line>` to read.
    pub line: Option<i64>,
    /// The file belongs to an installed package, the standard library or a known package's
    /// checkout (every rule but the last): not the user's own code.
    pub library: bool,
}

impl Frame {
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
        self.file.ends_with(".py")
    }
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

/// The key path, and whether a library rule gave it.
fn normalize(filename: &str) -> (String, bool) {
    let path = filename.replace('\\', "/");
    // `??`, `<frozen …>`, `<string>`, an empty name: nothing machine-specific to strip.
    if !path.contains('/') {
        return (path, false);
    }
    for marker in ["site-packages/", "dist-packages/"] {
        if let Some(at) = path.rfind(marker) {
            let rest = &path[at + marker.len()..];
            if !rest.is_empty() {
                return (rest.to_owned(), true);
            }
        }
    }
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let (dirs, file) = parts.split_at(parts.len().saturating_sub(1));
    let Some(&file) = file.first() else {
        return (path, false);
    };
    // The standard library: `…/lib/python3.11/…`, `…/lib64/python3.9/…`, Windows `…/Lib/…`.
    for (i, dir) in dirs.iter().enumerate() {
        let python_lib =
            (is_python_version_dir(dir) && i > 0 && matches!(dirs[i - 1], "lib" | "lib64"))
                || *dir == "Lib";
        if python_lib {
            return (parts[i + 1..].join("/"), true);
        }
    }
    if let Some(i) = dirs.iter().rposition(|d| PACKAGE_ROOTS.contains(d)) {
        return (parts[i..].join("/"), true);
    }
    (file.to_owned(), false)
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
            let (file, library) = normalize(file);
            Frame {
                function: function.to_owned(),
                file,
                line,
                library,
            }
        })
        .collect()
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
}
