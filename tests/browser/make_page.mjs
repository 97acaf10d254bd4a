// Fills www/flamegraph/report.html the way `pt-snap report memory-tree --format html`
// does, so the browser test can run before (and independently of) the Rust side.
//
//   node tests/browser/make_page.mjs <tree.json> <out.html>
//
// <tree.json> holds either the report data object ({title, event_id, device_id, nodes})
// or a query/report result ({event_id, device_id, rows, ...}) as printed by --json.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '..', '..');
const www = path.join(repoRoot, 'www', 'flamegraph');

export function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

// The contract with the Rust side: JSON with <, > and & escaped so that no text in a
// frame name can close the <script> element or start an HTML construct.
export function escapeJsonForScript(json) {
  return json.replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026');
}

export function toReportData(input) {
  if (Array.isArray(input.nodes)) return input;
  if (Array.isArray(input.rows)) {
    const title = input.title ?? `Active memory after event ${input.event_id} · device ${input.device_id}`;
    return { title, event_id: input.event_id, device_id: input.device_id, nodes: input.rows };
  }
  throw new Error('input has neither "nodes" nor "rows"');
}

export function fillTemplate(data) {
  const template = fs.readFileSync(path.join(www, 'report.html'), 'utf8');
  const style = fs.readFileSync(path.join(www, 'flamegraph.css'), 'utf8');
  const script = fs.readFileSync(path.join(www, 'flamegraph.js'), 'utf8');
  // Inlined verbatim, so these would break the page (or the substitution) silently.
  for (const [name, text, bad] of [['flamegraph.css', style, /<\/style|\{\{(TITLE|STYLE|SCRIPT|DATA)\}\}/i],
                                   ['flamegraph.js', script, /<\/script|<!--|\{\{(TITLE|STYLE|SCRIPT|DATA)\}\}/i]]) {
    if (bad.test(text)) throw new Error(`${name} contains text that cannot be inlined: ${text.match(bad)[0]}`);
  }
  for (const p of ['TITLE', 'STYLE', 'SCRIPT', 'DATA']) {
    const n = template.split(`{{${p}}}`).length - 1;
    if (n !== 1) throw new Error(`report.html must contain {{${p}}} exactly once (found ${n})`);
  }
  const values = {
    TITLE: escapeHtml(data.title ?? ''),
    STYLE: style,
    SCRIPT: script,
    DATA: escapeJsonForScript(JSON.stringify(data)),
  };
  // One pass over the template: substituted text is never scanned again, so a frame name
  // containing "{{SCRIPT}}" stays text.
  return template.replace(/\{\{(TITLE|STYLE|SCRIPT|DATA)\}\}/g, (_, key) => values[key]);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [input, out] = process.argv.slice(2);
  if (!input || !out) {
    console.error('usage: node tests/browser/make_page.mjs <tree.json> <out.html>');
    process.exit(2);
  }
  const data = toReportData(JSON.parse(fs.readFileSync(input, 'utf8')));
  fs.mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
  fs.writeFileSync(out, fillTemplate(data));
  console.log(`wrote ${out} (${data.nodes.length} nodes)`);
}
