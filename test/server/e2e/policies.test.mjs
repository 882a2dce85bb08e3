// izwi-server's compile-time policies chosen at start-up (issue 9):
// --scheduling-policy fcfs|priority and --kv-cache paged|unified, each pair
// its own Engine<Scheduler, KVCache, ...> instantiation behind AnyEngine.
//
// With one sequence per step (--max-num-seqs 1) a long request holds the only
// seat while two short ones wait: B (priority 5) first, then C (priority -5).
// When the seat frees, FCFS admits B first; priority scheduling admits C
// first (lower is sooner, as in vLLM). The served configuration is also read
// back from the admin view's description.
import {test} from "node:test";
import assert from "node:assert/strict";
import {setTimeout as sleep} from "node:timers/promises";

import {MODEL_ID, authHeader, request, startServer, streamRequest} from "./harness.mjs";

const ADMIN_KEY = "policies-admin-key";

async function completionOrder(server) {
  const finished = [];
  let sent = false;
  let shorts;
  const blocker = streamRequest(server, {
    model: MODEL_ID, prompt: "hold the seat", max_tokens: 400, ignore_eos: true, stream: true, temperature: 0,
  }, {
    path: "/v1/completions",
    onData: (_text, req) => {
      if (sent) return;
      sent = true;
      const short = (name, priority) =>
        request(server, {method: "POST", path: "/v1/completions",
                         body: {model: MODEL_ID, prompt: `short ${name}`, max_tokens: 2, priority, temperature: 0}})
          .then((r) => {
            assert.equal(r.status, 200, `${name}: ${r.text}`);
            finished.push(name);
          });
      const b = short("B", 5);
      shorts = sleep(100).then(() => Promise.all([b, short("C", -5)]));
      // Both wait behind the blocker; then it hangs up and frees the seat.
      shorts.catch(() => {});
      sleep(400).then(() => req.destroy());
    },
  });
  await blocker;
  assert.ok(sent, "the long request streamed");
  await shorts;
  return finished;
}

async function servedDescription(server) {
  const r = await request(server, {path: "/v1/admin/models", headers: authHeader(ADMIN_KEY)});
  assert.equal(r.status, 200, r.text);
  const entry = r.json.data.find((m) => m.id === MODEL_ID);
  assert.ok(entry, r.text);
  return entry.description;
}

for (const [scheduling, cache, order] of [["fcfs", "paged", ["B", "C"]], ["priority", "unified", ["C", "B"]]]) {
  test(`--scheduling-policy ${scheduling} --kv-cache ${cache}: waiting requests admitted ${order.join(" then ")}`,
       async () => {
    const args = ["--scheduling-policy", scheduling, "--kv-cache", cache, "--max-num-seqs", "1",
                  "--admin-api-key", ADMIN_KEY];
    if (cache === "unified") args.push("--kv-cache-memory-fraction", "0.01");
    const server = await startServer({args});
    try {
      const description = await servedDescription(server);
      assert.match(description, new RegExp(`${scheduling === "fcfs" ? "FCFS" : "priority"} scheduling`), description);
      assert.match(description, new RegExp(`${cache} KV cache`), description);
      assert.deepEqual(await completionOrder(server), order);
    } finally {
      const r = await server.stop();
      assert.equal(r.code, 0, `izwi-server exited with ${JSON.stringify(r)}:\n${server.log().slice(-2000)}`);
    }
  });
}

test("an unknown policy or cache is a usage error naming the flag", async () => {
  const {spawnSync} = await import("node:child_process");
  const {SERVER} = await import("./harness.mjs");
  for (const [flag, value] of [["--scheduling-policy", "lifo"], ["--kv-cache", "ring"],
                               ["--kv-cache-memory-fraction", "1.5"]]) {
    const r = spawnSync(SERVER, ["--model", "x", flag, value], {encoding: "utf8", timeout: 20000});
    assert.equal(r.status, 2, `${flag} ${value}: exit ${r.status}\n${r.stderr}`);
    assert.match(r.stderr, new RegExp(flag.replace(/-/g, "\\-")), r.stderr);
  }
});
