// izwi-server soak (issue 11, "Tests"): 32 clients on loopback for a bounded
// time (IZWI_SOAK_SECONDS, default 45) mixing plain and streamed requests,
// aborts mid-stream, clients gone before the first token, pipelining (also
// followed by a hang-up), half-closed clients and bad inputs, while an admin
// unloads the model and loads it again every IZWI_SOAK_RELOAD_SECONDS (20).
//
// It asserts: the server never exits; every request that reached it and whose
// client waited was answered (no connection closed without a response, no
// timeout); no 5xx; every accepted stream is complete and well formed; at the
// end no request runs or waits and no KV block is in use; the resident set
// size (sampled from /proc every 2 s) does not grow in the second half; and
// SIGTERM then ends the server with exit 0. It prints its figures (see
// docs/server.md, "Soak test"). Everything it starts stops by itself.
import {after, before, test} from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import {setTimeout as sleep} from "node:timers/promises";

import {
  HOST, MODEL_DIR, MODEL_ID, authHeader, checkStream, getMetrics, metricValue, rawExchange, request, startServer,
  streamRequest, waitForIdleEngine,
} from "./harness.mjs";

const SECONDS = Number(process.env.IZWI_SOAK_SECONDS || 45);
const RELOAD_SECONDS = Number(process.env.IZWI_SOAK_RELOAD_SECONDS || 20);
const CLIENTS = Number(process.env.IZWI_SOAK_CLIENTS || 32);
const KEY = "sk-izwi-soak";
const ADMIN_KEY = "sk-izwi-soak-admin";
const auth = authHeader(KEY);
const admin = authHeader(ADMIN_KEY);
const REQUEST_TIMEOUT_MS = 60000;

let server;
before(async () => {
  server = await startServer({
    apiKey: KEY, threads: 1,
    args: ["--admin-api-key", ADMIN_KEY, "--models-dir", path.dirname(MODEL_DIR), "--no-access-log"],
  });
});
after(async () => {
  if (server && !server.exited()) await server.stop("SIGKILL");
});


/// A deterministic generator (mulberry32), so a failing run can be repeated.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const stats = {
  requests: 0, byKind: {}, statuses: {}, accepted: 0, completionTokens: 0, streamsComplete: 0, aborted: 0,
  gone: 0, unanswered: [], serverErrors: [], malformed: [], reloads: 0, reloadFailures: [],
};
const count = (map, key) => (map[key] = (map[key] ?? 0) + 1);

function chatBody(r, {stream = false, maxTokens} = {}) {
  return {
    model: MODEL_ID, stream, max_tokens: maxTokens ?? 1 + Math.floor(r() * 24),
    temperature: r() < 0.5 ? 0 : 0.8, seed: Math.floor(r() * 1000),
    messages: [{role: "user", content: `Soak ${Math.floor(r() * 1e6)}: say something.`}],
  };
}

// While the model is unloaded or loading, or the queue is full, a request is
// refused: 404 model_not_found, 503 (loading), 429. Those are answers too.
const REFUSALS = new Set([404, 429, 503]);

function record(kind, status, detail = "") {
  count(stats.statuses, String(status));
  if (status >= 500 && status !== 503) stats.serverErrors.push(`${kind}: ${status} ${detail.slice(0, 200)}`);
}

function unanswered(kind, why) {
  stats.unanswered.push(`${kind}: ${why}`);
}

async function plainChat(r) {
  const res = await request(server, {method: "POST", path: "/v1/chat/completions", headers: auth, body: chatBody(r),
                                     timeoutMs: REQUEST_TIMEOUT_MS}).catch((e) => ({error: e}));
  if (res.error) return unanswered("plain", String(res.error));
  record("plain", res.status, res.text);
  if (res.status === 200) {
    ++stats.accepted;
    const choice = res.json?.choices?.[0];
    if (!choice || typeof choice.message?.content !== "string" || !choice.finish_reason)
      stats.malformed.push(`plain: ${res.text.slice(0, 200)}`);
    else stats.completionTokens += res.json.usage?.completion_tokens ?? 0;
  } else if (!REFUSALS.has(res.status)) {
    stats.malformed.push(`plain: unexpected ${res.status} ${res.text.slice(0, 200)}`);
  }
}

async function streamedChat(r, {abortAfterEvents} = {}) {
  const kind = abortAfterEvents ? "abort" : "stream";
  const res = await streamRequest(server, chatBody(r, {stream: true, maxTokens: abortAfterEvents ? 400 : undefined}), {
    headers: auth, timeoutMs: REQUEST_TIMEOUT_MS,
    onData: abortAfterEvents && ((text, req) => {
      if ((text.match(/\n\n/g) || []).length >= abortAfterEvents) req.destroy();
    }),
  });
  if (res.status === undefined) return unanswered(kind, String(res.error));
  record(kind, res.status, res.text);
  if (res.status !== 200) {
    if (!REFUSALS.has(res.status)) stats.malformed.push(`${kind}: unexpected ${res.status} ${res.text.slice(0, 200)}`);
    return;
  }
  ++stats.accepted;
  if (abortAfterEvents && !res.complete) {
    ++stats.aborted;
    return;
  }
  if (!res.complete) return unanswered(kind, `stream cut: ${String(res.error)}`);
  const s = checkStream(res.text);
  // An unload past its grace aborts running streams: they still end well formed.
  if (s.problems.length) stats.malformed.push(`${kind}: ${s.problems.join("; ")}`);
  else ++stats.streamsComplete;
  stats.completionTokens += s.chunks.length;
}

