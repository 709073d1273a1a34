// kubectl sktrace view: the timeline (its axis, lanes and histogram), the range shown and the gestures that move it.
// One of the page's scripts (index.html loads them in order, view-base.js first): they share their globals.
"use strict";

// --- the whole-span view ------------------------------------------------------------------------------------------

function plotWidth(svg) { return Math.max(200, svg.clientWidth - LEFT - RIGHT); }

function xOf(t, width, left = LEFT) { const v = state.view; return left + (t - v.start) / (v.end - v.start) * width; }

function tOf(x, width) { const v = state.view; return v.start + (x - LEFT) / width * (v.end - v.start); }

// One axis for every panel: the timeline and the objects below it draw time with the same xOf (their SVGs are as wide,
// their plots start at LEFT), so a change's tick and the histogram's bar of the same second line up to the pixel.
function drawAxis(svg, width, top) {
  const v = state.view, step = tickStep(v.end - v.start, width), right = LEFT + width + RIGHT;
  const axis = el("g", {class: "axis"}, svg);
  for (let t = Math.ceil(v.start / step) * step; t <= v.end; t += step) {
    const x = xOf(t, width), label = tickLabel(t, step);
    el("line", {x1: x, x2: x, y1: 0, y2: top + 6, class: t % 86400 === 0 ? "major" : "", "data-t": t}, axis);
    if (x + 2 + label.length * CHAR_W <= right) el("text", {x: x + 2, y: top + 18}, axis, label);  // never cut at the edge
  }
  el("text", {x: 4, y: top + 18, class: "context"}, axis, iso(v.start).slice(0, step >= 86400 ? 7 : 10));
  $("range").textContent = `${iso(v.start)} – ${iso(v.end)} (${duration(v.end - v.start)}; ticks every ${duration(step)})`;
}

function drawLanes(svg, width) {
  const lanes = state.overview.lanes;
  lanes.forEach((lane, i) => el("text", {x: 4, y: i * (LANE_H + 4) + 12, class: "lane-label"}, svg, lane));
  const group = el("g", {class: "spans"}, svg);
  for (const span of state.overview.spans) {
    if (span.until < state.view.start || span.since > state.view.end) continue;
    const x1 = Math.max(LEFT, xOf(span.since, width)), x2 = Math.min(LEFT + width, xOf(span.until, width));
    // no recorder: a thin bar between the runs' full ones, told apart by its shape as well as its grey
    const thin = span.category === "offline" ? LANE_H / 3 : 0, y = lanes.indexOf(span.lane) * (LANE_H + 4) + thin;
    const rect = el("rect", {x: x1, y: y, width: Math.max(1, x2 - x1), height: LANE_H - 2 * thin, class: `span span-${span.category}`,
      "data-category": span.category, "data-since": span.since, "data-until": span.until}, group);
    titled(rect, span.name);
  }
  return lanes.length * (LANE_H + 4);
}

// a tick per recorded row: its op (0 new or spec, 1 deleted, 3 metadata, 4 data) as a class, words and shape besides
// its colour (for whoever tells hues apart poorly): a deletion the row's whole height, a spec change a little less,
// a metadata change the upper half, a data change the lower half
const TICK_KINDS = {
  0: {cls: "applied", words: "spec applied", shape: "mid"},
  1: {cls: "deleted", words: "deleted", shape: "tall"},
  3: {cls: "metadata", words: "labels, annotations or owners changed", shape: "upper"},
  4: {cls: "data", words: "data changed", shape: "lower"},
};

function drawHistogram(svg, width, top) {
  const h = state.histogram;
  if (!h) return;
  const group = el("g", {class: "histogram"}, svg);
  el("text", {x: 4, y: top + 12, class: "lane-label"}, svg, "changes");
  el("text", {x: 4, y: top + 26, class: "lane-label"}, svg, `per ${duration(h.width)}`);
  el("text", {x: 4, y: top + 40, class: "lane-label"}, svg, `max ${h.max}`);
  if (!h.complete) el("text", {x: 4, y: top + 54, class: "lane-label", id: "counting"}, svg, `counting ${Math.round(h.counted * 100)}%`);
  const scale = h.max ? HIST_H / h.max : 0;
  for (const bucket of h.buckets) {
    const x1 = Math.max(LEFT, xOf(bucket.t, width)), x2 = Math.min(LEFT + width, xOf(bucket.t + h.width, width));
    if (x2 <= x1) continue;
    let y = top + HIST_H;
    for (const kind of Object.keys(state.kindColour)) {
      const n = bucket.kinds[kind] || 0;
      if (!n) continue;
      const height = n * scale;
      y -= height;
      const bar = el("rect", {x: x1, y: y, width: Math.max(1, x2 - x1 - 0.5), height: Math.max(0.5, height),
        fill: state.kindColour[kind], class: "bar", "data-kind": kind, "data-count": n}, group);
      titled(bar, `${kind}: ${n}\n${iso(bucket.t)} + ${duration(h.width)}`);
    }
  }
}

