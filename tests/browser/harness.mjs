// What the browser tests share: Playwright (playwright-core only, no browser download)
// driving Debian's Chromium over pages from file://, a check that fails one step and not the
// run, one page per test with its console errors and requests recorded, and the tally.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const shotDir = path.join(path.resolve(here, '..', '..'), 'target', 'browser');
const CHROMIUM = process.env.PT_SNAP_CHROMIUM || '/usr/bin/chromium';

export class Check extends Error {}
export function expect(cond, message) {
  if (!cond) throw new Check(message);
}

export async function poll(fn, what, timeout = 5000) {
  const end = Date.now() + timeout;
  let last;
  while (Date.now() < end) {
    last = await fn();
    if (last) return last;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Check(`timed out waiting for ${what}`);
}

export const frameSel = (id) => `[data-testid="fg-frame"][data-node-id=${JSON.stringify(id)}]`;
export const getState = (page) => page.evaluate(() => window.ptSnapFlamegraphView.getState());
export const getTree = (page) => page.evaluate(() => window.ptSnapFlamegraphView.getTree());

// The pages named on the command line, or the usage and exit 2.
export function pagesFromArgs(script) {
  const pages = process.argv.slice(2);
  if (!pages.length) {
    console.error(`usage: node tests/browser/${script} <page.html> [<page2.html> …]`);
    process.exit(2);
  }
  return pages;
}

export const tally = { passed: 0, failed: 0 };

// A new page for the file at `abs`, recording console errors and warnings, page errors and
// every request but the page itself. `step` runs one check and records it, so one failure
// does not hide the checks after it; `finish` adds the checks that the page stayed quiet,
// closes it, and prints `headline` and every step.
export async function openPage(context, abs, viewport) {
  const url = pathToFileURL(abs).href;
  const problems = [];
  const requests = [];
  const page = await context.newPage();
  await page.setViewportSize(viewport);
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

  async function finish(headline) {
    await step('no console error or warning, no page error', async () => {
      expect(problems.length === 0, problems.join('; '));
    });
    await step('no network request', async () => {
      expect(requests.length === 0, `requests made: ${requests.join(', ')}`);
    });
    await page.close();
    console.log(headline);
    for (const [ok, label] of results) {
      console.log(`  ${ok ? 'ok  ' : 'FAIL'} ${label}`);
      if (ok) tally.passed++;
      else tally.failed++;
    }
  }

  return { page, url, step, finish };
}

// `testPage(context, absolutePath)` over every page in one headless Chromium with a fresh
// temporary profile; a page that is not there, or a browser that cannot be driven, fails.
export async function runPages(what, pages, testPage) {
  if (!fs.existsSync(CHROMIUM)) {
    console.error(`${what} test: ${CHROMIUM} is missing; run tests/browser/setup.sh first`);
    process.exit(1);
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
        tally.failed++;
        continue;
      }
      await testPage(context, path.resolve(p));
    }
  } catch (err) {
    console.error(`${what} test: could not drive Chromium: ${err.stack || err}`);
    tally.failed++;
  } finally {
    if (context) await context.close().catch(() => {});
    fs.rmSync(profile, { recursive: true, force: true });
  }
}
