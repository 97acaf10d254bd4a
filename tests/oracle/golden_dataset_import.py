#!/usr/bin/env python3
"""Run one dataset-import case with the oracle and write its golden (tests/golden/dataset_import/).

Usage: golden_dataset_import.py ORACLE FIXTURE OUT.json -- RUN [-- RUN ...]

Each RUN is the argument list of one `pt-snap import <copy> ...` call (run in order in the
same temp dir, `--no-focus` added), e.g. `--events-per-slice 3000 --json`.  The fixture is
copied into a fresh temp dir (HOME points into it too).  The golden is

  {"fixture": <path relative to fixtures/>,
   "runs": [{"args": [...], "exit": N, "stdout": <JSON or text lines>, "stderr": <...>}],
   "dataset": <dir name> | null,
   "manifest": <manifest.json of the dataset after the last run> | null,
   "shards": {<member file>: <canonical dump (canon_db.py) with texts moved out>},
   "texts": {<callstack key>: <text>}}

normalised so that a run of ours can be compared as is: the temp dir reads "<TMP>";
`completed_at`, `importer_name`, `importer_version` are dropped from every metadata object;
shard hashes (`slices[].sha256`, `ptSnap.members` values) become null (SQLite files are not
byte-reproducible across writers); callstack texts of the shards are replaced by their keys
and collected once in "texts" to keep the goldens small.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import canon_db  # noqa: E402

VOLATILE_METADATA = ("completed_at", "importer_name", "importer_version")


def scrub(value, tmp):
    if isinstance(value, dict):
        return {k: scrub(v, tmp) for k, v in value.items() if k not in VOLATILE_METADATA}
    if isinstance(value, list):
        return [scrub(v, tmp) for v in value]
    if isinstance(value, str):
        return value.replace(tmp, "<TMP>")
    return value


def parse_output(text, tmp):
    text = text.strip()
    if not text:
        return None
    try:
        return scrub(json.loads(text), tmp)
    except ValueError:
        return [line.replace(tmp, "<TMP>") for line in text.splitlines()]


def normalise_manifest(manifest, tmp):
    manifest = scrub(manifest, tmp)
    for device in manifest.get("devices", {}).values():
        for item in device.get("slices", []):
            if "sha256" in item:
                item["sha256"] = None
    members = manifest.get("ptSnap", {}).get("members")
    if isinstance(members, dict):
        for k in members:
            members[k] = None
    return manifest


def move_texts(dump, texts):
    """Replace the {key, text} entries of callstacks/reference_texts by their keys."""
    for field in ("callstacks", "reference_texts"):
        entries = dump.get(field)
        if entries is None:
            continue
        keys = []
        for e in entries:
            texts[e["key"]] = e.pop("text")
            keys.append(e["key"] if len(e) == 1 else e)
        dump[field] = keys
    return dump


def main(argv):
    oracle, fixture, out = argv[1:4]
    runs = []
    for arg in argv[4:]:
        if arg == "--":
            runs.append([])
        else:
            runs[-1].append(arg)
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    work = os.path.realpath(tempfile.mkdtemp(prefix="pt-snap-ds-import-"))
    try:
        home, cwd = os.path.join(work, "home"), os.path.join(work, "cwd")
        os.makedirs(home)
        os.makedirs(cwd)
        name = os.path.basename(fixture)
        source = os.path.join(cwd, name)
        shutil.copyfile(os.path.join(root, "fixtures", fixture), source)
        env = dict(os.environ, HOME=home, COLUMNS="200", NO_COLOR="1")
        results = []
        for args in runs:
            proc = subprocess.run(
                [oracle, "import", source, "--no-focus", *args],
                cwd=cwd, env=env, capture_output=True, text=True,
            )
            results.append({
                "args": args,
                "exit": proc.returncode,
                "stdout": parse_output(proc.stdout, work),
                "stderr": parse_output(proc.stderr, work),
            })
        dataset = None
        for suffix in (".pt-snap-native-v2", ".msinsight"):
            if os.path.isdir(source + suffix):
                dataset = source + suffix
        golden = {"fixture": fixture, "runs": results, "dataset": None, "manifest": None,
                  "shards": {}, "texts": {}}
        if dataset is not None:
            golden["dataset"] = os.path.basename(dataset)
            with open(os.path.join(dataset, "manifest.json"), encoding="utf-8") as f:
                manifest = json.load(f)
            golden["manifest"] = normalise_manifest(manifest, work)
            files = sorted(s["file"] for d in manifest["devices"].values() for s in d["slices"])
            for member in files:
                dump = canon_db.canonical_db(os.path.join(dataset, member))
                golden["shards"][member] = move_texts(dump, golden["texts"])
            golden["texts"] = dict(sorted(golden["texts"].items()))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w", encoding="utf-8", newline="\n") as f:
            f.write(canon_db.render(golden))
    finally:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