function drawSelection(svg, width, height) {
  const s = state.selection;
  if (!s) return;
  const x1 = Math.max(LEFT, xOf(s.start, width)), x2 = Math.min(LEFT + width, xOf(s.end, width));
  if (x2 > x1) el("rect", {x: x1, y: 0, width: x2 - x1, height: height, class: "selection", id: "selection"}, svg);
}

function drawTimeline() {
  const svg = $("timeline");
  svg.replaceChildren();
  if (!state.view) return;
  svg.dataset.drawnFor = String(svg.clientWidth);
  const width = plotWidth(svg);
  const lanes = drawLanes(svg, width);
  drawHistogram(svg, width, lanes + 4);
  const axisTop = lanes + 8 + HIST_H;
  drawAxis(svg, width, axisTop);
  svg.style.height = `${axisTop + AXIS_H}px`;
  drawSelection(svg, width, axisTop + 6);
  svg.dataset.start = String(state.view.start);
  svg.dataset.end = String(state.view.end);
}

async function histogramNow() {
  const seq = ++state.seq.histogram, svg = $("timeline");
  const buckets = Math.max(20, Math.floor(plotWidth(svg) / 4));
  try {
    const answer = await api("/api/histogram", {start: Math.floor(state.view.start), end: Math.ceil(state.view.end), buckets});
    if (seq !== state.seq.histogram) return;
    state.histogram = answer;
    drawTimeline();
    if (!answer.complete) { later(fetchHistogram, 1000); return; }
    document.body.dataset.histogram = `${answer.start}:${answer.end}:${answer.width}`;
  } catch (e) { showError(e.message); }
}

const fetchHistogram = eager(histogramNow, 30);

// The range shown stays within the history (and a little around it): zooming out ends at the whole history, a pan
// stops at its ends, so no view is ever left holding no data.
function bounds() {
  const o = state.overview, pad = Math.max(1, (o.end - o.begin) * 0.02);
  return {lo: o.begin - pad, hi: o.end + pad};
}

function clamped(start, end) {
  const {lo, hi} = bounds();
  const range = Math.min(Math.max(end - start, MIN_RANGE), hi - lo);
  start = Math.min(Math.max(start, lo), hi - range);
  return {start, end: start + range};
}

function setView(start, end) {
  state.view = clamped(start, end);
  drawTimeline();
  fetchHistogram();
  if (rowsHold()) { rescaleObjects(); return; }  // what the page has is true of the new range: moved to its scale, nothing asked
  moveObjects();  // what is fetched already, at the new scale at once; the range's own rows follow
  refreshObjects();
}

// the instant under the cursor stays under it (until the view reaches an end of the history)
function zoom(factor, around) {
  const v = state.view, at = around === undefined ? (v.start + v.end) / 2 : around;
  const share = (at - v.start) / (v.end - v.start), range = Math.max(MIN_RANGE, (v.end - v.start) * factor);
  setView(at - range * share, at - range * share + range);
}

// by a fifth of the range shown, earlier (-1) or later (1): a pan without a pointer
function pan(direction) {
  const v = state.view, shift = direction * (v.end - v.start) / 5;
  setView(v.start + shift, v.end + shift);
}

// the range shown, within the history, picked as the window: a window without a pointer
function pickShown() {
  const v = state.view, o = state.overview;
  state.selection = {start: Math.floor(Math.max(v.start, o.begin)), end: Math.ceil(Math.min(v.end, o.end))};
  drawTimeline();
  loadWindow();
}

const TIMELINE_KEYS = {ArrowLeft: () => pan(-1), ArrowRight: () => pan(1), "+": () => zoom(0.5), "=": () => zoom(0.5),
  "-": () => zoom(2), Home: () => wholeHistory(), Enter: () => pickShown()};

function wholeHistory() {
  const o = state.overview;
  setView(o.begin - (o.end - o.begin), o.end + (o.end - o.begin));
}

