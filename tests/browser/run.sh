#!/usr/bin/env bash
# Builds the flamegraph test pages and runs the browser test over them, plus any report
# pages given as arguments (e.g. ones written by `pt-snap report memory-tree --format html`).
#
#   tests/browser/run.sh [page.html …]
#
# Pages built here (target/browser/pages/): the fixtures in tests/browser/fixtures/ (edge
# cases, noise frames to fold and merge, a lone root, an empty tree, no rows, a diff-mode
# tree), a
# 10,000-node synthetic tree, and the reference's own frame tree from ../shared/reference
# (required under CI=true).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
"$here/setup.sh"

out="$root/target/browser/pages"
mkdir -p "$out"
pages=()
for f in "$here"/fixtures/*.json; do
  p="$out/$(basename "${f%.json}").html"
  node "$here/make_page.mjs" "$f" "$p" >/dev/null
  pages+=("$p")
done
node "$here/make_big_tree.mjs" "$out/big_tree_10k.html" >/dev/null
pages+=("$out/big_tree_10k.html")
# The reference's page comes from ../shared, which a checkout may lack: then it is skipped,
# loudly, except under CI (as pt_snap_testkit::shared_dir does), which must never pass
# without it. A ../shared that is there but lacks the page is broken, and fails everywhere.
shared="$root/../shared/reference"
ref="$shared/oracle-out/reports/tree.json"
if [ -d "$shared" ]; then
  if [ ! -f "$ref" ]; then
    echo "error: $ref is absent from $shared" >&2
    exit 1
  fi
  node "$here/make_page.mjs" "$ref" "$out/reference_tree.html" >/dev/null
  pages+=("$out/reference_tree.html")
elif [ "${CI:-}" = "true" ]; then
  echo "error: $shared is absent; CI must run the browser test on the reference's page" >&2
  exit 1
else
  echo "SKIPPED: $shared is absent; the reference's page is not tested" >&2
fi

# Every page through the flamegraph test; the diff-mode ones (diff_mode.json, and
# `pt-snap diff --format html` pages given as arguments) through the diff test as well.
status=0
node "$here/flamegraph.test.mjs" "${pages[@]}" "$@" || status=1
node "$here/diff.test.mjs" "${pages[@]}" "$@" || status=1
exit $status
