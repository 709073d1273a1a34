// kubectl sktrace view: the page. Plain JavaScript drawing SVG; every figure comes from the server's JSON answers,
// aggregated and paged there. Times are unix seconds and shown in UTC, as every report of kubectl sktrace prints them.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
// distinct from the colours of the stretches (view.css): a kind is never mistaken for an outage or a refusal
const KIND_COLOURS = ["#1e88e5", "#ffb300", "#00897b", "#d81b60", "#3949ab", "#c0ca33", "#6d4c41", "#00acc1", "#f06292", "#827717"];
const STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800,
  1209600, 2419200, 7257600, 31536000];
const MIN_RANGE = 10;
const MAX_POD_LANES = 6;
const LIVE_SECONDS = 10;
const LEFT = 90, RIGHT = 12, AXIS_H = 34, LANE_H = 16, HIST_H = 140, ROW_H = 18, POD_H = 10, LABEL_H = 13, CHAR_W = 6.6;

const state = {overview: null, view: null, selection: null, histogram: null, kindColour: {}, objects: [], objectsTotal: 0, rows: null, labels: new Map(),
  chosenTick: null, seq: {histogram: 0, objects: 0, window: 0, report: 0}};

const $ = (id) => document.getElementById(id);

function el(name, attrs, parent, text) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

// text made safe inside markup (an attribute's quotes included): the names come from the cluster or a trace file
const ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;"};
function markup(text) { return String(text).replace(/[&<>"']/g, (c) => ENTITIES[c]); }

function titled(node, text) { el("title", {}, node, text); return node; }

function showError(message) { $("error").textContent = message || ""; }

// What the page still has to do (requests in flight, redraws waiting for a pause), in body[data-busy]: "0" when it is
// drawn as it will stay, for a script (the browser tests) to act on elements that no redraw is about to replace.
let busy = 0;
function working(delta) { busy += delta; document.body.dataset.busy = String(busy); }

// --- the session ---------------------------------------------------------------------------------------------------
// The token lives in this tab's sessionStorage, which the browser keeps per origin (the port included), and goes out
// only in the X-Sktrace-Token header of this page's own requests: never in a cookie, which a browser sends to every
// port of 127.0.0.1. The address brings it in its fragment (#token=, as printed) or as a one-time code (#code=, as
// given to the browser view starts) traded for it once; either way the fragment leaves the address bar at once.

const TOKEN_KEY = "sktrace-view-token";
const SIGN_IN = "open the address kubectl sktrace view printed (it carries the token)";

async function session() {
  const given = new URLSearchParams(location.hash.slice(1));
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);
  if (given.get("token")) sessionStorage.setItem(TOKEN_KEY, given.get("token"));
  else if (given.get("code")) {
    const response = await fetch("/api/session?code=" + encodeURIComponent(given.get("code")), {headers: {Accept: "application/json"}});
    if (!response.ok) throw new Error(`this address was good once and is spent: ${SIGN_IN}`);
    sessionStorage.setItem(TOKEN_KEY, (await response.json()).token);
  }
  if (!sessionStorage.getItem(TOKEN_KEY)) throw new Error(SIGN_IN);
}

async function api(path, params) {
  const query = new URLSearchParams(params || {}).toString();
  working(1);
  try {
    const response = await fetch(path + (query ? "?" + query : ""), {credentials: "omit",
      headers: {Accept: "application/json", "X-Sktrace-Token": sessionStorage.getItem(TOKEN_KEY) || ""}});
    const body = await response.json().catch(() => ({error: `${response.status} ${response.statusText}`}));
    if (!response.ok) throw new Error(body.error || `${response.status} ${response.statusText}`);
    return body;
  } finally { working(-1); }
}

function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    if (timer === null) working(1); else clearTimeout(timer);
    timer = setTimeout(async () => { timer = null; try { await fn(...args); } finally { working(-1); } }, ms);
  };
}

// At once when nothing waits, then at most once per ms while inputs keep coming (wheel notches, keys typed): the
// first input of a gesture is answered without a pause, the rest of it with the last input's arguments.
function eager(fn, ms) {
  let timer = null, waiting = null;
  const quiet = () => {
    timer = null;
    if (waiting === null) return;
    const args = waiting;
    waiting = null;
    timer = setTimeout(quiet, ms);
    Promise.resolve(fn(...args)).finally(() => working(-1));
  };
  return (...args) => {
    if (waiting === null) working(1);
    waiting = args;
    if (timer === null) quiet();
  };
}

