// ksched ui: renders the views the server pushes over server-sent events (no polling).
"use strict";

const $ = (id) => document.getElementById(id);
let currentPod = null; // "namespace/name" on a pod page
let podRequest = 0;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "text") node.textContent = v;
    else if (k === "class") node.className = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

function podLink(key) {
  return el("a", { href: "#/pod/" + encodeURIComponent(key), text: key });
}

// --- formatting -------------------------------------------------------------------------------------
function fmtCpu(m) { return m >= 1000 || m === 0 ? (m / 1000).toFixed(m % 1000 ? 1 : 0) : m + "m"; }
function fmtBytes(b) {
  const units = ["B", "Ki", "Mi", "Gi", "Ti"];
  let i = 0;
  while (b >= 1024 && i < units.length - 1) { b /= 1024; i++; }
  return (b >= 10 || i === 0 ? b.toFixed(0) : b.toFixed(1)) + units[i];
}
function fmtMs(s) {
  if (s === null || s === undefined) return "";
  const ms = s * 1000;
  if (ms < 1) return ms.toFixed(2) + " ms";
  if (ms < 1000) return ms.toFixed(1) + " ms";
  return s.toFixed(3) + " s";
}
function fmtTime(ts) { return new Date(ts * 1000).toISOString().replace("T", " ").replace("Z", "Z"); }
const FORMAT = { cpu: fmtCpu, memory: fmtBytes, pods: String };

// --- overview -----------------------------------------------------------------------------------------
function bar(kind, pair) {
  const [used, total] = pair;
  const ratio = total > 0 ? Math.min(1, used / total) : (used > 0 ? 1 : 0);
  const fill = el("div", { class: "fill", style: `width:${(ratio * 100).toFixed(1)}%` });
  const f = FORMAT[kind];
  return el("div", { class: `bar ${kind}${ratio >= 0.999 && used > 0 ? " full" : ""}`, title: `${kind}: ${f(used)} requested of ${f(total)} allocatable` },
    el("span", { text: kind }), el("div", { class: "track" }, fill), el("span", { class: "value", text: `${f(used)} / ${f(total)}` }));
}

function renderCluster(view) {
  const t = view.totals || {};
  $("totals").textContent = view.nodes ? `${view.nodes} node(s) · cpu ${fmtCpu((t.cpu || [0])[0])}/${fmtCpu((t.cpu || [0, 0])[1])} · pods ${(t.pods || [0])[0]}/${(t.pods || [0, 0])[1]}` : "";
  const zones = $("zones");
  zones.replaceChildren();
  if (!view.synced && !view.nodes) { zones.append(el("p", { class: "muted", text: "waiting for the informer's snapshot…" })); return; }
  for (const zone of view.zones) {
    const grid = el("div", { class: "nodes" });
    for (const n of zone.nodes) {
      const flags = [n.unschedulable ? "cordoned" : null, n.taints ? `${n.taints} taint(s)` : null].filter(Boolean).join(", ");
      grid.append(el("div", { class: "node", "data-node": n.name },
        el("div", { class: "name", title: n.name, text: n.name }, flags ? el("span", { class: "flags", text: flags }) : null),
        bar("cpu", n.cpu), bar("memory", n.memory), bar("pods", n.pods)));
    }
    zones.append(el("div", { class: "zone", "data-zone": zone.zone },
      el("h3", { text: zone.zone || "no zone label" }, el("small", { text: `${zone.nodes.length} node(s)${zone.zone ? " · topology.kubernetes.io/zone" : ""}` })), grid));
  }
}

function renderQueue(view) {
  const counts = $("counts");
  counts.replaceChildren();
  for (const q of ["active", "backoff", "unschedulable", "gated", "in-flight"]) {
    counts.append(el("span", { class: `chip q-${q}`, text: `${q} ${(view.counts || {})[q] || 0}` }));
  }
  const error = $("queue-error");
  error.hidden = view.available;
  error.textContent = view.error || "";
  const rows = view.pods.filter((p) => p.queue !== "assumed").map((p) => ({
    cells: { key: p.key, queue: p.queue, attempts: p.attempts, reason: p.reason },
    node: el("tr", { "data-pod": p.key },
      el("td", {}, podLink(p.key)), el("td", {}, el("span", { class: `chip q-${p.queue}`, text: p.queue })),
      el("td", { class: "num", text: String(p.attempts) }), el("td", { class: "details", text: p.reason })),
  }));
  fillSortable($("queue"), rows);
}

