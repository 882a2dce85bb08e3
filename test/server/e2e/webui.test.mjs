// The web playground (issue 15) in headless Chromium, driven by
// playwright-core, against the real izwi-server serving the random-weight
// Qwen3 and Whisper (and a Qwen3-TTS where izwi-make-random-qwen3-tts is
// built): each panel's main flow and an error path, through the page as a
// user works it. One browser and one page for the whole file (CI time);
// tests run in order and share it. A screenshot of each panel goes to
// $IZWI_E2E_ARTIFACTS (build-dir/test/server/e2e/artifacts/).
//
// run.mjs has checked that Chromium starts (else the suite is SKIPPED).
import {after, before, test} from "node:test";
import assert from "node:assert/strict";
import {createRequire} from "node:module";
import fs from "node:fs";
import path from "node:path";

import {MODEL_DIR, MODEL_ID, NODE_MODULES, authHeader, request, startServer, waitForIdleEngine} from "./harness.mjs";

const CHROMIUM = process.env.IZWI_CHROMIUM;
const WHISPER_DIR = process.env.IZWI_E2E_WHISPER;
const TTS_DIR = process.env.IZWI_E2E_TTS || "";
const ARTIFACTS = process.env.IZWI_E2E_ARTIFACTS;
const JFK = path.join(process.env.IZWI_FIXTURES_DIR, "audio/jfk.wav");
const WHISPER_ID = path.basename(WHISPER_DIR);
const KEY = "sk-webui-test";
const ADMIN_KEY = "admin-webui-test";
const LONG = 300000;

let server, browser, page;
const pageErrors = [];
const cspViolations = [];
const requests = [];  // {url, method, body} of the page's API requests

before(async () => {
  assert.ok(CHROMIUM && WHISPER_DIR && ARTIFACTS, "run through run.mjs --require-chromium --require-whisper");
  fs.mkdirSync(ARTIFACTS, {recursive: true});
  const args = ["--model", WHISPER_DIR, "--models-dir", path.dirname(MODEL_DIR), "--admin-api-key", ADMIN_KEY];
  if (TTS_DIR) args.push("--model", TTS_DIR);
  server = await startServer({apiKey: KEY, args});
  const {chromium} = createRequire(path.join(NODE_MODULES, "noop.js"))("playwright-core");
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    // --no-sandbox: CI runs as root. A fake microphone (a beep) stands in for a real one.
    args: ["--no-sandbox", "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
           "--autoplay-policy=no-user-gesture-required"],
  });
  const context = await browser.newContext({acceptDownloads: true, viewport: {width: 1100, height: 900}});
  await context.grantPermissions(["microphone"], {origin: server.url("")});
  page = await context.newPage();
  page.setDefaultTimeout(60000);
  page.on("pageerror", (e) => pageErrors.push(e.message));
  page.on("console", (m) => {
    if (/Content[- ]Security[- ]Policy/i.test(m.text())) cspViolations.push(m.text());
  });
  page.on("request", (r) => {
    if (new URL(r.url()).pathname.startsWith("/v1/"))
      requests.push({path: new URL(r.url()).pathname, method: r.method(), body: r.postDataBuffer()});
  });
});

after(async () => {
  await browser?.close();
  const r = await server?.stop();
  if (r) assert.equal(r.code, 0, `izwi-server exited with ${JSON.stringify(r)}`);
});

const screenshot = (name) => page.screenshot({path: path.join(ARTIFACTS, `webui-${name}.png`), fullPage: true});
const lastRequest = (p) => requests.filter((r) => r.path === p).at(-1);
const text = (selector) => page.locator(selector).textContent();

/// Adds a model the server does not have to a picker and selects it (the unknown-model error path).
async function pickUnknownModel(select) {
  await page.evaluate((id) => {
    const s = document.getElementById(id);
    s.append(new Option("no-such-model", "no-such-model"));
    s.value = "no-such-model";
  }, select);
}

async function selectTab(name) {
  await page.click(`#tab-${name}`);
  await page.waitForSelector(`#panel-${name}:not([hidden])`);
}

