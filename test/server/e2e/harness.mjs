// Shared pieces of izwi-server's end-to-end tests: start the real binary on
// 127.0.0.1 with the random-weight Qwen3 checkpoint, talk to it over raw
// HTTP, parse its SSE streams and Prometheus text.
//
// run.mjs (the CTest entry) sets the environment:
//   IZWI_SERVER        the izwi-server binary
//   IZWI_E2E_MODEL     the checkpoint directory (made by run.mjs)
//   IZWI_NODE_MODULES  test/reference/node_modules (the openai SDK)
//   IZWI_PROMTOOL      promtool, when installed
import {spawn, spawnSync} from "node:child_process";
import {createRequire} from "node:module";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import {pathToFileURL} from "node:url";
import {setTimeout as sleep} from "node:timers/promises";

export const SERVER = process.env.IZWI_SERVER;
export const MODEL_DIR = process.env.IZWI_E2E_MODEL;
export const NODE_MODULES = process.env.IZWI_NODE_MODULES;
export const PROMTOOL = process.env.IZWI_PROMTOOL || "";
export const HOST = "127.0.0.1";

if (!SERVER || !MODEL_DIR || !NODE_MODULES)
  throw new Error("run the e2e tests through run.mjs (IZWI_SERVER, IZWI_E2E_MODEL, IZWI_NODE_MODULES unset)");

/// Resolves null after `ms`, without keeping the process alive (for Promise.race).
export const within = (ms) => sleep(ms, null, {ref: false});

/// The official SDK, resolved from the reference node_modules.
export async function loadOpenAI() {
  const require = createRequire(path.join(NODE_MODULES, "noop.js"));
  return import(pathToFileURL(require.resolve("openai")).href);
}

let helpText;
/// `izwi-server --help`, read once: tests use the flags it names.
export function serverHelp() {
  if (helpText === undefined) {
    const r = spawnSync(SERVER, ["--help"], {encoding: "utf8", timeout: 20000});
    helpText = `${r.stdout ?? ""}${r.stderr ?? ""}`;
  }
  return helpText;
}
/// The first of `names` that --help mentions, or undefined.
export function flag(...names) {
  const help = serverHelp();
  return names.find((n) => new RegExp(`${n.replace(/[-]/g, "\\-")}(?![\\w-])`).test(help));
}

/// A port nothing listens on right now (the kernel's choice, then released).
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on("error", reject);
    s.listen(0, HOST, () => {
      const {port} = s.address();
      s.close(() => resolve(port));
    });
  });
}

