// izwi-server's graceful shutdown and queue limit (issue 4): SIGTERM while
// streams run loses no response that had been accepted, and the process exits
// 0; past the deadline, what is left ends cleanly; a full queue answers 429.
import {test} from "node:test";
import assert from "node:assert/strict";
import {setTimeout as sleep} from "node:timers/promises";

import {MODEL_ID, checkErrorEnvelope, checkStream, flag, request, startServer, streamRequest, within} from "./harness.mjs";

const deadlineFlag = flag("--shutdown-grace-s");
const seqsFlag = flag("--max-num-seqs");

const chat = (i, maxTokens) => ({
  model: MODEL_ID, stream: true, max_tokens: maxTokens, temperature: 1, seed: i, ignore_eos: true,
  messages: [{role: "user", content: `Request ${i}: tell me a story.`}],
});

/// Starts `n` streams and resolves once each has received its first event.
function startStreams(server, n, maxTokens) {
  const started = [];
  const streams = [];
  for (let i = 0; i < n; ++i) {
    let mark;
    started.push(new Promise((resolve) => (mark = resolve)));
    streams.push(streamRequest(server, chat(i, maxTokens), {onData: () => mark(), timeoutMs: 180000}).then((r) => {
      mark();
      return r;
    }));
  }
  return {started: Promise.all(started), streams: Promise.all(streams)};
}

test("SIGTERM under load: every accepted request completes, new work is refused, exit 0", {timeout: 300000}, async () => {
  // A grace period far longer than the work needs, even on a loaded machine:
  // here every accepted request must finish normally.
  const server = await startServer({threads: 2, args: deadlineFlag ? [deadlineFlag, "120"] : []});
  try {
    const {started, streams} = startStreams(server, 16, 64);
    await started;
    // Non-streamed requests too, in the engine when the signal comes.
    const whole = Array.from({length: 8}, (_, i) =>
      request(server, {method: "POST", path: "/v1/chat/completions", body: {...chat(100 + i, 64), stream: false},
                       timeoutMs: 180000}));
    await sleep(200);
    server.proc.kill("SIGTERM");
    await sleep(300);
    // New work after the signal: refused at the door (connection refused) or 503.
    try {
      const r = await request(server, {method: "POST", path: "/v1/chat/completions", body: chat(99, 4), timeoutMs: 10000});
      if (r.status !== 503) assert.fail(`a request after SIGTERM was answered ${r.status}: ${r.text.slice(0, 200)}`);
      checkErrorEnvelope(assert, r, 503, "after SIGTERM");
    } catch (e) {
      if (e.code !== "ECONNREFUSED" && e.code !== "ECONNRESET") throw e;
    }
    const results = await streams;
    results.forEach((r, i) => {
      assert.equal(r.status, 200, `stream ${i}`);
      assert.ok(r.complete, `stream ${i} cut off: ${r.error?.message}`);
      const s = checkStream(r.text);
      assert.deepEqual(s.problems, [], `stream ${i}`);
      assert.ok(["stop", "length"].includes(s.finishReason), `stream ${i} finish_reason ${s.finishReason}`);
    });
    for (const [i, r] of (await Promise.all(whole)).entries()) {
      assert.equal(r.status, 200, `non-streamed request ${i}: ${r.text.slice(0, 300)}`);
      assert.equal(r.json.object, "chat.completion");
      assert.ok(["stop", "length"].includes(r.json.choices[0].finish_reason), `finish_reason ${r.json.choices[0].finish_reason}`);
    }
    const exit = await Promise.race([server.exit, within(60000)]);
    assert.ok(exit, "izwi-server still running 60 s after SIGTERM with its streams done");
    assert.deepEqual(exit, {code: 0, signal: null}, `exit status; output:\n${server.log().slice(-3000)}`);
  } finally {
    await server.stop("SIGKILL");
  }
});

