// /v1/audio/speech end to end (issue 13): izwi-server serving a random-weight
// Qwen3-TTS (small shape, the real Qwen3 tokenizer) beside the Qwen3, driven
// by the official openai SDK. The weights are untrained, so the audio is
// noise-like: the tests check the protocol, that every response_format
// decodes (izwi-audio-info: izwi's own decoder) to the length the frames
// make, that streamed bytes equal whole ones for a seed, the SSE events'
// shapes, that speed 2 halves the length, the errors, and that a client that
// hangs up frees the engine; and beside it a random Base model that speaks in
// voices cloned from reference audio, inline or saved with /v1/audio/voices
// (kept in --voices-dir across a restart).
import {after, before, describe, test} from "node:test";
import assert from "node:assert/strict";
import {spawnSync} from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import {MODEL_ID, loadOpenAI, parseSse, request, startServer, waitForIdleEngine} from "./harness.mjs";

const TTS_DIR = process.env.IZWI_E2E_TTS;
const TTS_BASE_DIR = process.env.IZWI_E2E_TTS_BASE;
const AUDIO_INFO = process.env.IZWI_AUDIO_INFO;
if (!TTS_DIR || !TTS_BASE_DIR || !AUDIO_INFO) throw new Error("run through run.mjs --require-tts (IZWI_E2E_TTS unset)");
const TTS_ID = path.basename(TTS_DIR);
const TTS_BASE_ID = path.basename(TTS_BASE_DIR);
const RATE = 24000;
const SAMPLES_PER_FRAME = 1920;
const FORMATS = ["mp3", "opus", "aac", "flac", "wav", "pcm"];
const {OpenAI, BadRequestError} = await loadOpenAI();

// Few frames keep a run short on a shared machine; a seed makes it reproducible.
const BASE = {model: TTS_ID, input: "Hello from izwi, a test of speech synthesis.", voice: "vivian", seed: 11,
              max_tokens: 24};

let server;
let client;
let workDir;
let voicesDir;
before(async () => {
  workDir = fs.mkdtempSync(path.join(os.tmpdir(), "izwi-speech-"));
  voicesDir = path.join(workDir, "voices");  // created by the server
  server = await startServer({args: ["--model", TTS_DIR, "--model", TTS_BASE_DIR, "--voices-dir", voicesDir],
                              readyTimeoutMs: 180000});
  client = new OpenAI({apiKey: "unused", baseURL: server.baseURL, maxRetries: 0, timeout: 300000});
});
after(async () => {
  if (workDir) fs.rmSync(workDir, {recursive: true, force: true});
  const r = await server?.stop();
  if (r) assert.equal(r.code, 0, `izwi-server exited with ${JSON.stringify(r)}; output:\n${server.log().slice(-3000)}`);
});

async function speak(extra = {}) {
  const response = await client.audio.speech.create({...BASE, ...extra});
  return Buffer.from(await response.arrayBuffer());
}

/// The bytes of a streamed answer, and how many pieces they came in.
async function speakStreamed(extra) {
  const response = await client.audio.speech.create({...BASE, ...extra});
  const reader = response.body.getReader();
  const pieces = [];
  for (;;) {
    const {done, value} = await reader.read();
    if (done) break;
    pieces.push(Buffer.from(value));
  }
  return {bytes: Buffer.concat(pieces), pieces: pieces.length, headers: response.headers};
}

/// What izwi's decoder reads from `bytes`.
function decodeInfo(bytes, ext) {
  const file = path.join(workDir, `speech-${Math.random().toString(16).slice(2)}.${ext}`);
  fs.writeFileSync(file, bytes);
  const r = spawnSync(AUDIO_INFO, [file], {encoding: "utf8"});
  const info = JSON.parse(r.stdout.trim());
  assert.equal(info.error, undefined, `${ext} does not decode: ${info.error}`);
  return info;
}

/// A wav with its two size fields set as the streamed header has them (0xFFFFFFFF).
function asStreamedWav(whole) {
  const copy = Buffer.from(whole);
  copy.writeUInt32LE(0xFFFFFFFF, 4);
  copy.writeUInt32LE(0xFFFFFFFF, 40);
  return copy;
}

describe("serving a random Qwen3-TTS", () => {
  test("listed, logged as untrained, its voices and OpenAI's names", async () => {
    const ids = (await client.models.list()).data.map((m) => m.id);
    assert.ok(ids.includes(TTS_ID) && ids.includes(MODEL_ID), `models: ${ids}`);
    assert.match(server.log(), new RegExp(`${TTS_ID}.*UNTRAINED|UNTRAINED.*${TTS_ID}`));
    const r = await request(server, {path: "/v1/audio/voices"});
    assert.equal(r.status, 200);
    const mine = r.json.data.filter((v) => v.model === TTS_ID);
    const speakers = mine.filter((v) => v.type === "speaker").map((v) => v.id).sort();
    assert.deepEqual(speakers, ["eric", "ryan", "vivian"]);
    const alloy = mine.find((v) => v.id === "alloy");
    assert.ok(alloy && alloy.type === "alias" && speakers.includes(alloy.speaker), JSON.stringify(alloy));
  });
});

