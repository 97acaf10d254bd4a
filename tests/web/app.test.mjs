// The browser app end to end in Chromium: import a pickle in the worker, open a CLI-made .db,
// compare the peaks with the CLI's memory_peak, use every view (timeline zoom/pan/select,
// memory tree, active blocks, leak candidates, freed lifetimes, templates, SQL), follow deep
// links, download the .db and check it with the CLI, refuse bad and hostile files with the
// CLI's code and message, take files by their content (gzip-compressed JSON, a pickle named
// .txt), offer a lenient import when the strict replay refuses a trace and mark its database,
// cancel a running import, and never request anything outside the served origin.
// Screenshots of every view go to target/web/.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import zlib from 'node:zlib';
import path from 'node:path';
import { launch, check, eq, eqPeaks, ok, checkClean, finish } from './harness.mjs';

const [url, root] = process.argv.slice(2);
const out = path.join(root, 'target/web');
const read = (name) => JSON.parse(fs.readFileSync(path.join(out, name), 'utf8'));
const expected = read('expected-peak.json').rows[0];
const cliErrors = {
  hostile: read('expected-hostile.json').error,
  truncated: read('expected-truncated.json').error,
  zip: read('expected-zip.json').error,
  overlapStrict: read('expected-overlap-strict.json').error,
  notDb: read('expected-not-a-db.json').error,
};
const cliBin = path.join(root, 'target/debug/pt-snap');
const cliDb = path.join(out, 'fixture.pkl.db');
/** The CLI's answer to a template on the CLI-made database. */
function cli(template, params = {}, extra = []) {
  const args = ['query', cliDb, '--template-use', template, '--json', '--exact-total', ...extra];
  if (Object.keys(params).length) args.push('--params', JSON.stringify(params));
  return JSON.parse(execFileSync(cliBin, args, { maxBuffer: 64 << 20 }));
}

const browser = await launch(root, 'web', {
  origin: new URL(url).origin, acceptDownloads: true, viewport: { width: 1280, height: 900 },
});
const { ctx, errors, watch } = browser;
let page = ctx.pages()[0] ?? await ctx.newPage();
watch(page);

async function peaks(p = page) {
  await p.waitForSelector('[data-testid=peak-reserved]', { timeout: 120000 });
  await eqPeaks(p, expected);
}
/** The peak cards show `want` (a memory_peak row) once they have caught up. */
async function peaksAre(p, want, what) {
  const values = () => p.evaluate(() => ['allocated', 'active', 'reserved'].map((n) => Number(document.querySelector(`[data-testid=peak-${n}]`)?.dataset.value)));
  const expect = ['allocated', 'active', 'reserved'].map((n) => want[`peak_${n}`]);
  await p.waitForFunction((e) => ['allocated', 'active', 'reserved'].every((n, i) => document.querySelector(`[data-testid=peak-${n}]`)?.dataset.value === String(e[i])), expect, { timeout: 10000 })
    .catch(() => {});
  eq(JSON.stringify(await values()), JSON.stringify(expect), `${what} peaks (allocated, active, reserved)`);
}
const shot = (name, p = page) => p.screenshot({ path: path.join(out, `${name}.png`), fullPage: true });
/** Records the page's main-thread long tasks (and when it first saw chosen files) from its load on. */
const observeLongTasks = (p) => p.addInitScript(() => {
  window.__long = [];
  new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__long.push([Math.round(e.startTime), Math.round(e.duration)]); })
    .observe({ type: 'longtask', buffered: true });
  window.addEventListener('change', () => { window.__from ??= performance.now(); }, true);
});
/** The long tasks `observeLongTasks` recorded that started at or after `from` (page time). */
const longTasksSince = async (p, from) => (await p.evaluate(() => window.__long)).filter(([start]) => start >= from);
/** A new watched page that records its long tasks (`observeLongTasks`), loaded and left 500 ms to settle before a timed drop. */
async function longTaskPage() {
  const p = await ctx.newPage();
  watch(p);
  await observeLongTasks(p);
  await p.goto(url);
  await p.waitForTimeout(500);
  return p;
}
const tab = async (key) => { await page.click(`[data-testid=tab-${key}]`); await page.waitForFunction((k) => location.hash.includes(`view=${k}`), key); };
const hashOf = (p = page) => Object.fromEntries(new URL(p.url()).hash.slice(1).split('&').filter(Boolean).map((kv) => kv.split('=')));
const fgText = () => page.textContent('.ptsnap-fg');
const timelineWindow = async () => (await page.getAttribute('[data-testid=timeline]', 'data-window')).split('-').map(Number);
/** A new watched page with `file` (in target/web) dropped on it and its database ready. */
async function pageShowing(file, timeout) {
  const p = await ctx.newPage();
  watch(p);
  await p.goto(url);
  await p.setInputFiles('[data-testid=file-input]', path.join(out, file));
  await p.waitForSelector('[data-testid=engine-state][data-value=ready]', { timeout });
  return p;
}
/**
 * The workers the page runs, told apart by script: the wasm workers that hold files (`kept`:
 * those of the set `before`, `added`: the others) and the read helpers the page starts for
 * them. Playwright lists a worker from its start until its `close` event.
 */
function workerCensus(p, before = new Set()) {
  const script = (w) => w.url().split('/').pop();
  const all = p.workers();
  const wasm = all.filter((w) => script(w).startsWith('pt-snap-worker'));
  return {
    scripts: all.map(script),
    wasm,
    kept: wasm.filter((w) => before.has(w)).length,
    added: wasm.filter((w) => !before.has(w)).length,
    helpers: all.filter((w) => script(w).startsWith('read-worker')).length,
  };
}
/**
 * The census once `done(census)` holds, or the last one after `ms`. Awaited, never sampled
 * once: a worker's start and its `close` event both lag the page on a loaded machine.
 */
async function workersSettle(p, done, before, ms = 30000) {
  const until = Date.now() + ms;
  let c = workerCensus(p, before);
  while (!done(c) && Date.now() < until) {
    await p.waitForTimeout(100);
    c = workerCensus(p, before);
  }
  return c;
}

await page.goto(url);
await page.waitForSelector('[data-testid=file-input]', { state: 'attached' });
await shot('01-welcome');

await check('pickle imported in the worker shows the CLI peaks', async () => {
  const t0 = Date.now();
  await page.setInputFiles('[data-testid=file-input]', path.join(out, 'fixture.pkl'));
  await peaks();
  console.log(`     drop to peaks: ${Date.now() - t0} ms`);
  const text = await page.textContent('[data-testid=peak-allocated]');
  ok(/MiB|GiB/.test(text), `peak not in human units: ${text}`);
  eq(await page.getAttribute('[data-testid=peak-allocated]', 'title'), `${expected.peak_allocated.toLocaleString('en-US')} bytes`, 'exact bytes on hover');
  ok((await page.textContent('[data-testid=metadata]')).includes('fixture.pkl'), 'metadata does not name the source');
  await shot('02-overview');
});

await check('timeline: downsampled with extremes kept, peaks marked', async () => {
  const svg = '[data-testid=timeline]';
  const [lo, hi] = await timelineWindow();
  const buckets = Number(await page.getAttribute(svg, 'data-buckets'));
  ok(buckets <= 1000 && buckets < hi - lo + 1, `expected downsampling, got ${buckets} columns for ${hi - lo + 1} events`);
  for (const name of ['allocated', 'active', 'reserved']) {
    eq(Number(await page.getAttribute(`${svg} g[data-peak=${name}]`, 'data-event')), expected[`peak_${name}_event_id`], `${name} peak mark`);
  }
  // The highest point of each drawn line is its peak's dot: min/max buckets lost nothing.
  const tops = await page.evaluate(() => Object.fromEntries(['allocated', 'active', 'reserved'].map((n) => {
    const ys = document.querySelector(`polyline.tl.${n}`).getAttribute('points').trim().split(' ').map((p) => Number(p.split(',')[1]));
    return [n, [Math.min(...ys), Number(document.querySelector(`g[data-peak=${n}] .peak-dot`).getAttribute('y1'))]];
  })));
  for (const [n, [top, dot]] of Object.entries(tops)) ok(Math.abs(top - dot) < 0.11, `${n}: line top ${top} vs peak dot ${dot}`);
});

await check('timeline: wheel, keyboard, drag and buttons zoom and pan; reset', async () => {
  const svg = page.locator('[data-testid=timeline]');
  const [lo, hi] = await timelineWindow();
  const box = await svg.boundingBox();
  await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2);
  await page.mouse.wheel(0, -300);
  await page.waitForFunction(([l, h]) => document.querySelector('[data-testid=timeline]').dataset.window !== `${l}-${h}`, [lo, hi]);
  const [zl, zh] = await timelineWindow();
  ok(zh - zl < hi - lo && zl > lo, `wheel did not zoom around the pointer: ${zl}-${zh}`);
  await svg.focus();
  await page.keyboard.press('+');
  await page.waitForFunction((w) => document.querySelector('[data-testid=timeline]').dataset.window !== w, `${zl}-${zh}`);
  const [kl, kh] = await timelineWindow();
  ok(kh - kl < zh - zl, `+ did not zoom in: ${kl}-${kh}`);
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction((w) => document.querySelector('[data-testid=timeline]').dataset.window !== w, `${kl}-${kh}`);
  const [rl, rh] = await timelineWindow();
  ok(rl > kl && rh - rl === kh - kl, `→ did not pan right: ${rl}-${rh}`);
  const b2 = await svg.boundingBox();
  await page.mouse.move(b2.x + b2.width * 0.7, b2.y + 40);
  await page.mouse.down();
  await page.mouse.move(b2.x + b2.width * 0.4, b2.y + 40, { steps: 5 });
  await page.mouse.up();
  const [dl, dh] = await timelineWindow();
  ok(dl > rl && dh - dl === rh - rl, `dragging left did not pan right: ${dl}-${dh} after ${rl}-${rh}`);
  await shot('03-timeline-zoomed');
  await page.click('[data-testid=timeline-reset]');
  await page.waitForFunction((w) => document.querySelector('[data-testid=timeline]').dataset.window === w, `${lo}-${hi}`);
  await svg.focus();
  await page.keyboard.press('-');
  eq((await timelineWindow()).join('-'), `${lo}-${hi}`, 'zooming out stops at all events');
});

