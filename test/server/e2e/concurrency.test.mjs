// izwi-server under load (issue 4, "Tests"): 32 streaming clients × several
// requests each, every stream complete and well formed, every KV block free at
// the end; a request's greedy or seeded output does not depend on what it was
// batched with (DESIGN §6).
import {after, before, test} from "node:test";
import assert from "node:assert/strict";
import http from "node:http";

import {setTimeout as sleep} from "node:timers/promises";

import {
  MODEL_ID, checkStream, getMetrics, metricValue, startServer, streamRequest, waitForIdleEngine,
} from "./harness.mjs";

const CLIENTS = 32;
const REQUESTS_PER_CLIENT = 4;
const MAX_TOKENS = 24;
const PROMPTS = [
  "Write a haiku about the sea.",
  "List three prime numbers.",
  "What is the capital of France?",
  "Describe a cat in one sentence.",
];

let server;
before(async () => {
  server = await startServer({threads: 2});
});
after(async () => {
  const r = await server?.stop();
  if (r) assert.equal(r.code, 0, `izwi-server exited with ${JSON.stringify(r)}; output:\n${server.log().slice(-3000)}`);
});

// Variant i: prompt i % 4, greedy when i % 8 < 4, else sampled with a seed
// (DESIGN §6: batch composition does not change a seeded request's output).
const VARIANTS = 2 * PROMPTS.length;
const body = (i, extra = {}) => ({
  model: MODEL_ID, stream: true, max_tokens: MAX_TOKENS, stream_options: {include_usage: true},
  ...(i % VARIANTS < PROMPTS.length ? {temperature: 0} : {temperature: 0.9, top_p: 0.95, seed: 1000 + i % VARIANTS}),
  messages: [{role: "user", content: PROMPTS[i % PROMPTS.length]}], ...extra,
});

test(`${CLIENTS} streaming clients × ${REQUESTS_PER_CLIENT} requests: no error, every stream complete and well formed`,
     {timeout: 600000}, async () => {
  // Each prompt's reply alone, as the reference for the batched ones.
  const alone = [];
  for (let i = 0; i < VARIANTS; ++i) {
    const r = await streamRequest(server, body(i));
    assert.equal(r.status, 200, r.text.slice(0, 300));
    const s = checkStream(r.text, {includeUsage: true});
    assert.deepEqual(s.problems, [], `variant ${i} alone`);
    alone.push(s.text);
  }

  const failures = [];
  let streams = 0;
  const client = async (c) => {
    // One keep-alive connection per client, reused across its requests.
    const agent = new http.Agent({keepAlive: true, maxSockets: 1});
    try {
      for (let k = 0; k < REQUESTS_PER_CLIENT; ++k) {
        const i = c + k;
        const r = await streamRequest(server, body(i), {agent});
        ++streams;
        const where = `client ${c} request ${k}`;
        if (r.status !== 200) {
          failures.push(`${where}: status ${r.status} ${r.text.slice(0, 200)}`);
          continue;
        }
        if (!r.complete) failures.push(`${where}: ${r.error?.message ?? "incomplete"}`);
        if (!/text\/event-stream/.test(String(r.headers["content-type"])))
          failures.push(`${where}: content-type ${r.headers["content-type"]}`);
        const s = checkStream(r.text, {includeUsage: true});
        for (const p of s.problems) failures.push(`${where}: ${p}`);
        if (s.usage) {
          if (s.usage.completion_tokens > MAX_TOKENS) failures.push(`${where}: ${s.usage.completion_tokens} tokens`);
          if (s.finishReason === "length" && s.usage.completion_tokens !== MAX_TOKENS)
            failures.push(`${where}: finish_reason length after ${s.usage.completion_tokens} tokens`);
        }
        if (s.text !== alone[i % VARIANTS])
          failures.push(`${where}: batched reply ${JSON.stringify(s.text)} != alone ${JSON.stringify(alone[i % VARIANTS])}`);
      }
    } finally {
      agent.destroy();
    }
  };
  // /metrics sampled during the load: the requests really overlapped.
  let peak = 0;
  let loading = true;
  const sampler = (async () => {
    while (loading) {
      const {metrics} = await getMetrics(server);
      peak = Math.max(peak, (metricValue(metrics, "izwi:num_requests_running") ?? 0) +
                            (metricValue(metrics, "izwi:num_requests_waiting") ?? 0));
      await sleep(20);
    }
  })();
  await Promise.all(Array.from({length: CLIENTS}, (_, c) => client(c)));
  loading = false;
  await sampler;
  assert.equal(streams, CLIENTS * REQUESTS_PER_CLIENT);
  assert.ok(peak >= 8, `at most ${peak} requests in the engine at once: the load did not overlap`);
  assert.deepEqual(failures.slice(0, 20), [], `${failures.length} problems`);

  const idle = await waitForIdleEngine(server, {timeoutMs: 10000});
  assert.ok(idle.ok, `after the load: kv_cache_blocks_used ${idle.used}, running ${idle.running}, waiting ${idle.waiting}`);
});

test("non-streaming requests side by side with streaming ones", {timeout: 300000}, async () => {
  const jobs = [];
  for (let c = 0; c < 16; ++c) {
    jobs.push(streamRequest(server, body(c)));
    jobs.push(new Promise((resolve, reject) => {
      const payload = JSON.stringify({...body(c), stream: false, stream_options: undefined});
      const req = http.request({host: "127.0.0.1", port: server.port, method: "POST", path: "/v1/chat/completions",
                                headers: {"content-type": "application/json", "content-length": Buffer.byteLength(payload)}},
                               (res) => {
                                 let t = "";
                                 res.on("data", (d) => (t += d));
                                 res.on("end", () => resolve({status: res.statusCode, json: JSON.parse(t)}));
                               });
      req.on("error", reject);
      req.end(payload);
    }));
  }
  for (const r of await Promise.all(jobs)) {
    assert.equal(r.status, 200);
    if (r.json) assert.equal(r.json.object, "chat.completion");
    else assert.deepEqual(checkStream(r.text, {includeUsage: true}).problems, []);
  }
  const idle = await waitForIdleEngine(server, {timeoutMs: 10000});
  assert.ok(idle.ok, `kv_cache_blocks_used ${idle.used}, running ${idle.running}, waiting ${idle.waiting}`);
});
