// izwi-server over raw HTTP (issue 4, "Tests"): what a hostile or broken
// client sends — malformed JSON, wrong types, missing fields, invalid UTF-8,
// an oversized body, unknown routes and methods, missing or wrong keys, a
// slow client, a client gone mid-stream — each answered in OpenAI's error
// envelope, and none of it able to hurt the next request.
import {after, before, describe, test} from "node:test";
import assert from "node:assert/strict";
import {setTimeout as sleep} from "node:timers/promises";

import {
  MODEL_ID, authHeader, checkErrorEnvelope, checkStream, flag, getMetrics, metricValue, rawExchange, request,
  startServer, streamRequest, waitForIdleEngine,
} from "./harness.mjs";

const KEY = "sk-izwi-e2e-raw";
const ADMIN_KEY = "sk-izwi-e2e-raw-admin";
const auth = authHeader(KEY);
const adminAuth = authHeader(ADMIN_KEY);
const MESSAGES = [{role: "user", content: "Say something long."}];

// Limits small enough to test quickly (izwi-server --help: --max-body-mb,
// --header-timeout-s, --body-timeout-s).
const bodyFlag = flag("--max-body-mb");
const headerTimeoutFlag = flag("--header-timeout-s");
const bodyTimeoutFlag = flag("--body-timeout-s");
const HEADER_TIMEOUT_S = headerTimeoutFlag ? 2 : 10;  // 10: the server default
const BODY_TIMEOUT_S = bodyTimeoutFlag ? 3 : 60;
const BODY_LIMIT = bodyFlag ? 1 << 20 : 25 << 20;

function limitArgs() {
  const args = [];
  if (bodyFlag) args.push(bodyFlag, "1");
  if (headerTimeoutFlag) args.push(headerTimeoutFlag, String(HEADER_TIMEOUT_S));
  if (bodyTimeoutFlag) args.push(bodyTimeoutFlag, String(BODY_TIMEOUT_S));
  return args;
}

let server;
before(async () => {
  server = await startServer({apiKey: KEY, args: [...limitArgs(), "--admin-api-key", ADMIN_KEY]});
});
after(async () => {
  const r = await server?.stop();
  if (r) assert.equal(r.code, 0, `izwi-server exited with ${JSON.stringify(r)}; output:\n${server.log().slice(-3000)}`);
});

const post = (body, headers = {}) =>
  request(server, {method: "POST", path: "/v1/chat/completions", headers: {"content-type": "application/json", ...auth, ...headers}, body});

/// The server still answers a good request after whatever came before.
async function stillServes() {
  const r = await post({model: MODEL_ID, messages: MESSAGES, max_tokens: 2, temperature: 0});
  assert.equal(r.status, 200, `a good request after the bad one: ${r.status} ${r.text.slice(0, 300)}`);
}

