// Browser test of the flamegraph's diff mode and of the `pt-snap diff --format html` page:
// Playwright (playwright-core only) drives Debian's Chromium over each page from file://.
//
//   node tests/browser/diff.test.mjs <page.html> [<page2.html> …]
//
// Pages whose #tree-data is not in diff mode are skipped, so run.sh can pass every page.
// Per diff-mode page: no console error/warning, no page error, no request; the component is
// in diff mode; folded and unfolded, both sides' bytes and blocks add up (inclusive = self +
// Σ children) and the root holds each side's total; every drawn frame is coloured by the
// sign of its change (red more in B, blue less, grey same) with a strength that grows with
// |change|; the tooltip and details give A, B and the change. diff_mode.json's colours and
// texts are checked exactly. On a full diff page (#diff-data): the totals, the peaks table,
// both timelines drawn with their peaks and a readout that follows the pointer (on the
// event-ordinal axis, and on the time axis when both sides have times), one table row per
// listed group, and "Show" revealing that group's stack in the flamegraph.
// Screenshots: target/browser/<page>-diff.png (light, as opened) and -diff-dark.png.
import fs from 'node:fs';
import path from 'node:path';
import {
  expect, poll, frameSel, getState, getTree, shotDir, pagesFromArgs, openPage, runPages, tally,
} from './harness.mjs';

const pages = pagesFromArgs('diff.test.mjs');


// The JSON of <script id="…" type="application/json"> in a page file, or null.
function scriptData(html, id) {
  const open = `<script id="${id}" type="application/json">`;
  const start = html.indexOf(open);
  if (start < 0) return null;
  const end = html.indexOf('</script>', start);
  return JSON.parse(html.slice(start + open.length, end));
}

// The checks that fold test the noise fold alone: the Python frames view goes off first.
async function setFold(page, on) {
  const py = page.locator('[data-testid="fg-python"]');
  if ((await py.count()) && (await py.isChecked())) {
    await py.uncheck();
    await poll(async () => (await getState(page)).pythonFrames === false, 'the Python frames view off');
  }
  const ctl = page.locator('[data-testid="fg-fold"]');
  if (!(await ctl.count())) return false;
  if (on) await ctl.check();
  else await ctl.uncheck();
  await poll(async () => (await getState(page)).foldNoise === on, `folding ${on ? 'on' : 'off'}`);
  return true;
}

// The pointer over the middle of the timelines; the readout once it starts with `prefix`
// (the axis it reads on).
async function hoverReadout(page, prefix, what) {
  const box = await page.locator('.pd-hit').boundingBox();
  await page.mouse.move(box.x + box.width * 0.5, box.y + box.height * 0.5);
  return poll(async () => {
    const t = await page.textContent('[data-testid="pd-readout"]');
    return t.startsWith(prefix) ? t : null;
  }, what);
}

// Any CSS colour (computed colour-mix() results come back as oklab()) as sRGB bytes, through
// a canvas.
function toRgb(page, color) {
  return page.evaluate((color) => {
    const c = document.createElement('canvas');
    c.width = c.height = 1;
    const ctx = c.getContext('2d');
    ctx.fillStyle = color;
    ctx.fillRect(0, 0, 1, 1);
    return Array.from(ctx.getImageData(0, 0, 1, 1).data.slice(0, 3));
  }, color);
}

// inclusive = self + Σ children for both sides' bytes and blocks and for the width.
function sumErrors(tree) {
  const byId = new Map(tree.map((t) => [t.id, t]));
  const errs = [];
  for (const t of tree) {
    for (const [inc, own] of [['bytesA', 'selfA'], ['bytesB', 'selfB'], ['blocksA', 'selfBlocksA'], ['blocksB', 'selfBlocksB'], ['size', 'self']]) {
      const sum = t[own] + t.children.reduce((s, c) => s + byId.get(c)[inc], 0);
      if (sum !== t[inc]) errs.push(`${t.id}: ${inc} ${t[inc]} != ${own} + Σ children = ${sum}`);
    }
    if (t.size < Math.max(t.bytesA, t.bytesB)) errs.push(`${t.id}: width ${t.size} < max(A, B)`);
  }
  return errs;
}

