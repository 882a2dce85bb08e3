// A second implementation of Qwen3-TTS's speech tokenizer encoder (transformers'
// MimiModel.encode as upstream's Qwen3TTSTokenizerV2Model runs it), written
// apart from izwi's C++ in plain JavaScript and float64, channel-major, with
// direct (not matmul) Euclidean distances - for the goldens izwi_tts_tests
// compares its encoder against (no torch on this machine). It reads a
// checkpoint's speech_tokenizer/{config.json, model.safetensors} (f32) and
// encodes a fixed test signal, the one the test rebuilds:
//
//   x[i] = f32(0.3 sin(2π·140 i/24000) + 0.1 sin(2π·377 i/24000 + 0.5)
//              + 0.05 sin(2π·1230 i/24000) · (1 + 0.5 sin(2π·3 i/24000))),  N = 12·1920 + 500
//
//   node test/reference/qwen3_tts_speech_encoder_goldens.mjs CHECKPOINT_DIR OUT_PREFIX
//
// writes OUT_PREFIX_latent.txt (frames × hidden floats, the downsampled frames
// the RVQ reads) and OUT_PREFIX_codes.txt (frames lines of 16 codes).
// The tests' checkpoint is izwi-make-random-qwen3-tts --shape small --seed 7
// --model-type base (build/test/models/random-qwen3-tts-small-base-icl).
import fs from "node:fs";
import path from "node:path";

const [dir, prefix] = process.argv.slice(2);
if (!dir || !prefix) {
  console.error("usage: qwen3_tts_speech_encoder_goldens.mjs CHECKPOINT_DIR OUT_PREFIX");
  process.exit(2);
}
const st = path.join(dir, "speech_tokenizer");
const root = JSON.parse(fs.readFileSync(path.join(st, "config.json"), "utf8"));
const cfg = root.encoder_config;

// safetensors: u64 header length, JSON header, then the data.
const file = fs.readFileSync(path.join(st, "model.safetensors"));
const headerLength = Number(file.readBigUInt64LE(0));
const header = JSON.parse(file.subarray(8, 8 + headerLength).toString("utf8"));
function tensor(name) {
  const info = header[name];
  if (!info) throw new Error(`missing tensor ${name}`);
  if (info.dtype !== "F32") throw new Error(`${name} is ${info.dtype}; write the checkpoint with --dtype f32`);
  const [begin, end] = info.data_offsets;
  const bytes = file.subarray(8 + headerLength + begin, 8 + headerLength + end);
  const out = new Float64Array(bytes.length / 4);
  for (let i = 0; i < out.length; ++i) out[i] = bytes.readFloatLE(i * 4);
  return { shape: info.shape, data: out };
}

// Channel-major activations: {C, T, data[c * T + t]}.
function conv(x, name, { stride = 1, dilation = 1, bias = true, replicate = false }) {
  const w = tensor(name + ".weight");
  const [out, inC, k] = w.shape;
  if (inC !== x.C) throw new Error(`${name}: ${inC} inputs, activations have ${x.C}`);
  const b = bias ? tensor(name + ".bias").data : null;
  const kEff = (k - 1) * dilation + 1, paddingTotal = kEff - stride;
  // MimiConv1d: causal left padding of paddingTotal, right padding to a whole
  // number of strides (_get_extra_padding_for_conv1d).
  const nFrames = Math.ceil((x.T - kEff + paddingTotal) / stride + 1) - 1;
  const ideal = nFrames * stride + kEff - paddingTotal;
  const extra = ideal - x.T;
  const padded = x.T + paddingTotal + extra;
  const T = Math.floor((padded - kEff) / stride) + 1;
  const at = (c, i) => {
    let j = i - paddingTotal;
    if (replicate) j = Math.min(Math.max(j, 0), x.T - 1);
    return j < 0 || j >= x.T ? 0 : x.data[c * x.T + j];
  };
  const y = new Float64Array(out * T);
  for (let o = 0; o < out; ++o)
    for (let t = 0; t < T; ++t) {
      let s = b ? b[o] : 0;
      for (let c = 0; c < inC; ++c)
        for (let j = 0; j < k; ++j) s += w.data[(o * inC + c) * k + j] * at(c, t * stride + j * dilation);
      y[o * T + t] = s;
    }
  return { C: out, T, data: y };
}

const elu = (x) => ({ ...x, data: x.data.map((v) => (v > 0 ? v : Math.expm1(v))) });
const add = (a, b) => ({ ...a, data: a.data.map((v, i) => v + b.data[i]) });