describe("400: malformed requests", () => {
  test("malformed JSON", async () => {
    for (const body of ['{"model": ', "{not json}", "", "[1,2", '{"model": "x"} trailing', "null"]) {
      const r = await post(body);
      const e = checkErrorEnvelope(assert, r, 400, `body ${JSON.stringify(body)}`);
      assert.equal(e.type, "invalid_request_error");
    }
    await stillServes();
  });

  test("a JSON body that is not an object", async () => {
    for (const body of ["[]", "42", '"text"']) checkErrorEnvelope(assert, await post(body), 400, `body ${body}`);
  });

  test("wrong types are named in param", async () => {
    const cases = [
      [{model: MODEL_ID, messages: "hello"}, "messages"],
      [{model: MODEL_ID, messages: [{role: "user", content: 42}]}, "messages[0].content"],
      [{model: MODEL_ID, messages: [{role: 7, content: "x"}]}, "messages[0].role"],
      [{model: MODEL_ID, messages: MESSAGES, max_tokens: "ten"}, "max_tokens"],
      [{model: MODEL_ID, messages: MESSAGES, max_tokens: -1}, "max_tokens"],
      [{model: MODEL_ID, messages: MESSAGES, temperature: "hot"}, "temperature"],
      [{model: MODEL_ID, messages: MESSAGES, top_p: 1.5}, "top_p"],
      [{model: MODEL_ID, messages: MESSAGES, stream: "yes"}, "stream"],
      [{model: MODEL_ID, messages: MESSAGES, stop: 5}, "stop"],
      [{model: MODEL_ID, messages: MESSAGES, seed: "s"}, "seed"],
      [{model: 17, messages: MESSAGES}, "model"],
    ];
    for (const [body, param] of cases) {
      const e = checkErrorEnvelope(assert, await post(body), 400, JSON.stringify(body));
      // "messages[0].content" may also be reported as its parent "messages".
      assert.ok(e.param === param || (param.startsWith("messages") && String(e.param).startsWith("messages")),
                `${JSON.stringify(body)}: param ${JSON.stringify(e.param)}, want ${param}`);
    }
  });

  test("a bad field on a streaming request is a JSON 400, not an event stream", async () => {
    const r = await post({model: MODEL_ID, messages: MESSAGES, stream: true, temperature: -1});
    const e = checkErrorEnvelope(assert, r, 400, "stream with temperature -1");
    assert.equal(e.param, "temperature");
    const u = await post({model: MODEL_ID, messages: MESSAGES, stream_options: {include_usage: true}});
    assert.equal(checkErrorEnvelope(assert, u, 400, "stream_options without stream").param, "stream_options");
  });

  test("missing messages, missing model, unknown role", async () => {
    let e = checkErrorEnvelope(assert, await post({model: MODEL_ID}), 400, "no messages");
    assert.equal(e.param, "messages");
    // No model: vLLM serves its only model then; refusing it is fine too, naming the field.
    const noModel = await post({messages: MESSAGES, max_tokens: 2});
    if (noModel.status !== 200) assert.equal(checkErrorEnvelope(assert, noModel, 400, "no model").param, "model");
    e = checkErrorEnvelope(assert, await post({model: MODEL_ID, messages: [{role: "wizard", content: "x"}]}), 400,
                           "unknown role");
    assert.ok(String(e.param).startsWith("messages"), `param ${e.param}`);
  });

  test("completions: missing prompt, token ids out of the vocabulary", async () => {
    const p = (body) => request(server, {method: "POST", path: "/v1/completions", headers: auth, body});
    let e = checkErrorEnvelope(assert, await p({model: MODEL_ID}), 400, "no prompt");
    assert.equal(e.param, "prompt");
    e = checkErrorEnvelope(assert, await p({model: MODEL_ID, prompt: [1, 2, 999999999]}), 400, "id out of range");
    assert.equal(e.param, "prompt");
    checkErrorEnvelope(assert, await p({model: MODEL_ID, prompt: [1, -5]}), 400, "negative id");
  });

  test("invalid UTF-8 in the body", async () => {
    const head = Buffer.from(`{"model": "${MODEL_ID}", "messages": [{"role": "user", "content": "bad `);
    const tail = Buffer.from(`"}], "max_tokens": 2}`);
    for (const bad of [[0xff, 0xfe], [0xc3], [0xed, 0xa0, 0x80] /* a surrogate */, [0xc0, 0xaf] /* overlong */]) {
      const body = Buffer.concat([head, Buffer.from(bad), tail]);
      const r = await post(body);
      checkErrorEnvelope(assert, r, 400, `bytes ${bad.map((b) => b.toString(16)).join(" ")}`);
    }
    await stillServes();
  });

  test("a lone surrogate escape (\\ud800) is refused or replaced, never crashes", async () => {
    const r = await post(`{"model": "${MODEL_ID}", "messages": [{"role": "user", "content": "x\\ud800y"}], "max_tokens": 2}`);
    assert.ok(r.status === 200 || r.status === 400, `status ${r.status}`);
    if (r.status === 400) checkErrorEnvelope(assert, r, 400, "lone surrogate");
    await stillServes();
  });
});

