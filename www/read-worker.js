// Reads a file ahead of the worker that decodes it, into slots of memory the two share.
//
// The decoder reads synchronously. `FileReaderSync` gives it each slice in a new
// ArrayBuffer, which its worker frees only at a garbage collection, and a worker busy with
// one long import rarely gets one: the import's peak carried up to ~300 MiB of slices
// already read. Here the file streams into one reused buffer, and the decoder copies each
// slice out of a slot, so the reading costs the slots and nothing that grows with the file.
//
// The import worker posts {file, state, bytes, slice}: `bytes` holds `state.length` slots of
// `slice` bytes; slice i of the file goes to slot i % state.length. A slot's state is 0 while
// it is free, the slice's length once it is filled (the reader sets it back to 0 when it has
// copied the slice out), or -1 when the file cannot be read. The first answer is {started}:
// until then the import does not wait on a slot.
onmessage = async ({ data: { file, state, bytes, slice } }) => {
  postMessage({ started: true });
  const slots = state.length;
  // Waits, without blocking this worker, until the reader has emptied `slot`.
  const free = async (slot) => {
    for (;;) {
      const now = Atomics.load(state, slot);
      if (now === 0) return;
      const wait = Atomics.waitAsync(state, slot, now);
      if (wait.async) await wait.value;
    }
  };
  const fill = (slot, length) => {
    Atomics.store(state, slot, length);
    Atomics.notify(state, slot);
  };
  let slot = 0; // the slot being filled
  let at = 0; // bytes in it so far
  let left = file.size; // bytes of the file not yet in a filled slot
  let want = Math.min(slice, left); // the slot's slice length
  // Copies `chunk` into the slots, handing each slot over as it fills.
  const put = async (chunk) => {
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
  try {
    const stream = file.slice(0, file.size).stream();
    let byob = null;
    try {
      byob = stream.getReader({ mode: "byob" });
    } catch {
      // Not a byte stream here: its own chunks, which are collected between this worker's
      // short tasks.
    }
    if (byob) {
      let buffer = new ArrayBuffer(1 << 20);
      for (;;) {
        const { value, done } = await byob.read(new Uint8Array(buffer));
        if (done) break;
        await put(value);
        buffer = value.buffer; // the same memory, handed back by the read
      }
    } else {
      const reader = stream.getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        await put(value);
      }
    }
    // A file that shrank while it was read: the short slot says so, or, at a slot's
    // boundary, the failure does.
    if (want > 0) fill(slot, at > 0 ? at : -1);
  } catch {
    fill(slot, -1);
  }
};
