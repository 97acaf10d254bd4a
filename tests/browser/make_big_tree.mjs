// Writes a synthetic 10,000-node frame tree, to check that the flamegraph stays smooth at
// that size; run.sh makes it a page with pt-snap-report (which adds each frame's origin and
// the Python frames view). Deterministic (seeded), so runs compare.
//
//   node tests/browser/make_big_tree.mjs [out.json] [--nodes N]
//
// The tree keeps every invariant of active_memory_frame_tree_at_event: size = self + Σ
// children for all three measures, synthetic leaves under the root, rows ordered by depth
// ASC, parent_id ASC (null first), size DESC, node_id ASC.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = process.argv.slice(2);
let out = path.join(repoRoot, 'target', 'browser', 'pages', 'big_tree_10k.json');
let total = 10000;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--nodes') total = Number(args[++i]);
  else out = args[i];
}
if (!Number.isInteger(total) || total < 6) {
  console.error('--nodes must be an integer >= 6');
  process.exit(2);
}

// mulberry32: small, seeded, good enough for test data.
let seed = 0x5eed1234;
function rand() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (xs) => xs[Math.floor(rand() * xs.length)];

const SP = '/opt/conda/envs/train/lib/python3.11/site-packages';
const USER = '/home/alice/projects/llm-pretrain/src/llm_pretrain';
const FRAMES = {
  user: [[`${USER}/train.py`, ['main', 'train', 'train_one_step', 'run_epoch', 'evaluate']],
    [`${USER}/model/transformer.py`, ['forward', 'block_forward', 'attention', 'mlp', 'embed']],
    [`${USER}/data/loader.py`, ['collate', 'to_device', 'prefetch']],
    [`${USER}/optim/schedule.py`, ['step', 'warmup']]],
  torch: [[`${SP}/torch/nn/modules/module.py`, ['_wrapped_call_impl', '_call_impl']],
    [`${SP}/torch/nn/modules/linear.py`, ['forward']],
    [`${SP}/torch/nn/functional.py`, ['scaled_dot_product_attention', 'layer_norm', 'gelu', 'dropout']],
    [`${SP}/torch/optim/adamw.py`, ['step', '_multi_tensor_adamw', '_init_group']],
    [`${SP}/torch/autograd/graph.py`, ['_engine_run_backward']],
    [`${SP}/torch/_tensor.py`, ['backward']]],
  native: [['??', ['at::native::empty_cuda', 'c10::cuda::CUDACachingAllocator::malloc', 'at::_ops::mm::call',
    'torch::autograd::Engine::evaluate_function', 'at::native::layer_norm_cuda', 'at::TensorIteratorBase::build']],
    ['aten/src/ATen/native/cuda/Blas.cpp', ['addmm_out_cuda_impl']]],
  lib: [['??', ['_PyEval_EvalFrameDefault', 'PyObject_Call', '_PyFunction_Vectorcall']],
    [`${SP}/transformers/models/llama/modeling_llama.py`, ['forward', 'apply_rotary_pos_emb']],
    ['<frozen runpy>', ['_run_code', '_run_module_as_main']]],
};

const frameIds = new Map();
const frames = [];
function frame(kind) {
  const [file, names] = pick(FRAMES[kind]);
  const name = pick(names);
  const line = file === '??' ? 0 : 10 + Math.floor(rand() * 900);
  const key = `${file}\0${line}\0${name}`;
  if (!frameIds.has(key)) {
    frameIds.set(key, frames.length);
    frames.push({ filename: file, line, name });
  }
  return frameIds.get(key);
}
function kindAt(depth) {
  const r = rand();
  if (depth < 3) return 'user';
  if (depth > 25) return r < 0.7 ? 'native' : 'lib';
  return r < 0.3 ? 'user' : r < 0.7 ? 'torch' : r < 0.85 ? 'lib' : 'native';
}

// Heavy-tailed block sizes, rounded like the caching allocator (512 B).
function blockBytes() {
  const exp = 9 + rand() ** 2 * 17;
  return Math.max(512, Math.round(2 ** exp / 512) * 512);
}

const SYNTHETIC = [
  ['static', 'static', '[static]'],
  ['preexisting_live_at_event', 'preexisting_live_at_event', '[preexisting live]'],
  ['empty_callstack', 'empty_callstack', '[empty captured callstack]'],
  ['missing', 'dynamic_live_at_event', '[missing callstack]'],
];

const nodes = [];
function add(node) {
  nodes.push(node);
  return node;
}
const root = add({ node_id: 'root', parent_id: null, depth: 0, frame_id: null, kids: [], selfBlocks: 0, selfBytes: 0, selfReq: 0 });