describe("413: bodies over the limit", () => {
  test(`a Content-Length over the limit is refused before the body is read (${bodyFlag ?? "default 25 MB"})`, async () => {
    const size = BODY_LIMIT + 1024;
    const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\n` +
                 `Content-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`;
    // Only the headers and 64 KiB: the answer must not wait for the rest.
    const r = await rawExchange(server, [head, Buffer.alloc(64 * 1024, 0x20)], {timeoutMs: 10000});
    assert.equal(r.status, 413, `got ${r.status} (${r.closedBy}): ${r.data.toString("latin1").slice(0, 300)}`);
    await stillServes();
  });

  test("a chunked body that grows over the limit", async () => {
    const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\n` +
                 `Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const piece = Buffer.alloc(1 << 20, 0x20);
    const chunk = Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from("\r\n")]);
    const n = Math.ceil(BODY_LIMIT / piece.length) + 1;
    const r = await rawExchange(server, [head, ...Array(n).fill(chunk)], {timeoutMs: 30000});
    assert.equal(r.status, 413, `got ${r.status} (${r.closedBy} ${r.error?.code ?? ""}): ${r.data.toString("latin1").slice(0, 300)}`);
    await stillServes();
  });
});

describe("404 and 405", () => {
  test("unknown routes", async () => {
    // (GET / is the web playground unless --no-ui: ui_serving.test.mjs.)
    for (const p of ["/v1/nope", "/v2/chat/completions", "/ui/no-such-file.js", "/v1/models/no-such-model"]) {
      const e = checkErrorEnvelope(assert, await request(server, {path: p, headers: auth}), 404, `GET ${p}`);
      assert.ok(typeof e.type === "string");
    }
    checkErrorEnvelope(assert, await request(server, {method: "POST", path: "/v1/chat/nothing", headers: auth, body: {}}),
                       404, "POST /v1/chat/nothing");
  });

  test("wrong methods", async () => {
    for (const [method, p] of [["GET", "/v1/chat/completions"], ["PUT", "/v1/completions"], ["DELETE", "/v1/models"],
                               ["POST", "/health"]]) {
      const r = await request(server, {method, path: p, headers: auth, body: method === "GET" ? undefined : "{}"});
      checkErrorEnvelope(assert, r, 405, `${method} ${p}`);
      assert.ok(r.headers.allow, `${method} ${p}: 405 without an Allow header`);
    }
  });
});

describe("audio endpoints without an audio model", () => {
  test("answer with OpenAI's error envelope (not 404 route, 405 or 500)", async () => {
    for (const [p, body] of [["/v1/audio/speech", {model: MODEL_ID, input: "hello", voice: "alloy"}],
                             ["/v1/audio/transcriptions", {model: MODEL_ID}],
                             ["/v1/audio/translations", {model: MODEL_ID}]]) {
      const r = await request(server, {method: "POST", path: p, headers: auth, body});
      assert.ok(r.status === 400 || r.status === 404 || r.status === 501 || r.status === 503, `POST ${p}: ${r.status}`);
      checkErrorEnvelope(assert, r, r.status, `POST ${p}`);
      assert.doesNotMatch(r.json.error.message, /route|no such path/i, `POST ${p}: the endpoint should exist`);
    }
  });
});

describe("401: API keys", () => {
  test("missing, wrong or malformed keys are refused; the right key passes", async () => {
    const body = {model: MODEL_ID, messages: MESSAGES, max_tokens: 2};
    for (const headers of [{}, {authorization: "Bearer sk-wrong"}, {authorization: `Bearer ${KEY}x`},
                           {authorization: `Bearer ${KEY.slice(0, -1)}`}, {authorization: KEY},
                           {authorization: `Basic ${KEY}`}, {authorization: "Bearer "}]) {
      const r = await request(server, {method: "POST", path: "/v1/chat/completions", headers, body});
      const e = checkErrorEnvelope(assert, r, 401, `Authorization ${JSON.stringify(headers.authorization)}`);
      assert.equal(e.type, "authentication_error");
    }
    const models = await request(server, {path: "/v1/models"});
    checkErrorEnvelope(assert, models, 401, "GET /v1/models without a key");
    const ok = await request(server, {method: "POST", path: "/v1/chat/completions", headers: auth, body});
    assert.equal(ok.status, 200, ok.text.slice(0, 300));
  });

  test("/health stays open without a key", async () => {
    assert.equal((await request(server, {path: "/health"})).status, 200);
    assert.equal((await request(server, {path: "/health", headers: {authorization: "Bearer sk-wrong"}})).status, 200);
  });

  test("an unknown route without a key: 401 or 404", async () => {
    const r = await request(server, {path: "/v1/nope"});
    assert.ok(r.status === 401 || r.status === 404, `status ${r.status}`);
  });
});

describe("admin routes", () => {
  test("take the admin key only: an inference key or none is refused", async () => {
    for (const headers of [{}, auth, authHeader("sk-wrong")]) {
      const r = await request(server, {path: "/v1/admin/models", headers});
      checkErrorEnvelope(assert, r, 401, `admin view with ${JSON.stringify(headers)}`);
    }
    const r = await request(server, {path: "/v1/admin/models", headers: adminAuth});
    assert.equal(r.status, 200, r.text.slice(0, 300));
  });
});

describe("framing the server will not guess at (RFC 9112)", () => {
  test("Transfer-Encoding without a final chunked: 400, closed, the body never run as a request", async () => {
    const smuggled = `GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\n\r\n`;
    const r = await rawExchange(server, `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
                                        `Authorization: Bearer ${KEY}\r\nTransfer-Encoding: gzip\r\n\r\n${smuggled}`);
    assert.equal(r.status, 400);
    assert.equal(r.closedBy, "server");
    const responses = r.data.toString("latin1").match(/HTTP\/1\.1 \d{3} /g) ?? [];
    assert.equal(responses.length, 1, `responses: ${r.data.toString("latin1").slice(0, 600)}`);
  });

  test("HTTP/1.1 without Host: 400", async () => {
    const r = await rawExchange(server, `GET /v1/models HTTP/1.1\r\nAuthorization: Bearer ${KEY}\r\n\r\n`);
    assert.equal(r.status, 400);
  });

  test("HEAD: GET's headers, no body", async () => {
    const r = await rawExchange(server, `HEAD /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    assert.equal(r.status, 200);
    const text = r.data.toString("latin1");
    assert.match(text, /Content-Length: [1-9]/i);
    assert.ok(text.endsWith("\r\n\r\n"), `a body after the head: ${JSON.stringify(text.slice(-80))}`);
  });
});

describe("request ids", () => {
  test("X-Request-Id is honoured, or generated", async () => {
    const mine = await request(server, {path: "/v1/models", headers: {...auth, "x-request-id": "e2e-req-42"}});
    assert.equal(mine.headers["x-request-id"], "e2e-req-42");
    const theirs = await request(server, {path: "/v1/models", headers: auth});
    assert.ok(theirs.headers["x-request-id"], "a generated X-Request-Id");
  });
});

describe("slow clients", () => {
  test(`half the headers, then silence: closed within the header timeout (${headerTimeoutFlag ?? "default"}, ${HEADER_TIMEOUT_S} s)`,
       {timeout: (HEADER_TIMEOUT_S + 30) * 1000}, async () => {
    const partial = `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl`;
    const slow = Array.from({length: 20}, () => rawExchange(server, partial, {timeoutMs: (HEADER_TIMEOUT_S + 10) * 1000}));
    // Meanwhile everyone else is served.
    await sleep(200);
    const health = await request(server, {path: "/health", timeoutMs: 5000});
    assert.equal(health.status, 200, "/health while slow clients hold connections");
    await stillServes();
    for (const r of await Promise.all(slow)) {
      assert.notEqual(r.closedBy, "timeout", `the server kept a silent half-request open ${r.elapsedMs} ms`);
      assert.ok(r.elapsedMs <= (HEADER_TIMEOUT_S + 5) * 1000, `closed after ${r.elapsedMs} ms`);
    }
  });

  test(`a body that stops half way is closed within the body timeout (${BODY_TIMEOUT_S} s)`,
       {timeout: (BODY_TIMEOUT_S + 30) * 1000}, async () => {
    const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\n` +
                 `Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model": "`;
    const r = await rawExchange(server, head, {timeoutMs: (BODY_TIMEOUT_S + 20) * 1000});
    assert.notEqual(r.closedBy, "timeout", `a half body held the connection ${r.elapsedMs} ms`);
    assert.ok(r.elapsedMs <= (BODY_TIMEOUT_S + 5) * 1000, `closed after ${r.elapsedMs} ms`);
  });
});

