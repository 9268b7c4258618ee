// broker-emu's web console: plain JavaScript, no build step, no dependency (docs/console.md says why).
// It reads one stream of server-sent events (GET /console/events): "state" snapshots of the cluster
// and "trace" events as they happen; actions are the control API's own routes. A token, if the
// control API has one, comes from the page's URL fragment (#token=...) and goes in each request.
"use strict";

const token = new URLSearchParams(location.hash.slice(1)).get("token");
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const $ = (sel) => document.querySelector(sel);
const esc = (v) => String(v ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

$("#playground-link").href = "/console/playground" + location.hash;   // the token goes along, in the fragment

let state = null;          // the last snapshot
let stateAt = 0;           // performance.now() when it arrived: countdowns run on between snapshots
const events = [];         // trace events kept for the timeline (bounded)
const closed = [];         // recent connection closes
const MAX_EVENTS = 20000;

async function call(method, path, body) {
  const init = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = typeof body === "string" ? body : JSON.stringify(body);
  }
  const r = await fetch(path, init);
  const text = await r.text();
  let doc = null;
  try { doc = JSON.parse(text); } catch { doc = { error: text }; }
  if (!r.ok) throw new Error(doc && doc.error ? doc.error : `HTTP ${r.status}`);
  return doc;
}

// -- the stream --------------------------------------------------------------------------------
async function stream() {
  for (;;) {
    try {
      const r = await fetch("/console/events?interval_ms=250", { headers });
      if (!r.ok) throw new Error(`HTTP ${r.status}: ${(await r.text()).slice(0, 200)}`);
      $("#status").textContent = "live";
      $("#status").className = "live";
      const reader = r.body.getReader();
      const decoder = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const kind = /^event: (.*)$/m.exec(block);
          const data = /^data: (.*)$/m.exec(block);
          if (kind && data) onEvent(kind[1], JSON.parse(data[1]));
        }
      }
      throw new Error("the stream ended");
    } catch (err) {
      $("#status").textContent = `disconnected (${err.message}); retrying…`;
      $("#status").className = "down";
      await new Promise((ok) => setTimeout(ok, 1000));
    }
  }
}

function onEvent(kind, data) {
  if (kind === "state") {
    state = data;
    stateAt = performance.now();
    render();
  } else if (kind === "trace") {
    for (const e of data.events) {
      events.push(e);
      if (e.kind === "conn_close") closed.unshift(e);
    }
    if (events.length > MAX_EVENTS) events.splice(0, events.length - MAX_EVENTS);
    if (closed.length > 50) closed.length = 50;
    $("#dropped").textContent = data.dropped ? `${data.dropped} events dropped (the page fell behind)` : "";
    renderClosed();
    renderTimeline();
  }
}

// -- views -------------------------------------------------------------------------------------
function render() {
  $("#clock").textContent = `cluster time ${(state.now_ms / 1000).toFixed(1)} s`;
  $("#cluster-id").textContent = state.cluster_id ? `(${state.cluster_id})` : "";
  renderBrokers();
  renderPartitions();
  renderTransactions();
  $("#groups").innerHTML = renderGroups(state.groups);
  renderConnections();
  renderPurgatory();
  renderShareLocks();
  renderFaults();
  renderClients();
}

function renderBrokers() {
  $("#brokers").innerHTML = (state.brokers || []).map((b) => `
    <div class="broker ${b.alive ? "up" : "stopped"}" data-testid="broker-${b.id}">
      broker ${b.id} <b>${b.alive ? "up" : "stopped"}</b> ${esc(b.host)}:${b.port}
      <button data-action="${b.alive ? "stop" : "start"}" data-broker="${b.id}" data-testid="${b.alive ? "stop" : "start"}-broker-${b.id}">
        ${b.alive ? "stop" : "start"}</button>
    </div>`).join("");
}

function renderPartitions() {
  const ids = (state.brokers || []).map((b) => b.id);
  const rows = [];
  for (const t of state.topics || []) {
    for (const p of t.partitions) {
      const options = p.replicas.map((r) => `<option ${r === p.leader ? "selected" : ""}>${r}</option>`).join("");
      rows.push(`<tr data-testid="partition-${esc(t.name)}-${p.partition}">
        <td>${esc(t.name)}</td><td>${p.partition}</td><td>${p.leader}</td><td>${p.replicas.join(", ")}</td>
        <td>${p.isr.join(", ")}</td><td>${p.log_start_offset}</td><td data-testid="hw">${p.high_watermark}</td><td>${p.log_end_offset}</td>
        <td><select data-leader="${esc(t.name)}:${p.partition}">${options}</select>
            <button data-action="move" data-topic="${esc(t.name)}" data-partition="${p.partition}">move</button></td>
        <td><button data-action="stall" data-topic="${esc(t.name)}" data-partition="${p.partition}" data-testid="stall-${esc(t.name)}-${p.partition}">stall</button>
            <button data-action="resume" data-topic="${esc(t.name)}" data-partition="${p.partition}" data-testid="resume-${esc(t.name)}-${p.partition}">resume</button></td>
      </tr>`);
    }
  }
  $("#partitions tbody").innerHTML = rows.join("") || `<tr><td colspan="10">no topics (${ids.length} brokers)</td></tr>`;
}