// Grow the dynamic part with a fixed node budget: a narrow trunk (runpy → main → train)
// then ever wider fan-out, as real training stacks look.
let budget = total - 1 - SYNTHETIC.length;
const queue = [[root, budget]];
while (queue.length) {
  const [parent, n] = queue.shift();
  if (n <= 0) continue;
  const depth = parent.depth + 1;
  let k = depth <= 4 ? 1 : Math.min(n, 1 + Math.floor(rand() ** 2 * (depth > 40 ? n : 9)));
  const used = new Set();
  const shares = Array.from({ length: k }, () => rand() ** 2 + 0.01);
  const sum = shares.reduce((a, b) => a + b, 0);
  let rest = n - k;
  for (let i = 0; i < k; i++) {
    let fid;
    do fid = frame(depth <= 2 ? 'lib' : kindAt(depth)); while (used.has(fid));
    used.add(fid);
    const id = parent === root ? `frame/${fid}` : `${parent.node_id}/${fid}`;
    const child = add({ node_id: id, parent_id: parent.node_id, depth, frame_id: fid, kids: [], selfBlocks: 0, selfBytes: 0, selfReq: 0 });
    parent.kids.push(child);
    const share = i === k - 1 ? rest : Math.min(rest, Math.floor(((n - k) * shares[i]) / sum));
    rest -= share;
    queue.push([child, share]);
  }
}

// One unique name on the deepest frame, so the test's search for it has one answer.
const deepest = nodes.reduce((a, n) => (n.depth > a.depth ? n : a), root);
if (deepest !== root) {
  frames.push({ filename: `${USER}/kernels/fused.py`, line: 4242, name: 'deepest_fused_kernel_alloc' });
  const fid = frames.length - 1;
  deepest.frame_id = fid;
  deepest.node_id = deepest.node_id.replace(/\/\d+$/, `/${fid}`);
}

// Self memory: every leaf holds blocks, some inner frames too; zero-byte frames exist in
// real trees (min_size filters, 0-byte tensors), so a few leaves get none.
for (const n of nodes) {
  if (n === root) continue;
  const leaf = n.kids.length === 0;
  if ((leaf && rand() > 0.02) || (!leaf && rand() < 0.15)) {
    const blocks = 1 + Math.floor(rand() ** 3 * 40);
    for (let b = 0; b < blocks; b++) {
      const size = blockBytes();
      n.selfBlocks += 1;
      n.selfBytes += size;
      n.selfReq += size - Math.floor(rand() * 511);
    }
  }
}
for (const [id, category, label] of SYNTHETIC) {
  const blocks = 5 + Math.floor(rand() * 300);
  let bytes = 0;
  let req = 0;
  for (let b = 0; b < blocks; b++) {
    const size = blockBytes();
    bytes += size;
    req += size - Math.floor(rand() * 511);
  }
  const leaf = add({ node_id: id, parent_id: 'root', depth: 1, frame_id: null, kids: [], selfBlocks: blocks, selfBytes: bytes, selfReq: req, category, label });
  root.kids.push(leaf);
}

// Inclusive sums bottom-up (deepest first).
const byDepth = [...nodes].sort((a, b) => b.depth - a.depth);
for (const n of byDepth) {
  n.block_count = n.selfBlocks;
  n.size_bytes = n.selfBytes;
  n.requested_bytes = n.selfReq;
  for (const c of n.kids) {
    n.block_count += c.block_count;
    n.size_bytes += c.size_bytes;
    n.requested_bytes += c.requested_bytes;
  }
}

const rows = nodes.map((n) => {
  const f = n.frame_id != null ? frames[n.frame_id] : null;
  return {
    node_id: n.node_id,
    parent_id: n.parent_id,
    depth: n.depth,
    frame_id: n.frame_id,
    category: n === root ? 'mixed' : n.category ?? 'dynamic_live_at_event',
    label: n === root ? '[all active blocks]' : n.label ?? `${f.filename}:${f.line} ${f.name}`,
    filename: f ? f.filename : null,
    line: f ? f.line : null,
    name: f ? f.name : null,
    block_count: n.block_count,
    size_bytes: n.size_bytes,
    requested_bytes: n.requested_bytes,
    self_block_count: n.selfBlocks,
    self_bytes: n.selfBytes,
    self_requested_bytes: n.selfReq,
    percent_of_total: root.size_bytes > 0 ? Math.round((n.size_bytes * 100 * 10000) / root.size_bytes) / 10000 : null,
  };
});
// parent_id uses SQLite's binary collation; for these ASCII ids that is JS's < on strings.
const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
rows.sort((a, b) => a.depth - b.depth ||
  (a.parent_id === null ? -1 : b.parent_id === null ? 1 : cmp(a.parent_id, b.parent_id)) ||
  b.size_bytes - a.size_bytes || cmp(a.node_id, b.node_id));

const data = {
  title: `Synthetic ${rows.length.toLocaleString('en-US')}-node frame tree (test data) · device 0`,
  event_id: 123456,
  device_id: 0,
  nodes: rows,
};
fs.mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
fs.writeFileSync(out, JSON.stringify(data));
const maxDepth = rows.reduce((m, r) => Math.max(m, r.depth), 0);
console.log(`wrote ${out} (${rows.length} nodes, depth ${maxDepth})`);
