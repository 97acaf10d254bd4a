// Browser test of the memory flamegraph pages: Playwright (playwright-core only, no browser
// download) drives Debian's Chromium over each page from file://.
//
//   node tests/browser/flamegraph.test.mjs <page.html> [<page2.html> …]
//
// Per page: no console error/warning and no page error; no request but the page itself;
// then, when the tree has more than the root: a search for the deepest frame finds and
// highlights it, clicking a frame zooms in and the breadcrumb / Escape zoom out, the
// keyboard walks and zooms, the "no call stack" toggle hides synthetic leaves. A
// screenshot goes to target/browser/<page-basename>.png. Exits 1 on any failure.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '..', '..');
const shotDir = path.join(repoRoot, 'target', 'browser');
const CHROMIUM = process.env.PT_SNAP_CHROMIUM || '/usr/bin/chromium';

const pages = process.argv.slice(2);
if (!pages.length) {
  console.error('usage: node tests/browser/flamegraph.test.mjs <page.html> [<page2.html> …]');
  process.exit(2);
}
if (!fs.existsSync(CHROMIUM)) {
  console.error(`flamegraph test: ${CHROMIUM} is missing; run tests/browser/setup.sh first`);
  process.exit(1);
}

let passed = 0;
let failed = 0;

class Check extends Error {}
function expect(cond, message) {
  if (!cond) throw new Check(message);
}