// --- sortable tables ------------------------------------------------------------------------------------
function fillSortable(table, rows) {
  table._rows = rows;
  applySort(table);
}

function applySort(table) {
  const rows = table._rows || [];
  const key = table.dataset.sortKey;
  const dir = table.dataset.sortDir === "desc" ? -1 : 1;
  const sorted = key ? [...rows].sort((a, b) => {
    const x = a.cells[key], y = b.cells[key];
    if (typeof x === "number" && typeof y === "number") return (x - y) * dir;
    return String(x ?? "").localeCompare(String(y ?? "")) * dir;
  }) : rows;
  table.tBodies[0].replaceChildren(...sorted.map((r) => r.node));
  for (const th of table.tHead.rows[0].cells) {
    th.classList.toggle("sorted-asc", th.dataset.key === key && dir === 1);
    th.classList.toggle("sorted-desc", th.dataset.key === key && dir === -1);
  }
}

document.addEventListener("click", (e) => {
  const th = e.target.closest("table.sortable th");
  if (!th || !th.dataset.key) return;
  const table = th.closest("table");
  const same = table.dataset.sortKey === th.dataset.key;
  table.dataset.sortKey = th.dataset.key;
  table.dataset.sortDir = same && table.dataset.sortDir !== "desc" ? "desc" : (same ? "asc" : (th.classList.contains("num") ? "desc" : "asc"));
  applySort(table);
});

function sortableTable(id, columns, rows) {
  const head = el("tr", {}, ...columns.map((c) => el("th", { "data-key": c.key, class: c.num ? "num" : null, text: c.label })));
  const table = el("table", { id, class: "sortable" }, el("thead", {}, head), el("tbody"));
  fillSortable(table, rows);
  return table;
}

// --- pod page ---------------------------------------------------------------------------------------------
function describe(details) {
  const parts = [];
  for (const [k, v] of Object.entries(details || {})) {
    if (v === null || v === "" || (Array.isArray(v) && !v.length)) continue;
    if (k === "top" && Array.isArray(v)) parts.push("top scores: " + v.map((p) => `${p[0]}=${p[1]}`).join(", "));
    else if (typeof v === "object" && !Array.isArray(v)) parts.push(`${k}: ` + Object.entries(v).map(([a, b]) => `${a} ${b}`).join(", "));
    else parts.push(`${k}=${Array.isArray(v) ? v.join(",") : v}`);
  }
  return parts.join("  ");
}

function renderVerdicts(pod) {
  const box = $("verdicts");
  box.replaceChildren();
  const last = pod.last;
  if (!last) { box.append(el("p", { class: "muted", text: "no trace events for this pod (tracing off, or older than the trace stream keeps)" })); return; }
  if (last.rejected.length || last.unnamed) {
    const rows = last.rejected.map((r) => ({ cells: r, node: el("tr", { "data-node": r.node }, el("td", { text: r.node }), el("td", { text: r.plugin }), el("td", { text: r.reason })) }));
    box.append(el("p", { text: `${last.rejected.length + last.unnamed} node(s) rejected the pod` }));
    box.append(sortableTable("rejections", [{ key: "node", label: "node" }, { key: "plugin", label: "plugin" }, { key: "reason", label: "reason" }], rows));
    if (last.unnamed) box.append(el("p", { class: "muted", text: `and ${last.unnamed} more node(s) not named by the trace` }));
  } else if (last.scores.length) {
    const columns = [{ key: "node", label: "node" }, { key: "total", label: "total", num: true }, ...last.plugins.map((p) => ({ key: "p:" + p, label: p, num: true }))];
    const rows = last.scores.map((s) => {
      const cells = { node: s.node, total: s.total };
      for (const p of last.plugins) cells["p:" + p] = (s.scores || {})[p] ?? 0;
      return { cells, node: el("tr", { "data-node": s.node, class: s.node === last.node ? "picked" : null },
        ...columns.map((c) => el("td", { class: c.num ? "num" : null, text: String(cells[c.key]) + (c.key === "node" && s.node === last.node ? " ✓" : "") }))) };
    });
    box.append(el("p", { text: `picked ${last.node}; weighted scores of the best ${rows.length} node(s)` }));
    box.append(sortableTable("scores", columns, rows));
  } else {
    box.append(el("p", { class: "muted", text: last.node ? `placed on ${last.node} (the only feasible node)` : "the attempt has no per-node verdicts yet" }));
  }
}

