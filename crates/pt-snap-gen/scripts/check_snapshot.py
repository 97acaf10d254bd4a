#!/usr/bin/env python3
"""Validate a pt-snap-gen snapshot with plain Python (no torch).

usage: check_snapshot.py FILE.pickle [--roundtrip]

Checks the invariants of shared/reference/snapshot-format.md §3-§6:
  * top-level keys, one trace list per device
  * segments sorted by address per device, no overlap, blocks contiguous from
    `address`, block sizes sum to total_size, allocated/active/requested sums
  * block states, frames are lists of {name, filename, line} dicts
  * trace entries: keys, actions, non-decreasing time_us, no addr on oom
  * every allocation live at the end of the trace (alloc in window, no later
    free_requested) is an active block at dump time, and every pending-free
    block whose free_requested is in the window has no free_completed after it
  * a backward replay (undo) of each device trace from the dump state succeeds
    with the same rules the pt-snap importer uses
--roundtrip: pickle.dumps(pickle.load(f), 4) must reproduce the file byte for byte
  (proves CPython-identical layout incl. FRAME, MEMOIZE and memo sharing).
"""
import bisect
import pickle
import sys

ACTIONS = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
           "segment_map", "segment_unmap", "oom", "snapshot"}
STATES = {"active_allocated", "active_pending_free", "inactive"}
SEG_KEYS = ["device", "address", "total_size", "allocated_size", "active_size", "requested_size",
            "stream", "segment_type", "segment_pool_id", "is_expandable", "frames", "blocks"]


def fail(msg):
    raise SystemExit(f"FAIL: {msg}")


def check_frames(fr, where):
    if not isinstance(fr, list):
        fail(f"{where}: frames not a list")
    for f in fr:
        if set(f) != {"name", "filename", "line"} or not isinstance(f["line"], int) \
                or isinstance(f["line"], bool):
            fail(f"{where}: bad frame {f!r}")


def check_segments(snap):
    by_dev = {}
    for i, s in enumerate(snap["segments"]):
        if sorted(s) != sorted(SEG_KEYS):
            fail(f"segment {i}: keys {list(s)}")
        by_dev.setdefault(s["device"], []).append(s)
        cur = s["address"]
        alloc = active = req = 0
        for b in s["blocks"]:
            if list(b) != ["address", "size", "requested_size", "state", "frames"]:
                fail(f"segment {i}: block keys {list(b)}")
            if b["address"] != cur:
                fail(f"segment {i}: block at {b['address']} expected {cur}")
            if b["state"] not in STATES:
                fail(f"segment {i}: state {b['state']}")
            if b["size"] <= 0 or b["size"] % 512:
                fail(f"segment {i}: block size {b['size']}")
            check_frames(b["frames"], f"segment {i} block")
            if b["state"] != "inactive" and b["requested_size"] > b["size"]:
                fail(f"segment {i}: requested > size")
            cur += b["size"]
            if b["state"] == "active_allocated":
                alloc += b["size"]
                req += b["requested_size"]
            if b["state"] != "inactive":
                active += b["size"]
        if cur != s["address"] + s["total_size"]:
            fail(f"segment {i}: blocks sum {cur - s['address']} != total {s['total_size']}")
        if (alloc, active, req) != (s["allocated_size"], s["active_size"], s["requested_size"]):
            fail(f"segment {i}: sums {(alloc, active, req)} vs "
                 f"{(s['allocated_size'], s['active_size'], s['requested_size'])}")
        if s["segment_type"] not in ("small", "large") or s["segment_pool_id"] != (0, 0):
            fail(f"segment {i}: type/pool")
        check_frames(s["frames"], f"segment {i}")
    devs = [s["device"] for s in snap["segments"]]
    if devs != sorted(devs):
        fail("segments not grouped by device in ordinal order")
    for d, segs in by_dev.items():
        for a, b in zip(segs, segs[1:]):
            if a["address"] + a["total_size"] > b["address"]:
                fail(f"device {d}: segments unsorted/overlapping at {b['address']}")
    return by_dev