await check('timeline click selects an event and changes the flamegraph', async () => {
  await page.click('[data-testid=select-peak-active]');
  await page.waitForSelector(`[data-testid=selected-event][data-event="${expected.peak_active_event_id}"]`);
  await page.click('[data-testid=open-tree]');
  await page.waitForFunction((e) => document.querySelector('.ptsnap-fg')?.textContent.includes(`event ${e}`), expected.peak_active_event_id, { timeout: 30000 });
  const before = await fgText();
  await tab('overview');
  const box = await page.locator('[data-testid=timeline]').boundingBox();
  await page.mouse.click(box.x + box.width * 0.25, box.y + box.height / 2);
  await page.waitForFunction((e) => { const s = document.querySelector('[data-testid=selected-event]'); return s?.dataset.event && s.dataset.event !== String(e); }, expected.peak_active_event_id);
  const chosen = Number(await page.getAttribute('[data-testid=selected-event]', 'data-event'));
  eq(Number(hashOf().event), chosen, 'selected event in the URL');
  await page.waitForSelector('[data-testid=timeline-selected]', { state: 'attached' });
  // Shift+→ moves the selection from the keyboard.
  await page.locator('[data-testid=timeline]').focus();
  await page.keyboard.press('Shift+ArrowRight');
  await page.waitForFunction((e) => Number(document.querySelector('[data-testid=selected-event]')?.dataset.event) > e, chosen);
  await page.keyboard.press('Shift+ArrowLeft');
  await page.waitForFunction((e) => document.querySelector('[data-testid=selected-event]')?.dataset.event === String(e), chosen);
  await shot('04-selected');
  await page.click('[data-testid=open-tree]');
  await page.waitForFunction((e) => document.querySelector('.ptsnap-fg')?.textContent.includes(`event ${e}`), chosen, { timeout: 30000 });
  ok((await fgText()) !== before, 'flamegraph did not change');
  eq(await page.inputValue('[data-testid=tree-event]'), String(chosen), 'tree event input');
  await shot('05-tree');
});

await check('peak report lists callstack groups', async () => {
  await tab('peak');
  await page.waitForSelector('table.groups tbody tr');
  await page.click('table.groups tbody tr summary');
  await shot('06-peak');
});

await check("stacks='all' capture: peak groups named by user code, the flamegraph's rows under the root Python frames", async () => {
  // What a person must never read as a group's name: the unwinder, CPython's C, the entry.
  const runtime = /torch::unwind|CapturedTraceback|Py_BytesMain|_PyEval|pyrun_file|_start|\?\?/;
  const want = fs.readFileSync(path.join(out, 'expected-cs336-peak.txt'), 'utf8')
    .split('\n').filter((l) => l.startsWith('      where: ')).map((l) => l.slice('      where: '.length));
  ok(want.length >= 10, `the CLI named ${want.length} groups`);
  const p = await ctx.newPage();
  watch(p);
  await p.goto(url);
  await p.waitForSelector('[data-testid=file-input]', { state: 'attached' });
  await p.setInputFiles('[data-testid=file-input]', path.join(out, 'cs336.pickle'));
  await p.waitForFunction(() => document.querySelector('.opened strong')?.textContent === 'cs336.pickle', null, { timeout: 120000 });
  await p.waitForSelector('[data-testid=peak-reserved]', { timeout: 120000 });
  await p.click('[data-testid=tab-peak]');
  await p.waitForSelector('table.groups tbody tr', { timeout: 120000 });
  const rows = await p.$$eval('table.groups tbody tr', (trs) => trs.map((tr) => ({
    category: tr.children[4].textContent, label: tr.querySelector('[data-testid=stack-label]')?.textContent ?? '',
  })));
  const labels = rows.filter((r) => r.category === 'dynamic_live_at_event').map((r) => r.label);
  eq(JSON.stringify(labels), JSON.stringify(want), 'labels: the CLI\'s --stacks python');
  for (const l of labels) ok(!runtime.test(l), `a group labelled by a runtime frame: ${l}`);
  ok(labels.some((l) => /^forward \(adapters\.py:\d+\) → /.test(l)), `no label names the model's forward: ${labels.join(' | ')}`);
  ok(new Set(labels).size > labels.length / 2, `labels do not tell groups apart: ${labels.join(' | ')}`);
  // Opened, a group shows its Python frames first, every frame one click further.
  const first = rows.findIndex((r) => r.category === 'dynamic_live_at_event');
  const tr = p.locator('table.groups tbody tr').nth(first);
  await tr.locator('summary[data-testid=stack-label]').click();
  const python = await tr.locator('[data-testid=stack-python] li').allTextContents();
  ok(python.length > 0 && python.every((l) => /\(.*\.py:\d+\)$/.test(l)), `native frames among the Python ones: ${python.join(' | ')}`);
  ok(python[0] === '<module> (benchmarking_script.py:169)', `outermost Python frame: ${python[0]}`);
  await shot('30-cs336-peak', p);
  // The memory tree at the peak opens in the Python frames view.
  await p.click('[data-testid=tab-tree]');
  await p.waitForSelector('[data-testid=flamegraph] .fg-graph [data-testid=fg-frame]', { timeout: 120000 });
  ok(await p.isChecked('[data-testid=flamegraph] [data-testid=fg-python]'), 'the Python frames view is not on');
  const top = () => p.$$eval('[data-testid=flamegraph] [data-testid=fg-frame][aria-level="2"]',
    (els) => els.map((e) => ({ id: e.dataset.nodeId, label: e.getAttribute('aria-label') })));
  const under = await top();
  ok(under.length > 0, 'nothing under the root');
  for (const f of under) {
    if (['static', 'preexisting_live_at_event', 'empty_callstack', 'missing'].includes(f.id)) continue;
    ok(/\.py:\d+:/.test(f.label), `a row under the root is no Python frame: ${f.label}`);
  }
  await shot('31-cs336-tree-python', p);
  const topIsPython = () => p.evaluate(() => [...document.querySelectorAll('[data-testid=flamegraph] [data-testid=fg-frame][aria-level="2"]')]
    .every((e) => /\.py:\d+:/.test(e.getAttribute('aria-label')) || ['static', 'preexisting_live_at_event'].includes(e.dataset.nodeId)));
  // The noise fold alone takes CPython's frames away too (this capture names their sources).
  await p.uncheck('[data-testid=flamegraph] [data-testid=fg-python]');
  await p.waitForFunction(() => !document.querySelector('[data-testid=flamegraph] [data-testid=fg-python]').checked);
  ok(await topIsPython(), 'the noise fold leaves CPython frames on top');
  // Both off: the process entry is back on top.
  await p.uncheck('[data-testid=flamegraph] [data-testid=fg-fold]');
  await p.waitForFunction(() => [...document.querySelectorAll('[data-testid=flamegraph] [data-testid=fg-frame][aria-level="2"]')]
    .some((e) => /_start/.test(e.getAttribute('aria-label'))));
  ok(!(await topIsPython()), 'unfolded, the process entry is not on top');
  await shot('32-cs336-tree-all-frames', p);
  await p.close();
});

await check('active blocks at the selected event: the CLI total, pages, stacks', async () => {
  const event = expected.peak_active_event_id;
  await page.evaluate((e) => { location.hash = `#device=0&event=${e}&view=blocks`; }, event);
  await page.waitForSelector('[data-testid=blocks-table] tbody tr');
  ok((await page.textContent('[data-testid=blocks-event]')).includes(`event ${event}`), 'blocks view names the event');
  const want = cli('active_blocks_at_event', { event_id: event, limit: 50 });
  eq(Number(await page.getAttribute('[data-testid=blocks-summary]', 'data-total')), want.total, 'active block count');
  const firstIds = await page.$$eval('[data-testid=blocks-table] tbody tr td:first-child', (tds) => tds.map((t) => Number(t.textContent)));
  eq(JSON.stringify(firstIds), JSON.stringify(want.rows.map((r) => r.id)), 'first page of blocks');
  const title = await page.getAttribute('[data-testid=blocks-table] tbody tr td:nth-child(2) span', 'title');
  eq(title, `${want.rows[0].size.toLocaleString('en-US')} bytes`, 'exact size on hover');
  if (want.total > 50) {
    await page.click('[data-testid=page-next]');
    await page.waitForFunction(() => document.querySelector('[data-testid=page-label]')?.textContent.startsWith('page 2'));
    const page2 = cli('active_blocks_at_event', { event_id: event, limit: 50, offset: 50 });
    await page.waitForFunction((id) => document.querySelector('[data-testid=blocks-table] tbody tr td')?.textContent === String(id), page2.rows[0].id);
    await page.click('[data-testid=page-prev]');
  }
  // Newest allocation first: its stack is the CLI's callstack of that allocation event.
  await page.selectOption('[data-testid=blocks-order]', 'allocEventId');
  const top = cli('active_blocks_at_event', { event_id: event, order_by: 'allocEventId', limit: 1 }).rows[0];
  await page.waitForFunction((id) => document.querySelector('[data-testid=blocks-table] tbody tr td')?.textContent === String(id), top.id);
  await page.click('[data-testid=blocks-table] tbody tr:first-child details.stack summary');
  const stack = await page.textContent('[data-testid=stack-text]');
  eq(stack, cli('event', { id: top.allocEventId }).rows[0].callstack, 'allocation stack');
  await shot('07-blocks');
});

