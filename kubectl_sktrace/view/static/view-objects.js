// kubectl sktrace view: the objects over time, their changes drawn on the timeline's axis, and one version's diff.
// One of the page's scripts (index.html loads them in order, view-base.js first): they share their globals.
"use strict";

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

// A row's changes, one path per kind of mark (a subpath a change) in a group of the row's own: a few elements a row
// where an element a change made thousands to parse, style and paint at every search. Which change is under the
// pointer is found by its x (tickAt), and its words are made when it is hovered. Each path lists its changes' instants
// (data-ts), in the order of its subpaths.
const TICK_SHAPES = {tall: [0, ROW_H], mid: [2, ROW_H - 4], upper: [2, (ROW_H - 4) / 2], lower: [2 + (ROW_H - 4) / 2, (ROW_H - 4) / 2]};

function tickMarkup(node, y, width) {
  const paths = new Map();
  for (const tick of node.ticks) {
    const kind = TICK_KINDS[tick.op] || TICK_KINDS[0];  // a metadata or data change is drawn apart from a spec change
    const cls = kind.cls + (tick.inferred ? " inferred" : ""), [top, height] = TICK_SHAPES[kind.shape];
    let path = paths.get(cls);
    if (!path) paths.set(cls, path = {d: [], ts: []});
    path.d.push(`M${Math.round((xOf(tick.ts, width) - 1) * 10) / 10} ${y + top}h2v${height}h-2z`);
    path.ts.push(Number(tick.ts));
  }
  const object = markup(node.id);  // the rest is digits and words of our own: nothing in them to make safe for markup
  let marks = "";
  for (const [cls, path] of paths) {
    marks += `<path class="ticks ${cls}" data-object="${object}" data-ts="${path.ts.join(" ")}" d="${path.d.join("")}"/>`;
  }
  const chosen = node.ticks.find((t) => t.id === state.chosenTick);
  if (chosen) marks += `<rect class="tick-chosen" x="${xOf(chosen.ts, width) - 1}" y="${y + 1}" width="2" height="${ROW_H - 2}" data-id="${Number(chosen.id)}"/>`;
  return marks;
}

function drawTicks(plot, width, y, node) {
  const {lo, hi, until} = state.marksSpan;
  const lifeEnd = node.deleted ? node.last : Math.max(until, node.last);
  const x1 = Math.max(lo, xOf(node.first, width)), x2 = Math.min(hi, xOf(lifeEnd, width));
  if (x2 > x1) titled(el("rect", {x: x1, y: y + 4, width: x2 - x1, height: ROW_H - 8, class: "life" + (node.deleted ? " deleted" : ""),
    "data-from": node.first, "data-to": lifeEnd}, plot),
    `${node.name}: first recorded ${iso(node.first)}` + (node.deleted ? `, deleted ${iso(node.last)}` : ", exists"));
  const group = el("g", {class: "row-ticks"}, plot);
  group.insertAdjacentHTML("beforeend", tickMarkup(node, y, width));
  state.tickRows.push({node, y, group});
}

// The words of a change's tick: what changed and when, and what it stands for when drawn for its column's changes.
function tickWords(tick) {
  const kind = TICK_KINDS[tick.op] || TICK_KINDS[0];
  return `${kind.words} ${isoSecond(Number(tick.ts))}` + (tick.inferred ? " (reconstructed after a gap)" : "") +
    (tick.n > 1 ? ` (drawn for ${Number(tick.n)} changes of its ${duration(state.tickColumn)} column)` : "");
}

const TICK_REACH = 4;  // px either side of a tick that point at it, as its 2 px and a margin to aim at

// The change drawn nearest the pointer, within reach, on the row under it: where the range shown puts it now (a pan
// that moves the drawn rows moves them onto the same mapping).
function tickAt(event) {
  const svg = $("objects"), point = new DOMPoint(event.clientX, event.clientY).matrixTransform(svg.getScreenCTM().inverse());
  const width = plotWidth($("timeline"));
  if (point.x < LEFT || point.x > LEFT + width) return null;
  const row = state.tickRows.find((r) => point.y >= r.y && point.y < r.y + ROW_H);
  let found = null, gap = TICK_REACH;
  for (const tick of row ? row.node.ticks : []) {
    const off = Math.abs(xOf(tick.ts, width) - point.x);
    if (off <= gap) { found = tick; gap = off; }
  }
  return found && {tick: found, row, x: xOf(found.ts, width)};
}