function later(fn, ms) {  // a retry, counted as work to come
  working(1);
  setTimeout(() => { try { fn(); } finally { working(-1); } }, ms);
}

// --- time ---------------------------------------------------------------------------------------------------------

function iso(t) { return new Date(t * 1000).toISOString().replace(".000Z", "Z"); }

function duration(seconds) {
  seconds = Math.round(seconds);
  const d = Math.floor(seconds / 86400), h = Math.floor(seconds % 86400 / 3600), m = Math.floor(seconds % 3600 / 60), s = seconds % 60;
  if (d) return `${d}d${h ? h + "h" : ""}`;
  if (h) return `${h}h${String(m).padStart(2, "0")}m`;
  if (m) return `${m}m${String(s).padStart(2, "0")}s`;
  return `${s}s`;
}

function tickLabel(t, step) {
  const text = iso(t);
  if (step >= 86400) return text.slice(0, 10);
  if (step >= 60) return text.slice(11, 16) === "00:00" ? text.slice(5, 10) : text.slice(11, 16);
  return text.slice(11, 19);
}

function tickStep(range, width) {
  const wanted = range / Math.max(1, width / 90);
  return STEPS.find((s) => s >= wanted) || STEPS[STEPS.length - 1];
}

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
    const y = lanes.indexOf(span.lane) * (LANE_H + 4);
    const rect = el("rect", {x: x1, y: y, width: Math.max(1, x2 - x1), height: LANE_H, class: `span span-${span.category}`,
      "data-category": span.category, "data-since": span.since, "data-until": span.until}, group);
    titled(rect, span.name);
  }
  return lanes.length * (LANE_H + 4);
}

