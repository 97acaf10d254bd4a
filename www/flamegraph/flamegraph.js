/* pt-snap memory flamegraph.
 *
 * An icicle view (root on top) of the memory live after one allocator event, by allocation
 * call frame; widths are inclusive bytes. Input: the rows of the
 * `active_memory_frame_tree_at_event` template, wrapped as
 *   {"title": str, "event_id": int, "device_id": int, "nodes": [rows]}.
 *
 * Diff mode ({"mode": "diff", …}, `pt-snap diff --format html`): the rows are the frames of
 * two runs' stacks merged, each with both sides' bytes (`bytes_a`, `bytes_b`, …); widths are
 * the larger side of each stack, colours the change from A to B.
 *
 * Plain JS, no dependency, no network, no build step: the same file is inlined into the
 * self-contained reports (`pt-snap report memory-tree --format html`, `pt-snap diff`) and
 * loaded by the web app, so it is a classic script that only defines
 * globalThis.PtSnapFlamegraph.
 *
 *   const fg = PtSnapFlamegraph.render(container, data, options);
 *   fg.zoomTo(nodeId); fg.search(text); fg.destroy();
 *
 * `PtSnapFlamegraph.prepare(data)` builds the trees alone; `render` takes what it returns
 * in place of `data` (a page can build them in one task and draw in the next), once.
 *
 * What the component shares with the text reports is decided once, in Rust
 * (pt-snap-report), and comes with the data: each frame row's `origin` (the kind of code,
 * which colours it) and the Python frames view (`python_view`). Byte counts read as the
 * reports write them: `formatBytes` is held to pt-snap-report's `units::human_bytes` by
 * tests/browser/rules.test.mjs over a table Rust writes.
 */
