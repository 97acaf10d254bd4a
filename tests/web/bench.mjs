// Benchmark (not a test): time from dropping a pickle on the browser app to the peaks being
// shown, beside the native CLI import of the same file in the same run, with the tab's memory.
// Driven by scripts/web-bench, which serves dist/ on 127.0.0.1 and makes the inputs.
//
//   node tests/web/bench.mjs URL ROOT OUTDIR FILE...
//
// Per file: the native `pt-snap import` (wall, peak RSS via /usr/bin/time) and its
// memory_peak answer; then a fresh headless Chromium: page loaded and idle (worker ready), the
// file set on the file input, and the clock stops when [data-testid=peak-allocated] carries a
// data-value in the page's DOM (noted by the page itself; or when an error is shown, or the
// tab crashes). Sampled every 200 ms meanwhile: the
// RSS of the renderer process (the import worker runs in it, so this includes the worker's
// wasm heap), the page's JS heap (CDP Performance.getMetrics JSHeapUsedSize), and the import
// stage the page shows. At the end: the page's own wasm memory (it holds the opened DB).
import { createRequire } from 'node:module';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const [url, root, outDir, ...files] = process.argv.slice(2);
if (!files.length) {
  console.error('usage: bench.mjs URL ROOT OUTDIR FILE...');
  process.exit(2);
}
const require = createRequire(path.join(root, 'tests/browser/node_modules/'));
const { chromium } = require('playwright-core');
const cli = path.join(root, 'target/release/pt-snap');
const timeoutMs = Number(process.env.WEB_BENCH_TIMEOUT_S ?? 1800) * 1000;
const MiB = 1024 * 1024;

