#!/usr/bin/env python3
"""Markdown table summarising the import goldens (used by regen.sh).

Usage: golden_summary.py tests/golden/import > tests/golden/import-summary.md
"""
import json
import os
import sys


def main(root):
    rows = []
    for dirpath, _, files in os.walk(root):
        for fn in files:
            if fn.endswith(".json"):
                rows.append(os.path.relpath(os.path.join(dirpath, fn), root))
    print("| golden (tests/golden/import/…) | exit | outcome | devices | trace rows (neg) | blocks (neg) | callstacks / frames |")
    print("| --- | ---: | --- | --- | --- | --- | --- |")
    for rel in sorted(rows):
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            g = json.load(f)
        name = rel[: -len(".json")]
        if g["exit"] == 0:
            db = g["db"]
            devs = db["devices"]
            dev = ", ".join(str(d["device"]) for d in devs) or "none"
            tr = " / ".join(
                "%d (%d)" % (len(d["trace"]["rows"]), sum(1 for r in d["trace"]["rows"] if r[0] < 0)) for d in devs
            ) or "-"
            bl = " / ".join(
                "%d (%d)" % (len(d["blocks"]["rows"]), sum(1 for r in d["blocks"]["rows"] if r[0] < 0)) for d in devs
            ) or "-"
            c = db.get("counts", {})
            cs = "%s / %s" % (c.get("callstack", "-"), c.get("frame", "-"))
            outcome = "ok" + (" (reused)" if (g.get("import") or {}).get("reused") else "")
        else:
            err = g.get("error")
            if isinstance(err, dict) and isinstance(err.get("error"), dict):
                outcome = "%s: %s" % (err["error"].get("code"), err["error"].get("message"))
            elif isinstance(err, dict) and "uncaught_exception" in err:
                outcome = "crash (traceback, no envelope): %s" % err["uncaught_exception"]
            else:
                outcome = "refused: %r" % (err,)
            outcome = outcome.replace("|", "\\|").replace("\n", " ")
            dev = tr = bl = cs = "-"
        print("| %s | %d | %s | %s | %s | %s | %s |" % (name, g["exit"], outcome, dev, tr, bl, cs))


if __name__ == "__main__":
    main(sys.argv[1])