describe("/v1/audio/speech", () => {
  let pcm;
  let frames;
  before(async () => {
    pcm = await speak({response_format: "pcm"});
  });

  test("pcm: 24 kHz s16le, whole frames of 1920 samples", () => {
    assert.equal(pcm.length % 2, 0);
    const samples = pcm.length / 2;
    assert.equal(samples % SAMPLES_PER_FRAME, 0, `${samples} samples`);
    frames = samples / SAMPLES_PER_FRAME;
    assert.ok(frames >= 2 && frames <= BASE.max_tokens, `${frames} frames`);
    const values = new Int16Array(pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.length));
    assert.ok(values.some((v) => v !== 0), "the audio is not silent");
  });

  test("normalization_options: the input is spoken as its words; without them, as written", async () => {
    const written = {input: "It costs $12.50 at 9:05 pm.", response_format: "pcm", max_tokens: 6};
    const asWords = await speak({...written, input: "It costs twelve dollars and fifty cents at nine oh five p m."});
    const normalized = await speak({...written, normalization_options: {}});
    const asWritten = await speak(written);
    assert.ok(normalized.equals(asWords), "a normalized request speaks exactly as its words written out");
    assert.ok(!asWritten.equals(asWords), "without normalization_options the input is spoken as written");
    const off = await speak({...written, normalization_options: {normalize: false}});
    assert.ok(off.equals(asWritten), "normalize: false is the input as written");
  });

  test("every response_format decodes to the frames' duration", async () => {
    const seconds = pcm.length / 2 / RATE;
    for (const format of FORMATS.filter((f) => f !== "pcm")) {
      const bytes = await speak({response_format: format});
      const info = decodeInfo(bytes, format === "opus" ? "ogg" : format);
      assert.equal(info.channels, 1, format);
      assert.equal(info.sample_rate, RATE, `${format}: ${JSON.stringify(info)}`);
      // wav and flac are exact; lossy codecs pad their first and last frames.
      const slack = {wav: 0, flac: 0, mp3: 0.1, opus: 0.05, aac: 0.15}[format];
      assert.ok(Math.abs(info.duration - seconds) <= slack + 1e-6,
                `${format}: ${info.duration} s decoded, ${seconds} s spoken`);
      if (format === "wav") assert.ok(bytes.subarray(44).equals(pcm), "wav carries the pcm samples");
    }
  });

  test("stream_format audio: chunked, the same bytes as the whole answer", async () => {
    for (const format of FORMATS) {
      const whole = await speak({response_format: format});
      const streamed = await speakStreamed({response_format: format, stream_format: "audio"});
      assert.equal(streamed.headers.get("transfer-encoding"), "chunked", format);
      const expected = format === "wav" ? asStreamedWav(whole) : whole;
      assert.ok(streamed.bytes.equals(expected), `${format}: ${streamed.bytes.length} streamed bytes vs ${whole.length}`);
    }
  });

  test("stream_format sse: speech.audio.delta events, then speech.audio.done with usage", async () => {
    const whole = await speak({response_format: "mp3"});
    const response = await client.audio.speech.create({...BASE, response_format: "mp3", stream_format: "sse"});
    assert.match(String(response.headers.get("content-type")), /text\/event-stream/);
    const {events, problems} = parseSse(await response.text());
    assert.deepEqual(problems, []);
    const parsed = events.map((e) => JSON.parse(e));
    const done = parsed.at(-1);
    assert.deepEqual(Object.keys(done).sort(), ["type", "usage"]);
    assert.equal(done.type, "speech.audio.done");
    assert.deepEqual(Object.keys(done.usage).sort(), ["input_tokens", "output_tokens", "total_tokens"]);
    assert.equal(done.usage.output_tokens, frames);
    assert.ok(done.usage.input_tokens > 0);
    assert.equal(done.usage.total_tokens, done.usage.input_tokens + done.usage.output_tokens);
    const deltas = parsed.slice(0, -1);
    assert.ok(deltas.length >= 1);
    for (const d of deltas) assert.deepEqual(Object.keys(d).sort(), ["audio", "type"]);
    assert.ok(deltas.every((d) => d.type === "speech.audio.delta"));
    assert.ok(Buffer.concat(deltas.map((d) => Buffer.from(d.audio, "base64"))).equals(whole),
              "the deltas make the whole file");
  });

  test("speed 2.0 halves the duration, 0.5 doubles it (pitch kept: Rubber Band)", async () => {
    const samples = pcm.length / 2;
    const fast = await speak({response_format: "pcm", speed: 2.0});
    const slow = await speak({response_format: "pcm", speed: 0.5});
    assert.ok(Math.abs(fast.length / 2 - samples / 2) <= 0.1 * samples / 2, `speed 2: ${fast.length / 2} of ${samples}`);
    assert.ok(Math.abs(slow.length / 2 - samples * 2) <= 0.1 * samples * 2, `speed 0.5: ${slow.length / 2} of ${samples}`);
  });

  test("a seed reproduces the audio; another seed changes it; OpenAI's voice names work", async () => {
    assert.ok((await speak({response_format: "pcm"})).equals(pcm));
    assert.ok(!(await speak({response_format: "pcm", seed: 12})).equals(pcm));
    const alloy = await speak({response_format: "pcm", voice: "alloy"});
    assert.ok(alloy.length > 0);
  });
});