await check('leak candidates: the CLI count, sizes in human units, stacks', async () => {
  await tab('leaks');
  await page.waitForSelector('[data-testid=leaks-table] tbody tr');
  const want = cli('leak_detection');
  eq(Number(await page.getAttribute('[data-testid=leaks-summary]', 'data-total')), want.total, 'leak candidates');
  const sizes = await page.$$eval('[data-testid=leaks-table] tbody tr td:nth-child(2) span', (s) => s.slice(0, 5).map((x) => [x.textContent, x.title]));
  sizes.forEach(([text, t], i) => {
    ok(/[KMG]iB| B$/.test(text), `size not in human units: ${text}`);
    eq(t, `${want.rows[i].size.toLocaleString('en-US')} bytes`, `leak ${i} exact size`);
  });
  const rows = await page.$$eval('[data-testid=leaks-table] tbody tr', (r) => r.length);
  eq(rows, Math.min(50, want.total), 'one page of leaks');
  await page.click('[data-testid=leaks-table] tbody tr:first-child details.stack summary');
  eq(await page.textContent('[data-testid=stack-text]'), cli('event', { id: want.rows[0].allocEventId }).rows[0].callstack, 'leak stack');
  await page.fill('[data-testid=leaks-min-size]', String(want.rows[2].size));
  await page.press('[data-testid=leaks-min-size]', 'Enter');
  const bigger = cli('leak_detection', { min_size: want.rows[2].size });
  await page.waitForFunction((n) => document.querySelector('[data-testid=leaks-summary]')?.dataset.total === String(n), bigger.total);
  await page.fill('[data-testid=leaks-min-size]', '0');
  await page.press('[data-testid=leaks-min-size]', 'Enter');
  await page.waitForFunction((n) => document.querySelector('[data-testid=leaks-summary]')?.dataset.total === String(n), want.total);
  await shot('08-leaks');
});

await check('freed-block lifetimes: the CLI buckets', async () => {
  await tab('lifetimes');
  await page.waitForSelector('[data-testid=lifetimes-table] tbody tr');
  const want = cli('freed_block_lifetime').rows;
  const got = await page.$$eval('[data-testid=lifetimes-table] tbody tr', (rs) => rs.map((r) => [r.cells[0].textContent, Number(r.cells[1].textContent.replace(/,/g, '')), r.cells[3].querySelector('span').title]));
  eq(JSON.stringify(got), JSON.stringify(want.map((r) => [r.lifetime_events, r.block_count, `${r.size_bytes.toLocaleString('en-US')} bytes`])), 'lifetime buckets');
  await shot('09-lifetimes');
});

await check('template runner runs a template with parameters', async () => {
  await tab('templates');
  await page.selectOption('[data-testid=template-select]', 'active_memory_callstack_at_event');
  await page.fill('[data-param=event_id]', String(expected.peak_active_event_id));
  await page.fill('[data-param=top_n]', '5');
  await page.click('[data-testid=run-template]');
  await page.waitForSelector('[data-testid=result-table] tbody tr');
  const cmd = await page.textContent('[data-testid=cli-command]');
  ok(cmd.includes('--template-use active_memory_callstack_at_event') && cmd.includes('"top_n":5'), `cli: ${cmd}`);
  await shot('10-templates');
});

await check('SQL console runs read-only SQL and refuses writes', async () => {
  await tab('sql');
  await page.fill('[data-testid=sql-input]', 'SELECT max(active) AS m FROM trace_entry_0');
  await page.click('[data-testid=run-sql]');
  await page.waitForSelector('[data-testid=result-table] tbody tr');
  eq(Number(await page.textContent('[data-testid=result-table] tbody td')), expected.peak_active, 'max(active)');
  await page.fill('[data-testid=sql-input]', 'DELETE FROM trace_entry_0');
  await page.click('[data-testid=run-sql]');
  await page.waitForSelector('[data-testid=view-error]');
  await shot('11-sql');
  // Nor what would change the connection itself, which stays writable for the indexes.
  for (const refused of ['PRAGMA query_only = 0', "ATTACH 'elsewhere.db' AS elsewhere", 'BEGIN']) {
    await runSql(refused);
    await page.waitForFunction(() => document.querySelector('[data-testid=view-error]')?.textContent.includes('ATTACH'));
  }
  await runSql("SELECT (SELECT count(*) FROM pragma_database_list WHERE name NOT IN ('main', 'temp')) || ' ' || (SELECT query_only FROM pragma_query_only) AS s");
  await page.waitForFunction(() => document.querySelector('[data-testid=result-table] tbody td')?.textContent === '0 1');
});

await check('downloaded .db answers the same in the CLI', async () => {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=download-db]')]);
  const file = path.join(out, 'downloaded.db');
  await dl.saveAs(file);
  const row = JSON.parse(execFileSync(cliBin, ['query', file, '--template-use', 'memory_peak', '--json'])).rows[0];
  eq(JSON.stringify(row), JSON.stringify(expected), 'memory_peak of the downloaded db');
  // The digest is computed beside the import (by the helper worker that reads the file
  // ahead, in JS): the CLI's reuse check and provenance rest on it.
  const meta = JSON.parse(execFileSync(cliBin, ['metadata', file, '--json'])).metadata;
  const digest = createHash('sha256').update(fs.readFileSync(path.join(out, 'fixture.pkl'))).digest('hex');
  eq(meta.source_sha256, digest, 'source_sha256 of the downloaded db');
  eq(meta.source_size, fs.statSync(path.join(out, 'fixture.pkl')).size, 'source_size of the downloaded db');
  // The server's log (tests/web/run.sh) shows the helper was fetched: it hashed the file and
  // handed it to the decoder (shared slots; this page is cross-origin isolated).
  ok(fs.readFileSync(path.join(out, 'http.log'), 'utf8').includes('GET /read-worker.js'), 'read-ahead helper fetched');
});

await check('deep link: device, event and view restored after the file loads, and on hashchange', async () => {
  const p = await ctx.newPage();
  watch(p);
  const event = expected.peak_reserved_event_id;
  await p.goto(`${url}#device=0&event=${event}&view=blocks`);
  await p.waitForSelector('[data-testid=file-input]', { state: 'attached' });
  await p.setInputFiles('[data-testid=file-input]', cliDb);
  await peaks(p);
  await p.waitForSelector('[data-testid=blocks-table] tbody tr');
  ok((await p.textContent('[data-testid=blocks-event]')).includes(`after event ${event}`), 'blocks view at the linked event');
  eq(await p.getAttribute('[data-testid=tab-blocks]', 'aria-selected'), 'true', 'linked view selected');
  // Editing the link moves the open page.
  const other = expected.peak_active_event_id;
  await p.evaluate((e) => { location.hash = `#device=0&event=${e}&view=tree`; }, other);
  await p.waitForFunction((e) => document.querySelector('.ptsnap-fg')?.textContent.includes(`event ${e}`), other, { timeout: 30000 });
  eq(await p.inputValue('[data-testid=tree-event]'), String(other), 'tree at the linked event');
  // An event outside the trace falls back to the active peak instead of failing.
  await p.evaluate(() => { location.hash = '#device=0&event=99999999&view=tree'; });
  await p.waitForFunction(() => !location.hash.includes('99999999'));
  await p.waitForFunction((e) => document.querySelector('.ptsnap-fg')?.textContent.includes(`event ${e}`), expected.peak_active_event_id, { timeout: 30000 });
  // Choosing a view writes it back.
  await p.click('[data-testid=tab-leaks]');
  await p.waitForFunction(() => location.hash.includes('view=leaks'));
  eq(hashOf(p).device, '0', 'device in the URL');
  await shot('12-deep-link', p);
  // Another file keeps the view, but the event belonged to the file before.
  await p.evaluate((e) => { location.hash = `#device=0&event=${e}&view=leaks`; }, other);
  await p.waitForFunction((e) => location.hash.includes(`event=${e}`), other);
  await p.setInputFiles('[data-testid=file-input]', path.join(out, 'fixture.pkl'));
  await p.waitForFunction(() => document.querySelector('.opened strong')?.textContent === 'fixture.pkl', null, { timeout: 120000 });
  await p.waitForFunction(() => location.hash === '#device=0&view=leaks');
  await p.close();
});

await check('bad and hostile files: the CLI code and message, page still works', async () => {
  const expectError = async (file, err, what) => {
    await page.setInputFiles('[data-testid=file-input]', path.join(out, file));
    await page.waitForFunction((c) => document.querySelector('[data-testid=error-code]')?.textContent === c
      && document.querySelector('[data-testid=error-message]')?.textContent, err.code, { timeout: 60000 });
    eq(await page.textContent('[data-testid=error-code]'), err.code, `${what} code`);
    eq(await page.textContent('[data-testid=error-message]'), err.message, `${what} message`);
  };
  await expectError('hostile.pkl', cliErrors.hostile, 'hostile pickle');
  // Under it, what to do, in the page's words: the CLI's hint names a flag the page has not.
  ok(/--[a-z]/.test(cliErrors.hostile.hint), `the CLI's hint names no flag: ${cliErrors.hostile.hint}`);
  const hint = await page.textContent('[data-testid=error] [data-testid=error-hint]');
  ok(hint.length > 0 && !hint.includes('--'), `the hint on the page: ${hint}`);
  await shot('13-hostile');
  await page.click('[data-testid=dismiss-error]');
  await expectError('truncated.pkl', cliErrors.truncated, 'truncated pickle');
  await page.click('[data-testid=dismiss-error]');
  await expectError('x.pt', cliErrors.zip, 'a ZIP archive named .pt');
  ok(cliErrors.zip.message.includes('ZIP archive'), `the CLI's refusal does not name a ZIP archive: ${cliErrors.zip.message}`);
  await shot('13-zip');
  await page.click('[data-testid=dismiss-error]');
  await expectError('not-a.db', cliErrors.notDb, 'not a database');
  // The file that was open stays open and answers.
  await tab('overview');
  await peaks();
});

