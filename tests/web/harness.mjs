// What the browser tests and benchmarks here share: Debian's Chromium with a throwaway
// profile (never a downloaded browser), named checks that count and say what failed, and a
// watch on console errors and on requests outside the served origin.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/**
 * Chromium with a fresh profile named after `name`; `options` go to playwright's
 * launchPersistentContext. `origin`: requests anywhere else are kept in `outside`. `watch(p)`
 * keeps a page's console errors and uncaught exceptions in `errors`.
 */
export async function launch(root, name, { origin, ...options } = {}) {
  const require = createRequire(path.join(root, 'tests/browser/node_modules/'));
  const { chromium } = require('playwright-core');
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), `pt-snap-${name}-`));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium', headless: true, args: ARGS, ...options,
  });
  const outside = [], errors = [];
  if (origin) {
    ctx.on('request', (r) => {
      const u = r.url();
      if (!u.startsWith(origin) && !u.startsWith('data:') && !u.startsWith('blob:')) outside.push(u);
    });
  }
  return {
    ctx, profile, outside, errors,
    watch(p) {
      p.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
      p.on('pageerror', (e) => errors.push(String(e)));
      return p;
    },
    async close() { await ctx.close(); fs.rmSync(profile, { recursive: true, force: true }); },
  };
}

let passed = 0, failed = 0;
// E2E_ONLY=<part of a name>[|<part>…]: run only the checks it names (while working on a view).
const only = process.env.E2E_ONLY;

/** Runs the check `name`, timed; a throw fails it and the run goes on. */
export async function check(name, fn) {
  if (only && !only.split('|').some((part) => name.includes(part))) return;
  const t0 = Date.now();
  try { await fn(); passed++; console.log(`ok   ${name} (${Date.now() - t0} ms)`); }
  catch (e) { failed++; console.log(`FAIL ${name}: ${e.stack || e.message}`); }
}
export function eq(a, b, what) { if (a !== b) throw new Error(`${what}: expected ${JSON.stringify(b)}, got ${JSON.stringify(a)}`); }
export function ok(cond, what) { if (!cond) throw new Error(what); }

/** The peak cards' values, keyed as `memory_peak`'s row names them. */
export async function peaksShown(p) {
  const v = async (n) => Number(await p.getAttribute(`[data-testid=peak-${n}]`, 'data-value'));
  return { peak_allocated: await v('allocated'), peak_active: await v('active'), peak_reserved: await v('reserved') };
}
/** Each peak card shows its value of `want`, a `memory_peak` row (`what` prefixes a failure). */
export async function eqPeaks(p, want, what = '') {
  const shown = await peaksShown(p);
  for (const k of Object.keys(shown)) eq(shown[k], want[k], `${what}${k}`);
}

/** The last check of a page test: no console error and nothing fetched from elsewhere. */
export async function checkClean(browser) {
  await check('no console error and no request outside the origin', async () => {
    eq(browser.outside.length, 0, `outside requests ${browser.outside.join(', ')}`);
    eq(browser.errors.length, 0, `console errors ${browser.errors.join(' | ')}`);
  });
}

/** Closes `browser`, prints the count and exits 1 if any check failed. */
export async function finish(browser, label = '') {
  await browser.close();
  console.log(`${label}${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}
