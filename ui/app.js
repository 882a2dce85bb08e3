// izwi playground: what every panel shares — the API key, requests with
// OpenAI's error envelope, Server-Sent Events, the model list and which
// panels it enables, the tabs. Panels (chat.js, speech.js, transcribe.js,
// server.js) register with Izwi.panel(...) and start once the page is ready.
"use strict";

const Izwi = (() => {
  const KEY_STORE = "izwi.apiKey";
  const ADMIN_KEY_STORE = "izwi.adminKey";
  const panels = [];
  let models = [];  // /v1/models "data", each with its "tasks"

  const $ = (id) => document.getElementById(id);

  /// An error a request ended with: the server's OpenAI envelope when it sent one.
  class ApiError extends Error {
    constructor(message, {status = 0, type = "", code = null, param = null} = {}) {
      super(message);
      this.status = status;
      this.type = type;
      this.code = code;
      this.param = param;
    }
  }

  const storage = {
    get(name) {
      try {
        return localStorage.getItem(name) || "";
      } catch {
        return "";
      }
    },
    set(name, value) {
      try {
        if (value) localStorage.setItem(name, value);
        else localStorage.removeItem(name);
      } catch {
        // Storage disabled (private mode): the key lives as long as the page.
      }
    },
  };
  let apiKey = storage.get(KEY_STORE);
  let adminKey = storage.get(ADMIN_KEY_STORE);

  /// The ApiError of a response that is not ok: OpenAI's {"error": {message, type, code, param}}.
  async function errorOf(res) {
    let text = "";
    try {
      text = await res.text();
    } catch {
      // the body could not be read; the status says enough
    }
    try {
      const e = JSON.parse(text).error;
      if (e && typeof e.message === "string")
        return new ApiError(e.message, {status: res.status, type: e.type || "", code: e.code ?? null, param: e.param ?? null});
    } catch {
      // not JSON
    }
    return new ApiError(text.trim().slice(0, 300) || `HTTP ${res.status} ${res.statusText}`, {status: res.status});
  }

  /// fetch() against this server with the API key (or the admin key); throws ApiError unless 2xx.
  async function request(path, {method = "GET", json, body, headers = {}, signal, admin = false} = {}) {
    const h = {...headers};
    const key = admin ? adminKey : apiKey;
    if (key) h.authorization = `Bearer ${key}`;
    if (json !== undefined) {
      h["content-type"] = "application/json";
      body = JSON.stringify(json);
    }
    let res;
    try {
      res = await fetch(path, {method, headers: h, body, signal, cache: "no-store"});
    } catch (e) {
      if (e.name === "AbortError") throw e;
      throw new ApiError(`The server cannot be reached (${e.message}).`);
    }
    if (!res.ok) throw await errorOf(res);
    return res;
  }

  /// Reads a text/event-stream body; calls onEvent(parsed JSON) for each
  /// "data:" event ("[DONE]" ends it). An {"error": ...} event — how a
  /// stream reports a failure after its head was sent — is thrown as ApiError.
  async function readEvents(res, onEvent) {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const {value, done} = await reader.read();
      buffer += decoder.decode(value || new Uint8Array(), {stream: !done});
      let end;
      while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + (buffer[end] === "\r" ? 4 : 2));
        const data = block.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, ""));
        if (!data.length) continue;  // a comment (": ping")
        const text = data.join("\n");
        if (text === "[DONE]") return;
        const event = JSON.parse(text);
        if (event && event.error) {
          const e = event.error;
          throw new ApiError(e.message || "The stream failed.", {type: e.type || "", code: e.code ?? null});
        }
        onEvent(event);
      }
      if (done) return;
    }
  }

  /// Shows `error` in a panel's alert element; null hides it.
  function showError(element, error) {
    if (!error) {
      element.hidden = true;
      element.textContent = "";
      return;
    }
    if (error.name === "AbortError") return;
    const extra = [];
    if (error.status) extra.push(`HTTP ${error.status}`);
    if (error.type) extra.push(error.type);
    if (error.code) extra.push(error.code);
    element.textContent = error.message + (extra.length ? ` (${extra.join(", ")})` : "");
    element.hidden = false;
  }

  const modelsFor = (tasks) => models.filter((m) => (m.tasks || []).some((t) => tasks.includes(t)));

  /// Fills a <select> with the models serving one of `tasks`, keeping the choice when it is still there.
  function fillModelSelect(select, tasks) {
    const previous = select.value;
    select.replaceChildren(...modelsFor(tasks).map((m) => new Option(m.id, m.id)));
    if ([...select.options].some((o) => o.value === previous)) select.value = previous;
  }

  /// Re-reads /v1/models; enables each panel whose tasks a loaded model serves.
  async function refreshModels() {
    const status = $("connection");
    try {
      const res = await request("/v1/models");
      models = (await res.json()).data || [];
      status.textContent = `Connected: ${models.length} model${models.length === 1 ? "" : "s"} loaded`;
      status.dataset.state = "ok";
      showError($("global-error"), null);
    } catch (e) {
      models = [];
      status.textContent = "Not connected";
      status.dataset.state = "error";
      showError($("global-error"), e);
    }
    for (const section of document.querySelectorAll("[role=tabpanel][data-tasks]")) {
      const tasks = section.dataset.tasks.split(" ");
      const available = modelsFor(tasks).length > 0;
      section.querySelector(".unavailable").hidden = available;
      section.dataset.available = String(available);
      for (const form of section.querySelectorAll("form")) form.inert = !available;  // nothing to send to
      $(section.getAttribute("aria-labelledby")).classList.toggle("off", !available);
    }
    for (const p of panels) p.modelsChanged?.(models);
  }

  // --- tabs (WAI-ARIA tabs pattern: arrows, Home, End) ------------------------
  function selectTab(tab, focus = true) {
    for (const t of document.querySelectorAll("[role=tab]")) {
      const on = t === tab;
      t.setAttribute("aria-selected", String(on));
      t.tabIndex = on ? 0 : -1;
      $(t.getAttribute("aria-controls")).hidden = !on;
    }
    if (focus) tab.focus();
    const name = tab.id.replace(/^tab-/, "");
    if (location.hash !== `#${name}`) history.replaceState(null, "", `#${name}`);
    for (const p of panels) p.shown?.(name === p.name);
  }

  function setUpTabs() {
    const tabs = [...document.querySelectorAll("[role=tab]")];
    for (const tab of tabs) {
      tab.addEventListener("click", () => selectTab(tab));
      tab.addEventListener("keydown", (e) => {
        const i = tabs.indexOf(tab);
        const to = {ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1}[e.key];
        if (to === undefined) return;
        e.preventDefault();
        selectTab(tabs[(to + tabs.length) % tabs.length]);
      });
    }
    const initial = $(`tab-${location.hash.slice(1)}`);
    selectTab(initial && initial.getAttribute("role") === "tab" ? initial : tabs[0], false);
  }

  function setUpKeys() {
    $("api-key").value = apiKey;
    $("key-form").addEventListener("submit", (e) => {
      e.preventDefault();
      apiKey = $("api-key").value.trim();
      storage.set(KEY_STORE, apiKey);
      refreshModels();
    });
    $("api-key-forget").addEventListener("click", () => {
      apiKey = "";
      $("api-key").value = "";
      storage.set(KEY_STORE, "");
      refreshModels();
    });
    $("admin-key").value = adminKey;
    $("admin-key-form").addEventListener("submit", (e) => {
      e.preventDefault();
      adminKey = $("admin-key").value.trim();
      storage.set(ADMIN_KEY_STORE, adminKey);
      for (const p of panels) p.adminKeyChanged?.();
    });
  }

  /// "1.23 s" / "456 ms".
  const formatSeconds = (s) => (s >= 1 ? `${s.toFixed(2)} s` : `${Math.round(s * 1000)} ms`);

  document.addEventListener("DOMContentLoaded", () => {
    setUpKeys();
    for (const p of panels) p.init?.();
    setUpTabs();
    refreshModels().then(() => {
      document.body.dataset.ready = "true";
    });
  });

  return {
    $, ApiError, request, readEvents, showError, fillModelSelect, refreshModels, formatSeconds,
    panel: (p) => panels.push(p),
    models: () => models,
  };
})();
