// The Segments view end to end in Chromium: on a real capture with C++ frames (CS336) and on
// the OOM fixture, the map's segment rows are `pt-snap report segments --json`'s at the same
// event, a click on a block selects its allocation event in every view, the segment
// timeline selects the event under the pointer, the OOM view opens the map at the OOM
// event, and the capture banner says what `pt-snap overview --json` warns. At a million
// events, no main-thread task of the view is over 200 ms (room for a loaded machine; an idle
// one stays near 100 ms). Screenshots: target/web/segments-*.png.
// Run by tests/web/run.sh (which makes the expected JSON): node segments.test.mjs URL ROOT.
import fs from 'node:fs';
import path from 'node:path';
import { launch, check, eq, ok, checkClean, finish } from './harness.mjs';

const [url, root] = process.argv.slice(2);
const out = path.join(root, 'target/web');
const read = (name) => JSON.parse(fs.readFileSync(path.join(out, name), 'utf8'));

const browser = await launch(root, 'segments', {
  origin: new URL(url).origin, viewport: { width: 1280, height: 900 },
});
const { ctx, errors, watch } = browser;
const shot = (name, p) => p.screenshot({ path: path.join(out, `segments-${name}.png`), fullPage: true });

/** A new watched page with `file` (in target/web) dropped on it and its database ready. */
async function pageShowing(file, timeout = 120000, before = async () => {}) {
  const p = await ctx.newPage();
  watch(p);
  await before(p);
  await p.goto(url);
  await p.setInputFiles('[data-testid=file-input]', path.join(out, file));
  await p.waitForSelector('[data-testid=engine-state][data-value=ready]', { timeout });
  return p;
}
const view = '[data-testid=segments-view]';
/** Waits for the map at `event` and gives its segment rows. */
async function mapAt(p, event) {
  await p.waitForSelector(`${view}[data-event-id="${event}"]`, { timeout: 60000 });
  return p.$$eval('[data-testid=segment]', (rows) => rows.map((r) => [r.dataset.address, r.dataset.totalSize]));
}
/** The rows `report segments --json` gives, as the map's hooks spell them. */
const rowsOf = (want) => want.segments.map((s) => [String(s.address), String(s.total_size)]);
function sameRows(got, want, what) {
  eq(got.length, want.segments.length, `${what}: segment rows`);
  const expect = rowsOf(want);
  got.forEach((r, i) => eq(r.join(' '), expect[i].join(' '), `${what}: row ${i} (address, total_size)`));
}
/** The map's scroll box scrolled to row `i`, and the page point at `offset` bytes into it. */
async function pointInRow(p, i, offset) {
  return p.evaluate(([i, offset]) => {
    const map = document.querySelector('.ptsnap-seg .ps-map');
    const row = map.querySelectorAll('[data-testid=segment]')[i];
    map.scrollTop = Math.max(0, row.offsetTop - 40);
    const canvas = map.querySelector('canvas');
    const r = canvas.getBoundingClientRect();
    const rr = row.getBoundingClientRect();
    const size = Number(row.dataset.totalSize);
    return { x: r.left + (offset / size) * r.width, y: rr.top + rr.height / 2 };
  }, [i, offset]);
}

