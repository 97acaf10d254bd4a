#!/usr/bin/env python3
"""Record the oracle query goldens in tests/golden/query/ (driver of regen_queries.sh).

Usage: golden_query.py --oracle PATH --root REPO --out DIR --tmp DIR [--jobs N]

Stdlib only. Everything is rebuilt from scratch in --out:

  <set>/reference.db     SnapshotDB made by the oracle from a fixture (or one
                         shard of an oracle msinsight export, v1 layout);
                         pt_snap_metadata.completed_at is overwritten with
                         FIXED_COMPLETED_AT so the file is byte-reproducible,
                         then the file is compacted with VACUUM INTO (rows,
                         rowids and schema verified identical).
  <set>/set.json         {"fixture", "device", "layout", "import_args", "shard"}
  <set>/cases/<c>.json   one oracle CLI run: {"args", "env", "exit",
                         "stdout_json", "stdout_text", "stderr_json", "stderr_text"}
  contract/...           capabilities / --list / --template-info runs (no DB)
  errors/...             error runs (own DB + extra files, see SET_FILES)

Placeholders in args and in every captured output: <DB> (the set's
reference.db), <SETDIR> (the set directory), <TMP> (the per-run temp root that
holds the run's HOME and CWD), <ORACLE> (the oracle venv, only in tracebacks).
Each run: fresh temp HOME and CWD, PT_SNAP_* variables removed (a case's "env"
adds its own), COLUMNS=200, NO_COLOR=1, TERM=dumb, LC_ALL=C.UTF-8.
Case parameters that depend on the data (peak event ids, addresses, ...) are
derived from the set's DB (sqlite3, read-only) and from the oracle's own
memory_peak output, so they are deterministic.
"""

import concurrent.futures
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import canon_db  # noqa: E402
import oracle_run  # noqa: E402

FIXED_COMPLETED_AT = "2000-01-01T00:00:00.000000+00:00"
BIG = 10**9  # an event id beyond every fixture
TEMPLATES = [
    "active_blocks_at_event", "active_memory_callstack_at_event",
    "active_memory_frame_tree_at_event", "allocation", "allocator_gap", "block",
    "callstack_analysis", "event", "event_frames", "freed_block_lifetime",
    "leak_detection", "memory_peak", "preexisting_live",
]
CATEGORIES = ["basic", "business", "statistical"]

# Sets: fixture, device, import_args, shard (path inside the msinsight dataset dir),
# cap (-n for outputs with thousands of rows; None = record everything),
# unbounded (templates that still get one uncapped default run despite cap),
# tier ("full" battery, or "core" for sets whose data nearly duplicates another
# set's), text (one text-mode run per template), text_event, edge, timeout.
V1_ARGS = ["--format", "msinsight", "--events-per-slice", "300"]
SETS = [
    dict(name="empty_cache", fixture="upstream-pkg/snapshots/snapshot_with_empty_cache.pkl",
         device=0, cap=50, text=True, unbounded=("allocation", "block", "callstack_analysis")),
    dict(name="expandable", fixture="upstream-pkg/snapshots/snapshot_expandable.pkl",
         device=0, cap=50, tier="core"),
    dict(name="multi_dev0", fixture="upstream-pkg/snapshots/snapshot_with_multi_devices.pkl",
         device=0, cap=50, tier="core", timeout=True),
    dict(name="multi_dev1", fixture="upstream-pkg/snapshots/snapshot_with_multi_devices.pkl",
         device=1, cap=50, unbounded=("callstack_analysis",)),
    dict(name="single", fixture="upstream-pkg/snapshots/snapshot_1768383987920985470.pkl",
         device=0, cap=50, tier="core"),
    dict(name="synth_1dev", fixture="synthetic/synth_small_1dev.pkl", device=0,
         text=True, edge=True),
    dict(name="legacy_free", fixture="synthetic/caseA_legacy_free.pkl", device=0,
         tier="core", text_event=True),
    dict(name="v1_shard", fixture="upstream-pkg/snapshots/snapshot_with_empty_cache.pkl",
         device=0, import_args=V1_ARGS, shard="device_0/slice_00005.db", cap=50,
         unbounded=("allocation", "block", "event", "callstack_analysis"), text_event=True),
]
ERRORS_SET = dict(name="errors", fixture="synthetic/synth_small_2dev.pkl", device=None)
NO_DEVICES_FIXTURE = "edge/segments_only.pkl"


# ---------------------------------------------------------------- rendering
def _scalar(v):
    return not isinstance(v, (dict, list))


def _dumps(v):
    return json.dumps(v, ensure_ascii=False)


def render(v):
    """1-space indent; a list/dict whose members are all scalars on one line (below the top):
    canon_db.py's layout, with json.dumps' default separators."""
    return canon_db.render(v, dumps=_dumps, is_scalar=_scalar, inline_scalar_dicts=True)


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(render(obj))