test("the page asks for the API key, shows the server's message for a wrong one, then connects", {timeout: LONG},
     async () => {
  await page.goto(server.url("/"));
  await page.waitForSelector("body[data-ready=true]");
  // No key yet: the server's own words, and no panel open for use.
  await page.waitForSelector("#global-error:not([hidden])");
  assert.match(await text("#global-error"), /Missing API key.*\(HTTP 401, authentication_error, invalid_api_key\)/);
  assert.equal(await page.getAttribute("#panel-chat", "data-available"), "false");

  await page.fill("#api-key", "sk-wrong");
  await page.press("#api-key", "Enter");
  await page.waitForFunction(() => /Incorrect API key provided/.test(document.getElementById("global-error").textContent));

  await page.fill("#api-key", KEY);
  await page.click("#key-form button[type=submit]");
  await page.waitForSelector("#connection[data-state=ok]");
  assert.equal(await page.isHidden("#global-error"), true);
  assert.equal(await page.getAttribute("#panel-chat", "data-available"), "true");
  assert.equal(await page.getAttribute("#panel-transcription", "data-available"), "true");
  assert.equal(await page.getAttribute("#panel-speech", "data-available"), String(TTS_DIR !== ""),
               "the speech panel is enabled exactly when a model serves tts");
  assert.equal(await page.evaluate(() => localStorage.getItem("izwi.apiKey")), KEY, "the key is kept in local storage");
});

test("accessible markup: every control has a label, the tabs work from the keyboard", async () => {
  const unlabelled = await page.evaluate(() =>
    [...document.querySelectorAll("input, select, textarea, button")]
      .filter((el) => !(el.labels?.length || el.getAttribute("aria-label") || el.textContent.trim()))
      .map((el) => el.id || el.outerHTML.slice(0, 80)));
  assert.deepEqual(unlabelled, []);
  await page.focus("#tab-chat");
  await page.keyboard.press("ArrowRight");
  assert.equal(await page.getAttribute("#tab-speech", "aria-selected"), "true");
  assert.equal(await page.isVisible("#panel-speech"), true);
  assert.equal(await page.evaluate(() => document.activeElement.id), "tab-speech");
  await page.keyboard.press("End");
  assert.equal(await page.isVisible("#panel-server"), true);
  await page.keyboard.press("Home");
  assert.equal(await page.isVisible("#panel-chat"), true);
  assert.equal(await page.isHidden("#panel-server"), true);
});

test("chat: a reply streams in pieces with its settings, TTFT and tokens/s", {timeout: LONG}, async () => {
  await selectTab("chat");
  assert.equal(await page.inputValue("#chat-model"), MODEL_ID);
  await page.fill("#chat-system", "You are terse.");
  await page.fill("#chat-temperature", "0.8");
  await page.fill("#chat-top-p", "0.9");
  await page.fill("#chat-max-tokens", "24");
  // Count the updates of the reply as they land: a streamed reply arrives in several.
  await page.evaluate(() => {
    window.replyUpdates = 0;
    new MutationObserver(() => ++window.replyUpdates).observe(document.getElementById("chat-log"),
                                                              {subtree: true, childList: true, characterData: true});
  });
  await page.fill("#chat-input", "Hello, who are you?");
  await page.press("#chat-input", "Control+Enter");
  const reply = page.locator(".message.assistant").last();
  await page.waitForSelector(".message.assistant[data-state=done]", {timeout: LONG});
  const sent = JSON.parse(lastRequest("/v1/chat/completions").body.toString());
  assert.equal(sent.model, MODEL_ID);
  assert.equal(sent.stream, true);
  assert.deepEqual(sent.messages, [{role: "system", content: "You are terse."}, {role: "user", content: "Hello, who are you?"}]);
  assert.equal(sent.temperature, 0.8);
  assert.equal(sent.top_p, 0.9);
  assert.equal(sent.max_tokens, 24);

  const content = await reply.locator(".content").textContent();
  assert.ok(content.length > 0, "the reply has text");
  const tokens = Number(await reply.getAttribute("data-tokens"));
  assert.ok(tokens >= 1 && tokens <= 24, `tokens ${tokens}`);
  assert.match(await reply.getAttribute("data-ttft-ms"), /^\d+$/);
  const stats = await reply.locator(".stats").textContent();
  assert.match(stats, /TTFT \d+/);
  if (tokens > 1) assert.match(stats, /[\d.]+ tokens\/s/);
  assert.ok(await page.evaluate(() => window.replyUpdates) > 3, "the reply was shown piece by piece");
  await screenshot("chat");
});