function installTimelineGestures() {
  const svg = $("timeline");
  svg.addEventListener("keydown", (event) => {
    const act = TIMELINE_KEYS[event.key];
    if (!act || event.altKey || event.ctrlKey || event.metaKey) return;
    event.preventDefault();
    act();
  });
  svg.addEventListener("wheel", (event) => {
    event.preventDefault();
    const width = plotWidth(svg), x = event.offsetX;
    zoom(event.deltaY > 0 ? 1.25 : 0.8, x >= LEFT ? tOf(x, width) : undefined);
  }, {passive: false});
  let drag = null;
  svg.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    const selecting = event.shiftKey || $("select-mode").checked;
    drag = {x: event.offsetX, view: {...state.view}, selecting, moved: false};
    svg.setPointerCapture(event.pointerId);
    svg.classList.add(selecting ? "selecting" : "panning");
  });
  svg.addEventListener("pointermove", (event) => {
    if (!drag) return;
    const width = plotWidth(svg), dx = event.offsetX - drag.x;
    if (Math.abs(dx) > 2) drag.moved = true;
    if (drag.selecting) {
      const a = tOf(drag.x, width), b = tOf(event.offsetX, width);
      state.selection = {start: Math.floor(Math.min(a, b)), end: Math.ceil(Math.max(a, b))};
      drawTimeline();
    } else if (drag.moved) {
      const shift = dx / width * (drag.view.end - drag.view.start);
      state.view = clamped(drag.view.start - shift, drag.view.end - shift);
      drawTimeline();
      moveObjects();
    }
  });
  const end = () => {
    if (!drag) return;
    svg.classList.remove("selecting", "panning");
    if (drag.selecting && drag.moved && state.selection && state.selection.end > state.selection.start) {
      loadWindow();
    } else if (!drag.selecting && drag.moved) {  // the person let go: no pause to wait for
      histogramNow();
      if (!rowsHold()) loadObjects(false);
      else relabel();  // the marks of the range asked are drawn already, and moved with the drag
    }
    drag = null;
  };
  svg.addEventListener("pointerup", end);
  svg.addEventListener("pointercancel", end);
  // A new width redraws both panels on the timeline's mapping; a height they set as they draw is no resize. Each panel
  // says in data-drawn-for the width it was drawn for: a script waits for both to match the timeline's before it reads.
  const resized = () => {
    if (!state.view) return;
    const width = String(svg.clientWidth);
    if (svg.dataset.drawnFor !== width) { drawTimeline(); fetchHistogram(); }
    if ($("objects").dataset.drawnFor !== width) drawObjects();
  };
  new ResizeObserver(resized).observe(svg);
  new ResizeObserver(resized).observe($("objects"));
}

// Every mark the page draws, in the legend: a swatch of its colour and shape and the words it stands for. Each entry
// names the marks it describes (data-marks, a selector), so that what is drawn and what the legend says are one.
function drawLegend() {
  const legend = $("legend");
  legend.replaceChildren();
  const item = (marks, swatchClass, colour, text) => {
    const span = document.createElement("span"), swatch = document.createElement("span");
    span.className = "legend-item";
    span.dataset.marks = marks;
    swatch.className = "swatch " + swatchClass;
    if (colour) swatch.style.background = colour;
    span.append(swatch, text);
    legend.appendChild(span);
  };
  const names = {run: "run (observed live)", offline: "no recorder ran", filled: "exact from the audit log (filled by backfill)",
    outage: "outage", forbidden: "forbidden", "not-served": "not served", "watch-failed": "watch failed (kind given up)"};
  for (const c of state.overview.categories) item(`rect.span-${c}`, `span-swatch legend-${c}`, null, names[c]);
  for (const [kind, colour] of Object.entries(state.kindColour)) item(`rect.bar[data-kind=${JSON.stringify(kind)}]`, "", colour, `changes: ${kind}`);
  for (const op of [0, 1, 3, 4]) {
    const kind = TICK_KINDS[op];
    item(`path.ticks.${kind.cls}:not(.inferred)`, `tick-${kind.cls}`, null, `mark: ${kind.words}`);
  }
  item("path.ticks.inferred", "tick-inferred", null, "mark: reconstructed after a gap (hollow)");
  item("rect.life:not(.deleted)", "life-exists", null, "object exists");
  item("rect.life.deleted", "life-deleted", null, "object, until its deletion");
  item("rect.pod.running", "pod-running", null, "pod running");
  item("rect.pod.finished", "pod-finished", null, "pod finished (outlined)");
  item("rect.band.desired", "band-desired", null, "workload: replicas wanted");
  item("rect.band.ready", "band-ready", null, "workload: replicas ready");
  for (const [mark, words] of Object.entries(STATUS_MARKS)) item(`rect.smark.${mark}`, `smark-${mark}`, null, `pod: ${words}`);
}