# ---------------------------------------------------------------- oracle runs
class Runner:
    def __init__(self, oracle, tmp):
        self.oracle = oracle
        self.tmp = tmp
        self.venv = os.path.realpath(os.path.join(os.path.dirname(oracle), ".."))
        self.stats = {"runs": 0, "json_bytes_mismatch": []}

    def base_env(self, root):
        env = {k: v for k, v in os.environ.items() if not k.startswith("PT_SNAP_")}
        env.update(HOME=os.path.join(root, "home"), COLUMNS="200", NO_COLOR="1",
                   TERM="dumb", LC_ALL="C.UTF-8")
        return env

    def run(self, run_id, args, env_extra, subst):
        """Run the oracle; subst = [(literal, token)] applied to args and outputs."""
        root = os.path.join(self.tmp, "runs", run_id)
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(os.path.join(root, "home"))
        os.makedirs(os.path.join(root, "cwd"))
        env = self.base_env(root)
        for k, v in env_extra.items():
            for lit, tok in subst:
                v = v.replace(tok, lit)
            env[k] = v
        real_args = []
        for a in args:
            for lit, tok in subst:
                a = a.replace(tok, lit)
            real_args.append(a)
        p = subprocess.run([self.oracle] + real_args, cwd=os.path.join(root, "cwd"), env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        reps = list(subst) + [(root, "<TMP>"), (self.venv, "<ORACLE>"), (self.tmp, "<TMP>")]
        out = self._scrub(p.stdout.decode("utf-8", "replace"), reps)
        err = self._scrub(p.stderr.decode("utf-8", "replace"), reps)
        shutil.rmtree(root, ignore_errors=True)
        return p.returncode, out, err

    @staticmethod
    def _scrub(s, reps):
        # longest literal first so <DB> wins over <SETDIR> wins over <TMP>
        for lit, tok in sorted(reps, key=lambda r: -len(r[0])):
            s = s.replace(lit, tok)
        # uncaught exceptions: rich draws a width-dependent boxed traceback
        s = re.sub(r"(?ms)^╭[^\n]*Traceback \(most recent call last\).*?^╰[^\n]*\n",
                   "<TRACEBACK (rich box elided)>\n", s)
        return s

    def case(self, run_id, args, env_extra, subst):
        code, out, err = self.run(run_id, args, env_extra, subst)
        self.stats["runs"] += 1
        rec = {"args": args, "env": env_extra, "exit": code,
               "stdout_json": None, "stdout_text": None,
               "stderr_json": None, "stderr_text": None}
        for key, text in (("stdout", out), ("stderr", err)):
            if not text:
                continue
            parsed = _parse_json(text)
            if parsed is not _NOJSON:
                rec[key + "_json"] = parsed
                # The oracle prints json.dumps(indent=2, ensure_ascii=False) + "\n";
                # note any output that would not re-render byte-identically.
                if json.dumps(parsed, indent=2, ensure_ascii=False) + "\n" != text:
                    self.stats["json_bytes_mismatch"].append(run_id + ":" + key)
            else:
                rec[key + "_text"] = text
        return rec


_NOJSON = object()


def _parse_json(text):
    if not text.strip() or text.lstrip()[0] not in "{[":
        return _NOJSON
    try:
        return json.loads(text)
    except ValueError:
        return _NOJSON


# ---------------------------------------------------------------- DB building
def _table_dump(db):
    con = sqlite3.connect("file:" + db + "?mode=ro", uri=True)
    try:
        out = {}
        for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                   "ORDER BY name"):
            out[name] = con.execute(f'SELECT rowid, * FROM "{name}" ORDER BY rowid').fetchall()
        out["_schema"] = con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master "
                                     "ORDER BY type, name").fetchall()
        return out
    finally:
        con.close()


def finalize_db(src, dest):
    """Copy the oracle's DB to dest: completed_at fixed, then VACUUM INTO.

    VACUUM only repacks pages (the oracle's incrementally built indexes leave
    them ~40% empty); every table's rows *including rowids* (dictionary and
    callstack_frame have no INTEGER PRIMARY KEY) and the schema are checked
    to be identical, so queries see exactly the oracle's DB.
    """
    work = dest + ".tmp"
    shutil.copyfile(src, work)
    con = sqlite3.connect(work)
    try:
        has = con.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND "
                          "name='pt_snap_metadata'").fetchone()
        if has:
            con.execute("UPDATE pt_snap_metadata SET completed_at = ?", (FIXED_COMPLETED_AT,))
            con.commit()
        if os.path.exists(dest):
            os.remove(dest)
        con.execute("VACUUM INTO ?", (dest,))
    finally:
        con.close()
    if _table_dump(work) != _table_dump(dest):
        sys.exit(f"VACUUM changed the content of {src}")
    os.remove(work)


