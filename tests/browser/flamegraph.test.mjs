// Browser test of the memory flamegraph pages: Playwright (playwright-core only, no browser
// download) drives Debian's Chromium over each page from file://.
//
//   node tests/browser/flamegraph.test.mjs <page.html> [<page2.html> …]
//
// Per page: no console error/warning and no page error; no request but the page itself;
// the "Fold interpreter & dispatcher frames" checkbox is there and on exactly when some
// frame folds. When something folds: the folded tree keeps inclusive = self + Σ children
// (bytes, blocks, requested) and loses no byte, toggling changes the tree and back, the
// zoom stays on the same or nearest frame across toggles, and searching a folded frame
// lists it as "(folded)" and picking it unfolds and shows it. fold_merge.json's folded
// sizes are checked exactly. When the tree has more than the root: a search for the
// deepest frame finds and highlights it, clicking a frame zooms in and the breadcrumb /
// Escape zoom out, the keyboard walks and zooms (both folded and unfolded), the "no call
// stack" toggle hides synthetic leaves. A screenshot (as opened: folded when anything
// folds) goes to target/browser/<page-basename>.png; PT_SNAP_SHOTS=all adds search, dark
// and unfolded ones. Exits 1 on any failure.
import fs from 'node:fs';
import path from 'node:path';
import {
  expect, poll, frameSel, getState, getTree, shotDir, pagesFromArgs, openPage, runPages, tally,
} from './harness.mjs';

const pages = pagesFromArgs('flamegraph.test.mjs');

const crumbCount = (page) => page.locator('[data-testid="fg-breadcrumb"] button[data-node-id]').count();
const zoomId = (page) => page.getAttribute('[data-testid="fg-breadcrumb"]', 'data-zoom-id');
const activeId = (page) => page.evaluate(() => document.activeElement && document.activeElement.getAttribute('data-node-id'));
const zoomTo = (page, id) => page.evaluate((id) => window.ptSnapFlamegraphView.zoomTo(id), id);
const SYNTHETIC = ['static', 'preexisting_live_at_event', 'empty_callstack', 'missing'];
// The origins of Python frames, as pt-snap-report's `Origin::is_python` tells them; the
// page's rows carry each frame's origin.
const PYTHON_ORIGINS = ['user', 'torch', 'package', 'stdlib'];

// A view option on or off through its checkbox, as a user would; then wait until the view's
// state (`stateKey`) says so. Without the checkbox, only "off" is possible.
async function setOption(page, testid, stateKey, on, what) {
  const ctl = page.locator(`[data-testid="${testid}"]`);
  if (!(await ctl.count())) {
    expect(!on, `no checkbox to turn ${what} on`);
    return;
  }
  if (on) await ctl.check();
  else await ctl.uncheck();
  await poll(async () => (await getState(page))[stateKey] === on, `${what} to turn ${on ? 'on' : 'off'}`);
}

// The "Python frames only" view on or off.
const setPython = (page, on) => setOption(page, 'fg-python', 'pythonFrames', on, 'the Python frames view');

// Folding on or off. The checks that fold test the noise fold alone, so the Python frames
// view (on by default where native frames sit next to Python ones) goes off first.
async function setFold(page, on) {
  await setPython(page, false);
  await setOption(page, 'fg-fold', 'foldNoise', on, 'folding');
}

// The rows as getTree() nodes, to check them with the same function.
function rawTree(rows) {
  const kids = new Map();
  for (const r of rows) if (r.parent_id != null) kids.set(r.parent_id, [...(kids.get(r.parent_id) || []), r.node_id]);
  return rows.map((r) => ({
    id: r.node_id, size: r.size_bytes, self: r.self_bytes, blocks: r.block_count, selfBlocks: r.self_block_count,
    requested: r.requested_bytes, selfRequested: r.self_requested_bytes, children: kids.get(r.node_id) || [],
  }));
}

// "inclusive = self + Σ children" for bytes, blocks and requested bytes: the messages of
// the nodes where it fails.
function invariantErrors(tree) {
  const byId = new Map(tree.map((t) => [t.id, t]));
  const errs = [];
  for (const t of tree) {
    for (const [inc, self] of [['size', 'self'], ['blocks', 'selfBlocks'], ['requested', 'selfRequested']]) {
      const sum = t[self] + t.children.reduce((a, c) => a + byId.get(c)[inc], 0);
      if (sum !== t[inc]) errs.push(`${t.id}: ${inc} ${t[inc]} != ${self} + Σ children = ${sum}`);
    }
  }
  return errs;
}

