// The wasm side of scripts/decode-bench: loads the wasm-bindgen (--target nodejs) module
// built from this crate, reads FILE into memory (not timed), then decodes it RUNS times
// through `decode_slices`, which pulls 1 MiB slices back out of JS as the worker does from
// its File. The summary (a digest of the model) is made after the clock stops. One JSON
// line per run, like the native binary (`first` for the process's first decode).
//
//   node bench.js MODULE.js FILE [RUNS]
"use strict";
const fs = require("fs");
const { performance } = require("perf_hooks");

const [modulePath, file, runsArg] = process.argv.slice(2);
if (!modulePath || !file) {
  console.error("usage: node bench.js MODULE.js FILE [RUNS]");
  process.exit(2);
}
const wasm = require(require("path").resolve(modulePath));
const bytes = fs.readFileSync(file);
const runs = Number(runsArg || 1);

// CPU seconds of this (the main) thread, which runs the wasm, from Linux's /proc in ticks
// of 10 ms; null elsewhere. V8 compiles and collects garbage on other threads, as the
// browser does beside its worker, so that work is not counted, as the wall clock would
// count it on a busy machine.
function threadCpu() {
  try {
    const stat = fs.readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 1).trim().split(/\s+/);
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return null;
  }
}
for (let i = 0; i < runs; i++) {
  const cpuStart = threadCpu();
  const start = performance.now();
  // A fresh ArrayBuffer per slice, as FileReaderSync gives the worker.
  const decoded = wasm.decode_slices(bytes.length, (s, e) =>
    bytes.buffer.slice(bytes.byteOffset + s, bytes.byteOffset + e));
  const seconds = (performance.now() - start) / 1000;
  const cpuEnd = threadCpu();
  const cpu = cpuStart === null || cpuEnd === null ? null : Number((cpuEnd - cpuStart).toFixed(2));
  const summary = decoded.summary();
  decoded.free();
  console.log(JSON.stringify({ target: "wasm", first: i === 0, seconds: Number(seconds.toFixed(4)), cpu, summary }));
}
