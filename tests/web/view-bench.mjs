// Benchmark (not a test) of `pt-snap view` (issue 36): from the command starting to the peaks
// on screen, beside the native `pt-snap import` of the same file and a drop of it on the app,
// in one run. Driven by scripts/view-bench, which builds target/release/pt-snap with the app
// built in and makes the input.
//
//   node tests/web/view-bench.mjs ROOT OUTDIR FILE [ROUNDS]
//
// Each round, in this order, every browser step in a fresh Chromium profile (nothing cached
// in OPFS) already started and showing a blank page:
//   native   `pt-snap import FILE` (spawn to exit);
//   view     the clock starts, `pt-snap view FILE --no-open --port 0` is spawned, the page is
//            sent to the URL it prints as soon as it prints it: until the peaks show;
//   drop     `pt-snap view` (no file: the app alone, served the same way) loaded and left
//            2 s to settle, then the clock starts and the file is set on the input;
//   at load  the clock starts as the app's URL is loaded, and the file is set on the input as
//            soon as the input exists: the page load is on the clock, as it is for view.
// "Peaks on screen" is the page's own time (a MutationObserver installed before the page's
// scripts run notes Date.now() when `[data-testid=engine-state]` first says peaks or ready),
// so it does not wait for Playwright. The peaks shown are checked against the native import's
// memory_peak. Results: OUTDIR/view-bench.json and a table on stdout.
//
// VIEW_BENCH_BEFORE=/path/to/an/older/pt-snap adds its `view` to each round, run the same way
// right after this one's: a change measured against the code before it, side by side.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launch, peaksShown } from './harness.mjs';

const [root, outDir, file, roundsArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: view-bench.mjs ROOT OUTDIR FILE [ROUNDS]');
  process.exit(2);
}
const rounds = Number(roundsArg ?? 3);
const cli = path.join(root, 'target/release/pt-snap');
const MiB = 1024 * 1024;
const timeoutMs = 600000;

function cleanEnv(home) {
  const env = { ...process.env, HOME: home };
  for (const k of ['PT_SNAP_DB_PATH', 'BROWSER', 'DISPLAY', 'WAYLAND_DISPLAY']) delete env[k];
  return env;
}

function native() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pt-snap-view-bench-native-'));
  try {
    const t0 = performance.now();
    const r = spawnSync(cli, ['import', file, '-o', dir, '--no-focus', '--json'],
      { env: cleanEnv(dir), cwd: dir, encoding: 'utf8', maxBuffer: 64 * MiB });
    const wall = (performance.now() - t0) / 1000;
    if (r.status !== 0) throw new Error(`native import failed: ${r.stderr}`);
    const db = path.join(dir, path.basename(file) + '.db');
    const peak = JSON.parse(execFileSync(cli, ['query', db, '--template-use', 'memory_peak', '--json'],
      { env: cleanEnv(dir), cwd: dir, encoding: 'utf8' })).rows[0];
    return { wall_s: wall, peak };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** `pt-snap view [FILE] --no-open --port 0`; resolves once it has printed its URL. */
function view(args, bin = cli) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pt-snap-view-bench-home-'));
  const child = spawn(bin, ['view', ...args, '--no-open', '--port', '0'], { env: cleanEnv(home), cwd: home });
  let stdout = '', stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const url = new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      stdout += d;
      const m = /http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{48}/.exec(stdout);
      if (m) resolve(m[0]);
    });
    child.on('exit', () => reject(new Error(`pt-snap view ended: ${stderr}`)));
  });
  const stop = () => { child.kill('SIGINT'); fs.rmSync(home, { recursive: true, force: true }); };
  return { url, stop };
}

/** Notes, in the page, when the peaks first show (Date.now()). */
const notePeaks = () => {
  window.__peaksAt = null;
  const seen = () => {
    const st = document.querySelector('[data-testid=engine-state]')?.dataset.value;
    if (window.__peaksAt === null && (st === 'peaks' || st === 'ready')) window.__peaksAt = Date.now();
    const err = document.querySelector('[data-testid=error]');
    if (err && !window.__error) window.__error = err.textContent;
  };
  new MutationObserver(seen).observe(document, { subtree: true, childList: true, attributes: true });
};

async function browser() {
  const browser = await launch(root, 'view-bench-web');
  const { ctx } = browser;
  await ctx.addInitScript(notePeaks);
  const page = ctx.pages()[0] ?? await ctx.newPage();
  await page.goto('about:blank');
  return {
    page,
    close: browser.close,
  };
}

async function peaksAfter(page, t0, want) {
  await page.waitForFunction(() => window.__peaksAt !== null || window.__error, null, { timeout: timeoutMs, polling: 100 });
  const { at, error } = await page.evaluate(() => ({ at: window.__peaksAt, error: window.__error }));
  if (at === null) throw new Error(`the page shows an error: ${error}`);
  await page.waitForSelector('[data-testid=peak-reserved]', { timeout: timeoutMs });
  const shown = await peaksShown(page);
  const equal = Object.keys(shown).every((k) => shown[k] === want[k]);
  return { s: (at - t0) / 1000, equal };
}

