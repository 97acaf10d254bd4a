#!/usr/bin/env python3
"""Build one import golden from a finished oracle run (used by regen.sh).

Usage: golden_import.py --stdout F --stderr F --exit N --tmp DIR [--db DB] -o OUT

Writes {"import": ..., "exit": N, "error": ..., "db": ...} rendered the
canonical way (see canon_db.py):
  import  the oracle's stdout JSON (null if empty/not JSON) minus db_path,
          metadata.completed_at, metadata.importer_version; any other string
          containing the temp dir has it replaced by "<TMP>".
  exit    the oracle's exit code.
  error   the stderr error envelope (parsed JSON) when exit != 0;
          {"uncaught_exception": "<last traceback line>"} when the oracle
          crashed with a Python traceback instead of an envelope; otherwise the
          raw stderr text (temp dir replaced); absent on success.
  stderr  raw stderr (temp dir replaced) only if the run succeeded but wrote
          something to stderr (not expected for --json).
  db      canonical dump of the produced DB (only on success).
Stdlib only.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import canon_db  # noqa: E402

DROP_TOP = ("db_path",)
DROP_META = ("completed_at", "importer_version")


def scrub(v, tmp):
    if isinstance(v, str):
        return v.replace(tmp, "<TMP>") if tmp in v else v
    if isinstance(v, list):
        return [scrub(x, tmp) for x in v]
    if isinstance(v, dict):
        return {k: scrub(x, tmp) for k, x in v.items()}
    return v


def parse_json(text):
    try:
        return json.loads(text)
    except ValueError:
        return None


def main(argv):
    args = dict(zip(argv[1::2], argv[2::2]))
    tmp = os.path.realpath(args["--tmp"])
    code = int(args["--exit"])
    with open(args["--stdout"], encoding="utf-8") as f:
        out_text = f.read()
    with open(args["--stderr"], encoding="utf-8") as f:
        err_text = f.read()

    imp = parse_json(out_text) if out_text.strip() else None
    if isinstance(imp, dict):
        for k in DROP_TOP:
            imp.pop(k, None)
        if isinstance(imp.get("metadata"), dict):
            for k in DROP_META:
                imp["metadata"].pop(k, None)
    elif out_text.strip():
        imp = {"raw_stdout": out_text}
    golden = {"import": scrub(imp, tmp), "exit": code}
    if code != 0:
        env = parse_json(err_text)
        if env is None and "Traceback" in err_text:
            # Uncaught exception: the oracle prints a rich traceback (absolute
            # venv paths, terminal-width dependent) instead of an envelope.
            # Keep only the final "ExcType: message" line.
            lines = [ln for ln in err_text.splitlines() if ln.strip()]
            env = {"uncaught_exception": lines[-1].strip() if lines else ""}
        golden["error"] = scrub(env if env is not None else err_text, tmp)
    elif err_text:
        golden["stderr"] = scrub(err_text, tmp)
    db = args.get("--db")
    if code == 0 and db and os.path.exists(db):
        golden["db"] = canon_db.canonical_db(db)
    with open(args["-o"], "w", encoding="utf-8", newline="\n") as f:
        f.write(canon_db.render(golden))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