describe("a client that disconnects mid-stream", () => {
  test("aborts its request; every KV block returns to the pool", async () => {
    const before = (await getMetrics(server)).metrics;
    const abortsBefore = metricValue(before, "izwi:request_success_total", {finished_reason: "abort"}) ?? 0;
    const clients = [];
    for (let i = 0; i < 4; ++i) {
      clients.push(streamRequest(server, {
        model: MODEL_ID, stream: true, max_tokens: 4000, temperature: 1, seed: i, ignore_eos: true,
        messages: [{role: "user", content: `Client ${i}: write a very long story.`}],
      }, {
        headers: auth,
        onData: (text, req) => {
          // Three chunks in: the client goes away.
          if ((text.match(/\n\n/g) || []).length >= 3) req.destroy();
        },
      }));
    }
    const results = await Promise.all(clients);
    for (const r of results) {
      assert.equal(r.status, 200);
      assert.ok(!r.text.includes("[DONE]"), "the stream ended before the client left (max_tokens 4000?)");
    }
    const idle = await waitForIdleEngine(server, {timeoutMs: 10000});
    assert.ok(idle.ok, `after the disconnects: kv_cache_blocks_used ${idle.used}, running ${idle.running}, ` +
                       `waiting ${idle.waiting}`);
    // The admin view agrees with /metrics.
    const admin = await request(server, {path: `/v1/admin/models/${MODEL_ID}`, headers: adminAuth});
    assert.equal(admin.status, 200, `admin view: ${admin.text.slice(0, 500)}`);
    const st = admin.json.status;
    assert.equal(st?.num_kv_blocks_used, 0, `admin view: ${admin.text.slice(0, 500)}`);
    assert.equal(st?.num_running, 0, `admin view: ${admin.text.slice(0, 500)}`);
    const abortsAfter = metricValue((await getMetrics(server)).metrics, "izwi:request_success_total",
                                    {finished_reason: "abort"});
    assert.ok(abortsAfter >= abortsBefore + 4, `aborted requests counted: ${abortsBefore} -> ${abortsAfter}`);
    await stillServes();
  });

  test("a client that leaves before the first token", async () => {
    for (let i = 0; i < 4; ++i) {
      const body = JSON.stringify({model: MODEL_ID, stream: true, max_tokens: 4000, ignore_eos: true, messages: MESSAGES});
      const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\n` +
                   `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
      await rawExchange(server, head + body, {timeoutMs: 30});  // gone 30 ms after sending
    }
    const idle = await waitForIdleEngine(server, {timeoutMs: 10000});
    assert.ok(idle.ok, `kv_cache_blocks_used ${idle.used}, running ${idle.running}, waiting ${idle.waiting}`);
  });

  test("a finished stream, read to the end, is well formed (the control)", async () => {
    const r = await streamRequest(server, {model: MODEL_ID, stream: true, max_tokens: 8, messages: MESSAGES},
                                  {headers: auth});
    assert.equal(r.status, 200);
    assert.match(String(r.headers["content-type"]), /text\/event-stream/);
    const s = checkStream(r.text);
    assert.deepEqual(s.problems, []);
  });
});
