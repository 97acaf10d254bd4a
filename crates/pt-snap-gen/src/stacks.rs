//! Catalog of realistic call stacks ("call sites") built from a model-like tree:
//! train.py:main -> train_step -> model.forward -> nested modules -> op line ->
//! torch bindings -> ATen/C10 C++ frames -> caching-allocator frames. Frames are
//! innermost first, like PyTorch. Frame identities are deduplicated (one frame
//! dict object per identity in the pickle).

use crate::rng::Rng;
use std::collections::HashMap;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    pub filename: String,
    pub line: u32,
    pub name: String,
}

/// What a call site allocates; drives lifetimes in the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Param,
    Data,
    Act,
    Temp,
    Grad,
    OptState,
    OptTemp,
    EmptyCache,
    /// A site added by `--planted-site`: allocated once at the start and never freed; the
    /// workload never picks it.
    Planted,
}

#[derive(Clone, Debug)]
pub struct Site {
    pub frames: Vec<u32>,
    pub role: Role,
    /// typical requested size in bytes
    pub size: u64,
    /// requested size varies between calls (dynamic shapes)
    pub vary: bool,
    /// allocations happen on a side stream
    pub side_stream: bool,
}

pub struct Catalog {
    pub hidden: u64,
    pub frames: Vec<Frame>,
    pub sites: Vec<Site>,
}

struct Builder {
    frames: Vec<Frame>,
    index: HashMap<Frame, u32>,
}

impl Builder {
    fn f(&mut self, filename: &str, line: u32, name: &str) -> u32 {
        let fr = Frame {
            filename: filename.to_string(),
            line,
            name: name.to_string(),
        };
        if let Some(&i) = self.index.get(&fr) {
            return i;
        }
        let i = self.frames.len() as u32;
        self.frames.push(fr.clone());
        self.index.insert(fr, i);
        i
    }
    fn cpp(&mut self, file: &str, name: &str) -> u32 {
        self.f(file, 0, name)
    }
}

const OPS: &[&str] = &[
    "mm",
    "addmm",
    "bmm",
    "gelu",
    "silu",
    "_softmax",
    "native_layer_norm",
    "native_dropout",
    "add",
    "mul",
    "cat",
    "clone",
    "_to_copy",
    "where",
    "exp",
    "embedding",
    "_scaled_dot_product_efficient_attention",
    "sum",
    "mean",
    "rsqrt",
    "pow",
    "transpose",
    "index_select",
    "masked_fill",
];

const MODULES: &[&str] = &[
    "Attention",
    "MLP",
    "LayerNorm",
    "RMSNorm",
    "RotaryEmbedding",
    "CrossAttention",
    "MoERouter",
    "Expert",
    "PatchEmbed",
    "ConvBlock",
    "ResBlock",
    "Upsample",
    "Downsample",
    "TimestepEmbedding",
    "FeedForward",
    "GatedMLP",
];