test("chat: Stop aborts a streaming reply, and the server frees it", {timeout: LONG}, async () => {
  await page.fill("#chat-max-tokens", "2000");
  await page.fill("#chat-input", "Tell me a very long story.");
  await page.click("#chat-send");
  const reply = page.locator(".message.assistant").last();
  await page.waitForFunction(() => {
    const r = [...document.querySelectorAll(".message.assistant")].at(-1);
    return r.querySelector(".content").textContent.length > 0;
  });
  assert.equal(await page.isEnabled("#chat-stop"), true);
  await page.click("#chat-stop");
  await page.waitForSelector(".message.assistant:last-child[data-state=stopped]");
  const tokens = Number(await reply.getAttribute("data-tokens"));
  assert.ok(tokens > 0 && tokens < 2000, `stopped after ${tokens} tokens`);
  assert.match(await reply.locator(".stats").textContent(), /finish: stopped/);
  assert.equal(await page.isEnabled("#chat-send"), true);
  const idle = await waitForIdleEngine(server, {timeoutMs: 30000});
  assert.ok(idle.ok, `the aborted request still holds the engine: ${JSON.stringify({...idle, text: undefined})}`);
});

test("chat: an unknown model shows the server's error message", {timeout: LONG}, async () => {
  await pickUnknownModel("chat-model");
  await page.fill("#chat-input", "Hello?");
  await page.click("#chat-send");
  await page.waitForSelector("#chat-error:not([hidden])");
  assert.match(await text("#chat-error"), /The model `no-such-model` does not exist\. \(HTTP 404, invalid_request_error, model_not_found\)/);
  assert.equal(await page.getAttribute(".message.assistant:last-child", "data-state"), "error");
  await page.selectOption("#chat-model", MODEL_ID);
});

test("transcription: an uploaded jfk.wav streams its text, with segment timestamps that seek the audio",
     {timeout: LONG}, async () => {
  await selectTab("transcription");
  assert.equal(await page.inputValue("#transcription-model"), WHISPER_ID);
  await page.setInputFiles("#transcription-file", JFK);
  await page.waitForSelector("#transcription-audio:not([hidden])");
  await page.fill("#transcription-language", "en");
  await page.selectOption("#transcription-format", "json");
  await page.check("#transcription-timestamps");
  // The form the page sends (Chromium does not hand an upload's body to the test): recorded as fetch() gets it.
  await page.evaluate(() => {
    const original = window.fetch;
    window.fetch = (input, init) => {
      if (init?.body instanceof FormData)
        window.lastForm = Object.fromEntries([...init.body.entries()].map(([k, v]) => [k, typeof v === "string" ? v : v.name]));
      return original(input, init);
    };
  });
  await page.click("#transcription-run");
  await page.waitForSelector("#transcription-stats[data-state=done], #transcription-stats[data-state=error]",
                             {timeout: LONG});
  assert.equal(await page.isHidden("#transcription-error"), true, await text("#transcription-error"));
  assert.deepEqual(await page.evaluate(() => window.lastForm),
                   {"file": "jfk.wav", "model": WHISPER_ID, "response_format": "verbose_json",
                    "timestamp_granularities[]": "segment", "language": "en", "stream": "true"});

  assert.ok((await text("#transcription-text")).trim().length > 0, "a transcript (gibberish: random weights)");
  assert.match(await text("#transcription-stats"), /11\.00 s of audio · real-time factor [\d.]+/);
  const segments = await page.$$eval(".segment", (els) => els.map((e) => ({start: Number(e.dataset.start),
                                                                          end: Number(e.dataset.end)})));
  assert.ok(segments.length >= 1, "segments with timestamps");
  for (const s of segments) assert.ok(s.start >= 0 && s.start <= s.end && s.end <= 11.05, JSON.stringify(s));
  const last = segments.length - 1;
  await page.locator(".segment").nth(last).click();
  await page.waitForFunction((start) => {
    const a = document.getElementById("transcription-audio");
    return !a.seeking && a.currentTime >= start - 0.05;
  }, segments[last].start);
  const at = await page.evaluate(() => document.getElementById("transcription-audio").currentTime);
  assert.ok(Math.abs(at - segments[last].start) < 1.5, `playing from ${at} s, the segment starts at ${segments[last].start} s`);
  await page.evaluate(() => document.getElementById("transcription-audio").pause());
  await screenshot("transcription");
});

