#!/usr/bin/env bash
# Builds the flamegraph test pages and runs the browser tests over them, plus any report
# pages given as arguments (e.g. ones written by `pt-snap report memory-tree --format html`);
# first, without a browser, the pages' formatters against the rules Rust writes
# (rules.test.mjs).
#
#   tests/browser/run.sh [page.html …]
#
# Pages built here (target/browser/pages/), each by pt-snap-report as the report writes
# one (`examples/flamegraph_page.rs`: the rows' origins and Python frames view come from
# Rust): the fixtures in tests/browser/fixtures/ (edge cases, noise frames to fold and
# merge, a lone root, an empty tree, no rows, a diff-mode tree), a 10,000-node synthetic
# tree, and the reference's own frame tree from ../shared/reference (required under CI=true).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
"$here/setup.sh"

status=0
node "$here/rules.test.mjs" || status=1

(cd "$root" && cargo build --locked -q -p pt-snap-report --example flamegraph_page)
make_page="$root/target/debug/examples/flamegraph_page"
out="$root/target/browser/pages"
mkdir -p "$out"
pages=()
for f in "$here"/fixtures/*.json; do
  p="$out/$(basename "${f%.json}").html"
  "$make_page" "$f" "$p"
  pages+=("$p")
done
node "$here/make_big_tree.mjs" "$out/big_tree_10k.json" >/dev/null
"$make_page" "$out/big_tree_10k.json" "$out/big_tree_10k.html"
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
  "$make_page" "$ref" "$out/reference_tree.html"
  pages+=("$out/reference_tree.html")
elif [ "${CI:-}" = "true" ]; then
  echo "error: $shared is absent; CI must run the browser test on the reference's page" >&2
  exit 1
else
  echo "SKIPPED: $shared is absent; the reference's page is not tested" >&2
fi

# Every page through the flamegraph test; the diff-mode ones (diff_mode.json, and
# `pt-snap diff --format html` pages given as arguments) through the diff test as well.
node "$here/flamegraph.test.mjs" "${pages[@]}" "$@" || status=1
node "$here/diff.test.mjs" "${pages[@]}" "$@" || status=1
exit $status