impl Catalog {
    /// Build a catalog of roughly `target_sites` distinct stacks.
    pub fn build(rng: &mut Rng, target_sites: usize) -> Catalog {
        let mut b = Builder {
            frames: Vec::new(),
            index: HashMap::new(),
        };
        let users = ["alice", "bob", "lin", "mchen", "runner"];
        let proj = format!(
            "/home/{}/{}",
            rng.pick(&users),
            rng.pick(&["llm", "diffusion", "cs336", "vit-train"])
        );
        let site_pkgs = format!(
            "/opt/conda/lib/python3.{}/site-packages/torch",
            rng.range(10, 12)
        );
        let model_py = format!("{proj}/model.py");
        let train_py = format!("{proj}/train.py");
        let module_py = format!("{site_pkgs}/nn/modules/module.py");
        let tokens: u64 = 1024 * rng.range(2, 8);
        let hidden: u64 = *rng.pick(&[512u64, 768, 1024, 1280]);
        let vocab: u64 = *rng.pick(&[32000u64, 50257, 32768]);

        // allocator prefix shared by every stack (innermost frames)
        let prefix = vec![
            b.cpp("??", "torch::unwind::unwind()"),
            b.cpp("??", "torch::CapturedTraceback::gather(bool, bool, bool)"),
            b.cpp("memory_snapshot.cpp", "torch::cuda::(anonymous namespace)::gather_with_cpp()"),
            b.cpp("CUDACachingAllocator.cpp", "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(unsigned long, CUstream_st*)"),
            b.cpp("", "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed char, unsigned long, CUstream_st*)"),
            b.cpp("", "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)"),
        ];
        let empty_chain = [
            b.cpp("??", "at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, c10::ScalarType, std::optional<c10::MemoryFormat>)"),
            b.cpp("??", "at::detail::empty_cuda(c10::ArrayRef<long>, c10::ScalarType, std::optional<c10::Device>, std::optional<c10::MemoryFormat>)"),
            b.cpp("??", "at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)"),
        ];
        let glue = [
            b.cpp("??", "_PyEval_EvalFrameDefault"),
            b.cpp("??", "PyMethod_New"),
            b.cpp("??", "_PyObject_MakeTpCall"),
        ];
        let op_chain = |b: &mut Builder, op: &str| -> Vec<u32> {
            let mut v = vec![
                b.cpp("RegisterCUDA_0.cpp", &format!("at::(anonymous namespace)::create_out(c10::ArrayRef<long>, c10::ArrayRef<long>, c10::TensorOptions const&) [{op}]")),
                b.cpp("??", &format!("at::native::{op}_out_cuda(at::Tensor const&, at::Tensor&)")),
                b.cpp("??", &format!("at::_ops::{op}::redispatch(c10::DispatchKeySet, at::Tensor const&)")),
                b.cpp(
                    "VariableType_2.cpp",
                    &format!("torch::autograd::VariableType::(anonymous namespace)::{op}(c10::DispatchKeySet, at::Tensor const&)"),
                ),
                b.cpp("??", &format!("at::_ops::{op}::call(at::Tensor const&)")),
            ];
            v.push(b.cpp(
                "python_torch_functions_1.cpp",
                &format!(
                    "torch::autograd::THPVariable_{}(_object*, _object*, _object*)",
                    op.trim_start_matches('_')
                ),
            ));
            v
        };

        let mut sites: Vec<Site> = Vec::new();
        let mut seen: HashMap<Vec<u32>, ()> = HashMap::new();
        let mut push = |sites: &mut Vec<Site>, frames: Vec<u32>, role, size, vary, side| {
            let mut frames = frames;
            frames.truncate(40);
            if seen.insert(frames.clone(), ()).is_none() {
                sites.push(Site {
                    frames,
                    role,
                    size,
                    vary,
                    side_stream: side,
                });
            }
        };

        let outer_train = [
            b.f(&train_py, 142, "train_step"),
            b.f(&train_py, 288, "main"),
            b.f(&train_py, 311, "<module>"),
        ];

        // --- parameters: main -> model.to(device) -> _apply recursion -> convert
        for depth in 1..=4u32 {
            let mut fr = prefix.clone();
            fr.extend(empty_chain.iter().copied());
            fr.extend(op_chain(&mut b, "_to_copy"));
            fr.push(glue[2]);
            fr.push(b.f(&module_py, 1355, "convert"));
            for _ in 0..depth {
                fr.push(glue[0]);
                fr.push(b.f(&module_py, 942, "_apply"));
            }
            fr.push(b.f(&module_py, 1369, "to"));
            fr.push(b.f(&train_py, 251, "main"));
            fr.push(b.f(&train_py, 311, "<module>"));
            push(&mut sites, fr, Role::Param, 0, false, false);
        }
        // --- data loading: batch.to(device, non_blocking=True) on a side stream
        for (line, name) in [(118u32, "get_batch"), (121, "get_batch")] {
            let mut fr = prefix.clone();
            fr.extend(empty_chain.iter().copied());
            fr.extend(op_chain(&mut b, "_to_copy"));
            fr.push(b.f(&format!("{proj}/data.py"), line, name));
            fr.push(b.f(&train_py, 133, "train_step"));
            fr.extend(outer_train[1..].iter().copied());
            push(&mut sites, fr, Role::Data, tokens * 8, false, true);
        }

        // --- forward: a tree of module classes with op lines
        struct Mod {
            line0: u32,
            ops: Vec<(&'static str, u64, bool)>, // op, size, is_temp
        }
        let n_mod = MODULES.len();
        let mut mods: Vec<Mod> = Vec::new();
        for i in 0..MODULES.len() {
            let n_ops = rng.range(3, 7) as usize;
            let mut ops = Vec::new();
            for _ in 0..n_ops {
                let op = *rng.pick(OPS);
                let r = rng.f64();
                let size = if r < 0.35 {
                    *rng.pick(&[4u64, 8, 64, 2048, tokens * 4, hidden * 4, hidden * 2])
                } else if r < 0.85 {
                    tokens * hidden * 2 * rng.pick(&[1u64, 1, 1, 3, 4])
                } else {
                    rng.range(8, 24) * tokens * rng.range(256, 1024) * 2
                };
                ops.push((op, size, rng.chance(0.35)));
            }
            mods.push(Mod {
                line0: 40 + 37 * i as u32,
                ops,
            });
        }
        // model tree paths: Model.forward -> (Block.forward | Stage.forward) -> module
        let containers = [
            ("TransformerBlock", 118u32),
            ("Stage", 402u32),
            ("Encoder", 215),
        ];
        let mut fwd_sites = 0;
        'outer: for (ci, (_cname, cline)) in containers.iter().enumerate() {
            for (mi, m) in mods.iter().enumerate() {
                if (mi + ci) % 2 == 1 && ci > 0 {
                    continue;
                }
                for (li, &(op, size, is_temp)) in m.ops.iter().enumerate() {
                    let mut fr = prefix.clone();
                    fr.extend(empty_chain[rng.below(2) as usize..].iter().copied());
                    fr.extend(op_chain(&mut b, op));
                    fr.push(glue[2]);
                    fr.push(b.f(&model_py, m.line0 + 3 * li as u32, "forward"));
                    fr.push(glue[0]);
                    fr.push(b.f(&module_py, 1762, "_call_impl"));
                    fr.push(b.f(&module_py, 1751, "_wrapped_call_impl"));
                    fr.push(glue[1]);
                    // optional nn.Sequential / wrapper levels (deeper stacks)
                    for lvl in 0..rng.below(3) as u32 {
                        fr.push(b.f(&module_py, 250, "forward"));
                        fr.push(glue[0]);
                        fr.push(b.f(&model_py, 700 + 11 * lvl, "forward"));
                        fr.push(b.f(&module_py, 1762, "_call_impl"));
                    }
                    fr.push(b.f(&model_py, cline + (mi as u32 % 7), "forward"));
                    fr.push(b.f(&module_py, 1762, "_call_impl"));
                    fr.push(b.f(&module_py, 1751, "_wrapped_call_impl"));
                    fr.push(b.f(&model_py, 512 + ci as u32, "forward"));
                    fr.push(b.f(&module_py, 1762, "_call_impl"));
                    fr.push(b.f(&module_py, 1751, "_wrapped_call_impl"));
                    fr.push(b.f(&train_py, 137, "train_step"));
                    fr.extend(outer_train[1..].iter().copied());
                    let role = if is_temp { Role::Temp } else { Role::Act };
                    push(&mut sites, fr, role, size, rng.chance(0.2), false);
                    fwd_sites += 1;
                    if fwd_sites >= target_sites * 55 / 100 {
                        break 'outer;
                    }
                }
            }
        }
        let _ = n_mod;
        // loss / lm head
        {
            let mut fr = prefix.clone();
            fr.extend(empty_chain.iter().copied());
            fr.extend(op_chain(&mut b, "_log_softmax"));
            fr.push(b.f(
                &format!("{site_pkgs}/nn/functional.py"),
                3494,
                "cross_entropy",
            ));
            fr.push(b.f(&train_py, 138, "train_step"));
            fr.extend(outer_train[1..].iter().copied());
            push(
                &mut sites,
                fr,
                Role::Act,
                tokens * vocab * 2 / 4,
                false,
                false,
            );
        }

        // --- backward: autograd engine thread, C++ only stacks
        let engine = [
            b.cpp("??", "torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)"),
            b.cpp("??", "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)"),
            b.cpp("??", "torch::autograd::Engine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)"),
            b.cpp("??", "torch::autograd::python::PythonEngine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)"),
            b.cpp("??", "execute_native_thread_routine"),
            b.cpp("??", "start_thread"),
            b.cpp("??", "clone"),
        ];
        let accumulate = b.cpp("??", "torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)");
        let n_bwd = target_sites * 25 / 100;
        for i in 0..n_bwd {
            let op = OPS[i % OPS.len()];
            let node = format!(
                "torch::autograd::generated::{}Backward{}::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)",
                capitalize(op.trim_start_matches('_')),
                i / OPS.len()
            );
            let mut fr = prefix.clone();
            fr.extend(empty_chain.iter().copied());
            fr.extend(op_chain(&mut b, op).into_iter().take(5));
            if i % 5 == 4 {
                fr.push(accumulate);
            }
            fr.push(b.cpp("??", &node));
            fr.push(b.cpp("??", "torch::autograd::Node::operator()(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)"));
            fr.extend(engine.iter().copied());
            let role = if i % 5 == 4 { Role::Grad } else { Role::Temp };
            let size = if i % 3 == 0 {
                rng.range(1, 512) * 512
            } else {
                tokens * hidden * 2 * rng.range(1, 4)
            };
            push(&mut sites, fr, role, size, rng.chance(0.1), false);
        }

        // --- optimizer: AdamW foreach
        let opt_py = format!("{site_pkgs}/optim/adamw.py");
        let optim_py = format!("{site_pkgs}/optim/optimizer.py");
        let n_opt = target_sites.saturating_sub(sites.len()).max(8);
        for i in 0..n_opt {
            let op = [
                "add",
                "mul",
                "sqrt",
                "div",
                "lerp",
                "addcmul",
                "addcdiv",
                "zeros_like",
            ][i % 8];
            let mut fr = prefix.clone();
            fr.extend(empty_chain.iter().copied());
            fr.push(b.cpp("??", &format!("at::native::foreach_tensor_{op}_cuda(c10::ArrayRef<at::Tensor>, c10::ArrayRef<at::Tensor>)")));
            fr.push(b.cpp(
                "??",
                &format!("at::_ops::_foreach_{op}::call(c10::ArrayRef<at::Tensor>)"),
            ));
            fr.push(b.cpp(
                "python_torch_functions_0.cpp",
                &format!(
                    "torch::autograd::THPVariable__foreach_{op}(_object*, _object*, _object*)"
                ),
            ));
            fr.push(glue[2]);
            fr.push(b.f(&opt_py, 560 + 7 * i as u32, "_multi_tensor_adamw"));
            fr.push(b.f(&opt_py, 767, "adamw"));
            fr.push(b.f(&opt_py, 227, "step"));
            fr.push(b.f(&optim_py, 91, "_use_grad"));
            fr.push(b.f(&optim_py, 487, "wrapper"));
            fr.push(b.f(&train_py, 146, "train_step"));
            fr.extend(outer_train[1..].iter().copied());
            let role = if i % 4 == 0 {
                Role::OptState
            } else {
                Role::OptTemp
            };
            let size = tokens * hidden * 2 * rng.range(1, 3) / 2;
            push(&mut sites, fr, role, size, false, false);
        }
        // --- shallow stacks: torch.empty / zeros called directly from user code
        for i in 0..12u32 {
            let mut fr = prefix.clone();
            fr.push(empty_chain[2]);
            fr.push(b.cpp("??", if i % 2 == 0 { "at::native::empty_cuda(c10::ArrayRef<long>, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)" } else { "at::native::zeros(c10::ArrayRef<long>, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>)" }));
            fr.push(b.f(
                &model_py,
                900 + 4 * i,
                if i % 3 == 0 { "init_cache" } else { "forward" },
            ));
            if i % 2 == 1 {
                fr.push(b.f(&train_py, 137, "train_step"));
                fr.push(b.f(&train_py, 288, "main"));
            }
            let size = *rng.pick(&[4u64, 1024, tokens * 4, tokens * hidden * 2]);
            let role = if i % 3 == 0 { Role::Temp } else { Role::Act };
            push(&mut sites, fr, role, size, false, false);
        }
        // --- torch.cuda.empty_cache() callers (used by segment_free / unmap)
        for line in [160u32, 301] {
            let fr = vec![
                b.cpp(
                    "??",
                    "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::emptyCache()",
                ),
                b.cpp(
                    "??",
                    "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::emptyCache()",
                ),
                b.cpp("Module.cpp", "THCPModule_emptyCache(_object*, _object*)"),
                b.cpp("??", "_PyEval_EvalFrameDefault"),
                b.f(&format!("{site_pkgs}/cuda/memory.py"), 222, "empty_cache"),
                b.f(
                    &train_py,
                    line,
                    if line == 160 { "train_step" } else { "main" },
                ),
                b.f(&train_py, 311, "<module>"),
            ];
            push(&mut sites, fr, Role::EmptyCache, 0, false, false);
        }
        // params sizes come from the model; give Param sites a nominal size
        for s in sites.iter_mut() {
            if s.role == Role::Param {
                s.size = hidden * hidden * 2;
                s.vary = true;
            }
        }
        Catalog {
            hidden,
            frames: b.frames,
            sites,
        }
    }