function renderTransactions() {
  const since = performance.now() - stateAt;
  $('[data-testid="transactions"] tbody').innerHTML = (state.transactions || []).map((t) => {
    const left = t.left_ms === null ? null : Math.max(0, t.left_ms - since);
    return `<tr data-testid="txn-${esc(t.transactional_id)}"><td>${esc(t.transactional_id)}</td><td>${esc(t.state)}</td>
      <td>${t.producer_id} / ${t.epoch}</td><td>${esc(t.partitions.join(", "))}</td><td>${esc(t.groups.join(", "))}</td>
      <td>${left === null ? "—" : bar(left / t.timeout_ms, `${(left / 1000).toFixed(1)} s of ${(t.timeout_ms / 1000).toFixed(1)} s`, "countdown")}</td></tr>`;
  }).join("") || `<tr><td colspan="6">no transactional producers</td></tr>`;
}

function renderGroups(groups) {
  if (!Array.isArray(groups)) return `<p class="error">${esc(groups && groups.error)}</p>`;
  if (!groups.length) return "<p>no groups</p>";
  return groups.map((g) => {
    const epoch = g.generation ?? g.group_epoch ?? g.generation_id;
    const members = (g.members || []).map((m) => `<li>${esc(m.member_id || m.id)} ${esc(m.client_id || "")}
      ${m.assignment ? `<code>${esc(JSON.stringify(m.assignment))}</code>` : ""}</li>`).join("");
    return `<div class="group" data-testid="group-${esc(g.group_id || g.name)}"><b>${esc(g.group_id || g.name)}</b>
      ${esc(g.protocol_type || g.type || "")} ${esc(g.state || "")} epoch/generation ${esc(epoch)}<ul>${members}</ul></div>`;
  }).join("");
}

function bar(fraction, label, cls) {
  const pct = Math.max(0, Math.min(1, fraction)) * 100;
  return `<span class="bar ${cls || ""}"><span style="width:${pct.toFixed(1)}%"></span><em>${esc(label)}</em></span>`;
}

function renderConnections() {
  const since = performance.now() - stateAt;
  $('[data-testid="connections"] tbody').innerHTML = (state.connections || []).map((c) => {
    const reqs = c.in_flight.map((r) => {
      const age = r.age_ms + since;
      return r.timeout_ms
        ? bar(age / r.timeout_ms, `${r.api} #${r.correlation_id} ${(age / 1000).toFixed(1)} s of ${r.timeout_field} ${(r.timeout_ms / 1000).toFixed(1)} s`)
        : `<span class="req">${esc(r.api)} #${r.correlation_id} ${(age / 1000).toFixed(1)} s</span>`;
    }).join(" ");
    const muted = c.throttled_ms_left - since;
    const throttle = muted > 0 ? `<span class="throttle" data-testid="throttled-${c.conn}">muted by a throttle for ${(muted / 1000).toFixed(1)} s more</span>` : "";
    return `<tr data-testid="conn-${c.conn}"><td>${c.conn}</td><td>${c.broker}</td><td>${esc(c.client_id)}</td><td>${esc(c.client_addr)}</td><td>${reqs} ${throttle}</td></tr>`;
  }).join("");
}

function renderClosed() {
  $("#closed").innerHTML = closed.slice(0, 10).map((e) => `<li data-testid="closed-${e.conn}">
    ${(e.t_ms / 1000).toFixed(1)} s: connection ${e.conn} (${esc(e.client_id)}) to broker ${e.broker} closed by
    <b>${esc(e.details && e.details.closed_by)}</b>: ${esc(e.details && e.details.reason)}</li>`).join("");
}