(function (global) {
  'use strict';

  // Synthetic leaves sit directly under the root and have no frame. They are explained in
  // the UI because "static" and "preexisting" are allocator-replay terms users don't know.
  var SYNTHETIC = {
    static: {
      kind: 'static', name: 'Static',
      text: 'Allocated before memory recording started and never freed in the trace, ' +
        'so no call stack was recorded (typically parameters and buffers created early).'
    },
    preexisting_live_at_event: {
      kind: 'pre', name: 'Preexisting',
      text: 'Allocated before recording started and freed later in the trace, ' +
        'after this event; no call stack was recorded.'
    },
    empty_callstack: {
      kind: 'empty', name: 'Empty call stack',
      text: 'Allocated during the trace, but the captured call stack has no frames ' +
        '(e.g. stacks were not recorded for it).'
    },
    missing: {
      kind: 'missing', name: 'Missing call stack',
      text: 'Allocated during the trace, but its call stack is missing or inconsistent ' +
        'in the snapshot.'
    }
  };

  var CODE_KINDS = [
    { kind: 'user', name: 'Your code', text: 'Python files outside installed packages and the standard library; <stdin>, IPython cells' },
    { kind: 'torch', name: 'PyTorch', text: 'Python files of torch, torchvision, …' },
    { kind: 'native', name: 'Native C++/CUDA', text: 'frames that are not Python: C++ and CUDA sources, shared libraries, ?? frames' },
    { kind: 'lib', name: 'Python & other libraries', text: 'the interpreter\'s C frames, <frozen …>, the standard library, other site-packages' }
  ];

  var KIND_NAMES = {
    root: 'All live memory', user: 'Your code', torch: 'PyTorch', native: 'Native C++/CUDA',
    lib: 'Python & other libraries', static: 'Static', pre: 'Preexisting',
    empty: 'Empty call stack', missing: 'Missing call stack'
  };

  var DEFAULTS = {
    rowHeight: 20,
    minFrameWidth: 1,   // px; narrower frames are not drawn (search and keys still reach them)
    hideSynthetic: false,
    foldNoise: null,    // fold interpreter & dispatcher frames; null = on when there are any
    pythonFrames: null, // the Python frames view; null = data.python_frames, else on when any fold
    showHeader: true,
    maxResults: 500,
    onSelect: null      // called with the selected row (click, Enter, search result)
  };

  // ---------------------------------------------------------------- formatting

  // pt-snap-report's `units::human_bytes`, step for step (the same IEEE operations give the
  // same figures): two decimals of a binary unit, whole bytes below 1 KiB, halves away from
  // zero, and what would read 1024.00 of a unit reads 1.00 of the next.
  var UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

  function human(bytes) {
    if (typeof bytes !== 'number' || !isFinite(bytes)) return 'n/a';
    var m = Math.abs(bytes), whole = Math.round(m);
    if (whole < 1024) return (bytes < 0 && whole !== 0 ? '-' : '') + whole + ' B';
    var v = m / 1024, i = 1;
    while (v >= 1024 && i < UNITS.length - 1) { v /= 1024; i++; }
    var h = Math.round(v * 100);
    if (h >= 102400 && i < UNITS.length - 1) { v /= 1024; i++; h = Math.round(v * 100); }
    var frac = h % 100;
    return (bytes < 0 ? '-' : '') + Math.floor(h / 100) + '.' + (frac < 10 ? '0' : '') + frac + ' ' + UNITS[i];
  }

  // Not toLocaleString: ICU formatting is slow enough to show when labelling 10k frames.
  function exact(n) {
    if (typeof n !== 'number' || !isFinite(n)) return 'n/a';
    return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  }

  // "1.23 GiB (1,320,702,443 B)": the human figure to read, the exact one to compare.
  function bytesBoth(bytes) {
    if (typeof bytes !== 'number' || !isFinite(bytes)) return 'n/a';
    return Math.abs(bytes) < 1024 ? bytes + ' B' : human(bytes) + ' (' + exact(bytes) + ' B)';
  }

  function pct(p) {
    if (typeof p !== 'number' || !isFinite(p)) return 'n/a';
    if (p > 0 && p < 0.01) return '<0.01%';
    return p.toFixed(2) + '%';
  }

  function share(part, whole) {
    return whole > 0 ? (part * 100) / whole : null;
  }

  function num(v) {
    return typeof v === 'number' && isFinite(v) ? v : 0;
  }

  function baseName(path) {
    var parts = String(path).split(/[\\/]/);
    return parts[parts.length - 1] || String(path);
  }

  // FNV-1a: a stable per-name shade, so one function keeps its colour across zooms.
  function shade(text) {
    var h = 0x811c9dc5;
    for (var i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i);
      h = Math.imul(h, 0x01000193);
    }
    return ((h >>> 0) % 1000) / 1000;
  }

  // ---------------------------------------------------------------- noise frames

  // Frames that "Fold interpreter & dispatcher frames" takes out of the tree: the same
  // noise memory_viz hides by default. With stacks="all" a real stack is mostly CPython's
  // eval loop, PyTorch's dispatcher and the unwinder that captured it, and the user's own
  // frames end up scattered between them. Each entry tests `name`; `file`, when given, must
  // also match `filename`. Allocator frames (c10::cuda::CUDACachingAllocator…) are absent
  // on purpose: they show where the memory came from. A Python frame (by its `origin`) is
  // never noise, whatever its name (see noiseOf). This fold is the component's own: the
  // text reports have no such view.
  var NOISE = [
    {
      group: 'interpreter', text: 'CPython interpreter / process entry',
      // Only unsymbolised C frames ("??" or no file): a C file with such a name is someone's
      // extension module, and that is worth seeing. A frame of CPython's own sources
      // (`…/python-3.12.3/Objects/call.c`, `Python/generated_cases.c.h`, symbolised
      // captures) is the interpreter whatever its name (`pyrun_file`, `slot_nb_add`).
      file: /^(\?\?)?$/,
      source: /(^|[\\/])(Python|Objects|Modules|Include|Parser|Programs)[\\/]([\w.-]+[\\/])*[\w.-]+\.(c|h)$/,
      name: /^_{0,2}Py[A-Z_]|^_start$|^__libc_|^Py_RunMain|^Py_BytesMain|^pymain_|^method_vectorcall|^cfunction_|^slot_tp_|^vectorcall_|^start_thread$|^__clone\d*$/
    },
    {
      group: 'dispatcher', text: 'PyTorch dispatcher / boxing',
      // Anchored at the start or after a return type ("void c10::Dispatcher::…"), so a
      // kernel merely templated on one of these is not caught. VariableType, ADInplaceOrView
      // and autocast's WrapFunction_ are the wrapper kernels of dispatch keys: one per op
      // call, each naming the op again; at::autocast::cached_cast (a real cast) stays.
      name: /(^|\s)(c10::impl::|c10::Dispatcher::|c10::BoxedKernel::|c10::KernelFunction::|torch::autograd::VariableType::|torch::ADInplaceOrView::|at::autocast::WrapFunction_|at::_ops::\w+::(call|redispatch)\b)/
    },
    {
      group: 'capture', text: 'stack capture',
      name: /(^|\s)(torch::unwind::|torch::CapturedTraceback::)|(^|::)gather_with_cpp\b/
    }
  ];

  // The NOISE entry a frame row falls under, or null.
  function noiseOf(row) {
    if (!row || row.name == null) return null;
    var file = row.filename == null ? '' : String(row.filename), name = String(row.name);
    if (PYTHON_ORIGINS[row.origin] === true) return null;
    for (var i = 0; i < NOISE.length; i++) {
      var n = NOISE[i];
      if ((n.name.test(name) && (!n.file || n.file.test(file))) || (n.source && n.source.test(file))) return n;
    }
    return null;
  }

  // ---------------------------------------------------------------- model

  // The colour of each origin a frame row carries (pt-snap-report's `stack::Origin`): the
  // user's code, PyTorch's Python and native code apart, and the rest — other packages, the
  // standard library and CPython's own C frames, noise next to torch's C++ — muted together.
  var ORIGIN_KIND = { user: 'user', torch: 'torch', native: 'native', package: 'lib', stdlib: 'lib', interpreter: 'lib' };
  // The origins of Python frames (`Origin::is_python`).
  var PYTHON_ORIGINS = { user: true, torch: true, package: true, stdlib: true };

  function buildModel(data) {
    var rows = Array.isArray(data.nodes) ? data.nodes : Array.isArray(data.rows) ? data.rows : [];
    var byId = new Map();
    var all = [];
    rows.forEach(function (row, i) {
      if (!row || typeof row.node_id !== 'string' || byId.has(row.node_id)) return;
      // The fields from `sources` on belong to the views (see Models); declared here so
      // every tree's nodes share one shape.
      var node = {
        id: row.node_id, row: row, index: i, parent: null, children: [], depth: 0,
        size: num(row.size_bytes), kind: '', synthetic: null, short: '', place: '', hay: '', v: 0, python: false,
        sources: null, merged: 1, hidden: 0, noise: null, gone: false, rep: null,
        noiseGone: false, pyGone: false, pyRep: null, vGone: false, vRep: null, vAbove: 0
      };
      byId.set(node.id, node);
      all.push(node);
    });
    var root = null;
    all.forEach(function (node) {
      var pid = node.row.parent_id;
      if (pid === null || pid === undefined) {
        if (!root) root = node;
        return;
      }
      var parent = byId.get(pid);
      if (parent && parent !== node) { node.parent = parent; parent.children.push(node); }
    });
    if (!root) return { root: null, byId: new Map(), nodes: [], maxDepth: 0 };

    // Depths come from the links rather than the rows, and only nodes reachable from the
    // root are kept, so a malformed row can neither misplace a frame nor loop forever.
    var nodes = [root], maxDepth = 0, seen = new Set([root]);
    for (var q = 0; q < nodes.length; q++) {
      var n = nodes[q];
      n.children = n.children.filter(function (c) { return !seen.has(c); });
      n.children.forEach(function (c) { seen.add(c); });
      // Rows already come size DESC, node_id ASC; sorting again keeps the view right for
      // callers that pass rows in another order.
      n.children.sort(function (a, b) { return b.size - a.size || a.index - b.index; });
      n.children.forEach(function (c) { c.depth = n.depth + 1; nodes.push(c); });
      if (n.depth > maxDepth) maxDepth = n.depth;
      describe(n, root);
    }
    var reachable = new Map();
    nodes.forEach(function (n) { reachable.set(n.id, n); });
    return { root: root, byId: reachable, nodes: nodes, maxDepth: maxDepth };
  }

  function describe(node, root) {
    var r = node.row;
    var label = r.label != null ? String(r.label) : node.id;
    if (node === root) {
      node.kind = 'root';
      node.short = label;
    } else if (node.parent === root && r.frame_id == null && SYNTHETIC[node.id]) {
      node.synthetic = SYNTHETIC[node.id];
      node.kind = node.synthetic.kind;
      node.short = label;
    } else {
      node.kind = ORIGIN_KIND[r.origin] || 'lib';
      node.python = PYTHON_ORIGINS[r.origin] === true;
      var line = r.line != null ? ':' + r.line : '';
      // "??:0" (an unsymbolised native frame) says nothing in a label; the details keep it.
      if (r.name != null && r.filename != null && r.filename !== '??') node.short = r.name + ' (' + baseName(r.filename) + line + ')';
      else node.short = r.name != null ? String(r.name) : label;
      if (r.filename != null) node.place = r.filename + line;
    }
    node.hay = [label, r.name, r.filename, node.short].join('\n').toLowerCase();
    node.v = shade(String(r.name != null ? r.name : label));
  }

  // ---------------------------------------------------------------- folding

  var SUMS = ['block_count', 'size_bytes', 'requested_bytes', 'self_block_count', 'self_bytes', 'self_requested_bytes'];
  var SELF_SUMS = ['self_block_count', 'self_bytes', 'self_requested_bytes'];
  // Diff mode's counters of both sides: summed like the others when frames merge or fold.
  var DIFF_SUMS = ['bytes_a', 'bytes_b', 'blocks_a', 'blocks_b', 'self_bytes_a', 'self_bytes_b', 'self_blocks_a', 'self_blocks_b'];
  var DIFF_SELF_SUMS = ['self_bytes_a', 'self_bytes_b', 'self_blocks_a', 'self_blocks_b'];

  function holdsMemory(node) {
    return num(node.row.self_bytes) !== 0 || num(node.row.self_block_count) !== 0;
  }

  // The rows' nodes a node of any tree stands for: itself for a row's node; a folded or
  // Python view node's sources, down to the rows (a fold of the Python view stands for
  // Python view nodes, each standing for rows).
  function fullSources(node) {
    if (!node.sources) return [node];
    if (!node.sources[0].sources) return node.sources;
    var out = [];
    for (var i = 0; i < node.sources.length; i++) out.push.apply(out, fullSources(node.sources[i]));
    return out;
  }

  // A copy of a node's row for counters that are its own (summed over frames, or given by
  // the Python view), with the ids of the rows it stands for and its place in its tree.
  function ownRow(node, total) {
    var row = {};
    for (var k in node.row) row[k] = node.row[k];
    row.parent_id = node.parent ? node.parent.id : null;
    row.depth = node.depth;
    row.source_node_ids = fullSources(node).map(function (x) { return x.id; });
    row.percent_of_total = share(num(row.size_bytes), total);
    return row;
  }

  // The Python frames view the data carries (`python_view`, made by pt-snap-report's
  // `python_view`, the same view `report memory-tree --stacks python` prints): nodes caller
  // first, each with its caller (`parent`, an index into them), the rows it stands for
  // (`sources`, indices into the rows, the first naming it) and its counters. Returns
  // {model, count} in buildModel's shape, its nodes with `sources`; every node of `full`
  // gets `pyGone` (folded away in this view) and `pyRep` (the node standing for it, or for
  // a folded-away one the node that took its self bytes). Null without a view that folds
  // something, or with one that does not fit the rows.
  function pythonModel(full, view) {
    if (!full.root || !view || !(view.folded > 0) || !Array.isArray(view.nodes) || !view.nodes.length) return null;
    var byIndex = new Map(), i, k, n;
    for (i = 0; i < full.nodes.length; i++) {
      n = full.nodes[i];
      byIndex.set(n.index, n);
      n.pyRep = null;
    }
    var nodes = [], maxDepth = 0;
    for (i = 0; i < view.nodes.length; i++) {
      var v = view.nodes[i] || {};
      var sources = Array.isArray(v.sources) ? v.sources.map(function (x) { return byIndex.get(x); }) : [];
      if (!sources.length || sources.some(function (x) { return !x || x.pyRep; })) return null;
      var parent = v.parent == null ? null : nodes[v.parent];
      if (parent === undefined || (parent === null) !== (i === 0)) return null;
      var first = sources[0];
      var node = {
        id: first.id, row: first.row, index: first.index, parent: parent, children: [],
        depth: parent ? parent.depth + 1 : 0, size: 0, kind: first.kind, synthetic: first.synthetic,
        short: first.short, place: first.place, hay: first.hay, v: first.v, python: first.python,
        sources: sources, merged: sources.length, hidden: 0, noise: null, gone: false, rep: null
      };
      // The first row's own, unless the view gave it other counters or another caller.
      var own = sources.length > 1 || (parent ? parent.id : null) !== (first.parent ? first.parent.id : null);
      for (k in v) if (k !== 'parent' && k !== 'sources' && v[k] !== first.row[k]) own = true;
      if (own) {
        node.row = ownRow(node, full.root.size);
        for (k in v) if (k !== 'parent' && k !== 'sources') node.row[k] = v[k];
        node.row.percent_of_total = share(num(node.row.size_bytes), full.root.size);
      }
      node.size = num(node.row.size_bytes);
      if (parent) parent.children.push(node);
      if (node.depth > maxDepth) maxDepth = node.depth;
      nodes.push(node);
      for (k = 0; k < sources.length; k++) { sources[k].pyRep = node; sources[k].pyGone = false; }
    }
    if (nodes[0].sources[0] !== full.root) return null;
    // Caller first: a folded-away row's bytes are its nearest kept caller's.
    for (i = 0; i < full.nodes.length; i++) {
      n = full.nodes[i];
      if (n.pyRep) continue;
      n.pyGone = true;
      n.pyRep = n.parent ? n.parent.pyRep : null;
    }
    var byId = new Map();
    nodes.forEach(function (x) {
      x.children.sort(function (a, b) { return b.size - a.size || a.index - b.index; });
      byId.set(x.id, x);
    });
    return { model: { root: nodes[0], byId: byId, nodes: nodes, maxDepth: maxDepth }, count: view.folded };
  }

  // The tree `base` (the rows' tree, or the Python view) with noise frames folded away,
  // built beside it. Returns {model, count}: `model` has buildModel's shape, its nodes carry
  // `sources` (the base nodes they stand for, largest first). `count` base frames were
  // folded away. Each base node gets `noise` (its NOISE entry or null), `gone` (folded away)
  // and `rep`: for a kept frame the node standing for it, for a gone one the node that took
  // its self bytes (the node of its nearest kept ancestor).
  function foldModel(base, diff) {
    var nodes = base.nodes, count = 0, i, n;
    var sums = diff ? SUMS.concat(DIFF_SUMS) : SUMS, selfSums = diff ? SELF_SUMS.concat(DIFF_SELF_SUMS) : SELF_SUMS;
    if (!base.root) return { model: base, count: 0 };
    for (i = 0; i < nodes.length; i++) {
      n = nodes[i];
      n.noise = n.kind === 'root' || n.synthetic ? null : noiseOf(n.row);
      n.rep = null;
    }

    // Bottom-up (children come after their parent in `nodes`): a noise frame goes unless it
    // is the innermost frame of its stack holding memory itself (nothing kept below it and
    // nonzero self), so memory always stays on a frame of the stack that allocated it.
    // Stack-capture frames (`torch::unwind::unwind()` ends nearly every C++ stack) go even
    // then: they record the stack, they do not allocate, so their bytes belong to the
    // allocator frame that called them. `rep` is borrowed here as "something below is kept".
    for (i = nodes.length - 1; i > 0; i--) {
      n = nodes[i];
      var keptBelow = n.rep === true;
      var capture = !!n.noise && n.noise.group === 'capture';
      n.gone = !!n.noise && (capture || !(holdsMemory(n) && !keptBelow));
      if (!n.gone || keptBelow) n.parent.rep = true;
    }
    // Top-down: a gone frame's self bytes go to its nearest kept ancestor; if that is the
    // root they would belong to no frame at all, so such a frame stays. `rep` is borrowed
    // again, now as the nearest kept ancestor.
    base.root.rep = null;
    for (i = 1; i < nodes.length; i++) {
      n = nodes[i];
      var up = n.parent.gone ? n.parent.rep : n.parent;
      if (n.gone && up === base.root && holdsMemory(n)) n.gone = false;
      n.rep = up;
      if (n.gone) count++;
    }

    // A folded node is described exactly like its first source (same label, so same text
    // and colour). It shares that source's row until its counters differ: merged frames or
    // folded self bytes get a copy with the sums and the ids of the rows it stands for.
    function make(sources, parent) {
      if (sources.length > 1) sources.sort(function (a, b) { return b.size - a.size || a.index - b.index; });
      var first = sources[0], size = 0, merged = 0, k;
      for (k = 0; k < sources.length; k++) { size += sources[k].size; merged += sources[k].merged; }
      var node = {
        id: first.id, row: first.row, index: first.index, parent: parent, children: [],
        depth: parent ? parent.depth + 1 : 0, size: size, kind: first.kind, synthetic: first.synthetic,
        short: first.short, place: first.place, hay: first.hay, v: first.v, python: first.python,
        sources: sources, merged: merged, hidden: 0, noise: first.noise, gone: false, rep: null
      };
      if (sources.length > 1) {
        var row = own(node);
        sums.forEach(function (f) { row[f] = sources.reduce(function (s, x) { return s + num(x.row[f]); }, 0); });
        row.percent_of_total = share(row.size_bytes, base.root.size);
      }
      for (k = 0; k < sources.length; k++) sources[k].rep = node;
      return node;
    }
    function own(node) {
      return node.row !== node.sources[0].row ? node.row : (node.row = ownRow(node, base.root.size));
    }

    var root = make([base.root], null), out = [root], maxDepth = 0;
    var stack = [], groups = new Map();
    for (var q = 0; q < out.length; q++) {
      var f = out[q], absorbed = null, order = [];
      groups.clear();
      // Walk down from every source through gone frames to the kept ones: they are this
      // node's children; the gone frames' self counters become its own.
      for (var si = 0; si < f.sources.length; si++) {
        var kids = f.sources[si].children;
        for (var c = kids.length - 1; c >= 0; c--) stack.push(kids[c]);
      }
      while (stack.length) {
        var child = stack.pop();
        if (child.gone) {
          child.rep = f;
          if (holdsMemory(child) || num(child.row.self_requested_bytes)) (absorbed = absorbed || []).push(child);
          for (var j = child.children.length - 1; j >= 0; j--) stack.push(child.children[j]);
          continue;
        }
        // Same label under one parent = the same frame reached through different folded
        // paths: one node. Synthetic leaves are not frames and keep their own key.
        var r = child.row, key = child.synthetic ? child
          : r.label != null ? String(r.label) : r.filename + '\u0000' + r.line + '\u0000' + r.name;
        var g = groups.get(key);
        if (!g) { g = []; groups.set(key, g); order.push(g); }
        g.push(child);
      }
      if (absorbed) {
        var mine = own(f);
        absorbed.forEach(function (d) { selfSums.forEach(function (k) { mine[k] = num(mine[k]) + num(d.row[k]); }); });
      }
      for (var gi = 0; gi < order.length; gi++) f.children.push(make(order[gi], f));
      f.children.sort(function (a, b) { return b.size - a.size || a.index - b.index; });
      for (c = 0; c < f.children.length; c++) out.push(f.children[c]);
      if (f.depth > maxDepth) maxDepth = f.depth;
    }
    var byId = new Map();
    out.forEach(function (n) { byId.set(n.id, n); });
    return { model: { root: root, byId: byId, nodes: out, maxDepth: maxDepth }, count: count };
  }

  // Marks every node of the rows' tree for `view` (one of Models' views): `vGone` (folded
  // away), `vRep` (the node of the view standing for it; for a folded-away one, the node
  // that took its self bytes) and `vAbove` (how many folded-away frames sit right above it).
  function markView(full, view) {
    var nodes = full.nodes;
    for (var i = 0; i < nodes.length; i++) {
      var n = nodes[i], b = view.python ? n.pyRep : n, gone = !!view.python && n.pyGone, rep = b;
      if (view.noise) { gone = gone || b.gone; rep = b.rep; }
      n.vGone = gone;
      n.vRep = rep;
      n.vAbove = n.parent && n.parent.vGone ? n.parent.vAbove + 1 : 0;
    }
  }

  // The folded-away frames between a row's node and its nearest kept ancestor in the view
  // last marked (markView), caller first.
  function foldedAbove(node) {
    var chain = [];
    for (var p = node.parent; p && p.vGone; p = p.parent) chain.unshift(p);
    return chain;
  }

  // ---------------------------------------------------------------- diff mode

  function deltaOf(row) {
    return num(row.bytes_b) - num(row.bytes_a);
  }

  // "+1.50 MiB (+12.3%)", "-512 B (only in A)", "0 B".
  function signedBytes(d) {
    return d > 0 ? '+' + human(d) : d < 0 ? human(d) : '0 B';
  }

  function changeText(a, b) {
    var d = b - a;
    var rel = a === 0 ? (b === 0 ? '' : ' (only in B)') : b === 0 ? ' (only in A)' : ' (' + (d >= 0 ? '+' : '') + ((d * 100) / a).toFixed(1) + '%)';
    return signedBytes(d) + rel;
  }

  // Growth red, shrinkage blue, no change grey; the strength is sqrt(|change| / the largest
  // |change| of any frame), so a change a hundredth of the largest still shows (at 10%),
  // and never less than a visible minimum.
  function diffShade(row, maxDelta) {
    var d = deltaOf(row);
    if (d === 0 || !(maxDelta > 0)) return { cls: 'd-same', t: 0 };
    return { cls: d > 0 ? 'd-grow' : 'd-shrink', t: Math.max(0.15, Math.min(1, Math.sqrt(Math.abs(d) / maxDelta))) };
  }

  // The largest |change| of a frame below the root, over the full and the folded tree (a
  // merged node sums its frames), so that folding keeps the colours comparable.
  function largestDelta(models) {
    var max = 0;
    models.forEach(function (m) {
      m.nodes.forEach(function (n) { if (n !== m.root) max = Math.max(max, Math.abs(deltaOf(n.row))); });
    });
    return max;
  }

  // ---------------------------------------------------------------- DOM helpers

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === null || v === undefined || v === false) return;
        if (k === 'class') e.className = v;
        else if (k === 'text') e.textContent = v;
        else e.setAttribute(k, v === true ? '' : String(v));
      });
    }
    (children || []).forEach(function (c) {
      if (c !== null && c !== undefined) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    });
    return e;
  }

  var uid = 0;

  // ---------------------------------------------------------------- component

  // Trees over the same rows, one per view: the rows' own (`full`), noise folded away
  // (`noise`), the Python frames view the data carries (`python`), and that view with noise
  // folded away (`both`). Folding is cheap (one pass), and knowing up front what each fold
  // removes decides whether its control is shown at all. This is half of a first render's
  // work at a million events, so a page may do it in a task of its own (`prepare`), and
  // draw in the next.
  function Models(data) {
    this.data = data;
    this.full = buildModel(data);
    this.diff = data.mode === 'diff';
    var noise = foldModel(this.full, this.diff);
    // What the noise fold alone does to a frame, for its details in any view.
    this.full.nodes.forEach(function (n) { n.noiseGone = n.gone; });
    var python = pythonModel(this.full, data.python_view);
    var both = python ? foldModel(python.model, this.diff) : null;
    this.views = {
      full: { model: this.full },
      noise: { model: noise.model, noise: true },
      python: python && { model: python.model, python: true },
      both: both && { model: both.model, noise: true, python: true }
    };
    this.foldable = noise.count;
    this.pythonFoldable = python ? python.count : 0;
    var self = this, models = [this.full];
    // Each folded node's `hidden`: how many folded-away frames sat between it and its
    // caller, at most (over the rows it stands for).
    ['noise', 'python', 'both'].forEach(function (key) {
      var view = self.views[key];
      if (!view) return;
      markView(self.full, view);
      view.model.nodes.forEach(function (n) {
        n.hidden = fullSources(n).reduce(function (h, s) { return Math.max(h, s.vAbove); }, 0);
      });
      models.push(view.model);
    });
    this.maxDelta = this.diff ? largestDelta(models) : 0;
  }

  function Flamegraph(container, data, options) {
    this.opts = {};
    for (var k in DEFAULTS) this.opts[k] = options && options[k] !== undefined ? options[k] : DEFAULTS[k];
    this.container = container;
    var models = data instanceof Models ? data : new Models(data);
    data = models.data;
    this.data = data;
    // `model` is the tree on screen.
    this.full = models.full;
    this.diff = models.diff;
    this.maxDelta = models.maxDelta;
    this.views = models.views;
    this.foldable = models.foldable;
    this.pythonFoldable = models.pythonFoldable;
    this.foldNoise = this.foldable > 0 && this.opts.foldNoise !== false;
    var py = this.opts.pythonFrames != null ? this.opts.pythonFrames : data.python_frames;
    this.pythonFrames = this.pythonFoldable > 0 && py !== false;
    this.model = this.viewModel();
    this.uid = 'ptsnap-fg-' + (++uid);
    this.hideSynthetic = !!this.opts.hideSynthetic;
    this.zoom = this.model.root;
    this.current = this.model.root;   // the one frame with tabindex=0 (roving tabindex)
    this.hover = null;
    this.query = '';
    this.matches = [];
    this.matchSet = new Set();
    this.elements = new Map();
    this.width = 0;
    this.frameRaf = 0;
    this.searchTimer = 0;
    this.lastRenderMs = 0;
    this.build();
    this.drawResults();
    this.refresh(false);
  }

  Flamegraph.prototype.build = function () {
    var self = this, m = this.full, d = this.data;
    var root = el('div', { class: 'ptsnap-fg' + (this.diff ? ' fg-diff' : '') });

    if (this.opts.showHeader) {
      var sub = [], title = d.title != null ? String(d.title) : '';
      if (this.diff && m.root) {
        sub.push('A ' + human(num(m.root.row.bytes_a)) + ' in ' + exact(num(m.root.row.blocks_a)) + ' blocks',
          'B ' + human(num(m.root.row.bytes_b)) + ' in ' + exact(num(m.root.row.blocks_b)) + ' blocks',
          'change ' + changeText(num(m.root.row.bytes_a), num(m.root.row.bytes_b)));
      }
      // The report's title already reads "… event E · device D"; don't say it twice.
      if (d.event_id != null && title.indexOf('event ' + d.event_id) < 0) sub.push('event ' + d.event_id);
      if (d.device_id != null && title.indexOf('device ' + d.device_id) < 0) sub.push('device ' + d.device_id);
      if (m.root && !this.diff) sub.push(bytesBoth(m.root.size) + ' live in ' + exact(num(m.root.row.block_count)) + ' blocks');
      root.appendChild(el('header', { class: 'fg-head' }, [
        el('h1', { class: 'fg-title', text: title || 'Memory flamegraph' }),
        el('p', { class: 'fg-sub', text: sub.join(' · ') })
      ]));
    }

    root.appendChild(this.diff ? this.buildDiffSummary() : this.buildSummary());

    this.searchInput = el('input', {
      type: 'search', class: 'fg-search', 'data-testid': 'fg-search', placeholder: 'Search every frame: function, file…',
      'aria-label': 'Search frames by function or file name', autocomplete: 'off', spellcheck: 'false',
      'aria-controls': this.uid + '-results'
    });
    this.countEl = el('span', { class: 'fg-count', role: 'status' });
    this.resetBtn = el('button', { type: 'button', class: 'fg-btn', 'data-testid': 'fg-reset', text: 'Reset' });
    this.resetBtn.title = 'Zoom out to the root and clear the search';
    root.appendChild(el('div', { class: 'fg-toolbar' }, [this.searchInput, this.countEl, this.resetBtn]));

    this.crumbs = el('nav', { class: 'fg-crumbs', 'data-testid': 'fg-breadcrumb', 'aria-label': 'Zoom path' });
    root.appendChild(this.crumbs);

    this.details = el('section', {
      class: 'fg-details', 'data-testid': 'fg-details', 'aria-live': 'polite', 'aria-label': 'Frame details'
    });
    this.resultsHead = el('p', { class: 'fg-results-head' });
    this.results = el('ul', {
      class: 'fg-results', id: this.uid + '-results', 'data-testid': 'fg-search-results', 'aria-label': 'Search results'
    });
    root.appendChild(el('div', { class: 'fg-panels' }, [
      this.details, el('section', { class: 'fg-results-box' }, [this.resultsHead, this.results])
    ]));

    this.legend = el('ul', {
      class: 'fg-legend', 'aria-label': this.diff ? 'Colour legend: change from A to B' : 'Colour legend: self bytes by kind of code'
    });
    this.drawLegend();
    root.appendChild(this.legend);

    this.graph = el('div', {
      class: 'fg-graph', role: 'tree', 'aria-label': (this.diff
        ? 'Differential memory flamegraph: width is the larger of A and B, colour the change. '
        : 'Memory flamegraph: width is live bytes. ') +
        'Arrow keys move between frames, Enter zooms in, Escape zooms out.'
    });
    root.appendChild(this.graph);
    root.appendChild(el('p', {
      class: 'fg-help',
      text: (this.diff
        ? 'Width = for each call stack the larger of its bytes in A and in B (inclusive of callees); colour = change from A to B. '
        : 'Width = bytes live after the event (inclusive of callees). ') + 'Click a frame to zoom in; ' +
        'click the top frame, a breadcrumb or press Esc to zoom out. Keys: ↑ caller · ↓ callee · ' +
        '← → siblings · Enter zoom · Esc zoom out · / search.'
    }));
    this.tip = el('div', { class: 'fg-tip', 'aria-hidden': 'true' });
    root.appendChild(this.tip);

    this.root = root;
    this.container.appendChild(root);

    // Delegated listeners: one set for all frames, however many are drawn.
    this.listeners = [];
    function on(target, type, fn) {
      target.addEventListener(type, fn);
      self.listeners.push([target, type, fn]);
    }
    on(this.graph, 'click', function (e) { self.onFrameClick(e); });
    on(this.graph, 'keydown', function (e) { self.onFrameKey(e); });
    on(this.graph, 'mouseover', function (e) { self.onHover(e); });
    on(this.graph, 'mousemove', function (e) { self.moveTip(e); });
    on(this.graph, 'mouseleave', function () { self.setHover(null); });
    on(this.graph, 'focusin', function (e) {
      var node = self.nodeOf(e.target);
      if (node) self.setCurrent(node, false);
    });
    on(this.searchInput, 'input', function () {
      clearTimeout(self.searchTimer);
      self.searchTimer = setTimeout(function () { self.search(self.searchInput.value); }, 120);
    });
    on(this.searchInput, 'keydown', function (e) {
      if (e.key === 'Enter' && self.matches.length) {
        e.preventDefault();
        clearTimeout(self.searchTimer);
        self.search(self.searchInput.value);
        if (self.matches.length) self.reveal(self.matches[0].id);
      } else if (e.key === 'Escape') {
        e.preventDefault();
        self.search('');
      }
    });
    on(this.resetBtn, 'click', function () { self.reset(); });
    on(this.crumbs, 'click', function (e) {
      var b = e.target.closest('button[data-node-id]');
      if (b) self.zoomTo(b.getAttribute('data-node-id'));
    });
    on(this.results, 'click', function (e) {
      var b = e.target.closest('button[data-node-id]');
      if (b) self.reveal(b.getAttribute('data-node-id'));
    });
    on(root, 'keydown', function (e) {
      if (e.key === '/' && e.target !== self.searchInput && !e.ctrlKey && !e.metaKey && !e.altKey) {
        e.preventDefault();
        self.searchInput.focus();
      }
    });
    if (this.toggle) on(this.toggle, 'change', function () { self.setHideSynthetic(self.toggle.checked); });
    if (this.foldToggle) on(this.foldToggle, 'change', function () { self.setFoldNoise(self.foldToggle.checked); });
    if (this.pyToggle) on(this.pyToggle, 'change', function () { self.setPythonFrames(self.pyToggle.checked); });

    // Only a width change needs a redraw; the observer hands us the width, so drawing
    // never has to read layout.
    if (typeof ResizeObserver === 'function') {
      this.resizer = new ResizeObserver(function (entries) {
        var w = entries[entries.length - 1].contentRect.width;
        if (Math.abs(w - self.width) >= 0.5) {
          self.width = w;
          self.scheduleDraw();
        }
      });
      this.resizer.observe(this.graph);
    }
  };

  Flamegraph.prototype.buildSummary = function () {
    var m = this.full, box = el('section', { class: 'fg-summary', 'aria-label': 'Where the live memory is' });
    if (!m.root) {
      box.appendChild(el('p', { class: 'fg-empty', text: 'No frame tree in this report (no rows).' }));
      return box;
    }
    var total = m.root.size;
    if (total <= 0) {
      box.appendChild(el('p', { class: 'fg-empty', text: 'No memory is live after this event (0 B).' }));
      this.buildToggles(box, false);
      return box;
    }
    var synth = m.root.children.filter(function (c) { return c.synthetic; });
    var framed = m.root.children.reduce(function (s, c) { return c.synthetic ? s : s + c.size; }, 0);
    var parts = [{ kind: 'stack', name: 'With a call stack', size: framed, text: 'Allocated during the trace at a known call stack: the flamegraph frames.' }]
      .concat(synth.map(function (c) {
        return { kind: c.kind, name: c.synthetic.name, size: c.size, text: c.synthetic.text, id: c.id };
      }));
    // The template guarantees root = Σ children; a truncated or hand-made tree may not,
    // and then the gap must not be passed off as frames.
    var rest = total - num(m.root.row.self_bytes) - m.root.children.reduce(function (s, c) { return s + c.size; }, 0);
    if (rest > 0) {
      parts.push({ kind: 'root', name: 'Not broken down', size: rest, text: 'The rows do not attribute this memory to any frame (an incomplete tree).' });
    }
    var bar = el('div', { class: 'fg-bar', 'aria-hidden': 'true' });
    parts.forEach(function (p) {
      if (p.size <= 0) return;
      var seg = el('span', { class: 'fg-seg k-' + p.kind, title: p.name + ': ' + human(p.size) });
      seg.style.flexGrow = String(share(p.size, total));
      bar.appendChild(seg);
    });
    box.appendChild(bar);
    var list = el('ul', { class: 'fg-parts' });
    parts.forEach(function (p) {
      list.appendChild(el('li', null, [
        el('span', { class: 'fg-swatch k-' + p.kind, 'aria-hidden': 'true' }),
        el('b', { text: p.name }), ' ',
        el('span', { class: 'fg-num', text: human(p.size) + ' · ' + pct(share(p.size, total)) }), ' ',
        el('span', { class: 'fg-note', text: p.text })
      ]));
    });
    box.appendChild(list);
    this.buildToggles(box, synth.length > 0);
    return box;
  };

  // Diff mode's summary: both sides' totals, the change, how to read widths and colours.
  Flamegraph.prototype.buildDiffSummary = function () {
    var m = this.full, box = el('section', { class: 'fg-summary', 'aria-label': 'What changed from A to B' });
    if (!m.root) {
      box.appendChild(el('p', { class: 'fg-empty', text: 'No frame tree in this report (no rows).' }));
      return box;
    }
    var r = m.root.row, a = num(r.bytes_a), b = num(r.bytes_b);
    var sides = this.data.a && this.data.b ? [['A', this.data.a], ['B', this.data.b]] : [];
    box.appendChild(el('ul', { class: 'fg-parts' }, sides.map(function (s) {
      var bytes = s[0] === 'A' ? a : b;
      return el('li', null, [
        el('b', { text: s[0] }), ' ', el('span', { class: 'fg-num', text: bytesBoth(bytes) }), ' ',
        el('span', { class: 'fg-note', text: (s[1].label != null ? String(s[1].label) : '') +
          (s[1].event_id != null ? ' · event ' + s[1].event_id : '') + (s[1].device_id != null ? ' · device ' + s[1].device_id : '') })
      ]);
    }).concat([el('li', null, [el('b', { text: 'Change' }), ' ', el('span', { class: 'fg-num', text: changeText(a, b) })])])));
    box.appendChild(el('p', { class: 'fg-note fg-diff-how', text: 'Width: each call stack counts once, with the larger of its bytes in A and in B, ' +
      'so what is gone from B keeps its place. Colour: red where B holds more, blue where it holds less, grey where nothing changed; ' +
      (this.maxDelta > 0 ? 'the stronger the colour, the larger the change (the largest below the root: ' + human(this.maxDelta) + ').'
        : 'here no frame changed.') }));
    this.buildToggles(box, m.root.children.some(function (c) { return c.synthetic; }));
    return box;
  };

  // The view switches: each is only offered when it would change something.
  Flamegraph.prototype.buildToggles = function (box, synthetic) {
    var items = [];
    if (synthetic) {
      this.toggle = el('input', { type: 'checkbox', class: 'fg-toggle-input', 'data-testid': 'fg-hide-synthetic' });
      this.toggle.checked = this.hideSynthetic;
      items.push(el('label', { class: 'fg-toggle' }, [
        this.toggle, ' Leave memory without a call stack out of the flamegraph widths'
      ]));
    }
    if (this.pythonFoldable) {
      this.pyToggle = el('input', { type: 'checkbox', class: 'fg-toggle-input', 'data-testid': 'fg-python' });
      this.pyToggle.checked = this.pythonFrames;
      // First: the view a person reading a stacks='all' capture starts from.
      items.unshift(el('label', {
        class: 'fg-toggle', title: 'In every stack that has Python frames, show only those: the native frames ' +
          'between them (CPython, the dispatcher), above the first (the process entry) and below the innermost ' +
          '(the operator\u2019s C++ down to the allocator) fold away, their bytes counted in the nearest Python ' +
          'frame that called them. Stacks without a Python frame (e.g. autograd\u2019s backward threads) keep ' +
          'their frames. Search still finds folded frames.'
      }, [
        this.pyToggle, ' Python frames only ',
        el('span', { class: 'fg-num', text: '(' + exact(this.pythonFoldable) + ' native ' +
          (this.pythonFoldable === 1 ? 'frame folds' : 'frames fold') + ' into the Python frames around them)' })
      ]));
    }
    if (this.foldable) {
      var present = new Set();
      this.full.nodes.forEach(function (n) { if (n.noiseGone) present.add(n.noise); });
      var groups = NOISE.filter(function (g) { return present.has(g); }).map(function (g) { return g.text; });
      this.foldToggle = el('input', { type: 'checkbox', class: 'fg-toggle-input', 'data-testid': 'fg-fold' });
      this.foldToggle.checked = this.foldNoise;
      items.push(el('label', {
        class: 'fg-toggle', title: 'Hide CPython interpreter frames, PyTorch dispatcher frames and the unwinder ' +
          'that captured the stacks, as memory_viz does; their callees move up to the nearest frame kept, and ' +
          'frames that then repeat under one caller are merged. Search still finds folded frames.'
      }, [
        this.foldToggle, ' Fold interpreter & dispatcher frames ',
        el('span', { class: 'fg-num', text: '(' + exact(this.foldable) + (this.foldable === 1 ? ' frame: ' : ' frames: ') + groups.join(', ') + ')' })
      ]));
    }
    if (items.length) box.appendChild(el('div', { class: 'fg-toggles' }, items));
  };

  // Self bytes by kind of code in the tree on screen (folding moves a folded frame's self
  // bytes to the frame that called it).
  Flamegraph.prototype.drawLegend = function () {
    if (this.diff) { this.drawDiffLegend(); return; }
    var selfBy = {};
    this.model.nodes.forEach(function (n) {
      if (n.kind === 'root' || n.synthetic) return;
      selfBy[n.kind] = (selfBy[n.kind] || 0) + num(n.row.self_bytes);
    });
    var total = this.model.root ? this.model.root.size : 0;
    var items = CODE_KINDS.map(function (k) {
      return el('li', { title: k.text }, [
        el('span', { class: 'fg-swatch k-' + k.kind, 'aria-hidden': 'true' }),
        k.name, ' ', el('span', { class: 'fg-num', text: 'self ' + human(selfBy[k.kind] || 0) + ' · ' + pct(share(selfBy[k.kind] || 0, total)) })
      ]);
    });
    items.push(el('li', null, [
      el('span', { class: 'fg-swatch k-static', 'aria-hidden': 'true' }), 'No call stack (hatched)'
    ]));
    this.legend.replaceChildren.apply(this.legend, items);
  };

  // The colour scale of diff mode, from the largest shrinkage to the largest growth.
  Flamegraph.prototype.drawDiffLegend = function () {
    var max = this.maxDelta;
    var hatch = el('li', null, [el('span', { class: 'fg-swatch k-static', 'aria-hidden': 'true' }), 'No call stack (hatched)']);
    if (!(max > 0)) {
      var same = el('span', { class: 'fg-swatch d-swatch d-same', 'aria-hidden': 'true' });
      this.legend.replaceChildren(el('li', null, [same, 'unchanged: no frame holds other bytes in B than in A']), hatch);
      return;
    }
    var steps = [[-1, '−' + human(max) + ' (less in B)'], [-0.3, ''], [0, 'unchanged'], [0.3, ''], [1, '+' + human(max) + ' (more in B)']];
    var items = steps.map(function (s) {
      var shade = diffShade({ bytes_a: 0, bytes_b: s[0] * max }, max);
      var sw = el('span', { class: 'fg-swatch d-swatch ' + shade.cls, 'aria-hidden': 'true' });
      sw.style.setProperty('--dt', String(Math.abs(s[0])));
      return el('li', null, [sw, s[1]]);
    });
    items.push(hatch);
    this.legend.replaceChildren.apply(this.legend, items);
  };

  // ---------------------------------------------------------------- sizes and layout

  // Bytes a node takes in the layout: synthetic leaves drop out when hidden, and the root
  // shrinks by what they held so the remaining frames fill the width.
  Flamegraph.prototype.weight = function (node) {
    if (node.synthetic && this.hideSynthetic) return 0;
    if (node.kind === 'root' && this.hideSynthetic) {
      var w = node.size;
      node.children.forEach(function (c) { if (c.synthetic) w -= c.size; });
      return Math.max(0, w);
    }
    return node.size;
  };

  Flamegraph.prototype.kids = function (node) {
    if (!this.hideSynthetic || node.kind !== 'root') return node.children;
    return node.children.filter(function (c) { return !c.synthetic; });
  };

  Flamegraph.prototype.inView = function (node) {
    for (var n = node; n; n = n.parent) if (n === this.zoom) return true;
    return false;
  };

  Flamegraph.prototype.scheduleDraw = function () {
    var self = this;
    if (this.frameRaf) return;
    this.frameRaf = requestAnimationFrame(function () { self.frameRaf = 0; self.draw(); });
  };

  Flamegraph.prototype.draw = function () {
    var t0 = performance.now();
    if (this.frameRaf) { cancelAnimationFrame(this.frameRaf); this.frameRaf = 0; }
    var zoom = this.zoom, graph = this.graph;
    var hadFocus = graph.contains(document.activeElement);
    this.elements = new Map();
    if (!zoom) { graph.replaceChildren(); graph.style.height = '0px'; return; }
    if (!this.width) this.width = graph.clientWidth || 800;
    var W = this.width, rowH = this.opts.rowHeight, minW = this.opts.minFrameWidth;

    // Frames that must be drawn even when too narrow: the keyboard position and the search
    // hits. Their ancestors are walked through even when culled, to find where they are.
    var pinned = new Set();
    if (this.current && this.inView(this.current)) pinned.add(this.current);
    var self = this;
    this.matches.forEach(function (n) { if (self.inView(n)) pinned.add(n); });
    var onPath = new Set();
    pinned.forEach(function (n) {
      for (var a = n; a && a !== zoom && !onPath.has(a); a = a.parent) onPath.add(a);
    });
    onPath.add(zoom);

    var frag = document.createDocumentFragment();
    var maxRow = 0, drawn = 0;
    var zsibs = zoom.parent ? this.kids(zoom.parent) : [zoom];
    // Flat stack of (node, x, width, position among siblings, sibling count) tuples.
    var stack = [zoom, 0, W, zsibs.indexOf(zoom) + 1, zsibs.length];
    while (stack.length) {
      var setSize = stack.pop(), pos = stack.pop(), w = stack.pop(), x = stack.pop(), node = stack.pop();
      var wide = w >= minW;
      if (!wide && !onPath.has(node)) continue;
      var row = node.depth - zoom.depth;
      if (wide || pinned.has(node)) {
        frag.appendChild(this.frameElement(node, x, w, row * rowH, wide, pos, setSize));
        drawn++;
        if (row > maxRow) maxRow = row;
      }
      var kids = this.kids(node);
      if (!kids.length) continue;
      var total = this.weight(node);
      // A zero-byte frame still has a shape: its callees share it evenly, so zooming into
      // it shows them instead of nothing.
      var widths = kids.map(function (c) { return total > 0 ? (w * self.weight(c)) / total : w / kids.length; });
      var cx = x + widths.reduce(function (s, v) { return s + v; }, 0);
      for (var i = kids.length - 1; i >= 0; i--) {
        cx -= widths[i];
        stack.push(kids[i], cx, widths[i], i + 1, kids.length);
      }
    }
    graph.replaceChildren(frag);
    graph.style.height = (maxRow + 1) * rowH + 'px';
    graph.style.setProperty('--fg-row', rowH + 'px');
    graph.classList.toggle('has-search', this.matches.length > 0 || this.query !== '');
    if (hadFocus) this.focusCurrent();
    this.drawnCount = drawn;
    this.lastRenderMs = performance.now() - t0;
  };

  Flamegraph.prototype.frameElement = function (node, x, w, top, wide, pos, setSize) {
    var e = document.createElement('div');
    var cls = 'fg-frame k-' + node.kind;
    var shown = w;
    if (!wide) {
      cls += ' is-culled';
      shown = node === this.current ? 8 : 3;
      x = Math.max(0, Math.min(x, this.width - shown));
    }
    else if (w < 4) cls += ' is-thin';
    if (this.weight(node) === 0) cls += ' is-zero';
    var shade = this.diff ? diffShade(node.row, this.maxDelta) : null;
    if (shade) cls += ' ' + shade.cls;
    if (this.matchSet.has(node)) cls += ' is-match';
    if (node === this.current) cls += ' is-current';
    e.className = cls;
    e.setAttribute('role', 'treeitem');
    e.setAttribute('data-testid', 'fg-frame');
    e.setAttribute('data-node-id', node.id);
    e.setAttribute('aria-level', String(node.depth + 1));
    e.setAttribute('aria-setsize', String(setSize));
    e.setAttribute('aria-posinset', String(pos));
    if (node.children.length) e.setAttribute('aria-expanded', 'true');
    e.setAttribute('aria-label', this.ariaLabel(node));
    e.tabIndex = node === this.current ? 0 : -1;
    e.style.cssText = 'left:' + x.toFixed(2) + 'px;top:' + top + 'px;width:' + shown.toFixed(2) + 'px;--v:' + node.v +
      (shade ? ';--dt:' + shade.t.toFixed(3) : '');
    if (w >= 24) {
      // ~6.6px per character at 12px: prefer the bare function name to a cut-off file name.
      var fit = (w - 8) / 6.6;
      var name = node.row.name;
      e.textContent = node.short.length > fit && name != null && String(name).length <= fit ? String(name) : node.short;
    }
    this.elements.set(node, e);
    return e;
  };

  Flamegraph.prototype.ariaLabel = function (node) {
    var r = node.row;
    if (this.diff) {
      return node.short + (node.place ? ', ' + node.place : '') + ': A ' + human(num(r.bytes_a)) + ', B ' + human(num(r.bytes_b)) +
        ', change ' + changeText(num(r.bytes_a), num(r.bytes_b)) +
        (node.merged > 1 ? ', merged from ' + node.merged + ' frames' : '');
    }
    return node.short + (node.place ? ', ' + node.place : '') + ': ' + human(node.size) + ' inclusive, ' +
      human(num(r.self_bytes)) + ' self, ' + exact(num(r.block_count)) + ' live blocks, ' +
      pct(this.percentOfTotal(node)) + ' of total' +
      (node.merged > 1 ? ', merged from ' + node.merged + ' frames' : '') +
      (node.hidden ? ', ' + node.hidden + ' folded frames above' : '');
  };

  Flamegraph.prototype.percentOfTotal = function (node) {
    var p = node.row.percent_of_total;
    if (typeof p === 'number' && isFinite(p)) return p;
    return share(node.size, this.model.root ? this.model.root.size : 0);
  };

  // ---------------------------------------------------------------- state changes

  Flamegraph.prototype.refresh = function (keepFocus) {
    this.drawCrumbs();
    this.showDetails();
    this.draw();
    if (keepFocus) this.focusCurrent();
  };

  Flamegraph.prototype.focusCurrent = function () {
    var e = this.current && this.elements.get(this.current);
    if (e) e.focus({ preventScroll: false });
  };

  Flamegraph.prototype.nodeOf = function (target) {
    var f = target && target.closest ? target.closest('.fg-frame') : null;
    return f ? this.model.byId.get(f.getAttribute('data-node-id')) || null : null;
  };

  Flamegraph.prototype.setCurrent = function (node, focus) {
    if (!node) return;
    var prev = this.current;
    if (prev !== node) {
      this.current = node;
      var pe = prev && this.elements.get(prev);
      if (pe) { pe.tabIndex = -1; pe.classList.remove('is-current'); }
      var ne = this.elements.get(node);
      // A culled frame has no element yet: redraw so the keyboard position is visible.
      if (!ne) { this.draw(); ne = this.elements.get(node); }
      if (ne) { ne.tabIndex = 0; ne.classList.add('is-current'); }
      if (!this.hover) this.showDetails();
    }
    if (focus) this.focusCurrent();
  };

  Flamegraph.prototype.select = function (node) {
    if (typeof this.opts.onSelect === 'function') {
      try { this.opts.onSelect(node.row); } catch (err) { setTimeout(function () { throw err; }); }
    }
  };

  // The node on screen for an id (or node) of either tree: a frame merged into another is
  // found as the merged node; a frame folded away turns folding off so it can be shown.
  Flamegraph.prototype.reach = function (nodeId) {
    var id = typeof nodeId === 'string' ? nodeId : nodeId && nodeId.id;
    if (typeof id !== 'string') return null;
    var node = this.model.byId.get(id);
    if (node && (typeof nodeId === 'string' || node === nodeId)) return node;
    var real = this.full.byId.get(id);
    if (!real || this.model === this.full) return null;
    if (!real.vGone) return real.vRep;
    this.setView(false, false, true);
    return real;
  };

  Flamegraph.prototype.zoomTo = function (nodeId) {
    var node = this.reach(nodeId);
    if (!node) return false;
    if (node.synthetic && this.hideSynthetic) this.setHideSynthetic(false, true);
    var keep = this.graph.contains(document.activeElement);
    this.zoom = node;
    if (!this.inView(this.current)) this.current = node;
    this.refresh(keep);
    return true;
  };

  Flamegraph.prototype.zoomOut = function () {
    if (this.zoom && this.zoom.parent) return this.zoomTo(this.zoom.parent);
    return false;
  };

  Flamegraph.prototype.reset = function () {
    this.query = '';
    this.searchInput.value = '';
    this.applySearch();
    this.current = this.model.root;
    this.zoomTo(this.model.root);
  };

  Flamegraph.prototype.setHideSynthetic = function (hide, noDraw) {
    this.hideSynthetic = !!hide;
    if (this.toggle) this.toggle.checked = this.hideSynthetic;
    if (this.hideSynthetic) {
      if (this.zoom && this.zoom.synthetic) this.zoom = this.model.root;
      if (this.current && this.current.synthetic) this.current = this.zoom;
    }
    if (!noDraw) this.refresh(false);
  };

  // The tree of the view the switches ask for (the rows' nodes' `vGone`, `vRep` and
  // `vAbove` then describe it).
  Flamegraph.prototype.viewModel = function () {
    var v = this.views;
    var view = this.pythonFrames ? (this.foldNoise ? v.both : v.python) : this.foldNoise ? v.noise : v.full;
    markView(this.full, view);
    return view.model;
  };

  Flamegraph.prototype.setFoldNoise = function (fold, noDraw) {
    this.setView(fold, this.pythonFrames, noDraw);
  };

  Flamegraph.prototype.setPythonFrames = function (on, noDraw) {
    this.setView(this.foldNoise, on, noDraw);
  };

  // Switches between the full tree and the folded ones. The zoom and the keyboard position
  // move to the node that stands for them in the other tree: the same frame (the largest of
  // a merged node's frames when unfolding), or for a folded-away frame its nearest kept
  // caller.
  Flamegraph.prototype.setView = function (fold, python, noDraw) {
    fold = !!fold && this.foldable > 0;
    python = !!python && this.pythonFoldable > 0;
    if (this.foldToggle) this.foldToggle.checked = fold;
    if (this.pyToggle) this.pyToggle.checked = python;
    if (fold === this.foldNoise && python === this.pythonFrames) return;
    var toFull = function (n) { return n && fullSources(n)[0]; };
    var keep = this.graph.contains(document.activeElement);
    var zoom = toFull(this.zoom), current = toFull(this.current);
    this.foldNoise = fold;
    this.pythonFrames = python;
    this.model = this.viewModel();
    var map = function (n) { return n && n.vRep; };
    this.zoom = map(zoom);
    this.current = map(current);
    if (!this.zoom) this.zoom = this.model.root;
    if (!this.current || !this.inView(this.current)) this.current = this.zoom;
    if (this.hover) this.setHover(null);
    this.applySearch();
    this.drawLegend();
    if (!noDraw) this.refresh(keep);
  };

  // Zoom so that `node` is comfortably wide (>= 40px) while keeping as much context above
  // it as possible, then put the keyboard position on it.
  Flamegraph.prototype.reveal = function (nodeId) {
    var node = this.reach(nodeId);
    if (!node) return false;
    if (node.synthetic && this.hideSynthetic) this.setHideSynthetic(false, true);
    var W = this.width || 800, target = node;
    while (target.parent) {
      var pw = this.weight(target.parent);
      if (!(pw > 0 && (this.weight(node) / pw) * W >= 40)) break;
      target = target.parent;
    }
    this.zoom = target;
    this.current = node;
    this.drawCrumbs();
    this.showDetails();
    this.draw();
    this.focusCurrent();
    this.select(node);
    return true;
  };

  // ---------------------------------------------------------------- search

  Flamegraph.prototype.search = function (text) {
    var q = String(text == null ? '' : text);
    if (this.searchInput.value !== q) this.searchInput.value = q;
    this.query = q.trim().toLowerCase();
    this.applySearch();
    this.draw();
    return this.matches.map(function (n) { return n.id; });
  };

  // Search always runs over the full tree, so folded frames are found too. Hits are then
  // shown as the nodes on screen that stand for them (a merged node once), and hits folded
  // away as themselves, marked "(folded)": picking one unfolds the tree (see reach).
  Flamegraph.prototype.applySearch = function () {
    var q = this.query, fold = this.model !== this.full;
    var hits = q ? this.full.nodes.filter(function (n) { return n.kind !== 'root' && n.hay.indexOf(q) >= 0; }) : [];
    var hitSet = new Set(hits);
    // Nested hits would count the same bytes twice; only the outermost of each chain counts.
    // Counted in the full tree, so the figure does not depend on folding.
    var bytes = 0;
    hits.forEach(function (n) {
      for (var a = n.parent; a; a = a.parent) if (hitSet.has(a)) return;
      bytes += n.size;
    });
    var shown = fold ? Array.from(new Set(hits.map(function (n) { return n.vGone ? n : n.vRep; }))) : hits;
    shown.sort(function (a, b) { return b.size - a.size || a.depth - b.depth || a.index - b.index; });
    var model = this.model;
    this.matches = shown;
    this.matchSet = new Set(shown.filter(function (n) { return model.byId.get(n.id) === n; }));
    var hiddenHits = shown.length - this.matchSet.size;
    var total = this.full.root ? this.full.root.size : 0;
    this.countEl.textContent = !q ? '' : shown.length
      ? shown.length + (shown.length === 1 ? ' frame' : ' frames') + (hiddenHits ? ' (' + hiddenHits + ' folded)' : '') +
        ' · ' + human(bytes) + ' · ' + pct(share(bytes, total)) + ' of total'
      : 'No frame matches';
    this.drawResults();
  };

  Flamegraph.prototype.drawResults = function () {
    var q = this.query, max = this.opts.maxResults, frag = document.createDocumentFragment();
    if (!q) {
      this.resultsHead.textContent = 'Search results appear here: every frame in the tree, even those too small to draw.';
    } else {
      this.resultsHead.textContent = this.matches.length
        ? 'Matching frames, largest first' + (this.matches.length > max ? ' (first ' + max + ' of ' + this.matches.length + ')' : '') + ':'
        : 'No frame matches “' + this.query + '”.';
    }
    var self = this;
    this.matches.slice(0, max).forEach(function (n) {
      var folded = !self.matchSet.has(n), merged = n.merged > 1;
      var b = el('button', {
        type: 'button', class: 'fg-result' + (folded ? ' is-folded' : ''), 'data-node-id': n.id, 'data-folded': folded ? 'true' : null,
        title: (n.place || n.short) + (folded ? '\nFolded away: picking it turns folding off.' : '')
      }, [
        self.swatch(n),
        el('span', { class: 'fg-result-name', text: n.short }),
        folded ? el('span', { class: 'fg-tag', text: '(folded)' }) : merged ? el('span', { class: 'fg-tag', text: '×' + n.merged }) : null,
        el('span', { class: 'fg-num', text: human(n.size) + ' · depth ' + n.depth })
      ]);
      frag.appendChild(el('li', null, [b]));
    });
    this.results.replaceChildren(frag);
  };

  // A node's colour as a swatch: its kind of code, or in diff mode its change.
  Flamegraph.prototype.swatch = function (node) {
    var shade = this.diff ? diffShade(node.row, this.maxDelta) : null;
    var sw = el('span', { class: 'fg-swatch k-' + node.kind + (shade ? ' d-swatch ' + shade.cls : ''), 'aria-hidden': 'true' });
    if (shade) sw.style.setProperty('--dt', shade.t.toFixed(3));
    return sw;
  };

  // ---------------------------------------------------------------- breadcrumb and details

  Flamegraph.prototype.drawCrumbs = function () {
    var path = [];
    for (var n = this.zoom; n; n = n.parent) path.unshift(n);
    // Deep zooms would wrap into a wall of buttons: keep both ends, summarise the middle.
    var shown = path.length > 9 ? path.slice(0, 2).concat([null], path.slice(-6)) : path;
    var hidden = path.length > 9 ? path.slice(2, -6) : [];
    var ol = el('ol');
    var self = this;
    shown.forEach(function (node) {
      if (!node) {
        ol.appendChild(el('li', { class: 'fg-crumb-gap', title: hidden.map(function (h) { return h.short; }).join('\n') },
          ['… ' + hidden.length + ' more …']));
        return;
      }
      var isLast = node === self.zoom;
      var name = node.kind === 'root' ? 'All live memory' : node.synthetic ? node.short : (node.row.name != null ? String(node.row.name) : node.short);
      ol.appendChild(el('li', null, [el('button', {
        type: 'button', class: 'fg-crumb k-' + node.kind, 'data-node-id': node.id,
        'aria-current': isLast ? 'location' : null, title: node.short + ' · ' + human(node.size)
      }, [name])]));
    });
    this.crumbs.setAttribute('data-zoom-id', this.zoom ? this.zoom.id : '');
    this.crumbs.setAttribute('data-zoom-depth', this.zoom ? String(this.zoom.depth) : '');
    this.crumbs.replaceChildren(el('span', { class: 'fg-crumbs-label', text: 'Zoom:' }), ol);
  };

  Flamegraph.prototype.showDetails = function () {
    var node = this.hover || this.current;
    var box = this.details;
    if (!node) { box.replaceChildren(el('p', { class: 'fg-empty', text: 'Nothing to show.' })); return; }
    var r = node.row, zw = this.zoom ? this.weight(this.zoom) : 0;
    var rows = [];
    function add(k, v, cls) { rows.push(el('dt', { text: k }), el('dd', { class: cls || null }, [v])); }
    // Numbers first: a very long function or path must not push them out of the panel.
    if (this.diff) {
      var a = num(r.bytes_a), b = num(r.bytes_b);
      add('A', bytesBoth(a) + ' · ' + exact(num(r.blocks_a)) + ' blocks');
      add('B', bytesBoth(b) + ' · ' + exact(num(r.blocks_b)) + ' blocks');
      add('Change', changeText(a, b), 'fg-change');
      add('Self (A → B)', human(num(r.self_bytes_a)) + ' → ' + human(num(r.self_bytes_b)));
      add('Width', human(node.size) + ' (the larger side of each stack) · ' + pct(this.percentOfTotal(node)) + ' of the width');
    } else {
      add('Inclusive', bytesBoth(node.size) + ' · ' + pct(this.percentOfTotal(node)) + ' of total' +
        (this.zoom && this.zoom !== this.model.root ? ' · ' + pct(share(this.weight(node), zw)) + ' of zoomed frame' : ''));
      add('Self', bytesBoth(num(r.self_bytes)));
      add('Requested', bytesBoth(num(r.requested_bytes)) + ' inclusive');
      add('Live blocks', exact(num(r.block_count)) + ' inclusive · ' + exact(num(r.self_block_count)) + ' self');
    }
    if (node.merged > 1) {
      add('Merged', 'merged from ' + node.merged + ' frames (the same frame under different folded callers)');
    }
    if (node.place) add('Location', node.place, 'fg-path');
    if (r.name != null) add('Function', String(r.name), 'fg-path');
    // What the folds do to this frame (the row's node it is, or the first it stands for).
    var src = fullSources(node)[0];
    if (node.hidden) {
      add('Folded above', foldSummary(foldedAbove(src), node.merged > 1 ? 'up to ' + node.hidden : String(node.hidden)));
    }
    var note = node.synthetic ? node.synthetic.text
      : node.kind === 'root' ? (this.diff ? 'Every block live at either side\'s peak' : 'Every block live after this event') +
        (this.hideSynthetic ? '; memory without a call stack is left out of the widths.' : '.')
        : null;
    // `src.rep`: its node with noise folded (noiseGone: the node that took its bytes).
    var noise = !src.noise ? null
      : src.noiseGone ? 'A ' + src.noise.text + ' frame: hidden when “Fold interpreter & dispatcher frames” is on.'
        : 'A ' + src.noise.text + ' frame, kept even when folding: it holds memory itself, ' +
          ((src.rep || node).children.length ? 'which no kept caller could take.' : 'as the innermost frame of its stack.');
    var native = node.kind !== 'root' && !node.synthetic && !node.python;
    var python = !native || !this.pythonFoldable ? null
      : src.pyGone ? 'A native frame: hidden when “Python frames only” is on, its bytes counted in the nearest Python frame that called it.'
        : 'A native frame, kept when “Python frames only” is on: its stack has no Python frame, or it holds memory itself that no Python frame could take.';
    box.replaceChildren.apply(box, [
      el('p', { class: 'fg-details-title' }, [
        this.swatch(node),
        el('b', { class: 'fg-details-name', text: node.short, title: node.short }), ' ',
        el('span', { class: 'fg-kind', text: KIND_NAMES[node.kind] || '' })
      ]),
      el('dl', null, rows),
      note ? el('p', { class: 'fg-note', text: note })
        : el('p', { class: 'fg-id', text: 'depth ' + node.depth + ' · ' + node.id + (node.merged > 1 ? ' + ' + (node.merged - 1) + ' more' : '') }),
      noise ? el('p', { class: 'fg-note', text: noise }) : null,
      python ? el('p', { class: 'fg-note', text: python }) : null
    ].filter(Boolean));
  };

  // "12 frames: _PyEval_EvalFrameDefault ×5, PyMethod_New ×4, …" (most frequent first).
  function foldSummary(chain, count) {
    var by = new Map();
    chain.forEach(function (n) {
      var name = n.row.name != null ? String(n.row.name) : n.short;
      name = name.length > 60 ? name.slice(0, 57) + '…' : name;
      by.set(name, (by.get(name) || 0) + 1);
    });
    var names = Array.from(by).sort(function (a, b) { return b[1] - a[1]; });
    var text = names.slice(0, 4).map(function (e) { return e[0] + (e[1] > 1 ? ' ×' + e[1] : ''); }).join(', ');
    return count + (count === '1' ? ' frame: ' : ' frames: ') + text + (names.length > 4 ? ', …' : '');
  }

  // ---------------------------------------------------------------- input

  Flamegraph.prototype.onFrameClick = function (e) {
    var node = this.nodeOf(e.target);
    if (!node) return;
    // The top frame is the zoomed one; clicking it steps back out, as in classic flamegraphs.
    if (node === this.zoom && node.parent) {
      this.current = node;
      this.zoomTo(node.parent);
    } else {
      this.current = node;
      this.zoomTo(node);
    }
    this.focusCurrent();
    this.select(node);
  };

  Flamegraph.prototype.onFrameKey = function (e) {
    var node = this.nodeOf(e.target);
    if (!node || e.altKey || e.ctrlKey || e.metaKey) return;
    var next = null, sibs;
    switch (e.key) {
      case 'ArrowUp':
        // Above the zoomed frame there is nothing drawn: step out to show its caller.
        if (node === this.zoom && node.parent) this.zoomTo(node.parent);
        next = node.parent;
        break;
      case 'ArrowDown':
        next = this.kids(node)[0] || null;
        break;
      case 'ArrowLeft':
      case 'ArrowRight':
        if (node === this.zoom || !node.parent) break;
        sibs = this.kids(node.parent);
        next = sibs[sibs.indexOf(node) + (e.key === 'ArrowLeft' ? -1 : 1)] || null;
        break;
      case 'Home':
        next = this.zoom;
        break;
      case 'Enter':
      case ' ':
        e.preventDefault();
        this.current = node;
        this.zoomTo(node);
        this.focusCurrent();
        this.select(node);
        return;
      case 'Escape':
        e.preventDefault();
        this.zoomOut();
        this.focusCurrent();
        return;
      default:
        return;
    }
    e.preventDefault();
    if (next) this.setCurrent(next, true);
  };

  Flamegraph.prototype.onHover = function (e) {
    var node = this.nodeOf(e.target);
    if (node && node !== this.hover) this.setHover(node);
  };

  Flamegraph.prototype.setHover = function (node) {
    this.hover = node;
    this.showDetails();
    var tip = this.tip;
    if (!node) { tip.classList.remove('is-on'); return; }
    var r = node.row;
    if (this.diff) {
      tip.replaceChildren(
        el('b', { text: node.short }),
        node.place ? el('div', { class: 'fg-path', text: node.place }) : null,
        el('div', { text: 'A ' + human(num(r.bytes_a)) + ' · B ' + human(num(r.bytes_b)) + ' · change ' + changeText(num(r.bytes_a), num(r.bytes_b)) }),
        el('div', { text: 'blocks ' + exact(num(r.blocks_a)) + ' → ' + exact(num(r.blocks_b)) +
          (node.merged > 1 ? ' · merged from ' + node.merged + ' frames' : '') +
          (node.hidden ? ' · ' + node.hidden + ' folded frames above' : '') })
      );
      tip.classList.add('is-on');
      return;
    }
    tip.replaceChildren(
      el('b', { text: node.short }),
      node.place ? el('div', { class: 'fg-path', text: node.place }) : null,
      el('div', { text: human(node.size) + ' inclusive · ' + human(num(r.self_bytes)) + ' self · ' + pct(this.percentOfTotal(node)) + ' of total' }),
      el('div', { text: exact(num(r.block_count)) + ' live blocks' +
        (node.merged > 1 ? ' · merged from ' + node.merged + ' frames' : '') +
        (node.hidden ? ' · ' + node.hidden + ' folded frames above' : '') })
    );
    tip.classList.add('is-on');
  };

  // Anchored by the side away from the nearest window edge, so no size has to be measured.
  Flamegraph.prototype.moveTip = function (e) {
    var s = this.tip.style, vw = window.innerWidth, vh = window.innerHeight;
    if (e.clientX > vw * 0.6) { s.left = 'auto'; s.right = (vw - e.clientX + 14) + 'px'; } else { s.right = 'auto'; s.left = (e.clientX + 14) + 'px'; }
    if (e.clientY > vh * 0.7) { s.top = 'auto'; s.bottom = (vh - e.clientY + 14) + 'px'; } else { s.bottom = 'auto'; s.top = (e.clientY + 16) + 'px'; }
  };

  Flamegraph.prototype.destroy = function () {
    clearTimeout(this.searchTimer);
    if (this.frameRaf) cancelAnimationFrame(this.frameRaf);
    if (this.resizer) this.resizer.disconnect();
    this.listeners.forEach(function (l) { l[0].removeEventListener(l[1], l[2]); });
    this.listeners = [];
    if (this.root.parentNode) this.root.parentNode.removeChild(this.root);
    this.elements = new Map();
  };

  // ---------------------------------------------------------------- public API

  // `data` as `render` takes it, made into the trees it draws: `render` of this draws the
  // same, with less left to do.
  function prepare(data) {
    return new Models(data && typeof data === 'object' ? data : {});
  }

  function render(container, data, options) {
    if (!container || container.nodeType !== 1) throw new TypeError('PtSnapFlamegraph.render: container must be an element');
    var fg = new Flamegraph(container, data && typeof data === 'object' ? data : {}, options || {});
    return {
      element: fg.root,
      destroy: function () { fg.destroy(); },
      zoomTo: function (nodeId) { return fg.zoomTo(nodeId); },
      zoomOut: function () { return fg.zoomOut(); },
      reset: function () { fg.reset(); },
      reveal: function (nodeId) { return fg.reveal(nodeId); },
      search: function (text) { return fg.search(text); },
      setHideSynthetic: function (hide) { fg.setHideSynthetic(hide); },
      setFoldNoise: function (fold) { fg.setFoldNoise(fold); },
      setPythonFrames: function (on) { fg.setPythonFrames(on); },
      getState: function () {
        return {
          zoom: fg.zoom ? fg.zoom.id : null, current: fg.current ? fg.current.id : null,
          query: fg.query, matches: fg.matches.length, hideSynthetic: fg.hideSynthetic,
          foldNoise: fg.foldNoise, foldable: fg.foldable, pythonFrames: fg.pythonFrames, pythonFoldable: fg.pythonFoldable, fullNodes: fg.full.nodes.length, diff: fg.diff, maxDelta: fg.maxDelta,
          nodes: fg.model.nodes.length, drawn: fg.drawnCount || 0, lastRenderMs: fg.lastRenderMs
        };
      },
      // The tree on screen, node by node (for tests and debugging): counters as drawn, and
      // for a folded tree the ids of the frames each node stands for.
      getTree: function () {
        return fg.model.nodes.map(function (n) {
          var r = n.row;
          return {
            id: n.id, parent: n.parent ? n.parent.id : null, depth: n.depth, label: r.label, kind: n.kind,
            size: n.size, self: num(r.self_bytes), blocks: num(r.block_count), selfBlocks: num(r.self_block_count),
            requested: num(r.requested_bytes), selfRequested: num(r.self_requested_bytes),
            children: n.children.map(function (c) { return c.id; }),
            sources: fullSources(n).map(function (s) { return s.id; }),
            hidden: n.hidden || 0, noise: n.noise ? n.noise.group : null, python: n.python,
            // Diff mode: both sides' counters (0 otherwise).
            bytesA: num(r.bytes_a), bytesB: num(r.bytes_b), selfA: num(r.self_bytes_a), selfB: num(r.self_bytes_b),
            blocksA: num(r.blocks_a), blocksB: num(r.blocks_b), selfBlocksA: num(r.self_blocks_a), selfBlocksB: num(r.self_blocks_b)
          };
        });
      }
    };
  }

  global.PtSnapFlamegraph = {
    version: 1, render: render, prepare: prepare,
    formatBytes: human, formatSignedBytes: signedBytes, formatCount: exact, formatChange: changeText,
    noiseOf: function (row) { var n = noiseOf(row); return n ? n.group : null; }
  };
})(typeof globalThis !== 'undefined' ? globalThis : this);
