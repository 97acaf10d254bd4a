// The helper of the worker that holds a file: it reads the file once, as a stream, and
// hashes it (SHA-256) and/or hands it to that worker through memory the two share. The file
// is a `File`, or one `pt-snap view` serves, `{url, size}`: its bytes stream from the server
// as they arrive (the page never holds the whole file first). The page
// starts it when that worker asks, and passes what it posts on to the worker (a worker's
// own workers make its end racy in Chromium: crates/pt-snap-web/src/file_worker.rs).
//
// Reading (on a cross-origin isolated page; elsewhere the worker reads the file itself a
// range at a time, and this helper only hashes it): the decoder reads synchronously.
// `FileReaderSync` gives it each slice in a new ArrayBuffer, which its worker frees only at
// a garbage collection, and a worker busy with one long import rarely gets one: the
// import's peak carried up to ~300 MiB of slices already read. Here the file streams into
// one reused buffer and on into shared slots, from which the decoder copies each slice, so
// the reading holds the slots whatever the file's size.
//
// Hashing: here, on another thread than the decoder, as the CLI hashes on its second core,
// and a chunk at a time. WebCrypto's digest is faster but takes the whole file and copies
// it: at 109 MB that held ~200 MiB beside the import's peak.
//
// The job posted: {file, hash, state?, bytes?, slice?, progress?}; `file` as above. With `state`, `bytes`
// holds `state.length` slots of `slice` bytes, and slice i of the file goes to slot
// i % state.length; a slot's state is 0 while it is free, the slice's length once it is
// filled (the reader sets it back to 0 when it has copied the slice out), or -1 when the
// file cannot be read. The answers: {started} first (until then the reader does not wait on
// a slot), {hashed: bytes} every `progress` bytes when asked, then {hex} (with `hash`) or
// {done}, or {error}.

const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
// SHA-256 (FIPS 180-4) over chunks of any length (tests/web/read-worker.test.mjs checks it
// against node's on chunkings around the 64-byte blocks).
class Sha256 {
  constructor() {
    this.h = new Int32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
    this.w = new Int32Array(64);
    this.block = new Uint8Array(64);
    this.held = 0;
    this.length = 0;
  }
  update(bytes) {
    this.length += bytes.length;
    let i = 0;
    if (this.held > 0) {
      const n = Math.min(64 - this.held, bytes.length);
      this.block.set(bytes.subarray(0, n), this.held);
      this.held += n;
      i = n;
      if (this.held < 64) return;
      this.compress(this.block, 0, 64);
      this.held = 0;
    }
    const whole = i + ((bytes.length - i) & ~63);
    if (whole > i) this.compress(bytes, i, whole);
    if (whole < bytes.length) {
      this.block.set(bytes.subarray(whole), 0);
      this.held = bytes.length - whole;
    }
  }
  compress(p, from, to) {
    const w = this.w, h = this.h;
    let h0 = h[0], h1 = h[1], h2 = h[2], h3 = h[3], h4 = h[4], h5 = h[5], h6 = h[6], h7 = h[7];
    for (let o = from; o < to; o += 64) {
      for (let t = 0; t < 16; t++) {
        const j = o + t * 4;
        w[t] = (p[j] << 24) | (p[j + 1] << 16) | (p[j + 2] << 8) | p[j + 3];
      }
      for (let t = 16; t < 64; t++) {
        const a = w[t - 15], b = w[t - 2];
        const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
        const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
        w[t] = (w[t - 16] + s0 + w[t - 7] + s1) | 0;
      }
      let a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, k = h7;
      for (let t = 0; t < 64; t++) {
        const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
        const t1 = (k + S1 + ((e & f) ^ (~e & g)) + K[t] + w[t]) | 0;
        const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
        const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
        k = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
      }
      h0 = (h0 + a) | 0; h1 = (h1 + b) | 0; h2 = (h2 + c) | 0; h3 = (h3 + d) | 0;
      h4 = (h4 + e) | 0; h5 = (h5 + f) | 0; h6 = (h6 + g) | 0; h7 = (h7 + k) | 0;
    }
    h[0] = h0; h[1] = h1; h[2] = h2; h[3] = h3; h[4] = h4; h[5] = h5; h[6] = h6; h[7] = h7;
  }
  hex() {
    const bits = this.length * 8;
    const tail = new Uint8Array(((this.held + 8) >> 6) * 64 + 64 - this.held);
    tail[0] = 0x80;
    const view = new DataView(tail.buffer);
    view.setUint32(tail.length - 8, Math.floor(bits / 2 ** 32));
    view.setUint32(tail.length - 4, bits >>> 0);
    this.update(tail);
    return Array.from(this.h, (x) => (x >>> 0).toString(16).padStart(8, "0")).join("");
  }
}