function native(file) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pt-snap-bench-native-'));
  try {
    const env = { ...process.env, HOME: dir };
    delete env.PT_SNAP_DB_PATH;
    const r = spawnSync('/usr/bin/time', ['-f', 'TIME %e %M', cli, 'import', file, '-o', dir,
      '--no-focus', '--json'], { env, cwd: dir, encoding: 'utf8', maxBuffer: 64 * MiB });
    if (r.status !== 0) throw new Error(`native import failed: ${r.stderr}`);
    const [, wall, kib] = r.stderr.trim().split('\n').pop().split(' ');
    const db = path.join(dir, path.basename(file) + '.db');
    const peak = JSON.parse(execFileSync(cli, ['query', db, '--template-use', 'memory_peak', '--json'],
      { env, cwd: dir, encoding: 'utf8' })).rows[0];
    return { wall_s: Number(wall), rss_mib: Number(kib) / 1024, db_mib: fs.statSync(db).size / MiB, peak };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/// Sum of VmRSS of the browser's renderer processes, in MiB.
function rendererRss(browserPid) {
  let total = 0;
  const kids = (pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    } catch { return []; }
  };
  const stack = [String(browserPid)];
  while (stack.length) {
    const pid = stack.pop();
    stack.push(...kids(pid));
    try {
      if (!fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--type=renderer')) continue;
      const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (m) total += Number(m[1]) / 1024;
    } catch { /* exited */ }
  }
  return total;
}

async function inBrowser(file) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'pt-snap-bench-web-'));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium', headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const browserPid = findBrowserPid(profile);
  try {
    const page = ctx.pages()[0] ?? await ctx.newPage();
    // Keep the page's wasm exports (Trunk's loader announces them) to read its memory size.
    await page.addInitScript(() => addEventListener('TrunkApplicationStarted',
      (e) => { globalThis.__ptSnapWasm = e.detail?.wasm; }));
    let crashed = false;
    page.on('crash', () => { crashed = true; });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    const cdp = await ctx.newCDPSession(page);
    await cdp.send('Performance.enable');
    await page.goto(url, { waitUntil: 'networkidle' });
    await page.waitForSelector('[data-testid=file-input]', { state: 'attached' });
    await page.waitForTimeout(500);

    const samples = [];
    const stages = {};
    // The page itself notes when the peaks enter the DOM (a MutationObserver callback runs
    // in the task that put them there, before the frame is painted): Playwright's own
    // answer comes back only once the renderer's main thread is free again, which can be
    // after work queued behind the peaks (the timeline is drawn in the next task).
    await page.evaluate(() => {
      window.__ptSnapPeaksAt = null;
      const seen = () => document.querySelector('[data-testid=peak-allocated][data-value]');
      new MutationObserver((_, observer) => {
        if (seen()) { window.__ptSnapPeaksAt = Date.now(); observer.disconnect(); }
      }).observe(document.body, { subtree: true, childList: true, attributes: true });
    });
    const t0 = Date.now();
    let sampling = true;
    const sampler = (async () => {
      while (sampling && !crashed) {
        const t = (Date.now() - t0) / 1000;
        const rss = rendererRss(browserPid);
        let heap = null, stage = null;
        try {
          const m = await cdp.send('Performance.getMetrics');
          heap = m.metrics.find((x) => x.name === 'JSHeapUsedSize').value / MiB;
          stage = await page.evaluate(() => document.querySelector('[data-testid=import-progress] span')?.textContent ?? null);
        } catch { /* page gone */ }
        const word = stage && /— (\w+)/.exec(stage)?.[1];
        if (word && !(word in stages)) stages[word] = t;
        samples.push({ t, rss, heap });
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    await page.setInputFiles('[data-testid=file-input]', file);
    let outcome = 'ok', message = '';
    try {
      await Promise.race([
        page.waitForSelector('[data-testid=peak-allocated][data-value]', { timeout: timeoutMs }),
        page.waitForSelector('[data-testid=error]', { timeout: timeoutMs }).then(async () => {
          outcome = 'error';
          message = await page.textContent('[data-testid=error]');
        }),
        new Promise((_, reject) => page.once('crash', () => reject(new Error('tab crashed')))),
      ]);
    } catch (e) {
      outcome = crashed ? 'crash' : 'timeout';
      message = String(e.message).split('\n')[0];
    }
    const shownAt = outcome === 'ok' ? await page.evaluate(() => window.__ptSnapPeaksAt).catch(() => null) : null;
    const wall = ((shownAt ?? Date.now()) - t0) / 1000;
    sampling = false;
    await sampler;
    let peak = null, wasmMib = null;
    if (outcome === 'ok') {
      const v = async (id) => Number(await page.getAttribute(`[data-testid=${id}]`, 'data-value'));
      peak = { peak_allocated: await v('peak-allocated'), peak_active: await v('peak-active'), peak_reserved: await v('peak-reserved') };
      wasmMib = await page.evaluate(() => globalThis.__ptSnapWasm?.memory?.buffer?.byteLength ?? null);
      if (wasmMib !== null) wasmMib /= MiB;
    }
    const max = (k) => Math.max(0, ...samples.map((s) => s[k] ?? 0));
    const after = samples.length ? samples[samples.length - 1] : {};
    return {
      outcome, message, wall_s: wall, stages, peak,
      renderer_rss_peak_mib: max('rss'), renderer_rss_end_mib: after.rss ?? null,
      js_heap_peak_mib: max('heap'), page_wasm_mib: wasmMib,
      errors: errors.filter((e) => !/deprecated parameters|favicon|integrity/.test(e)),
    };
  } finally {
    await ctx.close().catch(() => {});
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

/// The browser process: the one started with our profile directory that is no child type.
function findBrowserPid(profile) {
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (cmd.includes(`--user-data-dir=${profile}`) && !cmd.includes('--type=')) return pid;
    } catch { /* exited */ }
  }
  throw new Error('cannot find the Chromium process');
}

const f1 = (x) => (x === null || x === undefined ? '—' : x.toFixed(1));
const f2 = (x) => (x === null || x === undefined ? '—' : x.toFixed(2));
const results = [];
for (const file of files) {
  const size = fs.statSync(file).size / MiB;
  console.log(`== ${path.basename(file)} (${f1(size)} MiB)`);
  const n = native(file);
  console.log(`   native: ${f2(n.wall_s)} s, RSS ${f1(n.rss_mib)} MiB, DB ${f1(n.db_mib)} MiB`);
  const w = await inBrowser(file);
  const same = w.peak && ['peak_allocated', 'peak_active', 'peak_reserved'].every((k) => w.peak[k] === n.peak[k]);
  console.log(`   browser: ${w.outcome} ${f2(w.wall_s)} s (${f2(w.wall_s / n.wall_s)}× native), renderer RSS peak ${f1(w.renderer_rss_peak_mib)} MiB, ` +
    `JS heap peak ${f1(w.js_heap_peak_mib)} MiB, page wasm ${f1(w.page_wasm_mib)} MiB, peaks ${w.peak ? (same ? 'equal the CLI' : 'DIFFER from the CLI') : '—'}`);
  console.log(`   stages (s from drop): ${JSON.stringify(w.stages)}${w.message ? ` — ${w.message}` : ''}`);
  if (w.errors.length) console.log(`   console errors: ${w.errors.slice(0, 3).join(' | ')}`);
  results.push({ file: path.basename(file), size_mib: size, native: n, browser: w, peaks_equal: !!same });
}
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, 'results.json'), JSON.stringify(results, null, 1) + '\n');
console.log('\n| file | size (MiB) | native import (s) | native RSS (MiB) | browser drop→peaks (s) | ratio | renderer RSS peak (MiB) | JS heap peak (MiB) | page wasm (MiB) | outcome |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
for (const r of results) {
  const w = r.browser;
  console.log(`| ${r.file} | ${f1(r.size_mib)} | ${f2(r.native.wall_s)} | ${f1(r.native.rss_mib)} | ${f2(w.wall_s)} | ${f2(w.wall_s / r.native.wall_s)}× | ` +
    `${f1(w.renderer_rss_peak_mib)} | ${f1(w.js_heap_peak_mib)} | ${f1(w.page_wasm_mib)} | ${w.outcome}${w.outcome === 'ok' ? (r.peaks_equal ? ', peaks = CLI' : ', peaks ≠ CLI') : ''} |`);
}
console.log(`results: ${path.join(outDir, 'results.json')}`);