function renderPurgatory() {
  const since = performance.now() - stateAt;
  const ops = state.purgatory_ops || [];
  $('[data-testid="purgatory"] tbody').innerHTML = ops.map((op) => {
    const left = op.left_ms === null ? null : Math.max(0, op.left_ms - since);
    const waits = op.waits_for && op.waits_for.partitions
      ? op.waits_for.partitions.map((p) => `${esc(p.topic)}-${p.partition} to offset ${p.required_offset}`).join(", ")
      : esc(JSON.stringify(op.waits_for));
    const countdown = left === null ? "—" : bar(left / op.timeout_ms, `${(left / 1000).toFixed(1)} s of ${(op.timeout_ms / 1000).toFixed(1)} s`, "countdown");
    return `<tr data-testid="op-${esc(op.client_id)}-${op.correlation_id}"><td>${esc(op.purgatory)}</td><td>${esc(op.client_id)}</td><td>${op.conn}</td><td>${waits}</td><td>${countdown}</td></tr>`;
  }).join("") || `<tr><td colspan="5" data-testid="purgatory-empty">nothing parked</td></tr>`;
}

function renderShareLocks() {
  const since = performance.now() - stateAt;
  const rows = [];
  for (const sp of state.share_locks || []) {
    for (const lock of sp.locks) {
      const left = Math.max(0, lock.left_ms - since);
      const late = lock.late_ms ? ` (+${(lock.late_ms / 1000).toFixed(1)} s late)` : "";
      const countdown = bar(left / lock.lock_ms, `${(left / 1000).toFixed(1)} s of ${(lock.lock_ms / 1000).toFixed(1)} s${late}`, "countdown");
      rows.push(`<tr data-testid="lock-${esc(sp.group)}-${esc(sp.topic)}-${sp.partition}-${lock.offsets[0]}"><td>${esc(sp.group)}</td><td>${esc(sp.topic)}-${sp.partition}</td><td>${lock.offsets.join(", ")}</td><td>${esc(lock.member)}</td><td>${lock.delivery_counts.join(", ")}</td><td>${countdown}</td></tr>`);
    }
  }
  $('[data-testid="share-locks"] tbody').innerHTML = rows.join("") || `<tr><td colspan="6" data-testid="share-locks-empty">no record locked</td></tr>`;
}

function renderFaults() {
  $('[data-testid="faults"] tbody').innerHTML = (state.faults || []).map((f) => `
    <tr data-testid="fault-${f.id}"><td>${f.id}</td><td><code>${esc(JSON.stringify(f.match))}</code></td>
    <td><code>${esc(JSON.stringify(f.action))}</code></td><td>${f.matched ?? ""}</td><td data-testid="fault-${f.id}-applied">${f.applied ?? ""}</td>
    <td><button data-action="remove-fault" data-id="${f.id}" data-testid="remove-fault-${f.id}">remove</button></td></tr>`).join("");
}

function renderClients() {
  const select = $("#timeline-client"), conns = $("#timeline-conn");
  const known = new Set([...select.options].map((o) => o.value));
  const knownConns = new Set([...conns.options].map((o) => o.value));
  for (const e of events) {
    if (e.client_id && !known.has(e.client_id)) {
      known.add(e.client_id);
      select.add(new Option(e.client_id, e.client_id));
    }
    if (e.conn != null && !knownConns.has(String(e.conn))) {
      knownConns.add(String(e.conn));
      conns.add(new Option(`conn ${e.conn} (${e.client_id || "?"})`, String(e.conn)));
    }
  }
}

