// The pages' formatters against the rules they share with the reports, without a browser:
// www/flamegraph/flamegraph.js's bytes and counts and www/diff/diff.js's durations over
// tests/browser/units.json, the table pt-snap-report's `units` tests write from the Rust
// rules (and fail on when it is stale). A rule changed on one side only fails here or there.
//
//   node tests/browser/rules.test.mjs
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const table = JSON.parse(fs.readFileSync(path.join(here, 'units.json'), 'utf8'));

// The two classic scripts as a page loads them: the flamegraph first, the diff after it.
const page = vm.createContext({});
for (const file of ['www/flamegraph/flamegraph.js', 'www/diff/diff.js']) {
  vm.runInContext(fs.readFileSync(path.join(root, file), 'utf8'), page, { filename: file });
}
const fg = page.PtSnapFlamegraph;
const formatters = {
  human_bytes: fg.formatBytes,
  signed_human_bytes: fg.formatSignedBytes,
  grouped: fg.formatCount,
  seconds: page.PtSnapDiff.formatDuration,
};

let passed = 0;
const failures = [];
for (const [rule, format] of Object.entries(formatters)) {
  const cases = table[rule];
  if (!Array.isArray(cases) || cases.length === 0) {
    failures.push(`${rule}: no cases in units.json`);
    continue;
  }
  for (const [input, want] of cases) {
    const got = format(input);
    if (got === want) passed++;
    else failures.push(`${rule}(${input}): page writes ${JSON.stringify(got)}, Rust ${JSON.stringify(want)}`);
  }
}
// What the issue pinned: 1024 KiB less a byte is a mebibyte everywhere.
const pinned = table.human_bytes.find(([input]) => input === 1048575);
if (!pinned || pinned[1] !== '1.00 MiB') failures.push(`units.json does not pin 1048575 B as 1.00 MiB: ${JSON.stringify(pinned)}`);

for (const f of failures) console.error(`FAIL ${f}`);
console.log(`rules: ${passed} passed, ${failures.length} failed`);
process.exit(failures.length ? 1 : 0);