// A job that cannot be received is answered, so that its worker does not wait on a start.
onmessageerror = () => postMessage({ error: "the job could not be received" });

// Waits until `state[slot]` is no longer `now`, without blocking this worker; by polling
// where `Atomics.waitAsync` is missing (Firefox before 145).
const changed = async (state, slot, now) => {
  if (typeof Atomics.waitAsync === "function") {
    const wait = Atomics.waitAsync(state, slot, now);
    if (wait.async) await wait.value;
  } else {
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
};

// The body of a file `pt-snap view` serves, its first `size` bytes asked for. The server
// says the file's length now (`Content-Range: bytes 0-N/LENGTH`): another than the page was
// told is a file rewritten since, which is not read as if it were the one listed.
const served = async ({ url, size }) => {
  if (size === 0) return new Blob([]).stream();
  let response;
  try {
    response = await fetch(url, { headers: { Range: `bytes=0-${size - 1}` } });
  } catch {
    // Not the browser's words: they may name the URL, and with it the token.
    throw new Error('pt-snap view does not answer; it may have stopped');
  }
  if (!response.ok) {
    const said = (await response.text().catch(() => '')).trim();
    throw new Error(`pt-snap view answered HTTP ${response.status}${said ? `: ${said}` : ''}`);
  }
  const length = /\/(\d+)$/.exec(response.headers.get('Content-Range') ?? '')?.[1];
  if (length !== undefined && Number(length) !== size) {
    response.body?.cancel().catch(() => {});
    throw new Error(`the file changed since the page listed it (${length} bytes, not ${size}): reload the page`);
  }
  return response.body;
};

onmessage = async ({ data: { file, hash, state, bytes, slice, progress } }) => {
  postMessage({ started: true });
  const slots = state ? state.length : 0;
  // Waits until the reader has emptied `slot`.
  const free = async (slot) => {
    for (let now = Atomics.load(state, slot); now !== 0; now = Atomics.load(state, slot)) {
      await changed(state, slot, now);
    }
  };
  const fill = (slot, length) => {
    Atomics.store(state, slot, length);
    Atomics.notify(state, slot);
  };
  let slot = 0; // the slot being filled
  let at = 0; // bytes in it so far
  let left = file.size; // bytes of the file not yet in a filled slot
  let want = slots ? Math.min(slice, left) : 0; // the slot's slice length
  let read = 0;
  let told = 0;
  try {
    const sha = hash ? new Sha256() : null;
    const take = async (chunk) => {
      read += chunk.length;
      if (sha) sha.update(chunk);
      if (progress && read - told >= progress) {
        told = read;
        postMessage({ hashed: read });
      }
      let from = 0;
      while (from < chunk.length && want > 0) {
        const n = Math.min(want - at, chunk.length - from);
        bytes.set(chunk.subarray(from, from + n), slot * slice + at);
        at += n;
        from += n;
        if (at === want) {
          fill(slot, want);
          left -= want;
          slot = (slot + 1) % slots;
          at = 0;
          want = Math.min(slice, left);
          if (want > 0) await free(slot);
        }
      }
    };
    // The size `left` counts from, whatever the file becomes meanwhile.
    const stream = file instanceof Blob ? file.slice(0, file.size).stream() : await served(file);
    // A byte stream reads into one buffer it hands back each time; another stream gives
    // chunks of its own, collected between this worker's short tasks.
    let byob = null;
    try {
      byob = stream.getReader({ mode: "byob" });
    } catch {}
    const reader = byob ?? stream.getReader();
    let buffer = new ArrayBuffer(1 << 20);
    for (;;) {
      const { value, done } = await (byob ? reader.read(new Uint8Array(buffer)) : reader.read());
      if (done) break;
      // Not past the size given (a server that ignores the range sends all it has).
      await take(value.subarray(0, Math.max(0, file.size - read)));
      if (byob) buffer = value.buffer;
      if (read >= file.size) break;
    }
    reader.cancel().catch(() => {});
    // A file that shrank before or while it was read: not hashed, nor read, as if whole.
    if (read < file.size) throw new Error(`the file is shorter than it was (${read} bytes, not ${file.size}): was it changed?`);
    postMessage(sha ? { hex: sha.hex() } : { done: true });
  } catch (e) {
    // The slot being filled says so, once the reader has emptied it; a slice already
    // handed over stays good.
    if (want > 0) {
      await free(slot);
      fill(slot, -1);
    }
    postMessage({ error: String(e) });
  }
};