    /// Adds a planted allocation site: the allocator frames every site shares, then
    /// `<project>/planted.py:<line> <name>` called from the training script's `main`. It
    /// appends frames and a site after everything `build` made, and draws nothing from the
    /// random generator, so the other sites (and so the rest of the run) stay as they were.
    /// Returns the site's index.
    pub fn plant(&mut self, name: &str, bytes: u64) -> u32 {
        // Every site but the empty_cache callers starts with the allocator prefix and the
        // empty_cuda chain: the first nine frames of the first site (a parameter site).
        let allocator = self.sites[0].frames[..9].to_vec();
        let train = self
            .frames
            .iter()
            .find(|f| f.filename.ends_with("/train.py"))
            .map(|f| f.filename.clone())
            .expect("every catalog has train.py frames");
        let project = train.trim_end_matches("/train.py").to_owned();
        let planted = self
            .sites
            .iter()
            .filter(|s| s.role == Role::Planted)
            .count() as u32;
        let mut frames = allocator;
        frames.push(self.frame(&format!("{project}/planted.py"), 10 + 10 * planted, name));
        frames.push(self.frame(&train, 288, "main"));
        frames.push(self.frame(&train, 311, "<module>"));
        self.sites.push(Site {
            frames,
            role: Role::Planted,
            size: bytes,
            vary: false,
            side_stream: false,
        });
        (self.sites.len() - 1) as u32
    }

    /// The index of this frame, added if it is new.
    fn frame(&mut self, filename: &str, line: u32, name: &str) -> u32 {
        let frame = Frame {
            filename: filename.to_owned(),
            line,
            name: name.to_owned(),
        };
        match self.frames.iter().position(|f| *f == frame) {
            Some(i) => i as u32,
            None => {
                self.frames.push(frame);
                (self.frames.len() - 1) as u32
            }
        }
    }

    pub fn of_role(&self, role: Role) -> Vec<u32> {
        (0..self.sites.len() as u32)
            .filter(|&i| self.sites[i as usize].role == role)
            .collect()
    }
}

fn capitalize(s: &str) -> String {
    let mut out = String::new();
    let mut up = true;
    for c in s.chars() {
        if c == '_' {
            up = true;
            continue;
        }
        if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}
