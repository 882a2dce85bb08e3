// /v1/audio/transcriptions and /v1/audio/translations end to end (issue 12):
// izwi-server serving the random-weight Qwen3 and a random-weight Whisper
// (tiny shape, the real tokenizer) at once, driven over raw HTTP with
// multipart uploads of the shared fixtures (jfk.wav). The weights are
// untrained, so the text is gibberish: the tests check the protocol, the
// formats' agreement with each other, streaming = non-streaming, the error
// answers, and that a client that hangs up frees the engine.
import {after, before, describe, test} from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import {setTimeout as sleep} from "node:timers/promises";

import {
  HOST, MODEL_ID, checkErrorEnvelope, getMetrics, loadOpenAI, metricValue, parseSse, request, startServer,
  waitForIdleEngine,
} from "./harness.mjs";

const WHISPER_DIR = process.env.IZWI_E2E_WHISPER;
const FIXTURES = process.env.IZWI_FIXTURES_DIR;
if (!WHISPER_DIR || !FIXTURES) throw new Error("run through run.mjs --require-whisper (IZWI_E2E_WHISPER unset)");
const WHISPER_ID = path.basename(WHISPER_DIR);
const JFK = fs.readFileSync(path.join(FIXTURES, "audio/jfk.wav"));
const MAX_AUDIO_S = 45;

/// A 16-bit mono WAV of `samples` (Int16Array) at `rate`.
function wav(samples, rate = 16000) {
  const data = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
  const h = Buffer.alloc(44);
  h.write("RIFF", 0);
  h.writeUInt32LE(36 + data.length, 4);
  h.write("WAVEfmt ", 8);
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * 2, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write("data", 36);
  h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]);
}

/// jfk.wav's samples (its data chunk), repeated to `seconds`.
function jfkRepeated(seconds) {
  const at = JFK.indexOf("data");
  const pcm = JFK.subarray(at + 8, at + 8 + JFK.readUInt32LE(at + 4));
  const one = new Int16Array(pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.length));
  const out = new Int16Array(seconds * 16000);
  for (let i = 0; i < out.length; ++i) out[i] = one[i % one.length];
  return wav(out);
}

