// llama.cpp (through node-llama-cpp's prebuilt CPU binary) as the independent
// reference for izwi's Qwen3: for each prompt, the raw logits after the
// prompt, then `greedy` tokens of greedy decoding (argmax of raw logits).
//
//   node llama_cpp_reference.mjs <node_modules> <model.gguf> <prompts.json> <out_dir>
//
// prompts.json: {"prompts": [[ids...], ...], "greedy": 64, "vocab": 151936,
//                "stepLogits": 0}
// Writes <out_dir>/logits_<i>.f32 (vocab float32 values) and <out_dir>/greedy.json;
// with stepLogits = n > 0 also <out_dir>/steps_<i>.f32: n rows of vocab
// float32 values, row s the logits after greedy token s (those that chose
// token s + 1).
import {createRequire} from "node:module";
import fs from "node:fs";
import path from "node:path";

const [modules, modelPath, promptsPath, outDir] = process.argv.slice(2);
const require = createRequire(path.join(modules, "noop.js"));
const {getLlama} = await import(require.resolve("node-llama-cpp"));
const {prompts, greedy, vocab, stepLogits = 0} = JSON.parse(fs.readFileSync(promptsPath, "utf8"));

const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath, useMmap: true});
// One thread: a reference run needs no speed, and ggml's spinning workers
// oversubscribe a small, busy machine badly.
// The KV cache in f32 and flash attention off (llama.cpp's defaults are an
// f16 cache and, on this build, flash attention, whose CPU path rounds
// through f16): then both sides compute in f32 and differ only by summation
// order. With the defaults llama.cpp itself is ~5e-4 (relative) away from a
// float64 reference.
const context = await model.createContext({
  contextSize: 1024, batchSize: 512, sequences: 1, threads: 1, flashAttention: false,
  experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32"});
const sequence = context.getSequence();

function argmaxAndDense(logitsMap, size) {
  const dense = new Float32Array(size);
  let best = -1, bestValue = -Infinity;
  for (const [token, value] of logitsMap) {
    dense[token] = value;
    if (value > bestValue || (value === bestValue && token < best)) { best = token; bestValue = value; }
  }
  return {best, dense};
}

const size = vocab;
const greedyIds = [];
for (let i = 0; i < prompts.length; i++) {
  await sequence.clearHistory();
  const prompt = prompts[i];
  const input = prompt.map((t, j) => j === prompt.length - 1 ? [t, {generateNext: {logits: true}}] : t);
  const out = await sequence.controlledEvaluate(input);
  let {best, dense} = argmaxAndDense(out[out.length - 1].next.logits, size);
  fs.writeFileSync(path.join(outDir, `logits_${i}.f32`), Buffer.from(dense.buffer));
  const ids = [];
  const steps = new Float32Array(Math.min(stepLogits, greedy) * size);
  for (let step = 0; step < greedy; step++) {
    ids.push(best);
    if (step < stepLogits) {
      const next = await sequence.controlledEvaluate([[best, {generateNext: {logits: true}}]]);
      ({best, dense} = argmaxAndDense(next[0].next.logits, size));
      steps.set(dense, step * size);
      continue;
    }
    // llama.cpp's own greedy choice (temperature 0 is argmax of the raw
    // logits); asking for the token rather than the logits keeps node from
    // building a 152k-entry map per step.
    const next = await sequence.controlledEvaluate([[best, {generateNext: {token: true, options: {temperature: 0}}}]]);
    best = next[0].next.token;
  }
  if (stepLogits > 0) fs.writeFileSync(path.join(outDir, `steps_${i}.f32`), Buffer.from(steps.buffer));
  greedyIds.push(ids);
}
fs.writeFileSync(path.join(outDir, "greedy.json"), JSON.stringify({greedy: greedyIds}));
await context.dispose();
await model.dispose();