await check('CS336: the map at the active peak is report segments\'; hover names a block, a click selects its allocation everywhere', async () => {
  const want = read('expected-segments-cs336.json');
  const event = want.event.id;
  const p = await pageShowing('cs336.pickle');
  await p.click('[data-testid=tab-segments]');
  await p.waitForFunction(() => location.hash.includes('view=segments'));
  sameRows(await mapAt(p, event), want, `event ${event}`);
  const counters = await p.$$eval(`${view} .ps-card-value`, (cs) => cs.map((c) => c.title));
  eq(counters[0], `${want.counters.allocated.toLocaleString('en-US')} B`, 'allocated card');
  eq(counters[2], `${want.counters.reserved.toLocaleString('en-US')} B`, 'reserved card');
  // The largest block with an allocation event: hover tells it, a click selects that event.
  let pick = null;
  want.segments.forEach((s, i) => s.blocks.forEach((b) => {
    if (b.alloc_event_id !== null && b.alloc_event_id !== event && (!pick || b.size > pick.b.size)) pick = { i, s, b };
  }));
  ok(pick, 'the map has a block allocated in the trace');
  await p.waitForTimeout(100);
  const at = await pointInRow(p, pick.i, pick.b.address - pick.s.address + pick.b.size / 2);
  await p.waitForTimeout(100);
  await p.mouse.move(at.x, at.y);
  await p.waitForSelector(`${view} .ps-tip:not([hidden])`);
  const tip = await p.textContent(`${view} .ps-tip`);
  ok(tip.includes(`allocated at event ${pick.b.alloc_event_id.toLocaleString('en-US')}`), `the tip names the allocation event: ${tip}`);
  ok(tip.includes(`${pick.b.size.toLocaleString('en-US')} B`), `the tip names the size: ${tip}`);
  ok(tip.includes(pick.b.site), `the tip names the site ${pick.b.site}: ${tip}`);
  await shot('cs336-hover', p);
  await p.mouse.click(at.x, at.y);
  await p.waitForFunction((e) => location.hash.includes(`event=${e}`), pick.b.alloc_event_id);
  await p.waitForSelector(`${view}[data-event-id="${pick.b.alloc_event_id}"]`, { timeout: 60000 });
  // The other views follow: the timeline marks it.
  await p.click('[data-testid=tab-overview]');
  await p.waitForSelector(`[data-testid=selected-event][data-event="${pick.b.alloc_event_id}"]`, { timeout: 60000 });
  await p.click('[data-testid=tab-segments]');
  await p.waitForSelector(`${view}[data-event-id="${pick.b.alloc_event_id}"]`, { timeout: 60000 });
  await p.close();
});

await check('CS336: the segment timeline is drawn under the map and a click selects the event under it', async () => {
  const want = read('expected-segments-cs336.json');
  const p = await pageShowing('cs336.pickle');
  await p.click('[data-testid=tab-segments]');
  await mapAt(p, want.event.id);
  const chart = '[data-testid=segment-timeline-chart]';
  await p.waitForSelector(`${chart}[data-bands]`, { timeout: 60000 });
  ok(Number(await p.getAttribute(chart, 'data-bands')) > 0, 'segments drawn');
  eq(await p.getAttribute(chart, 'data-window'), `${want.first_event_id}-${want.last_event_id}`, 'the whole trace');
  // The chart is below the map: in view first, or the pointer would miss it.
  await p.locator(chart).scrollIntoViewIfNeeded();
  const box = await (await p.$(chart)).boundingBox();
  await p.mouse.move(box.x + box.width * 0.3, box.y + box.height - 4);
  await p.waitForFunction(() => /^\s*events? \d/.test(document.querySelector('[data-testid=segment-timeline-readout]').textContent));
  await p.mouse.click(box.x + box.width * 0.3, box.y + box.height - 4);
  await p.waitForFunction((e) => {
    const id = document.querySelector('[data-testid=segments-view]')?.dataset.eventId;
    return id && id !== String(e) && location.hash.includes(`event=${id}`);
  }, want.event.id, { timeout: 60000 });
  const picked = Number(await p.getAttribute(view, 'data-event-id'));
  const span = want.last_event_id - want.first_event_id;
  ok(Math.abs(picked - (want.first_event_id + 0.3 * span)) < span * 0.02, `the event under the pointer: ${picked}`);
  await p.evaluate(() => window.scrollTo(0, 0));
  await shot('cs336', p);
  await p.close();
});

await check('capture banner: overview\'s warnings, each with its code', async () => {
  for (const [file, expected] of [['cs336.pickle', 'expected-overview-cs336.json'], ['oom.pkl', 'expected-overview-oom.json']]) {
    const o = read(expected);
    const device = o.devices.find((d) => d.capture)?.capture ?? null;
    const codes = (device?.warnings ?? []).map((w) => w.code).concat(o.capture_warnings.map((w) => w.code));
    const p = await pageShowing(file);
    if (!codes.length) {
      await p.waitForSelector('[data-testid=capture-checked]', { state: 'attached', timeout: 60000 });
      eq(await p.$('[data-testid=capture-warnings]'), null, `${file}: no banner without warnings`);
    } else {
      await p.waitForSelector('[data-testid=capture-warnings]', { timeout: 60000 });
      const got = await p.$$eval('[data-testid=capture-warnings] [data-code]', (ws) => ws.map((w) => [w.dataset.code, w.textContent]));
      eq(got.map((w) => w[0]).join(','), codes.join(','), `${file}: warning codes`);
      const messages = (device?.warnings ?? []).concat(o.capture_warnings).map((w) => w.message);
      got.forEach((w, i) => ok(w[1].includes(messages[i]), `${file}: warning ${w[0]} says ${messages[i]}`));
      await shot(`banner-${file.split('.')[0]}`, p);
    }
    await p.close();
  }
});

