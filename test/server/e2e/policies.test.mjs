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

// The start-up line of a loaded model says how its checkpoint is held and
// how much of the process the kernel put in huge pages (or that it has none).
const HUGE_PAGES = String.raw`(\d+ MiB of the process in transparent huge pages \(host policy: (always|madvise)\)|.*4-KiB pages)`;

for (const [scheduling, cache, order, mmap] of [["fcfs", "paged", ["B", "C"], false],
                                                ["priority", "unified", ["C", "B"], true]]) {
  test(`--scheduling-policy ${scheduling} --kv-cache ${cache}${mmap ? " --mmap" : ""}: waiting requests admitted ` +
       `${order.join(" then ")}`, async () => {
    const args = ["--scheduling-policy", scheduling, "--kv-cache", cache, "--max-num-seqs", "1",
                  "--admin-api-key", ADMIN_KEY];
    if (cache === "unified") args.push("--kv-cache-memory-fraction", "0.01");
    if (mmap) args.push("--mmap");
    const server = await startServer({args});
    try {
      const description = await servedDescription(server);
      assert.match(description, new RegExp(`${scheduling === "fcfs" ? "FCFS" : "priority"} scheduling`), description);
      assert.match(description, new RegExp(`${cache} KV cache`), description);
      const held = mmap ? String.raw`checkpoints mapped \(--mmap\)` : "checkpoints read into memory";
      const loaded = new RegExp(`izwi-server: loaded .*; ${held}; ${HUGE_PAGES}\n`);
      // /health turns ready as the model is registered, the line follows on the loader's thread.
      for (let i = 0; i < 50 && !loaded.test(server.log()); ++i) await sleep(100);
      assert.match(server.log(), loaded, server.log());
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