await check('failed files leave no worker behind: after 16 refused drops, the shown file\'s worker and a spare', async () => {
  // Each refused file is imported by the spare, which fails fast, is ended, and is replaced.
  // A worker ended within milliseconds of its read helper's start or end could outlive its
  // end in Chromium, thread, heap and all (issue 34); the page starts the helpers itself.
  const p = await pageShowing('fixture.pkl', 120000);
  await p.waitForSelector('[data-testid=engine-indexes][data-value=done]', { state: 'attached', timeout: 120000 });
  // Shown from the cache by its name, size and time, it is hashed after: by then, once.
  await p.waitForFunction(() => document.querySelector('[data-testid=cache-hit]')?.dataset.value !== 'checking', null, { timeout: 60000 });
  const idleDone = (c) => c.wasm.length === 2 && c.helpers === 0;
  const idle = await workersSettle(p, idleDone);
  ok(idleDone(idle), `idle: the shown file's worker and a spare, no helper (${JSON.stringify(idle.scripts)})`);
  const before = new Set(idle.wasm);
  for (let i = 0; i < 16; i++) {
    await p.setInputFiles('[data-testid=file-input]', path.join(out, 'hostile.pkl'));
    await p.waitForFunction((c) => document.querySelector('[data-testid=error-code]')?.textContent === c, cliErrors.hostile.code, { timeout: 60000 });
    await p.click('[data-testid=dismiss-error]');
  }
  // The spare of before took the first drop and ended; the shown file's worker stays, and
  // the spare started after the last failure is the only other one.
  const settled = (c) => c.kept === 1 && c.added === 1 && c.helpers === 0;
  const after = await workersSettle(p, settled, before, 60000);
  ok(settled(after), `workers left behind: ${after.kept} of the idle two kept, ${after.added} new, ${after.helpers} helpers (${JSON.stringify(after.scripts)})`);
  eq(await p.textContent('.opened strong'), 'fixture.pkl', 'the shown file after the failures');
  await peaks(p);
  await p.close();
});

await check('files by content: gzip-compressed JSON (CLI peaks, its own SHA-256), a pickle named .txt', async () => {
  const p = await ctx.newPage();
  watch(p);
  await p.goto(url);
  await p.waitForSelector('[data-testid=file-input]', { state: 'attached' });
  const gz = zlib.gzipSync(fs.readFileSync(path.join(out, 'synth.json')));
  fs.writeFileSync(path.join(out, 'synth.json.gz'), gz);
  await p.setInputFiles('[data-testid=file-input]', path.join(out, 'synth.json.gz'));
  await p.waitForFunction(() => document.querySelector('.opened strong')?.textContent === 'synth.json.gz', null, { timeout: 120000 });
  for (const device of [0, 1]) {
    const want = read(`expected-synth-peak-${device}.json`).rows[0];
    await p.selectOption('[data-testid=device-select]', String(device));
    await p.waitForFunction((d) => location.hash.includes(`device=${d}`), device);
    await peaksAre(p, want, `synth.json.gz device ${device}`);
  }
  // The digest is of the file as given (compressed), as the CLI's is.
  const meta = await p.textContent('[data-testid=metadata]');
  ok(meta.includes(createHash('sha256').update(gz).digest('hex')), `metadata lacks the .gz file's SHA-256: ${meta}`);
  ok(meta.includes(`${gz.length} bytes`), `metadata lacks the .gz file's size: ${meta}`);
  eq(await p.$('[data-testid=lenient-notice]'), null, 'lenient notice on a strict import');
  await shot('18-json-gz', p);
  // A pickle's magic bytes are enough, whatever the name.
  await p.setInputFiles('[data-testid=file-input]', path.join(out, 'snapshot.txt'));
  await p.waitForFunction(() => document.querySelector('.opened strong')?.textContent === 'snapshot.txt', null, { timeout: 120000 });
  await p.selectOption('[data-testid=device-select]', '0');
  await peaks(p);
  await p.close();
});

await check('strict replay refuses a trace: the lenient offer imports it, and the page says so', async () => {
  const p = await ctx.newPage();
  watch(p);
  await p.goto(url);
  await p.waitForSelector('[data-testid=file-input]', { state: 'attached' });
  // A strict failure of another kind offers nothing.
  await p.setInputFiles('[data-testid=file-input]', path.join(out, 'truncated.pkl'));
  await p.waitForSelector('[data-testid=error]', { timeout: 60000 });
  eq(await p.$('[data-testid=lenient-offer]'), null, 'lenient offer for a truncated pickle');
  await p.setInputFiles('[data-testid=file-input]', path.join(out, 'overlap.json'));
  await p.waitForFunction((m) => document.querySelector('[data-testid=error-message]')?.textContent === m, cliErrors.overlapStrict.message, { timeout: 60000 });
  eq(await p.textContent('[data-testid=error-code]'), cliErrors.overlapStrict.code, 'strict failure code');
  await p.waitForSelector('[data-testid=lenient-offer]');
  ok((await p.textContent('[data-testid=lenient-offer]')).includes('applied from the trace alone'), 'the offer says what lenient means');
  eq(await p.$('[data-testid=error-hint]'), null, 'the offer in place of the hint, which says the same');
  await shot('19-lenient-offer', p);
  await p.click('[data-testid=import-lenient]');
  await p.waitForFunction(() => document.querySelector('.opened strong')?.textContent === 'overlap.json', null, { timeout: 120000 });
  eq(await p.$('[data-testid=error]'), null, 'error left after the lenient import');
  const issues = read('expected-overlap-lenient.json').replay.issues;
  ok(issues > 0, 'the CLI found no replay issues');
  await p.waitForSelector('[data-testid=lenient-notice]');
  eq(Number(await p.getAttribute('[data-testid=lenient-notice]', 'data-value')), issues, 'issues in the notice');
  ok((await p.textContent('[data-testid=lenient-notice]')).includes(`${issues} events could not be reconciled`), 'notice text');
  eq(await p.$('[data-testid=lenient-notice] button'), null, 'the notice cannot be dismissed');
  await peaksAre(p, read('expected-overlap-peak.json').rows[0], 'lenient');
  await shot('20-lenient-notice', p);
  // The downloaded database is lenient for the CLI too.
  const [dl] = await Promise.all([p.waitForEvent('download'), p.click('[data-testid=download-db]')]);
  const file = path.join(out, 'downloaded-lenient.db');
  await dl.saveAs(file);
  eq(JSON.parse(execFileSync(cliBin, ['metadata', file, '--json'])).replay?.issues, issues, 'CLI metadata of the downloaded db');
  // The notice stays with that database only.
  await p.setInputFiles('[data-testid=file-input]', path.join(out, 'fixture.pkl'));
  await p.waitForFunction(() => document.querySelector('.opened strong')?.textContent === 'fixture.pkl', null, { timeout: 120000 });
  await p.waitForSelector('[data-testid=lenient-notice]', { state: 'detached' });
  await p.close();
});

await check('a CLI-made .db opens with the same peaks', async () => {
  await page.setInputFiles('[data-testid=file-input]', cliDb);
  await page.waitForSelector('[data-testid=error]', { state: 'detached' });
  await peaks();
  await page.waitForFunction(() => document.querySelector('.opened strong')?.textContent === 'fixture.pkl.db');
  await shot('14-db');
});

await check('cancel stops a running import; the open file and its worker stay', async () => {
  // The open file's worker and the spare that will take the import (not a read helper of
  // theirs, which the page starts too).
  const before = new Set(workerCensus(page).wasm);
  ok(before.size >= 2, `expected the open file's worker and a spare, found ${before.size}`);
  const t0 = Date.now();
  await page.setInputFiles('[data-testid=file-input]', path.join(out, 'bench-1m.pickle'));
  // Cancel as soon as decoding shows (the whole import takes several seconds here).
  await page.waitForFunction(() => /decoding|replaying/.test(document.querySelector('[data-testid=import-progress]')?.textContent ?? ''), null, { timeout: 60000, polling: 20 });
  const closed = Promise.race([...before].map((w) => new Promise((res) => w.once('close', () => res(w)))));
  await page.click('[data-testid=cancel-import]');
  await Promise.race([closed, new Promise((_, rej) => setTimeout(() => rej(new Error('import worker not terminated within 5 s')), 5000))]);
  console.log(`     cancelled ${Date.now() - t0} ms after the drop; the import's worker was terminated`);
  await page.waitForSelector('[data-testid=import-progress]', { state: 'detached' });
  // Nothing of the cancelled import arrives later: the open database is still the old one,
  // and its worker still answers.
  await page.waitForTimeout(1500);
  eq(await page.textContent('.opened strong'), 'fixture.pkl.db', 'open file after cancel');
  eq(await page.$('[data-testid=error]'), null, 'no error after cancel');
  await peaks();
  await page.click('[data-testid=tab-sql]');
  await page.fill('[data-testid=sql-input]', 'SELECT count(*) AS n FROM trace_entry_0');
  await page.click('[data-testid=run-sql]');
  await page.waitForSelector('[data-testid=result-table] tbody tr', { timeout: 10000 });
  await page.click('[data-testid=tab-overview]');
  // The replacement worker imports the next file.
  await page.setInputFiles('[data-testid=file-input]', path.join(out, 'fixture.pkl'));
  await page.waitForFunction(() => document.querySelector('.opened strong')?.textContent === 'fixture.pkl', null, { timeout: 120000 });
  await peaks();
});

await check('300k events: the timeline stays downsampled and its tops are the peaks', async () => {
  const t0 = Date.now();
  await page.setInputFiles('[data-testid=file-input]', path.join(out, 'big.pickle'));
  await page.waitForFunction(() => /decoding|replaying/.test(document.querySelector('[data-testid=import-progress]')?.textContent ?? ''), null, { timeout: 60000, polling: 20 });
  await page.screenshot({ path: path.join(out, '15-importing.png') });
  await page.waitForFunction(() => document.querySelector('.opened strong')?.textContent === 'big.pickle', null, { timeout: 300000 });
  await page.waitForSelector('[data-testid=timeline] g[data-peak=active]', { state: 'attached' });
  console.log(`     big.pickle (33 MB, 300k events) drop to timeline: ${Date.now() - t0} ms`);
  const [lo, hi] = await timelineWindow();
  eq(hi - lo + 1, 300000, 'events on the timeline');
  ok(Number(await page.getAttribute('[data-testid=timeline]', 'data-buckets')) <= 1000, 'at most 1000 columns');
  // The highest point drawn from the downsampled series is each memory_peak value.
  const tops = await page.evaluate(() => Object.fromEntries(['allocated', 'active', 'reserved'].map((n) => {
    const ys = document.querySelector(`polyline.tl.${n}`).getAttribute('points').trim().split(' ').map((p) => Number(p.split(',')[1]));
    return [n, [Math.min(...ys), Number(document.querySelector(`g[data-peak=${n}] .peak-dot`).getAttribute('y1'))]];
  })));
  for (const [n, [top, dot]] of Object.entries(tops)) ok(Math.abs(top - dot) < 0.11, `${n}: line top ${top} vs peak dot ${dot}`);
  const box = await page.locator('[data-testid=timeline]').boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  const t1 = Date.now();
  await page.mouse.wheel(0, -300);
  await page.waitForFunction((w) => document.querySelector('[data-testid=timeline]').dataset.window !== w, `${lo}-${hi}`);
  console.log(`     zoom step over 300k events: ${Date.now() - t1} ms`);
  await shot('16-big');
});