async function viewStep(want, bin = cli) {
  const b = await browser();
  const t0 = Date.now();
  const server = view([file], bin);
  try {
    await b.page.goto(await server.url);
    return await peaksAfter(b.page, t0, want);
  } finally {
    server.stop();
    await b.close();
  }
}

async function dropStep(want, atLoad) {
  const b = await browser();
  const server = view([]);
  try {
    const url = await server.url;
    let t0;
    if (atLoad) {
      t0 = Date.now();
      await b.page.goto(url, { waitUntil: 'commit' });
    } else {
      await b.page.goto(url, { waitUntil: 'networkidle' });
      await b.page.waitForSelector('[data-testid=file-input]', { state: 'attached' });
      await b.page.waitForTimeout(2000);
      t0 = Date.now();
    }
    await b.page.waitForSelector('[data-testid=file-input]', { state: 'attached', timeout: timeoutMs });
    await b.page.setInputFiles('[data-testid=file-input]', file);
    return await peaksAfter(b.page, t0, want);
  } finally {
    server.stop();
    await b.close();
  }
}

const f2 = (x) => (x == null ? '—' : x.toFixed(2));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length ? s[(s.length - 1) >> 1] : null; };
fs.mkdirSync(outDir, { recursive: true });
const size = fs.statSync(file).size / MiB;
console.log(`== ${path.basename(file)} (${size.toFixed(1)} MiB), ${rounds} rounds  ${new Date().toISOString()}  load ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
const results = [];
for (let r = 0; r < rounds; r++) {
  const n = native();
  const row = { round: r + 1, native_s: n.wall_s };
  const before = process.env.VIEW_BENCH_BEFORE && path.resolve(process.env.VIEW_BENCH_BEFORE);
  const steps = [['view', () => viewStep(n.peak)], ...(before ? [['before', () => viewStep(n.peak, before)]] : []),
    ['drop', () => dropStep(n.peak, false)], ['at_load', () => dropStep(n.peak, true)]];
  for (const [name, step] of steps) {
    try {
      const m = await step();
      row[`${name}_s`] = m.s;
      row[`${name}_peaks_equal`] = m.equal;
    } catch (e) {
      row[`${name}_error`] = String(e.message ?? e).split('\n')[0];
    }
  }
  results.push(row);
  console.log(`   round ${r + 1}: native ${f2(row.native_s)} s; view→peaks ${f2(row.view_s)} s (${f2(row.view_s / row.native_s)}×)` +
    `; drop→peaks ${f2(row.drop_s)} s (${f2(row.drop_s / row.native_s)}×); drop at load→peaks ${f2(row.at_load_s)} s (${f2(row.at_load_s / row.native_s)}×)` +
    (before ? `; view of the older binary→peaks ${f2(row.before_s)} s (${f2(row.before_s / row.native_s)}×)` : '') +
    `; peaks equal the CLI: ${[row.view_peaks_equal, ...(before ? [row.before_peaks_equal] : []), row.drop_peaks_equal, row.at_load_peaks_equal].join('/')}` +
    `${['view', 'before', 'drop', 'at_load'].map((k) => row[`${k}_error`] ? ` ${k} failed: ${row[`${k}_error`]}` : '').join('')}`);
  fs.writeFileSync(path.join(outDir, 'view-bench.json'), JSON.stringify({ file, size_mib: size, results }, null, 1) + '\n');
}
const ratios = (k) => results.filter((r) => r[`${k}_s`] != null).map((r) => r[`${k}_s`] / r.native_s);
console.log('\n| file | native import (s) | view → peaks (s) | ratio | drop → peaks (s) | ratio | drop at load → peaks (s) | ratio |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of results) {
  console.log(`| ${path.basename(file)} (${size.toFixed(0)} MiB), round ${r.round} | ${f2(r.native_s)} | ${f2(r.view_s)} | ${f2(r.view_s / r.native_s)}× | ${f2(r.drop_s)} | ${f2(r.drop_s / r.native_s)}× | ${f2(r.at_load_s)} | ${f2(r.at_load_s / r.native_s)}× |`);
}
console.log(`\nmedian ratios to the native import: view ${f2(median(ratios('view')))}×, drop ${f2(median(ratios('drop')))}×, drop at load ${f2(median(ratios('at_load')))}×` +
  (process.env.VIEW_BENCH_BEFORE ? `; the older binary's view ${f2(median(ratios('before')))}×` : ''));
const bad = results.some((r) => ['view', 'before', 'drop', 'at_load'].some((k) => r[`${k}_error`] || r[`${k}_peaks_equal`] === false));
process.exit(bad ? 1 : 0);
