// `pt-snap view` end to end in Chromium: the URL it prints opens the file in the app with the
// CLI's peaks (opened as a drop is, its bytes streamed from the server), a directory opens as
// the ranks of a job, a served database and an exported summary table open too, a page with
// a wrong token shows an error and never the file, the server listens on loopback only, the
// terminal says what the page read, and Ctrl+C ends it.
// Run by tests/web/run.sh (which builds target/debug/pt-snap with the app built in and makes
// the inputs and the CLI's answers in target/web/). Screenshots: target/web/view-*.png.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launch, check, eq, eqPeaks, ok, finish } from './harness.mjs';

const [root] = process.argv.slice(2);
const out = path.join(root, 'target/web');
const cliBin = path.join(root, 'target/debug/pt-snap');
const read = (name) => JSON.parse(fs.readFileSync(path.join(out, name), 'utf8'));


/** `pt-snap view ARGS --no-open --port 0`, once it has printed its URL. */
async function view(args) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pt-snap-view-home-'));
  const env = { ...process.env, HOME: home };
  for (const k of ['PT_SNAP_DB_PATH', 'BROWSER', 'DISPLAY', 'WAYLAND_DISPLAY']) delete env[k];
  const child = spawn(cliBin, ['view', ...args, '--no-open', '--port', '0'], { env, cwd: home });
  let stdout = '', stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      stdout += d;
      const m = /http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{48}/.exec(stdout);
      if (m) resolve(m[0]);
    });
    child.on('exit', () => reject(new Error(`pt-snap view ended: ${stderr}`)));
  });
  return {
    url,
    port: Number(new URL(url).port),
    token: new URL(url).searchParams.get('token'),
    stderr: () => stderr,
    /** Ctrl+C: the exit and what it printed. */
    async stop() {
      child.kill('SIGINT');
      const end = await exited;
      fs.rmSync(home, { recursive: true, force: true });
      return { ...end, stderr };
    },
  };
}

/** The addresses listening on `port` (Linux's /proc/net/tcp and tcp6). */
function listening(port) {
  const found = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text;
    try { text = fs.readFileSync(table, 'utf8'); } catch { continue; }
    for (const line of text.trim().split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      const [address, hexPort] = f[1].split(':');
      if (f[3] !== '0A' || parseInt(hexPort, 16) !== port) continue;
      found.push(address.length === 8
        ? address.match(/../g).reverse().map((b) => parseInt(b, 16)).join('.')
        : `[${address}]`);
    }
  }
  return found;
}

const browser = await launch(root, 'view', { viewport: { width: 1280, height: 900 } });
/** A new page that records console errors and every response (status by path). */
async function newPage() {
  const p = browser.watch(await browser.ctx.newPage());
  p.responses = [];
  p.on('response', (r) => { const u = new URL(r.url()); p.responses.push({ path: u.pathname, status: r.status(), search: u.search }); });
  return p;
}

await check('the printed URL opens the file with the CLI peaks; the server listens on loopback only', async () => {
  const want = read('expected-sample-peak-0.json').rows[0];
  const server = await view([path.join(out, 'sample.pkl')]);
  try {
    eq(JSON.stringify(listening(server.port)), JSON.stringify(['127.0.0.1']), 'listening addresses');
    const p = await newPage();
    await p.goto(server.url);
    await p.waitForSelector('[data-testid=peak-reserved]', { timeout: 120000 });
    await eqPeaks(p, want);
    await p.waitForSelector('[data-testid=engine-state][data-value=ready]', { timeout: 120000 });
    eq(await p.textContent('.opened strong'), 'sample.pkl', 'the file is named as it is on disk');
    // The worker www/served.js started as the page loaded is the one the file went to.
    eq(await p.evaluate(() => 'ptSnapEarlyWorker' in window), false, 'the early worker was taken');
    // Read from the server, with the token, and nothing refused.
    ok(p.responses.some((r) => r.path.startsWith('/files/') && r.status < 300 && r.search.includes(server.token)),
      `the file was read from the server: ${JSON.stringify(p.responses)}`);
    ok(!p.responses.some((r) => r.status >= 400), `no request refused: ${JSON.stringify(p.responses.filter((r) => r.status >= 400))}`);
    // The picture once the overview's allocation timeline is drawn, not its empty plot.
    await p.waitForSelector('[data-testid=allocations-chart][data-bands]', { timeout: 120000 });
    await p.screenshot({ path: path.join(out, 'view-file.png'), fullPage: true });
    await p.close();
  } finally {
    const end = await server.stop();
    eq(end.code, 0, `exit status (${end.signal}): ${end.stderr}`);
    ok(end.stderr.includes('The page is open'), `the page's visit is said: ${end.stderr}`);
    ok(/The page has read 100%|The page has read all of it/.test(end.stderr), `progress is said: ${end.stderr}`);
    ok(end.stderr.endsWith('pt-snap view: stopped.\n'), `Ctrl+C ends it: ${end.stderr}`);
  }
});