await check('the bundled sample: the welcome button, then #sample in the URL brings it back', async () => {
  const samplePeaks = async (p, device) => {
    const want = read(`expected-sample-peak-${device}.json`).rows[0];
    await p.waitForFunction(() => document.querySelector('.opened strong')?.textContent === 'snapshot_with_multi_devices.pkl', null, { timeout: 120000 });
    await p.waitForSelector('[data-testid=peak-reserved]');
    for (const n of ['allocated', 'active', 'reserved']) {
      eq(Number(await p.getAttribute(`[data-testid=peak-${n}]`, 'data-value')), want[`peak_${n}`], `sample device ${device} peak_${n}`);
    }
  };
  const p = await ctx.newPage();
  watch(p);
  await p.goto(url);
  await p.click('[data-testid=open-sample]');
  await samplePeaks(p, 0);
  await p.waitForFunction(() => location.hash.startsWith('#sample&device=0'));
  await shot('17-sample', p);
  await p.close();
  const q = await ctx.newPage();
  watch(q);
  await q.goto(`${url}#sample&device=1&view=peak`);
  await samplePeaks(q, 1);
  eq(await q.getAttribute('[data-testid=tab-peak]', 'aria-selected'), 'true', 'linked view');
  await q.close();
});

/** The engine's state values the page showed, in order, from a fresh drop of `file`. */
async function engineStates(p, file, shotName = null) {
  await p.evaluate(() => {
    window.__states = [];
    window.__peaksAtPeaks = null;
    window.__indexes = [];
    const seen = () => {
      const i = document.querySelector('[data-testid=engine-indexes]')?.dataset.value;
      if (i && window.__indexes[window.__indexes.length - 1] !== i) window.__indexes.push(i);
      const v = document.querySelector('[data-testid=engine-state]')?.dataset.value;
      if (v && window.__states[window.__states.length - 1] !== v) {
        window.__states.push(v);
        if (v === 'peaks') window.__peaksAtPeaks = ['allocated', 'active', 'reserved'].map((n) => document.querySelector(`[data-testid=peak-${n}]`)?.dataset.value ?? null);
      }
    };
    window.__stateObserver?.disconnect();
    window.__stateObserver = new MutationObserver(seen);
    window.__stateObserver.observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-value'] });
  });
  await p.setInputFiles('[data-testid=file-input]', file);
  if (shotName) {
    await p.waitForSelector('[data-testid=engine-state][data-value=peaks]', { timeout: 60000, polling: 'raf' })
      .then(() => shot(shotName, p)).catch(() => {});
  }
  // The file shown before may have the same name and be ready: wait for this one's states.
  await p.waitForFunction(() => window.__states.includes('peaks') && window.__states[window.__states.length - 1] === 'ready'
    && !document.querySelector('[data-testid=import-progress]'), null, { timeout: 300000 }).catch(() => {});
  const seen = await p.evaluate(() => ({ states: window.__states, peaks: window.__peaksAtPeaks }));
  // The file shown before counts only until this one shows.
  seen.states = seen.states.slice(seen.states.indexOf('peaks') >= 0 ? seen.states.indexOf('peaks') : 0);
  return seen;
}

await check('allocation timeline: blocks stacked on the timeline\'s axis; hover names a block, click selects it in every view; zoom moves both', async () => {
  const p = await pageShowing('fixture.pkl', 60000);
  const chart = '[data-testid=allocations-chart]';
  await p.waitForSelector(`${chart}[data-bands]`, { timeout: 60000 });
  // By category first (the default): the legend, and the top band's category and rule.
  await p.waitForSelector('[data-testid=allocations-categories]');
  await p.locator(chart).scrollIntoViewIfNeeded();
  const topPixel = await p.evaluate((sel) => {
    const c = document.querySelector(sel);
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const r = c.getBoundingClientRect();
    const x = Math.floor(c.width / 2);
    for (let y = 0; y < c.height; y++) {
      if (d[(y * c.width + x) * 4 + 3] === 255) return { x: r.left + (x + 0.5) * r.width / c.width, y: r.top + (y + 2.5) * r.height / c.height };
    }
    return null;
  }, chart);
  ok(topPixel, 'something is drawn');
  await p.mouse.move(topPixel.x, topPixel.y);
  await p.waitForFunction(() => /block -?\d+ · (parameter|gradient|optimizer_state|activation|temporary|communication|cache\/workspace|unknown) \[[^\]]+\]/.test(document.querySelector('[data-testid=allocations-readout]').textContent));
  await shot('26-allocations-category', p);
  await p.selectOption('[data-testid=allocations-colour]', 'site');
  await p.waitForSelector('[data-testid=allocations-categories]', { state: 'detached' });
  await p.waitForSelector(`${chart}[data-colour=site]`);
  const live = Number(await p.getAttribute(chart, 'data-live'));
  const bands = Number(await p.getAttribute(chart, 'data-bands'));
  ok(bands > 0 && bands <= 500 && live >= bands, `kept ${bands} of ${live}`);
  eq(await p.getAttribute(chart, 'data-window'), await p.getAttribute('[data-testid=timeline]', 'data-window'), 'both charts show the same events');
  // A pixel of a kept block (coloured, not the folded band's grey), in page coordinates.
  const bandPixel = () => p.evaluate((sel) => {
    const c = document.querySelector(sel);
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const r = c.getBoundingClientRect();
    for (let x = Math.floor(c.width / 2); x < c.width; x += 3) {
      for (let y = c.height - 1; y >= 0; y--) {
        const i = (y * c.width + x) * 4;
        if (d[i + 3] === 255 && !(d[i] === 190 && d[i + 1] === 196) && !(d[i] === 20 && d[i + 1] === 24)) {
          return { x: r.left + (x + 0.5) * r.width / c.width, y: r.top + (y - 2.5) * r.height / c.height };
        }
      }
    }
    return null;
  }, chart);
  await p.locator(chart).scrollIntoViewIfNeeded();
  const at = await bandPixel();
  ok(at, 'a kept block is drawn');
  await p.mouse.move(at.x, at.y);
  await p.waitForFunction(() => /block -?\d+ · /.test(document.querySelector('[data-testid=allocations-readout]').textContent));
  const readout = await p.textContent('[data-testid=allocations-readout]');
  ok(/allocated (at event \d+|before the trace) · freed (at event \d+|never) · /.test(readout), `the readout names the block: ${readout}`);
  await shot('26-allocations-site', p);
  await p.mouse.click(at.x, at.y);
  await p.waitForSelector(`${chart}[data-selected]`);
  const alloc = /allocated at event (\d+)/.exec(readout);
  if (alloc) {
    // Its allocation event is the page's selected event: in the URL and the event readout.
    await p.waitForFunction((e) => location.hash.includes(`event=${e}`), alloc[1]);
  }
  // Zoom on the allocation chart moves the counter timeline too, and back.
  const before = await p.getAttribute(chart, 'data-window');
  await p.mouse.move(at.x, at.y);
  await p.mouse.wheel(0, -400);
  await p.waitForFunction(([sel, w]) => { const now = document.querySelector(sel).dataset.window; return now && now !== w; }, [chart, before], { timeout: 30000 });
  await p.waitForFunction((sel) => document.querySelector(sel).dataset.window === document.querySelector('[data-testid=timeline]').dataset.window, chart, { timeout: 30000 });
  // A drag on the allocation chart pans both.
  const zoomed = await p.getAttribute(chart, 'data-window');
  await p.mouse.move(at.x, at.y);
  await p.mouse.down();
  await p.mouse.move(at.x - 150, at.y, { steps: 5 });
  await p.mouse.up();
  await p.waitForFunction(([sel, w]) => { const now = document.querySelector(sel).dataset.window; return now && now !== w; }, [chart, zoomed], { timeout: 30000 });
  await p.waitForFunction((sel) => document.querySelector(sel).dataset.window === document.querySelector('[data-testid=timeline]').dataset.window, chart, { timeout: 30000 });
  await p.click('[data-testid=timeline-reset]');
  await p.waitForFunction(([sel, w]) => document.querySelector(sel).dataset.window === w, [chart, before], { timeout: 30000 });
  await p.selectOption('[data-testid=allocations-detail]', '100');
  await p.waitForFunction((sel) => Number(document.querySelector(sel).dataset.bands) <= 100, chart, { timeout: 30000 });
  await shot('27-allocations', p);
  await p.close();
});

