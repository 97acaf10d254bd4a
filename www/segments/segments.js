/* pt-snap segment map: the allocator's segments at one event, each a row with its blocks
 * drawn to scale on one canvas (only the rows in view are drawn), hover for a block's
 * size, state, site and allocating event, click to select that event (options).
 * Used by `pt-snap report segments --format html` and by the browser app's Segments view.
 * Plain JS, no dependency, no network. See README.md for the data it draws. */
(function (global) {
  'use strict';

  var ROW = 18;        // px per segment row
  var LABEL = 290;     // px of the row labels (.ps-label and .ps-canvas's margin)
  var STATES = ['allocated', 'pending free', 'free (cached)'];

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }

  function bytes(n) {
    var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    var v = Math.abs(n), i = 0;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    var s = i === 0 ? String(v) : v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2);
    return (n < 0 ? '-' : '') + s + ' ' + units[i];
  }

  function grouped(n) {
    return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  }

  function hex(n) {
    return '0x' + Number(n).toString(16);
  }

  /* A stable colour per site index. */
  function siteColour(i, dark) {
    var h = (i * 137.508) % 360;
    return 'hsl(' + h.toFixed(0) + ' 55% ' + (dark ? '45%' : '55%') + ')';
  }

  function render(container, data, options) {
    options = options || {};
    var dark = global.matchMedia && global.matchMedia('(prefers-color-scheme: dark)').matches;
    var colours = dark
      ? { alloc: '#5b8fd1', pending: '#ff8f6b', free: '#2a313b', edge: '#12161c', bg: '#1a2028' }
      : { alloc: '#3a6fb0', pending: '#e8590c', free: '#e4e8ee', edge: '#ffffff', bg: '#f4f6f9' };
    var segments = data.segments || [];
    var sites = data.sites || [];
    var mode = { colour: 'state', scale: 'fit' };
    var maxSize = segments.reduce(function (m, s) { return Math.max(m, s.total_size); }, 1);

    var root = el('div', 'ptsnap-seg');
    root.setAttribute('data-testid', 'segments-view');
    root.setAttribute('data-event-id', String(data.event ? data.event.id : ''));
    container.textContent = '';
    container.appendChild(root);

    // ------------------------------------------------------------ header
    var head = el('div', 'ps-head');
    var ev = data.event || {};
    var title = el('h2', 'ps-title', 'Device ' + data.device_id + ' after event ' + grouped(ev.id));
    head.appendChild(title);
    var sub = el('p', 'ps-sub');
    sub.textContent = (ev.action === 'oom'
      ? 'oom: ' + bytes(ev.size) + ' requested'
      : ev.action + ' of ' + bytes(ev.size) + ' at ' + hex(ev.address)) +
      (ev.stream ? ' on stream ' + ev.stream : '') + ' · device events ' + grouped(data.first_event_id) +
      '…' + grouped(data.last_event_id);
    head.appendChild(sub);
    var cards = el('div', 'ps-cards');
    var c = data.counters || {};
    var t = data.totals || {};
    [['allocated', c.allocated], ['active', c.active], ['reserved', c.reserved],
      ['free in segments', t.inactive_bytes]].forEach(function (kv) {
      var card = el('div', 'ps-card');
      card.appendChild(el('div', 'ps-card-label', kv[0]));
      var v = el('div', 'ps-card-value', bytes(kv[1] || 0));
      v.title = grouped(kv[1] || 0) + ' B';
      card.appendChild(v);
      cards.appendChild(card);
    });
    head.appendChild(cards);
    root.appendChild(head);

    // ------------------------------------------------------------ free space by pool
    var pools = data.free_by_pool_and_stream || [];
    var table = el('table', 'ps-pools');
    var thead = el('thead');
    var hr = el('tr');
    ['pool', 'stream', 'segments', 'reserved', 'free', 'free blocks', 'largest free', 'fragmentation']
      .forEach(function (h, i) { hr.appendChild(el('th', i > 1 ? 'ps-n' : '', h)); });
    thead.appendChild(hr);
    table.appendChild(thead);
    var tbody = el('tbody');
    pools.forEach(function (p) {
      var tr = el('tr');
      var frag = p.fragmentation === null || p.fragmentation === undefined ? '–' : p.fragmentation.toFixed(3);
      [p.pool, String(p.stream), grouped(p.segments), bytes(p.reserved_bytes), bytes(p.free_bytes),
        grouped(p.free_blocks), bytes(p.largest_free_block_bytes), frag]
        .forEach(function (v, i) { tr.appendChild(el('td', i > 1 ? 'ps-n' : '', v)); });
      tbody.appendChild(tr);
    });
    if (!pools.length) {
      var empty = el('tr');
      var td = el('td', 'ps-muted', 'No segment is reserved at this event.');
      td.colSpan = 8;
      empty.appendChild(td);
      tbody.appendChild(empty);
    }
    table.appendChild(tbody);
    root.appendChild(table);
    root.appendChild(el('p', 'ps-note', 'Fragmentation: ' + data.fragmentation_formula + '.'));

    // ------------------------------------------------------------ controls and legend
    var bar = el('div', 'ps-bar');
    function toggle(label, key, choices) {
      var group = el('span', 'ps-toggle');
      group.appendChild(el('span', 'ps-muted', label + ' '));
      choices.forEach(function (ch) {
        var b = el('button', 'ps-btn', ch[1]);
        b.type = 'button';
        b.setAttribute('aria-pressed', String(mode[key] === ch[0]));
        b.addEventListener('click', function () {
          mode[key] = ch[0];
          Array.prototype.forEach.call(group.querySelectorAll('button'), function (x) {
            x.setAttribute('aria-pressed', String(x === b));
          });
          legendFor();
          draw();
        });
        group.appendChild(b);
      });
      return group;
    }
    bar.appendChild(toggle('Colour by', 'colour', [['state', 'state'], ['site', 'allocation site']]));
    bar.appendChild(toggle('Scale', 'scale', [['fit', 'each segment fills its row'], ['shared', 'one scale for all']]));
    root.appendChild(bar);
    var legend = el('div', 'ps-legend');
    function swatch(colour, text) {
      var s = el('span', 'ps-key');
      var box = el('span', 'ps-swatch');
      box.style.background = colour;
      s.appendChild(box);
      s.appendChild(document.createTextNode(text));
      return s;
    }
    function legendFor() {
      legend.textContent = '';
      if (mode.colour === 'state') {
        legend.appendChild(swatch(colours.alloc, 'allocated'));
        legend.appendChild(swatch(colours.pending, 'pending free (freed, still in use on another stream)'));
      } else {
        legend.appendChild(el('span', 'ps-key', 'one colour per allocation site;'));
        legend.appendChild(swatch(colours.pending, 'pending free'));
      }
      legend.appendChild(swatch(colours.free, 'free (cached, reusable in its pool and stream)'));
      legend.appendChild(el('span', 'ps-muted',
        segments.length + ' segment' + (segments.length === 1 ? '' : 's') + ' in address order; hover a block for its details' +
        (options.onSelectEvent ? ', click it to select its allocation' : '')));
    }
    legendFor();
    root.appendChild(legend);

    // ------------------------------------------------------------ the map
    var map = el('div', 'ps-map');
    if (options.maxHeight) map.style.maxHeight = options.maxHeight;
    var canvas = el('canvas', 'ps-canvas');
    map.appendChild(canvas);
    var rows = el('div', 'ps-rows');
    var html = [];
    segments.forEach(function (s, i) {
      var pool = s.segment_pool_id && (s.segment_pool_id[0] || s.segment_pool_id[1])
        ? ' pool (' + s.segment_pool_id[0] + ',' + s.segment_pool_id[1] + ')' : '';
      var label = hex(s.address) + '  ' + bytes(s.total_size) + '  ' + s.pool +
        (s.is_expandable ? ' expandable' : '') + ' · stream ' + s.stream + pool;
      html.push('<div class="ps-row" data-testid="segment" data-index="' + i + '" data-address="' + s.address +
        '" data-total-size="' + s.total_size + '"><span class="ps-label" title="' + label + '">' + label + '</span></div>');
    });
    rows.innerHTML = html.join('');
    map.appendChild(rows);
    root.appendChild(map);
    var tip = el('div', 'ps-tip');
    tip.hidden = true;
    root.appendChild(tip);
    var detail = el('pre', 'ps-detail ps-muted', 'Hover a block for its size, state, site and allocation event.');
    root.appendChild(detail);

    var frame = 0;
    function draw() {
      if (frame) return;
      frame = global.requestAnimationFrame(function () { frame = 0; paint(); });
    }

    function paint() {
      var width = Math.max(10, map.clientWidth - LABEL - 8);
      var height = Math.max(ROW, Math.min(map.clientHeight, rows.offsetHeight || ROW));
      var ratio = global.devicePixelRatio || 1;
      canvas.style.width = width + 'px';
      canvas.style.height = height + 'px';
      canvas.style.marginBottom = (-height) + 'px';
      if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
        canvas.width = Math.round(width * ratio);
        canvas.height = Math.round(height * ratio);
      }
      var g = canvas.getContext('2d');
      g.setTransform(ratio, 0, 0, ratio, 0, 0);
      g.clearRect(0, 0, width, height);
      var top = map.scrollTop;
      var first = Math.floor(top / ROW);
      var last = Math.min(segments.length - 1, Math.floor((top + height) / ROW));
      for (var i = first; i <= last; i++) {
        paintRow(g, segments[i], i * ROW - top + 3, ROW - 6, width);
      }
    }

    function scaleOf(s, width) {
      return mode.scale === 'fit' ? width / s.total_size : width / maxSize;
    }

    var pxBuf = new Float64Array(0);
    function paintRow(g, s, y, h, width) {
      var scale = scaleOf(s, width);
      var w = Math.max(1, Math.round(s.total_size * scale));
      if (pxBuf.length < w * 3) pxBuf = new Float64Array(w * 3);
      var px = pxBuf;   // per pixel: allocated, pending, free bytes
      px.fill(0, 0, w * 3);
      var blocks = s.blocks;
      var big = [];
      for (var k = 0; k < blocks.length; k++) {
        var b = blocks[k];
        var x0 = b[0] * scale, x1 = (b[0] + b[1]) * scale;
        if (x1 - x0 >= 2) { big.push(k); continue; }
        var p0 = Math.min(w - 1, Math.floor(x0)), p1 = Math.min(w - 1, Math.floor(Math.max(x0, x1 - 1e-9)));
        for (var p = p0; p <= p1; p++) {
          var cover = Math.min(x1, p + 1) - Math.max(x0, p);
          px[p * 3 + b[2]] += cover;
        }
      }
      g.fillStyle = colours.free;
      g.fillRect(0, y, w, h);
      // One fillRect per run of pixels of the same colour and (to 1/63) alpha.
      var runAt = -1, runKey = -1;
      for (var q = 0; q <= w; q++) {
        var key = -1;
        if (q < w) {
          var a = px[q * 3], pe = px[q * 3 + 1], f = px[q * 3 + 2];
          if (a + pe > 0) key = (pe > a ? 64 : 0) + Math.round(Math.max(0.35, Math.min(1, (a + pe) / (a + pe + f))) * 63);
        }
        if (key === runKey) continue;
        if (runKey >= 0) {
          g.fillStyle = runKey >= 64 ? colours.pending : colours.alloc;
          g.globalAlpha = (runKey & 63) / 63;
          g.fillRect(runAt, y, q - runAt, h);
        }
        runAt = q; runKey = key;
      }
      g.globalAlpha = 1;
      for (var j = 0; j < big.length; j++) {
        var bb = blocks[big[j]];
        if (bb[2] === 2) continue;
        var bx = bb[0] * scale, bw = bb[1] * scale;
        g.fillStyle = bb[2] === 1 ? colours.pending
          : mode.colour === 'site' && bb[4] >= 0 ? siteColour(bb[4], dark) : colours.alloc;
        g.fillRect(bx, y, bw, h);
        if (bw >= 5) {
          g.fillStyle = colours.edge;
          g.fillRect(bx + bw - 1, y, 1, h);
        }
      }
    }

    function blockAt(s, offset) {
      var blocks = s.blocks, lo = 0, hi = blocks.length - 1;
      while (lo <= hi) {
        var mid = (lo + hi) >> 1, b = blocks[mid];
        if (offset < b[0]) hi = mid - 1;
        else if (offset >= b[0] + b[1]) lo = mid + 1;
        else return b;
      }
      return null;
    }

    function describe(s, b) {
      var state = STATES[b[2]];
      var lines = [state + ' · ' + bytes(b[1]) + ' (' + grouped(b[1]) + ' B) at ' + hex(s.address + b[0])];
      if (b[5] >= 0 && b[2] !== 2) lines.push('requested ' + grouped(b[5]) + ' B');
      if (b[4] >= 0) lines.push('site: ' + sites[b[4]]);
      if (b[3] >= 0) lines.push('allocated at event ' + grouped(b[3]) + (options.onSelectEvent ? ' (click to select it)' : ''));
      else if (b[2] !== 2) lines.push('allocated before the trace began');
      lines.push('segment ' + hex(s.address) + ', ' + bytes(s.total_size) + ', ' + s.pool + ' pool, stream ' + s.stream);
      return lines.join('\n');
    }

    function hit(ev) {
      var r = canvas.getBoundingClientRect();
      var x = ev.clientX - r.left, y = ev.clientY - r.top;
      var i = Math.floor((y + map.scrollTop) / ROW);
      var s = segments[i];
      if (!s) return null;
      var offset = x / scaleOf(s, r.width);
      if (offset < 0 || offset >= s.total_size) return null;
      var b = blockAt(s, Math.floor(offset));
      return b ? { s: s, b: b, x: ev.clientX, y: ev.clientY } : null;
    }

    function onMove(ev) {
      var h = hit(ev);
      if (!h) { tip.hidden = true; canvas.style.cursor = ''; return; }
      tip.textContent = describe(h.s, h.b);
      tip.hidden = false;
      var rr = root.getBoundingClientRect();
      tip.style.left = Math.min(h.x - rr.left + 14, rr.width - 320) + 'px';
      tip.style.top = (h.y - rr.top + 16) + 'px';
      canvas.style.cursor = h.b[3] >= 0 && options.onSelectEvent ? 'pointer' : '';
    }

    function onClick(ev) {
      var h = hit(ev);
      if (!h) return;
      detail.textContent = describe(h.s, h.b);
      detail.classList.remove('ps-muted');
      if (h.b[3] >= 0 && options.onSelectEvent) options.onSelectEvent(h.b[3]);
    }

    canvas.addEventListener('mousemove', onMove);
    canvas.addEventListener('mouseleave', function () { tip.hidden = true; });
    canvas.addEventListener('click', onClick);
    map.addEventListener('scroll', draw, { passive: true });
    // The first paint waits for the frame's own layout: the observer's first callback comes
    // after it (where setting the scroll options.scrollTop asks for forces no layout) and
    // asks for the next frame, so render() forces no layout and the canvas is drawn in a
    // task of its own.
    var scrollTo = options.scrollTop || 0;
    function resized() {
      if (scrollTo) { map.scrollTop = scrollTo; scrollTo = 0; }
      draw();
    }
    var resize = global.ResizeObserver ? new global.ResizeObserver(resized) : null;
    if (resize) resize.observe(map); else { global.addEventListener('resize', draw); resized(); }

    return {
      root: root,
      /* How long the last full paint of the rows in view took, in ms. */
      timePaint: function () {
        var t0 = global.performance.now();
        paint();
        return global.performance.now() - t0;
      },
      destroy: function () {
        if (frame) global.cancelAnimationFrame(frame);
        if (resize) resize.disconnect(); else global.removeEventListener('resize', draw);
        container.textContent = '';
      },
    };
  }

  global.PtSnapSegments = { render: render, bytes: bytes };
})(typeof globalThis !== 'undefined' ? globalThis : this);
