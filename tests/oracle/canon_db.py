#!/usr/bin/env python3
"""Canonical JSON dump of a SnapshotDB (pt-snap-cli 0.4.1 layout, spec §5/§14).

Usage:  canon_db.py DB [-o OUT]

Twin of the Rust `pt_snap_testkit::canonical_db_json`; both must produce
byte-identical output for the same DB (tests/oracle/check_twins.sh checks it).
Stdlib only.  If you change one twin, change the other the same way.

Canonical form (top-level keys in this order):
  schema      sorted by (type, name): {type, name, tbl_name, sql} from
              sqlite_master, sqlite_* internals and our own pt_snap_x_*
              tables excluded, sql with ASCII
              whitespace runs collapsed to one space and trimmed.
  dictionary  {columns, rows} in rowid order.
  metadata    the pt_snap_metadata row as an object minus importer_name,
              importer_version, completed_at (null if the table is missing or
              has no row).
  counts      row counts of callstack, frame, callstack_frame,
              callstack_frame_manifest (tables that exist).
  devices     per device d (numeric suffixes of trace_entry_<d>, ascending):
              {device, trace: {columns, rows}, blocks: {columns, rows} | null}.
              Negative `id`s are relabelled per device and table: sorted
              descending (-1 first) they become -1, -2, -3, ... (the oracle's
              negative counters are process-global, ours restart per device).
              allocEventId/freeEventId are kept as they are.
              When a `callstack` table exists, trace column callstackId is
              replaced by the callstack key (see below) of that id's text, or
              null when the id is null / has no callstack row.
  callstacks  (only when a `callstack` table exists) one entry per callstack
              row, sorted by (text, frames, frameCount):
              {key, text, frameCount, frames: [[filename, line, name], ...]};
              `frames`/`frameCount` only when the structured frame tables
              exist; `positions` is added only when the positions of a stack
              are not exactly 0..n-1.

Sharded-dataset shards (spec §10.2-10.3; a `pt_snap_block_reference` table is
present) differ in three ways:
  * negative ids are NOT relabelled: dataset ids are deterministic per device
    (boundary events -1, -2, ... per shard; per-device block tokens), so they
    are compared as they are;
  * a v1 trace table's inline `callstack` TEXT column (msinsight export, no
    `callstack` table) is replaced by the callstack key of its text, and the
    distinct texts are listed in `callstacks` as {key, text};
  * block_reference  {columns, rows} of pt_snap_block_reference ordered by
              blockId, allocCallstack/freeCallstack replaced by their keys;
    reference_texts  the distinct non-null texts of those two columns as
              {key, text}, sorted like `callstacks`.
These keys appear only for such DBs, so other dumps are unchanged.

Callstack key: "cs-" + 16 lowercase hex digits of the 64-bit FNV-1a hash of the
UTF-8 text.  Referencing stacks by a text hash (instead of inlining the text in
every trace row, or using the DB's ids) keeps dumps small, makes them
independent of id assignment order, and keeps diffs local.

Values keep their SQLite storage class: INTEGER -> JSON number, TEXT -> JSON
string (so an unknown action stored as TEXT, e.g. 'free', stays a string),
NULL -> null, REAL -> {"real_bits": "<16 hex digits of the IEEE-754 bits>"},
BLOB -> {"blob": "<hex>"}.

Printing: 1-space indentation; objects always one key per line; arrays whose
elements are all scalars are printed on one line as `[a, b, c]`; other arrays
one element per line; strings escaped like json.dumps(ensure_ascii=False);
output ends with a newline.
"""

import json
import sqlite3
import struct
import sys
import urllib.parse

EXCLUDED_METADATA = ("importer_name", "importer_version", "completed_at")
FRAME_TABLES = ("frame", "callstack_frame", "callstack_frame_manifest")
COUNT_TABLES = ("callstack", "frame", "callstack_frame", "callstack_frame_manifest")
ASCII_WS = " \t\n\r\x0b\x0c"


def qi(name):
    return '"' + name.replace('"', '""') + '"'


def norm_sql(sql):
    if sql is None:
        return None
    out = []
    pending = False
    for ch in sql:
        if ch in ASCII_WS:
            pending = True
        else:
            if pending and out:
                out.append(" ")
            pending = False
            out.append(ch)
    return "".join(out)


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for b in text.encode("utf-8"):
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "cs-%016x" % h