// tests/browser/fixtures/fold_merge.json folded, worked out by hand: the two `forward`
// frames reached through different interpreter frames merge (and so do their allocator
// callees); the unwind() leaves record stacks rather than allocate, so their bytes go to
// the frame that called them (forward) even though they are innermost; PyObject_Call's 512 self bytes go to main;
// the 0-byte _PyEval_EvalFrameDefault leaf vanishes; PyMethod_New stays as the innermost
// frame holding memory; _start stays because its self bytes would otherwise go to the root;
// a .py frame and a C-extension frame named like interpreter functions are not noise.
const FOLD_MERGE_EXPECTED = [
  { id: 'root', parent: null, size: 120400, self: 0, blocks: 17, selfBlocks: 0, requested: 120264, selfRequested: 0, sources: ['root'], hidden: 0 },
  { id: 'static', parent: 'root', size: 100000, self: 100000, blocks: 3, selfBlocks: 3, requested: 99976, selfRequested: 99976, sources: ['static'], hidden: 0 },
  { id: 'frame/1', parent: 'root', size: 16368, self: 512, blocks: 12, selfBlocks: 1, requested: 16272, selfRequested: 504, sources: ['frame/1'], hidden: 0 },
  { id: 'frame/20', parent: 'root', size: 4032, self: 32, blocks: 2, selfBlocks: 1, requested: 4016, selfRequested: 24, sources: ['frame/20'], hidden: 0 },
  { id: 'frame/1/3/5', parent: 'frame/1', size: 15744, self: 3456, blocks: 8, selfBlocks: 4, requested: 15680, selfRequested: 3424, sources: ['frame/1/3/5', 'frame/1/2/4'], hidden: 1 },
  { id: 'frame/1/13', parent: 'frame/1', size: 64, self: 64, blocks: 1, selfBlocks: 1, requested: 56, selfRequested: 56, sources: ['frame/1/13'], hidden: 0 },
  { id: 'frame/1/14', parent: 'frame/1', size: 32, self: 32, blocks: 1, selfBlocks: 1, requested: 24, selfRequested: 24, sources: ['frame/1/14'], hidden: 0 },
  { id: 'frame/1/15', parent: 'frame/1', size: 16, self: 16, blocks: 1, selfBlocks: 1, requested: 8, selfRequested: 8, sources: ['frame/1/15'], hidden: 0 },
  { id: 'frame/20/21', parent: 'frame/20', size: 4000, self: 4000, blocks: 1, selfBlocks: 1, requested: 3992, selfRequested: 3992, sources: ['frame/20/21'], hidden: 0 },
  { id: 'frame/1/3/5/7/9', parent: 'frame/1/3/5', size: 12288, self: 12288, blocks: 4, selfBlocks: 4, requested: 12256, selfRequested: 12256, sources: ['frame/1/3/5/7/9', 'frame/1/2/4/6/8/9'], hidden: 2 },
];

// fold_merge.json in the Python frames view (noise fold off), worked out by hand — the
// tree pt-snap-report's `python_view` makes (python_view.rs,
// the_python_view_folds_native_frames_around_python_ones) and the page's data carries, so
// this checks the page draws the view it is given: every native frame under `main`
// folds into it (PyObject_Call's 512, PyMethod_New's 64 and fastops.c's 16 self bytes), the
// two `forward` frames merge and take every native frame below them; `_start` stays (its
// 32 self bytes would belong to no frame), and so does app.py's `<module>` below it.
const FOLD_MERGE_PYTHON = [
  { id: 'root', parent: null, size: 120400, self: 0, blocks: 17, selfBlocks: 0, sources: ['root'] },
  { id: 'static', parent: 'root', size: 100000, self: 100000, blocks: 3, selfBlocks: 3, sources: ['static'] },
  { id: 'frame/1', parent: 'root', size: 16368, self: 592, blocks: 12, selfBlocks: 3, sources: ['frame/1'] },
  { id: 'frame/20', parent: 'root', size: 4032, self: 32, blocks: 2, selfBlocks: 1, sources: ['frame/20'] },
  { id: 'frame/1/3/5', parent: 'frame/1', size: 15744, self: 15744, blocks: 8, selfBlocks: 8, sources: ['frame/1/3/5', 'frame/1/2/4'] },
  { id: 'frame/1/14', parent: 'frame/1', size: 32, self: 32, blocks: 1, selfBlocks: 1, sources: ['frame/1/14'] },
  { id: 'frame/20/21', parent: 'frame/20', size: 4000, self: 4000, blocks: 1, selfBlocks: 1, sources: ['frame/20/21'] },
];