test("transcription: a recording from the microphone becomes the clip to play and send", {timeout: LONG}, async () => {
  await page.click("#transcription-record");
  await page.waitForSelector("#transcription-record[aria-pressed=true]");
  await page.waitForTimeout(1200);
  await page.click("#transcription-record");
  await page.waitForSelector("#transcription-record[aria-pressed=false]");
  // The player loads it (the page's policy lets media, not fetch(), read blob: URLs).
  const loaded = await page.evaluate(() => new Promise((resolve) => {
    const a = document.getElementById("transcription-audio");
    if (!a.src.startsWith("blob:")) return resolve("no blob: source");
    if (a.readyState >= 1) return resolve("ok");
    a.addEventListener("loadedmetadata", () => resolve("ok"));
    a.addEventListener("error", () => resolve(`error ${a.error?.code}`));
    setTimeout(() => resolve("no metadata within 10 s"), 10000);
  }));
  assert.equal(loaded, "ok", "the recording is the clip");
});

test("transcription: an unknown model shows the server's error message", {timeout: LONG}, async () => {
  await page.setInputFiles("#transcription-file", JFK);
  await pickUnknownModel("transcription-model");
  await page.click("#transcription-run");
  await page.waitForSelector("#transcription-error:not([hidden])");
  assert.match(await text("#transcription-error"), /The model `no-such-model` does not exist\. \(HTTP 404/);
  await page.selectOption("#transcription-model", WHISPER_ID);
});

test("server: a wrong admin key is refused; with the right one a model is unloaded and loaded; live metrics",
     {timeout: LONG}, async () => {
  await selectTab("server");
  await page.fill("#admin-key", "wrong-admin-key");
  await page.click("#admin-key-form button[type=submit]");
  await page.waitForFunction(() => /Incorrect admin API key provided/.test(document.getElementById("server-error").textContent));
  assert.equal(await page.getAttribute("#server-models", "data-admin"), "false");

  await page.fill("#admin-key", ADMIN_KEY);
  await page.click("#admin-key-form button[type=submit]");
  await page.waitForSelector("#server-models[data-admin=true]");
  const row = (id) => `#server-models tr[data-model="${id}"]`;
  await page.waitForSelector(`${row(MODEL_ID)}[data-state=loaded]`);
  await page.waitForSelector(`${row(WHISPER_ID)}[data-state=loaded]`);
  assert.match(await page.locator(row(WHISPER_ID)).textContent(), /asr, translation/);

  // Live metrics: read from /metrics every two seconds while the panel shows.
  await page.waitForSelector("#server-metrics[data-updated]");
  const first = Number(await page.getAttribute("#server-metrics", "data-updated"));
  await page.waitForFunction((t) => Number(document.getElementById("server-metrics").dataset.updated) > t, first);
  assert.match(await text("#metric-running"), /^\d+$/);
  assert.match(await text("#metric-waiting"), /^\d+$/);
  assert.match(await text("#metric-kv"), /^[\d.]+ %$/);
  assert.match(await text("#metric-tps"), /^[\d.]+$/);
  assert.ok(Number(await text("#metric-http")) > 0);
  await screenshot("server");

  await page.click(`${row(MODEL_ID)} button[data-action=unload]`);
  await page.waitForSelector(`${row(MODEL_ID)}[data-state=available]`);
  let models = await request(server, {path: "/v1/models", headers: authHeader(KEY)});
  assert.ok(!models.json.data.some((m) => m.id === MODEL_ID), "unloaded: /v1/models no longer lists it");
  await page.waitForSelector("#panel-chat[data-available=false]", {state: "attached"});
  assert.equal(await page.getAttribute("#tab-chat", "class"), "off", "the chat tab says it has no model");

  await page.click(`${row(MODEL_ID)} button[data-action=load]`);
  await page.waitForSelector(`${row(MODEL_ID)}[data-state=loaded]`, {timeout: LONG});
  models = await request(server, {path: "/v1/models", headers: authHeader(KEY)});
  assert.ok(models.json.data.some((m) => m.id === MODEL_ID), "loaded again");
  await page.waitForSelector("#panel-chat[data-available=true]", {state: "attached"});
});

let tts = null;      // the /v1/models entry of a model serving tts, if any
let speech = null;   // the speech panel's stats after a synthesis

/// Skips a speech test when no model serves tts (the speech branch's Qwen3-TTS is not merged/built here).
function needTts(t) {
  if (tts) return true;
  t.skip("no loaded model serves tts (izwi-make-random-qwen3-tts is not built here, or the server has no speech)");
  return false;
}

test("speech: plays while it streams, with the waveform, time to first audio and RTF", {timeout: LONG}, async (t) => {
  await selectTab("speech");
  const models = await request(server, {path: "/v1/models", headers: authHeader(KEY)});
  tts = models.json.data.find((m) => (m.tasks || []).includes("tts")) ?? null;
  if (!needTts(t)) return screenshot("speech");
  assert.equal(await page.inputValue("#speech-model"), tts.id);
  await page.waitForFunction(() => document.getElementById("speech-voice").value !== "");
  const voices = await page.$$eval("#speech-voice option", (o) => o.map((x) => x.value));
  assert.ok(voices.length > 0 && !voices.includes(""), `the model's voices: ${voices}`);
  await page.fill("#speech-input", "Hello from the playground.");
  // A random talker rarely says it is done: 24 frames (~2 s of audio) keep the test short.
  await page.fill("#speech-max-frames", "24");
  await page.selectOption("#speech-format", "wav");
  await page.click("#speech-speak");
  await page.waitForSelector("#speech-stats[data-state=done], #speech-stats[data-state=error]", {timeout: LONG});
  assert.equal(await page.isHidden("#speech-error"), true, await text("#speech-error"));
  const sent = JSON.parse(lastRequest("/v1/audio/speech").body.toString());
  assert.equal(sent.response_format, "pcm");
  assert.equal(sent.stream_format, "audio");
  assert.equal(sent.model, tts.id);
  assert.equal(sent.max_tokens, 24);
  assert.equal(sent.voice, await page.inputValue("#speech-voice"));

  speech = await page.evaluate(() => ({...document.getElementById("speech-stats").dataset}));
  assert.ok(Number(speech.audioSeconds) > 0, `audio was generated: ${JSON.stringify(speech)}`);
  assert.equal(speech.scheduledSeconds, speech.audioSeconds, "every piece was scheduled for playback as it came");
  assert.ok(Number(speech.pieces) >= 2, `the audio came in pieces, each scheduled as it came: ${JSON.stringify(speech)}`);
  assert.match(speech.ttfaMs, /^\d+$/);
  assert.ok(Number(speech.rtf) > 0);
  assert.match(await text("#speech-stats"), /time to first audio .* real-time factor/);
  const inked = await page.evaluate(() => {
    const c = document.getElementById("speech-wave");
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) n += d[i] > 0;
    return n;
  });
  assert.ok(inked > 0, "the waveform is drawn");
  await screenshot("speech");
});

