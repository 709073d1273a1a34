"use strict";
// What a person reads of the status (docs/spec.md "What a status change is"): under a workload, a band of its ready
// replicas against those it wants, over time; on its pods, a mark where a container restarted, went into a crash loop,
// was OOM-killed or could not pull its image. Clicking either shows the status change (/api/status-change).

const BAND_H = 10;
const STATUS_MARKS = {restart: "container restarted", crashloop: "crash loop (CrashLoopBackOff)", oomkilled: "OOM-killed",
  pullfailed: "image pull failed (ImagePullBackOff)"};

// A workload's band, one step per status change: the pale rect its desired replicas, the solid one inside it the ready
// share (its height the ratio). Returns the height it took (none without a band).
function drawBand(plot, width, y, node) {
  const points = node.band || [];
  if (!points.length) return 0;
  const {lo, hi, until} = state.marksSpan;
  points.forEach(([ts, ready, desired, id], i) => {
    const to = i + 1 < points.length ? points[i + 1][0] : (node.deleted ? node.last : until);
    const x1 = Math.max(lo, xOf(ts, width)), x2 = Math.min(hi, xOf(to, width));
    if (x2 <= x1) return;
    const said = `${node.name}: ${ready} of ${desired} ready from ${iso(ts)}`;
    titled(el("rect", {x: x1, y: y + 1, width: x2 - x1, height: BAND_H - 2, class: "band desired", "data-from": ts, "data-to": to,
      "data-id": id, "data-ready": ready, "data-desired": desired}, plot), said);
    const share = desired > 0 ? Math.min(1, ready / desired) : 0, h = (BAND_H - 2) * share;
    if (h > 0) titled(el("rect", {x: x1, y: y + BAND_H - 1 - h, width: x2 - x1, height: h, class: "band ready", "data-from": ts,
      "data-to": to, "data-id": id}, plot), said);
  });
  return BAND_H;
}

// Each mark's shape on a pod's bar (its offset from the bar's top, height and width): marks of one change sit side by
// side, and are told apart by their shape as well as their hue (a restart the bar's height, a crash loop its upper
// half, an OOM kill its lower half, a failed pull a thin line).
const MARK_SHAPES = {restart: [0, POD_H - 2, 4], crashloop: [0, (POD_H - 2) / 2, 4], oomkilled: [(POD_H - 2) / 2, (POD_H - 2) / 2, 4],
  pullfailed: [0, POD_H - 2, 2]};

// A pod's marks on its bar at lane ``top``: one small mark per mark of a change, side by side.
function drawPodMarks(plot, width, top, pod) {
  for (const change of pod.marks || []) {
    change.marks.forEach((mark, i) => {
      const [dy, height, w] = MARK_SHAPES[mark];
      titled(el("rect", {x: xOf(change.ts, width) - 2 + i * 5, y: top + dy, width: w, height, class: `smark ${mark}`,
        "data-at": change.ts, "data-shift": i * 5, "data-id": change.id, "data-mark": mark}, plot),
        `pod ${pod.name}: ${STATUS_MARKS[mark]} at ${iso(change.ts)}`);
    });
  }
}

// After a zoom, the marks at their times again (the bars are moved by their data-from and data-to).
function rescaleStatusMarks(plot, width) {
  for (const mark of plot.querySelectorAll("rect.smark")) {
    mark.setAttribute("x", xOf(Number(mark.dataset.at), width) - 2 + Number(mark.dataset.shift));
  }
}

function statusMarkAt(event) {
  const mark = event.target.closest && event.target.closest("rect.smark, rect.band");
  return mark && mark.dataset.id ? Number(mark.dataset.id) : null;
}

async function loadStatusChange(id) {
  try {
    const s = await api("/api/status-change", {id});
    $("version").hidden = false;
    $("version-title").textContent = `${s.gvk} ${s.namespace}/${s.name}: status ${s.state} at ${s.at}` +
      (s.inferred ? " (as a list found it: when it became so is not known)" : s.audit ? " (from the audit log)" : "");
    $("yaml").textContent = s.yaml;
    drawDiff($("diff"), (s.change || "(its first status recorded)") + "\n");
    $("status-changes").hidden = true;
    document.body.dataset.statusChange = String(id);
    $("version").scrollIntoView({block: "nearest"});
  } catch (e) { showError(e.message); }
}
