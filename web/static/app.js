// The watcher's page: polls the REST API (state every second) and draws what it answers.
// Every value from the server goes through textContent: nothing it says is read as HTML.
"use strict";

const STATE_EVERY_MS = 1000;
const SLOW_EVERY_MS = 4000;
const $ = (id) => document.getElementById(id);

function credentials() {
  return sessionStorage.getItem("authorization");
}

async function call(method, path, params) {
  const headers = { "X-Requested-With": "fetch" };
  const auth = credentials();
  if (auth) headers["Authorization"] = auth;
  const options = { method, headers };
  if (params) {
    headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(params);
  }
  const response = await fetch(path, options);
  const type = response.headers.get("Content-Type") || "";
  const body = type.startsWith("application/json") ? await response.json() : await response.blob();
  if (!response.ok) {
    const why = body && body.error ? body.error : response.statusText;
    throw new Error(`${response.status}: ${why}`);
  }
  return body;
}

function say(text) {
  $("message").textContent = text || "";
}

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

function bytes(n) {
  if (n === null || n === undefined) return "?";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

function duration(s) {
  if (s === null || s === undefined) return "?";
  s = Math.round(s);
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  return h ? `${h}h${String(m).padStart(2, "0")}m` : m ? `${m}m${String(r).padStart(2, "0")}s` : `${r}s`;
}

// ---- the cluster ---------------------------------------------------------------------------
function loadClass(broker, bands) {
  if (broker.state === "fenced") return "fenced";
  if (broker.state === "gone") return "gone";
  const useBytes = bands.bytes && bands.bytes[1] > 0;
  const band = useBytes ? bands.bytes : bands.replicas;
  const value = useBytes ? broker.bytes : broker.replicas;
  if (!band) return "ok";
  return value < band[0] ? "low" : value > band[1] ? "high" : "ok";
}

function brokerChip(broker, bands) {
  const chip = el("span", broker.id, "broker " + loadClass(broker, bands));
  chip.dataset.brokerId = broker.id;
  chip.dataset.state = broker.state;
  chip.title = `broker ${broker.id} (${broker.state}) rack ${broker.rack || "none"}: ${broker.replicas} replicas, ` +
    `${broker.leaders} leaders, ${bytes(broker.bytes)}`;
  return chip;
}

function drawRacks(cluster) {
  const root = el("div");
  const bands = cluster.bands || {};
  const nodes = new Map();          // path key -> container
  for (const broker of cluster.brokers) {
    let parent = root, key = "";
    for (const part of broker.rack_path || []) {
      key += "/" + part;
      let node = nodes.get(key);
      if (!node) {
        const details = el("details");
        details.open = true;
        details.append(el("summary", key));
        parent.append(details);
        nodes.set(key, details);
        node = details;
      }
      parent = node;
    }
    parent.append(brokerChip(broker, bands));
  }
  $("racks").replaceChildren(root);
}

function drawDistribution(title, brokers, field, band, format) {
  const box = el("div");
  const top = Math.max(1, ...brokers.map((b) => b[field]), band ? band[1] : 0);
  box.append(el("h3", band ? `${title} (band ${format(band[0])} – ${format(band[1])})` : title));
  for (const b of brokers) {
    const row = el("div", null, "bar-row");
    row.append(el("span", b.id, "label"));
    const track = el("div", null, "bar-track");
    if (band) {
      const shade = el("div", null, "bar-band");
      shade.style.left = `${(100 * band[0]) / top}%`;
      shade.style.width = `${(100 * (band[1] - band[0])) / top}%`;
      track.append(shade);
    }
    const out = band && b.state === "up" && (b[field] < band[0] || b[field] > band[1]);
    const fill = el("div", null, "bar-fill" + (out ? " out" : ""));
    fill.style.width = `${(100 * b[field]) / top}%`;
    track.append(fill);
    row.append(track, el("span", format(b[field]), "value"));
    box.append(row);
  }
  return box;
}

function drawDistributions(cluster) {
  const bands = cluster.bands || {};
  const count = (n) => String(n);
  $("distributions").replaceChildren(
    drawDistribution("replicas", cluster.brokers, "replicas", bands.replicas, count),
    drawDistribution("leaders", cluster.brokers, "leaders", bands.leaders, count),
    drawDistribution("bytes", cluster.brokers, "bytes", bands.bytes, bytes));
}

function drawSummary(state) {
  const c = state.cluster;
  const by = { up: 0, fenced: 0, gone: 0 };
  for (const b of c.brokers) by[b.state] = (by[b.state] || 0) + 1;
  const reach = c.reachable ? `view ${c.age_s === null ? "?" : c.age_s.toFixed(1)} s old` : "cluster not reachable";
  $("summary").textContent = `${c.brokers.length} brokers (${by.up} up, ${by.fenced} fenced, ${by.gone} offline), ` +
    `${c.topics} topics, ${c.partitions} partitions, ${c.reassignments_in_progress} reassignments in progress; ` +
    `${reach}${state.dry_run ? "; dry run" : ""}`;
}

// ---- the execution ------------------------------------------------------------------------
function drawExecution(state) {
  const running = state.execution;
  const shown = running || state.last_execution;
  const p = (shown && shown.progress) || {};
  if (!shown) {
    $("execution-title").textContent = "no plan running";
    $("progress").value = 0;
    $("progress-text").textContent = "";
    $("execution-status").textContent = "";
    return;
  }
  $("execution-title").textContent = `${running ? "running" : "last"}: ${shown.kind} ${shown.subject} ` +
    `(${shown.plan_dir})`;
  const total = p.bytes_total || 0, movesTotal = p.moves_total || 0;
  let percent = total > 0 ? (100 * (p.bytes_done || 0)) / total
    : movesTotal > 0 ? (100 * (p.moves_done || 0)) / movesTotal : 0;
  if (!running && shown.status === "done") percent = 100;
  $("progress").value = percent;
  $("progress").dataset.percent = percent.toFixed(1);
  $("progress-text").textContent = `${p.moves_done ?? 0} / ${movesTotal} moves (${p.in_flight ?? 0} in flight), ` +
    `${bytes(p.bytes_done)} / ${bytes(p.bytes_total)}, ${bytes(p.rate_bytes_per_s)}/s, ` +
    `ETA ${running ? duration(p.eta_s) : "-"}, throttle ${p.throttle ? bytes(p.throttle) + "/s" : "none"}` +
    `${p.paused ? ", paused" : ""}`;
  $("execution-status").textContent = running ? "running" : `ended: ${shown.status}`;
  $("execution-status").dataset.status = running ? "running" : shown.status;
}

async function control(action) {
  const params = action === "throttle" ? { rate: $("throttle-rate").value } : undefined;
  try {
    const answer = await call("POST", `/api/execution/${action}`, params || {});
    say(`${action}: requested (${JSON.stringify(answer.requested)})`);
  } catch (e) {
    say(`${action} refused: ${e.message}`);
  }
}

// ---- requests, tasks, plans, audit ---------------------------------------------------------
async function ask(event) {
  event.preventDefault();
  const endpoint = $("action-endpoint").value;
  const params = { dryrun: $("action-dryrun").checked ? "true" : "false" };
  for (const [name, id] of [["brokerid", "action-brokerid"], ["mode", "action-mode"],
    ["topics", "action-topics"], ["threshold", "action-threshold"], ["throttle", "action-throttle"]]) {
    if ($(id).value) params[name] = $(id).value;
  }
  $("action-result").textContent = "planning…";
  try {
    const task = await call("POST", `/api/${endpoint}`, params);
    const s = task.summary || {};
    $("action-result").textContent = `task ${task.id}: ${task.status}; ${s.replica_moves} replica move(s), ` +
      `${s.leader_changes} leader change(s)` + (task.plan_dir ? `; ${task.plan_dir}` : "") +
      ((s.notes || []).length ? "\n" + s.notes.join("\n") : "");
    say("");
  } catch (e) {
    $("action-result").textContent = `refused: ${e.message}`;
    say(`${endpoint} refused: ${e.message}`);
  }
  refreshSlow();
}

function drawTasks(tasks) {
  const rows = tasks.map((t) => {
    const tr = el("tr");
    tr.append(el("td", t.id), el("td", t.endpoint), el("td", t.user), el("td", t.dryrun ? "yes" : "no"),
      el("td", t.error ? `${t.status}: ${t.error}` : t.status),
      el("td", t.summary ? t.summary.replica_moves : ""), el("td", t.plan_dir || ""));
    return tr;
  });
  $("tasks").tBodies[0].replaceChildren(...rows);
}

async function view(group, name, file) {
  try {
    const blob = await call("GET", `/api/plans/${group}/${encodeURIComponent(name)}/${encodeURIComponent(file)}`);
    const box = $("viewer");
    if (file.endsWith(".png")) {
      const img = el("img");
      img.src = URL.createObjectURL(blob);
      img.alt = file;
      box.replaceChildren(el("h3", `${name}/${file}`), img);
    } else {
      box.replaceChildren(el("h3", `${name}/${file}`), el("pre", await blob.text()));
    }
  } catch (e) {
    say(`${file}: ${e.message}`);
  }
}

function drawPlans(plans) {
  const rows = [];
  for (const p of [...plans.plans, ...plans.proposals]) {
    const tr = el("tr");
    const s = p.summary || {};
    const files = el("td");
    for (const file of p.files.filter((f) => f === "report.md" || f.endsWith(".png"))) {
      const link = el("a", file, "file");
      link.addEventListener("click", () => view(p.group, p.name, file));
      files.append(link);
    }
    tr.append(el("td", `${p.group}/${p.name}`), el("td", s.replica_moves ?? ""), el("td", s.leader_changes ?? ""),
      el("td", p.execution ? p.execution.status : p.group === "proposals" ? "dry run" : ""), files);
    rows.push(tr);
  }
  $("plans").tBodies[0].replaceChildren(...rows);
}

function drawAudit(records) {
  const rows = records.map((r) => {
    const tr = el("tr");
    tr.dataset.event = r.event;
    tr.append(el("td", new Date(r.ts * 1000).toLocaleTimeString()), el("td", r.event), el("td", r.kind || ""),
      el("td", r.action || r.status || r.endpoint || ""), el("td", r.subject || r.plan_dir || ""),
      el("td", r.reason || r.error || r.note || (r.user ? `by ${r.user}` : "")));
    return tr;
  });
  $("audit").tBodies[0].replaceChildren(...rows);
}

function auditQuery() {
  const q = new URLSearchParams({ limit: "200" });
  if ($("audit-event").value) q.set("event", $("audit-event").value);
  if ($("audit-kind").value) q.set("kind", $("audit-kind").value);
  if ($("audit-text").value) q.set("text", $("audit-text").value);
  return q.toString();
}

// ---- the loops -------------------------------------------------------------------------------
async function refreshState() {
  try {
    const state = await call("GET", "/api/state");
    drawSummary(state);
    drawRacks(state.cluster);
    drawDistributions(state.cluster);
    drawExecution(state);
    if ($("message").dataset.fromState) say("");
    delete $("message").dataset.fromState;
  } catch (e) {
    say(`state: ${e.message}`);
    $("message").dataset.fromState = "1";
  }
}

async function refreshSlow() {
  try {
    drawTasks((await call("GET", "/api/user_tasks")).user_tasks);
    drawPlans(await call("GET", "/api/plans"));
    drawAudit((await call("GET", `/api/audit?${auditQuery()}`)).records);
  } catch (e) {
    /* said by the state loop */
  }
}

function signIn(event) {
  event.preventDefault();
  const user = $("login-user").value, secret = $("login-secret").value;
  if (!secret) return;
  sessionStorage.setItem("authorization", user ? "Basic " + btoa(`${user}:${secret}`) : "Bearer " + secret);
  $("login-secret").value = "";
  showLogin();
  refreshState();
  refreshSlow();
}

function showLogin() {
  $("login-state").textContent = credentials() ? "signed in" : "not signed in";
}

document.addEventListener("DOMContentLoaded", () => {
  $("login").addEventListener("submit", signIn);
  $("logout-button").addEventListener("click", () => { sessionStorage.removeItem("authorization"); showLogin(); });
  $("action").addEventListener("submit", ask);
  for (const button of document.querySelectorAll("button[data-control]")) {
    button.addEventListener("click", () => control(button.dataset.control));
  }
  for (const id of ["audit-event", "audit-kind", "audit-text"]) $(id).addEventListener("input", refreshSlow);
  showLogin();
  refreshState();
  refreshSlow();
  setInterval(refreshState, STATE_EVERY_MS);
  setInterval(refreshSlow, SLOW_EVERY_MS);
});