/// Raw bytes; `expect` responses are wanted back unless `leaveAfterMs`.
async function raw(kind, bytes, {expect = 1, leaveAfterMs, halfClose = false} = {}) {
  const res = await rawExchange(server, bytes, {timeoutMs: leaveAfterMs ?? REQUEST_TIMEOUT_MS, halfClose});
  if (leaveAfterMs !== undefined) {
    ++stats.gone;
    return;
  }
  const text = res.data.toString("latin1");
  const statuses = [...text.matchAll(/HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1])).filter((s) => s >= 200);
  if (res.closedBy === "timeout") return unanswered(kind, `no close within ${REQUEST_TIMEOUT_MS} ms`);
  if (statuses.length < expect) return unanswered(kind, `${statuses.length} of ${expect} responses: ${text.slice(0, 200)}`);
  for (const s of statuses) record(kind, s, text);
  return statuses;
}

const httpHead = (method, target, extra = "") =>
  `${method} ${target} HTTP/1.1\r\nHost: ${HOST}\r\nAuthorization: Bearer ${KEY}\r\n${extra}`;
const postBytes = (body, extra = "") => {
  const payload = JSON.stringify(body);
  return httpHead("POST", "/v1/chat/completions",
                  `Content-Type: application/json\r\n${extra}Content-Length: ${Buffer.byteLength(payload)}\r\n\r\n`) +
         payload;
};

async function badInput(r) {
  const cases = [
    () => httpHead("POST", "/v1/chat/completions", "Content-Type: application/json\r\nContent-Length: 9\r\n\r\n") + "{\"model\":",
    () => httpHead("POST", "/v1/chat/completions", "Transfer-Encoding: gzip\r\n\r\n") + httpHead("GET", "/v1/models") + "\r\n",
    () => `GET /v1/models HTTP/1.1\r\nAuthorization: Bearer ${KEY}\r\n\r\n`,  // no Host
    () => postBytes({model: MODEL_ID, messages: [{role: "user", content: "x"}], max_tokens: 10 ** 9}),
    () => postBytes({model: MODEL_ID, messages: "not a list"}),
    () => httpHead("POST", "/v1/chat/completions", "Transfer-Encoding: chunked\r\n\r\n") + "5;" + "e".repeat(3000) + "\r\n",
    () => `BREW${Math.floor(r() * 100)} /v1/models HTTP/1.1\r\nHost: x\r\n\r\n`,
    () => "NOT HTTP AT ALL\r\n\r\n",
  ];
  const i = Math.floor(r() * cases.length);
  const statuses = await raw("bad", cases[i](), {expect: 1});
  // Case 3 names the model before its length is checked: while the model is
  // unloaded or loading it is refused as any request is (404, 503).
  if (statuses && !(statuses[0] >= 400 && statuses[0] < 500) && !(i === 3 && REFUSALS.has(statuses[0])))
    stats.malformed.push(`bad input ${i}: answered ${statuses[0]}`);
  if (statuses && statuses.length > 1 && i === 1) stats.malformed.push("a smuggled body was run as a request");
}

async function oneAction(r) {
  const x = r();
  ++stats.requests;
  if (x < 0.25) return count(stats.byKind, "plain"), plainChat(r);
  if (x < 0.50) return count(stats.byKind, "stream"), streamedChat(r);
  if (x < 0.60) return count(stats.byKind, "abort"), streamedChat(r, {abortAfterEvents: 2 + Math.floor(r() * 4)});
  if (x < 0.67) {
    count(stats.byKind, "gone");
    return raw("gone", postBytes(chatBody(r, {maxTokens: 400})), {leaveAfterMs: 5 + Math.floor(r() * 40)});
  }
  if (x < 0.75) {
    count(stats.byKind, "pipelined");
    return raw("pipelined", httpHead("GET", "/v1/models") + "\r\n" + postBytes(chatBody(r)) +
                            httpHead("GET", "/health", "Connection: close\r\n") + "\r\n", {expect: 3});
  }
  if (x < 0.80) {
    count(stats.byKind, "pipelined-gone");
    return raw("pipelined-gone", postBytes(chatBody(r, {maxTokens: 400})) + httpHead("GET", "/v1/models") + "\r\n",
               {leaveAfterMs: 20 + Math.floor(r() * 60)});
  }
  if (x < 0.85) {
    count(stats.byKind, "half-closed");
    return raw("half-closed", postBytes(chatBody(r), "Connection: close\r\n"), {expect: 1, halfClose: true});
  }
  count(stats.byKind, "bad");
  return badInput(r);
}

