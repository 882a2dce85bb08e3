// izwi-server's /metrics (issue 4): Prometheus text that promtool accepts,
// with the engine's metrics (vLLM's names, prefix izwi:) and HTTP ones.
//
// promtool's linter objects to ':' in metric names ("reserved for recording
// rules"). The colon is deliberate: izwi keeps vLLM's names (vllm:* ->
// izwi:*) so dashboards written for vLLM read izwi unchanged. That one lint is
// accepted for izwi:* names; promtool must parse the text (exit 1 is a
// parse error) and raise nothing else.
import {after, before, test} from "node:test";
import assert from "node:assert/strict";
import {spawnSync} from "node:child_process";

import {MODEL_ID, PROMTOOL, getMetrics, metricValue, request, startServer, streamRequest} from "./harness.mjs";

let server;
before(async () => {
  server = await startServer();
  // Some traffic first: histograms with observations, HTTP metrics with labels,
  // an error status among them.
  const chat = {model: MODEL_ID, max_tokens: 4, messages: [{role: "user", content: "hello"}]};
  for (let i = 0; i < 3; ++i) {
    assert.equal((await request(server, {method: "POST", path: "/v1/chat/completions", body: chat})).status, 200);
  }
  await streamRequest(server, {...chat, stream: true});
  await request(server, {path: "/v1/models"});
  await request(server, {path: "/v1/nope"});
  await request(server, {method: "POST", path: "/v1/chat/completions", body: "{bad"});
});
after(async () => {
  const r = await server?.stop();
  if (r) assert.equal(r.code, 0, `izwi-server exited with ${JSON.stringify(r)}`);
});

test("promtool check metrics accepts /metrics", async () => {
  const r = await request(server, {path: "/metrics"});
  assert.equal(r.status, 200);
  assert.match(String(r.headers["content-type"]), /^text\/plain/, "the Prometheus text content type");
  const check = spawnSync(PROMTOOL, ["check", "metrics"], {input: r.body, encoding: "utf8"});
  const out = `${check.stdout}${check.stderr}`;
  assert.notEqual(check.status, 1, `promtool could not parse /metrics:\n${out}`);
  const problems = out.split("\n").filter((l) => l.trim() !== "")
    .filter((l) => !/^izwi:\S* metric names should not contain ':'$/.test(l));
  assert.deepEqual(problems, [], `promtool check metrics (exit ${check.status}):\n${out}`);
  assert.ok(check.status === 0 || check.status === 3, `promtool exit ${check.status}`);
});

test("the engine's metrics, labelled with the model", async () => {
  const {metrics} = await getMetrics(server);
  for (const name of ["izwi:num_requests_running", "izwi:num_requests_waiting", "izwi:kv_cache_usage_perc",
                      "izwi:kv_cache_blocks", "izwi:kv_cache_blocks_used", "izwi:prompt_tokens_total",
                      "izwi:generation_tokens_total", "izwi:time_to_first_token_seconds_count"]) {
    assert.ok(metrics.has(name), `no ${name}`);
    assert.ok(metrics.get(name).some((s) => s.labels.model_name === MODEL_ID), `${name} without model_name="${MODEL_ID}"`);
  }
  assert.ok(metricValue(metrics, "izwi:generation_tokens_total") > 0, "generation tokens counted");
  assert.ok(metricValue(metrics, "izwi:kv_cache_blocks") > 0);
});

test("HTTP metrics: requests by route and status", async () => {
  const {text} = await getMetrics(server);
  // Names are the HTTP engineer's choice; the content is not: some counter
  // labelled with a status must count the 200s and the 404 and the 400.
  const lines = text.split("\n").filter((l) => !l.startsWith("#") && /status|code/.test(l));
  assert.ok(lines.some((l) => /"200"/.test(l)), `no HTTP metric with status 200 in:\n${lines.join("\n")}`);
  assert.ok(lines.some((l) => /"404"/.test(l)), "no HTTP metric with status 404");
  assert.ok(lines.some((l) => /"400"/.test(l)), "no HTTP metric with status 400");
  const http = text.split("\n").filter((l) => /_seconds_bucket\{/.test(l) &&
                                          (/^[^{]*http/.test(l) || /(route|handler|path|endpoint)="/.test(l)));
  assert.ok(http.length > 0, "no HTTP latency histogram (a *_seconds histogram named http_* or labelled by route)");
});