await check('OOM: the verdict links to the map at the OOM event, report segments\' there', async () => {
  const want = read('expected-segments-oom.json');
  const oom = read('expected-oom.json').events[0];
  const p = await pageShowing('oom.pkl', 60000);
  await p.waitForSelector('[data-testid=oom-banner]', { timeout: 60000 });
  await p.click('[data-testid=oom-explain]');
  await p.click('[data-testid=oom-event] >> nth=0 >> [data-testid=oom-segments]');
  await p.waitForFunction(() => location.hash.includes('view=segments'));
  eq(Number(await p.inputValue('[data-testid=device-select]')), oom.device, 'the OOM\'s device');
  sameRows(await mapAt(p, oom.event_id), want, `OOM event ${oom.event_id}`);
  eq(want.event.action, 'oom', 'the CLI\'s map is at the oom event');
  await shot('oom', p);
  await p.close();
});

// The bound leaves a loaded 2-core machine room; an idle one stays near 100 ms (the log
// names each long task's step).
await check('a million events: the map and the segment timeline with no main-thread task over 200 ms', async () => {
  const p = await pageShowing('bench-1m.pickle', 600000, (p) => p.addInitScript(() => {
    window.__long = [];
    new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__long.push([Math.round(e.startTime), Math.round(e.duration)]); })
      .observe({ type: 'longtask', buffered: true });
  }));
  // Let what opening the file asked for settle before timing the view.
  await p.waitForSelector('[data-testid=timeline] g[data-peak=active]', { state: 'attached', timeout: 120000 });
  await p.waitForTimeout(1000);
  const from = await p.evaluate(() => performance.now());
  const t0 = Date.now();
  const asked = [['first map', from]];
  await p.click('[data-testid=tab-segments]');
  await p.waitForSelector(`${view}[data-event-id]`, { timeout: 300000 });
  await p.waitForSelector('[data-testid=segment-timeline-chart][data-bands]', { timeout: 300000 });
  const first = Date.now() - t0;
  const rows = await p.$$eval('[data-testid=segment]', (r) => r.length);
  // Another event: the worker goes on from its nearest checkpoint.
  const times = [];
  for (const f of [0.25, 0.75, 0.5]) {
    const [lo, hi] = (await p.getAttribute('[data-testid=segment-timeline-chart]', 'data-window')).split('-').map(Number);
    const e = Math.round(lo + f * (hi - lo));
    const before = await p.getAttribute(view, 'data-event-id');
    ok(before !== String(e), `event ${e} is another than the map's`);
    const t1 = Date.now();
    asked.push([`event ${e}`, await p.evaluate(() => performance.now())]);
    await p.fill('[data-testid=segments-event]', String(e));
    await p.press('[data-testid=segments-event]', 'Enter');
    // The map of this event, not still the last one's.
    await p.waitForFunction(([e, before]) => {
      const id = document.querySelector('[data-testid=segments-view]')?.dataset.eventId;
      return id !== before && Number(id) <= e && location.hash.includes(`event=${e}`) && !document.querySelector('[data-testid=pending]');
    }, [e, before], { timeout: 120000 });
    times.push(Date.now() - t1);
  }
  // Scrolling the rows repaints only the rows in view.
  asked.push(['scroll', await p.evaluate(() => performance.now())]);
  const paints = await p.evaluate(async () => {
    const map = document.querySelector('.ptsnap-seg .ps-map');
    const out = [];
    for (const f of [0.2, 0.5, 0.9]) {
      map.scrollTop = f * (map.scrollHeight - map.clientHeight);
      const t = performance.now();
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      out.push(Math.round(performance.now() - t));
    }
    return out;
  });
  const long = (await p.evaluate(() => window.__long)).filter(([start]) => start >= from);
  const during = (at) => asked.filter(([, t]) => t <= at).pop()[0];
  console.log(`     ${rows} segment rows; first map and timeline ${first} ms, then ${times.join(', ')} ms per event; scroll frames ${paints.join(', ')} ms; main-thread tasks over 50 ms: ${JSON.stringify(long.map(([at, d]) => `${d} (${during(at)})`))}`);
  eq(long.filter(([, d]) => d > 200).length, 0, `main-thread tasks over 200 ms: ${JSON.stringify(long)}`);
  await shot('1m', p);
  await p.close();
});

await checkClean(browser);
await finish(browser);