// The explain drawing, streaming: one lane per connection of the chosen client.
function renderTimeline() {
  const who = $("#timeline-client").value;
  const conn = $("#timeline-conn").value;
  const mine = events.filter((e) => e.conn != null && (!who || e.client_id === who) && (!conn || String(e.conn) === conn));
  if (!mine.length) { $("#timeline-svg").innerHTML = "<p>no events yet</p>"; return; }
  const lanes = [...new Set(mine.map((e) => e.conn))].slice(-12);
  const t0 = Math.min(...mine.map((e) => e.t_ms));
  const ends = mine.map((e) => e.kind === "purgatory_enter" && e.details ? e.t_ms + (e.details.timeout_ms ?? e.details.max_wait_ms ?? 0) : e.t_ms);
  const t1 = Math.max(...ends, t0 + 1);
  const W = 900, L = 150, H = 22, x = (t) => L + ((t - t0) / (t1 - t0)) * (W - L - 90);   // room for a last "✕ broker"
  const parts = [];
  lanes.forEach((conn, i) => {
    const y = 20 + i * H;
    const evs = mine.filter((e) => e.conn === conn);
    parts.push(`<text x="4" y="${y + 12}" class="lane">conn ${conn} ${esc(evs[0].client_id || "")}</text>`);
    const open = new Map();
    for (const e of evs) {
      if (e.kind === "recv") open.set(e.correlation_id, e);
      else if (e.kind === "send" && open.has(e.correlation_id)) {
        const r = open.get(e.correlation_id); open.delete(e.correlation_id);
        parts.push(`<rect x="${x(r.t_ms)}" y="${y + 3}" width="${Math.max(2, x(e.t_ms) - x(r.t_ms))}" height="12" class="req"><title>${esc(r.api)} #${r.correlation_id} ${(e.t_ms - r.t_ms).toFixed(1)} ms</title></rect>`);
      } else if (e.kind === "purgatory_enter") {
        // the broker's own timeout window for this request (Produce timeout_ms, Fetch max_wait_ms)
        const ms = e.details && (e.details.timeout_ms ?? e.details.max_wait_ms);
        if (ms != null) parts.push(`<rect x="${x(e.t_ms)}" y="${y + 1}" width="${Math.max(2, x(e.t_ms + ms) - x(e.t_ms))}" height="16" class="window" data-testid="timeline-window"><title>${esc(e.api)} #${e.correlation_id}: in the purgatory, ${ms} ms to expiry</title></rect>`);
      } else if (e.kind === "purgatory_expire") {
        parts.push(`<text x="${x(e.t_ms) - 4}" y="${y + 13}" class="expire">◆<title>purgatory expiry</title></text>`);
      } else if (e.kind === "conn_close") {
        for (const r of open.values()) {
          parts.push(`<rect x="${x(r.t_ms)}" y="${y + 3}" width="${Math.max(2, x(e.t_ms) - x(r.t_ms))}" height="12" class="unanswered"><title>${esc(r.api)} #${r.correlation_id}: never answered</title></rect>`);
        }
        open.clear();
        const by = e.details && e.details.closed_by;
        parts.push(`<text x="${x(e.t_ms) - 4}" y="${y + 13}" class="close" data-testid="timeline-close-${conn}">✕ ${esc(by)}<title>${esc(e.details && e.details.reason)}</title></text>`);
      }
    }
    for (const r of open.values()) {
      parts.push(`<rect x="${x(r.t_ms)}" y="${y + 3}" width="${Math.max(2, x(t1) - x(r.t_ms))}" height="12" class="pending"><title>${esc(r.api)} #${r.correlation_id}: waiting</title></rect>`);
    }
  });
  const h = 30 + lanes.length * H;
  parts.push(`<text x="${L}" y="${h - 2}" class="axis">${(t0 / 1000).toFixed(1)} s</text><text x="${W - 120}" y="${h - 2}" class="axis">${(t1 / 1000).toFixed(1)} s</text>`);
  $("#timeline-svg").innerHTML = `<svg width="${W}" height="${h}" viewBox="0 0 ${W} ${h}">${parts.join("")}</svg>`;
}

// -- actions -----------------------------------------------------------------------------------
async function act(fn) {
  try { await fn(); $("#fault-error").textContent = ""; } catch (err) { $("#fault-error").textContent = err.message; }
}

document.addEventListener("click", (ev) => {
  const b = ev.target.closest("button");
  if (!b) return;
  const a = b.dataset.action;
  if (b.dataset.rule) act(() => call("POST", "/faults", b.dataset.rule));
  else if (b.id === "clear-faults") act(() => call("DELETE", "/faults"));
  else if (a === "stop" || a === "start") act(() => call("POST", `/brokers/${b.dataset.broker}/${a}`));
  else if (a === "remove-fault") act(() => call("DELETE", `/faults/${b.dataset.id}`));
  else if (a === "move") {
    const leader = Number(document.querySelector(`select[data-leader="${b.dataset.topic}:${b.dataset.partition}"]`).value);
    act(() => call("POST", `/partitions/${encodeURIComponent(b.dataset.topic)}/${b.dataset.partition}/leader`, { broker: leader }));
  } else if (a === "stall" || a === "resume") {
    act(() => call("POST", "/replication", { topic: b.dataset.topic, partition: Number(b.dataset.partition), mode: a === "stall" ? "stall" : "normal" }));
  }
});

$("#fault-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  act(() => call("POST", "/faults", $("#fault-rule").value));
});
$("#timeline-client").addEventListener("change", renderTimeline);
$("#timeline-conn").addEventListener("change", renderTimeline);

// countdowns and ages move between snapshots
setInterval(() => { if (state) { renderConnections(); renderPurgatory(); renderShareLocks(); renderTransactions(); } }, 100);
stream();