await check('an OOM file: the banner with report oom\'s verdict, and the OOM view explaining every event', async () => {
  const want = read('expected-oom.json');
  const p = await ctx.newPage();
  watch(p);
  await p.goto(url);
  await p.setInputFiles('[data-testid=file-input]', path.join(out, 'oom.pkl'));
  await p.waitForSelector('[data-testid=oom-banner]', { timeout: 60000 });
  const first = want.events[0];
  eq(await p.getAttribute('[data-testid=oom-banner]', 'data-verdict'), first.verdict, 'the banner\'s verdict');
  ok((await p.textContent('[data-testid=oom-banner]')).includes(`event ${first.event_id}`), 'the banner names the event');
  await shot('28-oom-banner', p);
  await p.click('[data-testid=oom-explain]');
  await p.waitForSelector('[data-testid=oom-event]');
  const events = await p.$$eval('[data-testid=oom-event]', (es) => es.map((e) => [e.dataset.device, e.dataset.event, e.dataset.verdict]));
  eq(JSON.stringify(events), JSON.stringify(want.events.map((e) => [String(e.device), String(e.event_id), e.verdict])), 'every OOM, with the CLI\'s verdict');
  const verdict = await p.textContent('[data-testid=oom-event] >> nth=0 >> [data-testid=oom-verdict]');
  ok(verdict.includes(first.arithmetic), `the arithmetic: ${verdict}`);
  const cats = await p.$$eval('[data-testid=oom-event] >> nth=0 >> [data-testid=oom-categories] tr', (rs) => rs.length);
  eq(cats, first.categories.length, 'the categories');
  await shot('29-oom-view', p);
  // The user's rules, as --categories reads them: the CLI's breakdown with them.
  const custom = read('expected-oom-custom.json').events[0].categories;
  await p.setInputFiles('[data-testid=oom-event] >> nth=0 >> [data-testid=rules-input]', path.join(out, 'all-temporary.toml'));
  await p.waitForFunction(() => document.querySelector('[data-testid=rules-name]')?.textContent === 'all-temporary.toml');
  await p.waitForFunction((n) => {
    const rows = [...document.querySelectorAll('[data-testid=oom-event] [data-testid=oom-categories] tr')].slice(0, n);
    return rows.length === n && rows.some((r) => r.textContent.includes('temporary') && r.textContent.includes('[everything]'));
  }, custom.length, { timeout: 30000 });
  const customRows = await p.$$eval('[data-testid=oom-event] >> nth=0 >> [data-testid=oom-categories] tr', (rs) => rs.map((r) => r.cells[0].textContent + ' ' + r.cells[1].textContent));
  eq(customRows.join('|'), custom.map((c) => `${c.category} [${c.rule}]`).join('|'), 'the CLI\'s --categories breakdown');
  await p.click('[data-testid=rules-builtin]');
  await p.waitForFunction(() => document.querySelector('[data-testid=rules-name]')?.textContent === 'built-in');
  // A file without an OOM has neither banner nor tab.
  await p.setInputFiles('[data-testid=file-input]', path.join(out, 'fixture.pkl'));
  await p.waitForSelector('[data-testid=engine-state][data-value=ready]', { timeout: 60000 });
  await p.waitForFunction(() => !document.querySelector('[data-testid=oom-banner]') && !document.querySelector('[data-testid=tab-oom]'));
  await p.close();
});

await check("peaks first: the replay's peaks show before the database is ready, and are memory_peak's", async () => {
  const want = read('expected-fresh-peak.json').rows[0];
  const { states, peaks: shown } = await engineStates(page, path.join(out, 'fresh.pickle'), '21-peaks-first');
  eq(JSON.stringify(states), JSON.stringify(['peaks', 'ready']), 'engine states in order');
  eq(JSON.stringify(shown), JSON.stringify(['allocated', 'active', 'reserved'].map((n) => String(want[`peak_${n}`]))), 'peak cards while the database was written');
  await peaksAre(page, want, 'ready');
});

await check('ready before the indexes: the worker builds them between questions, and the database ends with the CLI\'s', async () => {
  // fresh.pickle, just imported into OPFS by the check above: its indexes were deferred.
  await page.waitForSelector('[data-testid=engine-indexes][data-value=done]', { state: 'attached', timeout: 120000 });
  const seen = await page.evaluate(() => window.__indexes);
  ok(seen.includes('building'), `indexes built after ready: ${JSON.stringify(seen)}`);
  eq(seen[seen.length - 1], 'done', 'indexes last');
  await tab('sql');
  await page.fill('[data-testid=sql-input]', "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name");
  await page.click('[data-testid=run-sql]');
  await page.waitForFunction(() => document.querySelector('[data-testid=result-table] tbody td')?.textContent.startsWith('idx_'));
  const names = await page.$$eval('[data-testid=result-table] tbody tr td:first-child', (tds) => tds.map((td) => td.textContent));
  eq(JSON.stringify(names), JSON.stringify(read('expected-fresh-indexes.json')), 'the indexes of the CLI\'s import');
  await peaksAre(page, read('expected-fresh-peak.json').rows[0], 'after the indexes');
});

await check('the same file dropped again reopens its database from the OPFS cache', async () => {
  // big.pickle was imported by the tests above, in this browser profile.
  const t0 = Date.now();
  await page.setInputFiles('[data-testid=file-input]', path.join(out, 'big.pickle'));
  await page.waitForSelector('[data-testid=cache-hit]', { timeout: 60000 });
  await page.waitForSelector('[data-testid=engine-state][data-value=ready]');
  console.log(`     big.pickle dropped again: from the cache in ${Date.now() - t0} ms`);
  await peaksAre(page, read('expected-big-peak.json').rows[0], 'cached big.pickle');
  eq(await page.textContent('.opened strong'), 'big.pickle', 'open file');
  eq(await page.textContent('[data-testid=kept]'), '· kept in this browser', 'where the import lives');
  // Dropped once more while it is on screen: recognised by its SHA-256, nothing reopened.
  // Counted once idle before the drop (the file's indexes built, its SHA-256 checked by a
  // helper of its own, the spare started), and once settled after it.
  await page.waitForSelector('[data-testid=engine-indexes][data-value=done]', { state: 'attached', timeout: 120000 });
  await page.waitForSelector('[data-testid=cache-hit][data-value=same]', { timeout: 60000 });
  const idleDone = (c) => c.wasm.length === 2 && c.helpers === 0;
  const idle = await workersSettle(page, idleDone);
  ok(idleDone(idle), `idle: the shown file's worker and a spare, no helper (${JSON.stringify(idle.scripts)})`);
  const idleWorkers = new Set(idle.wasm);
  console.log(`     workers when idle: ${idle.scripts.join(', ')}`);
  const t1 = Date.now();
  await page.setInputFiles('[data-testid=file-input]', path.join(out, 'big.pickle'));
  await page.waitForSelector('[data-testid=import-progress]', { state: 'attached', timeout: 10000 }).catch(() => {});
  await page.waitForSelector('[data-testid=import-progress]', { state: 'detached', timeout: 60000 });
  console.log(`     big.pickle dropped again while shown: recognised in ${Date.now() - t1} ms`);
  await page.waitForSelector('[data-testid=cache-hit]');
  eq(await page.$('[data-testid=error]'), null, 'no error');
  await peaksAre(page, read('expected-big-peak.json').rows[0], 'big.pickle still shown');
  // The spare took the drop and ended once it knew the file; the shown file's worker stays,
  // and at most a new spare has started.
  const afterDone = (c) => c.kept === 1 && c.added <= 1 && c.helpers === 0;
  const after = await workersSettle(page, afterDone, idleWorkers);
  console.log(`     workers after: ${after.scripts.join(', ')}`);
  ok(afterDone(after), `no worker left behind: ${after.kept} of the idle two kept, ${after.added} new, ${after.helpers} helpers (${JSON.stringify(after.scripts)})`);
});

await check('a file changed under the name, size and time of an import: shown from the cache at once, then found out by its SHA-256 and imported', async () => {
  // Two files of the fixture's size and peaks, each with its own SHA-256 (and neither the
  // fixture, whose import the cache has): one letter of a frame's file name changed.
  const fixture = fs.readFileSync(path.join(out, 'fixture.pkl'));
  const at = fixture.indexOf(Buffer.from('.py'));
  ok(at > 0, 'a frame file name in the fixture');
  const [bytes, changed] = [...'qzk'].filter((c) => c.charCodeAt(0) !== fixture[at - 1]).slice(0, 2).map((c) => {
    const b = Buffer.from(fixture);
    b[at - 1] = c.charCodeAt(0);
    return b;
  });
  const sha = createHash('sha256').update(changed).digest('hex');
  // Written at one whole second, so the browser's lastModified is that time whatever it
  // rounds the file system's nanoseconds to.
  const file = path.join(out, 'stat.pkl');
  const at0 = Math.floor(Date.now() / 1000) - 3600;
  const write = (content) => { fs.writeFileSync(file, content); fs.utimesSync(file, at0, at0); };
  write(bytes);
  await page.setInputFiles('[data-testid=file-input]', file);
  await page.waitForFunction(() => document.querySelector('.opened strong')?.textContent === 'stat.pkl'
    && document.querySelector('[data-testid=engine-state]')?.dataset.value === 'ready', null, { timeout: 60000 });
  write(changed);
  await page.evaluate(() => {
    window.__cache = [];
    window.__cacheObserver?.disconnect();
    window.__cacheObserver = new MutationObserver(() => {
      const v = document.querySelector('[data-testid=cache-hit]')?.dataset.value ?? 'none';
      if (window.__cache[window.__cache.length - 1] !== v) window.__cache.push(v);
    });
    window.__cacheObserver.observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-value'] });
  });
  // Dropped while another file is shown (the file on screen is always hashed first).
  await page.setInputFiles('[data-testid=file-input]', path.join(out, 'big.pickle'));
  await page.waitForSelector('[data-testid=cache-hit][data-value=same]', { timeout: 30000 });
  await page.evaluate(() => { window.__cache = []; });
  await page.setInputFiles('[data-testid=file-input]', file);
  await page.waitForFunction(() => window.__cache.includes('checking') || document.querySelector('[data-testid=error]'), null, { timeout: 30000 });
  eq(await page.$('[data-testid=error]') && await page.textContent('[data-testid=error]'), null, 'no error');
  await page.waitForFunction(() => document.querySelector('.opened strong')?.textContent === 'stat.pkl' && !document.querySelector('[data-testid=cache-hit]')
    && !document.querySelector('[data-testid=import-progress]') && document.querySelector('[data-testid=engine-state]')?.dataset.value === 'ready', null, { timeout: 60000 });
  const seen = await page.evaluate(() => window.__cache);
  // (What comes before `checking` is big.pickle's badge.)
  ok(!seen.slice(seen.indexOf('checking')).includes('same'), `never said to be the same file: ${JSON.stringify(seen)}`);
  await peaks();
  await tab('sql');
  await runSql('SELECT source_sha256 FROM pt_snap_metadata');
  await page.waitForFunction((want) => document.querySelector('[data-testid=result-table] tbody td')?.textContent === want, sha, { timeout: 10000 });
  // The first content again: two imports now share its name, size and time, so it is
  // hashed first, and found in the cache.
  write(bytes);
  await page.setInputFiles('[data-testid=file-input]', path.join(out, 'big.pickle'));
  await page.waitForSelector('[data-testid=cache-hit][data-value=same]', { timeout: 30000 });
  await page.evaluate(() => { window.__cache = []; });
  await page.setInputFiles('[data-testid=file-input]', file);
  await page.waitForFunction(() => document.querySelector('.opened strong')?.textContent === 'stat.pkl'
    && document.querySelector('[data-testid=cache-hit]')?.dataset.value === 'same', null, { timeout: 30000 });
  ok(!(await page.evaluate(() => window.__cache)).includes('checking'), 'hashed first');
  await peaks();
});