def oracle_import(runner, root, fixture, import_args, key):
    """Import a fixture copy with the oracle; return the output dir."""
    work = os.path.join(runner.tmp, "imports", key)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "home"))
    os.makedirs(os.path.join(work, "src"))
    out = os.path.join(work, "out")
    name = os.path.basename(fixture)
    src = os.path.join(work, "src", name)
    shutil.copyfile(os.path.join(root, "fixtures", fixture), src)
    env = runner.base_env(work)
    p = subprocess.run([runner.oracle, "import", src, "--json", "--no-focus", "-o", out]
                       + list(import_args), cwd=os.path.join(work, "src"), env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.exit(f"oracle import failed for {fixture} {import_args}: {p.stderr.decode()}")
    return out, name


def build_db(runner, root, spec, dest):
    import_args = spec.get("import_args", [])
    key = re.sub(r"[^A-Za-z0-9_.-]", "_", spec["fixture"] + "_" + "_".join(import_args))
    out, name = oracle_import(runner, root, spec["fixture"], import_args, key)
    if spec.get("shard"):
        ds = os.path.join(out, name + ".msinsight")
        src = os.path.join(ds, spec["shard"])
    else:
        src = os.path.join(out, name + ".db")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    finalize_db(src, dest)


# ---------------------------------------------------------------- probing
class Probe:
    """Deterministic facts about one device of a SnapshotDB (read-only)."""

    def __init__(self, db, device):
        con = sqlite3.connect("file:" + db + "?mode=ro", uri=True)
        self.device = device
        t, b = f"trace_entry_{device}", f"block_{device}"
        self.v2 = bool(con.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND "
                                   "name='callstack'").fetchone())
        q = lambda sql, *a: con.execute(sql, a).fetchall()  # noqa: E731
        one = lambda sql, *a: (q(sql, *a) or [(None,)])[0][0]  # noqa: E731
        self.n_trace = one(f"SELECT COUNT(*) FROM {t}")
        self.n_block = one(f"SELECT COUNT(*) FROM {b}")
        self.min_id = one(f"SELECT MIN(id) FROM {t}")
        self.last = one(f"SELECT MAX(id) FROM {t}")
        self.first_real = one(f"SELECT MIN(id) FROM {t} WHERE id >= 0")
        self.n_real = one(f"SELECT COUNT(*) FROM {t} WHERE id >= 0")
        if self.v2:
            text = (f"(SELECT c.callstack FROM callstack c WHERE c.id = {t}.callstackId)")
        else:
            text = "callstack"
        self.empty_stack_id = one(f"SELECT id FROM {t} WHERE id >= 0 AND "
                                  f"COALESCE({text}, '') = '' ORDER BY id LIMIT 1")
        if self.empty_stack_id is None:
            self.empty_stack_id = one(f"SELECT id FROM {t} WHERE COALESCE({text}, '') = '' "
                                      f"ORDER BY id LIMIT 1")
        self.stack_id = one(f"SELECT id FROM {t} WHERE id >= 0 AND "
                            f"COALESCE({text}, '') != '' ORDER BY id LIMIT 1")
        alloc = q(f"SELECT id, address, size, stream FROM {t} WHERE action = 4 AND id >= 0 "
                  f"ORDER BY id LIMIT 1") or q(f"SELECT id, address, size, stream FROM {t} "
                                                f"ORDER BY id LIMIT 1")
        self.alloc_id, self.address, self.size, self.stream = alloc[0]
        blk = q(f"SELECT id, address, size, requestedSize, allocEventId, freeEventId FROM {b} "
                f"WHERE allocEventId = ? ORDER BY id LIMIT 1", self.alloc_id) or \
            q(f"SELECT id, address, size, requestedSize, allocEventId, freeEventId FROM {b} "
              f"ORDER BY id LIMIT 1")
        (self.blk_id, self.blk_address, self.blk_size, self.blk_req, self.blk_alloc,
         self.blk_free) = blk[0] if blk else (0, 0, 0, 0, 0, 0)
        sizes = [r[0] for r in q(f"SELECT size FROM {b} ORDER BY size")]
        self.median_size = sizes[len(sizes) // 2] if sizes else 0
        self.max_size = sizes[-1] if sizes else 0
        self._con, self._t, self._b = con, t, b

    def captured_groups(self, eid):
        """Distinct non-empty alloc-event callstacks of dynamic blocks live at eid."""
        t, b = self._t, self._b
        if self.v2:
            text = "(SELECT c.callstack FROM callstack c WHERE c.id = t.callstackId)"
        else:
            text = "t.callstack"
        return self._con.execute(
            f"SELECT COUNT(DISTINCT {text}) FROM {b} b JOIN {t} t ON t.id = b.allocEventId "
            f"WHERE b.allocEventId != -1 AND b.allocEventId <= ? AND (b.freeEventId IS NULL "
            f"OR b.freeEventId < 0 OR b.freeEventId > ?) AND COALESCE({text}, '') != ''",
            (eid, eid)).fetchone()[0]


# ---------------------------------------------------------------- case lists
class Cases:
    def __init__(self, device_args):
        self.device_args = device_args
        self.items = []  # (name, args, env)

    def add(self, name, args, env=None):
        assert all(n != name for n, _, _ in self.items), name
        self.items.append((name, args, env or {}))

    def q(self, name, template, params=None, n=None, exact=False, text=False, extra=(),
          env=None, raw_params=None, device=True):
        args = ["query", "<DB>", "--template-use", template]
        if raw_params is not None:
            args += ["--params", raw_params]
        elif params is not None:
            args += ["--params", json.dumps(params)]
        if n is not None:
            args += ["-n", str(n)]
        if exact:
            args.append("--exact-total")
        args += list(extra)
        if device:
            args += self.device_args
        if not text:
            args.append("--json")
        self.add(name, args, env)


def set_cases(spec, pr, peaks):
    """The per-set case list. pr: Probe; peaks: the oracle's memory_peak row.

    Tier "full" runs the whole battery; tier "core" (sets whose data nearly
    duplicates another set's, or is tiny) keeps every template, every order_by
    choice in both directions, every action code, all top_n and stack_bytes
    values, but drops most engine-only variants (type conversions, paging
    combinations) that do not depend on the data and are covered by the full sets.
    """
    cap = spec.get("cap")        # row cap for outputs with thousands of rows
    full = spec.get("tier", "full") == "full"
    unbounded = spec.get("unbounded", ())
    dev = spec["device"]
    c = Cases(["--device", str(dev)] if dev not in (None, 0) else [])
    pa = peaks["peak_allocated_event_id"]
    pc = peaks["peak_active_event_id"]
    pr_ = peaks["peak_reserved_event_id"]
    last = pr.last
    mid = (pc or 0) // 2
    big = cap is not None
    # Peak / last event ids, each distinct id once (the peaks often coincide).
    seen, at = set(), []
    for label, eid in (("peak_active", pc), ("peak_allocated", pa), ("peak_reserved", pr_),
                       ("last", last)):
        if eid is not None and eid not in seen:
            seen.add(eid)
            at.append((label, eid))
    others = at[1:]  # everything but the active peak
    # Event for the top_n / stack_bytes / include_static variants: the peak/last
    # id with the most distinct captured stacks among live dynamic blocks (the
    # active peak unless another has more), so the variants see real stacks.
    fe = max(at, key=lambda x: (pr.captured_groups(x[1]), x[0] == "peak_active"))[1]
    sfx = lambda n: f"__n{n}" if n is not None else ""  # noqa: E731
    frames_ok = not spec.get("shard")  # v1 shards have no frame tables: 2 error runs only

    # ---- memory_peak
    c.q("memory_peak__default", "memory_peak")
    c.q("memory_peak__n5", "memory_peak", n=5)
    if pc:
        c.q("memory_peak__range_before_active_peak", "memory_peak",
            {"start_id": 0, "end_id": pc - 1})
    if full:
        c.q("memory_peak__range_after_active_peak", "memory_peak",
            {"start_id": (pc or 0) + 1})
    c.q("memory_peak__range_empty", "memory_peak", {"start_id": 10, "end_id": 5})
    c.q("memory_peak__range_negative_only", "memory_peak", {"start_id": -1000, "end_id": -1})
    if full:
        c.q("memory_peak__exact_total", "memory_peak", exact=True)
        c.q("memory_peak__range_str_conv", "memory_peak", {"start_id": "0", "end_id": "3"})

    # ---- allocator_gap
    c.q("allocator_gap__default", "allocator_gap")
    if pc:
        c.q("allocator_gap__range_before_active_peak", "allocator_gap",
            {"start_id": 0, "end_id": pc - 1})
    c.q("allocator_gap__range_empty", "allocator_gap", {"start_id": 10, "end_id": 5})
    c.q("allocator_gap__range_single_reserved_peak", "allocator_gap",
        {"start_id": pr_, "end_id": pr_})
    if full:
        c.q("allocator_gap__end_only", "allocator_gap", {"end_id": mid})

    # ---- allocation
    c.q("allocation__default" + sfx(cap), "allocation", n=cap)
    if big and "allocation" in unbounded:
        c.q("allocation__default__all", "allocation")
    c.q("allocation__min_id_max_id", "allocation", {"min_id": mid, "max_id": mid + 20})
    c.q("allocation__max_id_neg1" + sfx(cap), "allocation", {"max_id": -1}, n=cap, exact=True)
    c.q("allocation__min_allocated_peak" + sfx(cap), "allocation",
        {"min_allocated": peaks["peak_allocated"]}, n=cap)
    c.q("allocation__min_active_peak_minus1__n20", "allocation",
        {"min_active": (peaks["peak_active"] or 1) - 1}, n=20, exact=True)
    c.q("allocation__min_reserved_peak__n20", "allocation",
        {"min_reserved": peaks["peak_reserved"]}, n=20, exact=True)
    for col in ("id", "allocated", "active", "reserved"):
        for d in ("ASC", "DESC"):
            c.q(f"allocation__order_{col}_{d.lower()}__n10", "allocation",
                {"order_by": col, "order_dir": d}, n=10)
    c.q("allocation__order_ci_ALLOCATED_desc__n10", "allocation",
        {"order_by": "ALLOCATED", "order_dir": "desc"}, n=10)
    c.q("allocation__offset_tail__n10", "allocation", {"offset": max(pr.n_trace - 5, 0)}, n=10)
    c.q("allocation__limit10_offset20_exact", "allocation", {"limit": 10, "offset": 20},
        exact=True)
    if full:
        c.q("allocation__conv_str_and_float", "allocation", {"min_id": "5", "max_id": 30.9})
        c.q("allocation__conv_limit_true", "allocation", {"limit": True})
        c.q("allocation__limit10_offset5", "allocation", {"limit": 10, "offset": 5})
        c.q("allocation__limit0", "allocation", {"limit": 0})
        c.q("allocation__n7_limit5", "allocation", {"limit": 5}, n=7)
        c.q("allocation__n5_limit10", "allocation", {"limit": 10}, n=5)
        c.q("allocation__n0_min_id_tail", "allocation", {"min_id": last - 5}, n=0)

    # ---- block
    c.q("block__default" + sfx(cap), "block", n=cap)
    if big and "block" in unbounded:
        c.q("block__default__all", "block")
    c.q("block__id", "block", {"id": pr.blk_id})
    c.q("block__address", "block", {"address": pr.blk_address}, n=cap)
    c.q("block__size__n10", "block", {"size": pr.blk_size}, n=10, exact=True)
    c.q("block__allocEventId", "block", {"allocEventId": pr.blk_alloc})
    c.q("block__allocEventId_neg1__n10", "block", {"allocEventId": -1}, n=10, exact=True)
    c.q("block__freeEventId_neg1__n10", "block", {"freeEventId": -1}, n=10, exact=True)
    c.q("block__min_size_median__n10", "block", {"min_size": pr.median_size}, n=10, exact=True)
    for col in ("id", "address", "size", "requestedSize", "state", "allocEventId",
                "freeEventId"):
        for d in ("ASC", "DESC"):
            c.q(f"block__order_{col}_{d.lower()}__n10", "block",
                {"order_by": col, "order_dir": d}, n=10)
    c.q("block__order_ci_ALLOCEVENTID_asc__n10", "block",
        {"order_by": "ALLOCEVENTID", "order_dir": "asc"}, n=10)
    c.q("block__limit5_offset5_exact", "block", {"limit": 5, "offset": 5}, exact=True)
    if full:
        c.q("block__requestedSize__n10", "block", {"requestedSize": pr.blk_req}, n=10,
            exact=True)
        c.q("block__max_size_median__n10", "block", {"max_size": pr.median_size}, n=10,
            exact=True)
        c.q("block__alloc_range__n20", "block",
            {"min_allocEventId": mid, "max_allocEventId": mid + 30}, n=20, exact=True)
        c.q("block__conv_min_size_str_max_float__n10", "block",
            {"min_size": str(pr.median_size), "max_size": float(pr.max_size)}, n=10)

    # ---- event (callstack text makes rows big: small windows)
    ev = 10 if big else None
    c.q("event__default" + sfx(ev), "event", n=ev)
    if big and "event" in unbounded:
        c.q("event__default__all", "event")
    c.q("event__id_active_peak", "event", {"id": pc})
    c.q("event__min_id_max_id", "event", {"min_id": mid, "max_id": mid + 4})
    for a in range(9):
        c.q(f"event__action_{a}__n3_exact", "event", {"action": a}, n=3, exact=True)
    c.q("event__address__n5_exact", "event", {"address": pr.address}, n=5, exact=True)
    c.q("event__stream__n3_exact", "event", {"stream": pr.stream}, n=3, exact=True)
    c.q("event__min_reserved_peak__n3_exact", "event",
        {"min_reserved": peaks["peak_reserved"]}, n=3, exact=True)
    for col in ("id", "action", "address", "size", "stream", "allocated", "active",
                "reserved", "callstack"):
        for d in ("ASC", "DESC"):
            c.q(f"event__order_{col}_{d.lower()}__n3", "event",
                {"order_by": col, "order_dir": d}, n=3)
    c.q("event__order_ci_SIZE_desc__n3", "event", {"order_by": "SIZE", "order_dir": "desc"},
        n=3)
    # a 6-row window that holds negative/synthetic rows and the first captured stack
    lo = (pr.stack_id if pr.stack_id is not None else 0) - 3
    if pr.min_id is not None:
        lo = max(lo, pr.min_id)
    for sb in (-1, 0, 16, 64, 100000):
        c.q(f"event__stack_bytes_{sb}__n6".replace("-", "neg"), "event",
            {"stack_bytes": sb, "min_id": lo}, n=6)
    c.q("event__stack_bytes_16__active_peak", "event", {"stack_bytes": 16, "id": pc})
    if full:
        if pr.min_id is not None and pr.min_id < 0:
            c.q("event__id_min_negative", "event", {"id": pr.min_id})
        if pr.stack_id is not None:
            c.q("event__stack_bytes_64__first_stacked_event", "event",
                {"stack_bytes": 64, "id": pr.stack_id})
        if pr.empty_stack_id is not None:
            c.q("event__stack_bytes_0__empty_stack_event", "event",
                {"stack_bytes": 0, "id": pr.empty_stack_id})
        c.q("event__conv_action_str_min_id_true__n3", "event",
            {"action": "4", "min_id": True}, n=3)
        c.q("event__limit3_offset2_exact", "event", {"limit": 3, "offset": 2}, exact=True)
        c.q("event__n3_limit5", "event", {"limit": 5}, n=3)

    # ---- event_frames
    if frames_ok:
        for label, eid in at:
            c.q(f"event_frames__{label}", "event_frames", {"event_id": eid})
        c.q("event_frames__peak_active_root_first", "event_frames",
            {"event_id": pc, "frame_order": "root_first"})
        if pr.empty_stack_id is not None:
            c.q("event_frames__empty_stack", "event_frames", {"event_id": pr.empty_stack_id})
        if pr.min_id is not None and pr.min_id < 0:
            c.q("event_frames__negative_id", "event_frames", {"event_id": pr.min_id})
        if full:
            c.q("event_frames__ci_ROOT_FIRST", "event_frames",
                {"event_id": pc, "frame_order": "ROOT_FIRST"})
            if pr.stack_id is not None and pr.stack_id not in seen:
                c.q("event_frames__first_stacked_event", "event_frames",
                    {"event_id": pr.stack_id})
            c.q("event_frames__conv_str", "event_frames", {"event_id": str(pc)})
            c.q("event_frames__n3_exact", "event_frames", {"event_id": pc}, n=3, exact=True)
    else:
        c.q("event_frames__peak_active", "event_frames", {"event_id": pc})
        c.q("event_frames__peak_active_root_first", "event_frames",
            {"event_id": pc, "frame_order": "root_first"})
    c.q("event_frames__nonexistent", "event_frames", {"event_id": BIG})

    # ---- active_memory_callstack_at_event
    amc = "active_memory_callstack_at_event"
    c.q(f"{amc}__peak_active", amc, {"event_id": pc})
    for label, eid in others:
        c.q(f"{amc}__{label}__top5", amc, {"event_id": eid, "top_n": 5})
    for tn in (0, 1, 3, -1):
        for ex in (False, True):
            c.q(f"{amc}__top_n_{tn}{'_exact' if ex else ''}".replace("-", "neg"), amc,
                {"event_id": fe, "top_n": tn}, exact=ex)
    for sb in (-1, 0, 16, 64, 100000):
        c.q(f"{amc}__stack_bytes_{sb}__top3".replace("-", "neg"), amc,
            {"event_id": fe, "top_n": 3, "stack_bytes": sb})
    c.q(f"{amc}__include_static_false__top5", amc,
        {"event_id": fe, "include_static": False, "top_n": 5})
    c.q(f"{amc}__min_size_median__top5", amc,
        {"event_id": fe, "min_size": pr.median_size, "top_n": 5})
    c.q(f"{amc}__event_neg1__top3", amc, {"event_id": -1, "top_n": 3})
    if full:
        c.q(f"{amc}__include_static_str_0__top3", amc,
            {"event_id": fe, "include_static": "0", "top_n": 3})
        c.q(f"{amc}__include_static_str_yes__top3", amc,
            {"event_id": fe, "include_static": "yes", "top_n": 3})
        c.q(f"{amc}__n2_top3_exact", amc, {"event_id": fe, "top_n": 3}, n=2, exact=True)
        c.q(f"{amc}__event_nonexistent__top3", amc, {"event_id": BIG, "top_n": 3})

    # ---- active_memory_frame_tree_at_event
    ft = "active_memory_frame_tree_at_event"
    if frames_ok:
        c.q(f"{ft}__peak_active", ft, {"event_id": pc})
        for label, eid in others:
            c.q(f"{ft}__{label}" + sfx(20 if big else None), ft, {"event_id": eid},
                n=(20 if big else None))
        c.q(f"{ft}__include_static_false" + sfx(20 if big else None), ft,
            {"event_id": pc, "include_static": False}, n=(20 if big else None))
        c.q(f"{ft}__min_size_median", ft, {"event_id": pc, "min_size": pr.median_size})
        c.q(f"{ft}__event_neg1", ft, {"event_id": -1})
        if full:
            c.q(f"{ft}__include_static_str_0__n10", ft,
                {"event_id": pc, "include_static": "0"}, n=10)
            c.q(f"{ft}__n5_exact", ft, {"event_id": pc}, n=5, exact=True)
    else:
        c.q(f"{ft}__peak_active", ft, {"event_id": pc})
        c.q(f"{ft}__include_static_false", ft, {"event_id": pc, "include_static": False})

    # ---- freed_block_lifetime
    c.q("freed_block_lifetime__default", "freed_block_lifetime")
    c.q("freed_block_lifetime__n1_exact", "freed_block_lifetime", n=1, exact=True)
    if full:
        c.q("freed_block_lifetime__n1", "freed_block_lifetime", n=1)

    # ---- leak_detection
    c.q("leak_detection__default" + sfx(cap), "leak_detection", n=cap)
    c.q("leak_detection__min_size_median__n10", "leak_detection",
        {"min_size": pr.median_size}, n=10, exact=True)
    c.q("leak_detection__limit5_exact", "leak_detection", {"limit": 5}, exact=True)
    if full:
        c.q("leak_detection__n3_limit10", "leak_detection", {"limit": 10}, n=3)
        c.q("leak_detection__min_size_huge", "leak_detection", {"min_size": 1 << 50})

    # ---- preexisting_live
    for label, eid in at:
        c.q(f"preexisting_live__{label}", "preexisting_live", {"event_id": eid})
    c.q("preexisting_live__event_neg1", "preexisting_live", {"event_id": -1})
    c.q("preexisting_live__event_mid", "preexisting_live", {"event_id": mid})
    if full:
        c.q("preexisting_live__event_nonexistent", "preexisting_live", {"event_id": BIG})

    # ---- active_blocks_at_event
    abe = "active_blocks_at_event"
    c.q(f"{abe}__peak_active" + sfx(cap), abe, {"event_id": pc}, n=cap, exact=True)
    for label, eid in others:
        c.q(f"{abe}__{label}__n10", abe, {"event_id": eid}, n=10, exact=True)
    for col in ("size", "requestedSize", "allocEventId", "freeEventId", "id"):
        for d in ("ASC", "DESC"):
            c.q(f"{abe}__order_{col}_{d.lower()}__n10", abe,
                {"event_id": pc, "order_by": col, "order_dir": d}, n=10)
    c.q(f"{abe}__order_ci_REQUESTEDSIZE_asc__n10", abe,
        {"event_id": pc, "order_by": "REQUESTEDSIZE", "order_dir": "asc"}, n=10)
    c.q(f"{abe}__include_static_false__n10", abe, {"event_id": pc, "include_static": False},
        n=10, exact=True)
    c.q(f"{abe}__min_size_median__n10", abe, {"event_id": pc, "min_size": pr.median_size},
        n=10, exact=True)
    c.q(f"{abe}__event_neg1__n10", abe, {"event_id": -1}, n=10, exact=True)
    if full:
        c.q(f"{abe}__limit5_offset5_exact", abe, {"event_id": pc, "limit": 5, "offset": 5},
            exact=True)
        c.q(f"{abe}__n5_exact", abe, {"event_id": pc}, n=5, exact=True)

    # ---- callstack_analysis
    csa = "callstack_analysis"
    if "callstack_analysis" in unbounded or not big:
        c.q(f"{csa}__default", csa)
    else:
        c.q(f"{csa}__default__n10_exact", csa, n=10, exact=True)
    c.q(f"{csa}__min_count_1" + ("__n10_exact" if big else ""), csa, {"min_count": 1},
        n=(10 if big else None), exact=big)
    c.q(f"{csa}__min_count_100", csa, {"min_count": 100})
    c.q(f"{csa}__min_size_median__n5_exact", csa, {"min_count": 1, "min_size": pr.median_size},
        n=5, exact=True)
    if full:
        c.q(f"{csa}__limit3_exact", csa, {"limit": 3}, exact=True)
        c.q(f"{csa}__conv_min_count_str__limit2", csa, {"min_count": "1", "limit": 2})

    # ---- text mode: both "has_more" trailer lines on every set
    tn = 3 if pr.n_trace > 3 else max(pr.n_trace - 1, 1)  # must leave rows over
    c.q(f"text__allocation__n{tn}", "allocation", n=tn, text=True)
    c.q(f"text__allocation__n{tn}_exact", "allocation", n=tn, exact=True, text=True)
    if spec.get("text_event"):
        c.q("text__event__n3", "event", n=3, text=True)
    if spec.get("text"):
        text_params = {
            "active_blocks_at_event": {"event_id": pc},
            "active_memory_callstack_at_event": {"event_id": pc, "top_n": 2},
            "active_memory_frame_tree_at_event": {"event_id": pc},
            "event_frames": {"event_id": pc},
            "preexisting_live": {"event_id": pc},
            "event": {"stack_bytes": 64},
        }
        for t in TEMPLATES:
            if t == "allocation":
                continue
            n = 3 if t in ("active_blocks_at_event", "block", "event",
                           "active_memory_frame_tree_at_event", "callstack_analysis",
                           "leak_detection") else None
            c.q(f"text__{t}__typical" + (f"_n{n}" if n else ""), t, text_params.get(t), n=n,
                text=True)
        c.q("text__event__order_callstack_desc__n2", "event",
            {"order_by": "callstack", "order_dir": "DESC"}, n=2, text=True)
        c.q("text__event__limit2_offset1_exact", "event", {"limit": 2, "offset": 1},
            exact=True, text=True)
        c.q("text__active_memory_callstack_at_event__top_n0_sb16", amc,
            {"event_id": pc, "top_n": 0, "stack_bytes": 16}, text=True)
        c.q("text__allocator_gap__range_empty", "allocator_gap",
            {"start_id": 10, "end_id": 5}, text=True)
        c.q("text__event_frames__nonexistent", "event_frames", {"event_id": BIG}, text=True)
        c.q("text__allocation__limit0_has_more_no_rows", "allocation", {"limit": 0}, text=True)

    # ---- device handling / timeouts
    if spec["name"] == "multi_dev0":
        c.add("device__explicit_0__memory_peak",
              ["query", "<DB>", "--template-use", "memory_peak", "--device", "0", "--json"])
        c.add("device__explicit_1__memory_peak",
              ["query", "<DB>", "--template-use", "memory_peak", "--device", "1", "--json"])
        c.add("error__device_unknown_2__text",
              ["query", "<DB>", "--template-use", "memory_peak", "--device", "2"])
    if spec.get("timeout"):
        c.q("error__timeout_1e-06__callstack_analysis", csa, extra=["--timeout", "1e-06"])
        c.q("error__timeout_1e-06__frame_tree__text", ft, {"event_id": pc},
            extra=["--timeout", "1e-06"], text=True)

    # ---- extra edge cases (small synthetic set)
    if spec.get("edge"):
        c.q("edge__min_id_bigger_than_i64", "allocation", {"min_id": 99999999999999999999})
        c.q("edge__min_id_below_i64__limit2", "allocation",
            {"min_id": -99999999999999999999, "limit": 2})
        c.q("edge__duplicate_json_key_last_wins", "allocation",
            raw_params='{"limit": 1, "limit": 2}')
        c.q("edge__params_empty_string", "allocation", raw_params="")
        c.q("edge__params_empty_object", "allocation", raw_params="{}")
        c.q("edge__nneg3_is_unlimited", "allocation", n=-3)
        c.q("edge__n0_is_unlimited", "allocation", n=0)
        c.q("edge__bool_param_int_0", "active_blocks_at_event",
            {"event_id": pc, "include_static": 0})
        c.q("edge__bool_param_list_nonempty", "active_blocks_at_event",
            {"event_id": pc, "include_static": [0]})
        c.q("edge__bool_param_str_TRUE", "active_blocks_at_event",
            {"event_id": pc, "include_static": "TRUE"})
        c.q("edge__timeout_flag_5", "memory_peak", extra=["--timeout", "5"])
        c.q("edge__timeout_flag_0", "memory_peak", extra=["--timeout", "0"])
        c.q("edge__timeout_flag_neg1", "memory_peak", extra=["--timeout", "-1"])
        c.q("edge__timeout_env_30", "memory_peak", env={"PT_SNAP_QUERY_TIMEOUT": "30"})
        c.q("edge__timeout_env_blank", "memory_peak", env={"PT_SNAP_QUERY_TIMEOUT": " "})
        c.q("edge__timeout_env_0", "memory_peak", env={"PT_SNAP_QUERY_TIMEOUT": "0"})
        c.q("edge__timeout_env_abc_flag_wins", "memory_peak", extra=["--timeout", "5"],
            env={"PT_SNAP_QUERY_TIMEOUT": "abc"})
        c.q("edge__max_work_rows_ignored_standalone", "memory_peak",
            extra=["--max-work-rows", "5"])
        c.add("edge__db_via_env", ["query", "--template-use", "memory_peak", "--json"],
              {"PT_SNAP_DB_PATH": "<DB>"})
        c.add("edge__db_via_env__text", ["query", "--template-use", "memory_peak"],
              {"PT_SNAP_DB_PATH": "<DB>"})
        c.add("edge__explicit_db_beats_env", ["query", "<DB>", "--template-use",
                                              "memory_peak", "--json"],
              {"PT_SNAP_DB_PATH": "<SETDIR>/does_not_exist.db"})
        c.add("edge__json_flag_before_db", ["query", "--json", "<DB>", "--template-use",
                                            "memory_peak"])
        c.add("edge__device_0_on_single_device_db", ["query", "<DB>", "--template-use",
                                                     "memory_peak", "--device", "0", "--json"])
    return c


def error_cases():
    c = Cases([])
    d = ["query", "<DB>"]

    def both(name, args, env=None):
        c.add(name + "__json", args + ["--json"], env)
        c.add(name + "__text", args, env)

    both("template_unknown", d + ["--template-use", "nosuch"])
    both("param_misspelled", d + ["--template-use", "allocation", "--params", '{"min_idd": 1}'])
    both("param_missing_required", d + ["--template-use", "event_frames"])
    c.q("param_required_null__json", "preexisting_live", raw_params='{"event_id": null}')
    both("param_bad_choice", d + ["--template-use", "allocation", "--params",
                                  '{"order_by": "bogus"}'])
    c.q("param_bad_choice_int__json", "block", raw_params='{"order_dir": 1}')
    c.q("param_bad_choice_bool__json", "allocation", raw_params='{"order_dir": true}')
    both("param_bad_int", d + ["--template-use", "allocation", "--params",
                               '{"min_id": "abc"}'])
    c.q("param_bad_int_float_str__json", "allocation", raw_params='{"min_id": "3.5"}')
    c.q("param_bad_int_list__json", "allocation", raw_params='{"min_id": [1]}')
    c.q("param_bad_int_object__json", "allocation", raw_params='{"limit": {"a": 1}}')
    c.q("param_bad_int_nan__json", "allocation", raw_params='{"min_id": NaN}')
    c.q("param_int_infinity_crash__json", "allocation", raw_params='{"min_id": Infinity}')
    c.q("param_unknown_on_paramless_template__json", "freed_block_lifetime",
        raw_params='{"limit": 1}')
    both("params_not_json", d + ["--template-use", "allocation", "--params", "{bad"])
    both("params_array", d + ["--template-use", "allocation", "--params", "[1, 2]"])
    c.q("params_null__json", "allocation", raw_params="null")
    c.q("params_string__json", "allocation", raw_params='"x"')
    both("device_unknown_7", d + ["--template-use", "memory_peak", "--device", "7"])
    c.q("device_negative__json", "memory_peak", extra=["--device", "-1"])
    both("device_not_integer", d + ["--template-use", "memory_peak", "--device", "x"])
    both("db_missing", ["query", "<SETDIR>/does_not_exist.db", "--template-use",
                        "memory_peak"])
    both("db_text_file", ["query", "<SETDIR>/not_snapshot.txt", "--template-use",
                          "memory_peak"])
    both("db_sqlite_without_dictionary", ["query", "<SETDIR>/not_snapshot.db",
                                          "--template-use", "memory_peak"])
    c.add("db_empty_file__json", ["query", "<SETDIR>/empty.db", "--template-use",
                                  "memory_peak", "--json"])
    c.add("no_db_no_focus__json", ["query", "--template-use", "memory_peak", "--json"])
    c.add("no_db_no_focus__text", ["query", "--template-use", "memory_peak"])
    c.add("db_env_missing__json", ["query", "--template-use", "memory_peak", "--json"],
          {"PT_SNAP_DB_PATH": "<SETDIR>/does_not_exist.db"})
    both("category_unknown", ["query", "--list", "--category", "bogus"])
    c.add("category_unknown_implied_list__json", ["query", "--category", "bogus", "--json"])
    both("template_use_missing", d)
    both("template_info_unknown", ["query", "--template-info", "nosuch"])
    both("timeout_1e-06", d + ["--template-use", "callstack_analysis", "--timeout", "1e-06"])
    both("timeout_env_abc", d + ["--template-use", "memory_peak"],
         {"PT_SNAP_QUERY_TIMEOUT": "abc"})
    both("slice_0_standalone", d + ["--template-use", "event", "--slice", "0"])
    both("n_not_integer", d + ["--template-use", "allocation", "-n", "abc"])
    both("timeout_not_float", d + ["--template-use", "allocation", "--timeout", "soon"])
    both("no_devices", ["query", "<SETDIR>/no_devices.db", "--template-use", "memory_peak"])
    c.add("no_devices_with_device__json", ["query", "<SETDIR>/no_devices.db",
                                           "--template-use", "memory_peak", "--device", "0",
                                           "--json"])
    c.q("max_work_rows_zero__json", "memory_peak", extra=["--max-work-rows", "0"])
    c.q("unknown_option_before_json__quirk", "memory_peak", extra=["--bogus"])
    c.add("unknown_option_after_json", d + ["--template-use", "memory_peak", "--json",
                                            "--bogus"])
    c.q("template_unknown_with_timeout__json", "nosuch", extra=["--timeout", "1e-06"])
    c.q("template_unknown_bad_params__json", "nosuch", raw_params="{bad")
    return c


def contract_cases():
    c = Cases([])
    c.add("capabilities", ["capabilities", "--json"])
    c.add("list", ["query", "--list", "--json"])
    c.add("list.txt", ["query", "--list"])
    for cat in CATEGORIES:
        c.add(f"list_{cat}", ["query", "--list", "--category", cat, "--json"])
        c.add(f"list_{cat}.txt", ["query", "--list", "--category", cat])
    c.add("list_basic__implied_by_category", ["query", "--category", "basic", "--json"])
    for t in TEMPLATES:
        c.add(f"template_info/{t}", ["query", "--template-info", t, "--json"])
        c.add(f"template_info/{t}.txt", ["query", "--template-info", t])
    c.add("template_info/allocation__with_db_path.txt", ["query", "my.db", "--template-info",
                                                    "allocation"])
    return c


# ---------------------------------------------------------------- main
def run_cases(runner, cases, set_name, subst, out_dir, jobs, fname):
    def one(item):
        name, args, env = item
        run_id = set_name + "/" + name.replace("/", "_")
        return name, runner.case(run_id, args, env, subst)

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        results = list(ex.map(one, cases.items))
    for name, rec in results:
        write_json(os.path.join(out_dir, fname(name)), rec)
    return dict(results)


def main():
    ap = oracle_run.driver_arguments(out=True, jobs=True)
    ap.add_argument("--timeout-repeats", type=int, default=10)
    a = ap.parse_args()
    root, out = os.path.realpath(a.root), os.path.realpath(a.out)
    runner = Runner(os.path.realpath(a.oracle), os.path.realpath(a.tmp))

    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    summary = []

    # -- build every set's DB first (the two multi sets share one import)
    for spec in SETS + [ERRORS_SET]:
        build_db(runner, root, spec, os.path.join(out, spec["name"], "reference.db"))
        write_json(os.path.join(out, spec["name"], "set.json"), {
            "fixture": "fixtures/" + spec["fixture"],
            "device": spec["device"],
            "layout": "v1" if spec.get("shard") else "v2",
            "import_args": spec.get("import_args", []),
            "shard": spec.get("shard"),
        })
    # -- extra files of the errors set
    edir = os.path.join(out, "errors")
    build_db(runner, root, {"fixture": NO_DEVICES_FIXTURE}, os.path.join(edir, "no_devices.db"))
    with open(os.path.join(edir, "not_snapshot.txt"), "w", encoding="utf-8", newline="\n") as f:
        f.write("this is a text file, not a SnapshotDB\n")
    open(os.path.join(edir, "empty.db"), "wb").close()
    con = sqlite3.connect(os.path.join(edir, "not_snapshot.db"))
    con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    con.execute("INSERT INTO notes VALUES (1, 'an SQLite file without a dictionary table')")
    con.commit()
    con.close()

    def stage(set_name):
        """Copy the set dir (minus cases) to a temp SETDIR; return (setdir, db, subst)."""
        setdir = os.path.join(runner.tmp, "sets", set_name)
        shutil.rmtree(setdir, ignore_errors=True)
        os.makedirs(setdir)
        src = os.path.join(out, set_name)
        for fn in sorted(os.listdir(src)):
            if os.path.isfile(os.path.join(src, fn)):
                shutil.copyfile(os.path.join(src, fn), os.path.join(setdir, fn))
        db = os.path.join(setdir, "reference.db")
        return setdir, db, [(db, "<DB>"), (setdir, "<SETDIR>")]

    case_file = lambda n: os.path.join("cases", n + ".json")  # noqa: E731

    for spec in SETS:
        setdir, db, subst = stage(spec["name"])
        pr = Probe(db, spec["device"])
        dev_args = ["--device", str(spec["device"])] if spec["device"] not in (None, 0) else []
        mp = runner.case(spec["name"] + "/_probe", ["query", "<DB>", "--template-use",
                                                    "memory_peak", "--json"] + dev_args,
                         {}, subst)
        peaks = mp["stdout_json"]["rows"][0]
        cases = set_cases(spec, pr, peaks)
        res = run_cases(runner, cases, spec["name"], subst, os.path.join(out, spec["name"]),
                        a.jobs, case_file)
        summary.append((spec["name"], len(res), {k: v["exit"] for k, v in res.items()}))
        if spec.get("timeout"):
            check_timeouts(runner, cases, spec["name"], subst, res, a.timeout_repeats)
        print(f"{spec['name']}: {len(res)} cases", flush=True)

    setdir, db, subst = stage("errors")
    cases = error_cases()
    res = run_cases(runner, cases, "errors", subst, edir, a.jobs, case_file)
    check_timeouts(runner, cases, "errors", subst, res, a.timeout_repeats)
    summary.append(("errors", len(res), {k: v["exit"] for k, v in res.items()}))
    print(f"errors: {len(res)} cases", flush=True)

    # contract: --template-info with a DB path uses the errors set's DB (only echoed)
    cases = contract_cases()
    cdir = os.path.join(out, "contract")

    def cname(n):
        return n if n.endswith(".txt") else n + ".json"

    res = run_cases(runner, cases, "contract", subst, cdir, a.jobs, cname)
    cap = res["capabilities"]
    if cap["stdout_json"] is not None:
        cap["stdout_json"]["skills"] = []
        write_json(os.path.join(cdir, "capabilities.json"), cap)
    summary.append(("contract", len(res), {k: v["exit"] for k, v in res.items()}))
    print(f"contract: {len(res)} cases", flush=True)

    bad = runner.stats["json_bytes_mismatch"]
    print(f"oracle runs: {runner.stats['runs']}; JSON outputs not byte-identical to "
          f"json.dumps(indent=2, ensure_ascii=False): {len(bad)} {bad[:5]}")
    # review aid: non-zero exits outside errors/ and error__* cases, zero exits in errors/
    for s, _, ex in summary:
        for k, e in sorted(ex.items()):
            expected_fail = s == "errors" or k.startswith("error__")
            if (e != 0) != expected_fail:
                print(f"note: {s}/{k} exit={e}")
    return 0


def check_timeouts(runner, cases, set_name, subst, res, repeats):
    """The oracle must time out on every run of a --timeout 1e-06 case."""
    for name, args, env in cases.items:
        if "1e-06" not in args:
            continue
        for i in range(repeats):
            rec = runner.case(f"{set_name}/_repeat_{i}_{name}", args, env, subst)
            if rec != res[name] or rec["exit"] != 1:
                sys.exit(f"{set_name}/{name}: run {i} differs from the recorded one "
                         f"(timeout not deterministic): {rec}")
    return True


if __name__ == "__main__":
    sys.exit(main())
