// The wasm side of scripts/decode-bench in the browser: the same decode as bench.js, in a
// dedicated worker of a fresh headless Chromium (Debian's, through playwright-core from
// tests/browser/), so the V8 of the browser the app runs in compiles it, cold.
//
//   node bench-chromium.mjs ROOT PKGDIR FILE [RUNS [DECODES]]
//
// PKGDIR holds the `wasm-bindgen --target web` output. The file is set on a file input and
// handed to the worker as a File, which reads it whole into an ArrayBuffer (not timed) and
// then decodes it DECODES times (default 1) through `decode_slices`, a fresh ArrayBuffer per
// 1 MiB slice as bench.js does. RUNS browsers, one after the other; one JSON line per decode:
// {"target":"chromium","first":…,"seconds":…,"summary":"…"}.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

const [root, pkgDir, file, runsArg, decodesArg] = process.argv.slice(2);
if (!root || !pkgDir || !file) {
  console.error('usage: node bench-chromium.mjs ROOT PKGDIR FILE [RUNS [DECODES]]');
  process.exit(2);
}
const decodes = Number(decodesArg || 1);
const require = createRequire(path.join(root, 'tests/browser/node_modules/'));
const { chromium } = require('playwright-core');

const page = `<!doctype html><meta charset="utf-8"><input type="file" id="f">`;
const worker = `
import init, { decode_slices } from './pkg/pt_snap_decode_bench.js';
onmessage = async ({ data: { file, decodes } }) => {
  try {
    await init({ module_or_path: './pkg/pt_snap_decode_bench_bg.wasm' });
    const bytes = await file.arrayBuffer();
    const runs = [];
    for (let i = 0; i < decodes; i++) {
      const start = performance.now();
      const decoded = decode_slices(bytes.byteLength, (s, e) => bytes.slice(s, e));
      const seconds = (performance.now() - start) / 1000;
      runs.push({ seconds, summary: decoded.summary() });
      decoded.free();
    }
    postMessage({ runs });
  } catch (e) {
    postMessage({ error: String(e && e.stack || e) });
  }
};`;
const types = { '.js': 'text/javascript', '.wasm': 'application/wasm' };
const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  if (url.pathname === '/') {
    res.writeHead(200, { 'content-type': 'text/html' }).end(page);
  } else if (url.pathname === '/worker.js') {
    res.writeHead(200, { 'content-type': 'text/javascript' }).end(worker);
  } else if (url.pathname.startsWith('/pkg/') && !url.pathname.includes('..')) {
    const p = path.join(pkgDir, url.pathname.slice(5));
    if (!fs.existsSync(p)) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': types[path.extname(p)] ?? 'application/octet-stream' });
    fs.createReadStream(p).pipe(res);
  } else {
    res.writeHead(404).end();
  }
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${server.address().port}/`;

try {
  for (let i = 0; i < Number(runsArg || 1); i++) {
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'pt-snap-decode-bench-'));
    const ctx = await chromium.launchPersistentContext(profile, {
      executablePath: '/usr/bin/chromium', headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
    });
    try {
      const tab = ctx.pages()[0] ?? await ctx.newPage();
      await tab.goto(base);
      await tab.setInputFiles('#f', file);
      const r = await tab.evaluate((decodes) => new Promise((resolve) => {
        const w = new Worker('./worker.js', { type: 'module' });
        w.onmessage = ({ data }) => resolve(data);
        w.onerror = (e) => resolve({ error: e.message || 'worker error' });
        w.postMessage({ file: document.getElementById('f').files[0], decodes });
      }), decodes);
      if (r.error) throw new Error(r.error);
      r.runs.forEach(({ seconds, summary }, i) => console.log(JSON.stringify(
        { target: 'chromium', first: i === 0, seconds: Number(seconds.toFixed(4)), summary })));
    } finally {
      await ctx.close();
      fs.rmSync(profile, { recursive: true, force: true });
    }
  }
} finally {
  server.close();
}