// The tick under the pointer, ringed, its words its title (and in data-what), its change in data-id.
function pointAt(hit) {
  const mark = $("tick-hover");
  if (!mark) return;
  $("objects").classList.toggle("on-tick", Boolean(hit));
  if (!hit) { mark.setAttribute("visibility", "hidden"); mark.removeAttribute("data-id"); return; }
  const words = tickWords(hit.tick);
  for (const [k, v] of Object.entries({x: hit.x - 1, y: hit.row.y + 2, visibility: "visible", "data-id": Number(hit.tick.id),
    "data-object": hit.row.node.id, "data-what": words})) mark.setAttribute(k, v);
  mark.firstChild.textContent = words;
}

// The keyboard's way to a change: a row's name takes the focus (Tab; up and down go from row to row), left and right
// step through its changes drawn in the range shown (Home and End: the first and last), each ringed as a pointer rings
// it and said in #tick-said (a live region); Enter or Space opens it, Escape lets it go. The change stays chosen while
// the rows are drawn anew.
const KEY_STEPS = {ArrowRight: 1, ArrowLeft: -1, Home: -Infinity, End: Infinity};

function stepTick(node, key) {
  const v = state.view, ticks = node.ticks.filter((t) => t.ts >= v.start && t.ts <= v.end).sort((a, b) => a.ts - b.ts || a.id - b.id);
  if (!ticks.length) return null;
  const at = state.keyTick && state.keyTick.object === node.id ? ticks.findIndex((t) => t.id === state.keyTick.id) : -1;
  const step = KEY_STEPS[key], next = at < 0 && Number.isFinite(step) ? (step < 0 ? ticks.length - 1 : 0) : at + step;
  return ticks[Math.min(Math.max(next, 0), ticks.length - 1)];
}

// The change the keyboard chose, ringed where the range shown puts it (after a redraw, a zoom), when its row is drawn.
function ringKeyTick() {
  const row = state.keyTick && state.tickRows.find((r) => r.node.id === state.keyTick.object);
  const tick = row && row.node.ticks.find((t) => t.id === state.keyTick.id);
  if (tick) pointAt({tick, row, x: xOf(tick.ts, plotWidth($("timeline")))});
  return tick;
}

function onRowKey(event) {
  const label = event.target.closest && event.target.closest("text.row-label[data-object]");
  const row = label && state.tickRows.find((r) => r.node.id === label.dataset.object);
  if (!row) return;
  state.keyRow = row.node.id;
  if (event.key in KEY_STEPS) {
    const tick = stepTick(row.node, event.key);
    state.keyTick = tick && {object: row.node.id, id: tick.id};
    if (!ringKeyTick()) pointAt(null);
    $("tick-said").textContent = tick ? tickWords(tick) : "no change of this object in the range shown";
  } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    const labels = [...state.labels.values()], at = labels.findIndex((l) => l.text === label);
    const next = labels[at + (event.key === "ArrowDown" ? 1 : -1)];
    if (next) { label.setAttribute("tabindex", -1); next.text.setAttribute("tabindex", 0); next.text.focus(); }
  } else if ((event.key === "Enter" || event.key === " ") && state.keyTick && state.keyTick.object === row.node.id) {
    loadVersion(Number(state.keyTick.id));
  } else if (event.key === "Escape") {
    state.keyTick = null;
    pointAt(null);
    $("tick-said").textContent = "";
  } else return;
  event.preventDefault();
}

