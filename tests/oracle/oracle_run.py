"""One recorded run of the oracle (pt-snap-cli 0.4.1), shared by the golden drivers.

Each run gets its own HOME and working directory under `root` (removed afterwards), no
PT_SNAP_* variables but the case's own, and a fixed terminal. The recorded case replaces the
database path with <DB> and the run's root with <TMP>, and keeps each stream as JSON when it
is a JSON object or array, else as text.
"""
import argparse
import json
import os
import shutil
import subprocess


def driver_arguments(out=False, jobs=False):
    """The arguments of every golden driver: the oracle's entry point, the repository root,
    with `out` an output directory, a scratch directory, and with `jobs` how many oracle runs
    at once (the caller adds its own)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--oracle", required=True)
    ap.add_argument("--root", required=True)
    if out:
        ap.add_argument("--out", required=True)
    ap.add_argument("--tmp", required=True)
    if jobs:
        ap.add_argument("--jobs", type=int, default=2)
    return ap


def write_case(path, record):
    """A recorded case as its golden file: JSON with one-space indent, UTF-8, final newline."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, ensure_ascii=False)
        f.write("\n")


def environment(root, extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PT_SNAP_")}
    env.update(HOME=os.path.join(root, "home"), COLUMNS="200", NO_COLOR="1", TERM="dumb",
               LC_ALL="C.UTF-8")
    env.update(extra)
    return env


def run_case(oracle, root, args, db, env_extra, timeout=600):
    os.makedirs(os.path.join(root, "home"))
    os.makedirs(os.path.join(root, "cwd"))
    argv = [a.replace("<DB>", db) for a in args]
    proc = subprocess.run([oracle, *argv], cwd=os.path.join(root, "cwd"),
                          env=environment(root, env_extra), capture_output=True, timeout=timeout)
    shutil.rmtree(root)

    def field(raw):
        text = raw.decode("utf-8", "replace").replace(db, "<DB>").replace(root, "<TMP>")
        if not text:
            return None, None
        if text.lstrip().startswith(("{", "[")):
            try:
                return json.loads(text), None
            except ValueError:
                pass
        return None, text

    out_j, out_t = field(proc.stdout)
    err_j, err_t = field(proc.stderr)
    return {"args": args, "env": env_extra, "exit": proc.returncode, "stdout_json": out_j,
            "stdout_text": out_t, "stderr_json": err_j, "stderr_text": err_t}
