// The timeout playground (docs/console.md): plain JavaScript, no build step, like console.js. It lists
// the scenarios (GET /playground/scenarios), runs one with the settings in the form
// (POST /playground/run: virtual time, on the server) and shows the run's SVG timeline, who gave up
// first and the outcome. A token, if the control API has one, comes from the URL fragment (#token=...).
"use strict";

const token = new URLSearchParams(location.hash.slice(1)).get("token");
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const $ = (sel) => document.querySelector(sel);
const esc = (v) => String(v ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
const WINNERS = { client: "the client", broker: "the broker", nobody: "nobody" };

let scenarios = {};

async function call(method, path, body) {
  const init = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  const text = await r.text();
  let doc = null;
  try { doc = JSON.parse(text); } catch { doc = { error: text }; }
  if (!r.ok) throw new Error(doc && doc.error ? doc.error : `HTTP ${r.status}`);
  return doc;
}

function showScenario(id) {
  const s = scenarios[id];
  $("#pg-title").textContent = s.title;
  $("#pg-teaching").textContent = s.teaching;
  $("#pg-note").textContent = s.note || "";
  $("#pg-settings tbody").innerHTML = s.settings.map((x) => `
    <tr><td><label for="pg-${esc(x.key)}"><code>${esc(x.key)}</code></label><br><span class="hint">${esc(x.label)}</span></td>
      <td><input id="pg-${esc(x.key)}" data-testid="pg-setting-${esc(x.key)}" data-key="${esc(x.key)}" type="number"
           step="1" value="${x.default}"> ${esc(x.unit)}</td>
      <td>${x.default}</td><td>${x.minimum} … ${x.maximum}</td></tr>`).join("");
  $("#pg-error").textContent = "";
  $("#pg-result").dataset.state = "idle";
}

async function run(event) {
  event.preventDefault();
  const id = $("#pg-scenario").value;
  const settings = {};
  for (const input of document.querySelectorAll("#pg-settings input")) {
    if (input.validity.badInput) {   // the browser keeps what was typed to itself: say so rather than run the default
      $("#pg-error").textContent = `${input.dataset.key}: not a number`;
      return;
    }
    if (input.value.trim() === "") continue;
    const value = Number(input.value);
    settings[input.dataset.key] = Number.isFinite(value) ? value : input.value;   // the server names what is wrong
  }
  const result = $("#pg-result");
  result.dataset.state = "running";
  $("#pg-error").textContent = "";
  $("#pg-run").disabled = true;
  const started = performance.now();
  try {
    const out = await call("POST", "/playground/run", { scenario: id, settings });
    $("#pg-winner").textContent = out.winner;
    $("#pg-winner").className = `winner-${out.winner}`;
    $("#pg-verdict").textContent = out.first_to_give_up;
    $("#pg-outcome").textContent = out.outcomes.map((o) => `${o.operation}() ${o.ok ? "returned" : `raised ${o.error_type}`}`
      + ` after ${(o.elapsed_ms / 1000).toFixed(3)} s`).join("; ")
      + ` — ${(out.simulated_ms / 1000).toFixed(1)} s of Kafka time in ${out.wall_ms.toFixed(0)} ms on the server`;
    $("#pg-timeline").innerHTML = out.svg;   // drawn by the server from the run's trace; labels escaped there
    $("#pg-contracts").innerHTML = out.contracts.map((c) => `<li>${esc(c.status)}: ${esc(c.name)} ${c.detail ? `— ${esc(c.detail)}` : ""}</li>`).join("");
    result.dataset.drawnMs = String(Math.round(performance.now() - started));
    result.dataset.state = "done";
  } catch (err) {
    $("#pg-error").textContent = err.message;
    result.dataset.state = "error";
  } finally {
    $("#pg-run").disabled = false;
  }
}

async function main() {
  try {
    const doc = await call("GET", "/playground/scenarios");
    scenarios = Object.fromEntries(doc.scenarios.map((s) => [s.id, s]));
    $("#pg-scenario").innerHTML = doc.scenarios.map((s) => `<option value="${esc(s.id)}">${esc(s.id)} — ${esc(s.family)}</option>`).join("");
    $("#pg-scenario").addEventListener("change", () => showScenario($("#pg-scenario").value));
    $("#pg-form").addEventListener("submit", run);
    $("#pg-reset").addEventListener("click", () => showScenario($("#pg-scenario").value));
    $("#console-link").href = "/console" + location.hash;
    showScenario(doc.scenarios[0].id);
  } catch (err) {
    $("#pg-error").textContent = err.message;
    $("#pg-run").disabled = true;
  }
}

main();
