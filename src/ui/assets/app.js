// The Storm UI page: reads the REST API every two seconds and redraws the summaries, the
// component tables (rates from the change since the last read) and the topology graph.
"use strict";

const REFRESH_MS = 2000;
let selected = null;
let previous = {}; // component id -> {t, emitted, executed}

function el(tag, attrs, ...kids) {
  const e = document.createElementNS(
    ["svg", "rect", "text", "line", "g", "path", "marker", "defs"].includes(tag)
      ? "http://www.w3.org/2000/svg" : "http://www.w3.org/1999/xhtml", tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const k of kids) e.append(k);
  return e;
}

function cell(text, cls) {
  const td = el("td", cls ? { class: cls } : {});
  td.textContent = text;
  return td;
}

// The UI's token when one was given in this tab (kept for the session only): a UI reachable
// from other hosts wants it on every read too.
function auth() {
  const token = sessionStorage.getItem("storm-ui-token");
  return token ? { "Authorization": "Bearer " + token } : {};
}

// Ask for the token once per tab (the UI answered 403: it has one, ui.token or the secret).
function askToken() {
  const token = prompt("This UI needs its token (ui.token or storm.cluster.secret):");
  if (token) sessionStorage.setItem("storm-ui-token", token);
  return !!token;
}

async function getJson(path) {
  let r = await fetch(path, { cache: "no-store", headers: auth() });
  if (r.status === 403 && !sessionStorage.getItem("storm-ui-token") && askToken()) {
    r = await fetch(path, { cache: "no-store", headers: auth() });
  }
  if (!r.ok) throw new Error(path + ": " + r.status);
  return r.json();
}

function fill(tableId, rows) {
  const body = document.querySelector("#" + tableId + " tbody");
  body.replaceChildren(...rows);
}

// Tuples a second since the previous read of this component.
function rate(id, key, value, now) {
  const p = previous[id];
  if (!p || p[key] === undefined || now <= p.t) return "";
  return ((value - p[key]) / ((now - p.t) / 1000)).toFixed(1);
}

function drawCluster(c) {
  fill("cluster", [el("tr", {}, cell(c.stormVersion), cell(c.supervisors), cell(c.slotsUsed),
    cell(c.slotsFree), cell(c.slotsTotal), cell(c.executorsTotal), cell(c.tasksTotal))]);
}

function drawTopologies(list) {
  fill("topologies", list.topologies.map(t => {
    const link = el("a", { href: "#" + encodeURIComponent(t.id) });
    link.textContent = t.name;
    link.onclick = () => { selected = t.id; previous = {}; refresh(); };
    const first = el("td", {}, link);
    return el("tr", { "data-topology": t.id }, first, cell(t.id), cell(t.status), cell(t.uptime),
      cell(t.workersTotal), cell(t.executorsTotal), cell(t.tasksTotal));
  }));
}

function drawComponents(t, now) {
  fill("spouts", t.spouts.map(s => el("tr", { "data-component": s.spoutId },
    cell(s.spoutId), cell(s.executors), cell(s.tasks), cell(s.emitted, "emitted"),
    cell(rate(s.spoutId, "emitted", s.emitted, now), "rate"), cell(s.transferred),
    cell(s.acked), cell(s.failed), cell(s.lastError, "error"))));
  fill("bolts", t.bolts.map(b => el("tr", { "data-component": b.boltId },
    cell(b.boltId), cell(b.executors), cell(b.tasks), cell(b.emitted, "emitted"),
    cell(b.executed, "executed"), cell(rate(b.boltId, "executed", b.executed, now), "rate"),
    // Storm's UI marks a bolt whose capacity is past 0.8: it is close to its limit.
    cell(b.capacity, parseFloat(b.capacity) > 0.8 ? "capacity hot" : "capacity"),
    cell(b.executeLatency), cell(b.acked), cell(b.failed), cell(b.lastError, "error"))));
  for (const s of t.spouts) previous[s.spoutId] = { t: now, emitted: s.emitted };
  for (const b of t.bolts) previous[b.boltId] = { t: now, executed: b.executed };
}

// Columns by depth (longest path from a spout), rows in order within a column.
function layout(vis) {
  const ids = Object.keys(vis);
  const depth = {};
  const visit = (id, seen) => {
    if (depth[id] !== undefined) return depth[id];
    if (seen.has(id)) return 0;
    seen.add(id);
    const ins = (vis[id][":inputs"] || []).filter(i => vis[i[":component"]]);
    const d = ins.length ? 1 + Math.max(...ins.map(i => visit(i[":component"], seen))) : 0;
    depth[id] = d;
    return d;
  };
  ids.forEach(id => visit(id, new Set()));
  const cols = {};
  ids.forEach(id => (cols[depth[id]] = cols[depth[id]] || []).push(id));
  const pos = {};
  for (const [d, members] of Object.entries(cols)) {
    members.forEach((id, i) => (pos[id] = { x: 20 + d * 240, y: 20 + i * 70 }));
  }
  return pos;
}