// diff_mode.json by hand: `_PyEval_EvalFrameDefault` folds, so `forward` sits under `main`;
// the largest |change| below the root is 4096 (frame/1, frame/1/2 and the new `cache`).
const FIXTURE_SHADES = {
  root: ['d-grow', 1], 'frame/1': ['d-grow', 1], 'frame/1/2': ['d-grow', 1], 'frame/1/2/6': ['d-grow', 1],
  'frame/1/2/3/4': ['d-grow', Math.sqrt(2000 / 4096)], 'frame/1/2/5': ['d-shrink', Math.sqrt(2000 / 4096)],
  'frame/1/7': ['d-same', 0], static: ['d-same', 0],
};

async function testPage(context, file) {
  const abs = path.resolve(file);
  const html = fs.readFileSync(abs, 'utf8');
  const tree = scriptData(html, 'tree-data');
  const name = path.basename(abs).replace(/\.html?$/i, '');
  if (!tree || tree.mode !== 'diff') return;
  const full = scriptData(html, 'diff-data');
  const { page, url, step, finish } = await openPage(context, abs, { width: 1400, height: 1000 });

  await step('loads in diff mode', async () => {
    await page.goto(url, { waitUntil: 'load' });
    await page.waitForSelector(frameSel('root'));
    expect(await page.locator('.ptsnap-fg.fg-diff').count() === 1, 'no .ptsnap-fg.fg-diff root');
    const st = await getState(page);
    expect(st.diff === true, 'getState().diff is not true');
    const expectMax = Math.max(0, ...tree.nodes.filter((n) => n.parent_id !== null).map((n) => Math.abs(n.bytes_b - n.bytes_a)));
    expect(st.maxDelta >= expectMax, `maxDelta ${st.maxDelta} < the largest row change ${expectMax}`);
  });

  await step('screenshot', async () => {
    fs.mkdirSync(shotDir, { recursive: true });
    await page.screenshot({ path: path.join(shotDir, `${name}-diff.png`), fullPage: true });
  });

  for (const fold of [true, false]) {
    const mode = fold ? ' (folded)' : ' (unfolded)';
    await step(`both sides add up and the root holds the totals${mode}`, async () => {
      if (!(await setFold(page, fold)) && fold) return;
      const t = await getTree(page);
      const errs = sumErrors(t);
      expect(errs.length === 0, errs.slice(0, 3).join('; '));
      expect(t[0].bytesA === tree.a.total && t[0].bytesB === tree.b.total,
        `root A ${t[0].bytesA} / B ${t[0].bytesB}, totals ${tree.a.total} / ${tree.b.total}`);
      if (full) expect(t[0].bytesA === full.total_a && t[0].bytesB === full.total_b, 'root differs from total_a/total_b');
    });

    await step(`frames are coloured by the sign and size of their change${mode}`, async () => {
      await page.click('[data-testid="fg-reset"]');
      const t = new Map((await getTree(page)).map((n) => [n.id, n]));
      const drawn = await page.$$eval('[data-testid="fg-frame"]', (els) => els.map((e) => ({
        id: e.getAttribute('data-node-id'), cls: e.className, t: parseFloat(e.style.getPropertyValue('--dt') || '0'),
        bg: getComputedStyle(e).backgroundColor,
      })));
      expect(drawn.length > 0, 'nothing drawn');
      const grey = await page.$eval('.fg-legend .fg-swatch.d-same', (e) => getComputedStyle(e).backgroundColor);
      const [gr, , gb] = await toRgb(page, grey);
      const greyWarmth = gr - gb;
      const byStrength = [];
      for (const d of drawn) {
        const n = t.get(d.id);
        const delta = n.bytesB - n.bytesA;
        const want = delta > 0 ? 'd-grow' : delta < 0 ? 'd-shrink' : 'd-same';
        expect(d.cls.split(' ').includes(want), `${d.id}: change ${delta} drawn as "${d.cls}"`);
        expect(delta === 0 ? d.t === 0 : d.t > 0 && d.t <= 1, `${d.id}: strength ${d.t} for change ${delta}`);
        if (delta !== 0 && !d.cls.includes('is-match')) {
          // Warmer than the grey of no change for growth, cooler for shrinkage.
          const [r, , b] = await toRgb(page, d.bg);
          const warmth = r - b;
          expect(delta > 0 ? warmth > greyWarmth : warmth < greyWarmth, `${d.id}: change ${delta} painted ${d.bg}`);
        }
        if (delta !== 0 && n.parent) byStrength.push([Math.abs(delta), d.t, d.id]);
      }
      byStrength.sort((x, y) => x[0] - y[0]);
      for (let i = 1; i < byStrength.length; i++) {
        expect(byStrength[i][1] >= byStrength[i - 1][1] - 1e-9,
          `${byStrength[i][2]} (|change| ${byStrength[i][0]}) paler than ${byStrength[i - 1][2]} (${byStrength[i - 1][0]})`);
      }
      if (name === 'diff_mode') {
        for (const [id, [cls, strength]] of Object.entries(FIXTURE_SHADES)) {
          const d = drawn.find((x) => x.id === id);
          if (!d) { expect(fold && id === 'frame/1/2/3', `${id} not drawn`); continue; }
          expect(d.cls.includes(cls), `${id}: "${d.cls}", want ${cls}`);
          expect(Math.abs(d.t - Math.max(strength ? 0.15 : 0, strength)) < 0.002, `${id}: strength ${d.t}, want ${strength}`);
        }
      }
    });
  }
  await setFold(page, true);

  await step('tooltip and details give A, B and the change', async () => {
    await page.click('[data-testid="fg-reset"]');
    const t = await getTree(page);
    // The widest changed frame below the root.
    const node = t.filter((n) => n.parent && n.bytesA !== n.bytesB).sort((x, y) => y.size - x.size)[0] || t[1] || t[0];
    const change = await page.evaluate(([a, b]) => PtSnapFlamegraph.formatChange(a, b), [node.bytesA, node.bytesB]);
    const fmt = (n) => page.evaluate((n) => PtSnapFlamegraph.formatBytes(n), n);
    await page.hover(frameSel(node.id));
    const tip = await poll(async () => {
      const text = await page.textContent('.fg-tip');
      return text && text.includes('change') ? text : null;
    }, 'the tooltip');
    for (const want of [`A ${await fmt(node.bytesA)}`, `B ${await fmt(node.bytesB)}`, `change ${change}`]) {
      expect(tip.includes(want), `tooltip "${tip}" lacks "${want}"`);
    }
    const details = await page.textContent('[data-testid="fg-details"]');
    expect(details.includes('Change' + change), `details lack the change ${change}: ${details}`);
    if (name === 'diff_mode' && node.id === 'frame/1') {
      expect(change === '+4.00 KiB (+117.0%)', `frame/1 change reads ${change}`);
    }
    await page.mouse.move(0, 0);
  });

  await step('legend is a colour scale from less to more in B (or says nothing changed)', async () => {
    const items = await page.$$eval('.fg-legend li', (els) => els.map((e) => e.textContent));
    if ((await getState(page)).maxDelta > 0) {
      expect(items.length === 6, `legend has ${items.length} items`);
      expect(items[0].includes('less in B') && items[2].includes('unchanged') && items[4].includes('more in B'), items.join(' | '));
    } else {
      expect(items.length === 2 && items[0].startsWith('unchanged'), items.join(' | '));
    }
  });

  if (full) {
    await step('totals and peaks', async () => {
      const fmt = (n) => page.evaluate((n) => PtSnapFlamegraph.formatBytes(n), n);
      expect((await page.textContent('[data-testid="pd-total-a"]')).includes(await fmt(full.total_a)), 'A card');
      expect((await page.textContent('[data-testid="pd-total-b"]')).includes(await fmt(full.total_b)), 'B card');
      const rows = await page.$$eval('[data-testid="pd-peaks"] tbody tr', (els) => els.map((e) => e.textContent));
      expect(rows.length === 3, `${rows.length} peak rows`);
      const metricRow = rows.find((r) => r.startsWith(full.metric));
      expect(metricRow && metricRow.includes('compared'), 'the compared metric is not marked');
    });

    await step('timelines: both sides drawn on one axis, peaks marked, readout follows', async () => {
      const paths = await page.$$eval('[data-testid="pd-timeline"] path.pd-series', (els) => els.map((e) => [e.getAttribute('data-side'), e.getAttribute('d')]));
      expect(paths.length === 2 && new Set(paths.map((p) => p[0])).size === 2, `series: ${paths.map((p) => p[0])}`);
      for (const [side, d] of paths) {
        const pts = (d.match(/[ML]/g) || []).length;
        const buckets = full.timelines[side].buckets.length;
        expect(pts >= buckets && pts <= 2 * buckets, `${side}: ${pts} points for ${buckets} buckets`);
      }
      for (const side of ['a', 'b']) {
        expect(await page.locator(`[data-testid="pd-peak-${side}"]`).count() === 1, `no ${side} peak marker`);
      }
      await page.locator('[data-testid="pd-timeline"]').scrollIntoViewIfNeeded();
      const text = await hoverReadout(page, 'Ordinal', 'the readout');
      expect(/ A .* · B /.test(text), `readout "${text}"`);
      // The readout names the bucket holding that ordinal on each side.
      const ord = Number(text.match(/^Ordinal ([\d,]+)/)[1].replace(/,/g, ''));
      const bucket = full.timelines.a.buckets.find((b) => b.first <= ord && ord <= b.last);
      if (bucket) expect(text.includes(`A ${await page.evaluate((n) => PtSnapFlamegraph.formatBytes(n), bucket.max)}`), `readout "${text}" lacks A's max`);
      await page.mouse.move(0, 0);
    });

    const timeAxis = full.timelines.time_axis || {};
    await step('timelines: the time axis switch, enabled only when both sides have times', async () => {
      const axisOf = () => page.getAttribute('[data-testid="pd-timeline"] svg', 'data-axis');
      const disabled = await page.locator('[data-testid="pd-axis-time"]').isDisabled();
      expect(disabled === !timeAxis.available, `time button disabled=${disabled}, available=${timeAxis.available}`);
      if (!timeAxis.available) return;
      await page.click('[data-testid="pd-axis-time"]');
      await poll(async () => (await axisOf()) === 'time', 'the time axis');
      const paths = await page.$$eval('[data-testid="pd-timeline"] path.pd-series', (els) => els.map((e) => [e.getAttribute('data-side'), e.getAttribute('d')]));
      expect(paths.length === 2, `${paths.length} series on the time axis`);
      for (const [side, d] of paths) {
        const pts = (d.match(/[ML]/g) || []).length;
        const buckets = timeAxis[side].buckets.length;
        expect(pts >= buckets && pts <= 2 * buckets, `${side}: ${pts} points for ${buckets} time buckets`);
      }
      for (const side of ['a', 'b']) {
        expect(await page.locator(`[data-testid="pd-peak-${side}"]`).count() === 1, `no ${side} peak marker on the time axis`);
      }
      const text = await hoverReadout(page, 'Time', 'the time readout');
      expect(/^Time .*: A.* · B/.test(text), `readout "${text}"`);
      await page.mouse.move(0, 0);
      await page.click('[data-testid="pd-axis-ordinal"]');
      await poll(async () => (await axisOf()) === 'ordinal', 'the ordinal axis again');
    });

    await step('groups table: one row per listed group; Show reveals its stack', async () => {
      const rows = page.locator('[data-testid="pd-group"]');
      expect(await rows.count() === full.groups.length, `${await rows.count()} rows for ${full.groups.length} groups`);
      const statuses = await rows.evaluateAll((els) => els.map((e) => e.getAttribute('data-status')));
      expect(JSON.stringify(statuses) === JSON.stringify(full.groups.map((g) => g.status)), `statuses ${statuses}`);
      const counts = await page.textContent('[data-testid="pd-group-counts"]');
      expect(counts.startsWith(`${full.groups.length} of `), counts);
      const target = full.groups.find((g) => g.node_id);
      await page.click(`[data-testid="pd-group"] button[data-node-id=${JSON.stringify(target.node_id)}]`);
      await poll(async () => (await getState(page)).current === target.node_id, `${target.node_id} to be the current frame`);
      // The page scrolled to the flamegraph: whatever the pointer is over now must not
      // replace the revealed frame in the details.
      await page.mouse.move(0, 0);
      const fb = await page.locator(frameSel(target.node_id)).boundingBox();
      expect(fb && fb.width >= 20, `revealed frame is ${fb && fb.width}px wide`);
      const details = await page.textContent('[data-testid="fg-details"]');
      expect(details.includes(await page.evaluate(([a, b]) => PtSnapFlamegraph.formatChange(a, b), [target.bytes_a, target.bytes_b])),
        'details of the revealed frame do not show its group\'s change');
      await page.click('[data-testid="fg-reset"]');
      await setFold(page, true);
    });
  }

  await step('dark screenshot', async () => {
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: path.join(shotDir, `${name}-diff-dark.png`), fullPage: true });
    await page.emulateMedia({ colorScheme: 'light' });
  });

  await finish(`${name} (diff mode): ${tree.nodes.length} nodes${full ? `, ${full.groups.length} groups listed` : ''}`);
}

await runPages('diff', pages, testPage);
if (tally.passed + tally.failed === 0) {
  console.log('diff: no diff-mode page given');
  process.exit(1);
}
console.log(`diff: ${tally.passed} passed, ${tally.failed} failed`);
process.exit(tally.failed ? 1 : 0);
