// The browser app end to end in Chromium: import a pickle in the worker, open a CLI-made .db,
// compare the peaks with the CLI's memory_peak, use every view, download the .db and check it
// with the CLI, refuse hostile files, and never request anything outside the served origin.
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const [url, root] = process.argv.slice(2);
const require = createRequire(path.join(root, 'tests/browser/node_modules/'));
const { chromium } = require('playwright-core');
const out = path.join(root, 'target/web');
const expected = JSON.parse(fs.readFileSync(path.join(out, 'expected-peak.json'), 'utf8')).rows[0];
const hostile = JSON.parse(fs.readFileSync(path.join(out, 'expected-hostile.json'), 'utf8')).error;

let passed = 0, failed = 0;
async function check(name, fn) {
  const t0 = Date.now();
  try { await fn(); passed++; console.log(`ok   ${name} (${Date.now() - t0} ms)`); }
  catch (e) { failed++; console.log(`FAIL ${name}: ${e.message}`); }
}
function eq(a, b, what) { if (a !== b) throw new Error(`${what}: expected ${JSON.stringify(b)}, got ${JSON.stringify(a)}`); }

const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'pt-snap-web-'));
const ctx = await chromium.launchPersistentContext(profile, {
  executablePath: '/usr/bin/chromium', headless: true, acceptDownloads: true,
  viewport: { width: 1280, height: 900 },
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const origin = new URL(url).origin;
const outside = [], errors = [];
ctx.on('request', (r) => { const u = r.url(); if (!u.startsWith(origin) && !u.startsWith('data:') && !u.startsWith('blob:')) outside.push(u); });
const page = ctx.pages()[0] ?? await ctx.newPage();
page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
page.on('pageerror', (e) => errors.push(String(e)));

async function peaks() {
  await page.waitForSelector('[data-testid=peak-reserved]', { timeout: 120000 });
  const v = async (id) => Number(await page.getAttribute(`[data-testid=${id}]`, 'data-value'));
  eq(await v('peak-allocated'), expected.peak_allocated, 'peak_allocated');
  eq(await v('peak-active'), expected.peak_active, 'peak_active');
  eq(await v('peak-reserved'), expected.peak_reserved, 'peak_reserved');
}
const shot = (name) => page.screenshot({ path: path.join(out, `${name}.png`), fullPage: true });

await page.goto(url);
await page.waitForSelector('[data-testid=file-input]', { state: 'attached' });
await shot('01-welcome');

await check('pickle imported in the worker shows the CLI peaks', async () => {
  const t0 = Date.now();
  await page.setInputFiles('[data-testid=file-input]', path.join(out, 'fixture.pkl'));
  await peaks();
  console.log(`     drop to peaks: ${Date.now() - t0} ms`);
  const text = await page.textContent('[data-testid=peak-allocated]');
  if (!/MiB|GiB/.test(text)) throw new Error(`peak not in human units: ${text}`);
  if (!(await page.textContent('[data-testid=metadata]')).includes('fixture.pkl')) throw new Error('metadata does not name the source');
  await shot('02-overview');
});

await check('timeline click shows the flamegraph there', async () => {
  const box = await page.locator('[data-testid=timeline]').boundingBox();
  await page.mouse.click(box.x + box.width * 0.5, box.y + box.height / 2);
  await page.waitForSelector('[data-testid=fg-frame]', { timeout: 30000 });
  const ev = await page.inputValue('[data-testid=tree-event]');
  if (!ev) throw new Error('no event chosen');
  await page.fill('[data-testid=tree-event]', String(expected.peak_active_event_id));
  await page.press('[data-testid=tree-event]', 'Enter');
  await page.waitForFunction((e) => document.querySelector('.ptsnap-fg')?.textContent.includes(`event ${e}`), expected.peak_active_event_id, { timeout: 30000 });
  if (!page.url().includes(`event=${expected.peak_active_event_id}`)) throw new Error(`hash not updated: ${page.url()}`);
  await shot('03-tree');
});

await check('peak report lists callstack groups', async () => {
  await page.click('[data-testid=tab-peak]');
  await page.waitForSelector('table.groups tbody tr');
  await page.click('table.groups tbody tr summary');
  await shot('04-peak');
});

await check('template runner runs a template with parameters', async () => {
  await page.click('[data-testid=tab-templates]');
  await page.selectOption('[data-testid=template-select]', 'active_memory_callstack_at_event');
  await page.fill('[data-param=event_id]', String(expected.peak_active_event_id));
  await page.fill('[data-param=top_n]', '5');
  await page.click('[data-testid=run-template]');
  await page.waitForSelector('[data-testid=result-table] tbody tr');
  const cli = await page.textContent('[data-testid=cli-command]');
  if (!cli.includes('--template-use active_memory_callstack_at_event') || !cli.includes('"top_n":5')) throw new Error(`cli: ${cli}`);
  await shot('05-templates');
});

await check('SQL console runs read-only SQL and refuses writes', async () => {
  await page.click('[data-testid=tab-sql]');
  await page.fill('[data-testid=sql-input]', 'SELECT max(active) AS m FROM trace_entry_0');
  await page.click('[data-testid=run-sql]');
  await page.waitForSelector('[data-testid=result-table] tbody tr');
  eq(Number(await page.textContent('[data-testid=result-table] tbody td')), expected.peak_active, 'max(active)');
  await page.fill('[data-testid=sql-input]', 'DELETE FROM trace_entry_0');
  await page.click('[data-testid=run-sql]');
  await page.waitForSelector('[data-testid=view-error]');
  await shot('06-sql');
});

await check('downloaded .db answers the same in the CLI', async () => {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=download-db]')]);
  const file = path.join(out, 'downloaded.db');
  await dl.saveAs(file);
  const cli = path.join(root, 'target/debug/pt-snap');
  const row = JSON.parse(execFileSync(cli, ['query', file, '--template-use', 'memory_peak', '--json'])).rows[0];
  eq(JSON.stringify(row), JSON.stringify(expected), 'memory_peak of the downloaded db');
});

await check('hostile pickle: the CLI error, page still works', async () => {
  await page.setInputFiles('[data-testid=file-input]', path.join(out, 'hostile.pkl'));
  await page.waitForSelector('[data-testid=error-code]', { timeout: 60000 });
  eq(await page.textContent('[data-testid=error-code]'), hostile.code, 'code');
  eq(await page.textContent('[data-testid=error-message]'), hostile.message, 'message');
  await shot('07-hostile');
  await page.setInputFiles('[data-testid=file-input]', path.join(out, 'not-a.db'));
  await page.waitForFunction(() => document.querySelector('[data-testid=error-code]')?.textContent === 'DATABASE_SCHEMA_INVALID');
});

await check('a CLI-made .db opens with the same peaks', async () => {
  await page.setInputFiles('[data-testid=file-input]', path.join(out, 'fixture.pkl.db'));
  await page.click('[data-testid=tab-overview]');
  await page.waitForSelector('[data-testid=error]', { state: 'detached' });
  await peaks();
  await shot('08-db');
});

await check('cancel stops an import and the page stays usable', async () => {
  await page.setInputFiles('[data-testid=file-input]', path.join(out, 'fixture.pkl'));
  // The small fixture may finish before the click lands; then there is nothing to cancel.
  await page.click('[data-testid=cancel-import]', { timeout: 2000 }).catch(() => {});
  await page.setInputFiles('[data-testid=file-input]', path.join(out, 'fixture.pkl'));
  await page.waitForSelector('[data-testid=import-progress]', { state: 'detached', timeout: 120000 });
  await peaks();
});

await check('no console error and no request outside the origin', async () => {
  eq(outside.length, 0, `outside requests ${outside.join(', ')}`);
  eq(errors.length, 0, `console errors ${errors.join(' | ')}`);
});

await ctx.close();
fs.rmSync(profile, { recursive: true, force: true });
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