function renderTimeline(pod) {
  const box = $("timeline");
  box.replaceChildren();
  pod.attempts.forEach((a, i) => {
    const table = el("table", {}, el("thead", {}, el("tr", {}, ...["offset", "service", "phase", "took", "details"].map((h) => el("th", { text: h })))));
    const body = el("tbody");
    for (const s of a.steps) {
      const took = s.took === null ? "" : (s.measured ? fmtMs(s.took) : `(${fmtMs(s.took)})`);
      body.append(el("tr", { "data-phase": s.phase }, el("td", { class: "num", text: "+" + fmtMs(s.offset) }), el("td", { text: s.service }),
        el("td", { text: s.phase }), el("td", { class: "num", text: took }), el("td", { class: "details", text: describe(s.details) })));
    }
    table.append(body);
    const outcome = a.outcome + (a.node ? ` on ${a.node}` : "");
    box.append(el("div", { class: "attempt" }, el("h4", { text: `attempt ${i + 1} of ${pod.attempts.length} · ${fmtTime(a.start)} · ${outcome} after ${fmtMs(a.total)}` }), table));
  });
}

function renderPod(pod) {
  $("pod-title").textContent = pod.key;
  let state = "neither in the queue nor on a node";
  if (pod.node) state = `on node ${pod.node}`;
  else if (pod.queue) state = `pending: ${pod.queue.queue} queue, ${pod.queue.attempts} attempt(s)`;
  $("pod-state").textContent = state;
  const reason = $("pod-reason");
  reason.hidden = !pod.reason || !!pod.node;
  reason.textContent = pod.reason;
  renderVerdicts(pod);
  renderTimeline(pod);
}

async function loadPod(key) {
  const mine = ++podRequest;
  const response = await fetch("api/pod?key=" + encodeURIComponent(key));
  if (!response.ok) { $("pod-state").textContent = `could not load ${key}: HTTP ${response.status}`; return; }
  const pod = await response.json();
  if (mine === podRequest && currentPod === key) renderPod(pod);
}

// --- routing, search, live stream -------------------------------------------------------------------------
function route() {
  const m = location.hash.match(/^#\/pod\/(.+)$/);
  currentPod = m ? decodeURIComponent(m[1]) : null;
  $("overview").hidden = !!currentPod;
  $("pod").hidden = !currentPod;
  if (currentPod) {
    $("pod-title").textContent = currentPod;
    $("pod-state").textContent = "loading…";
    $("verdicts").replaceChildren();
    $("timeline").replaceChildren();
    $("pod-reason").hidden = true;
    loadPod(currentPod).catch(() => {});
  }
}

let searchSeq = 0;
async function suggest(text) {
  const mine = ++searchSeq;
  const list = $("suggest");
  if (!text.trim()) { list.hidden = true; return; }
  const response = await fetch("api/search?q=" + encodeURIComponent(text));
  const keys = response.ok ? await response.json() : [];
  if (mine !== searchSeq) return;
  list.replaceChildren(...keys.map((k) => el("li", {}, podLink(k))));
  list.hidden = keys.length === 0;
}

$("q").addEventListener("input", (e) => { suggest(e.target.value).catch(() => {}); });
$("search").addEventListener("submit", (e) => {
  e.preventDefault();
  const first = $("suggest").querySelector("a");
  if (first) location.hash = first.getAttribute("href");
  $("suggest").hidden = true;
});
$("suggest").addEventListener("click", () => { $("suggest").hidden = true; $("q").value = ""; });
window.addEventListener("hashchange", route);

function connect() {
  const live = $("live");
  const source = new EventSource("events");
  source.onopen = () => { live.textContent = "live"; live.classList.add("on"); };
  source.onerror = () => { live.textContent = "reconnecting…"; live.classList.remove("on"); };
  source.addEventListener("cluster", (e) => renderCluster(JSON.parse(e.data)));
  source.addEventListener("queue", (e) => renderQueue(JSON.parse(e.data)));
  source.addEventListener("trace", (e) => {
    const keys = JSON.parse(e.data);
    if (currentPod && keys.includes(currentPod)) loadPod(currentPod).catch(() => {});
  });
}

route();
connect();
