// The read-ahead helper (www/read-worker.js) run in node as the browser runs it in a worker:
// its SHA-256 against node's on chunkings around the 64-byte blocks, and its shared slots
// read by a consumer as the import worker reads them (Atomics.wait in a worker thread),
// on a file of several ring turns, an empty file and a file of exactly one turn; then the same
// for a file `pt-snap view` serves (`{url, size}`, streamed from a server here), one that grew
// after it was listed, and a server that stops mid-file.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import { Worker } from 'node:worker_threads';

const here = path.dirname(fileURLToPath(import.meta.url));
const source = fs.readFileSync(path.join(here, '../../www/read-worker.js'), 'utf8');
let failures = 0;
const check = (cond, what) => {
  console.log(`${cond ? 'ok  ' : 'FAIL'} ${what}`);
  if (!cond) failures++;
};
const sha = (bytes) => createHash('sha256').update(bytes).digest('hex');

// The helper's globals in a context of their own: its class, and its message handler.
const helper = () => {
  const answers = [];
  const context = vm.createContext({ postMessage: (m) => answers.push(m), Atomics, setTimeout, console, Blob, fetch });
  vm.runInContext(source, context);
  return { context, answers };
};

{
  const { context } = helper();
  const Sha256 = vm.runInContext('Sha256', context);
  const bytes = new Uint8Array(5000).map((_, i) => (i * 131 + 7) & 255);
  let same = true;
  for (const len of [0, 1, 55, 56, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 5000]) {
    for (const piece of [1, 3, 63, 64, 65, 777, 5000]) {
      const h = new Sha256();
      for (let i = 0; i < len; i += piece) h.update(bytes.subarray(i, Math.min(i + piece, len)));
      if (h.hex() !== sha(bytes.subarray(0, len))) {
        same = false;
        console.log(`  differs: ${len} bytes in pieces of ${piece}`);
      }
    }
  }
  check(same, "SHA-256 equals node's for every length and chunking tried");
}

// The consumer: the import worker's `Ring::take`, in a thread that may block.
const consumer = `
const { workerData: { state, bytes, slice, size }, parentPort } = require('node:worker_threads');
const out = Buffer.alloc(size);
let error = null;
for (let start = 0, i = 0; start < size; start += slice, i++) {
  const slot = i % state.length;
  let filled;
  while ((filled = Atomics.load(state, slot)) === 0) Atomics.wait(state, slot, 0);
  if (filled < 0) { error = 'failed at slice ' + i; break; }
  out.set(bytes.subarray(slot * slice, slot * slice + filled), start);
  Atomics.store(state, slot, 0);
  Atomics.notify(state, slot);
}
parentPort.postMessage({ out, error });
`;

const pattern = (size) => new Uint8Array(size).map((_, i) => (i * 7919) % 251);

// `file` (default: a Blob of `data`) read into `slots` slots of `slice` bytes by a consumer.
const through = async (size, slice, slots, file) => {
  const data = pattern(size);
  const shared = new SharedArrayBuffer(slots * (4 + slice));
  const state = new Int32Array(shared, 0, slots);
  const bytes = new Uint8Array(shared, slots * 4);
  const reader = new Worker(consumer, { eval: true, workerData: { state, bytes, slice, size } });
  const read = new Promise((resolve) => reader.once('message', resolve));
  const { context, answers } = helper();
  await context.onmessage({ data: { file: file ?? new Blob([data]), hash: true, state, bytes, slice, progress: slice } });
  const { out, error } = await read;
  await reader.terminate();
  return { data, out: new Uint8Array(out), error, answers };
};

for (const [size, slice, slots, what] of [
  [10 * 4096 + 123, 4096, 4, 'a file of two and a half turns of the ring'],
  [4 * 4096, 4096, 4, 'a file of exactly one turn'],
  [0, 4096, 4, 'an empty file'],
]) {
  const { data, out, error, answers } = await through(size, slice, slots);
  check(error === null && Buffer.compare(Buffer.from(out), Buffer.from(data)) === 0,
    `${what}: every byte reaches the reader once, in order`);
  const last = answers.at(-1);
  check(answers[0]?.started === true && last?.hex === sha(data), `${what}: started first, then the file's SHA-256`);
  const told = answers.filter((a) => a.hashed !== undefined).map((a) => a.hashed);
  check(told.every((n, i) => n > (told[i - 1] ?? 0) && n <= size), `${what}: progress only grows (${told.length} messages)`);
}