function installObjectGestures() {
  const svg = $("objects");
  svg.addEventListener("keydown", onRowKey);
  svg.addEventListener("click", (event) => {
    const status = statusMarkAt(event);
    if (status !== null) { loadStatusChange(status); return; }
    const hit = tickAt(event);
    if (hit) loadVersion(Number(hit.tick.id));
  });
  svg.addEventListener("pointermove", (event) => pointAt(tickAt(event)));
  svg.addEventListener("pointerleave", () => pointAt(null));
  svg.addEventListener("pointerover", (event) => {
    const mark = event.target.closest && event.target.closest("rect.pod");
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
  const text = el("text", {x, y: y + LABEL_H - 2, class: "row-label" + (node.deleted ? " deleted" : ""), "data-object": node.id,
    tabindex: -1}, svg, rowLabel(node, depth));
  state.labels.set(node.id, {text, node, depth});
  titled(text, `${node.gvk} ${node.namespace}/${node.name}` + (node.deleted ? ` (deleted ${iso(node.last)})` : ""));
  y += LABEL_H;
  drawTicks(plot, width, y, node);
  const band = drawBand(plot, width, y + ROW_H, node), podsY = y + ROW_H + band;
  let rowY = y + ROW_H + band;
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
      el("rect", {x: p1, y: podsY + lane * POD_H + 1, width: Math.max(1, p2 - p1), height: POD_H - 2,  // its words made a title on hover
        class: `pod ${pod.end === null ? "running" : "finished"}`, "data-from": pod.start, "data-to": pod.end === null ? until : pod.end, "data-what": `pod ${pod.name}: ${iso(pod.start)} – ${pod.end === null ? "running" : iso(pod.end)}`}, plot);
    }
    drawPodMarks(plot, width, podsY + lane * POD_H + 1, pod);
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

// A zoom the rows drawn hold: each row's ticks drawn anew at the new scale from what the page has, its other marks moved
// where they are (their times are on them).
function rescaleObjects() {
  const plot = $("objects-plot");
  if (!plot) { drawObjects(); return; }
  const width = plotWidth($("timeline")), {lo, hi} = marksSpan(width);
  plot.removeAttribute("transform");
  for (const row of state.tickRows) {
    row.group.replaceChildren();
    row.group.insertAdjacentHTML("beforeend", tickMarkup(row.node, row.y, width));
  }
  for (const bar of plot.querySelectorAll("rect[data-from]")) {
    const x1 = Math.max(lo, xOf(Number(bar.dataset.from), width)), x2 = Math.min(hi, xOf(Number(bar.dataset.to), width));
    bar.setAttribute("x", x1);
    bar.setAttribute("width", Math.max(bar.classList.contains("pod") ? 1 : 0, x2 - x1));
  }
  rescaleStatusMarks(plot, width);
  state.drawnView = {...state.view};
  drawObjectsAxis(width);
  relabel();
  if ($("objects").contains(document.activeElement)) ringKeyTick();  // the keyboard's change moved with its row
}

// Where the marks of the rows' range lie on the plot's axis (beyond the plot, clipped), and the time a mark without
// an end runs to.
function marksSpan(width) {
  const v = state.view, rows = state.rows && state.rows.start <= v.start && state.rows.end >= v.end ? state.rows : v;
  state.marksSpan = {lo: Math.min(LEFT, xOf(rows.start, width)), hi: Math.max(LEFT + width, xOf(rows.end, width)), until: rows.end};
  return state.marksSpan;
}

function drawObjects() {
  const svg = $("objects"), focused = svg.contains(document.activeElement) ? document.activeElement.dataset.object : null;
  svg.replaceChildren();
  if (!state.view) return;
  const width = plotWidth($("timeline"));  // the timeline's mapping, whatever this panel's own width
  svg.dataset.drawnFor = String($("timeline").clientWidth);
  drawObjectsAxis(width);
  // the rows' marks in one group, clipped to the plot: a pan moves it whole while the drag lasts (moveObjects)
  const clip = el("clipPath", {id: "objects-clip"}, el("defs", {}, svg));
  el("rect", {x: LEFT, y: 0, width: width, height: 1e6}, clip);
  const clipped = el("g", {"clip-path": "url(#objects-clip)"}, svg), plot = el("g", {id: "objects-plot"}, clipped);
  state.drawnView = {...state.view};
  marksSpan(width);
  state.labels = new Map();
  state.tickRows = [];
  let y = 4;
  for (const {node, depth} of objectTree(state.objects)) y += drawObjectRow(svg, plot, width, y, node, depth);
  // the ring of the tick pointed at: outside the plot's group, on the range shown whatever a pan did to the group
  titled(el("rect", {id: "tick-hover", x: 0, y: 0, width: 2, height: ROW_H - 4, visibility: "hidden"}, clipped), "");
  if (!state.objects.length) el("text", {x: 8, y: 18, class: "row-label"}, svg, "No object matches.");
  svg.style.height = `${Math.max(30, y + 8)}px`;
  // one row's name in the tab order (the one the keyboard was on, else the first); it keeps the focus, its change its ring
  const label = state.labels.get(focused || state.keyRow) || state.labels.values().next().value;
  if (label) label.text.setAttribute("tabindex", 0);
  if (label && focused) { label.text.focus({preventScroll: true}); ringKeyTick(); }
  showObjectsCount();
}

// How many objects the search finds: counted apart when a page is full (asked while the rows are drawn).
// The objects changed in the range asked come first (most changes first), the others after: the count says how many.
function showObjectsCount() {
  const total = state.objectsTotal, changed = state.objectsChanged;
  // said when it tells something: some of them changed in the range drawn (listed first), or none did
  const some = changed !== null && changed !== undefined && (total === null || changed < total);
  const first = !some ? "" : changed ? `; ${plural(changed, "object")} changed in the range drawn, listed first` :
    "; none changed in the range drawn";
  $("objects-count").textContent = (total === null ? `${state.objects.length} of more, counting…` :
    `${state.objects.length} of ${plural(total, "object")}`) + first;
  $("more-objects").hidden = total !== null && state.objects.length >= total;
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
// scale they were asked at or wider, or when asking again would ask the same range in as many columns (a zoom within
// the whole history). A zoom closer asks again even when every object and all its changes are on the page: the
// closer range lists other rows first (those changed in it), and says how many.
function rowsHold() {
  const f = state.rows, v = state.view;
  if (!f || v.start < f.start || v.end > f.end) return false;
  if (v.end - v.start >= f.span) return true;
  const again = rowsRange(), wanted = Math.floor(rowsWidth(again) / 2);
  return again.start === f.start && again.end === f.end &&
    (wanted === f.columns || (wanted > f.columns && Math.floor(f.width / 2) > f.columns));
}

async function loadObjects(append) {
  const seq = ++state.seq.objects, range = append && state.rows ? state.rows : rowsRange();
  const params = {gvk: $("kind").value, namespace: $("namespace").value, q: $("search").value.trim(),
    start: range.start, end: range.end, offset: append ? state.objects.length : 0, limit: 20, width: rowsWidth(range)};
  // The total of a search is of every time: counted once (again only while a recorder writes), beside the rows, which
  // come without it: the count runs while the server reads the rows, not after them (a page short of its limit says
  // its total itself, and the count is not waited for)
  const found = JSON.stringify([params.gvk, params.namespace, params.q]);
  const known = state.counted && state.counted.found === found && !state.overview.recording ? state.counted.total : null;
  const counting = known !== null ? null : api("/api/objects-total", {gvk: params.gvk, namespace: params.namespace, q: params.q});
  if (counting) counting.catch(() => {});  // said where it is awaited
  try {
    const answer = await api("/api/objects", {...params, total: 0});
    if (seq !== state.seq.objects) return;
    state.objects = append ? state.objects.concat(answer.objects) : answer.objects;
    if (!append) state.objectsChanged = answer.changed;
    state.objectsTotal = answer.total !== null ? answer.total : known;
    if (state.objectsTotal !== null) state.counted = {found, total: state.objectsTotal};
    state.rows = {...range, width: params.width, columns: answer.maxTicks};
    state.tickColumn = (params.end - params.start) / answer.maxTicks;
    drawObjects();
    if (state.objectsTotal === null) {
      const {total} = await counting;
      if (seq !== state.seq.objects) return;
      state.objectsTotal = total;
      state.counted = {found, total};
      showObjectsCount();
    }
    document.body.dataset.objects = `${params.q}:${state.objectsTotal}`;
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