/// Starts izwi-server with the test checkpoint and waits for /health 200.
/// Returns {port, baseURL, url(p), proc, log(), exit (a promise of {code, signal}), stop()}.
/// With waitReady false it returns as soon as /health answers at all (the
/// model may still be loading); server.firstHealth holds that answer's status.
/// `env` joins the server's environment (IZWI_OPENCL_CACHE, OCL_ICD_VENDORS, ...).
export async function startServer({args = [], apiKey, threads = 1, readyTimeoutMs = 120000, waitReady = true,
                                   env = {}} = {}) {
  let lastError;
  for (let attempt = 0; attempt < 3; ++attempt) {
    const port = await freePort();
    const argv = ["--model", MODEL_DIR, "--host", HOST, "--port", String(port), ...args];
    if (threads && flag("--threads")) argv.push("--threads", String(threads));
    // The tiny model needs little KV memory: 32 MB is ~65k tokens of it.
    if (flag("--kv-cache-mb") && !args.includes("--kv-cache-mb")) argv.push("--kv-cache-mb", "32");
    if (apiKey) argv.push("--api-key", apiKey);
    const proc = spawn(SERVER, argv, {stdio: ["ignore", "pipe", "pipe"], env: {...process.env, ...env}});
    let log = "";
    const keep = (d) => {
      log += d.toString();
      if (log.length > 1 << 20) log = log.slice(-(1 << 19));
    };
    proc.stdout.on("data", keep);
    proc.stderr.on("data", keep);
    let exited = null;
    const exit = new Promise((resolve) =>
      proc.on("exit", (code, signal) => {
        exited = {code, signal};
        resolve(exited);
      }));
    const server = {
      port, proc, exit, argv,
      baseURL: `http://${HOST}:${port}/v1`,
      url: (p) => `http://${HOST}:${port}${p}`,
      log: () => log,
      exited: () => exited,
      async stop(signal = "SIGTERM", timeoutMs = 30000) {
        if (exited) return exited;
        proc.kill(signal);
        const r = await Promise.race([exit, within(timeoutMs)]);
        if (r) return r;
        proc.kill("SIGKILL");
        return exit;
      },
    };
    const deadline = Date.now() + readyTimeoutMs;
    while (Date.now() < deadline && !exited) {
      try {
        const r = await request(server, {path: "/health", timeoutMs: 2000});
        server.firstHealth ??= r.status;
        if (r.status === 200 || !waitReady) return server;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    if (!exited) await server.stop("SIGKILL");
    lastError = new Error(`izwi-server ${argv.join(" ")} did not become healthy ` +
                          `(exit ${JSON.stringify(exited)}); its output:\n${log.slice(-4000)}`);
    // A port taken between freePort() and bind: try another.
    if (!/address already in use|EADDRINUSE/i.test(log)) break;
  }
  throw lastError;
}

/// One HTTP request on its own connection. body: string | Buffer | object (sent as JSON).
/// Resolves {status, headers, body (Buffer), text, json (or undefined)}.
export function request(server, {method = "GET", path: p, headers = {}, body, timeoutMs = 60000, agent = false} = {}) {
  return new Promise((resolve, reject) => {
    let payload = body;
    const h = {...headers};
    if (payload !== undefined && !Buffer.isBuffer(payload) && typeof payload !== "string") {
      payload = JSON.stringify(payload);
      h["content-type"] ??= "application/json";
    }
    if (payload !== undefined) h["content-length"] = Buffer.byteLength(payload);
    const req = http.request({host: HOST, port: server.port, method, path: p, headers: h, agent}, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        const buf = Buffer.concat(chunks);
        const text = buf.toString("utf8");
        let json;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({status: res.statusCode, headers: res.headers, body: buf, text, json});
      });
      res.on("error", reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${p}: no answer within ${timeoutMs} ms`)));
    req.on("error", reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

export function authHeader(key) {
  return key ? {authorization: `Bearer ${key}`} : {};
}

/// Sends raw bytes on a fresh TCP connection and collects whatever comes back
/// until the server closes it (or timeoutMs). Resolves {data (Buffer), status,
/// closedBy: "server" | "timeout" | "error", error, elapsedMs}.
export function rawExchange(server, bytes, {timeoutMs = 10000, halfClose = false} = {}) {
  return new Promise((resolve) => {
    const start = Date.now();
    const sock = net.connect(server.port, HOST);
    const chunks = [];
    let done = false;
    const finish = (closedBy, error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      const data = Buffer.concat(chunks);
      // The first final status: interim 1xx responses (a 100 the server sends
      // a half-closed client) come before it.
      let m = /^HTTP\/1\.[01] (\d{3})/.exec(data.toString("latin1"));
      for (const at of data.toString("latin1").matchAll(/(?:^|\r\n\r\n)HTTP\/1\.[01] (\d{3}) /g))
        if (Number(at[1]) >= 200) {
          m = at;
          break;
        }
      resolve({data, status: m ? Number(m[1]) : undefined, closedBy, error, elapsedMs: Date.now() - start});
    };
    const timer = setTimeout(() => finish("timeout"), timeoutMs);
    sock.on("data", (c) => chunks.push(c));
    sock.on("end", () => finish("server"));
    sock.on("close", () => finish("server"));
    sock.on("error", (e) => finish("error", e));
    sock.on("connect", () => {
      for (const b of [].concat(bytes)) sock.write(b);
      if (halfClose) sock.end();
    });
  });
}

/// Parses an SSE body into its events' data fields (strings), checking the
/// framing: every event is one or more `data: ` lines ended by a blank line.
export function parseSse(text) {
  const events = [];
  const problems = [];
  if (!text.endsWith("\n\n")) problems.push("body does not end with a blank line");
  for (const block of text.split("\n\n")) {
    if (block === "") continue;
    const lines = block.split("\n").filter((l) => !l.startsWith(":"));  // comments (keep-alives) allowed
    if (lines.length === 0) continue;
    const data = [];
    for (const line of lines) {
      if (line.startsWith("data: ")) data.push(line.slice(6));
      else if (line.startsWith("data:")) data.push(line.slice(5));
      else problems.push(`unexpected SSE line ${JSON.stringify(line.slice(0, 200))}`);
    }
    events.push(data.join("\n"));
  }
  return {events, problems};
}

/// Checks a chat (object "chat.completion.chunk") or completion ("text_completion")
/// stream's events. Returns {chunks, text, finishReason, usage, problems}.
export function checkStream(text, {kind = "chat", includeUsage = false} = {}) {
  const {events, problems} = parseSse(text);
  const chunks = [];
  let out = "";
  let finishReason = null;
  let finishCount = 0;
  let usage = null;
  if (events.length === 0 || events[events.length - 1] !== "[DONE]") problems.push("stream does not end with data: [DONE]");
  events.forEach((e, i) => {
    if (e === "[DONE]") {
      if (i !== events.length - 1) problems.push(`[DONE] at event ${i} of ${events.length}`);
      return;
    }
    let c;
    try {
      c = JSON.parse(e);
    } catch {
      problems.push(`event ${i} is not JSON: ${e.slice(0, 200)}`);
      return;
    }
    chunks.push(c);
    const object = kind === "chat" ? "chat.completion.chunk" : "text_completion";
    if (c.object !== object) problems.push(`event ${i}: object ${JSON.stringify(c.object)} != ${object}`);
    if (typeof c.id !== "string" || c.id === "") problems.push(`event ${i}: no id`);
    if (chunks.length > 1 && c.id !== chunks[0].id) problems.push(`event ${i}: id changes mid-stream`);
    if (!Number.isInteger(c.created)) problems.push(`event ${i}: created is not an integer`);
    if (typeof c.model !== "string") problems.push(`event ${i}: no model`);
    if (!Array.isArray(c.choices)) {
      problems.push(`event ${i}: choices is not an array`);
      return;
    }
    if (c.usage) {
      usage = c.usage;
      if (c.choices.length !== 0) problems.push(`event ${i}: the usage chunk has choices`);
    } else if (includeUsage && c.usage !== null) {
      // OpenAI: with include_usage, every other chunk carries "usage": null.
      problems.push(`event ${i}: no "usage": null before the usage chunk`);
    }
    for (const ch of c.choices) {
      if (ch.index !== 0) problems.push(`event ${i}: choice index ${ch.index}`);
      if (kind === "chat") {
        if (typeof ch.delta !== "object" || ch.delta === null) problems.push(`event ${i}: no delta`);
        else {
          if (ch.delta.role !== undefined && ch.delta.role !== "assistant")
            problems.push(`event ${i}: delta.role ${ch.delta.role}`);
          if (ch.delta.content != null) out += ch.delta.content;
        }
      } else if (typeof ch.text === "string") out += ch.text;
      else problems.push(`event ${i}: text is not a string`);
      if (ch.finish_reason != null) {
        finishReason = ch.finish_reason;
        ++finishCount;
      }
    }
  });
  if (finishCount !== 1) problems.push(`${finishCount} chunks carry a finish_reason (want exactly 1)`);
  if (kind === "chat" && chunks.length > 0 && chunks[0].choices?.[0]?.delta?.role !== "assistant")
    problems.push("the first chunk's delta has no role: assistant");
  if (includeUsage) {
    if (!usage) problems.push("stream_options.include_usage: no usage chunk");
    else if (chunks[chunks.length - 1].usage !== usage) problems.push("the usage chunk is not the last");
  }
  return {chunks, text: out, finishReason, usage, problems};
}

/// Streams one request over its own connection. Resolves {status, headers,
/// text, complete (the response ended normally), error}.
export function streamRequest(server, body, {headers = {}, agent = false, path: p = "/v1/chat/completions",
                                             onData, timeoutMs = 120000} = {}) {
  return new Promise((resolve) => {
    const payload = JSON.stringify(body);
    let settled = false;
    let res0;
    const chunks = [];
    const settle = (complete, error) => {
      if (settled) return;
      settled = true;
      resolve({status: res0?.statusCode, headers: res0?.headers, text: Buffer.concat(chunks).toString("utf8"),
               complete, error});
    };
    const req = http.request({host: HOST, port: server.port, method: "POST", path: p, agent,
                              headers: {"content-type": "application/json", "content-length": Buffer.byteLength(payload),
                                        ...headers}}, (res) => {
      res0 = res;
      res.on("data", (c) => {
        chunks.push(c);
        onData?.(Buffer.concat(chunks).toString("utf8"), req);
      });
      res.on("end", () => settle(true));
      res.on("aborted", () => settle(false, new Error("response aborted")));
      res.on("error", (e) => settle(false, e));
      res.on("close", () => settle(res.complete, res.complete ? undefined : new Error("connection closed mid-response")));
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`stream: no progress within ${timeoutMs} ms`)));
    req.on("error", (e) => settle(false, e));
    req.end(payload);
  });
}

/// Prometheus text → Map(name → [{labels, value}]).
export function parseMetrics(text) {
  const out = new Map();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    if (m[2]) for (const l of m[2].slice(1, -1).matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    if (!out.has(m[1])) out.set(m[1], []);
    out.get(m[1]).push({labels, value: Number(m[3])});
  }
  return out;
}

/// Sum of a metric's samples whose labels include `match`; undefined when absent.
export function metricValue(metrics, name, match = {}) {
  const samples = metrics.get(name);
  if (!samples) return undefined;
  let sum = 0;
  let found = false;
  for (const s of samples)
    if (Object.entries(match).every(([k, v]) => s.labels[k] === v)) {
      sum += s.value;
      found = true;
    }
  return found ? sum : undefined;
}

export async function getMetrics(server, headers = {}) {
  const r = await request(server, {path: "/metrics", headers});
  if (r.status !== 200) throw new Error(`/metrics answered ${r.status}: ${r.text.slice(0, 300)}`);
  return {text: r.text, metrics: parseMetrics(r.text)};
}

/// Polls /metrics until no request runs or waits and no KV block is in use.
/// Resolves the last {used, running, waiting, text}; `ok` says whether it got there.
export async function waitForIdleEngine(server, {timeoutMs = 15000, headers = {}} = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    const {text, metrics} = await getMetrics(server, headers);
    last = {
      used: metricValue(metrics, "izwi:kv_cache_blocks_used"),
      running: metricValue(metrics, "izwi:num_requests_running"),
      waiting: metricValue(metrics, "izwi:num_requests_waiting"),
      text,
    };
    last.ok = last.used === 0 && last.running === 0 && last.waiting === 0;
    if (last.ok || Date.now() > deadline) return last;
    await sleep(200);
  }
}

/// Checks OpenAI's error envelope; returns the error object.
export function checkErrorEnvelope(assert, r, status, what) {
  assert.equal(r.status, status, `${what}: status ${r.status}, body ${r.text.slice(0, 500)}`);
  assert.match(String(r.headers["content-type"]), /application\/json/, `${what}: content-type`);
  assert.ok(r.json && typeof r.json.error === "object" && r.json.error !== null, `${what}: no {"error": {...}} in ${r.text.slice(0, 500)}`);
  const e = r.json.error;
  assert.equal(typeof e.message, "string", `${what}: error.message`);
  assert.ok(e.message.length > 0, `${what}: empty error.message`);
  assert.equal(typeof e.type, "string", `${what}: error.type`);
  assert.ok("param" in e, `${what}: error.param missing (null when no field is at fault)`);
  assert.ok("code" in e, `${what}: error.code missing (may be null)`);
  return e;
}

/// The id the server lists for the checkpoint (the directory's name).
export const MODEL_ID = path.basename(MODEL_DIR);