/** The welcome page's cached imports: `[file name, digest line or null, SHA-256]` a row. */
const cachedRows = (p) => p.$$eval('[data-testid=cached-file]', (trs) => trs.map((tr) => {
  const td = tr.querySelector('td');
  const name = Array.from(td.childNodes).filter((n) => n.nodeType === 3).map((n) => n.textContent).join('').trim();
  return [name, tr.querySelector('[data-testid=cached-digest]')?.textContent.trim() ?? null, tr.dataset.sha256];
}));

await check('the welcome page lists cached imports; Open reopens one, Remove removes it', async () => {
  const p = await ctx.newPage();
  watch(p);
  await p.goto(url);
  await p.waitForSelector('[data-testid=cached-files]', { timeout: 20000 });
  const rows = await cachedRows(p);
  const names = rows.map(([n]) => n);
  for (const n of ['big.pickle', 'fixture.pkl', 'fresh.pickle']) ok(names.includes(n), `${n} listed among ${JSON.stringify(names)}`);
  // The changed-file check left two imports named stat.pkl: each shows its digest's first
  // digits; a name listed once shows none.
  const stat = rows.filter(([n]) => n === 'stat.pkl');
  eq(stat.length, 2, `two imports named stat.pkl in ${JSON.stringify(rows)}`);
  for (const [, digest, sha] of stat) eq(digest, `SHA-256 ${sha.slice(0, 12)}…`, 'a shared name shows its digest');
  ok(rows.filter(([n]) => n === 'fixture.pkl').every(([, digest]) => digest === null), 'a name listed once shows no digest');
  await shot('20-welcome-cache', p);
  const row = p.locator('[data-testid=cached-file]', { hasText: 'fixture.pkl' }).first();
  await row.locator('[data-testid=cached-open]').click();
  await p.waitForSelector('[data-testid=cache-hit], [data-testid=error]', { timeout: 60000 });
  eq(await p.$('[data-testid=error]') && await p.textContent('[data-testid=error]'), null, 'reopened from the list');
  await peaksAre(p, expected, 'fixture.pkl reopened from the list');
  await p.close();
  const q = await ctx.newPage();
  watch(q);
  await q.goto(url);
  await q.waitForSelector('[data-testid=cached-files]', { timeout: 20000 });
  const before = await q.locator('[data-testid=cached-file]').count();
  await q.locator('[data-testid=cached-file]', { hasText: 'fresh.pickle' }).first().locator('[data-testid=cached-remove]').click();
  await q.waitForFunction((n) => document.querySelectorAll('[data-testid=cached-file]').length === n - 1, before, { timeout: 10000 });
  const left = (await cachedRows(q)).map(([n]) => n);
  ok(!left.includes('fresh.pickle'), `fresh.pickle removed: ${JSON.stringify(left)}`);
  await q.close();
});

/** Runs `sql` in the console under the current budget; resolves when it was sent. */
async function runSql(sql) {
  await page.fill('[data-testid=sql-input]', sql);
  await page.click('[data-testid=run-sql]');
}
const ENDLESS = 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c';

await check('a superseded question is interrupted in the worker; Esc stops one; a short budget ends in QUERY_TIMEOUT', async () => {
  ok(await page.evaluate(() => crossOriginIsolated), 'the page is cross-origin isolated (scripts/serve-dist)');
  await page.click('[data-testid=tab-sql]');
  eq(await page.inputValue('[data-testid=budget-input]'), '60', 'default budget shown');
  // Superseded: the endless statement would hold the worker for its whole 60 s budget; the
  // next statement is answered at once only because the first was interrupted.
  await runSql(ENDLESS);
  await page.waitForSelector('[data-testid=pending]');
  await page.waitForTimeout(300);
  const t0 = Date.now();
  await runSql('SELECT 42 AS answer');
  await page.waitForFunction(() => document.querySelector('[data-testid=result-table] tbody td')?.textContent === '42', null, { timeout: 10000 });
  const superseded = Date.now() - t0;
  ok(superseded < 5000, `the second statement waited ${superseded} ms`);
  console.log(`     superseded statement interrupted; the next answered ${superseded} ms later`);
  // Esc: the view says the question was stopped, and the worker is free again.
  await runSql(ENDLESS);
  await page.waitForSelector('[data-testid=pending]');
  await page.keyboard.press('Escape');
  await page.waitForSelector('[data-testid=view-error] code:text("QUERY_CANCELLED")', { timeout: 5000 });
  // A budget of half a second ends the endless statement with the CLI's QUERY_TIMEOUT.
  await page.fill('[data-testid=budget-input]', '0.5');
  await page.dispatchEvent('[data-testid=budget-input]', 'change');
  await runSql(ENDLESS);
  await page.waitForSelector('[data-testid=view-error] code:text("QUERY_TIMEOUT")', { timeout: 10000 });
  const message = await page.textContent('[data-testid=view-error]');
  ok(/0\.5/.test(message), `timeout message names the budget: ${message}`);
  const hint = await page.textContent('[data-testid=view-error] [data-testid=error-hint]');
  ok(hint.includes('time limit') && !hint.includes('--'), `the hint names the page's time limit: ${hint}`);
  await shot('18-query-timeout');
  // The page is still usable.
  await page.fill('[data-testid=budget-input]', '60');
  await page.dispatchEvent('[data-testid=budget-input]', 'change');
  await runSql('SELECT 7 AS answer');
  await page.waitForFunction(() => document.querySelector('[data-testid=result-table] tbody td')?.textContent === '7', null, { timeout: 10000 });
  await page.click('[data-testid=tab-overview]');
});

let jobPage = null;
await check('several files are the ranks of a job: the CLI rows, the planted outlier, a failed file; a rank opens in every view', async () => {
  const want = read('expected-ranks.json');
  const byRank = new Map(want.ranks.filter((r) => r.error == null).map((r) => [String(r.rank), r]));
  const p = await ctx.newPage();
  watch(p);
  await p.goto(url);
  const files = [0, 1, 2, 3, 4].map((r) => path.join(out, 'job', `rank${r}.pickle`));
  await p.setInputFiles('[data-testid=file-input]', files);
  await p.waitForSelector('[data-testid=ranks-view]');
  await p.waitForSelector('[data-testid=ranks-progress][data-done="5"]', { timeout: 120000 });
  const rows = await p.$$eval('[data-testid=ranks-row]', (rs) => rs.map((r) => ({
    rank: r.dataset.rank, active: r.dataset.peakActive, outlier: r.dataset.outlier })));
  eq(rows.length, byRank.size, 'one row per summarised rank (one device each)');
  for (const row of rows) {
    const cli = byRank.get(row.rank);
    ok(cli, `rank ${row.rank} is one of the CLI's`);
    eq(row.active, String(cli.peak_active), `rank ${row.rank} peak_active`);
    eq(row.outlier, String(cli.outlier), `rank ${row.rank} outlier`);
  }
  eq(rows.filter((r) => r.outlier === 'true').map((r) => r.rank).join(), '2', 'exactly the leaking rank is flagged');
  const failedText = await p.textContent('[data-testid=ranks-failed]');
  const cliFailed = want.ranks.find((r) => r.error != null);
  ok(failedText.includes('rank4.pickle') && failedText.includes(cliFailed.error.code), `the failed file with the CLI's code: ${failedText}`);
  await shot('22-ranks', p);
  // Sorted by the active peak, largest first: the outlier leads.
  await p.click('[data-testid=ranks-sort-active]');
  eq(await p.getAttribute('[data-testid=ranks-row] >> nth=0', 'data-rank'), '2', 'largest active peak first');
  // A rank opens in every other view, with the CLI's peaks.
  await p.click('[data-testid=ranks-row][data-rank="1"]');
  await p.waitForSelector('[data-testid=engine-state][data-value=ready]', { timeout: 60000 });
  eq(await p.textContent('.opened strong'), 'rank1.pickle', 'the rank clicked is open');
  eq(await p.getAttribute('[data-testid=peak-active]', 'data-value'), String(byRank.get('1').peak_active), 'its peak');
  await shot('23-rank-opened', p);
  await p.click('[data-testid=show-ranks]');
  await p.waitForSelector('[data-testid=ranks-view]');
  jobPage = p;
});

