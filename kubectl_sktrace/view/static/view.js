// kubectl sktrace view: the page kept live while a recorder writes, and its start.
// One of the page's scripts (index.html loads them in order, view-base.js first): they share their globals.
"use strict";

// Each kind keeps its colour for as long as the page is open: a kind that appears later takes the next one.
function colourKinds(kinds) {
  const added = kinds.filter((k) => !(k.gvk in state.kindColour));
  for (const k of added) state.kindColour[k.gvk] = kindColour(Object.keys(state.kindColour).length);
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
    $("pan-earlier").addEventListener("click", () => pan(-1));
    $("pan-later").addEventListener("click", () => pan(1));
    $("pick-shown").addEventListener("click", pickShown);
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
