// Benchmark (not a test): the browser app's engine-in-a-worker (issue 13) beside the native CLI
// import of the same file in the same run. Driven by scripts/web-bench, which serves dist/ on
// 127.0.0.1 (scripts/serve-dist: COOP/COEP) and makes the inputs.
//
//   node tests/web/bench.mjs URL ROOT OUTDIR FILE...
//
// Per file: the native `pt-snap import` (wall, peak RSS via /usr/bin/time) and its memory_peak
// answer; then a fresh headless Chromium with a fresh profile, the page loaded and idle, and:
//   1. the file set on the file input (the clock starts just before setInputFiles);
//      drop → peaks: `[data-testid=engine-state]` shows `peaks` (or already `ready`);
//      drop → ready: `[data-testid=engine-state][data-value=ready]`.
//      Both times are noted by the page itself (a MutationObserver logs every change of the
//      engine state, the import stage, the cache badge and the error strip with Date.now()),
//      not by Playwright's answers, which come only once the page's main thread is free.
//   2. 10 s left alone after ready ("settled").
//   3. the same file set on the input again, in the same page and profile: time until
//      `[data-testid=cache-hit]` and engine-state=ready (the OPFS cache), and until the
//      badge says the file's SHA-256 was checked (`data-value=same`: a file reopened by its
//      name, size and time is hashed after it is shown).
// Memory, sampled every 200 ms from /proc on a timer of its own (a busy page does not delay it):
// VmRSS of every process of the browser's tree by type (renderer, browser, gpu-process,
// utility, zygote, …); "renderer" sums the renderer processes, which host the page and its
// dedicated workers (the sampler also counts the renderer's DedicatedWorker threads, to show
// it); "tree" sums all processes except the GPU and utility ones. Every 5th sample also the
// PSS of the same set (smaps_rollup: shared pages split between processes, not counted twice).
// For the page's renderer also its private memory, RssAnon + RssShmem: its VmRSS less the
// pages of Chromium's own files (~105 MiB of code every renderer maps, a blank page's too),
// which is what Chromium's task manager shows as a tab's memory footprint.
// Reported: the peak over drop → ready, the peak over the 10 s after ready, and the second
// drop's. Each step is bounded by WEB_BENCH_TIMEOUT_S (default 1800).
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launch, peaksShown } from './harness.mjs';

const [url, root, outDir, ...files] = process.argv.slice(2);
if (!files.length) {
  console.error('usage: bench.mjs URL ROOT OUTDIR FILE...');
  process.exit(2);
}
const cli = path.join(root, 'target/release/pt-snap');
const timeoutMs = Number(process.env.WEB_BENCH_TIMEOUT_S ?? 1800) * 1000;
const settleMs = 10000;
// The same file is dropped again on the same page too, up to this size (it may be imported again).
const sameMaxMib = Number(process.env.WEB_BENCH_SAME_PAGE_MAX_MIB ?? 512);
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

const kids = (pid) => {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  } catch { return []; }
};

/// The browser's process tree: [{pid, type}], type from --type= (none: the browser process).
function tree(browserPid) {
  const out = [];
  const stack = [String(browserPid)];
  while (stack.length) {
    const pid = stack.pop();
    stack.push(...kids(pid));
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      const type = /--type=([\w-]+)/.exec(cmd)?.[1] ?? (pid === String(browserPid) ? 'browser' : 'other');
      out.push({ pid, type });
    } catch { /* exited */ }
  }
  return out;
}

