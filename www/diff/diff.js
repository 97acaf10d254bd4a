/* pt-snap diff page: what changed between two runs (`pt-snap diff A B --format html`).
 *
 * Input: the report's data (`#diff-data`: sides, peaks, groups, timelines, as `--json`
 * prints them, plus each shown group's `node_id` — its innermost Python frame in the tree,
 * else its innermost frame — and the inputs' `labels`) and the
 * differential frame tree (`#tree-data`, drawn by the shared flamegraph component of
 * www/flamegraph/ in its diff mode).
 *
 *   const view = PtSnapDiff.render(container, data, tree);
 *   view.flamegraph   // the PtSnapFlamegraph view
 *   view.showGroup(i) // reveal the i-th shown group's stack in the flamegraph
 *   view.destroy()    // stop observing resizes and end the flamegraph
 *   view.timeline.setAxis('time') // the timelines against time since each side's first
 *                                 // event ('ordinal': by event ordinal, the default)
 *
 * Plain JS, no dependency, no network; a classic script defining globalThis.PtSnapDiff.
 */
(function (global) {
  'use strict';

  var SVG = 'http://www.w3.org/2000/svg';

  function num(v) {
    return typeof v === 'number' && isFinite(v) ? v : 0;
  }

  // Figures as the flamegraph (loaded first, on every page this one is) and the reports
  // write them: one formatter, held to pt-snap-report's `units` by rules.test.mjs.
  function human(bytes) {
    return global.PtSnapFlamegraph.formatBytes(bytes);
  }

  function exact(n) {
    return global.PtSnapFlamegraph.formatCount(n);
  }

  function signed(d) {
    return global.PtSnapFlamegraph.formatSignedBytes(d);
  }

  function percent(p) {
    return typeof p === 'number' && isFinite(p) ? (p >= 0 ? '+' : '') + p.toFixed(1) + '%' : null;
  }

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    setAttrs(e, attrs);
    (children || []).forEach(function (c) {
      if (c !== null && c !== undefined) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    });
    return e;
  }

  function svg(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    setAttrs(e, attrs);
    if (text != null) e.textContent = text;
    return e;
  }

  function setAttrs(e, attrs) {
    Object.keys(attrs || {}).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) return;
      if (k === 'class') e.setAttribute('class', v);
      else if (k === 'text') e.textContent = v;
      else e.setAttribute(k, v === true ? '' : String(v));
    });
  }

  var METRICS = ['allocated', 'active', 'reserved'];

  // ---------------------------------------------------------------- header and totals

  function header(data) {
    var labels = data.labels || {};
    function side(key, name) {
      var s = data[key] || {};
      var bits = [];
      // A snapshot argument: which database it was read through.
      if (s['import'] && s.db_path) bits.push('database ' + s.db_path);
      if (s['import'] && s['import'].reused != null) bits.push(s['import'].reused ? 'reused' : 'imported (' + s['import'].cache_miss_reason + ')');
      if (s.replay && s.replay.mode === 'lenient') bits.push('lenient replay: ' + s.replay.issues + ' events applied from the trace alone; numbers approximate');
      return el('li', null, [
        el('span', { class: 'pd-side pd-side-' + key, text: name }), ' ',
        el('span', { class: 'pd-path', text: labels[key] != null ? String(labels[key]) : '' }),
        bits.length ? el('span', { class: 'pd-muted', text: ' · ' + bits.join(' · ') }) : null
      ]);
    }
    return el('header', { class: 'pd-head' }, [
      el('h1', { text: 'What changed from A to B' }),
      el('ul', { class: 'pd-inputs' }, [side('a', 'A'), side('b', 'B')]),
      el('p', { class: 'pd-muted', text: 'Metric compared: ' + data.metric + ' · device ' + (data.a || {}).device_id + ' (A), ' +
        (data.b || {}).device_id + ' (B). Live memory is taken at each side\u2019s own ' + data.metric + ' peak.' })
    ]);
  }

  function totals(data) {
    var a = data.a || {}, b = data.b || {};
    function card(key, name, s) {
      return el('div', { class: 'pd-card', 'data-testid': 'pd-total-' + key }, [
        el('div', { class: 'pd-card-label' }, [el('span', { class: 'pd-side pd-side-' + key, text: name }), ' live at its ' + data.metric + ' peak']),
        el('div', { class: 'pd-card-value', text: human(s.groups_bytes) }),
        el('div', { class: 'pd-muted', text: exact(s.groups_bytes) + ' B · ' + exact(s.live_blocks_at_peak) + ' blocks · event ' + s.peak_event_id })
      ]);
    }
    var d = num(data.total_delta);
    var change = el('div', { class: 'pd-card pd-card-change ' + (d > 0 ? 'is-grow' : d < 0 ? 'is-shrink' : 'is-same'), 'data-testid': 'pd-total-change' }, [
      el('div', { class: 'pd-card-label', text: 'Change' }),
      el('div', { class: 'pd-card-value', text: signed(d) }),
      el('div', { class: 'pd-muted', text: d === 0 ? 'no change'
        : (percent(data.total_delta_percent) || 'A held nothing') + ' · ' + (d > 0 ? '+' : '') + exact(d) + ' B' })
    ]);
    var notes = [];
    [['A', a], ['B', b]].forEach(function (x) {
      var s = x[1];
      if (s.peak_event_id == null) notes.push(x[0] + ' has no peak: its device has no real event.');
      else if (s.unattributed_bytes) {
        notes.push(x[0] + ': the groups hold ' + exact(s.groups_bytes) + ' B but the active counter at event ' + s.peak_event_id +
          ' is ' + exact(s.live_bytes_at_peak) + ' B; ' + exact(s.unattributed_bytes) + ' B are in no group.');
      }
    });
    if (!notes.length) {
      notes.push('Each side\u2019s groups add up exactly to its active counter at its peak event' +
        (data.metric === 'active' ? ' (its active peak).' : '.'));
    }
    if (data.metric === 'reserved') {
      notes.push('Reserved − live at the reserved peak: A ' + human(num(a.metric_minus_live_bytes)) + ', B ' + human(num(b.metric_minus_live_bytes)) +
        ' — memory the allocator keeps cached, held by no block.');
    } else if (data.metric === 'allocated') {
      notes.push('Allocated − live at the allocated peak: A ' + human(num(a.metric_minus_live_bytes)) + ', B ' + human(num(b.metric_minus_live_bytes)) +
        ' — blocks freed but not yet reusable count as live (active), not allocated.');
    }
    return el('section', { class: 'pd-totals', 'aria-label': 'Totals' }, [
      el('div', { class: 'pd-cards' }, [card('a', 'A', a), card('b', 'B', b), change]),
      el('ul', { class: 'pd-notes' }, notes.map(function (n) { return el('li', { text: n }); }))
    ]);
  }

  function peaksTable(data) {
    var p = data.peaks || {}, pa = p.a || {}, pb = p.b || {};
    var rows = METRICS.map(function (m) {
      var d = (p.delta || {})[m], pc = percent((p.delta_percent || {})[m]);
      var at = function (s) {
        var v = s['peak_' + m];
        return v == null ? 'n/a' : human(v) + ' @' + s['peak_' + m + '_event_id'];
      };
      return el('tr', { class: m === data.metric ? 'is-metric' : null }, [
        el('th', { scope: 'row' }, [m, m === data.metric ? el('span', { class: 'pd-tag', text: 'compared' }) : null]),
        el('td', { class: 'pd-n', text: at(pa), title: exact(pa['peak_' + m]) + ' B' }),
        el('td', { class: 'pd-n', text: at(pb), title: exact(pb['peak_' + m]) + ' B' }),
        el('td', { class: 'pd-n ' + (d > 0 ? 'is-grow' : d < 0 ? 'is-shrink' : ''), text: d == null ? 'n/a' : signed(d) + (pc ? ' (' + pc + ')' : '') })
      ]);
    });
    return el('section', { class: 'pd-block' }, [
      el('h2', { text: 'Peaks' }),
      el('table', { class: 'pd-table pd-peaks', 'data-testid': 'pd-peaks' }, [
        el('thead', null, [el('tr', null, [el('th', { text: '' }), el('th', { class: 'pd-n', text: 'A' }), el('th', { class: 'pd-n', text: 'B' }), el('th', { class: 'pd-n', text: 'Change' })])]),
        el('tbody', null, rows)
      ]),
      el('p', { class: 'pd-muted', text: '@ the first event reaching each peak. The three peaks may fall at different events.' })
    ]);
  }

  // ---------------------------------------------------------------- timelines

  // A round upper bound for the axis in 1024-based units: 1, 2, 2.5 or 5 times a power of ten of the unit.
  function niceCeil(v) {
    if (!(v > 0)) return 1;
    var unit = 1;
    while (v / unit >= 1024) unit *= 1024;
    var x = v / unit, p = Math.pow(10, Math.floor(Math.log10(x)));
    var steps = [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10];
    for (var i = 0; i < steps.length; i++) if (steps[i] * p >= x) return steps[i] * p * unit;
    return 10 * p * unit;
  }

  // A series' points in axis order: each bucket's minimum and maximum where they occur.
  function points(series) {
    var out = [];
    (series.buckets || []).forEach(function (b) {
      var pair = [[b.min_at, b.min], [b.max_at, b.max]];
      if (b.max_at < b.min_at) pair.reverse();
      out.push(pair[0]);
      if (pair[1][0] !== pair[0][0] || pair[1][1] !== pair[0][1]) out.push(pair[1]);
    });
    return out;
  }

  // The bucket holding `at`, or {gap: [last before, first after]} between two buckets.
  function bucketAt(series, at) {
    var bs = series.buckets || [], lo = 0, hi = bs.length - 1;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1;
      if (bs[mid].last < at) lo = mid + 1;
      else if (bs[mid].first > at) hi = mid - 1;
      else return bs[mid];
    }
    return lo > 0 && lo < bs.length ? { gap: [bs[lo - 1].last, bs[lo].first] } : null;
  }

  // A duration in microseconds, as the text report writes it (pt-snap-report's
  // `units::seconds`, held to it by rules.test.mjs): 12.345 s, 3 min 05.250 s.
  function duration(us) {
    if (typeof us !== 'number' || !isFinite(us)) return 'n/a';
    var sign = us < 0 ? '-' : '', a = Math.abs(us);
    if (a < 1000) return sign + (a / 1e6).toFixed(6) + ' s';
    var s = Math.floor(a / 1e6), ms = Math.floor((a % 1e6) / 1000);
    var pad = function (n, w) { n = String(n); while (n.length < w) n = '0' + n; return n; };
    var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    if (!h && !m) return sign + sec + '.' + pad(ms, 3) + ' s';
    if (!h) return sign + m + ' min ' + pad(sec, 2) + '.' + pad(ms, 3) + ' s';
    return sign + h + ' h ' + pad(m, 2) + ' min ' + pad(sec, 2) + '.' + pad(ms, 3) + ' s';
  }

  // To the microsecond, for the readout: 0.186042 s (past a minute, as `duration`).
  function precise(us) {
    if (typeof us !== 'number' || !isFinite(us) || Math.abs(us) >= 60e6) return duration(us);
    return (us / 1e6).toFixed(6) + ' s';
  }

  // A round step of about `raw` microseconds for the time axis, and how its ticks read.
  var TIME_STEPS = [];
  (function () {
    for (var p = 1; p < 1e7; p *= 10) [1, 2, 5].forEach(function (m) { TIME_STEPS.push(m * p); });
    [10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400].forEach(function (sec) { TIME_STEPS.push(sec * 1e6); });
  })();

  function timeStep(raw) {
    for (var i = 0; i < TIME_STEPS.length; i++) if (TIME_STEPS[i] >= raw) return TIME_STEPS[i];
    return TIME_STEPS[TIME_STEPS.length - 1] * Math.ceil(raw / TIME_STEPS[TIME_STEPS.length - 1]);
  }

  function timeTick(us, step) {
    var trim = function (v) { return String(Math.round(v * 1000) / 1000); };
    if (step >= 3600e6) return trim(us / 3600e6) + ' h';
    if (step >= 60e6) return trim(us / 60e6) + ' min';
    if (step >= 1e6) return trim(us / 1e6) + ' s';
    if (step >= 1e3) return trim(us / 1e3) + ' ms';
    return trim(us) + ' µs';
  }

  // The two axes the JSON gives: the event ordinal (timelines.a/b) and the time since each
  // side's first event (timelines.time_axis.a/b, when both sides have times).
  var AXES = {
    ordinal: {
      button: 'Event ordinal',
      label: 'event ordinal (id − first event id)',
      series: function (tl, k) { return tl[k] || {}; },
      peak: function (series) { return series.peak_ordinal; },
      range: function (series) { return [0, num(series.events) - 1]; },
      tick: function (v) { return exact(v); },
      step: function (raw) {
        var mag = Math.pow(10, Math.floor(Math.log10(Math.max(1, raw))));
        return [1, 2, 5, 10].map(function (m) { return m * mag; }).filter(function (v) { return v >= raw; })[0] || mag;
      },
      at: function (v) { return 'Ordinal ' + exact(v); },
      span: function (b) { return b.first !== b.last ? ' over ordinals ' + exact(b.first) + '–' + exact(b.last) : ''; },
      between: function (a, b) { return 'between ordinals ' + exact(a) + ' and ' + exact(b); },
      legend: function (series, name, metric) {
        return name + ' · ' + metric + ' · ' + exact(num(series.events)) + ' events · peak at ordinal ' + series.peak_ordinal;
      },
      round: true
    },
    time: {
      button: 'Time since first event',
      label: 'time since the side\u2019s first event',
      series: function (tl, k) { return (tl.time_axis || {})[k] || {}; },
      peak: function (series) { return series.peak_at; },
      range: function (series) { return [num(series.start), num(series.end)]; },
      tick: timeTick,
      step: timeStep,
      at: function (v) { return 'Time ' + precise(v); },
      span: function (b) { return b.first !== b.last ? ' over ' + precise(b.first) + '–' + precise(b.last) : ''; },
      between: function (a, b) { return 'between ' + precise(a) + ' and ' + precise(b); },
      legend: function (series, name, metric) {
        return name + ' · ' + metric + ' · ' + exact(num(series.timed_events)) + ' timed events over ' + duration(num(series.end) - num(series.start)) +
          ' · peak at ' + duration(series.peak_at);
      },
      round: true
    }
  };

  function Timeline(data) {
    this.data = data;
    this.tl = data.timelines || {};
    this.hasTime = !!(this.tl.time_axis && this.tl.time_axis.available);
    this.chart = el('div', { class: 'pd-chart', 'data-testid': 'pd-timeline' });
    this.readout = el('p', { class: 'pd-readout', role: 'status', 'data-testid': 'pd-readout', text: 'Point at the chart to read both sides at one position.' });
    this.legend = el('ul', { class: 'pd-legend' });
    var self = this;
    this.buttons = {};
    var switcher = el('div', { class: 'pd-axes', role: 'group', 'aria-label': 'Horizontal axis' }, ['ordinal', 'time'].map(function (name) {
      var b = el('button', { type: 'button', class: 'pd-axis-button', 'data-testid': 'pd-axis-' + name, 'aria-pressed': 'false', text: AXES[name].button });
      if (name === 'time' && !self.hasTime) {
        b.disabled = true;
        b.title = 'No time axis: see the note below.';
      }
      b.addEventListener('click', function () { self.setAxis(name); });
      self.buttons[name] = b;
      return b;
    }));
    this.section = el('section', { class: 'pd-block' }, [
      el('h2', { text: 'Timelines on one axis' }),
      switcher, this.legend,
      this.chart, this.readout,
      el('p', { class: 'pd-muted', text: 'Each line is the ' + this.tl.metric + ' counter, ' + this.tl.axis_note +
        ' Each bucket keeps its minimum and maximum, so no peak is lost.' })
    ]);
    this.width = 0;
    this.setAxis('ordinal', true);
    if (typeof ResizeObserver === 'function') {
      this.resizer = new ResizeObserver(function (entries) {
        var w = Math.round(entries[entries.length - 1].contentRect.width);
        if (w > 0 && w !== self.width) self.draw(w);
      });
      this.resizer.observe(this.chart);
    }
  }

  Timeline.prototype.destroy = function () {
    if (this.resizer) this.resizer.disconnect();
  };

  // Switches the horizontal axis ('ordinal' or 'time'); false when the data has no such axis.
  Timeline.prototype.setAxis = function (name, quiet) {
    if (!AXES[name] || (name === 'time' && !this.hasTime)) return false;
    var axis = AXES[name], tl = this.tl, self = this;
    this.axisName = name;
    this.axis = axis;
    this.sides = [['a', 'A', axis.series(tl, 'a')], ['b', 'B', axis.series(tl, 'b')]];
    var lo = Infinity, hi = -Infinity;
    this.sides.forEach(function (s) {
      var r = axis.range(s[2]);
      if (r[0] < lo) lo = r[0];
      if (r[1] > hi) hi = r[1];
    });
    if (!isFinite(lo)) lo = 0;
    if (!(hi > lo)) hi = lo + 1;
    this.lo = lo;
    this.hi = hi;
    var maxY = 0;
    this.sides.forEach(function (s) { (s[2].buckets || []).forEach(function (b) { if (b.max > maxY) maxY = b.max; }); });
    this.top = niceCeil(maxY);
    this.pts = this.sides.map(function (s) { return points(s[2]); });
    Object.keys(this.buttons).forEach(function (k) { self.buttons[k].setAttribute('aria-pressed', String(k === name)); });
    this.legend.replaceChildren.apply(this.legend, this.sides.map(function (s) {
      return el('li', null, [el('span', { class: 'pd-line pd-line-' + s[0], 'aria-hidden': 'true' }), axis.legend(s[2], s[1], tl.metric)]);
    }));
    if (!quiet && this.width) this.draw(this.width);
    return true;
  };

  Timeline.prototype.draw = function (width) {
    this.width = width;
    var W = Math.max(320, width), H = 280, L = 76, R = 24, T = 12, B = 34;
    var lo = this.lo, hi = this.hi, top = this.top, axis = this.axis;
    var x = function (o) { return L + ((o - lo) / (hi - lo)) * (W - L - R); };
    var y = function (v) { return T + (1 - v / top) * (H - T - B); };
    var s = svg('svg', {
      width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, class: 'pd-svg', role: 'img', 'data-axis': this.axisName,
      'aria-label': 'The ' + this.tl.metric + ' counter of A and B against ' + axis.label
    });
    var i, v;
    for (i = 0; i <= 4; i++) {
      v = (top * i) / 4;
      s.appendChild(svg('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), class: 'pd-grid' }));
      s.appendChild(svg('text', { x: L - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'pd-tick' }, human(v)));
    }
    // Ticks at a round step, about six of them.
    var step = axis.step((hi - lo) / 6);
    for (var o = Math.ceil(lo / step) * step; o <= hi; o += step) {
      s.appendChild(svg('line', { x1: x(o), x2: x(o), y1: H - B, y2: H - B + 4, class: 'pd-axis' }));
      s.appendChild(svg('text', { x: x(o), y: H - B + 16, 'text-anchor': o === lo ? 'start' : 'middle', class: 'pd-tick' }, axis.tick(o, step)));
    }
    s.appendChild(svg('text', { x: (L + W - R) / 2, y: H - 4, 'text-anchor': 'middle', class: 'pd-tick' }, axis.label));
    s.appendChild(svg('line', { x1: L, x2: W - R, y1: H - B, y2: H - B, class: 'pd-axis' }));
    var self = this;
    // B first and A dashed on top: where the runs coincide both stay visible.
    [1, 0].forEach(function (k) {
      var side = self.sides[k], pts = self.pts[k];
      if (!pts.length) return;
      var d = pts.map(function (p, j) { return (j ? 'L' : 'M') + x(p[0]).toFixed(1) + ' ' + y(p[1]).toFixed(1); }).join('');
      s.appendChild(svg('path', { d: d, class: 'pd-series pd-series-' + side[0], 'data-side': side[0] }));
    });
    // Peak markers last, on top of both lines.
    this.sides.forEach(function (side) {
      var sd = self.data[side[0]] || {}, at = axis.peak(side[2]), value = sd.metric_peak_bytes;
      if (at == null || value == null) return;
      var g = svg('g', { class: 'pd-peak pd-peak-' + side[0], 'data-testid': 'pd-peak-' + side[0] });
      g.appendChild(svg('circle', { cx: x(at), cy: y(value), r: 4.5 }));
      var right = x(at) > W - 160;
      g.appendChild(svg('text', { x: x(at) + (right ? -8 : 8), y: y(value) + (side[0] === 'a' ? 14 : -6), 'text-anchor': right ? 'end' : 'start' },
        side[1] + ' peak ' + human(value)));
      s.appendChild(g);
    });
    var cursor = svg('line', { x1: 0, x2: 0, y1: T, y2: H - B, class: 'pd-cursor' });
    cursor.style.display = 'none';
    s.appendChild(cursor);
    var hit = svg('rect', { x: L, y: T, width: W - L - R, height: H - T - B, class: 'pd-hit' });
    s.appendChild(hit);
    hit.addEventListener('mousemove', function (e) {
      var box = s.getBoundingClientRect();
      var px = ((e.clientX - box.left) / box.width) * W;
      var at = Math.max(lo, Math.min(hi, Math.round(lo + ((px - L) / (W - L - R)) * (hi - lo))));
      cursor.setAttribute('x1', x(at));
      cursor.setAttribute('x2', x(at));
      cursor.style.display = '';
      self.read(at);
    });
    hit.addEventListener('mouseleave', function () { cursor.style.display = 'none'; });
    this.chart.replaceChildren(s);
  };

  // Both sides at one position of the current axis: the bucket holding it, with its extremes.
  Timeline.prototype.read = function (at) {
    var axis = this.axis;
    var parts = this.sides.map(function (side) {
      var b = bucketAt(side[2], at);
      if (!b) return side[1] + ': no event';
      if (b.gap) return side[1] + ': no event ' + axis.between(b.gap[0], b.gap[1]);
      return side[1] + ' ' + human(b.max) + (b.min !== b.max ? ' (min ' + human(b.min) + ')' : '') + axis.span(b);
    });
    this.readout.textContent = axis.at(at) + ': ' + parts.join(' · ');
    return this.readout.textContent;
  };

  // ---------------------------------------------------------------- groups

  var STATUS_TEXT = {
    'new': 'only in B', gone: 'only in A', changed: 'in both, changed', same: 'in both, unchanged'
  };

  function frameLabel(f) {
    return f.file ? f.function + ' (' + f.file + (f.line != null ? ':' + f.line : '') + ')' : f.function;
  }

  function groupsTable(data, reveal) {
    var groups = data.groups || [], counts = data.group_counts || {};
    var widest = groups.reduce(function (m, g) { return Math.max(m, Math.abs(num(g.delta))); }, 0);
    var rows = groups.map(function (g, i) {
      var d = num(g.delta), pc = percent(g.delta_percent);
      var bar = el('span', { class: 'pd-bar ' + (d > 0 ? 'is-grow' : d < 0 ? 'is-shrink' : ''), 'aria-hidden': 'true' });
      bar.style.width = widest > 0 ? Math.max(d === 0 ? 0 : 2, (Math.abs(d) / widest) * 100) + '%' : '0';
      var frames = g.frames || [];
      var where = frames.length
        ? el('details', null, [
          el('summary', { text: g.site }),
          el('ol', { class: 'pd-frames', 'aria-label': 'Frames, outermost caller first' }, frames.map(function (f) {
            return el('li', { text: frameLabel(f) });
          }))
        ])
        : el('span', { class: 'pd-muted', text: g.site + (g.largest_dynamic_site ? ' · largest allocated during the trace: ' + g.largest_dynamic_site : '') });
      var show = g.node_id ? el('button', { type: 'button', class: 'pd-show', 'data-node-id': g.node_id, title: 'Zoom the flamegraph below to this stack', text: 'Show' }) : null;
      return el('tr', { 'data-testid': 'pd-group', 'data-status': g.status, 'data-node-id': g.node_id }, [
        el('td', { class: 'pd-n pd-muted', text: String(i + 1) }),
        el('td', null, [el('span', { class: 'pd-status s-' + g.status, title: STATUS_TEXT[g.status] || '', text: g.status })]),
        el('td', { class: 'pd-change' }, [
          el('span', { class: 'pd-bar-box' }, [bar]),
          el('span', { class: 'pd-n ' + (d > 0 ? 'is-grow' : d < 0 ? 'is-shrink' : ''), text: signed(d), title: (d >= 0 ? '+' : '') + exact(d) + ' B' + (pc ? ' (' + pc + ')' : '') })
        ]),
        el('td', { class: 'pd-n', text: human(num(g.bytes_a)), title: exact(num(g.bytes_a)) + ' B' }),
        el('td', { class: 'pd-n', text: human(num(g.bytes_b)), title: exact(num(g.bytes_b)) + ' B' }),
        el('td', { class: 'pd-n', text: exact(num(g.count_a)) + ' → ' + exact(num(g.count_b)) }),
        el('td', { class: 'pd-where' }, [where]),
        el('td', null, [show])
      ]);
    });
    var table = el('table', { class: 'pd-table pd-groups', 'data-testid': 'pd-groups' }, [
      el('thead', null, [el('tr', null, ['#', 'Status', 'Change', 'A', 'B', 'Blocks A → B', 'Where allocated (your code → torch call)', ''].map(function (h, i) {
        return el('th', { class: i >= 3 && i <= 5 ? 'pd-n' : null, scope: 'col', text: h });
      }))]),
      el('tbody', null, rows)
    ]);
    table.addEventListener('click', function (e) {
      var b = e.target.closest('button[data-node-id]');
      if (b) reveal(b.getAttribute('data-node-id'));
    });
    return el('section', { class: 'pd-block' }, [
      el('h2', { text: 'Call-stack groups by size of change' }),
      el('p', { class: 'pd-muted', 'data-testid': 'pd-group-counts', text: groups.length + ' of ' + exact(num(counts.total)) + ' groups shown; totals are over all of them. ' +
        exact(num(counts['new'])) + ' new (only in B), ' + exact(num(counts.gone)) + ' gone (only in A), ' + exact(num(counts.changed)) +
        ' changed, ' + exact(num(counts.same)) + ' unchanged. Stacks match across machines by their frames\u2019 function, file and line, ' +
        'with the path cut to what every machine shares.' }),
      el('div', { class: 'pd-scroll' }, [table])
    ]);
  }

  // ---------------------------------------------------------------- page

  function render(container, data, tree) {
    if (!container || container.nodeType !== 1) throw new TypeError('PtSnapDiff.render: container must be an element');
    data = data && typeof data === 'object' ? data : {};
    var root = el('div', { class: 'ptsnap-diff' });
    var fgHost = el('div', { class: 'pd-fg' });
    var fg = null;
    // The group's stack fills the flamegraph: zoomed to its site frame (callers in the
    // breadcrumb, the native frames below it), which becomes the frame the details describe.
    function reveal(nodeId) {
      if (!fg) return false;
      fg.reset();
      if (!fg.zoomTo(nodeId)) return false;
      fgHost.scrollIntoView({ block: 'start' });
      return true;
    }
    var timeline = new Timeline(data);
    root.appendChild(header(data));
    root.appendChild(totals(data));
    root.appendChild(peaksTable(data));
    root.appendChild(timeline.section);
    root.appendChild(groupsTable(data, reveal));
    root.appendChild(el('section', { class: 'pd-block' }, [
      el('h2', { text: 'Differential flamegraph of every group' }), fgHost
    ]));
    container.replaceChildren(root);
    if (!timeline.width) timeline.draw(timeline.chart.clientWidth || 960);
    // The page's own header and cards already name both sides and their totals.
    fg = global.PtSnapFlamegraph.render(fgHost, tree || {}, { showHeader: false });
    return {
      element: root,
      flamegraph: fg,
      timeline: {
        read: function (at) { return timeline.read(at); },
        setAxis: function (name) { return timeline.setAxis(name); },
        axis: function () { return timeline.axisName; }
      },
      showGroup: function (i) {
        var g = (data.groups || [])[i];
        return !!(g && g.node_id && reveal(g.node_id));
      },
      // For a host that replaces the view (the browser's Compare view).
      destroy: function () {
        timeline.destroy();
        if (fg) fg.destroy();
      }
    };
  }

  global.PtSnapDiff = { version: 1, render: render, formatDuration: duration };
})(typeof globalThis !== 'undefined' ? globalThis : this);