test("while the model loads: /health 503, and a request for it 503 (not 404)", {timeout: 60000}, async (t) => {
  const server = await startServer({waitReady: false});
  try {
    const chatReq = request(server, {method: "POST", path: "/v1/chat/completions",
                                     body: {...chat(1, 2), stream: false}});
    const health = server.firstHealth;
    const r = await chatReq;
    if (health === 200) {
      t.diagnostic("the model loaded before the first /health answer: loading not observed");
      return;
    }
    assert.equal(health, 503, "/health while loading");
    // Sent while /health said 503: either still loading (503) or loaded meanwhile (200).
    assert.ok(r.status === 503 || r.status === 200, `a request during loading: ${r.status} ${r.text.slice(0, 300)}`);
    if (r.status === 503) {
      checkErrorEnvelope(assert, r, 503, "during loading");
      assert.ok(Number(r.headers["retry-after"]) >= 1, `503 while loading without Retry-After`);
    }
  } finally {
    await server.stop();
  }
});

test("SIGINT with nothing running: exit 0 at once", {timeout: 60000}, async () => {
  const server = await startServer();
  const t0 = Date.now();
  server.proc.kill("SIGINT");
  const exit = await Promise.race([server.exit, within(20000)]);
  await server.stop("SIGKILL");
  assert.ok(exit, "still running 20 s after SIGINT");
  assert.deepEqual(exit, {code: 0, signal: null});
  assert.ok(Date.now() - t0 < 10000, `took ${Date.now() - t0} ms`);
});

test(`past the shutdown deadline (${deadlineFlag ?? "no flag: skipped"}) long streams end cleanly`,
     {timeout: 120000, skip: deadlineFlag ? false : "izwi-server --help names no shutdown-deadline flag"}, async () => {
  const server = await startServer({args: [deadlineFlag, "1"], threads: 2});
  try {
    const {started, streams} = startStreams(server, 8, 30000);
    await started;
    const t0 = Date.now();
    server.proc.kill("SIGTERM");
    const results = await Promise.race([streams, within(40000)]);
    assert.ok(results, "streams still running 40 s after SIGTERM with a 1 s deadline");
    results.forEach((r, i) => {
      assert.equal(r.status, 200, `stream ${i}`);
      assert.ok(r.complete, `stream ${i}: the HTTP response was cut off (${r.error?.message}) instead of ended`);
      const s = checkStream(r.text);
      assert.deepEqual(s.problems, [], `stream ${i}`);
    });
    const exit = await Promise.race([server.exit, within(30000)]);
    assert.ok(exit, "still running 30 s after SIGTERM with a 1 s deadline");
    assert.deepEqual(exit, {code: 0, signal: null});
    assert.ok(Date.now() - t0 < 20000, `shutdown took ${Date.now() - t0} ms with a 1 s deadline`);
  } finally {
    await server.stop("SIGKILL");
  }
});

test("a full queue answers 429 with Retry-After", {timeout: 180000}, async () => {
  const args = ["--max-queue", "1"];
  if (seqsFlag) args.push(seqsFlag, "1");
  const server = await startServer({args});
  try {
    const jobs = Array.from({length: 12}, (_, i) =>
      request(server, {method: "POST", path: "/v1/chat/completions", body: {...chat(i, 64), stream: false}, timeoutMs: 120000}));
    const results = await Promise.all(jobs);
    let refused = 0;
    for (const r of results) {
      if (r.status === 200) continue;
      const e = checkErrorEnvelope(assert, r, 429, "queue full");
      assert.equal(e.type, "rate_limit_error");
      assert.ok(Number(r.headers["retry-after"]) >= 1, `Retry-After ${r.headers["retry-after"]}`);
      ++refused;
    }
    if (seqsFlag) assert.ok(refused > 0, `12 requests at once, one running and a queue of 1: none refused`);
    assert.ok(refused < 12, "every request refused");
  } finally {
    await server.stop();
  }
});