test("speech: downloads decode (wav from the samples played, flac encoded by the server)", {timeout: LONG},
     async (t) => {
  if (!needTts(t)) return;
  for (const format of ["wav", "flac"]) {
    await page.selectOption("#speech-format", format);
    const [download] = await Promise.all([page.waitForEvent("download", {timeout: LONG}), page.click("#speech-download")]);
    assert.equal(download.suggestedFilename(), `speech.${format}`);
    const file = fs.readFileSync(await download.path());
    if (format === "wav") {
      assert.equal(file.toString("latin1", 0, 4), "RIFF");
      assert.equal(file.toString("latin1", 8, 12), "WAVE");
      assert.equal(file.readUInt32LE(24), 24000, "24 kHz");
      assert.equal(file.length - 44, Number(speech.samples) * 2, "the samples played");
    } else {
      assert.equal(JSON.parse(lastRequest("/v1/audio/speech").body.toString()).response_format, format);
    }
    const decoded = await page.evaluate(async (b64) => {
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const buffer = await new OfflineAudioContext(1, 1, 24000).decodeAudioData(bytes.buffer);
      return buffer.duration;
    }, file.toString("base64"));
    assert.ok(decoded > 0, `${format}: Chromium decodes the download (${decoded} s)`);
  }
});

test("speech: an unknown model shows the server's error message", {timeout: LONG}, async (t) => {
  if (!needTts(t)) return;
  await pickUnknownModel("speech-model");
  await page.click("#speech-speak");
  await page.waitForSelector("#speech-error:not([hidden])");
  assert.match(await text("#speech-error"), /The model `no-such-model` does not exist/);
  assert.equal(await page.getAttribute("#speech-stats", "data-state"), "error");
  await page.selectOption("#speech-model", tts.id);
});

test("no script errors and no Content-Security-Policy violations on the page", () => {
  assert.deepEqual(pageErrors, []);
  assert.deepEqual(cspViolations, []);
});