/// multipart/form-data of `fields` ([name, value] or [name, {filename, data}]).
function form(fields) {
  const boundary = `izwi${Math.random().toString(16).slice(2)}`;
  const parts = [];
  for (const [name, value] of fields) {
    if (value && typeof value === "object" && "data" in value) {
      parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${value.filename}"\r\n` +
                             `Content-Type: application/octet-stream\r\n\r\n`));
      parts.push(value.data, Buffer.from("\r\n"));
    } else {
      parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
    }
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return {body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}`};
}

let server;
before(async () => {
  server = await startServer({args: ["--model", WHISPER_DIR, "--max-audio-s", String(MAX_AUDIO_S)],
                              readyTimeoutMs: 180000});
});
after(async () => {
  const r = await server?.stop();
  if (r) assert.equal(r.code, 0, `izwi-server exited with ${JSON.stringify(r)}; output:\n${server.log().slice(-3000)}`);
});

// Two requests for the same text: the same tokens, times and fields, and
// log-probabilities to float rounding. A request that finds its decoder
// prompt in the prefix cache runs fewer rows through each matmul, and
// Whisper's matmuls do not promise a row the same bits at every row count
// (on AVX2 the average log-probability moved by 2e-6).
function assertSameTranscription(actual, expected, message) {
  const strip = (segments) => segments.map(({avg_logprob, ...rest}) => rest);
  const stripped = (r) => (r.segments ? {...r, segments: strip(r.segments)} : r);
  assert.deepEqual(stripped(actual), stripped(expected), message);
  (expected.segments || []).forEach((s, i) =>
    assert.ok(Math.abs(s.avg_logprob - actual.segments[i].avg_logprob) < 1e-5,
              `${message}: segment ${i} avg_logprob ${actual.segments[i].avg_logprob} against ${s.avg_logprob}`));
}

/** A streamed transcription's answer: 200, well-formed SSE ending in
 *  transcript.text.done; its events parsed (`deltas`: all but the last). */
function transcriptStream(r) {
  assert.equal(r.status, 200, r.text);
  const {events, problems} = parseSse(r.text);
  assert.deepEqual(problems, []);
  const parsed = events.map((e) => JSON.parse(e));
  const done = parsed.at(-1);
  assert.equal(done.type, "transcript.text.done");
  return {done, deltas: parsed.slice(0, -1)};
}

function upload(fields, {route = "/v1/audio/transcriptions", file = JFK, filename = "jfk.wav", model = WHISPER_ID} = {}) {
  const all = [["file", {filename, data: file}], ...(model ? [["model", model]] : []), ...fields];
  const {body, contentType} = form(all);
  return request(server, {method: "POST", path: route, headers: {"content-type": contentType}, body, timeoutMs: 300000});
}

/// Streams a transcription of `fields` over a raw connection, waits until
/// `hangUpWhen()` (polled) says the engine is busy with it, then drops the
/// connection as a client that goes away would. Resolves with the bytes
/// received before the hang-up.
function uploadThenHangUp(fields, hangUpWhen, {pollMs = 20, timeoutMs = 60000} = {}) {
  const {body, contentType} = form(fields);
  let received = "";
  return new Promise((resolve) => {
    const req = http.request({host: HOST, port: server.port, method: "POST", path: "/v1/audio/transcriptions",
                              headers: {"content-type": contentType, "content-length": body.length}});
    req.on("error", () => resolve(received));
    req.on("response", async (res) => {
      res.on("error", () => resolve(received));
      res.on("data", (chunk) => { received += chunk; });
      const deadline = Date.now() + timeoutMs;
      while (!(await hangUpWhen()) && Date.now() < deadline) await sleep(pollMs);
      req.destroy();
      resolve(received);
    });
    req.end(body);
  });
}

describe("serving Whisper beside Qwen3", () => {
  test("both models are listed", async () => {
    const r = await request(server, {path: "/v1/models"});
    assert.equal(r.status, 200);
    const ids = r.json.data.map((m) => m.id);
    assert.ok(ids.includes(WHISPER_ID) && ids.includes(MODEL_ID), `models: ${ids}`);
    assert.match(server.log(), /UNTRAINED/, "the random-weight Whisper is logged as untrained");
  });
});

describe("/v1/audio/transcriptions", () => {
  let json, verbose;
  before(async () => {
    json = await upload([["response_format", "json"]]);
    verbose = await upload([["response_format", "verbose_json"], ["timestamp_granularities[]", "segment"]]);
  });

  test("verbose_json with word timestamps: words that make up the text, in order, within the audio", async () => {
    const r = await upload([["response_format", "verbose_json"], ["timestamp_granularities[]", "word"]]);
    assert.equal(r.status, 200, r.text);
    const v = r.json;
    assert.ok(Array.isArray(v.words), `no words: ${r.text.slice(0, 300)}`);
    assert.ok(!("segments" in v), "word granularity alone gives no segments, as OpenAI's");
    assert.ok(v.words.length > 0);
    let last = 0;
    for (const w of v.words) {
      assert.deepEqual(Object.keys(w).sort(), ["end", "start", "word"]);
      assert.ok(w.start >= last - 1e-9 && w.start <= w.end && w.end <= v.duration + 0.02, `word ${JSON.stringify(w)}`);
      last = w.start;
    }
    // The words are the text's, in order: joined without spaces they equal the text without spaces.
    const squash = (t) => t.replace(/\s+/g, "");
    assert.equal(squash(v.words.map((w) => w.word).join("")), squash(v.text));
    const both = await upload([["response_format", "verbose_json"], ["timestamp_granularities[]", "word"],
                               ["timestamp_granularities[]", "segment"]]);
    assert.equal(both.status, 200, both.text);
    assert.ok(Array.isArray(both.json.segments) && Array.isArray(both.json.words));
    assert.deepEqual(both.json.words, v.words, "the same audio gives the same words");
  });

  test("json: text and the duration usage", () => {
    assert.equal(json.status, 200, json.text);
    assert.equal(typeof json.json.text, "string");
    assert.deepEqual(json.json.usage, {type: "duration", seconds: 11});
  });

  test("verbose_json: task, detected language, duration, segments that make up the text", () => {
    assert.equal(verbose.status, 200, verbose.text);
    const v = verbose.json;
    assert.equal(v.task, "transcribe");
    assert.equal(typeof v.language, "string");
    assert.ok(v.language.length > 1, `language ${v.language}`);
    assert.ok(Math.abs(v.duration - 11.0) < 0.01, `duration ${v.duration}`);
    assert.deepEqual(v.usage, {type: "duration", seconds: 11});
    assert.ok(Array.isArray(v.segments));
    for (const s of v.segments) {
      for (const k of ["id", "seek", "start", "end", "text", "tokens", "temperature", "avg_logprob",
                       "compression_ratio", "no_speech_prob"])
        assert.ok(k in s, `segment lacks ${k}: ${JSON.stringify(s)}`);
      assert.ok(s.start <= s.end && s.end <= v.duration + 0.02, `segment times ${s.start}..${s.end}`);
    }
    assert.equal(v.segments.map((s) => s.text).join("").trimStart(), v.text);
    // Greedy first, fallback sampling seeded: the same upload gives the same text.
    assert.equal(v.text, json.json.text);
  });

  test("srt, vtt and text agree with verbose_json's segments", async () => {
    const spoken = verbose.json.segments.filter((s) => s.text.trim() !== "");
    const srt = await upload([["response_format", "srt"]]);
    assert.equal(srt.status, 200);
    assert.match(String(srt.headers["content-type"]), /text\/plain/);
    const cues = srt.text.split("\n\n").filter((c) => c !== "");
    assert.equal(cues.length, spoken.length, srt.text);
    cues.forEach((cue, i) => assert.match(cue, new RegExp(`^${i + 1}\\n\\d\\d:\\d\\d:\\d\\d,\\d{3} --> \\d\\d:\\d\\d:\\d\\d,\\d{3}\\n`)));
    const vtt = await upload([["response_format", "vtt"]]);
    assert.equal(vtt.status, 200);
    assert.ok(vtt.text.startsWith("WEBVTT\n\n"), vtt.text.slice(0, 50));
    assert.equal(vtt.text.split("\n\n").filter((c) => c !== "").length - 1, spoken.length);
    const text = await upload([["response_format", "text"]]);
    assert.equal(text.status, 200);
    assert.equal(text.text, `${json.json.text}\n`);
  });

  test("stream=true: transcript.text.delta events, then transcript.text.done; the same text", async () => {
    const r = await upload([["stream", "true"], ["include[]", "logprobs"]]);
    assert.equal(r.status, 200);
    assert.match(String(r.headers["content-type"]), /text\/event-stream/);
    const {events, problems} = parseSse(r.text);
    assert.deepEqual(problems, []);
    const parsed = events.map((e) => JSON.parse(e));
    const done = parsed.at(-1);
    assert.equal(done.type, "transcript.text.done");
    const deltas = parsed.slice(0, -1);
    for (const d of deltas) assert.equal(d.type, "transcript.text.delta");
    assert.equal(deltas.map((d) => d.delta).join(""), done.text);
    assert.equal(done.text, json.json.text, "streamed text = non-streamed text");
    assert.deepEqual(done.usage, {type: "duration", seconds: 11});
    assert.ok(Array.isArray(done.logprobs));
    for (const lp of done.logprobs) assert.ok(typeof lp.token === "string" && lp.logprob <= 0 && Array.isArray(lp.bytes));
  });

  test("stream=true with verbose_json: the done event carries verbose_json's segments (izwi's extension)", async () => {
    const r = await upload([["stream", "true"], ["response_format", "verbose_json"],
                            ["timestamp_granularities[]", "segment"]]);
    assert.equal(r.status, 200, r.text);
    const {events, problems} = parseSse(r.text);
    assert.deepEqual(problems, []);
    const done = JSON.parse(events.at(-1));
    assert.equal(done.type, "transcript.text.done");
    assert.equal(done.text, verbose.json.text);
    assertSameTranscription({segments: done.segments}, {segments: verbose.json.segments},
                            "the segments of the non-streamed verbose_json");
    assert.equal(done.language, verbose.json.language);
    assert.equal(done.duration, verbose.json.duration);
  });

  test("chunking_strategy auto: under 30 s the VAD path is the sequential one (the same text)", async () => {
    const r = await upload([["chunking_strategy", "auto"]]);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.text, json.json.text);
  });

  test("silence gives empty text, with or without chunking", async () => {
    const silence = {file: wav(new Int16Array(16000 * 3)), filename: "silence.wav"};
    for (const fields of [[], [["chunking_strategy", JSON.stringify({type: "server_vad", threshold: 0.5})]]]) {
      const quiet = await upload(fields, silence);
      assert.equal(quiet.status, 200, quiet.text);
      assert.deepEqual(quiet.json, {text: "", usage: {type: "duration", seconds: 3}});
    }
  });

  test("long audio: the sequential algorithm moves through windows; the VAD path answers too", async () => {
    const long = {file: jfkRepeated(40), filename: "long.wav"};
    const v = await upload([["response_format", "verbose_json"]], long);
    assert.equal(v.status, 200, v.text);
    assert.ok(Math.abs(v.json.duration - 40) < 0.01);
    for (const s of v.json.segments) assert.ok(s.end <= 40.0 + 1e-6, `segment end ${s.end}`);
    // 40 s is two windows at least: text from a later one carries its seek (mel frames) > 0.
    assert.ok(v.json.segments.some((s) => s.seek > 0 && s.text !== ""),
              `no segment from a second window: ${JSON.stringify(v.json.segments.map((s) => [s.seek, s.start, s.end]))}`);
    const chunked = await upload([["chunking_strategy", "auto"], ["response_format", "verbose_json"]], long);
    assert.equal(chunked.status, 200, chunked.text);
    assert.equal(chunked.json.segments.map((s) => s.text).join("").trimStart(), chunked.json.text);
    for (let i = 1; i < chunked.json.segments.length; ++i)
      assert.ok(chunked.json.segments[i].start >= chunked.json.segments[i - 1].start, "segments out of audio order");
    // Over one window, Silero's regions reach the transcriber while it
    // decodes (VadPass): streamed deltas, in audio order, are the same text.
    const {done, deltas} = transcriptStream(await upload([["chunking_strategy", "auto"], ["stream", "true"]], long));
    assert.equal(done.text, chunked.json.text);
    assert.equal(deltas.filter((e) => e.type === "transcript.text.delta").map((e) => e.delta).join("").trimStart(),
                 chunked.json.text);
  });

  test("no_timestamps=true (whisper.cpp server's field): one segment per window, no timestamp tokens", async () => {
    const v = await upload([["response_format", "verbose_json"], ["no_timestamps", "true"], ["language", "en"]]);
    assert.equal(v.status, 200, v.text);
    assert.equal(v.json.segments.length, 1, JSON.stringify(v.json.segments.map((s) => [s.start, s.end])));
    const [segment] = v.json.segments;
    assert.equal(segment.start, 0);
    assert.ok(Math.abs(segment.end - v.json.duration) < 0.01, `segment ends at ${segment.end}`);
    assert.ok(segment.tokens.length > 0 && segment.tokens.every((t) => t < 50257), "a timestamp or special token in the text");
    assert.equal(v.json.text, segment.text.trim());
    const e = checkErrorEnvelope(assert, await upload([["no_timestamps", "perhaps"]]), 400, "no_timestamps=perhaps");
    assert.equal(e.param, "no_timestamps");
  });

  test("temperature_inc (whisper.cpp server's field): 0 gives one decode per window at the given temperature", async () => {
    // The e2e weights decode jfk.wav without a fallback (log-probability
    // about -0.4), so the default answer is the same single decode; the
    // fallback itself is tested on a fake decoder (transcription_test.cpp).
    const fields = [["response_format", "verbose_json"], ["temperature", "0"]];
    const once = await upload([...fields, ["temperature_inc", "0"]]);
    assert.equal(once.status, 200, once.text);
    assert.ok(once.json.segments.every((s) => s.temperature === 0), JSON.stringify(once.json.segments));
    const byDefault = await upload(fields);
    if (byDefault.json.segments.every((s) => s.temperature === 0))
      assertSameTranscription(once.json, byDefault.json, "temperature_inc=0 against the default");
    const e = checkErrorEnvelope(assert, await upload([["temperature_inc", "2"]]), 400, "temperature_inc=2");
    assert.equal(e.param, "temperature_inc");
  });
});

describe("beam_size and best_of (izwi's extensions, named as whisper.cpp's server names them)", () => {
  test("beam_size=1 is the greedy text; beam_size=5 is well formed and the same twice; bad values: 400", async () => {
    const greedy = await upload([["response_format", "verbose_json"]]);
    const one = await upload([["response_format", "verbose_json"], ["beam_size", "1"]]);
    assert.equal(one.status, 200, one.text);
    assertSameTranscription(one.json, greedy.json, "beam_size=1 decodes greedily");
    const beams = [];
    for (let i = 0; i < 2; ++i) {
      const r = await upload([["response_format", "verbose_json"], ["beam_size", "5"], ["best_of", "2"]]);
      assert.equal(r.status, 200, r.text);
      beams.push(r.json);
    }
    const v = beams[0];
    // The same tokens and times; log-probabilities to float rounding (a
    // round's beams may share an engine step with different neighbours).
    assertSameTranscription(beams[1], v, "a beam search is deterministic (and the fallback's samples seeded)");
    assert.equal(v.segments.map((s) => s.text).join("").trimStart(), v.text);
    let last = 0;
    for (const s of v.segments) {
      assert.ok(s.start >= last - 1e-9 && s.start <= s.end && s.end <= v.duration + 0.02, `segment ${s.start}..${s.end}`);
      assert.ok(s.avg_logprob <= 0 && [0, 0.2, 0.4, 0.6, 0.8, 1].includes(s.temperature), JSON.stringify(s));
      last = s.end;
    }
    for (const [field, value] of [["beam_size", "0"], ["beam_size", "30"], ["best_of", "1.5"]]) {
      const e = checkErrorEnvelope(assert, await upload([[field, value]]), 400, `${field}=${value}`);
      assert.equal(e.param, field);
    }
  });

  test("beam_size=5 with the other options: word timestamps, streaming, no_timestamps, translations", async () => {
    const beam = [["beam_size", "5"]];
    // Words are aligned on the chosen beam's tokens after the search: words
    // that make up its text, in order, within the audio.
    const worded = await upload([["response_format", "verbose_json"], ["timestamp_granularities[]", "word"],
                                 ["timestamp_granularities[]", "segment"], ...beam]);
    assert.equal(worded.status, 200, worded.text);
    const w = worded.json;
    assert.ok(Array.isArray(w.words) && w.words.length > 0, `no words: ${worded.text.slice(0, 300)}`);
    let last = 0;
    for (const word of w.words) {
      assert.deepEqual(Object.keys(word).sort(), ["end", "start", "word"]);
      assert.ok(word.start >= last - 1e-9 && word.start <= word.end && word.end <= w.duration + 0.02, JSON.stringify(word));
      last = word.start;
    }
    const squash = (t) => t.replace(/\s+/g, "");
    assert.equal(squash(w.words.map((x) => x.word).join("")), squash(w.text));

    // Streamed, without words: the deltas make up the same text, the done
    // event carries the same segment tokens and the beam's log-probabilities.
    const {done, deltas} = transcriptStream(
        await upload([["stream", "true"], ["response_format", "verbose_json"], ["include[]", "logprobs"], ...beam]));
    assert.equal(deltas.map((d) => d.delta).join(""), done.text);
    assert.equal(done.text, w.text, "streamed = non-streamed; word alignment does not change the beam's text");
    assert.deepEqual(done.segments.map((s) => s.tokens), w.segments.map((s) => s.tokens));
    const textTokens = w.segments.flatMap((s) => s.tokens).filter((t) => t < 50257);
    assert.equal(done.logprobs.length, textTokens.length, "one log-probability per text token of the beam");
    for (const lp of done.logprobs) assert.ok(typeof lp.token === "string" && lp.logprob <= 0, JSON.stringify(lp));

    // no_timestamps: the beams grow after <|notimestamps|>, so no timestamp token in them, one segment per window.
    const plain = await upload([["response_format", "verbose_json"], ["no_timestamps", "true"], ["language", "en"], ...beam]);
    assert.equal(plain.status, 200, plain.text);
    assert.equal(plain.json.segments.length, 1, JSON.stringify(plain.json.segments.map((s) => [s.start, s.end])));
    assert.ok(plain.json.segments[0].tokens.every((t) => t < 50257), "a timestamp or special token in the beam");

    // /v1/audio/translations parses and runs beam_size the same way.
    const translated = await upload([["response_format", "verbose_json"], ...beam], {route: "/v1/audio/translations"});
    assert.equal(translated.status, 200, translated.text);
    assert.equal(translated.json.task, "translate");
    assert.equal(translated.json.segments.map((s) => s.text).join("").trimStart(), translated.json.text);
    const e = checkErrorEnvelope(assert, await upload([["beam_size", "0"]], {route: "/v1/audio/translations"}), 400,
                                 "translations beam_size=0");
    assert.equal(e.param, "beam_size");
  });

  test("a client that hangs up during a beam search: every KV block returns, no round follows", async () => {
    const finished = async () => {
      const m = (await getMetrics(server)).metrics;
      let n = 0;
      for (const reason of ["abort", "length", "stop"])
        n += metricValue(m, "izwi:request_success_total", {finished_reason: reason}) ?? 0;
      return n;
    };
    const before = await finished();
    // The probe and a few rounds of five beams have finished: the search is
    // under way. The 40-s audio (two windows, the second one's beams tens of
    // tokens long) keeps it going well past the hang-up: jfk.wav's search
    // on the e2e weights ends after about a hundred steps.
    const received = await uploadThenHangUp(
      [["file", {filename: "long.wav", data: jfkRepeated(40)}], ["model", WHISPER_ID], ["stream", "true"],
       ["beam_size", "5"]],
      async () => await finished() >= before + 12, {pollMs: 10});
    assert.ok(!received.includes("transcript.text.done"), "the transcription ended before the hang-up: nothing was tested");
    // The server notices the hang-up at its next write (a keep-alive comment
    // each half second); rounds may run until then, none after.
    await sleep(1500);
    const idle = await waitForIdleEngine(server, {timeoutMs: 60000});
    assert.ok(idle.ok, `engine not idle after the hang-up: ${JSON.stringify({used: idle.used, running: idle.running, waiting: idle.waiting})}`);
    const settled = await finished();
    await sleep(1500);
    assert.equal(await finished(), settled, "beam rounds went on after the client left");
    const r = await upload([["beam_size", "5"]]);
    assert.equal(r.status, 200, "the next transcription is served");
  });
});

describe("the official openai SDK as the client", () => {
  test("transcriptions (json, verbose_json, stream) and translations", async () => {
    const {OpenAI, toFile, BadRequestError} = await loadOpenAI();
    const client = new OpenAI({apiKey: "unused", baseURL: server.baseURL, maxRetries: 0, timeout: 300000});
    const file = () => toFile(JFK, "jfk.wav", {type: "audio/wav"});
    const plain = await client.audio.transcriptions.create({file: await file(), model: WHISPER_ID});
    assert.equal(typeof plain.text, "string");
    assert.deepEqual(plain.usage, {type: "duration", seconds: 11});
    const verbose = await client.audio.transcriptions.create({
      file: await file(), model: WHISPER_ID, response_format: "verbose_json", timestamp_granularities: ["segment"],
    });
    assert.equal(verbose.text, plain.text);
    assert.equal(verbose.task, "transcribe");
    const stream = await client.audio.transcriptions.create({file: await file(), model: WHISPER_ID, stream: true});
    let deltas = "";
    let done;
    for await (const event of stream) {
      if (event.type === "transcript.text.delta") deltas += event.delta;
      else if (event.type === "transcript.text.done") done = event;
    }
    assert.ok(done, "no transcript.text.done event");
    assert.equal(deltas, done.text);
    assert.equal(done.text, plain.text);
    const translated = await client.audio.translations.create({file: await file(), model: WHISPER_ID});
    assert.equal(typeof translated.text, "string");
    await assert.rejects(client.audio.transcriptions.create({file: await file(), model: WHISPER_ID, language: "xx"}),
                         (e) => e instanceof BadRequestError && /valid codes/.test(e.message));
  });
});

describe("/v1/audio/translations", () => {
  test("translates with verbose_json's task 'translate'", async () => {
    const r = await upload([["response_format", "verbose_json"]], {route: "/v1/audio/translations"});
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.task, "translate");
    assert.equal(typeof r.json.text, "string");
  });
});

describe("errors", () => {
  test("not audio, truncated audio: 400 naming the problem", async () => {
    let e = checkErrorEnvelope(assert, await upload([], {file: Buffer.from("this is not audio at all"), filename: "x.wav"}),
                               400, "not audio");
    assert.match(e.message, /not_audio|not an audio file/);
    assert.equal(e.param, "file");
    e = checkErrorEnvelope(assert, await upload([], {file: JFK.subarray(0, 20000)}), 400, "truncated");
    assert.match(e.message, /truncated/);
  });

  test("an unknown language: 400 listing the valid codes", async () => {
    const e = checkErrorEnvelope(assert, await upload([["language", "xx"]]), 400, "language xx");
    assert.equal(e.param, "language");
    assert.match(e.message, /en, zh, de/);
  });

  test("word timestamps outside verbose_json: 400; a text model: 400", async () => {
    let e = checkErrorEnvelope(assert, await upload([["timestamp_granularities[]", "word"]]), 400, "word");
    assert.match(e.message, /verbose_json/);
    e = checkErrorEnvelope(assert, await upload([], {model: MODEL_ID}), 400, "qwen3 for transcription");
    assert.equal(e.param, "model");
  });

  test("audio over --max-audio-s: 413", async () => {
    const e = checkErrorEnvelope(assert, await upload([], {file: jfkRepeated(MAX_AUDIO_S + 5)}), 413, "too long");
    assert.match(e.message, /too long|limit/);
  });
});

describe("a client that hangs up", () => {
  test("aborts its windows: every KV block returns", async () => {
    const count = async (reason) =>
      metricValue((await getMetrics(server)).metrics, "izwi:request_success_total", {finished_reason: reason}) ?? 0;
    const abortedBefore = await count("abort");
    const finishedBefore = await count("length") + await count("stop");
    // Hang up once the engine runs the first window: without timestamps, in
    // English (no probe), the e2e weights decode the 40-s audio's windows to
    // about 130 and 40 tokens, so a window is still to come when the server
    // notices the hang-up (at its next write: a window's text or a keep-alive
    // comment each half second).
    const running = async () => metricValue((await getMetrics(server)).metrics, "izwi:num_requests_running") ?? 0;
    const received = await uploadThenHangUp(
      [["file", {filename: "long.wav", data: jfkRepeated(40)}], ["model", WHISPER_ID], ["stream", "true"],
       ["no_timestamps", "true"], ["language", "en"]],
      async () => await running() > 0);
    assert.ok(!received.includes("transcript.text.done"), "the transcription ended before the hang-up: nothing was tested");
    await sleep(100);
    const idle = await waitForIdleEngine(server, {timeoutMs: 60000});
    assert.ok(idle.ok, `engine not idle after the hang-up: ${JSON.stringify({used: idle.used, running: idle.running, waiting: idle.waiting})}`);
    assert.ok(await count("abort") > abortedBefore, "the hang-up aborted the window the engine was decoding");
    const r = await upload([]);
    assert.equal(r.status, 200, "the next transcription is served");
  });
});