// a tick per recorded row: its op (0 new or spec, 1 deleted, 3 metadata, 4 data) as a class, words and height
const TICK_KINDS = {
  0: {cls: "applied", words: "spec applied", short: false},
  1: {cls: "deleted", words: "deleted", short: false},
  3: {cls: "metadata", words: "labels, annotations or owners changed", short: true},
  4: {cls: "data", words: "data changed", short: true},
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

function wholeHistory() {
  const o = state.overview;
  setView(o.begin - (o.end - o.begin), o.end + (o.end - o.begin));
}

function installTimelineGestures() {
  const svg = $("timeline");
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
  new ResizeObserver(() => { if (state.view) { drawTimeline(); fetchHistogram(); } }).observe(svg);
  let objectsWidth = 0;  // the rows follow the page's width too; their own height, set as they are drawn, is no resize
  new ResizeObserver(() => {
    const width = $("objects").clientWidth;
    if (state.view && width !== objectsWidth) { objectsWidth = width; drawObjects(); }
  }).observe($("objects"));
}

function drawLegend() {
  const legend = $("legend");
  legend.replaceChildren();
  const item = (colourClass, colour, text) => {
    const span = document.createElement("span");
    const swatch = document.createElement("span");
    swatch.className = "swatch " + (colourClass || "");
    if (colour) swatch.style.background = colour;
    span.append(swatch, text);
    legend.appendChild(span);
  };
  const names = {run: "run", offline: "no recorder ran", outage: "outage", forbidden: "forbidden", "not-served": "not served",
    "watch-failed": "watch failed (kind given up)"};
  for (const c of state.overview.categories) item(`legend-${c}`, getComputedStyle(document.documentElement).getPropertyValue(`--${c}`), names[c]);
  for (const [kind, colour] of Object.entries(state.kindColour)) item("", colour, kind);
  for (const op of [0, 3, 4]) item(`tick-${TICK_KINDS[op].cls}`, null, `mark: ${TICK_KINDS[op].words}`);
}

// --- a window --------------------------------------------------------------------------------------------------------

function randomKey() {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function windowParams() {
  const s = state.selection, mode = document.querySelector("input[name=ns-mode]:checked").value;
  const params = {start: s.start, end: s.end, format: $("format").value, transform: $("transform").value,
    exclude_labels: $("exclude-labels").value.split("\n").map((x) => x.trim()).filter(Boolean).join("\n")};
  if (mode === "all") params.all_namespaces = "1";
  if (mode === "include") params.include_namespaces = $("include-namespaces").value.trim();
  if ($("cluster-scoped").checked) params.include_cluster_scoped = "1";
  for (const [param, id] of [["selector", "selector"], ["rules", "rules"], ["default", "default"], ["filters_text", "filters-text"]]) {
    if ($(id).value.trim()) params[param] = $(id).value;
  }
  if (params.filters_text) params.filters_name = $("filters-name").value.trim();
  if ($("anonymize").checked) {
    if (!$("anonymize-key").value.trim()) $("anonymize-key").value = randomKey();
    params.anonymize = "1";
    params.anonymize_key = $("anonymize-key").value.trim();
    params.key_file = $("key-file").value.trim();
  }
  return params;
}

function renderWindow(answer) {
  $("window").hidden = false;
  $("window-range").textContent = `${answer.from} – ${answer.to} (${duration(answer.end - answer.start)}, ${plural(answer.events, "recorded change")})`;
  const body = $("window-kinds").querySelector("tbody");
  body.replaceChildren();
  for (const k of answer.kinds) {
    const row = body.insertRow(), kept = answer.kept && answer.kept[k.gvk];
    const keptText = answer.kept ? String(kept ? kept.applied + kept.deleted : 0) : "–";
    for (const value of [k.gvk, k.applied, k.deleted, k.inferred, keptText]) row.insertCell().textContent = value;
  }
  const counted = "kept" in answer;  // not for a trace file, which no filter exports again
  $("window-kept").hidden = !counted;
  $("window-kept").textContent = !counted ? "" : answer.kept ? `${answer.keptEvents} of ${plural(answer.events, "change")} are of the kinds ` +
    "and namespaces the filters keep (owners, DaemonSets and labels are decided by the export: count what it holds)." :
    `Kept by the filters: ${answer.keptWhy}.`;
  $("count-kept").hidden = !counted || answer.kept !== null || !answer.keptWhy.endsWith("ask for it");
  const gaps = $("window-gaps");
  gaps.replaceChildren();
  for (const gap of answer.gaps) {
    const li = document.createElement("li");
    li.className = `gap gap-${gap.category}`;
    li.textContent = gap.name;
    gaps.appendChild(li);
  }
  if (answer.command === null) return;  // a trace file: its windows are not exported again
  $("command").textContent = answer.command;
  $("download").setAttribute("href", "/api/export?" + new URLSearchParams(windowParams()).toString());
  $("download").setAttribute("download", answer.fileName);
  const key = windowKey();
  if (key === state.windowShown) return;  // the same window and filters asked again: what was counted stands
  state.windowShown = key;
  $("report").replaceChildren();
  $("count-report").hidden = false;
  $("decisions").hidden = true;
}

function renderReport(report) {
  const box = $("report");
  box.replaceChildren();
  const p = document.createElement("p");
  if (report.tooLarge) {
    p.textContent = `${plural(report.events, "event")}: more than ${report.limit} to count here; the download writes them all.`;
    box.appendChild(p);
    return;
  }
  const kinds = Object.entries(report.objectsPerKind).map(([k, n]) => `${k}: ${n}`).join(", ");
  p.id = "report-summary";
  p.textContent = `The export holds ${plural(report.events, "event")} (${report.applied} applied, ${report.deleted} deleted after the start state), ` +
    `${plural(report.indexObjects, "object")} in the index (${kinds || "none"}), ${plural(report.lifecycles, "pod lifecycle")}.`;
  box.appendChild(p);
  for (const text of [...report.notes, ...report.warnings]) {
    const line = document.createElement("p");
    line.className = report.warnings.includes(text) ? "warning" : "note";
    line.textContent = text;
    box.appendChild(line);
  }
}

// A window's figures come from the counts the cache keeps; what the filters keep is counted by the server in slices,
// stopped there as soon as this page asks for another window (its tab and seq). What needs the export's full pass
// (the report) comes only when asked.
const TAB = randomKey();

async function fetchWindow(pass) {
  if (!state.selection) return;
  const seq = ++state.seq.window;
  showError("");
  try {
    const params = {...windowParams(), tab: TAB, seq};
    if (pass) params.pass = "1";
    const answer = await api("/api/window", params);
    if (seq !== state.seq.window || answer.superseded) return;
    renderWindow(answer);
    document.body.dataset.window = `${answer.start}:${answer.end}`;
  } catch (e) { showError(e.message); }
}

const loadWindow = debounce(() => fetchWindow(false), 80);

// an answer stands while the window and the filters are those it was asked for (a focus leaving a field re-asks the
// window's figures, which changes nothing of it)
function windowKey() { return state.selection ? JSON.stringify(windowParams()) : ""; }

async function countDecisions() {
  const asked = windowKey();
  try {
    const answer = await api("/api/decisions", windowParams());
    if (asked !== windowKey()) return;
    const body = $("decisions").querySelector("tbody");
    body.replaceChildren();
    for (const r of answer.rules) {
      const row = body.insertRow();
      for (const value of [r.rule, r.action, r.from, r.objects]) row.insertCell().textContent = value;
    }
    $("decisions").hidden = false;
    document.body.dataset.decisions = `${answer.objectsExported}:${answer.objectsRecorded}`;
  } catch (e) { showError(e.message); }
}

async function countReport() {
  const asked = windowKey();
  $("count-report").hidden = true;
  $("report").textContent = "Counting what the export holds (it writes the window's every event)…";
  try {
    const report = await api("/api/report", windowParams());
    if (asked !== windowKey()) return;
    renderReport(report);
    document.body.dataset.report = `${state.selection.start}:${state.selection.end}`;
  } catch (e) { $("report").textContent = ""; $("count-report").hidden = false; showError(e.message); }
}

// --- objects over time ---------------------------------------------------------------------------------------------

function objectTree(rows) {
  const byId = new Map(rows.map((r) => [r.id, {...r, children: []}]));
  const roots = [];
  for (const node of byId.values()) {
    const parent = node.owner && byId.get(node.owner);
    if (parent && parent !== node) parent.children.push(node); else roots.push(node);
  }
  const flat = [];
  const walk = (node, depth) => { flat.push({node, depth}); node.children.forEach((c) => walk(c, depth + 1)); };
  roots.forEach((r) => walk(r, 0));
  return flat;
}

function plural(n, one, many) { return `${n} ${n === 1 ? one : many || one + "s"}`; }

// Which object a row is: its kind, namespace and name (two namespaces' namesakes are two rows one tells apart), and how
// much of it is drawn when not all: beyond a row's share, one change per slice of the range.
function rowLabel(node, depth) {
  let label = `${node.kind} ${node.namespace ? node.namespace + "/" : ""}${node.name}`;
  if (node.owner && depth === 0 && node.ownerName) label += `  ← ${node.ownerName}`;
  if (node.ticksTotal <= node.ticks.length) return label;
  const n = (ticks) => ticks.reduce((sum, t) => sum + (t.n || 1), 0);
  if (n(node.ticks) !== node.ticksTotal) return `${label}  (${node.ticks.length} of ${plural(node.ticksTotal, "change")} drawn)`;
  // each tick stands for its column's changes: of the range shown, its ticks there and the changes they stand for
  const v = state.view, shown = node.ticks.filter((t) => t.ts >= v.start && t.ts < v.end), changes = n(shown);
  if (changes > shown.length) label += `  (${shown.length} of ${plural(changes, "change")} drawn)`;
  return label;
}

function drawTicks(svg, width, y, node) {
  const {lo, hi, until} = state.marksSpan;
  const lifeEnd = node.deleted ? node.last : Math.max(until, node.last);
  const x1 = Math.max(lo, xOf(node.first, width)), x2 = Math.min(hi, xOf(lifeEnd, width));
  if (x2 > x1) titled(el("rect", {x: x1, y: y + 4, width: x2 - x1, height: ROW_H - 8, class: "life" + (node.deleted ? " deleted" : ""),
    "data-from": node.first, "data-to": lifeEnd}, svg),
    `${node.name}: first recorded ${iso(node.first)}` + (node.deleted ? `, deleted ${iso(node.last)}` : ", exists"));
  const column = duration(state.tickColumn), object = markup(node.id);  // a tick drawn for a column's changes says how many
  // one element a change (its hit area is its transparent stroke; view.css), its words in data-what, made a title on
  // hover, one click listener for the panel (installObjectGestures), and a row's ticks parsed from one string: thousands
  // of ticks are made in a few milliseconds, where as many createElementNS and setAttribute took most of a redraw
  const marks = [], beyond = [];  // those in sight first; the rest of the range asked, clipped, for a pan to bring in
  for (const tick of node.ticks) {
    const x = xOf(tick.ts, width);
    const kind = TICK_KINDS[tick.op] || TICK_KINDS[0];  // a metadata or data change is drawn apart from a spec change
    const short = kind.short ? (ROW_H - 4) / 2 : 0;
    const what = `${kind.words} ${iso(tick.ts)}` + (tick.inferred ? " (reconstructed after a gap)" : "") +
      (tick.n > 1 ? ` (drawn for ${tick.n} changes of its ${column} column)` : "");
    (x < LEFT || x > LEFT + width ? beyond : marks).push(`<rect x="${x - 1}" y="${y + 2 + short}" width="2" height="${ROW_H - 4 - short}" data-id="${Number(tick.id)}" ` +
      `data-object="${object}" data-ts="${Number(tick.ts)}" data-what="${markup(what)}" ` +
      `class="tick ${kind.cls}${tick.inferred ? " inferred" : ""}${state.chosenTick === tick.id ? " chosen" : ""}"/>`);
  }
  svg.insertAdjacentHTML("beforeend", marks.join("") + beyond.join(""));
}

function installObjectGestures() {
  const svg = $("objects");
  svg.addEventListener("click", (event) => {
    const tick = event.target.closest && event.target.closest("rect.tick");
    if (tick) loadVersion(Number(tick.dataset.id));
  });
  svg.addEventListener("pointerover", (event) => {
    const mark = event.target.closest && event.target.closest("rect.tick, rect.pod");
    if (mark && !mark.firstChild) titled(mark, mark.dataset.what);
  });
}

function drawObjectRow(svg, plot, width, y, node, depth) {
  const {lo, hi, until} = state.marksSpan, indent = 4 + depth * 12;
  let x = indent;
  if (node.findings && node.findings.length) {  // validate's findings, beside the name they are about
    const mark = el("text", {x, y: y + LABEL_H - 2, class: "finding-mark", "data-object": node.id}, svg, `⚠${node.findings.length}`);
    titled(mark, node.findings.map((f) => `${f.code} ${f.message}` + (f.ts === null ? "" : ` (at ${iso(f.ts)})`)).join("\n"));
    x += 24;
  }
  const text = el("text", {x, y: y + LABEL_H - 2, class: "row-label" + (node.deleted ? " deleted" : ""), "data-object": node.id}, svg,
    rowLabel(node, depth));
  state.labels.set(node.id, {text, node, depth});
  titled(text, `${node.gvk} ${node.namespace}/${node.name}` + (node.deleted ? ` (deleted ${iso(node.last)})` : ""));
  y += LABEL_H;
  drawTicks(plot, width, y, node);
  let rowY = y + ROW_H;
  const lanes = [];  // pods that do not overlap share a lane: a workload's pods take a few rows, not one each
  let hidden = node.podsTotal - node.pods.length;
  for (const pod of node.pods) {
    const until = pod.end === null ? Infinity : pod.end;
    let lane = lanes.findIndex((end) => end < pod.start);
    if (lane < 0 && lanes.length < MAX_POD_LANES) lane = lanes.push(-Infinity) - 1;
    if (lane < 0) { hidden += 1; continue; }
    lanes[lane] = until;
    const p1 = Math.max(lo, xOf(pod.start, width)), p2 = Math.min(hi, xOf(pod.end === null ? until : pod.end, width));
    if (p2 > p1) {
      el("rect", {x: p1, y: y + ROW_H + lane * POD_H + 1, width: Math.max(1, p2 - p1), height: POD_H - 2,  // its words made a title on hover
        class: `pod ${pod.end === null ? "running" : "finished"}`, "data-from": pod.start, "data-to": pod.end === null ? until : pod.end, "data-what": `pod ${pod.name}: ${iso(pod.start)} – ${pod.end === null ? "running" : iso(pod.end)}`}, plot);
    }
  }
  rowY += lanes.length * POD_H;
  if (hidden > 0) el("text", {x: LEFT, y: rowY + 9, class: "row-label"}, svg, `+${plural(hidden, "more pod")} in this range`);
  return rowY - y + LABEL_H + (hidden > 0 ? 12 : 0);
}

// The objects' own copy of the timeline's axis, kept in sight above the rows as the page scrolls (view.css: sticky).
function drawObjectsAxis(width) {
  const svg = $("objects-axis");
  svg.replaceChildren();
  const v = state.view, step = tickStep(v.end - v.start, width), right = LEFT + width + RIGHT;
  const axis = el("g", {class: "axis"}, svg);
  for (let t = Math.ceil(v.start / step) * step; t <= v.end; t += step) {
    const x = xOf(t, width), label = tickLabel(t, step);
    el("line", {x1: x, x2: x, y1: 14, y2: 22, "data-t": t}, axis);
    if (x + 2 + label.length * CHAR_W <= right) el("text", {x: x + 2, y: 12}, axis, label);
  }
}

// When the range changes (a zoom, a pan), the rows drawn move at once to the new scale as they are: the time axis
// maps linearly, so every mark's new x is a * x + b; they are drawn anew for the new range when its rows come.
function moveObjects() {
  const plot = $("objects-plot"), drawn = state.drawnView, v = state.view;
  if (!plot || !drawn) { drawObjects(); return; }
  const width = plotWidth($("timeline")), a = (drawn.end - drawn.start) / (v.end - v.start);
  const b = LEFT + (drawn.start - v.start) / (v.end - v.start) * width - a * LEFT;
  plot.setAttribute("transform", `matrix(${a},0,0,1,${b},0)`);
  drawObjectsAxis(width);
}

// After a pan, what the labels say of the range shown (how many of a row's changes are drawn in it).
function relabel() {
  for (const {text, node, depth} of state.labels.values()) text.firstChild.nodeValue = rowLabel(node, depth);
}

// A zoom the rows drawn hold: each mark moved to the new scale where it is (its times are on it), none made anew;
// the ticks gone out of sight put after those in it.
function rescaleObjects() {
  const plot = $("objects-plot");
  if (!plot) { drawObjects(); return; }
  const width = plotWidth($("timeline")), {lo, hi} = marksSpan(width), gone = [];
  plot.removeAttribute("transform");
  for (const tick of plot.querySelectorAll("rect.tick")) {
    const x = xOf(Number(tick.dataset.ts), width);
    tick.setAttribute("x", x - 1);
    if (x < LEFT || x > LEFT + width) gone.push(tick);
  }
  plot.append(...gone);
  for (const bar of plot.querySelectorAll("rect[data-from]")) {
    const x1 = Math.max(lo, xOf(Number(bar.dataset.from), width)), x2 = Math.min(hi, xOf(Number(bar.dataset.to), width));
    bar.setAttribute("x", x1);
    bar.setAttribute("width", Math.max(bar.classList.contains("pod") ? 1 : 0, x2 - x1));
  }
  state.drawnView = {...state.view};
  drawObjectsAxis(width);
  relabel();
}

// Where the marks of the rows' range lie on the plot's axis (beyond the plot, clipped), and the time a mark without
// an end runs to.
function marksSpan(width) {
  const v = state.view, rows = state.rows && state.rows.start <= v.start && state.rows.end >= v.end ? state.rows : v;
  state.marksSpan = {lo: Math.min(LEFT, xOf(rows.start, width)), hi: Math.max(LEFT + width, xOf(rows.end, width)), until: rows.end};
  return state.marksSpan;
}

function drawObjects() {
  const svg = $("objects");
  svg.replaceChildren();
  if (!state.view) return;
  const width = plotWidth($("timeline"));  // the timeline's mapping, whatever this panel's own width
  drawObjectsAxis(width);
  // the rows' marks in one group, clipped to the plot: a pan moves it whole while the drag lasts (panObjects)
  const clip = el("clipPath", {id: "objects-clip"}, el("defs", {}, svg));
  el("rect", {x: LEFT, y: 0, width: width, height: 1e6}, clip);
  const plot = el("g", {id: "objects-plot"}, el("g", {"clip-path": "url(#objects-clip)"}, svg));
  state.drawnView = {...state.view};
  marksSpan(width);
  state.labels = new Map();
  let y = 4;
  for (const {node, depth} of objectTree(state.objects)) y += drawObjectRow(svg, plot, width, y, node, depth);
  if (!state.objects.length) el("text", {x: 8, y: 18, class: "row-label"}, svg, "No object matches.");
  svg.style.height = `${Math.max(30, y + 8)}px`;
  $("objects-count").textContent = `${state.objects.length} of ${plural(state.objectsTotal, "object")}`;
  $("more-objects").hidden = state.objects.length >= state.objectsTotal;
}

// The rows are asked for a wider range than shown (half a view more on each side, within the history), so that a pan
// inside it is drawn from what the page has, at once, and asks nothing.
function rowsRange() {
  const v = state.view, {lo, hi} = bounds(), margin = (v.end - v.start) / 2;
  return {start: Math.floor(Math.max(v.start - margin, lo)), end: Math.ceil(Math.min(v.end + margin, hi)), span: v.end - v.start};
}

// The plot's width over a range asked: a row's changes come one per 2 px column at most (bounded by the page, not
// the history), and the server answers min(its limit, width / 2) columns.
function rowsWidth(range) { return Math.round(plotWidth($("timeline")) * (range.end - range.start) / range.span); }

// Whether the rows drawn are still true of the range shown: it lies within the range they were asked for, at the
// scale they were asked at or wider, or closer in while every row holds all its changes and pods (nothing was left out),
// or when asking again would ask the same range in as many columns (a zoom within the whole history).
function rowsHold() {
  const f = state.rows, v = state.view;
  if (!f || v.start < f.start || v.end > f.end) return false;
  if (v.end - v.start >= f.span || state.objects.every((r) => r.ticksTotal === r.ticks.length && r.podsTotal === r.pods.length)) return true;
  const again = rowsRange(), wanted = Math.floor(rowsWidth(again) / 2);
  return again.start === f.start && again.end === f.end &&
    (wanted === f.columns || (wanted > f.columns && Math.floor(f.width / 2) > f.columns));
}

async function loadObjects(append) {
  const seq = ++state.seq.objects, range = append && state.rows ? state.rows : rowsRange();
  const params = {gvk: $("kind").value, namespace: $("namespace").value, q: $("search").value.trim(),
    start: range.start, end: range.end, offset: append ? state.objects.length : 0, limit: 20, width: rowsWidth(range)};
  try {
    const answer = await api("/api/objects", params);
    if (seq !== state.seq.objects) return;
    state.objects = append ? state.objects.concat(answer.objects) : answer.objects;
    state.objectsTotal = answer.total;
    state.rows = {...range, width: params.width, columns: answer.maxTicks};
    state.tickColumn = (params.end - params.start) / answer.maxTicks;
    drawObjects();
    document.body.dataset.objects = `${params.q}:${answer.total}`;
  } catch (e) { showError(e.message); }
}

const refreshObjects = eager(() => loadObjects(false), 30);

function drawDiff(box, text) {
  box.replaceChildren();
  for (const line of text.split("\n")) {
    const span = document.createElement("span");
    span.className = line.startsWith("@@") ? "hunk" : line.startsWith("+") && !line.startsWith("+++") ? "add" :
      line.startsWith("-") && !line.startsWith("---") ? "del" : "";
    span.textContent = line + "\n";
    box.appendChild(span);
  }
}

async function loadVersion(id) {
  try {
    const v = await api("/api/version", {id});
    state.chosenTick = id;
    drawObjects();
    $("version").hidden = false;
    $("version-title").textContent = `${v.gvk} ${v.namespace}/${v.name}: ${v.op} ${v.at}` + (v.inferred ? " (reconstructed after a gap)" : "");
    $("yaml").textContent = v.yaml || "(deleted: no body)";
    drawDiff($("diff"), v.diff || (v.previousId === null ? "(no earlier version recorded)\n" :
      v.statusDiff ? "(the object is the same: only its status changed, below)\n" : "(no difference)\n"));
    $("status-changes").hidden = !v.statusDiff;
    drawDiff($("status-diff"), v.statusDiff || "");
    document.body.dataset.version = String(id);
    $("version").scrollIntoView({block: "nearest"});
  } catch (e) { showError(e.message); }
}

// Each kind keeps its colour for as long as the page is open: a kind that appears later takes the next one.
function colourKinds(kinds) {
  const added = kinds.filter((k) => !(k.gvk in state.kindColour));
  for (const k of added) state.kindColour[k.gvk] = KIND_COLOURS[Object.keys(state.kindColour).length % KIND_COLOURS.length];
  return added;
}

// A recorder writes while the page is open: its run, blind time and changes are read again now and then. A view that
// shows the whole history goes on showing it; one that ends now slides with it.
async function refreshLive() {
  try {
    const o = await api("/api/overview"), old = state.overview, v = state.view;
    state.overview = {...old, spans: o.spans, begin: o.begin, end: o.end, recording: o.recording};
    const added = colourKinds(o.kinds);
    if (added.length) { fillSelect($("kind"), added.map((k) => k.gvk)); drawLegend(); }
    if (o.end > old.end && v.end >= old.end) state.rows = null;  // the rows shown end now: what they hold has grown
    if (v.start <= old.begin && v.end >= old.end) wholeHistory();
    else if (v.end >= old.end && o.end > old.end) setView(v.start + (o.end - old.end), v.end + (o.end - old.end));
    else { drawTimeline(); fetchHistogram(); }
  } catch (e) { showError(e.message); }
}

// --- start --------------------------------------------------------------------------------------------------------

function fillSelect(select, values) {
  for (const value of values) {
    const option = document.createElement("option");
    option.value = option.textContent = value;
    select.appendChild(option);
  }
}

function showTrace(o) {
  $("export-part").hidden = true;
  $("report").hidden = true;
  $("filters").hidden = true;
  const list = $("findings");
  list.hidden = false;
  const head = document.createElement("li");
  head.textContent = `validate: ${plural(o.findings.filter((f) => !f.code.startsWith("W")).length, "error")}, ` +
    `${plural(o.findings.filter((f) => f.code.startsWith("W")).length, "warning")}`;
  list.appendChild(head);
  for (const f of o.findings) {
    const li = document.createElement("li");
    li.className = "finding";
    li.textContent = `${f.code} ${f.rule}: ${f.message}` + (f.object ? ` — ${f.object}` : "") + (f.ts === null ? "" : ` at ${iso(f.ts)}`);
    list.appendChild(li);
  }
}

// A download is a navigation, which carries no header: it goes with a one-time code asked for just before.
async function downloadWindow(event) {
  event.preventDefault();
  const href = $("download").getAttribute("href");
  if (!href.startsWith("/api/export?")) return;
  const {code} = await api("/api/code");
  const link = document.createElement("a");
  link.href = `${href}&code=${encodeURIComponent(code)}`;
  link.download = $("download").getAttribute("download");
  link.click();
}

async function start() {
  try {
    await session();
    const o = await api("/api/overview");
    state.overview = o;
    $("source").textContent = `${o.title}` + (o.context ? ` — context ${o.context}` : "") + (o.server ? ` (${o.server})` : "");
    colourKinds(o.kinds);
    fillSelect($("kind"), o.kinds.map((k) => k.gvk));
    fillSelect($("namespace"), o.namespaces);
    drawLegend();
    if (o.source === "trace") showTrace(o);
    if (o.begin === null) { showError("The cache holds no recording yet: record with 'kubectl sktrace start'."); return; }
    installTimelineGestures();
    installObjectGestures();
    $("zoom-all").addEventListener("click", wholeHistory);
    $("zoom-in").addEventListener("click", () => zoom(0.5));
    $("zoom-out").addEventListener("click", () => zoom(2));
    $("select-mode").addEventListener("change", (e) => $("timeline").classList.toggle("select-mode", e.target.checked));
    $("filters").addEventListener("input", () => loadWindow());
    $("filters").addEventListener("change", () => loadWindow());
    $("count-kept").addEventListener("click", () => fetchWindow(true));
    $("count-report").addEventListener("click", countReport);
    $("count-decisions").addEventListener("click", countDecisions);
    $("download").addEventListener("click", (e) => downloadWindow(e).catch((err) => showError(err.message)));
    $("copy-command").addEventListener("click", () => navigator.clipboard && navigator.clipboard.writeText($("command").textContent));
    for (const id of ["kind", "namespace"]) $(id).addEventListener("change", () => loadObjects(false));
    $("search").addEventListener("input", eager(() => loadObjects(false), 90));
    $("more-objects").addEventListener("click", () => loadObjects(true));
    wholeHistory();
    if (o.recording) setInterval(refreshLive, LIVE_SECONDS * 1000);
    document.body.dataset.ready = "1";
  } catch (e) { showError(e.message); }
}

document.addEventListener("DOMContentLoaded", start);