// erf in float64: Maclaurin series near 0, Lentz's continued fraction for erfc beyond.
function erf(x) {
  const ax = Math.abs(x);
  if (ax < 2.5) {
    let term = x, sum = x;
    for (let n = 1; n < 100; ++n) {
      term *= (-x * x) / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    return (2 / Math.sqrt(Math.PI)) * sum;
  }
  // erfc(x) = exp(-x²)/√π · 1/(x + 1/2/(x + 1/(x + 3/2/(x + ...))))
  let f = ax, C = ax, D = 0;
  for (let n = 1; n < 200; ++n) {
    const a = n / 2;
    D = ax + a * D;
    D = 1 / D;
    C = ax + a / C;
    const delta = C * D;
    f *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  const erfc = Math.exp(-ax * ax) / Math.sqrt(Math.PI) / f;
  return x > 0 ? 1 - erfc : erfc - 1;
}

// --- the signal ---
const N = 12 * 1920 + 500;
let x = { C: 1, T: N, data: new Float64Array(N) };
for (let i = 0; i < N; ++i) {
  const t = i / 24000;
  x.data[i] = Math.fround(
    0.3 * Math.sin(2 * Math.PI * 140 * t) + 0.1 * Math.sin(2 * Math.PI * 377 * t + 0.5) +
      0.05 * Math.sin(2 * Math.PI * 1230 * t) * (1 + 0.5 * Math.sin(2 * Math.PI * 3 * t)));
}

// --- SEANet (MimiEncoder's module list) ---
const ratios = [...cfg.upsampling_ratios].reverse();
let index = 0;
const L = () => `encoder.encoder.layers.${index++}`;
x = conv(x, L() + ".conv", {});
for (const ratio of ratios) {
  for (let j = 0; j < cfg.num_residual_layers; ++j) {
    const p = L() + ".block.";
    const d = cfg.dilation_growth_rate ** j;
    let h = conv(elu(x), p + "1.conv", { dilation: d });
    h = conv(elu(h), p + "3.conv", {});
    x = add(x, h);
  }
  index++;  // ELU
  x = conv(elu(x), L() + ".conv", { stride: ratio });
}
index++;  // ELU
x = conv(elu(x), L() + ".conv", {});

// --- transformer (time-major rows from here) ---
const H = cfg.hidden_size, T = x.T, heads = cfg.num_attention_heads, hd = cfg.head_dim;
const kvHeads = cfg.num_key_value_heads ?? heads;
let rows = Array.from({ length: T }, (_, t) => Float64Array.from({ length: H }, (_, c) => x.data[c * T + t]));
const linear = (v, w) => {
  const [out, inn] = w.shape, y = new Float64Array(out);
  for (let o = 0; o < out; ++o) {
    let s = 0;
    for (let i = 0; i < inn; ++i) s += w.data[o * inn + i] * v[i];
    y[o] = s;
  }
  return y;
};
const layerNorm = (v, w, b) => {
  let mean = 0;
  for (const e of v) mean += e;
  mean /= v.length;
  let variance = 0;
  for (const e of v) variance += (e - mean) ** 2;
  variance /= v.length;
  return v.map((e, i) => ((e - mean) / Math.sqrt(variance + cfg.norm_eps)) * w[i] + b[i]);
};
const rope = (v, pos, nHeads) => {
  const half = hd / 2;
  for (let h = 0; h < nHeads; ++h)
    for (let i = 0; i < half; ++i) {
      const angle = pos / cfg.rope_theta ** ((2 * i) / hd);
      const a = v[h * hd + i], b = v[h * hd + i + half];
      v[h * hd + i] = a * Math.cos(angle) - b * Math.sin(angle);
      v[h * hd + i + half] = b * Math.cos(angle) + a * Math.sin(angle);
    }
};
for (let l = 0; l < cfg.num_hidden_layers; ++l) {
  const p = `encoder.encoder_transformer.layers.${l}.`;
  const g = (n) => tensor(p + n);
  const n1w = g("input_layernorm.weight").data, n1b = g("input_layernorm.bias").data;
  const n2w = g("post_attention_layernorm.weight").data, n2b = g("post_attention_layernorm.bias").data;
  const s1 = g("self_attn_layer_scale.scale").data, s2 = g("mlp_layer_scale.scale").data;
  const [wq, wk, wv, wo] = ["q", "k", "v", "o"].map((n) => g(`self_attn.${n}_proj.weight`));
  const fc1 = g("mlp.fc1.weight"), fc2 = g("mlp.fc2.weight");
  const normed = rows.map((r) => layerNorm(r, n1w, n1b));
  const q = normed.map((r, t) => { const v = linear(r, wq); rope(v, t, heads); return v; });
  const k = normed.map((r, t) => { const v = linear(r, wk); rope(v, t, kvHeads); return v; });
  const v = normed.map((r) => linear(r, wv));
  rows = rows.map((r, t) => {
    const ctx = new Float64Array(heads * hd);
    for (let h = 0; h < heads; ++h) {
      const kh = Math.floor(h / (heads / kvHeads));
      const scores = [];
      for (let u = 0; u <= t; ++u) {
        let s = 0;
        for (let d = 0; d < hd; ++d) s += q[t][h * hd + d] * k[u][kh * hd + d];
        scores.push(s / Math.sqrt(hd));
      }
      const top = Math.max(...scores);
      const e = scores.map((s) => Math.exp(s - top));
      const sum = e.reduce((a, b) => a + b, 0);
      for (let u = 0; u <= t; ++u)
        for (let d = 0; d < hd; ++d) ctx[h * hd + d] += (e[u] / sum) * v[u][kh * hd + d];
    }
    const attn = linear(ctx, wo);
    return r.map((e, i) => e + s1[i] * attn[i]);
  });
  rows = rows.map((r) => {
    const mid = linear(layerNorm(r, n2w, n2b), fc1).map((e) => 0.5 * e * (1 + erf(e / Math.SQRT2)));
    const out = linear(mid, fc2);
    return r.map((e, i) => e + s2[i] * out[i]);
  });
}

// --- downsample (replicate padding, no bias) ---
x = { C: H, T, data: new Float64Array(H * T) };
rows.forEach((r, t) => r.forEach((e, c) => (x.data[c * T + t] = e)));
const frameRate = cfg.frame_rate ?? cfg._frame_rate;
const seanetRate = 24000 / cfg.upsampling_ratios.reduce((a, b) => a * b, 1);
if (seanetRate !== frameRate) {
  const stride = 2, kernel = 2 * Math.trunc(seanetRate / frameRate);
  if (tensor("encoder.downsample.conv.weight").shape[2] !== kernel) throw new Error("unexpected downsample kernel");
  x = conv(x, "encoder.downsample.conv", { stride, bias: false, replicate: true });
}
const frames = x.T;
const latent = Array.from({ length: frames }, (_, t) => Float64Array.from({ length: H }, (_, c) => x.data[c * frames + t]));

// --- split RVQ ---
const valid = root.encoder_valid_num_quantizers, semantic = cfg.num_semantic_quantizers;
const codes = Array.from({ length: frames }, () => []);
function rvq(part, first, count) {
  const q = `encoder.quantizer.${part}_residual_vector_quantizer.`;
  const proj = tensor(q + "input_proj.weight");
  const projW = { shape: [proj.shape[0], proj.shape[1]], data: proj.data };
  const residual = latent.map((r) => linear(r, projW));
  for (let layer = 0; layer < count; ++layer) {
    const sum = tensor(`${q}layers.${layer}.codebook.embed_sum`), usage = tensor(`${q}layers.${layer}.codebook.cluster_usage`).data;
    const [n, d] = sum.shape;
    residual.forEach((r, t) => {
      let best = 0, bestDistance = Infinity;
      for (let i = 0; i < n; ++i) {
        const u = Math.max(usage[i], 1e-5);
        let dist = 0;
        for (let j = 0; j < d; ++j) dist += (r[j] - sum.data[i * d + j] / u) ** 2;
        if (dist < bestDistance) (bestDistance = dist), (best = i);
      }
      codes[t][first + layer] = best;
      const u = Math.max(usage[best], 1e-5);
      for (let j = 0; j < d; ++j) r[j] -= sum.data[best * d + j] / u;
    });
  }
}
rvq("semantic", 0, semantic);
rvq("acoustic", semantic, valid - semantic);

fs.writeFileSync(prefix + "_latent.txt", latent.map((r) => Array.from(r, (e) => e.toPrecision(9)).join(" ")).join("\n") + "\n");
fs.writeFileSync(prefix + "_codes.txt", codes.map((c) => c.join(" ")).join("\n") + "\n");
console.log(`${frames} frames of ${H} latent values and ${valid} codes written to ${prefix}_{latent,codes}.txt`);
