// izwi-server --device (issue 14): the random Qwen3 served on an OpenCL
// device (OpenClExecutor<Qwen3> + DeviceKVCache, PoCL in CI) answers greedy
// chat completions with the same text and token counts as the --device cpu
// server; /v1/models and the start-up log name the device; a device that
// does not exist, a host without any OpenCL platform, a bad spec and a
// family that runs on the CPU only are refused at start-up with the reason
// and a non-zero exit. run.mjs --require-opencl skips this file (with the
// reason) where izwi-server --list-devices shows no OpenCL device.
import {test} from "node:test";
import assert from "node:assert/strict";
import {spawn, spawnSync} from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import {MODEL_DIR, MODEL_ID, SERVER, authHeader, request, startServer} from "./harness.mjs";

const ADMIN_KEY = "device-admin-key";
// The program-binary cache of izwi's kernels, inside the build tree (not ~/.cache).
const OPENCL_ENV = {IZWI_OPENCL_CACHE: path.join(path.dirname(MODEL_DIR), "opencl-cache")};

const PROMPTS = ["Say hello.", "Count from one to ten, slowly and in words.", "What is the capital of France?"];

async function greedyChat(server, content) {
  const r = await request(server, {
    method: "POST", path: "/v1/chat/completions", timeoutMs: 300000,
    body: {model: MODEL_ID, messages: [{role: "user", content}], max_tokens: 24, temperature: 0, ignore_eos: true},
  });
  assert.equal(r.status, 200, `${content}: ${r.text.slice(0, 500)}`);
  return {text: r.json.choices[0].message.content, usage: r.json.usage};
}

async function listedDevice(server) {
  const list = await request(server, {path: "/v1/models"});
  assert.equal(list.status, 200, list.text);
  const entry = list.json.data.find((m) => m.id === MODEL_ID);
  assert.ok(entry, list.text);
  const one = await request(server, {path: `/v1/models/${MODEL_ID}`});
  assert.equal(one.status, 200, one.text);
  assert.equal(one.json.device, entry.device, "/v1/models/{id} says the device /v1/models says");
  const admin = await request(server, {path: `/v1/admin/models/${MODEL_ID}`, headers: authHeader(ADMIN_KEY)});
  assert.equal(admin.status, 200, admin.text);
  assert.equal(admin.json.device, entry.device, "the admin view says the same device");
  return {device: entry.device, description: admin.json.description};
}

async function serve(device, work) {
  const server = await startServer({args: ["--device", device, "--admin-api-key", ADMIN_KEY], env: OPENCL_ENV});
  try {
    const listed = await listedDevice(server);
    // Sequentially, then all at once (batched in one engine step on the device).
    const alone = [];
    for (const p of PROMPTS) alone.push(await greedyChat(server, p));
    const batched = await Promise.all(PROMPTS.map((p) => greedyChat(server, p)));
    await work?.(server);
    return {...listed, alone, batched, log: server.log()};
  } finally {
    const r = await server.stop();
    assert.equal(r.code, 0, `izwi-server --device ${device} exited with ${JSON.stringify(r)}:\n${server.log().slice(-2000)}`);
  }
}

test("--device opencl: greedy chat completions equal the --device cpu server's; /v1/models names the device",
     async () => {
  const cpu = await serve("cpu");
  const opencl = await serve("opencl");

  assert.equal(cpu.device, "cpu");
  assert.match(cpu.description, /, on cpu/);
  assert.match(opencl.device, /^opencl:\d+:\d+ \(.+ \/ .+ \(driver .+\)\)$/, opencl.device);
  assert.match(opencl.description, /, on opencl:\d+:\d+ /, opencl.description);
  assert.ok(opencl.log.includes(`izwi-server: device: ${opencl.device}; kernels `), opencl.log.slice(-3000));
  assert.ok(cpu.log.includes("izwi-server: device: cpu\n"), cpu.log.slice(-3000));

  PROMPTS.forEach((p, i) => {
    assert.ok(cpu.alone[i].text.length > 0, `cpu answered '${p}' with nothing`);
    assert.equal(cpu.alone[i].usage.completion_tokens, 24);
    assert.equal(opencl.alone[i].text, cpu.alone[i].text, `'${p}': the OpenCL server's greedy text differs`);
    assert.deepEqual(opencl.alone[i].usage, cpu.alone[i].usage, `'${p}': usage differs`);
    assert.equal(opencl.batched[i].text, cpu.alone[i].text, `'${p}' batched on the OpenCL server differs`);
    assert.equal(cpu.batched[i].text, cpu.alone[i].text, `'${p}' batched on the CPU server differs`);
  });
});