def replay(dev, segs, trace):
    """Backward replay with the importer's rules; returns number of undone events."""
    # state: list of [addr, size, stream, expandable, {block_addr: [size, state]}]
    state = []
    for s in segs:
        blocks = {b["address"]: [b["size"], b["state"]] for b in s["blocks"] if b["state"] != "inactive"}
        state.append([s["address"], s["total_size"], s["stream"], s["is_expandable"], blocks])
    state.sort(key=lambda x: x[0])

    def find(addr, stream):
        keys = [x[0] for x in state]
        i = bisect.bisect_right(keys, addr) - 1
        if i >= 0 and state[i][0] <= addr < state[i][0] + state[i][1] and state[i][2] == stream:
            return i
        return -1

    def block_at(seg, addr):
        for a, (sz, st) in seg[4].items():
            if a <= addr < a + sz:
                return a
        return None

    for k in range(len(trace) - 1, -1, -1):
        e = trace[k]
        act, addr, size, stream = e["action"], e.get("addr", -1), e.get("size", 0), e.get("stream", 0)
        where = f"device {dev} event {k} ({act} addr={addr} size={size})"
        if act == "alloc":
            i = find(addr, stream)
            if i < 0:
                fail(f"{where}: no segment")
            a = block_at(state[i], addr)
            if a is None or state[i][4][a][0] < size or state[i][4][a][1] != "active_allocated":
                fail(f"{where}: no fitting allocated block")
            del state[i][4][a]
        elif act == "free_requested":
            i = find(addr, stream)
            a = block_at(state[i], addr) if i >= 0 else None
            if a is None or state[i][4][a][1] != "active_pending_free":
                fail(f"{where}: block not pending")
            state[i][4][a][1] = "active_allocated"
        elif act == "free_completed":
            i = find(addr, stream)
            if i < 0:
                fail(f"{where}: no segment")
            seg = state[i]
            if addr + size > seg[0] + seg[1]:
                fail(f"{where}: past segment end")
            for a, (sz, st) in seg[4].items():
                if a < addr + size and addr < a + sz:
                    fail(f"{where}: overlaps live block {a}")
            seg[4][addr] = [size, "active_pending_free"]
        elif act == "segment_alloc":
            i = find(addr, stream)
            if i < 0 or state[i][0] != addr or state[i][1] != size or state[i][4]:
                fail(f"{where}: segment missing / size / not empty")
            del state[i]
        elif act == "segment_free":
            state.append([addr, size, stream, False, {}])
            state.sort(key=lambda x: x[0])
        elif act == "segment_map":
            i = find(addr, stream)
            if i < 0 or addr + size > state[i][0] + state[i][1]:
                fail(f"{where}: map range not inside a segment")
            seg = state[i]
            for a, (sz, st) in seg[4].items():
                if a < addr + size and addr < a + sz:
                    fail(f"{where}: live block {a} inside mapped range")
            left = [seg[0], addr - seg[0], stream, True, {a: v for a, v in seg[4].items() if a < addr}]
            right = [addr + size, seg[0] + seg[1] - addr - size, stream, True,
                     {a: v for a, v in seg[4].items() if a >= addr + size}]
            del state[i]
            state.extend(x for x in (left, right) if x[1] > 0)
            state.sort(key=lambda x: x[0])
        elif act == "segment_unmap":
            new = [addr, size, stream, True, {}]
            for x in list(state):
                if x[2] == stream and x[3] and (x[0] + x[1] == addr or x[0] == addr + size):
                    state.remove(x)
                    lo = min(new[0], x[0])
                    new = [lo, new[1] + x[1], stream, True, {**new[4], **x[4]}]
            state.append(new)
            state.sort(key=lambda x: x[0])
        # oom / others: nothing
    return len(trace)


def main():
    path = sys.argv[1]
    raw = open(path, "rb").read()
    snap = pickle.loads(raw)
    if list(snap) != ["segments", "device_traces", "allocator_settings", "external_annotations"]:
        fail(f"top-level keys {list(snap)}")
    by_dev = check_segments(snap)
    traces = snap["device_traces"]
    n_events = 0
    for d, tr in enumerate(traces):
        last_t = None
        live = {}
        pending = set()
        for k, e in enumerate(tr):
            if e["action"] not in ACTIONS:
                fail(f"device {d} event {k}: action {e['action']}")
            base = ["action", "device_free" if e["action"] == "oom" else "addr", "size", "stream",
                    "time_us", "compile_context", "user_metadata"]
            if list(e)[:7] != base or len(e) not in (7, 8) or (len(e) == 8 and list(e)[7] != "frames"):
                fail(f"device {d} event {k}: keys {list(e)}")
            if "frames" in e:
                check_frames(e["frames"], f"device {d} event {k}")
            if last_t is not None and e["time_us"] < last_t:
                fail(f"device {d} event {k}: time_us decreases")
            last_t = e["time_us"]
            if e["action"] == "alloc":
                live[e["addr"]] = e
                pending.discard(e["addr"])
            elif e["action"] == "free_requested":
                live.pop(e["addr"], None)
                pending.add(e["addr"])
            elif e["action"] == "free_completed":
                pending.discard(e["addr"])
        blocks = {b["address"]: b for s in by_dev.get(d, []) for b in s["blocks"]}
        for a in live:
            if blocks.get(a, {}).get("state") != "active_allocated":
                fail(f"device {d}: allocation {a} live at trace end is not active_allocated in segments")
        for a in pending:
            if blocks.get(a, {}).get("state") != "active_pending_free":
                fail(f"device {d}: pending free {a} is not active_pending_free in segments")
        n_events += replay(d, by_dev.get(d, []), tr)
    msg = (f"OK {path}: {len(snap['segments'])} segments, "
           f"{sum(len(s['blocks']) for s in snap['segments'])} blocks, "
           f"events per device {[len(t) for t in traces]}")
    if "--roundtrip" in sys.argv:
        again = pickle.dumps(snap, protocol=4)
        if again != raw:
            n = next((i for i, (x, y) in enumerate(zip(again, raw)) if x != y), min(len(again), len(raw)))
            fail(f"re-pickled bytes differ at offset {n} (len {len(again)} vs {len(raw)})")
        msg += ", byte-identical CPython round trip"
    print(msg)


if __name__ == "__main__":
    main()