const statusKiB = (pid, key) => {
  const m = new RegExp(`${key}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
};
const pssKiB = (pid) => {
  const m = /^Pss:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
  return m ? Number(m[1]) : 0;
};
const EXCLUDED = new Set(['gpu-process', 'utility']);

/// One memory sample of the tree, in MiB.
function memSample(browserPid, withPss) {
  const byType = {};
  let renderer = 0, treeRss = 0, treePss = withPss ? 0 : null, workers = 0, page = 0, pagePrivate = 0;
  for (const { pid, type } of tree(browserPid)) {
    try {
      const rss = statusKiB(pid, 'VmRSS') / 1024;
      byType[type] = (byType[type] ?? 0) + rss;
      if (EXCLUDED.has(type)) continue;
      treeRss += rss;
      if (withPss) treePss += pssKiB(pid) / 1024;
      if (type === 'renderer') {
        renderer += rss;
        let own = 0;
        for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
          try {
            if (fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').startsWith('DedicatedWorker')) own += 1;
          } catch { /* thread ended */ }
        }
        workers += own;
        // The page's own renderer is the one running its workers (the app keeps one warm);
        // the others are Chromium's (a blank page alone has three here).
        if (own > 0) {
          page += rss;
          pagePrivate += (statusKiB(pid, 'RssAnon') + statusKiB(pid, 'RssShmem')) / 1024;
        }
      }
    } catch { /* exited */ }
  }
  return { renderer, page_renderer: page, page_private: pagePrivate, tree: treeRss, tree_pss: treePss, by_type: byType, worker_threads: workers };
}

async function inBrowser(file, n, sizeMib) {
  const browser = await launch(root, 'bench-web');
  const { ctx, profile } = browser;
  const browserPid = findBrowserPid(profile);
  const samples = [];
  let phase = 'load', t0 = Date.now(), tick = 0;
  const timer = setInterval(() => {
    const s = memSample(browserPid, tick++ % 5 === 0);
    samples.push({ phase, t: (Date.now() - t0) / 1000, ...s });
  }, 200);
  const out = { outcome: 'ok', message: '' };
  const errors = [];
  let page = null, cdp = null, crashed = false, crash = null, lastText = null, polling = true;
  const heaps = [];

  /// A page of the same profile, loaded and idle.
  const openPage = async (first) => {
    page = (first && ctx.pages()[0]) || await ctx.newPage();
    // Keep the page's wasm exports (Trunk's loader announces them) to read its memory size.
    await page.addInitScript(() => addEventListener('TrunkApplicationStarted',
      (e) => { globalThis.__ptSnapWasm = e.detail?.wasm; }));
    crashed = false;
    const p = page;
    crash = new Promise((resolve) => p.once('crash', () => { crashed = true; resolve('crash'); }));
    p.on('pageerror', (e) => errors.push(String(e)));
    p.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    cdp = await ctx.newCDPSession(p);
    await cdp.send('Performance.enable');
    await p.goto(url, { waitUntil: 'networkidle' });
    await p.waitForSelector('[data-testid=file-input]', { state: 'attached' });
    await p.waitForTimeout(1000);
  };

  // In-page log of what the page shows, each change with its time.
  const installLog = () => page.evaluate(() => {
    window.__log = [];
    window.__lastProgress = null;
    window.__logObserver?.disconnect();
    let last = '';
    const note = () => {
      const st = document.querySelector('[data-testid=engine-state]')?.dataset.value ?? null;
      const indexes = document.querySelector('[data-testid=engine-indexes]')?.dataset.value ?? null;
      // `checking` (reopened by name, size and time, being hashed) or `same`; null: none.
      const cache = document.querySelector('[data-testid=cache-hit]')?.dataset.value ?? null;
      const prog = document.querySelector('[data-testid=import-progress] span')?.textContent ?? null;
      const stage = prog ? (/— (\w+)/.exec(prog)?.[1] ?? prog) : null;
      const code = document.querySelector('[data-testid=error-code]')?.textContent;
      const err = document.querySelector('[data-testid=error]')
        ? `${code ?? ''}: ${document.querySelector('[data-testid=error-message]')?.textContent ?? ''}` : null;
      // The last progress words in full (what a failed import had reached).
      if (prog) window.__lastProgress = { at: Date.now(), text: prog };
      const key = JSON.stringify([st, indexes, cache, stage, err]);
      if (key !== last) {
        last = key;
        window.__log.push({ at: Date.now(), state: st, indexes, cache, stage, error: err });
      }
    };
    note();
    window.__logObserver = new MutationObserver(note);
    window.__logObserver.observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
  });

  /// Sets the file on the input (the clock starts here) and waits for `doneSrc` (run in the
  /// page over its log), a crash or the step's timeout. Times in s from the drop.
  const drop = async (label, doneSrc) => {
    await installLog();
    t0 = Date.now();
    phase = label;
    const startedAt = t0;
    await page.setInputFiles('[data-testid=file-input]', file);
    const waited = await Promise.race([
      page.waitForFunction(doneSrc, null, { timeout: timeoutMs, polling: 250 })
        .then(() => 'ok', (e) => (crashed ? 'crash' : `timeout: ${String(e.message).split('\n')[0]}`)),
      crash,
    ]);
    const log = (await page.evaluate(() => window.__log).catch(() => null)) ?? [];
    return { startedAt, waited, log: timed(log, startedAt) };
  };
  const timed = (log, startedAt) => log.map((e) => ({ t: (e.at - startedAt) / 1000, state: e.state, indexes: e.indexes, cache: e.cache, stage: e.stage, error: e.error }));
  const first = (log, pred) => log.find(pred)?.t ?? null;
  const stagesOf = (log) => {
    const st = {};
    for (const e of log) if (e.stage && !(e.stage in st)) st[e.stage] = e.t;
    const gone = log.findIndex((e, i) => i > 0 && !e.stage && log[i - 1].stage);
    if (gone >= 0) st['(progress gone)'] = log[gone].t;
    return st;
  };
  const peaksNow = async () => {
    const peak = await peaksShown(page);
    return { peak, equal: Object.keys(peak).every((k) => peak[k] === n.peak[k]) };
  };
  /// Outcome of a step that did not reach ready: what the page showed, and a screenshot.
  const failure = async (step, startedAt, waited, log) => {
    const outcome = waited === 'crash' || crashed ? 'crash' : log.some((e) => e.error) ? 'error' : 'timeout';
    const parts = [waited === 'crash' ? 'tab crashed' : waited === 'ok' ? null : waited];
    const err = log.find((e) => e.error);
    if (err) parts.push(`page shows at ${err.t.toFixed(2)} s: ${err.error}`);
    const last = await page.evaluate(() => window.__lastProgress ?? null).catch(() => null);
    if (last) parts.push(`last progress at ${((last.at - startedAt) / 1000).toFixed(2)} s: ${last.text}`);
    const message = parts.filter(Boolean).join('; ');
    await page.screenshot({ path: path.join(outDir, `${path.basename(file)}-${step}-${outcome}.png`) }).catch(() => {});
    return { outcome, message, last_shown: lastText };
  };

  try {
    await openPage(true);
    out.idle = samples.length ? samples[samples.length - 1] : memSample(browserPid, true);
    // The page's JS heap and what it shows, polled apart from the /proc sampler (a busy page
    // answers late); the last shown progress text survives a crashed tab.
    const poller = (async () => {
      while (polling) {
        if (!crashed) {
          try {
            const m = await cdp.send('Performance.getMetrics');
            heaps.push({ phase, heap: m.metrics.find((x) => x.name === 'JSHeapUsedSize').value / MiB });
            lastText = await page.evaluate(() => document.querySelector('[data-testid=import-progress] span')?.textContent
              ?? document.querySelector('[data-testid=error]')?.textContent ?? null) ?? lastText;
          } catch { /* page gone or replaced */ }
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    })();

    // 1. First drop: a fresh profile, nothing cached.
    const d1 = await drop('import', () => (window.__log ?? []).some((e) => e.state === 'ready' || e.error));
    out.drop_to_peaks_s = first(d1.log, (e) => e.state === 'peaks' || e.state === 'ready');
    out.drop_to_ready_s = first(d1.log, (e) => e.state === 'ready');
    out.stages = stagesOf(d1.log);
    out.log = d1.log;
    if (d1.waited !== 'ok' || out.drop_to_ready_s === null) {
      Object.assign(out, await failure('import', d1.startedAt, d1.waited, d1.log));
    } else {
      const shown = await peaksNow();
      out.peak = shown.peak;
      out.peaks_equal = shown.equal;
      out.opened_text = await page.textContent('.opened').catch(() => null);
      // 2. The indexes an OPFS import deferred, built by the worker between questions after
      // ready: drop → indexed is when none is left (ready, where none was deferred).
      const readyAt = d1.startedAt + out.drop_to_ready_s * 1000;
      await page.waitForTimeout(Math.max(0, readyAt + 1000 - Date.now()));
      await page.waitForFunction(() => document.querySelector('[data-testid=engine-indexes]')?.dataset.value !== 'building',
        null, { timeout: timeoutMs, polling: 250 }).catch(() => {});
      const after = timed((await page.evaluate(() => window.__log).catch(() => null)) ?? [], d1.startedAt);
      const building = after.findIndex((e) => e.indexes === 'building');
      out.indexes_built = building >= 0;
      out.drop_to_indexed_s = building >= 0
        ? first(after.slice(building), (e) => e.indexes === 'done') : out.drop_to_ready_s;
      out.log = after;
      // Left alone for 10 s after ready (and the indexes); the samples after the page's own
      // ready time are the settled ones.
      await page.waitForTimeout(Math.max(0, readyAt + settleMs - Date.now()));
      for (const s of samples) if (s.phase === 'import' && d1.startedAt + s.t * 1000 >= readyAt) s.phase = 'settled';
      phase = 'settled';
      out.page_wasm_mib = await page.evaluate(() => globalThis.__ptSnapWasm?.memory?.buffer?.byteLength ?? null)
        .then((b) => (b === null ? null : b / MiB)).catch(() => null);

      // 3a. The same file on the same page, while its database is open there (small files
      // only: it may be imported again).
      if (sizeMib <= sameMaxMib) {
        const d = await drop('same-page', () => {
          const log = window.__log ?? [];
          const left = log.findIndex((e) => e.state !== 'ready');
          return log.some((e) => e.error) || log.some((e) => e.state === 'ready' && e.cache)
            || (left >= 0 && log.slice(left).some((e) => e.state === 'ready'));
        });
        const left = d.log.findIndex((e) => e.state !== 'ready');
        out.same_page = {
          waited: d.waited,
          cache_hit_s: first(d.log, (e) => e.cache),
          ready_s: first(d.log, (e, i) => e.state === 'ready' && (e.cache || (left >= 0 && i > left))),
          stages: stagesOf(d.log), log: d.log,
        };
        if (d.waited === 'ok') out.same_page.peaks_equal = (await peaksNow()).equal;
      }

      // 3b. The same file in a new page of the same profile (the first page closed, which
      // ends its workers).
      phase = 'reload';
      await page.close();
      await new Promise((r) => setTimeout(r, 2000));
      await openPage(false);
      // Until the file is known to be the one imported (its hash checked), or imported.
      const d2 = await drop('again', () => (window.__log ?? []).some((e) => e.error
        || (e.state === 'ready' && (e.cache === 'same' || e.cache === null))));
      out.again = {
        waited: d2.waited,
        cache_hit_s: first(d2.log, (e) => e.cache),
        checked_s: first(d2.log, (e) => e.cache === 'same'),
        peaks_s: first(d2.log, (e) => e.state === 'peaks' || e.state === 'ready'),
        ready_s: first(d2.log, (e) => e.state === 'ready'),
        stages: stagesOf(d2.log), log: d2.log,
      };
      if (d2.waited === 'ok' && out.again.ready_s !== null) {
        out.again.peaks_equal = (await peaksNow()).equal;
        phase = 'again-settled';
        await page.waitForTimeout(2000);
      } else {
        const f = await failure('again', d2.startedAt, d2.waited, d2.log);
        out.outcome = `again: ${f.outcome}`;
        out.message = f.message;
      }
    }
    polling = false;
    await poller;
    out.js_heap_peak_mib = Math.max(0, ...heaps.map((h) => h.heap));
  } catch (e) {
    out.outcome = 'failed';
    out.message = String(e.message ?? e).split('\n')[0];
  } finally {
    polling = false;
    clearInterval(timer);
    await browser.close().catch(() => {});
  }
  out.errors = errors.filter((e) => !/deprecated parameters|favicon|integrity/.test(e));
  const peakOf = (ph) => {
    const ss = samples.filter((s) => s.phase === ph);
    if (!ss.length) return null;
    const max = (k) => Math.max(...ss.map((s) => s[k] ?? 0));
    const byType = {};
    for (const s of ss) for (const [k, v] of Object.entries(s.by_type)) byType[k] = Math.max(byType[k] ?? 0, v);
    return {
      samples: ss.length, renderer_rss_mib: max('renderer'), page_renderer_rss_mib: max('page_renderer'), page_private_mib: max('page_private'), tree_rss_mib: max('tree'),
      tree_pss_mib: max('tree_pss'), by_type_rss_mib: byType, worker_threads_max: max('worker_threads'),
    };
  };
  out.memory = Object.fromEntries(['import', 'settled', 'same-page', 'again'].map((ph) => [ph, peakOf(ph)]));
  out.memory.idle = out.idle ?? null;
  delete out.idle;
  // The renderer's and the tree's RSS over time, 1 s apart: [phase, s from its drop, renderer
  // MiB, tree MiB, DedicatedWorker threads in the renderer].
  out.rss_trace = samples.filter((s, i) => i % 5 === 0 && s.phase !== 'load')
    .map((s) => [s.phase, Number(s.t.toFixed(1)), Math.round(s.renderer), Math.round(s.tree), s.worker_threads]);
  return out;
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
const f0 = (x) => (x === null || x === undefined ? '—' : Math.round(x).toLocaleString('en-US'));
const ratio = (a, b) => (a === null || a === undefined || !b ? null : a / b);
const results = [];
fs.mkdirSync(outDir, { recursive: true });
const save = () => fs.writeFileSync(path.join(outDir, 'results.json'), JSON.stringify(results, null, 1) + '\n');
for (const file of files) {
  const size = fs.statSync(file).size / MiB;
  console.log(`== ${path.basename(file)} (${f1(size)} MiB)  ${new Date().toISOString()}  load ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  const n = native(file);
  console.log(`   native: ${f2(n.wall_s)} s, RSS ${f1(n.rss_mib)} MiB, DB ${f1(n.db_mib)} MiB`);
  const w = await inBrowser(file, n, size);
  const m = w.memory;
  console.log(`   browser: ${w.outcome}${w.message ? ` (${w.message})` : ''}; drop→peaks ${f2(w.drop_to_peaks_s)} s (${f2(ratio(w.drop_to_peaks_s, n.wall_s))}× native), ` +
    `drop→ready ${f2(w.drop_to_ready_s)} s (${f2(ratio(w.drop_to_ready_s, n.wall_s))}×), peaks ${w.peak ? (w.peaks_equal ? 'equal the CLI' : 'DIFFER from the CLI') : '—'}`);
  if (m.import) {
    console.log(`   memory drop→ready: renderer RSS ${f0(m.import.renderer_rss_mib)} MiB (the page's own ${f0(m.import.page_renderer_rss_mib)}, private ${f0(m.import.page_private_mib)}), tree (no GPU/utility) RSS ${f0(m.import.tree_rss_mib)} / PSS ${f0(m.import.tree_pss_mib)} MiB, ` +
      `by type ${JSON.stringify(Object.fromEntries(Object.entries(m.import.by_type_rss_mib).map(([k, v]) => [k, Math.round(v)])))}, worker threads ≤ ${m.import.worker_threads_max}`);
  }
  if (m.settled) console.log(`   memory settled (10 s after ready): renderer RSS ${f0(m.settled.renderer_rss_mib)} MiB (the page's own ${f0(m.settled.page_renderer_rss_mib)}, private ${f0(m.settled.page_private_mib)}), tree RSS ${f0(m.settled.tree_rss_mib)} / PSS ${f0(m.settled.tree_pss_mib)} MiB; page wasm ${f1(w.page_wasm_mib)} MiB`);
  console.log(`   stages (s from drop): ${JSON.stringify(w.stages)}`);
  if (w.drop_to_indexed_s !== undefined) console.log(`   indexes: ${w.indexes_built ? `deferred, built by ${f2(w.drop_to_indexed_s)} s (${f2(ratio(w.drop_to_indexed_s, n.wall_s))}× native)` : 'built with the rows'}`);
  if (m.idle) console.log(`   memory idle before the drop: renderer RSS ${f0(m.idle.renderer)} MiB (the page's own ${f0(m.idle.page_renderer)}, private ${f0(m.idle.page_private)}), tree RSS ${f0(m.idle.tree)} MiB`);
  if (w.same_page) console.log(`   same page again: ${w.same_page.waited}; cache-hit ${f2(w.same_page.cache_hit_s)} s, ready ${f2(w.same_page.ready_s)} s, stages ${JSON.stringify(w.same_page.stages)}`);
  if (w.again) console.log(`   again (new page, same profile): cache-hit ${f2(w.again.cache_hit_s)} s, ready ${f2(w.again.ready_s)} s, checked ${f2(w.again.checked_s)} s, stages ${JSON.stringify(w.again.stages)}, peaks ${w.again.peaks_equal ? 'equal the CLI' : '≠/—'}`);
  if (w.errors?.length) console.log(`   console errors: ${w.errors.slice(0, 3).join(' | ')}`);
  const events = Number(/bench-(\d+)/.exec(path.basename(file))?.[1]) || null; // pt-snap-gen --events N
  results.push({ file: path.basename(file), size_mib: size, events, native: n, browser: w });
  save();
}
console.log('\n| file | events | native import (s) | drop→peaks (s) | ratio | drop→ready (s) | ratio | drop→indexed (s) | ratio | peak memory, all renderers (MiB) | × file | the page\'s renderer (MiB) | × file | its private memory (MiB) | × file | settled (MiB) | same file again (s) |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of results) {
  const w = r.browser, m = w.memory;
  // Over drop → indexed: the import, then the indexes built after ready (the settled phase).
  const most = (k) => {
    const v = [m.import?.[k], m.settled?.[k]].filter((x) => x !== null && x !== undefined);
    return v.length ? Math.max(...v) : null;
  };
  const peak = most('renderer_rss_mib');
  const own = most('page_renderer_rss_mib');
  const own_private = most('page_private_mib');
  const again = w.again ? `${f2(w.again.cache_hit_s)} / ${f2(w.again.ready_s)} / ${f2(w.again.checked_s)}` : '—';
  const note = w.outcome === 'ok' ? '' : ` (${w.outcome}${w.drop_to_ready_s === null || w.drop_to_ready_s === undefined ? ': peak memory until it stopped' : ''})`;
  console.log(`| ${r.file} (${f0(r.size_mib)} MiB)${note} | ${f0(r.events)} | ${f2(r.native.wall_s)} | ${f2(w.drop_to_peaks_s)} | ${f2(ratio(w.drop_to_peaks_s, r.native.wall_s))}× | ` +
    `${f2(w.drop_to_ready_s)} | ${f2(ratio(w.drop_to_ready_s, r.native.wall_s))}× | ${f2(w.drop_to_indexed_s)} | ${f2(ratio(w.drop_to_indexed_s, r.native.wall_s))}× | ` +
    `${f0(peak)} | ${f2(ratio(peak, r.size_mib))}× | ${f0(own)} | ${f2(ratio(own, r.size_mib))}× | ` +
    `${f0(own_private)} | ${f2(ratio(own_private, r.size_mib))}× | ${f0(m.settled?.renderer_rss_mib)} | ${again} |`);
}
console.log('memory: VmRSS peaks over drop → indexed; "all renderers" sums every renderer process (Chromium keeps spare ones), "the page\'s" is the one running the page and its workers, its private memory that one\'s RssAnon + RssShmem; same file again: cache-hit / ready / its SHA-256 checked');
console.log(`results: ${path.join(outDir, 'results.json')}`);