function rssKiB(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) : undefined;
}

async function adminCycle(deadline) {
  // Unload and load again until shortly before the end, leaving the last
  // stretch of load to the final model instance (whose blocks are checked).
  while (Date.now() + RELOAD_SECONDS * 1000 < deadline - 15000) {
    await sleep(RELOAD_SECONDS * 1000);
    const u = await request(server, {method: "POST", path: `/v1/admin/models/${MODEL_ID}/unload`, headers: admin});
    if (u.status !== 200) stats.reloadFailures.push(`unload: ${u.status} ${u.text.slice(0, 200)}`);
    await sleep(500);
    const l = await request(server, {method: "POST", path: `/v1/admin/models/${MODEL_ID}/load`, headers: admin});
    if (l.status !== 200) stats.reloadFailures.push(`load: ${l.status} ${l.text.slice(0, 200)}`);
    else ++stats.reloads;
  }
}

test(`soak: ${CLIENTS} clients for ${SECONDS} s with unloads and loads; no crash, no leak, all answered`,
     {timeout: (SECONDS + 240) * 1000}, async () => {
  const pid = server.proc.pid;
  const start = Date.now();
  const deadline = start + SECONDS * 1000;
  const rss = [];
  const sampler = (async () => {
    while (Date.now() < deadline && !server.exited()) {
      rss.push({t: (Date.now() - start) / 1000, kib: rssKiB(pid)});
      await sleep(2000);
    }
  })();
  const clients = [];
  for (let c = 0; c < CLIENTS; ++c) {
    clients.push((async () => {
      const r = rng(1234 + c);
      while (Date.now() < deadline && !server.exited()) await oneAction(r);
    })());
  }
  await Promise.all([...clients, adminCycle(deadline), sampler]);
  const elapsed = (Date.now() - start) / 1000;

  assert.equal(server.exited(), null, `izwi-server exited during the soak; output:\n${server.log().slice(-3000)}`);
  const idle = await waitForIdleEngine(server, {timeoutMs: 30000});
  const health = await request(server, {path: "/health"});
  const metrics = (await getMetrics(server)).metrics;
  const exceptions = metricValue(metrics, "izwi_http_handler_exceptions_total");
  rss.push({t: (Date.now() - start) / 1000, kib: rssKiB(pid)});

  const half = rss.filter((s) => s.t <= elapsed / 2);
  const late = rss.filter((s) => s.t > elapsed / 2);
  const maxOf = (xs) => Math.max(...xs.map((s) => s.kib));
  const figures = {
    seconds: Math.round(elapsed), clients: CLIENTS, requests: stats.requests,
    requests_per_second: Math.round(stats.requests / elapsed), kinds: stats.byKind, statuses: stats.statuses,
    accepted: stats.accepted, streams_complete: stats.streamsComplete, aborted_by_client: stats.aborted,
    gone_before_answer: stats.gone, completion_tokens: stats.completionTokens, reloads: stats.reloads,
    unanswered: stats.unanswered.length, server_errors: stats.serverErrors.length, malformed: stats.malformed.length,
    handler_exceptions: exceptions, kv_blocks_used_at_end: idle.used, running_at_end: idle.running,
    waiting_at_end: idle.waiting,
    rss_mib: {first: +(rss[0].kib / 1024).toFixed(1), max_first_half: +(maxOf(half) / 1024).toFixed(1),
              max_second_half: +(maxOf(late) / 1024).toFixed(1), last: +(rss.at(-1).kib / 1024).toFixed(1),
              samples: rss.length,
              every_10s: rss.filter((_, k) => k % 5 === 0).map((x) => +(x.kib / 1024).toFixed(1))},
  };
  console.log(`soak figures: ${JSON.stringify(figures)}`);

  assert.deepEqual(stats.unanswered.slice(0, 20), [], "requests left without an answer");
  assert.deepEqual(stats.serverErrors.slice(0, 20), [], "5xx answers");
  assert.deepEqual(stats.malformed.slice(0, 20), [], "malformed or unexpected answers");
  assert.deepEqual(stats.reloadFailures, [], "admin unload/load");
  assert.ok(stats.reloads >= 1 || SECONDS < RELOAD_SECONDS + 20, "the model was never reloaded");
  assert.ok(stats.accepted > CLIENTS, `only ${stats.accepted} requests accepted`);
  assert.ok(idle.ok, `at the end: kv blocks used ${idle.used}, running ${idle.running}, waiting ${idle.waiting}`);
  assert.equal(health.status, 200);
  // Memory: the second half's peak within 15% (+16 MiB for allocator slack)
  // of the first half's, which includes the warm-up and a reload.
  assert.ok(maxOf(late) <= maxOf(half) * 1.15 + 16 * 1024,
            `RSS grew: first half max ${maxOf(half)} KiB, second half max ${maxOf(late)} KiB`);
  const exit = await server.stop("SIGTERM", 60000);
  assert.equal(exit.code, 0, `exit after SIGTERM: ${JSON.stringify(exit)}; output:\n${server.log().slice(-3000)}`);
});