def val(v):
    if v is None or isinstance(v, (int, str)):
        return v
    if isinstance(v, float):
        return {"real_bits": struct.pack(">d", v).hex()}
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {"blob": bytes(v).hex()}
    raise TypeError("unexpected SQLite value %r" % (v,))


def columns_of(conn, table):
    return [r[1] for r in conn.execute("PRAGMA table_info(%s)" % qi(table))]


def read_table(conn, table, order_by):
    cols = columns_of(conn, table)
    sql = "SELECT %s FROM %s" % (", ".join(qi(c) for c in cols), qi(table))
    if order_by:
        sql += " ORDER BY " + order_by
    rows = [[val(v) for v in r] for r in conn.execute(sql)]
    return cols, rows


def relabel_negative_ids(cols, rows):
    if "id" not in cols:
        return rows
    i = cols.index("id")
    negs = sorted({r[i] for r in rows if isinstance(r[i], int) and r[i] < 0}, reverse=True)
    mapping = {old: -(k + 1) for k, old in enumerate(negs)}
    for r in rows:
        if isinstance(r[i], int) and r[i] in mapping:
            r[i] = mapping[r[i]]
    rows.sort(key=lambda r: (0, r[i]) if isinstance(r[i], int) else (1, 0))
    return rows


def device_suffixes(tables):
    """(device number, table-name suffix) of every trace_entry_<digits> table, by number."""
    found = []
    for t in tables:
        suffix = t[len("trace_entry_") :]
        if t.startswith("trace_entry_") and suffix and all("0" <= c <= "9" for c in suffix):
            found.append((int(suffix), suffix))
    return sorted(found)


def canonical_db(path):
    conn = sqlite3.connect("file:%s?mode=ro" % urllib.parse.quote(path, safe="/"), uri=True)
    try:
        return _canonical(conn)
    finally:
        conn.close()


def _canonical(conn):
    master = conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND tbl_name NOT LIKE 'pt\\_snap\\_x\\_%' ESCAPE '\\'"
    ).fetchall()
    tables = {r[1] for r in master if r[0] == "table"}
    schema = [
        {"type": t, "name": n, "tbl_name": tn, "sql": norm_sql(s)}
        for (t, n, tn, s) in sorted(master, key=lambda r: (r[0], r[1]))
    ]
    out = {"schema": schema}

    if "dictionary" in tables:
        cols, rows = read_table(conn, "dictionary", "rowid")
        out["dictionary"] = {"columns": cols, "rows": rows}
    else:
        out["dictionary"] = None

    metadata = None
    if "pt_snap_metadata" in tables:
        cols, rows = read_table(conn, "pt_snap_metadata", "rowid")
        if rows:
            metadata = {c: v for c, v in zip(cols, rows[0]) if c not in EXCLUDED_METADATA}
    out["metadata"] = metadata

    out["counts"] = {
        t: conn.execute("SELECT COUNT(*) FROM %s" % qi(t)).fetchone()[0] for t in COUNT_TABLES if t in tables
    }

    has_callstack = "callstack" in tables
    has_reference = "pt_snap_block_reference" in tables
    inline_texts = {}
    key_of_id = {}
    if has_callstack:
        for cid, text in conn.execute("SELECT id, callstack FROM callstack"):
            key_of_id[cid] = fnv1a64(text) if isinstance(text, str) else None

    devices = []
    for d, suffix in device_suffixes(tables):
        tcols, trows = read_table(conn, "trace_entry_" + suffix, "id")
        if not has_reference:
            trows = relabel_negative_ids(tcols, trows)
        if not has_callstack and has_reference and "callstack" in tcols:
            ci = tcols.index("callstack")
            for r in trows:
                r[ci] = text_key(r[ci], inline_texts)
        if has_callstack and "callstackId" in tcols:
            ci = tcols.index("callstackId")
            for r in trows:
                r[ci] = key_of_id.get(r[ci]) if isinstance(r[ci], int) else None
        bt = "block_" + suffix
        blocks = None
        if bt in tables:
            bcols, brows = read_table(conn, bt, "id")
            if not has_reference:
                brows = relabel_negative_ids(bcols, brows)
            blocks = {"columns": bcols, "rows": brows}
        devices.append({"device": d, "trace": {"columns": tcols, "rows": trows}, "blocks": blocks})
    out["devices"] = devices

    if has_callstack:
        structured = all(t in tables for t in FRAME_TABLES)
        frames_of = {}
        counts_of = {}
        if structured:
            q = (
                "SELECT cf.callstackId, cf.position, f.filename, f.line, f.name "
                "FROM callstack_frame cf LEFT JOIN frame f ON f.id = cf.frameId "
                "ORDER BY cf.callstackId, cf.position"
            )
            for cid, pos, fn, line, name in conn.execute(q):
                frames_of.setdefault(cid, []).append((val(pos), [val(fn), val(line), val(name)]))
            for cid, n in conn.execute("SELECT callstackId, frameCount FROM callstack_frame_manifest"):
                counts_of[cid] = val(n)
        entries = []
        for cid, text in conn.execute("SELECT id, callstack FROM callstack"):
            e = {"key": key_of_id.get(cid), "text": val(text)}
            if structured:
                fr = frames_of.get(cid, [])
                e["frameCount"] = counts_of.get(cid)
                e["frames"] = [f for _, f in fr]
                positions = [p for p, _ in fr]
                if positions != list(range(len(fr))):
                    e["positions"] = positions
            entries.append(e)
        entries.sort(key=sort_key_callstack)
        out["callstacks"] = entries
    elif inline_texts:
        out["callstacks"] = text_entries(inline_texts)
    if has_reference:
        rcols, rrows = read_table(conn, "pt_snap_block_reference", "blockId")
        reference_texts = {}
        for r in rrows:
            for c in ("allocCallstack", "freeCallstack"):
                if c in rcols:
                    r[rcols.index(c)] = text_key(r[rcols.index(c)], reference_texts)
        out["block_reference"] = {"columns": rcols, "rows": rrows}
        out["reference_texts"] = text_entries(reference_texts)
    return out