// Green when idle, red at full capacity (Storm's graph colours by load the same way).
function loadColour(capacity) {
  const c = Math.max(0, Math.min(1, capacity));
  return "rgb(" + Math.round(80 + 175 * c) + "," + Math.round(180 - 130 * c) + ",80)";
}

function drawGraph(vis) {
  const svg = document.getElementById("graph");
  const pos = layout(vis);
  const kids = [el("defs", {}, el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "10",
    refY: "5", markerWidth: "6", markerHeight: "6", orient: "auto" },
    el("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#555" })))];
  for (const [id, c] of Object.entries(vis)) {
    for (const i of c[":inputs"] || []) {
      const from = pos[i[":component"]];
      if (!from) continue;
      const to = pos[id];
      const line = el("line", { x1: from.x + 150, y1: from.y + 25, x2: to.x, y2: to.y + 25,
        stroke: "#555", "marker-end": "url(#arrow)" });
      const label = el("text", { x: from.x + 156, y: (from.y + to.y) / 2 + 20 });
      label.textContent = i[":stream"];
      kids.push(line, label);
    }
  }
  for (const [id, c] of Object.entries(vis)) {
    const p = pos[id];
    const fill = c[":type"] === "spout" ? "#5b9bd5" : loadColour(c[":capacity"]);
    const box = el("rect", { x: p.x, y: p.y, width: 150, height: 50, rx: 6, fill,
      "data-component": id });
    const name = el("text", { x: p.x + 6, y: p.y + 18, fill: "#fff" });
    name.textContent = id;
    const figures = el("text", { x: p.x + 6, y: p.y + 38, fill: "#fff" });
    figures.textContent = c[":type"] === "spout"
      ? "emitted " + c[":emitted"]
      : "cap " + c[":capacity"].toFixed(2) + " · " + c[":latency"].toFixed(2) + " ms";
    kids.push(el("g", {}, box, name, figures));
  }
  const width = Math.max(...Object.values(pos).map(p => p.x)) + 190;
  const height = Math.max(...Object.values(pos).map(p => p.y)) + 80;
  // Drawn at its own size (text stays legible), scaled down only when wider than the page.
  svg.setAttribute("viewBox", "0 0 " + width + " " + height);
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.replaceChildren(...kids);
}

// One POST, with the UI's token when one was given in this tab.
function post(path) {
  return fetch(path, { method: "POST", headers: auth() });
}

async function operate(op) {
  const out = document.getElementById("op-result");
  if (op.startsWith("kill")) {
    // As Storm's UI: confirm, and ask how long to wait before the topology is removed.
    const wait = prompt("Kill " + selected + "? Seconds to wait (deactivated) before it is removed:", "30");
    if (wait === null) return;
    if (!/^[0-9]+$/.test(wait.trim())) { out.textContent = "the wait is a number of seconds"; return; }
    op = "kill/" + wait.trim();
  }
  const path = "/api/v1/topology/" + encodeURIComponent(selected) + "/" + op;
  let r = await post(path);
  if (r.status === 403 && askToken()) r = await post(path);
  const body = await r.json();
  out.textContent = r.ok ? body.topologyOperation + ": " + body.status : body.errorMessage;
  refresh();
}

async function refresh() {
  try {
    const [cluster, list] = await Promise.all([
      getJson("/api/v1/cluster/summary"), getJson("/api/v1/topology/summary")]);
    drawCluster(cluster);
    drawTopologies(list);
    const hash = decodeURIComponent(location.hash.slice(1));
    if (!selected) selected = hash || (list.topologies[0] && list.topologies[0].id);
    const section = document.getElementById("topology");
    if (selected) {
      const id = encodeURIComponent(selected);
      const [t, vis] = await Promise.all([
        getJson("/api/v1/topology/" + id), getJson("/api/v1/topology/" + id + "/visualization")]);
      section.hidden = false;
      document.getElementById("topology-name").textContent = t.name;
      const status = document.getElementById("topology-status");
      status.textContent = t.status;
      status.className = "status " + t.status;
      drawComponents(t, Date.now());
      drawGraph(vis);
    }
    document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (e) {
    document.getElementById("updated").textContent = "cannot read the API: " + e.message;
  }
}

for (const b of document.querySelectorAll("button[data-op]")) {
  b.onclick = () => operate(b.dataset.op);
}
refresh();
setInterval(refresh, REFRESH_MS);
