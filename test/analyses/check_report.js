/* Run inside a `beamtrace report` page by headless Chromium (run.sh appends
 * it to a copy of the page, then reads the DOM Chromium dumps): measures the
 * rendered page and writes what it found as JSON into <pre id="bmt-check">.
 * run.sh compares the findings with what the test trace holds.
 *
 *  charts:   for every chart, texts outside the chart's box, the title and
 *            statistics lines overlapping, x-axis labels overlapping each
 *            other, every x-axis label's text, the value axis's texts,
 *            and for counter charts the legend's texts and the number of
 *            lines drawn; the rectangles not drawn as tall as their
 *            height attribute;
 *  lanes:    for every timeline lane, its pid, the share written next to
 *            its name, its data-share, the painted share of its plot area
 *            (sum of bar width x height over plot width x band height), the
 *            right edge of its last bar and the x of its exit mark;
 *  flame:    the number of frames drawn by the zoom script (texts filled);
 *  slowest:  the first section's title, and for each of its functions the
 *            name, p50, p99, the plain line and every bar segment's kind,
 *            data-share and rendered width over the bar's width;
 *  widths:   the window's inner width and the rendered widths of the
 *            slowest-functions table, the timeline and the flame graph.
 */
(function () {
  function box(el) { return el.getBoundingClientRect(); }
  function inside(a, b) {
    return a.left >= b.left - 0.5 && a.right <= b.right + 0.5 &&
           a.top >= b.top - 0.5 && a.bottom <= b.bottom + 0.5;
  }
  function overlap(a, b) {
    return a.left < b.right - 0.5 && b.left < a.right - 0.5 &&
           a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  }
  var out = {charts: [], lanes: [], flame_texts: 0};
  var charts = document.querySelectorAll('svg.chart');
  for (var i = 0; i < charts.length; i++) {
    var svg = charts[i], sb = box(svg), c = {title: '', outside: [], title_overlaps: false,
                                             label_overlaps: 0, labels: []};
    var texts = svg.querySelectorAll('text');
    for (var j = 0; j < texts.length; j++) {
      var tb = box(texts[j]);
      if (!inside(tb, sb)) c.outside.push(texts[j].textContent);
    }
    var title = svg.querySelector('text.title'), stats = svg.querySelector('text.stats');
    if (title) c.title = title.textContent;
    if (title && stats) c.title_overlaps = overlap(box(title), box(stats));
    var labels = svg.querySelectorAll('text.xlabel');
    for (var k = 0; k < labels.length; k++) {
      c.labels.push(labels[k].textContent);
      if (k && overlap(box(labels[k - 1]), box(labels[k]))) c.label_overlaps++;
    }
    var axis = svg.querySelectorAll('text.axis');
    c.axis = [];
    for (var a = 0; a < axis.length; a++) c.axis.push(axis[a].textContent);
    var legend = svg.querySelectorAll('text.legend');
    c.legend = [];
    for (var m = 0; m < legend.length; m++) c.legend.push(legend[m].textContent);
    c.lines = svg.querySelectorAll('g.series polyline, g.series circle').length;
    /* A bar drawn as tall as its height attribute says (a page-wide CSS
     * `height` on its class resized every histogram bar to 18 px). */
    var bars = svg.querySelectorAll('rect'), scale = sb.height / svg.viewBox.baseVal.height;
    c.bar_height_mismatch = 0;
    for (var b = 0; b < bars.length; b++) {
      var want = +bars[b].getAttribute('height') * scale;
      if (Math.abs(box(bars[b]).height - want) > 0.5) c.bar_height_mismatch++;
    }
    var full = svg.querySelector('title');
    c.full_title = full ? full.textContent : '';
    out.charts.push(c);
  }
  var lanes = document.querySelectorAll('svg.timeline g.lane');
  for (var l = 0; l < lanes.length; l++) {
    var g = lanes[l], life = g.querySelector('rect.life');
    var band = life ? +life.getAttribute('height') : 0;
    var plot = 1200 - 300 - 10;
    var area = 0, right = 0, runs = g.querySelectorAll('rect.run');
    for (var r = 0; r < runs.length; r++) {
      var w = +runs[r].getAttribute('width'), h = +runs[r].getAttribute('height');
      var x = +runs[r].getAttribute('x');
      area += w * h;
      if (h > 0 && x + w > right) right = x + w;
    }
    var exit = g.querySelector('line.exit');
    out.lanes.push({
      pid: g.getAttribute('data-pid'),
      share_text: (g.querySelector('text.share') || {}).textContent,
      label: (g.querySelector('text.label') || {}).textContent,
      data_share: +g.getAttribute('data-share'),
      painted_share: band ? area / (plot * band) : 0,
      last_bar_right: right,
      exit_x: exit ? +exit.getAttribute('x1') : null,
      label_inside: inside(box(g.querySelector('text.label')), box(g.ownerSVGElement))
    });
  }
  var ft = document.querySelectorAll('#bmtflame g.f text');
  for (var f = 0; f < ft.length; f++) if (ft[f].textContent) out.flame_texts++;
  var h2 = document.querySelector('h2');
  out.first_section = h2 ? h2.textContent : '';
  out.slowest = [];
  var rows = document.querySelectorAll('table.slowest tr.func');
  for (var q = 0; q < rows.length; q++) {
    var bar = rows[q].querySelector('.bar'), bw = box(bar).width, segs = [];
    var ss = bar.querySelectorAll('.seg');
    for (var s = 0; s < ss.length; s++)
      segs.push({kind: ss[s].getAttribute('data-kind'), share: +ss[s].getAttribute('data-share'),
                 width: box(ss[s]).width / bw});
    out.slowest.push({name: rows[q].querySelector('td.name').textContent,
                      p50: rows[q].querySelector('td.p50').textContent,
                      p99: rows[q].querySelector('td.p99').textContent,
                      reading: rows[q].querySelector('.reading').textContent, segs: segs});
  }
  function width(sel) { var e = document.querySelector(sel); return e ? box(e).width : 0; }
  out.widths = {window: window.innerWidth, slowest: width('table.slowest'),
                timeline: width('svg.timeline'), flame: width('#bmtflame')};
  var pre = document.createElement('pre');
  pre.id = 'bmt-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