def text_key(value, texts):
    """The callstack key of a text value (collected into `texts`); other values unchanged."""
    if not isinstance(value, str):
        return value
    key = fnv1a64(value)
    texts[key] = value
    return key


def text_entries(texts):
    entries = [{"key": k, "text": t} for k, t in texts.items()]
    entries.sort(key=sort_key_callstack)
    return entries


def sort_key_callstack(e):
    # Total order independent of DB ids: by text, then frames, then frameCount.
    return dumps(e.get("text")) + "\x00" + dumps(e.get("frames")) + "\x00" + dumps(e.get("frameCount"))


def dumps(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def is_scalar(v):
    return v is None or isinstance(v, (bool, int, float, str))


def render(v, indent=0, out=None, dumps=dumps, is_scalar=is_scalar, inline_scalar_dicts=False):
    """The printing described above. golden_query.py prints its goldens with the same layout
    but its own `dumps` and `is_scalar`, and with a nested object whose values are all
    scalars on one line (`inline_scalar_dicts`)."""
    if out is None:
        out = []
        render(v, 0, out, dumps, is_scalar, inline_scalar_dicts)
        out.append("\n")
        return "".join(out)
    pad = " " * (indent + 1)
    if isinstance(v, dict):
        if not v:
            out.append("{}")
            return out
        if inline_scalar_dicts and indent > 0 and all(is_scalar(x) for x in v.values()):
            out.append("{" + ", ".join(dumps(k) + ": " + dumps(x) for k, x in v.items()) + "}")
            return out
        out.append("{\n")
        items = list(v.items())
        for k, (key, item) in enumerate(items):
            out.append(pad + dumps(key) + ": ")
            render(item, indent + 1, out, dumps, is_scalar, inline_scalar_dicts)
            out.append(",\n" if k + 1 < len(items) else "\n")
        out.append(" " * indent + "}")
    elif isinstance(v, list):
        if all(is_scalar(x) for x in v):
            out.append("[" + ", ".join(dumps(x) for x in v) + "]")
            return out
        out.append("[\n")
        for k, item in enumerate(v):
            out.append(pad)
            render(item, indent + 1, out, dumps, is_scalar, inline_scalar_dicts)
            out.append(",\n" if k + 1 < len(v) else "\n")
        out.append(" " * indent + "]")
    else:
        out.append(dumps(v))
    return out


def main(argv):
    args = list(argv[1:])
    out_path = None
    if "-o" in args:
        i = args.index("-o")
        out_path = args[i + 1]
        del args[i : i + 2]
    if len(args) != 1:
        sys.stderr.write("usage: canon_db.py DB [-o OUT]\n")
        return 2
    text = render(canonical_db(args[0]))
    if out_path:
        with open(out_path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
