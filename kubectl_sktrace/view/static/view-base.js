// kubectl sktrace view: the page. Plain JavaScript drawing SVG; every figure comes from the server's JSON answers,
// aggregated and paged there. Times are unix seconds and shown in UTC, as every report of kubectl sktrace prints them.
// This file: the constants, the page's state, the session and its requests, timing and time; the scripts after it
// (index.html loads them in order, sharing their globals as one script would): view-timeline.js, view-window.js,
// view-objects.js, view.js.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
// far from every colour of view.css (CIEDE2000 at least 16) and from each other: a kind is never mistaken
// for an outage, a refusal or a mark (tests/view/test_view_legend.py measures it)
const KIND_COLOURS = ["#9c7b16", "#ef8faf", "#1dbac9", "#bce963", "#efa78f", "#63a6e9", "#e236b7", "#162d9c", "#815931", "#169c86"];
// past the ten, a hue each by the golden angle, in two lightnesses: never a colour two kinds share
function kindColour(n) {
  return n < KIND_COLOURS.length ? KIND_COLOURS[n] : `hsl(${Math.round((n * 137.508) % 360)}, 60%, ${n % 2 ? 38 : 55}%)`;
}
const STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800,
  1209600, 2419200, 7257600, 31536000];
const MIN_RANGE = 10;
const MAX_POD_LANES = 6;
const LIVE_SECONDS = 10;
const LEFT = 90, RIGHT = 12, AXIS_H = 34, LANE_H = 16, HIST_H = 140, ROW_H = 18, POD_H = 10, LABEL_H = 13, CHAR_W = 6.6;

const state = {overview: null, view: null, selection: null, histogram: null, kindColour: {}, objects: [], objectsTotal: 0, objectsChanged: null, counted: null, rows: null, labels: new Map(),
  tickRows: [], chosenTick: null, keyTick: null, keyRow: null, seq: {histogram: 0, objects: 0, window: 0, report: 0}};

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

// iso() of a whole second, its day's part made once a day: thousands of ticks are worded in a redraw.
const isoDays = new Map();
function isoSecond(t) {
  const day = Math.floor(t / 86400), s = t - day * 86400;
  if (!Number.isInteger(t)) return iso(t);
  let date = isoDays.get(day);
  if (date === undefined) { date = iso(day * 86400).slice(0, 11); isoDays.set(day, date); }
  const two = (n) => (n < 10 ? "0" : "") + n;
  return `${date}${two(Math.floor(s / 3600))}:${two(Math.floor(s % 3600 / 60))}:${two(s % 60)}Z`;
}

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