async function testPage(context, file) {
  const abs = path.resolve(file);
  const name = path.basename(abs).replace(/\.html?$/i, '');
  const { page, url, step, finish } = await openPage(context, abs, { width: 1280, height: 900 });

  let data = null;
  let timing = '';
  await step('loads and draws', async () => {
    await page.goto(url, { waitUntil: 'load' });
    data = await page.evaluate(() => JSON.parse(document.getElementById('tree-data').textContent));
    expect(data && Array.isArray(data.nodes), '#tree-data has no "nodes" array');
    const hasRoot = data.nodes.some((n) => n.parent_id === null);
    if (hasRoot) await page.waitForSelector(frameSel('root'), { timeout: 5000 });
    else await page.waitForSelector('.ptsnap-fg', { timeout: 5000 });
    for (const id of ['fg-search', 'fg-search-results', 'fg-breadcrumb', 'fg-reset', 'fg-details']) {
      expect(await page.locator(`[data-testid="${id}"]`).count() === 1, `expected one [data-testid=${id}]`);
    }
    const t = await page.evaluate(() => {
      const m = performance.getEntriesByName('ptsnap-fg-render')[0];
      return { render: m ? m.duration : null, frames: document.querySelectorAll('[data-testid="fg-frame"]').length };
    });
    timing = `${data.nodes.length} nodes, ${t.frames} frames drawn, first render ${t.render == null ? 'n/a' : t.render.toFixed(1) + ' ms'}`;
  });

  // The web app makes the trees in one task (`prepare`) and draws in the next: the same
  // view, node for node, as the page's own render of the data (before any interaction).
  await step('render of prepare(data) draws the same', async () => {
    const same = await page.evaluate(() => {
      const data = JSON.parse(document.getElementById('tree-data').textContent);
      const shown = window.ptSnapFlamegraphView;
      // Beside the page's own view (a report's, or a diff page's), as wide.
      const host = document.createElement('div');
      host.style.width = shown.element.parentNode.clientWidth + 'px';
      shown.element.parentNode.after(host);
      const view = PtSnapFlamegraph.render(host, PtSnapFlamegraph.prepare(data), {});
      const pick = (s) => JSON.stringify([s.nodes, s.fullNodes, s.foldNoise, s.foldable, s.pythonFrames, s.pythonFoldable, s.maxDelta, s.drawn]);
      const out = {
        tree: JSON.stringify(view.getTree()) === JSON.stringify(shown.getTree()),
        state: pick(view.getState()) === pick(shown.getState()),
        got: pick(view.getState()), want: pick(shown.getState()),
      };
      view.destroy();
      host.remove();
      return out;
    });
    expect(same.tree, 'render(prepare(data)) drew another tree than render(data)');
    expect(same.state, `render(prepare(data)) state ${same.got}, render(data) ${same.want}`);
  });

  // Taken before any interaction, so it shows what a user sees on opening the report.
  await step('screenshot', async () => {
    fs.mkdirSync(shotDir, { recursive: true });
    await page.screenshot({ path: path.join(shotDir, `${name}.png`), fullPage: true });
  });

  const nodes = data ? data.nodes : [];
  const byId = new Map(nodes.map((n) => [n.node_id, n]));
  const root = nodes.find((n) => n.parent_id === null);
  const interactive = root && nodes.length > 1;
  const state0 = root ? await getState(page).catch(() => null) : null;
  const foldable = !!(state0 && state0.foldable > 0);

  if (root) {
    await step('fold control: shown and on exactly when something folds', async () => {
      expect(state0, 'window.ptSnapFlamegraphView.getState() is missing');
      const ctl = page.locator('[data-testid="fg-fold"]');
      expect(await ctl.count() === (foldable ? 1 : 0), `fold checkbox count ${await ctl.count()} with ${state0.foldable} foldable frames`);
      expect(state0.foldNoise === foldable, `folding should default to ${foldable}`);
      if (foldable) expect(await ctl.isChecked(), 'fold checkbox is not checked by default');
      // An interpreter frame with no memory of its own always folds (the classifier's
      // plainest case), so a page holding one must offer the control and hide it.
      const plain = nodes.find((n) => n.filename === '??' && n.name === '_PyEval_EvalFrameDefault' && !n.self_bytes && !n.self_block_count);
      if (plain) {
        expect(foldable, `${plain.node_id} (_PyEval_EvalFrameDefault) is not foldable`);
        const tree = await getTree(page);
        expect(!tree.some((t) => t.sources.includes(plain.node_id)), `${plain.node_id} (_PyEval_EvalFrameDefault) is still in the folded tree`);
        expect(await page.locator(frameSel(plain.node_id)).count() === 0, `${plain.node_id} is drawn with folding on`);
      }
    });
  }

  if (foldable) {
    await step('folded tree: inclusive = self + Σ children, nothing lost', async () => {
      await setFold(page, true);
      const tree = await getTree(page);
      const tById = new Map(tree.map((t) => [t.id, t]));
      const drawnIds = await page.$$eval('[data-testid="fg-frame"]', (els) => els.map((e) => e.getAttribute('data-node-id')));
      for (const id of drawnIds) expect(tById.has(id), `drawn frame ${id} is not in the folded tree`);
      // The invariant of the rows carries over to the folded tree (a hand-made tree that
      // breaks it cannot be fixed by folding; root_only.json is one).
      if (invariantErrors(rawTree(nodes)).length === 0) {
        const errs = invariantErrors(tree);
        expect(errs.length === 0, `folded tree breaks inclusive = self + Σ children: ${errs.slice(0, 3).join('; ')}`);
      }
      const sum = (xs, f) => xs.reduce((a, x) => a + (x[f] ?? 0), 0);
      expect(tree[0].size === root.size_bytes, `folded root ${tree[0].size} B != ${root.size_bytes} B`);
      for (const [t, r] of [['self', 'self_bytes'], ['selfBlocks', 'self_block_count'], ['selfRequested', 'self_requested_bytes']]) {
        expect(sum(tree, t) === sum(nodes, r), `Σ ${t} ${sum(tree, t)} != Σ ${r} ${sum(nodes, r)} of the rows`);
      }
      const seen = new Set();
      for (const t of tree) for (const id of t.sources) {
        expect(byId.has(id) && !seen.has(id), `source ${id} unknown or listed twice`);
        seen.add(id);
      }
      const st = await getState(page);
      expect(nodes.length - seen.size === st.foldable, `${nodes.length - seen.size} rows missing from the tree, ${st.foldable} folded`);
      for (const t of tree) {
        // A noise frame only stays when it holds memory no kept frame could take.
        if (t.noise) {
          expect(t.self > 0 || t.selfBlocks > 0, `kept noise frame ${t.id} holds no memory`);
          expect(t.children.length === 0 || t.parent === tree[0].id, `kept noise frame ${t.id} has kept callees`);
        }
        const labels = t.children.filter((c) => !SYNTHETIC.includes(c)).map((c) => tById.get(c).label);
        expect(new Set(labels).size === labels.length, `${t.id} has unmerged same-label children`);
      }
    });

    await step('fold toggle redraws the tree and back', async () => {
      await page.click('[data-testid="fg-reset"]');
      await setFold(page, true);
      const on = await getState(page);
      await setFold(page, false);
      const off = await getState(page);
      expect(off.nodes === off.fullNodes && off.nodes === nodes.length, `unfolded tree has ${off.nodes} nodes, rows ${nodes.length}`);
      expect(on.nodes < off.nodes, `folding did not shrink the tree (${on.nodes} vs ${off.nodes})`);
      if (/deep|fold_merge/.test(name)) expect(on.drawn !== off.drawn, `drawn frames did not change (${on.drawn})`);
      for (const t of await getTree(page)) expect(t.sources.length === 1 && t.sources[0] === t.id, `unfolded node ${t.id} has sources`);
      await setFold(page, true);
      const again = await getState(page);
      expect(again.nodes === on.nodes && again.drawn === on.drawn, `refolding drew ${again.drawn} frames, first ${on.drawn}`);
      timing += `, folded ${on.drawn} frames drawn of ${on.nodes} nodes (unfolded ${off.drawn} of ${off.nodes})`;
    });

    await step('toggling keeps the zoom on the same or nearest frame', async () => {
      await page.click('[data-testid="fg-reset"]');
      await setFold(page, true);
      const tree = await getTree(page);
      const kept = new Set(tree.flatMap((t) => t.sources));
      // Folded → full: a merged node gives way to its largest frame.
      const target = tree.find((t) => t.sources.length > 1 && t.children.length) || tree.find((t) => t.parent && t.children.length) || tree[1];
      expect(await zoomTo(page, target.id), `zoomTo(${target.id}) failed`);
      await setFold(page, false);
      expect((await getState(page)).zoom === target.sources[0], `unfolding moved the zoom to ${(await getState(page)).zoom}, not ${target.sources[0]}`);
      await setFold(page, true);
      expect((await getState(page)).zoom === target.id, 'refolding lost the zoom');
      // Full → folded: a folded-away frame gives way to its nearest kept caller.
      const gone = nodes.find((n) => !kept.has(n.node_id) && n.size_bytes > 0) || nodes.find((n) => !kept.has(n.node_id));
      await setFold(page, false);
      expect(await zoomTo(page, gone.node_id), `zoomTo(${gone.node_id}) failed`);
      await setFold(page, true);
      let up = byId.get(gone.parent_id);
      while (!kept.has(up.node_id)) up = byId.get(up.parent_id);
      const host = tree.find((t) => t.sources.includes(up.node_id));
      const z = (await getState(page)).zoom;
      expect(z === host.id, `folding moved the zoom from ${gone.node_id} to ${z}, not ${host.id}`);
      expect(await crumbCount(page) === host.depth + 1 || host.depth + 1 > 9, 'breadcrumb does not match the zoom');
      await page.click('[data-testid="fg-reset"]');
    });

    await step('search finds a folded frame; picking it unfolds and shows it', async () => {
      await page.click('[data-testid="fg-reset"]');
      await setFold(page, true);
      const kept = new Set((await getTree(page)).flatMap((t) => t.sources));
      const gone = nodes.filter((n) => !kept.has(n.node_id) && n.name);
      const pyeval = gone.filter((n) => n.name === '_PyEval_EvalFrameDefault');
      const target = (pyeval.length ? pyeval : gone).reduce((a, n) => (n.size_bytes > a.size_bytes ? n : a));
      await page.fill('[data-testid="fg-search"]', target.name);
      const sel = `[data-testid="fg-search-results"] button[data-node-id=${JSON.stringify(target.node_id)}]`;
      const items = page.locator('[data-testid="fg-search-results"] button[data-node-id]');
      await poll(async () => (await page.locator(sel).count()) === 1 || (await items.count()) >= 500, `${target.node_id} in the results`);
      if (await page.locator(sel).count() === 0) return; // listed beyond the first 500
      expect((await page.getAttribute(sel, 'data-folded')) === 'true', 'folded result is not marked data-folded');
      expect((await page.textContent(sel)).includes('(folded)'), 'folded result does not say "(folded)"');
      expect(await page.locator(frameSel(target.node_id)).count() === 0, 'folded frame is drawn');
      expect((await page.textContent('.fg-count')).includes('folded'), 'match count does not mention folded frames');
      await page.click(sel);
      await poll(async () => (await activeId(page)) === target.node_id, `focus on ${target.node_id} after clicking its result`);
      const st = await getState(page);
      expect(!st.foldNoise && !(await page.locator('[data-testid="fg-fold"]').isChecked()), 'picking a folded result left folding on');
      const box = await page.locator(frameSel(target.node_id)).boundingBox();
      expect(box && box.width >= 20, `revealed frame is only ${box && box.width}px wide`);
      expect((await page.textContent('[data-testid="fg-details"]')).includes('hidden when'), 'details do not say the frame folds');
      await page.click('[data-testid="fg-reset"]');
      await setFold(page, true);
    });
  }

  // The Python frames view: its checkbox is there and on exactly when a native frame next
  // to a Python one folds (unless the page asks for it off); under the root only Python
  // frames, memory without a stack, and stacks without any Python frame remain; nothing is
  // lost; the search still reaches every frame; off again, the full tree is back.
  const pythonable = !!(state0 && state0.pythonFoldable > 0);
  if (state0) {
    await step('Python frames control: shown and on exactly when a native frame folds', async () => {
      const ctl = page.locator('[data-testid="fg-python"]');
      expect(await ctl.count() === (pythonable ? 1 : 0), `Python checkbox count ${await ctl.count()} with ${state0.pythonFoldable} foldable frames`);
      const want = pythonable && data.python_frames !== false;
      expect(state0.pythonFrames === want, `Python frames view should default to ${want}`);
      if (pythonable) expect((await ctl.isChecked()) === (await getState(page)).pythonFrames, 'Python checkbox does not show the view');
    });
  }
  if (pythonable) {
    for (const fold of [false, true]) {
      await step(`Python frames view${fold ? ' with noise folded' : ''}: Python frames under the root, nothing lost`, async () => {
        await setFold(page, fold);
        await setPython(page, true);
        const st = await getState(page);
        expect(st.pythonFrames && st.foldNoise === (fold && st.foldable > 0), `state ${JSON.stringify(st)}`);
        const tree = await getTree(page);
        const errs = invariantErrors(tree);
        expect(errs.length === 0, `Python view breaks inclusive = self + Σ children: ${errs.slice(0, 3).join('; ')}`);
        expect(tree[0].size === root.size_bytes, `root ${tree[0].size} B != ${root.size_bytes} B`);
        // A row under the root that is not a Python frame must head a stack without any
        // (or hold memory itself that no Python frame could take).
        const kids = new Map();
        for (const n of nodes) if (n.parent_id != null) kids.set(n.parent_id, [...(kids.get(n.parent_id) || []), n]);
        const pyById = new Map(nodes.map((n) => [n.node_id, PYTHON_ORIGINS.includes(n.origin)]));
        const anyPython = (id) => pyById.get(id) || (kids.get(id) || []).some((c) => anyPython(c.node_id));
        const tById = new Map(tree.map((t) => [t.id, t]));
        for (const id of tree[0].children) {
          const t = tById.get(id);
          if (SYNTHETIC.includes(id) || t.python) continue;
          expect(!t.sources.some(anyPython) || t.self > 0, `${id} (${t.label}) under the root is native, above Python frames`);
        }
        // No native frame between two Python frames.
        for (const t of tree) {
          if (t.python || !t.parent || SYNTHETIC.includes(t.id) || t.id === tree[0].id) continue;
          let a = tById.get(t.parent), pyAbove = false;
          for (; a; a = tById.get(a.parent)) if (a.python) { pyAbove = true; break; }
          expect(!pyAbove, `${t.id} (${t.label}) is native below a Python frame`);
        }
        // Every row is in the tree, or folded away.
        const seen = new Set(tree.flatMap((t) => t.sources));
        const lost = nodes.filter((n) => !seen.has(n.node_id)).length;
        expect(fold || lost === st.pythonFoldable, `${lost} rows missing from the tree, ${st.pythonFoldable} folded`);
      });
    }
    await step('Python frames view: a folded native frame is found, and picking it shows it', async () => {
      await setFold(page, false);
      await setPython(page, true);
      const tree = await getTree(page);
      const seen = new Set(tree.flatMap((t) => t.sources));
      const target = nodes.find((n) => !seen.has(n.node_id) && n.name && n.name.length > 3);
      expect(target, 'no folded frame');
      await page.fill('[data-testid="fg-search"]', target.name);
      const sel = `[data-testid="fg-search-results"] button[data-node-id=${JSON.stringify(target.node_id)}]`;
      await page.waitForSelector(sel);
      expect((await page.getAttribute(sel, 'data-folded')) === 'true', 'folded result is not marked data-folded');
      await page.click(sel);
      await poll(async () => (await page.locator(frameSel(target.node_id)).count()) === 1, 'the picked frame to be drawn');
      const st = await getState(page);
      expect(!st.pythonFrames && !(await page.locator('[data-testid="fg-python"]').isChecked()), 'picking a folded result left the Python view on');
      expect((await page.textContent('[data-testid="fg-details"]')).includes('Python frames only'), 'details do not say the frame folds in the Python view');
      await page.fill('[data-testid="fg-search"]', '');
      await page.click('[data-testid="fg-reset"]');
    });
    await step('Python frames view off: the full tree again', async () => {
      await setFold(page, false);
      const st = await getState(page);
      expect(!st.pythonFrames && st.nodes === st.fullNodes, `view off: ${st.nodes} nodes of ${st.fullNodes}`);
    });
  }

  if (name === 'fold_merge') {
    await step('fold fixture: the Python frames view exactly as the report\u2019s (FOLD_MERGE_PYTHON)', async () => {
      await setFold(page, false);
      await setPython(page, true);
      const tree = await getTree(page);
      const got = tree.map((t) => ({ id: t.id, parent: t.parent, size: t.size, self: t.self, blocks: t.blocks, selfBlocks: t.selfBlocks, sources: t.sources }));
      const key = (x) => JSON.stringify(x);
      expect(key(got) === key(FOLD_MERGE_PYTHON), `got ${key(got)}\nwant ${key(FOLD_MERGE_PYTHON)}`);
      expect((await getState(page)).pythonFoldable === 13, `expected 13 folded frames, got ${(await getState(page)).pythonFoldable}`);
      // CPython's own C sources are interpreter frames too (symbolised captures).
      const noise = await page.evaluate(() => [
        PtSnapFlamegraph.noiseOf({ filename: '/usr/local/src/conda/python-3.12.3/Modules/main.c', name: 'Py_BytesMain' }),
        PtSnapFlamegraph.noiseOf({ filename: '/home/u/ext/fastops.c', name: 'PyObject_FastCall' }),
      ]);
      expect(key(noise) === key(['interpreter', null]), `classified ${key(noise)}`);
      await setPython(page, false);
    });
  }

  if (name === 'origins') {
    // The kinds of code come from the page's data (pt-snap-report's `stack::Origin`), and
    // read as the text report reads them: an IPython cell is the user's code; a byte count
    // a byte short of 1024 KiB reads 1.00 MiB.
    await step('origins fixture: an IPython cell is your code; 1,048,575 B read as 1.00 MiB', async () => {
      await setFold(page, false);
      await setPython(page, false);
      const origins = Object.fromEntries(nodes.map((n) => [n.node_id, n.origin]));
      const want = { root: null, 'frame/1': 'user', 'frame/1/2': 'torch', 'frame/1/5': 'stdlib', 'frame/1/2/3': 'interpreter', 'frame/1/2/3/4': 'native' };
      expect(JSON.stringify(origins) === JSON.stringify(want), `rows' origins ${JSON.stringify(origins)}`);
      const kinds = Object.fromEntries((await getTree(page)).map((t) => [t.id, t.kind]));
      const colours = { root: 'root', 'frame/1': 'user', 'frame/1/2': 'torch', 'frame/1/5': 'lib', 'frame/1/2/3': 'lib', 'frame/1/2/3/4': 'native' };
      expect(JSON.stringify(kinds) === JSON.stringify(colours), `kinds of code ${JSON.stringify(kinds)}`);
      expect(await page.locator(`${frameSel('frame/1')}.k-user`).count() === 1, 'the IPython cell is not drawn as your code');
      const aria = await page.getAttribute(frameSel('frame/1/2'), 'aria-label');
      expect(aria.includes(': 1.00 MiB inclusive'), `1,048,575 B do not read 1.00 MiB: ${aria}`);
      await page.mouse.move(0, 0);
      await page.focus(frameSel('frame/1/2'));
      const details = await page.textContent('[data-testid="fg-details"]');
      expect(details.includes('1.00 MiB (1,048,575 B)'), `details: ${details}`);
      // The Python frames view folds the interpreter and the allocator into torch's frame.
      await setPython(page, true);
      const tree = await getTree(page);
      const got = tree.map((t) => [t.id, t.size, t.self, t.sources.join('+')]);
      const expected = [['root', 1050623, 0, 'root'], ['frame/1', 1050623, 0, 'frame/1'],
        ['frame/1/2', 1048575, 1048575, 'frame/1/2'], ['frame/1/5', 2048, 2048, 'frame/1/5']];
      expect(JSON.stringify(got) === JSON.stringify(expected), `Python view ${JSON.stringify(got)}`);
      expect((await getState(page)).pythonFoldable === 2, 'the Python view does not fold the two native frames');
      await setPython(page, false);
    });
  }

  if (name === 'fold_merge') {
    await step('fold fixture: merged sizes exactly as expected', async () => {
      await setFold(page, true);
      const tree = await getTree(page);
      const got = tree.map((t) => ({ id: t.id, parent: t.parent, size: t.size, self: t.self, blocks: t.blocks, selfBlocks: t.selfBlocks,
        requested: t.requested, selfRequested: t.selfRequested, sources: t.sources, hidden: t.hidden }));
      const want = FOLD_MERGE_EXPECTED;
      const key = (x) => JSON.stringify(x);
      const gotById = new Map(got.map((g) => [g.id, g]));
      for (const w of want) expect(key(gotById.get(w.id)) === key(w), `${w.id}: got ${key(gotById.get(w.id))}, want ${key(w)}`);
      expect(got.length === want.length, `folded tree has ${got.length} nodes, want ${want.length}`);
      const foldable = (await getState(page)).foldable;
      expect(foldable === 9, `expected 9 folded frames, got ${foldable}`);
      // Details of a merged frame say so; a merged id reaches the merged node.
      expect(await zoomTo(page, 'frame/1/2/4'), 'zoomTo(frame/1/2/4) failed');
      expect((await getState(page)).zoom === 'frame/1/3/5', 'frame/1/2/4 is not found as its merged node');
      await page.mouse.move(0, 0);
      await page.focus(frameSel('frame/1/3/5'));
      const details = await page.textContent('[data-testid="fg-details"]');
      expect(details.includes('merged from 2 frames'), `details do not say "merged from 2 frames": ${details}`);
      expect(details.includes('15.38 KiB (15,744 B)'), 'details do not show the merged inclusive size');
      // Searching a merged frame lists it once.
      expect(key(await page.evaluate(() => window.ptSnapFlamegraphView.search('forward'))) === key(['frame/1/3/5']), 'merged frame listed more than once');
      expect(key(await page.evaluate(() => window.ptSnapFlamegraphView.search('_PyEval_EvalFrameDefault'))) === key(['frame/1/2', 'frame/1/12']),
        'folded search hits are not listed');
      await page.click('[data-testid="fg-reset"]');
    });
  }

  if (interactive) {
    await step('search finds the deepest frame', async () => {
      await setFold(page, foldable);
      const deepest = nodes.reduce((a, n) => (n.depth > a.depth ? n : a), nodes[0]);
      // With folding on the deepest row may be merged into another node or folded away.
      const rep = (await getTree(page)).find((t) => t.sources.includes(deepest.node_id));
      const shownId = rep ? rep.id : deepest.node_id;
      const term = deepest.name ?? deepest.label;
      const t0 = Date.now();
      await page.fill('[data-testid="fg-search"]', term);
      if (rep) await page.waitForSelector(`${frameSel(shownId)}.is-match`, { timeout: 5000 });
      else await page.waitForSelector(`[data-testid="fg-search-results"] button[data-node-id=${JSON.stringify(shownId)}][data-folded]`, { timeout: 5000 });
      const searchMs = Date.now() - t0;
      const items = page.locator('[data-testid="fg-search-results"] button[data-node-id]');
      expect(await items.count() > 0, `no search result for ${JSON.stringify(term)}`);
      const inList = page.locator(`[data-testid="fg-search-results"] button[data-node-id=${JSON.stringify(shownId)}]`);
      const truncated = (await items.count()) >= 500;
      expect(truncated || (await inList.count()) === 1, `${shownId} is not in the result list`);
      if (await inList.count()) {
        // A result click must make even a sub-pixel frame visible and focused.
        await inList.click();
        await poll(async () => (await activeId(page)) === shownId, `focus on ${shownId} after clicking its result`);
        const box = await page.locator(frameSel(shownId)).boundingBox();
        expect(box && box.width >= 20, `revealed frame is only ${box && box.width}px wide`);
      }
      timing += `, search ${searchMs} ms`;
      await page.click('[data-testid="fg-reset"]');
      await poll(async () => (await zoomId(page)) === 'root', 'reset to zoom out to the root');
      expect(await page.locator('[data-testid="fg-frame"].is-match').count() === 0, 'reset left search highlights');
      await setFold(page, foldable);
    });

    // Zoom, breadcrumb and keyboard work on the tree on screen, folded or not.
    for (const fold of foldable ? [true, false] : [false]) {
      const mode = foldable ? (fold ? ' (folded)' : ' (unfolded)') : '';
      let tree = [];
      let tRoot = null;
      let child = null;

      await step(`click zooms in, breadcrumb and Escape zoom out${mode}`, async () => {
        await setFold(page, fold);
        await page.click('[data-testid="fg-reset"]');
        tree = await getTree(page);
        tRoot = tree[0];
        const kids = tRoot.children.map((id) => tree.find((t) => t.id === id));
        child = kids.find((k) => k.size > 0) || kids[0];
        expect(child, 'root has no child');
        expect(await crumbCount(page) === 1, 'breadcrumb should start at the root alone');
        const t0 = Date.now();
        await page.click(frameSel(child.id));
        await poll(async () => (await crumbCount(page)) === 2, 'breadcrumb to grow after a click');
        if (fold === foldable) timing += `, zoom ${Date.now() - t0} ms`;
        expect(await zoomId(page) === child.id, 'zoomed into the wrong frame');
        const box = await page.locator(frameSel(child.id)).boundingBox();
        const graph = await page.locator('.fg-graph').boundingBox();
        expect(box && Math.abs(box.width - graph.width) < 2, 'zoomed frame does not span the width');
        await page.click(`[data-testid="fg-breadcrumb"] button[data-node-id=${JSON.stringify(tRoot.id)}]`);
        await poll(async () => (await crumbCount(page)) === 1, 'breadcrumb root click to zoom out');
        await page.click(frameSel(child.id));
        await poll(async () => (await crumbCount(page)) === 2, 'breadcrumb to grow after a second click');
        await page.keyboard.press('Escape');
        await poll(async () => (await crumbCount(page)) === 1, 'Escape to zoom out');
      });

      await step(`keyboard: ArrowDown, Enter, Escape${mode}`, async () => {
        await setFold(page, fold);
        tree = await getTree(page);
        tRoot = tree[0];
        const tById = new Map(tree.map((t) => [t.id, t]));
        await page.focus(frameSel(tRoot.id));
        expect(await activeId(page) === tRoot.id, 'root frame cannot take focus');
        await page.keyboard.press('ArrowDown');
        const id = await poll(() => activeId(page).then((a) => (a && a !== tRoot.id ? a : null)), 'focus to move down');
        expect(tById.get(id)?.parent === tRoot.id, `ArrowDown moved to ${id}, not to a child of the root`);
        const tabbable = await page.locator('[data-testid="fg-frame"][tabindex="0"]').count();
        expect(tabbable === 1, `roving tabindex: ${tabbable} frames have tabindex=0`);
        const details = await page.textContent('[data-testid="fg-details"]');
        const label = tById.get(id).label;
        expect(details.includes(label.split(' ').pop()) || details.includes(label), 'details panel does not describe the focused frame');
        await page.keyboard.press('Enter');
        await poll(async () => (await zoomId(page)) === id, 'Enter to zoom into the focused frame');
        expect(await crumbCount(page) === 2, 'breadcrumb should have two items after Enter');
        expect(await activeId(page) === id, 'focus lost after zooming');
        await page.keyboard.press('Escape');
        await poll(async () => (await zoomId(page)) === tRoot.id, 'Escape to zoom out');
      });
    }
    if (foldable) await setFold(page, true);

    const synthetic = nodes.find((n) => n.parent_id === root.node_id && n.frame_id === null &&
      SYNTHETIC.includes(n.node_id) && n.size_bytes > 0);
    if (synthetic) {
      await step('toggle hides memory without a call stack', async () => {
        const toggle = page.locator('[data-testid="fg-hide-synthetic"]');
        await toggle.check();
        await poll(async () => (await page.locator(frameSel(synthetic.node_id)).count()) === 0, `${synthetic.node_id} to disappear`);
        await toggle.uncheck();
        await poll(async () => (await page.locator(frameSel(synthetic.node_id)).count()) === 1, `${synthetic.node_id} to come back`);
      });
    }
  }

  if (interactive && nodes.length >= 1000) {
    // Timings only (printed, never failed on): the machine may be busy.
    await step('timings', async () => {
      const counts = new Map();
      for (const n of nodes) if (n.name) counts.set(n.name, (counts.get(n.name) || 0) + 1);
      const common = [...counts].sort((a, b) => b[1] - a[1])[0]?.[0] ?? '';
      const child = nodes.find((n) => n.parent_id === root.node_id);
      const t = await page.evaluate(([common, childId]) => {
        const v = window.ptSnapFlamegraphView;
        if (!v) return null;
        const time = (fn) => { const s = performance.now(); fn(); return performance.now() - s; };
        const r = {};
        r.redraw = time(() => v.reset());
        r.zoom = time(() => v.zoomTo(childId));
        r.zoomOut = time(() => v.zoomOut());
        r.search = time(() => v.search(common));
        r.matches = v.getState().matches;
        r.drawn = v.getState().drawn;
        r.clear = time(() => v.search(''));
        const s = v.getState();
        if (s.foldable) {
          r.unfold = time(() => v.setFoldNoise(false));
          r.unfoldedDrawn = v.getState().drawn;
          r.fold = time(() => v.setFoldNoise(true));
          r.foldedDrawn = v.getState().drawn;
        }
        return r;
      }, [common, child.node_id]);
      expect(t, 'window.ptSnapFlamegraphView is missing');
      const f = (x) => `${x.toFixed(1)} ms`;
      timing += `\n    in-page: redraw ${f(t.redraw)}, zoom in ${f(t.zoom)}, zoom out ${f(t.zoomOut)}, ` +
        `search ${JSON.stringify(common)} ${f(t.search)} (${t.matches} matches, ${t.drawn} frames drawn), clear ${f(t.clear)}` +
        (t.fold == null ? '' : `, unfold ${f(t.unfold)} (${t.unfoldedDrawn} frames drawn), fold ${f(t.fold)} (${t.foldedDrawn} drawn)`);
    });
  }

  if (interactive && process.env.PT_SNAP_SHOTS === 'all') {
    // Extra views for looking at by eye (search + hover, dark mode); not assertions.
    await step('extra screenshots', async () => {
      // The deepest node of the tree on screen (folded by default), so it is drawn.
      const tree = await getTree(page);
      const deepest = tree.reduce((a, t) => (t.depth > a.depth ? t : a), tree[0]);
      const term = byId.get(deepest.id).name ?? deepest.label;
      await page.click('[data-testid="fg-reset"]');
      await page.fill('[data-testid="fg-search"]', term);
      await page.waitForSelector(`${frameSel(deepest.id)}.is-match`);
      await page.hover(frameSel(tree[0].children[0]));
      await page.screenshot({ path: path.join(shotDir, `${name}-search.png`), fullPage: true });
      await page.emulateMedia({ colorScheme: 'dark' });
      await page.click(`[data-testid="fg-search-results"] button[data-node-id=${JSON.stringify(deepest.id)}]`);
      await page.mouse.move(0, 0);
      await page.screenshot({ path: path.join(shotDir, `${name}-dark.png`), fullPage: true });
      await page.emulateMedia({ colorScheme: 'light' });
      if (foldable) {
        await page.click('[data-testid="fg-reset"]');
        await setFold(page, false);
        await page.screenshot({ path: path.join(shotDir, `${name}-unfolded.png`), fullPage: true });
        await setFold(page, true);
      }
    });
  }

  await finish(`${name}: ${timing}`);
}

await runPages('flamegraph', pages, testPage);
console.log(`screenshots: ${path.relative(process.cwd(), shotDir) || '.'}/`);
console.log(`flamegraph: ${tally.passed} passed, ${tally.failed} failed`);
process.exit(tally.failed ? 1 : 0);
