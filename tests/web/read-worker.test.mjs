// The read-ahead helper (www/read-worker.js) run in node as the browser runs it in a worker:
// its SHA-256 against node's on chunkings around the 64-byte blocks, and its shared slots
// read by a consumer as the import worker reads them (Atomics.wait in a worker thread),
// on a file of several ring turns, an empty file and a file of exactly one turn; then the same
// for a file `pt-snap view` serves (`{url, size}`, streamed from a server here); a server that
// sends more than was asked, one that stops mid-file, a file rewritten since it was listed,
// and a file shorter than its size.
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
const eq1 = (got, want, what) => check(JSON.stringify(got) === JSON.stringify(want), `${what} (${JSON.stringify(got)})`);

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

// A file `pt-snap view` serves: this server answers a byte range as pt-snap view does
// (206, `Content-Range` with the file's length now), in chunks of a few KiB (`whole`: it
// answers every byte it has instead, as a server may; `stopAt`: the connection drops after
// that many bytes). Each range asked for is noted in `ranges`.
const serve = (data, { whole, stopAt } = {}) => new Promise((resolve) => {
  const ranges = [];
  const server = http.createServer((req, res) => {
    ranges.push(req.headers.range);
    const m = !whole && /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    const [start, end] = m ? [Number(m[1]), Math.min(Number(m[2]) + 1, data.length)] : [0, data.length];
    res.writeHead(m ? 206 : 200, {
      'content-length': end - start,
      ...(m ? { 'content-range': `bytes ${start}-${end - 1}/${data.length}` } : {}),
    });
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
  server.ranges = ranges;
  server.listen(0, '127.0.0.1', () => resolve(server));
});

for (const [size, extra, what] of [
  [10 * 4096 + 123, 0, 'a served file of two and a half turns'],
  [5 * 4096, 777, 'a server that ignores the range and sends more than was listed'],
]) {
  const server = await serve(pattern(size + extra), { whole: extra > 0 });
  const url = `http://127.0.0.1:${server.address().port}/files/0?token=t`;
  const { data, out, error, answers } = await through(size, 4096, 4, { url, size });
  server.close();
  eq1(server.ranges, [`bytes=0-${size - 1}`], `${what}: one request, for the listed bytes`);
  check(error === null && Buffer.compare(Buffer.from(out), Buffer.from(data)) === 0,
    `${what}: every listed byte reaches the reader once, in order`);
  check(answers[0]?.started === true && answers.at(-1)?.hex === sha(data), `${what}: the SHA-256 of the listed bytes`);
}

{
  const { data, out, error, answers } = await through(0, 4096, 4, { url: 'http://127.0.0.1:9/never', size: 0 });
  check(error === null && out.length === 0 && answers.at(-1)?.hex === sha(data), 'an empty served file: read without asking the server');
}

// What reaches the reader when the read fails: slots emptied as the import worker empties
// them, until one says the read failed (its index), and the helper's last answer.
const failing = async (file, slice, slots, size) => {
  const shared = new SharedArrayBuffer(slots * (4 + slice));
  const state = new Int32Array(shared, 0, slots);
  const bytes = new Uint8Array(shared, slots * 4);
  const { context, answers } = helper();
  let failedAt = null;
  const drain = (async () => {
    for (let i = 0; failedAt === null && i * slice < size; i++) {
      const slot = i % slots;
      while (Atomics.load(state, slot) === 0) await new Promise((r) => setTimeout(r, 1));
      if (Atomics.load(state, slot) < 0) failedAt = i;
      else { Atomics.store(state, slot, 0); Atomics.notify(state, slot); }
    }
  })();
  await context.onmessage({ data: { file, hash: true, state, bytes, slice } });
  await drain;
  return { failedAt, last: answers.at(-1) };
};

{
  const slice = 4096, size = 6 * slice;
  const server = await serve(pattern(size), { stopAt: 3 * slice + 100 });
  const url = `http://127.0.0.1:${server.address().port}/files/0?token=t`;
  const { failedAt, last } = await failing({ url, size }, slice, 2, size);
  server.close();
  check(failedAt === 3 && typeof last?.error === 'string',
    `a server that stops mid-file: the slice it stopped in fails (${failedAt}), and the answer is an error`);
}

{
  // Dumped again to the same path, longer, after the page was told its size.
  const slice = 4096, size = 3 * slice;
  const server = await serve(pattern(size + 5000));
  const url = `http://127.0.0.1:${server.address().port}/files/0?token=t`;
  const { failedAt, last } = await failing({ url, size }, slice, 2, size);
  server.close();
  check(failedAt === 0 && /changed since the page listed it/.test(last?.error ?? ''),
    `a file rewritten since it was listed: nothing of it is read (${failedAt}; ${last?.error})`);
}

{
  // A file shorter than its size said: never hashed or read as if whole.
  const slice = 4096, size = 3 * slice;
  class Shrunk extends Blob { get size() { return size; } }
  const { failedAt, last } = await failing(new Shrunk([pattern(size - 100)]), slice, 2, size);
  check(failedAt === 2 && /shorter/.test(last?.error ?? '') && last?.hex === undefined,
    `a file shorter than its size: its last slice fails and no SHA-256 is given (${failedAt}; ${last?.error})`);
}

if (failures) {
  console.log(`${failures} failed`);
  process.exit(1);
}