test("--device opencl --kv-cache unified --scheduling-policy priority serves the CPU's greedy text", async () => {
  const cpu = await startServer();
  let want;
  try {
    want = await greedyChat(cpu, PROMPTS[1]);
  } finally {
    await cpu.stop();
  }
  const server = await startServer({
    args: ["--device", "opencl", "--kv-cache", "unified", "--kv-cache-memory-fraction", "0.01",
           "--scheduling-policy", "priority", "--admin-api-key", ADMIN_KEY],
    env: OPENCL_ENV,
  });
  try {
    const {device, description} = await listedDevice(server);
    assert.match(device, /^opencl:/);
    assert.match(description, /unified KV cache/);
    assert.match(description, /priority scheduling/);
    assert.deepEqual(await greedyChat(server, PROMPTS[1]), want);
  } finally {
    const r = await server.stop();
    assert.equal(r.code, 0, `exit ${JSON.stringify(r)}:\n${server.log().slice(-2000)}`);
  }
});

/// Runs izwi-server to its exit (it must not start serving). Resolves {code, signal, out}.
function runToExit(args, env = {}, timeoutMs = 120000) {
  return new Promise((resolve, reject) => {
    const proc = spawn(SERVER, ["--host", "127.0.0.1", "--port", "0", ...args],
                       {stdio: ["ignore", "pipe", "pipe"], env: {...process.env, ...OPENCL_ENV, ...env}});
    let out = "";
    proc.stdout.on("data", (d) => (out += d));
    proc.stderr.on("data", (d) => (out += d));
    const timer = setTimeout(() => {
      proc.kill("SIGKILL");
      reject(new Error(`izwi-server ${args.join(" ")} still runs after ${timeoutMs} ms:\n${out.slice(-2000)}`));
    }, timeoutMs);
    proc.on("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({code, signal, out});
    });
  });
}

/// A start-up refused: an exit status (no signal: no crash), not 0, the
/// reason in the output, no model loaded. A refused --device ends the process
/// before it listens; a refused model once the listener is up (as any model
/// that fails to load does).
function assertCleanFailure(r, what, pattern, {listens = false} = {}) {
  assert.equal(r.signal, null, `${what}: killed by ${r.signal} (a crash):\n${r.out}`);
  assert.notEqual(r.code, 0, `${what}: exit 0:\n${r.out}`);
  assert.match(r.out, pattern, `${what}:\n${r.out}`);
  assert.doesNotMatch(r.out, /izwi-server: loaded /, `${what}: it loaded the model:\n${r.out}`);
  if (!listens) assert.doesNotMatch(r.out, /listening on/, `${what}: it listened:\n${r.out}`);
}

test("a device that does not exist, a bad spec and a build or host without OpenCL fail cleanly at start-up",
     async () => {
  const missing = await runToExit(["--model", MODEL_DIR, "--device", "opencl:9:9"]);
  assertCleanFailure(missing, "--device opencl:9:9", /--device opencl:9:9: OpenCL: platform 9 does not exist/);
  const noDevice = await runToExit(["--model", MODEL_DIR, "--device", "opencl:0:999"]);
  assertCleanFailure(noDevice, "--device opencl:0:999", /--device opencl:0:999: OpenCL: platform 0 has no device 999/);

  for (const spec of ["gpu", "opencl:0", "opencl:x:y"]) {
    const r = await runToExit(["--model", MODEL_DIR, "--device", spec]);
    assertCleanFailure(r, `--device ${spec}`, /--device '.*' .*\(expected cpu, opencl or opencl:PLATFORM:DEVICE/);
    assert.equal(r.code, 2, `--device ${spec} is a usage error (exit 2)`);
  }
});

test("a host without any OpenCL platform: --device opencl is refused with the reason", async (t) => {
  // ocl-icd reads its vendor list from OCL_ICD_VENDORS when set: an empty
  // directory is a host with no OpenCL platform installed.
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), "izwi-no-icd-"));
  try {
    const env = {OCL_ICD_VENDORS: empty};
    const list = spawnSync(SERVER, ["--list-devices"], {encoding: "utf8", env: {...process.env, ...env}});
    if (/^opencl:/m.test(list.stdout)) {
      t.skip("this OpenCL ICD loader ignores OCL_ICD_VENDORS: cannot hide the platforms");
      return;
    }
    assert.match(list.stdout, /^cpu\n\(no OpenCL devices: no OpenCL platform is installed/, list.stdout);
    const r = await runToExit(["--model", MODEL_DIR, "--device", "opencl"], env);
    assertCleanFailure(r, "--device opencl without a platform", /--device opencl: OpenCL: no platform is installed/);
  } finally {
    fs.rmSync(empty, {recursive: true, force: true});
  }
});

test("--device opencl refuses a Whisper model: it runs on the CPU only", async () => {
  // The loader decides from config.json's model_type, before reading weights.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "izwi-whisper-"));
  try {
    fs.writeFileSync(path.join(dir, "config.json"), JSON.stringify({model_type: "whisper"}));
    const r = await runToExit(["--model", dir, "--device", "opencl"]);
    assertCleanFailure(r, "Whisper on --device opencl",
                       /architecture 'whisper' is not served on OpenCL devices .*CPU only.*--device cpu/s,
                       {listens: true});
  } finally {
    fs.rmSync(dir, {recursive: true, force: true});
  }
});