await check('a wrong token shows an error and never the file', async () => {
  const server = await view([path.join(out, 'sample.pkl')]);
  try {
    const p = await newPage();
    const wrong = new URL(server.url);
    wrong.searchParams.set('token', 'f'.repeat(48));
    await p.goto(wrong.href);
    await p.waitForSelector('[data-testid=error]', { timeout: 60000 });
    const message = await p.textContent('[data-testid=error]');
    ok(/token/.test(message), `the error names the token: ${message}`);
    await p.waitForTimeout(1000);
    eq(await p.$('[data-testid=peak-reserved]'), null, 'no peaks');
    eq(await p.$('[data-testid=engine-state]'), null, 'no file opened');
    const files = p.responses.filter((r) => r.path.startsWith('/files'));
    ok(files.length > 0 && files.every((r) => r.status === 403), `every request for the file refused: ${JSON.stringify(files)}`);
    await p.screenshot({ path: path.join(out, 'view-wrong-token.png'), fullPage: true });
    await p.close();
  } finally {
    const end = await server.stop();
    ok(end.stderr.includes('warning: refused /files'), `the refusal is said: ${end.stderr}`);
  }
});

await check('a directory opens as the ranks of a job, as the CLI ranks it', async () => {
  const want = read('expected-ranks.json');
  const byRank = new Map(want.ranks.filter((r) => r.error == null).map((r) => [String(r.rank), r]));
  const server = await view([path.join(out, 'job')]);
  try {
    const p = await newPage();
    await p.goto(server.url);
    await p.waitForSelector('[data-testid=ranks-view]', { timeout: 60000 });
    await p.waitForSelector('[data-testid=ranks-progress][data-done="5"]', { timeout: 120000 });
    const rows = await p.$$eval('[data-testid=ranks-row]', (rs) => rs.map((r) => ({ rank: r.dataset.rank, active: r.dataset.peakActive })));
    eq(rows.length, byRank.size, 'one row per summarised rank');
    for (const row of rows) eq(row.active, String(byRank.get(row.rank)?.peak_active), `rank ${row.rank} peak_active`);
    ok((await p.textContent('[data-testid=ranks-failed]')).includes('rank4.pickle'), 'the file that is no snapshot is named');
    ok(!(await p.$$eval('.status[role=status]', (els) => els.map((e) => e.textContent).join(' '))).includes('what pt-snap view serves'), 'no status left from fetching the files');
    await p.screenshot({ path: path.join(out, 'view-directory.png'), fullPage: true });
    await p.close();
  } finally {
    await server.stop();
  }
});

await check('a served database opens, and an exported summary table, each read by ranges from the server', async () => {
  // The .db: read through the read helper's stream. The summary parts: read by ranges by the
  // worker itself (a synchronous request per range).
  const want = read('expected-peak.json').rows[0];
  let server = await view([path.join(out, 'fixture.pkl.db')]);
  try {
    const p = await newPage();
    await p.goto(server.url);
    await p.waitForSelector('[data-testid=engine-state][data-value=ready]', { timeout: 120000 });
    await eqPeaks(p, want, 'the database\'s ');
    await p.close();
  } finally {
    await server.stop();
  }
  const ranks = read('expected-ranks.json');
  const byRank = new Map(ranks.ranks.filter((r) => r.error == null).map((r) => [String(r.rank), r]));
  server = await view([path.join(out, 'export')]);
  try {
    const p = await newPage();
    await p.goto(server.url);
    await p.waitForSelector('[data-testid=ranks-view][data-source=summary]', { timeout: 60000 });
    await p.waitForSelector('[data-testid=ranks-progress][data-done="4"][data-total="4"]', { timeout: 60000 });
    const rows = await p.$$eval('[data-testid=ranks-row]', (rs) => rs.map((r) => ({ rank: r.dataset.rank, active: r.dataset.peakActive })));
    eq(rows.map((r) => r.rank).join(), '0,1,2,3', 'the four exported ranks');
    for (const row of rows) eq(row.active, String(byRank.get(row.rank)?.peak_active), `rank ${row.rank} peak_active as ranks gives it`);
    ok(p.responses.some((r) => r.path.startsWith('/files/') && r.status === 206), 'the parts were read by ranges');
    await p.close();
  } finally {
    await server.stop();
  }
});

await check("no console error but the wrong token's 403", async () => {
  const unexpected = browser.errors.filter((e) => !/403|Forbidden/.test(e));
  eq(unexpected.length, 0, `console errors ${unexpected.join(' | ')}`);
});
await finish(browser, 'view: ');
