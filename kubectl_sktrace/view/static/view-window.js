// kubectl sktrace view: a window picked, its figures, the filters and the export command.
// One of the page's scripts (index.html loads them in order, view-base.js first): they share their globals.
"use strict";

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