// A file that cannot be read: the slot being filled says so, and the answer is an error.
{
  const slice = 4096, slots = 2;
  const shared = new SharedArrayBuffer(slots * (4 + slice));
  const state = new Int32Array(shared, 0, slots);
  const bytes = new Uint8Array(shared, slots * 4);
  class Broken extends Blob {
    get size() { return 3 * slice; }
    slice() { return { stream: () => new ReadableStream({ pull: (c) => c.error(new Error('gone')) }) }; }
  }
  const broken = new Broken([]);
  const { context, answers } = helper();
  await context.onmessage({ data: { file: broken, hash: true, state, bytes, slice } });
  check(Atomics.load(state, 0) === -1 && /gone/.test(answers.at(-1)?.error ?? ''), 'a file that cannot be read: its slot is -1 and the answer an error');
}

// A file `pt-snap view` serves: this server answers a byte range as pt-snap view does, in
// chunks of a few KiB (`whole`: it answers every byte it has instead, as a server may;
// `stopAt`: the connection drops after that many bytes).
const serve = (data, { whole, stopAt } = {}) => new Promise((resolve) => {
  const server = http.createServer((req, res) => {
    const m = !whole && /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    const [start, end] = m ? [Number(m[1]), Math.min(Number(m[2]) + 1, data.length)] : [0, data.length];
    res.writeHead(m ? 206 : 200, { 'content-length': end - start });
    let at = start;
    const more = () => {
      if (stopAt !== undefined && at >= stopAt) return res.destroy();
      if (at >= end) return res.end();
      const n = Math.min(3000, end - at);
      res.write(data.subarray(at, at + n), more);
      at += n;
    };
    more();
  });
  server.listen(0, '127.0.0.1', () => resolve(server));
});

for (const [size, extra, what] of [
  [10 * 4096 + 123, 0, 'a served file of two and a half turns'],
  [0, 0, 'an empty served file'],
  [5 * 4096, 777, "a served file that grew after it was listed (the whole of it sent)"],
]) {
  // The file grew: the server sends all of it, more than the size listed.
  const server = await serve(pattern(size + extra), { whole: extra > 0 });
  const url = `http://127.0.0.1:${server.address().port}/files/0?token=t`;
  const { data, out, error, answers } = await through(size, 4096, 4, { url, size });
  server.close();
  check(error === null && Buffer.compare(Buffer.from(out), Buffer.from(data)) === 0,
    `${what}: every listed byte reaches the reader once, in order`);
  check(answers[0]?.started === true && answers.at(-1)?.hex === sha(data), `${what}: the SHA-256 of the listed bytes`);
}

{
  const slice = 4096, slots = 2, size = 6 * slice;
  const server = await serve(pattern(size), { stopAt: 3 * slice + 100 });
  const url = `http://127.0.0.1:${server.address().port}/files/0?token=t`;
  const shared = new SharedArrayBuffer(slots * (4 + slice));
  const state = new Int32Array(shared, 0, slots);
  const bytes = new Uint8Array(shared, slots * 4);
  const { context, answers } = helper();
  // Empties each slot as it fills, as the import worker does, until one says the read failed.
  let failedAt = null;
  const drain = (async () => {
    for (let i = 0; failedAt === null && i < 6; i++) {
      const slot = i % slots;
      while (Atomics.load(state, slot) === 0) await new Promise((r) => setTimeout(r, 1));
      if (Atomics.load(state, slot) < 0) failedAt = i;
      else { Atomics.store(state, slot, 0); Atomics.notify(state, slot); }
    }
  })();
  await context.onmessage({ data: { file: { url, size }, hash: true, state, bytes, slice } });
  await drain;
  server.close();
  check(failedAt === 3 && typeof answers.at(-1)?.error === 'string',
    `a server that stops mid-file: the slice it stopped in fails (${failedAt}), and the answer is an error`);
}

if (failures) {
  console.log(`${failures} failed`);
  process.exit(1);
}