async function poll(fn, what, timeout = 5000) {
  const end = Date.now() + timeout;
  let last;
  while (Date.now() < end) {
    last = await fn();
    if (last) return last;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Check(`timed out waiting for ${what}`);
}

const frameSel = (id) => `[data-testid="fg-frame"][data-node-id=${JSON.stringify(id)}]`;
const crumbCount = (page) => page.locator('[data-testid="fg-breadcrumb"] button[data-node-id]').count();
const zoomId = (page) => page.getAttribute('[data-testid="fg-breadcrumb"]', 'data-zoom-id');
const activeId = (page) => page.evaluate(() => document.activeElement && document.activeElement.getAttribute('data-node-id'));

async function testPage(context, file) {
  const abs = path.resolve(file);
  const url = pathToFileURL(abs).href;
  const name = path.basename(abs).replace(/\.html?$/i, '');
  const problems = [];
  const requests = [];
  const page = await context.newPage();
  await page.setViewportSize({ width: 1280, height: 900 });
  // Fail fast: every wait here is for something that takes milliseconds when it works.
  page.setDefaultTimeout(5000);
  page.on('console', (msg) => {
    if (msg.type() === 'error' || msg.type() === 'warning') problems.push(`console ${msg.type()}: ${msg.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('request', (req) => {
    if (req.url() !== url) requests.push(req.url());
  });

  const results = [];
  async function step(label, fn) {
    try {
      await fn();
      results.push([true, label]);
    } catch (err) {
      results.push([false, `${label}: ${err instanceof Check ? err.message : err.stack || err}`]);
    }
  }

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

  // Taken before any interaction, so it shows what a user sees on opening the report.
  await step('screenshot', async () => {
    fs.mkdirSync(shotDir, { recursive: true });
    await page.screenshot({ path: path.join(shotDir, `${name}.png`), fullPage: true });
  });

  const nodes = data ? data.nodes : [];
  const byId = new Map(nodes.map((n) => [n.node_id, n]));
  const root = nodes.find((n) => n.parent_id === null);
  const interactive = root && nodes.length > 1;

  if (interactive) {
    await step('search finds the deepest frame', async () => {
      const deepest = nodes.reduce((a, n) => (n.depth > a.depth ? n : a), nodes[0]);
      const term = deepest.name ?? deepest.label;
      const t0 = Date.now();
      await page.fill('[data-testid="fg-search"]', term);
      await page.waitForSelector(`${frameSel(deepest.node_id)}.is-match`, { timeout: 5000 });
      const searchMs = Date.now() - t0;
      const items = page.locator('[data-testid="fg-search-results"] button[data-node-id]');
      expect(await items.count() > 0, `no search result for ${JSON.stringify(term)}`);
      const inList = page.locator(`[data-testid="fg-search-results"] button[data-node-id=${JSON.stringify(deepest.node_id)}]`);
      const truncated = (await items.count()) >= 500;
      expect(truncated || (await inList.count()) === 1, `${deepest.node_id} is not in the result list`);
      if (await inList.count()) {
        // A result click must make even a sub-pixel frame visible and focused.
        await inList.click();
        await poll(async () => (await activeId(page)) === deepest.node_id, `focus on ${deepest.node_id} after clicking its result`);
        const box = await page.locator(frameSel(deepest.node_id)).boundingBox();
        expect(box && box.width >= 20, `revealed frame is only ${box && box.width}px wide`);
      }
      timing += `, search ${searchMs} ms`;
      await page.click('[data-testid="fg-reset"]');
      await poll(async () => (await zoomId(page)) === 'root', 'reset to zoom out to the root');
      expect(await page.locator('[data-testid="fg-frame"].is-match').count() === 0, 'reset left search highlights');
    });

    const child = nodes.find((n) => n.parent_id === root.node_id && n.size_bytes > 0) || nodes.find((n) => n.parent_id === root.node_id);

    await step('click zooms in, breadcrumb and Escape zoom out', async () => {
      expect(child, 'root has no child');
      expect(await crumbCount(page) === 1, 'breadcrumb should start at the root alone');
      const t0 = Date.now();
      await page.click(frameSel(child.node_id));
      await poll(async () => (await crumbCount(page)) === 2, 'breadcrumb to grow after a click');
      timing += `, zoom ${Date.now() - t0} ms`;
      expect(await zoomId(page) === child.node_id, 'zoomed into the wrong frame');
      const box = await page.locator(frameSel(child.node_id)).boundingBox();
      const graph = await page.locator('.fg-graph').boundingBox();
      expect(box && Math.abs(box.width - graph.width) < 2, 'zoomed frame does not span the width');
      await page.click(`[data-testid="fg-breadcrumb"] button[data-node-id=${JSON.stringify(root.node_id)}]`);
      await poll(async () => (await crumbCount(page)) === 1, 'breadcrumb root click to zoom out');
      await page.click(frameSel(child.node_id));
      await poll(async () => (await crumbCount(page)) === 2, 'breadcrumb to grow after a second click');
      await page.keyboard.press('Escape');
      await poll(async () => (await crumbCount(page)) === 1, 'Escape to zoom out');
    });

    await step('keyboard: ArrowDown, Enter, Escape', async () => {
      await page.focus(frameSel(root.node_id));
      expect(await activeId(page) === root.node_id, 'root frame cannot take focus');
      await page.keyboard.press('ArrowDown');
      const id = await poll(() => activeId(page).then((a) => (a && a !== root.node_id ? a : null)), 'focus to move down');
      expect(byId.get(id)?.parent_id === root.node_id, `ArrowDown moved to ${id}, not to a child of the root`);
      const tabbable = await page.locator('[data-testid="fg-frame"][tabindex="0"]').count();
      expect(tabbable === 1, `roving tabindex: ${tabbable} frames have tabindex=0`);
      const details = await page.textContent('[data-testid="fg-details"]');
      expect(details.includes(byId.get(id).label.split(' ').pop()) || details.includes(byId.get(id).label),
        'details panel does not describe the focused frame');
      await page.keyboard.press('Enter');
      await poll(async () => (await zoomId(page)) === id, 'Enter to zoom into the focused frame');
      expect(await crumbCount(page) === 2, 'breadcrumb should have two items after Enter');
      expect(await activeId(page) === id, 'focus lost after zooming');
      await page.keyboard.press('Escape');
      await poll(async () => (await zoomId(page)) === root.node_id, 'Escape to zoom out');
    });

    const synthetic = nodes.find((n) => n.parent_id === root.node_id && n.frame_id === null &&
      ['static', 'preexisting_live_at_event', 'empty_callstack', 'missing'].includes(n.node_id) && n.size_bytes > 0);
    if (synthetic) {
      await step('toggle hides memory without a call stack', async () => {
        const toggle = page.locator('.fg-toggle input');
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
        return r;
      }, [common, child.node_id]);
      expect(t, 'window.ptSnapFlamegraphView is missing');
      const f = (x) => `${x.toFixed(1)} ms`;
      timing += `\n    in-page: redraw ${f(t.redraw)}, zoom in ${f(t.zoom)}, zoom out ${f(t.zoomOut)}, ` +
        `search ${JSON.stringify(common)} ${f(t.search)} (${t.matches} matches, ${t.drawn} frames drawn), clear ${f(t.clear)}`;
    });
  }

  if (interactive && process.env.PT_SNAP_SHOTS === 'all') {
    // Extra views for looking at by eye (search + hover, dark mode); not assertions.
    await step('extra screenshots', async () => {
      const deepest = nodes.reduce((a, n) => (n.depth > a.depth ? n : a), nodes[0]);
      await page.click('[data-testid="fg-reset"]');
      await page.fill('[data-testid="fg-search"]', deepest.name ?? deepest.label);
      await page.waitForSelector(`${frameSel(deepest.node_id)}.is-match`);
      await page.hover(frameSel(nodes.find((n) => n.parent_id === root.node_id).node_id));
      await page.screenshot({ path: path.join(shotDir, `${name}-search.png`), fullPage: true });
      await page.emulateMedia({ colorScheme: 'dark' });
      await page.click(`[data-testid="fg-search-results"] button[data-node-id=${JSON.stringify(deepest.node_id)}]`);
      await page.mouse.move(0, 0);
      await page.screenshot({ path: path.join(shotDir, `${name}-dark.png`), fullPage: true });
      await page.emulateMedia({ colorScheme: 'light' });
    });
  }

  await step('no console error or warning, no page error', async () => {
    expect(problems.length === 0, problems.join('; '));
  });
  await step('no network request', async () => {
    expect(requests.length === 0, `requests made: ${requests.join(', ')}`);
  });

  await page.close();
  console.log(`${name}: ${timing}`);
  for (const [ok, label] of results) {
    console.log(`  ${ok ? 'ok  ' : 'FAIL'} ${label}`);
    if (ok) passed++;
    else failed++;
  }
}

const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'pt-snap-chromium-'));
let context;
try {
  // A persistent context is how Playwright takes an explicit --user-data-dir: a fresh temp
  // profile per run, removed afterwards.
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  for (const p of pages) {
    if (!fs.existsSync(p)) {
      console.log(`FAIL ${p}: no such file`);
      failed++;
      continue;
    }
    await testPage(context, p);
  }
} catch (err) {
  console.error(`flamegraph test: could not drive Chromium: ${err.stack || err}`);
  failed++;
} finally {
  if (context) await context.close().catch(() => {});
  fs.rmSync(profile, { recursive: true, force: true });
}
console.log(`screenshots: ${path.relative(process.cwd(), shotDir) || '.'}/`);
console.log(`flamegraph: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