describe("voice cloning (Base model)", () => {
  /// 16-bit mono WAV of `samples` (Int16Array) at 24 kHz.
  function wav(samples) {
    const h = Buffer.alloc(44);
    h.write("RIFF", 0);
    h.writeUInt32LE(36 + samples.byteLength, 4);
    h.write("WAVEfmt ", 8);
    h.writeUInt32LE(16, 16);
    h.writeUInt16LE(1, 20);
    h.writeUInt16LE(1, 22);
    h.writeUInt32LE(RATE, 24);
    h.writeUInt32LE(RATE * 2, 28);
    h.writeUInt16LE(2, 32);
    h.writeUInt16LE(16, 34);
    h.write("data", 36);
    h.writeUInt32LE(samples.byteLength, 40);
    return Buffer.concat([h, Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength)]);
  }
  const tone = new Int16Array(RATE * 2);
  for (let i = 0; i < tone.length; ++i) tone[i] = Math.round(8000 * Math.sin(i * 0.05) + 3000 * Math.sin(i * 0.13));
  const reference = wav(tone);
  const cloned = {...BASE, model: TTS_BASE_ID, response_format: "pcm", max_tokens: 8};

  test("reference_audio inline: the Base model speaks; a CustomVoice refuses naming the field", async () => {
    const {voice, ...noVoice} = cloned;
    const r = await client.audio.speech.create({...noVoice, reference_audio: reference.toString("base64"),
                                                reference_text: "A tone."});
    const pcm = Buffer.from(await r.arrayBuffer());
    assert.ok(pcm.length > 0 && (pcm.length / 2) % SAMPLES_PER_FRAME === 0, `${pcm.length} bytes`);
    await assert.rejects(client.audio.speech.create({...BASE, reference_audio: reference.toString("base64")}),
                         (e) => e instanceof BadRequestError && e.param === "reference_audio" && /Base model/.test(e.message));
    await assert.rejects(client.audio.speech.create({...cloned, voice: "alloy"}),
                         (e) => e instanceof BadRequestError && e.param === "voice");
  });

  /// POST /v1/audio/voices with the reference tone.
  function saveVoice(target, name) {
    const boundary = "izwiE2eVoice";
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\n${name}\r\n` +
                  `--${boundary}\r\nContent-Disposition: form-data; name="reference_text"\r\n\r\nA tone.\r\n` +
                  `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="tone.wav"\r\n\r\n`),
      reference, Buffer.from(`\r\n--${boundary}--\r\n`)]);
    return request(target, {method: "POST", path: "/v1/audio/voices", body,
                            headers: {"content-type": `multipart/form-data; boundary=${boundary}`}});
  }

  test("a saved voice: stored, listed, spoken in (seeded: the same as inline), deleted", async () => {
    const saved = await saveVoice(server, "tone");
    assert.equal(saved.status, 200, saved.text);
    const id = saved.json.id;
    assert.match(id, /^voice_/);
    assert.equal(saved.json.reference_text, "A tone.");
    assert.ok(Math.abs(saved.json.duration - 2) < 0.01);
    const listed = await request(server, {path: "/v1/audio/voices"});
    assert.ok(listed.json.data.some((v) => v.id === id && v.type === "saved"));
    const viaId = Buffer.from(await (await client.audio.speech.create({...cloned, voice: {id}})).arrayBuffer());
    const {voice, ...noVoice} = cloned;
    // The saved voice keeps its transcript: in-context cloning, as inline with both.
    const inline = Buffer.from(await (await client.audio.speech.create(
        {...noVoice, reference_audio: reference.toString("base64"), reference_text: "A tone."})).arrayBuffer());
    assert.ok(viaId.length > 0 && viaId.equals(inline), "a saved voice speaks as its recording inline");
    const xvectorOnly = Buffer.from(await (await client.audio.speech.create(
        {...noVoice, reference_audio: reference.toString("base64")})).arrayBuffer());
    assert.ok(!xvectorOnly.equals(inline), "without the transcript: x-vector cloning, other audio");
    await assert.rejects(client.audio.speech.create({...BASE, voice: {id}}),
                         (e) => e instanceof BadRequestError && e.param === "voice");
    assert.equal((await request(server, {method: "DELETE", path: `/v1/audio/voices/${id}`})).status, 200);
    await assert.rejects(client.audio.speech.create({...cloned, voice: {id}}),
                         (e) => e instanceof BadRequestError && e.param === "voice");
    assert.ok(!fs.existsSync(path.join(voicesDir, `${id}.json`)), "deleting removes the voice's files");
  });

  test("--voices-dir: a saved voice survives a restart and speaks the same bytes", async () => {
    const saved = await saveVoice(server, "kept");
    assert.equal(saved.status, 200, saved.text);
    const id = saved.json.id;
    assert.ok(fs.existsSync(path.join(voicesDir, `${id}.json`)) && fs.existsSync(path.join(voicesDir, `${id}.recording`)));
    const spokenBefore = Buffer.from(await (await client.audio.speech.create({...cloned, voice: {id}})).arrayBuffer());
    const restarted = await startServer({args: ["--model", TTS_BASE_DIR, "--voices-dir", voicesDir],
                                         readyTimeoutMs: 180000});
    try {
      const listed = await request(restarted, {path: "/v1/audio/voices"});
      const voice = listed.json.data.find((v) => v.id === id);
      assert.ok(voice, `${id} not listed after the restart: ${listed.text}`);
      assert.equal(voice.name, "kept");
      assert.equal(voice.reference_text, "A tone.");
      assert.equal(voice.created_at, saved.json.created_at);
      const again = new OpenAI({apiKey: "unused", baseURL: restarted.baseURL, maxRetries: 0, timeout: 300000});
      const spokenAfter = Buffer.from(await (await again.audio.speech.create({...cloned, voice: {id}})).arrayBuffer());
      assert.ok(spokenAfter.length > 0 && spokenAfter.equals(spokenBefore), "the restarted server speaks the voice as before");
      assert.match(restarted.log(), /saved voices: 1 read from /);
    } finally {
      const r = await restarted.stop();
      assert.equal(r.code, 0, `the restarted izwi-server exited with ${JSON.stringify(r)}`);
    }
  });
});

describe("errors", () => {
  async function rejects(extra, param, words) {
    await assert.rejects(client.audio.speech.create({...BASE, ...extra}), (e) => {
      assert.ok(e instanceof BadRequestError, `${JSON.stringify(extra).slice(0, 80)}: ${e?.constructor?.name}: ${e?.message}`);
      assert.equal(e.status, 400);
      assert.equal(e.param, param, `${JSON.stringify(extra).slice(0, 80)}: ${e.message}`);
      if (words) assert.match(e.message, words);
      return true;
    });
  }

  test("400 naming the field", async () => {
    await rejects({input: ""}, "input");
    await rejects({input: "a".repeat(4097)}, "input", /4097/);
    await rejects({speed: 5}, "speed");
    await rejects({speed: 0.1}, "speed");
    await rejects({response_format: "ogg"}, "response_format");
    await rejects({stream_format: "video"}, "stream_format");
    await rejects({voice: "nobody"}, "voice", /vivian/);
    await rejects({voice: {id: "voice_unknown"}}, "voice");
    await rejects({language: "klingon"}, "language");
    await rejects({reference_audio: Buffer.from("RIFF").toString("base64")}, "reference_audio", /Base model/);
    await rejects({model: TTS_BASE_ID, reference_audio: Buffer.from("not audio").toString("base64")}, "reference_audio",
                  /decode/);
    await rejects({max_tokens: 0}, "max_tokens");
  });

  test("a client that hangs up mid-stream frees the engine", async () => {
    const controller = new AbortController();
    const response = await client.audio.speech.create(
        {...BASE, max_tokens: 2000, response_format: "pcm", stream_format: "audio"}, {signal: controller.signal});
    const reader = response.body.getReader();
    const first = await reader.read();
    assert.ok(!first.done && first.value.length > 0);
    controller.abort();
    await reader.cancel().catch(() => {});
    const idle = await waitForIdleEngine(server, {timeoutMs: 30000});
    assert.ok(idle.ok, `engine still busy: ${JSON.stringify({...idle, text: undefined})}`);
    assert.ok((await speak({response_format: "pcm", max_tokens: 2})).length > 0, "the server still speaks");
  });
});