await check('Compare: two ranks on one axis, what pt-snap diff gives; swap, metric, another pick', async () => {
  const want = read('expected-diff.json');
  const p = jobPage;
  ok(p, 'the ranks page is open');
  const grouped = (n) => n.toLocaleString('en-US');
  // By default the first rank against the outlier.
  eq(await p.textContent('[data-testid=ranks-compare]'), 'Compare rank 0 (A) with rank 2 (B)', 'the default pair');
  eq(await p.getAttribute('[data-testid=ranks-row][data-rank="0"] [data-testid=ranks-pick-a]', 'class'), 'pick side-a selected', 'rank 0 is A');
  await p.click('[data-testid=ranks-compare]');
  await p.waitForSelector('[data-testid=compare-view]');
  await p.waitForSelector('[data-testid=compare-diff] [data-testid=pd-total-a]', { timeout: 120000 });
  const total = async (side) => p.textContent(`[data-testid=compare-diff] [data-testid=pd-total-${side}]`);
  ok((await total('a')).includes(`${grouped(want.total_a)} B`), `A's total is the CLI's ${want.total_a}: ${await total('a')}`);
  ok((await total('b')).includes(`${grouped(want.total_b)} B`), `B's total is the CLI's ${want.total_b}`);
  ok((await p.textContent('[data-testid=pd-total-change]')).includes(grouped(want.total_delta)), 'the change is the CLI\'s');
  const counts = await p.textContent('[data-testid=pd-group-counts]');
  ok(counts.startsWith(`${Math.min(20, want.group_counts.total)} of ${grouped(want.group_counts.total)} groups shown`), `the CLI's group count: ${counts}`);
  const statuses = await p.$$eval('[data-testid=pd-group]', (rs) => rs.map((r) => r.dataset.status));
  eq(statuses.join(), want.groups.slice(0, 20).map((g) => g.status).join(), 'the groups in the CLI\'s order, with its statuses');
  ok(want.groups[0].delta > 0 && statuses[0] !== 'same', 'the leak is the largest change');
  await p.waitForSelector('[data-testid=compare-diff] .fg-graph');
  await shot('24-compare', p);
  // The largest change's stack in the flamegraph.
  const site = await p.getAttribute('[data-testid=pd-group] >> nth=0', 'data-node-id');
  await p.click('[data-testid=pd-group] >> nth=0 >> button.pd-show');
  await p.waitForFunction((id) => document.querySelector('[data-testid=compare-diff] [data-testid=fg-breadcrumb]')?.dataset.zoomId === id, site);
  // Swapping needs no worker: both sides are kept.
  await p.click('[data-testid=compare-swap]');
  await p.waitForFunction((t) => document.querySelector('[data-testid=pd-total-a]')?.textContent.includes(t), `${grouped(want.total_b)} B`);
  ok((await p.textContent('[data-testid=pd-total-change]')).includes(grouped(-want.total_delta)), 'swapped, the change turns');
  eq(await p.$$eval('[data-testid=compare-progress]', (x) => x.length), 0, 'nothing measured again');
  // Another metric is measured again, side by side as the CLI's --metric reserved.
  await p.selectOption('[data-testid=compare-metric]', 'reserved');
  await p.waitForFunction(() => /Metric compared: reserved/.test(document.querySelector('[data-testid=compare-diff]')?.textContent || ''), null, { timeout: 120000 });
  // Any two ranks: rank 1 as B, from the view's own choice.
  const options = await p.$$eval('[data-testid=compare-b] option', (os) => os.map((o) => [o.value, o.textContent]));
  const rank1 = options.find(([, t]) => t.startsWith('rank 1 '));
  ok(rank1, `rank 1 is offered: ${options.map((o) => o[1]).join(' | ')}`);
  await p.selectOption('[data-testid=compare-b]', rank1[0]);
  await p.waitForFunction(() => document.querySelector('[data-testid=compare-diff] .pd-inputs')?.textContent.includes('rank1.pickle'), null, { timeout: 120000 });
  await shot('25-compare-reserved', p);
  await p.close();
});

await check('an exported summary table: the Ranks view without the snapshots, what ranks and DataFusion give', async () => {
  const want = read('expected-ranks.json');
  const byRank = new Map(want.ranks.filter((r) => r.error == null).map((r) => [String(r.rank), r]));
  const sql = new Map(read('expected-sql-peaks.json').rows.map((r) => [String(r.rank), r]));
  const p = await ctx.newPage();
  watch(p);
  await p.goto(url);
  // The whole export chosen as a folder: only its summary table is read.
  await p.setInputFiles('[data-testid=folder-input]', path.join(out, 'export'));
  await p.waitForSelector('[data-testid=ranks-view][data-source=summary]');
  await p.waitForSelector('[data-testid=ranks-progress][data-done="4"][data-total="4"]', { timeout: 60000 });
  const rows = await p.$$eval('[data-testid=ranks-row]', (rs) => rs.map((r) => ({
    rank: r.dataset.rank, active: r.dataset.peakActive, outlier: r.dataset.outlier,
    cells: [...r.querySelectorAll('td.num[title]')].map((td) => td.title) })));
  eq(rows.map((r) => r.rank).join(), '0,1,2,3', 'the four exported ranks, as stated');
  for (const row of rows) {
    const cli = byRank.get(row.rank);
    eq(row.active, String(cli.peak_active), `rank ${row.rank} peak_active as ranks gives it`);
    eq(row.outlier, String(cli.outlier), `rank ${row.rank} outlier as ranks judges it`);
    const df = sql.get(row.rank);
    const exact = (n) => `${n.toLocaleString('en-US')} bytes`;
    eq(row.cells.slice(0, 3).join(' '), [df.peak_allocated, df.peak_active, df.peak_reserved].map(exact).join(' '),
      `rank ${row.rank}: the peaks DataFusion reads from the same table`);
  }
  eq(await p.$$eval('[data-testid=ranks-pick-a]', (b) => b.length), 0, 'nothing to compare without the snapshots');
  ok(!(await p.$('[data-testid=ranks-compare]')), 'no Compare button');
  await p.click('[data-testid=ranks-row][data-rank="1"]');
  ok(await p.$('[data-testid=ranks-view]'), 'a rank of a summary table opens nothing');
  await shot('33-summary', p);
  await p.close();
});

await check('2,048 ranks from a summary table: read off the page thread, a page of rows at a time, no task over 200 ms', async () => {
  // From the page's first sight of the files: making a FileList of 2,048 files is the
  // browser's (a task of its own, ~0.5 s here, before any of the page's code runs).
  const p = await longTaskPage();
  const t0 = Date.now();
  await p.setInputFiles('[data-testid=folder-input]', path.join(out, 'export-big'));
  await p.waitForSelector('[data-testid=ranks-progress][data-done="2048"]', { timeout: 120000 });
  const took = Date.now() - t0;
  eq(await p.$$eval('[data-testid=ranks-row]', (rs) => rs.length), 50, 'one page of rows');
  eq(await p.textContent('[data-testid=ranks-page]'), 'rows 1–50 of 2048', 'the pager counts every rank');
  eq(await p.textContent('.ranks-head h2'), 'Ranks · 2048 of job big', 'the title');
  await p.click('[data-testid=ranks-next]');
  eq(await p.getAttribute('[data-testid=ranks-row] >> nth=0', 'data-rank'), '50', 'the second page');
  await p.click('[data-testid=ranks-sort-active]');
  const top = await p.$$eval('[data-testid=ranks-row]', (rs) => rs.map((r) => [Number(r.dataset.rank), r.dataset.outlier]));
  eq(await p.textContent('[data-testid=ranks-page]'), 'rows 1–50 of 2048', 'sorting goes back to the first page');
  ok(top.every(([r, o]) => r % 4 === 2 && o === 'true'), `the largest active peaks are rank 2's copies, flagged: ${JSON.stringify(top.slice(0, 5))}`);
  const long = await longTasksSince(p, await p.evaluate(() => window.__from));
  // 200 ms, not the 1M check's 100: this guards against posting thousands of Files at once
  // (~450 ms) and whole-table rebuilds; the first render's ~60 ms doubles on a loaded machine.
  const over = long.filter(([, d]) => d > 200);
  console.log(`    2,048 summary parts: ${took} ms to all read; longest main-thread task ${Math.max(0, ...long.map(([, d]) => d))} ms`);
  eq(over.length, 0, `no main-thread task over 200 ms: ${JSON.stringify(over)}`);
  await shot('34-summary-2048', p);
  await p.close();
});

// The bound leaves a loaded 2-core machine room (the 100 ms target is the log's and
// docs/performance.md's: 50–136 ms on 2026-12-07, with the code of the day before too).
await check('1M events: from drop to every view, no main-thread task over 200 ms', async () => {
  const p = await longTaskPage();
  // Only what happens from the drop counts (loading the page's wasm is before it).
  const from = await p.evaluate(() => performance.now());
  const t0 = Date.now();
  await p.setInputFiles('[data-testid=file-input]', path.join(out, 'bench-1m.pickle'));
  await p.waitForSelector('[data-testid=engine-state][data-value=peaks]', { timeout: 300000 });
  const toPeaks = Date.now() - t0;
  await p.waitForSelector('[data-testid=engine-state][data-value=ready]', { timeout: 300000 });
  const toReady = Date.now() - t0;
  await p.waitForSelector('[data-testid=timeline] g[data-peak=active]', { state: 'attached' });
  const views = [
    ['peak', '[data-testid=coverage]'],
    ['tree', '[data-testid=flamegraph] .fg-graph'],
    ['blocks', '[data-testid=blocks-table]'],
    ['leaks', '[data-testid=leaks-summary]'],
    ['lifetimes', '[data-testid=lifetimes-summary]'],
    ['templates', '[data-testid=run-template]'],
    ['sql', '[data-testid=sql-input]'],
    ['overview', '[data-testid=timeline] g[data-peak=active]'],
  ];
  // When each view was asked for, to name where a long task fell.
  const asked = [['import', from]];
  for (const [tab, sel] of views) {
    asked.push([tab, await p.evaluate(() => performance.now())]);
    await p.click(`[data-testid=tab-${tab}]`);
    await p.waitForSelector(sel, { state: 'attached', timeout: 120000 });
    await p.waitForSelector('[data-testid=pending]', { state: 'detached', timeout: 120000 });
  }
  asked.push(['run template', await p.evaluate(() => performance.now())]);
  await p.click('[data-testid=tab-templates]');
  await p.click('[data-testid=run-template]');
  await p.waitForSelector('[data-testid=result-table]', { timeout: 60000 });
  const long = await longTasksSince(p, from);
  const over = long.filter(([, d]) => d > 200);
  const during = (at) => asked.filter(([, t]) => t <= at).pop()[0];
  console.log(`     drop → peaks ${toPeaks} ms, → ready ${toReady} ms; main-thread tasks over 50 ms: ${JSON.stringify(long.map(([at, d]) => `${d} (${during(at)})`))}`);
  eq(over.length, 0, `main-thread tasks over 200 ms: ${JSON.stringify(over)}`);
  await shot('19-1m-events', p);
  await p.close();
});

await checkClean(browser);
await finish(browser);
