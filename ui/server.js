// Server panel: the models the server knows (GET /v1/admin/models with the
// admin key; without it, the loaded ones from /v1/models), load and unload
// through the admin routes, and a few live figures from /metrics, read every
// two seconds while the panel is shown.
"use strict";

Izwi.panel((() => {
  const {$} = Izwi;
  let timer = null;
  let previousTokens = null;  // {total, at} of the last /metrics read

  function cell(text) {
    const td = document.createElement("td");
    td.textContent = text;
    return td;
  }

  async function act(id, action, button) {
    Izwi.showError($("server-error"), null);
    button.disabled = true;
    button.textContent = action === "load" ? "Loading…" : "Unloading…";
    try {
      await Izwi.request(`/v1/admin/models/${encodeURIComponent(id)}/${action}`, {method: "POST", admin: true});
    } catch (e) {
      Izwi.showError($("server-error"), e);
    }
    await refresh();
    await Izwi.refreshModels();  // the other panels' pickers follow
  }

  function row(entry, admin) {
    const tr = document.createElement("tr");
    tr.dataset.model = entry.id;
    tr.dataset.state = entry.state;
    const name = document.createElement("th");
    name.scope = "row";
    name.textContent = entry.id + (entry.untrained ? " (random weights)" : "");
    const s = entry.status;
    tr.append(name, cell(entry.state + (entry.error ? `: ${entry.error}` : "")), cell((entry.tasks || []).join(", ")),
              cell(s ? `${s.num_running} / ${s.num_pending}` : "–"),
              cell(s ? `${s.num_kv_blocks_used} of ${s.num_kv_blocks}` : "–"));
    const actions = document.createElement("td");
    if (admin && ["available", "loaded", "failed"].includes(entry.state)) {
      const button = document.createElement("button");
      button.type = "button";
      const action = entry.state === "loaded" ? "unload" : "load";
      button.textContent = action === "load" ? "Load" : "Unload";
      button.dataset.action = action;
      button.setAttribute("aria-label", `${button.textContent} ${entry.id}`);
      button.addEventListener("click", () => act(entry.id, action, button));
      actions.append(button);
    }
    tr.append(actions);
    return tr;
  }

  async function refresh() {
    const body = $("server-models").tBodies[0];
    let entries, admin = false;
    try {
      const res = await Izwi.request("/v1/admin/models", {admin: true});
      entries = (await res.json()).data || [];
      admin = true;
    } catch (e) {
      // No admin key (or a wrong one): say why, list what /v1/models shows.
      Izwi.showError($("server-error"), e);
      entries = Izwi.models().map((m) => ({...m, state: "loaded"}));
    }
    if (admin) Izwi.showError($("server-error"), null);
    body.replaceChildren(...entries.map((e) => row(e, admin)));
    $("server-models").dataset.admin = String(admin);
  }

  /// Sums of each metric over its series (every model's engine), from Prometheus text.
  function parseMetrics(text) {
    const sums = {}, counts = {};
    for (const line of text.split("\n")) {
      const m = /^([A-Za-z_:][\w:]*)(?:\{[^}]*\})?\s+(\S+)/.exec(line);
      if (!m) continue;
      const v = Number(m[2]);
      if (!Number.isFinite(v)) continue;
      sums[m[1]] = (sums[m[1]] || 0) + v;
      counts[m[1]] = (counts[m[1]] || 0) + 1;
    }
    return {sums, counts};
  }

  async function readMetrics() {
    try {
      const res = await Izwi.request("/metrics");
      const {sums, counts} = parseMetrics(await res.text());
      const show = (id, v) => ($(id).textContent = v);
      show("metric-running", sums["izwi:num_requests_running"] ?? "–");
      show("metric-waiting", sums["izwi:num_requests_waiting"] ?? "–");
      const kv = counts["izwi:kv_cache_usage_perc"] ? sums["izwi:kv_cache_usage_perc"] / counts["izwi:kv_cache_usage_perc"] : null;
      show("metric-kv", kv === null ? "–" : `${(kv * 100).toFixed(1)} %`);
      const total = sums["izwi:generation_tokens_total"];
      const now = performance.now();
      if (total !== undefined && previousTokens && now > previousTokens.at)
        show("metric-tps", Math.max(0, (total - previousTokens.total) / ((now - previousTokens.at) / 1000)).toFixed(1));
      previousTokens = total === undefined ? null : {total, at: now};
      show("metric-http", sums.izwi_http_requests_total ?? "–");
      $("server-metrics").dataset.updated = String(Date.now());
    } catch (e) {
      Izwi.showError($("server-error"), e);
    }
  }

  return {
    name: "server",
    init() {
      $("server-refresh").addEventListener("click", () => {
        refresh();
        readMetrics();
      });
    },
    adminKeyChanged() {
      refresh();
    },
    shown(visible) {
      clearInterval(timer);
      timer = null;
      if (!visible) return;
      refresh();
      readMetrics();
      timer = setInterval(readMetrics, 2000);
    },
  };
})());
