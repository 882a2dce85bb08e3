// Speech panel: /v1/audio/speech played while it streams. The request asks
// for response_format "pcm" (24 kHz mono signed 16-bit little-endian, as
// OpenAI's pcm) with stream_format "audio", and each piece that arrives is
// scheduled on a Web Audio clock right after the previous one; the waveform
// grows as it comes. Download gives the chosen format: wav and pcm from the
// very samples played, the compressed formats by asking the server for them.
"use strict";

Izwi.panel((() => {
  const {$} = Izwi;
  const RATE = 24000;
  let controller = null;
  let audio = null;       // AudioContext, made on the first Speak (a user gesture)
  let sources = [];       // AudioBufferSourceNodes scheduled, for Stop
  let pcm = [];           // Int16Array pieces of the last speech
  let lastRequest = null; // the body of the last speech request (for a compressed download)
  let drawPending = false;

  const sampleCount = () => pcm.reduce((n, p) => n + p.length, 0);

  function drawWave() {
    drawPending = false;
    const canvas = $("speech-wave");
    const g = canvas.getContext("2d");
    const {width, height} = canvas;
    g.clearRect(0, 0, width, height);
    g.fillStyle = getComputedStyle(canvas).color;
    const total = sampleCount();
    // At least 5 s across, so a short clip does not fill the whole width.
    const perColumn = Math.max(1, Math.ceil(Math.max(total, 5 * RATE) / width));
    let column = 0, lo = 0, hi = 0, inColumn = 0;
    for (const piece of pcm)
      for (let i = 0; i < piece.length; ++i) {
        const v = piece[i] / 32768;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
        if (++inColumn === perColumn) {
          g.fillRect(column, (1 - hi) * height / 2, 1, Math.max(1, (hi - lo) * height / 2));
          ++column;
          lo = hi = inColumn = 0;
        }
      }
    if (inColumn) g.fillRect(column, (1 - hi) * height / 2, 1, Math.max(1, (hi - lo) * height / 2));
  }
  const scheduleDraw = () => {
    if (!drawPending) {
      drawPending = true;
      requestAnimationFrame(drawWave);
    }
  };

  function stopPlayback() {
    for (const s of sources) {
      try {
        s.stop();
      } catch {
        // not started yet
      }
    }
    sources = [];
  }

  /// A WAV file (RIFF, PCM 16-bit mono) of the samples.
  function wavOf(pieces) {
    const n = pieces.reduce((s, p) => s + p.length, 0);
    const out = new DataView(new ArrayBuffer(44 + n * 2));
    const text = (at, s) => [...s].forEach((c, i) => out.setUint8(at + i, c.charCodeAt(0)));
    text(0, "RIFF"); out.setUint32(4, 36 + n * 2, true); text(8, "WAVE");
    text(12, "fmt "); out.setUint32(16, 16, true); out.setUint16(20, 1, true); out.setUint16(22, 1, true);
    out.setUint32(24, RATE, true); out.setUint32(28, RATE * 2, true); out.setUint16(32, 2, true); out.setUint16(34, 16, true);
    text(36, "data"); out.setUint32(40, n * 2, true);
    let at = 44;
    for (const p of pieces)
      for (let i = 0; i < p.length; ++i, at += 2) out.setInt16(at, p[i], true);
    return new Blob([out.buffer], {type: "audio/wav"});
  }

  function offer(blob, name) {
    const url = URL.createObjectURL(blob);
    const a = document.createElement("a");
    a.href = url;
    a.download = name;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  }

  async function download() {
    const format = $("speech-format").value;
    Izwi.showError($("speech-error"), null);
    try {
      if (format === "wav") return offer(wavOf(pcm), "speech.wav");
      if (format === "pcm") return offer(new Blob(pcm.map((p) => p.slice().buffer), {type: "audio/pcm"}), "speech.pcm");
      // A compressed format: the server encodes it (a second synthesis).
      const button = $("speech-download");
      button.disabled = true;
      try {
        const res = await Izwi.request("/v1/audio/speech", {method: "POST", json: {...lastRequest, response_format: format}});
        offer(await res.blob(), `speech.${format}`);
      } finally {
        button.disabled = false;
      }
    } catch (e) {
      Izwi.showError($("speech-error"), e);
    }
  }

  /// Reads a body of s16le samples; calls onSamples(Int16Array) for each piece
  /// as it arrives (a read may end inside a sample: its byte waits for the next).
  async function readSamples(res, onSamples) {
    const reader = res.body.getReader();
    let carry = null;
    for (;;) {
      const {value, done} = await reader.read();
      if (done) return;
      let bytes = value;
      if (carry) {
        bytes = new Uint8Array(carry.length + value.length);
        bytes.set(carry);
        bytes.set(value, carry.length);
        carry = null;
      }
      if (bytes.length % 2) {
        carry = bytes.slice(bytes.length - 1);
        bytes = bytes.subarray(0, bytes.length - 1);
      }
      if (bytes.length) onSamples(new Int16Array(bytes.slice().buffer));
    }
  }

  /// Schedules `samples` at `at` (AudioContext time) or as soon as possible
  /// after it; returns when they end, where the next piece starts.
  function play(samples, at) {
    const buffer = audio.createBuffer(1, samples.length, RATE);
    const channel = buffer.getChannelData(0);
    for (let i = 0; i < samples.length; ++i) channel[i] = samples[i] / 32768;
    const source = audio.createBufferSource();
    source.buffer = buffer;
    source.connect(audio.destination);
    // Back to back; after a gap (the stream was slower than real time), a little headroom.
    const start = Math.max(at, audio.currentTime + 0.05);
    source.start(start);
    sources.push(source);
    return start + buffer.duration;
  }

  /// The request of the form (the download of a compressed format repeats it).
  function speechRequest() {
    const speed = Number($("speech-speed").value);
    const maxFrames = Number($("speech-max-frames").value);
    return {
      model: $("speech-model").value, input: $("speech-input").value, voice: chosenVoice(),
      instructions: $("speech-instructions").value.trim() || undefined, speed: Number.isFinite(speed) ? speed : undefined,
      max_tokens: $("speech-max-frames").value && maxFrames > 0 ? Math.round(maxFrames) : undefined,
    };
  }

  function setBusy(busy) {
    $("speech-speak").disabled = busy;
    $("speech-stop").disabled = !busy;
    $("speech-download").disabled = busy || sampleCount() === 0;
  }

  async function speak() {
    if (controller) return;
    Izwi.showError($("speech-error"), null);
    stopPlayback();
    audio ??= new AudioContext({sampleRate: RATE});
    await audio.resume();
    pcm = [];
    scheduleDraw();
    const stats = $("speech-stats");
    stats.dataset.state = "streaming";
    stats.textContent = "Generating…";
    lastRequest = speechRequest();
    controller = new AbortController();
    setBusy(true);
    const start = performance.now();
    let first = 0, playAt = 0;
    const show = () => {
      const seconds = sampleCount() / RATE;
      const wall = (performance.now() - start) / 1000;
      const parts = [];
      if (first) parts.push(`time to first audio ${Izwi.formatSeconds((first - start) / 1000)}`);
      parts.push(`${seconds.toFixed(2)} s of audio`);
      if (seconds > 0) parts.push(`real-time factor ${(wall / seconds).toFixed(2)}`);
      stats.textContent = parts.join(" · ");
      Object.assign(stats.dataset, {
        ttfaMs: first ? String(Math.round(first - start)) : "", audioSeconds: seconds.toFixed(3),
        samples: String(sampleCount()), rtf: seconds > 0 ? (wall / seconds).toFixed(3) : "",
      });
    };
    try {
      const res = await Izwi.request("/v1/audio/speech", {
        method: "POST", json: {...lastRequest, response_format: "pcm", stream_format: "audio"}, signal: controller.signal,
      });
      await readSamples(res, (samples) => {
        first ||= performance.now();
        pcm.push(samples);
        playAt = play(samples, playAt);
        stats.dataset.scheduledSeconds = (sampleCount() / RATE).toFixed(3);
        stats.dataset.pieces = String(sources.length);
        show();
        scheduleDraw();
      });
      stats.dataset.state = "done";
    } catch (e) {
      if (e.name === "AbortError") {
        stats.dataset.state = "stopped";
        stopPlayback();
      } else {
        stats.dataset.state = "error";
        Izwi.showError($("speech-error"), e);
      }
    } finally {
      show();
      if (stats.dataset.state === "stopped") stats.textContent += " · stopped";
      controller = null;
      setBusy(false);
    }
  }

  /// GET /v1/audio/voices: {"object": "list", "data": [{"id", "type": "speaker" | "alias" | "saved", "model",
  /// "speaker", "name"}]}: the chosen model's speakers and OpenAI names, and the saved voices (any model).
  async function loadVoices() {
    const select = $("speech-voice");
    const model = $("speech-model").value;
    if (!model) return;
    const previous = select.value;
    try {
      const res = await Izwi.request("/v1/audio/voices");
      const body = await res.json();
      const list = (Array.isArray(body) ? body : body.data || body.voices || [])
        .map((v) => (typeof v === "string" ? {id: v} : v))
        .filter((v) => v.id && (!v.model || v.model === model));
      const options = list.map((v) => {
        const label = v.type === "alias" && v.speaker ? `${v.id} (${v.speaker})`
                    : v.type === "saved" ? `${v.name || v.id} (saved)` : v.name && v.name !== v.id ? `${v.name} (${v.id})` : v.id;
        const option = new Option(label, v.id);
        option.dataset.saved = String(v.type === "saved");
        return option;
      });
      // "voice" is required (OpenAI's contract): a choice only when the server names none.
      select.replaceChildren(...(options.length ? options : [new Option("(the model's default)", "")]));
      if ([...select.options].some((o) => o.value === previous)) select.value = previous;
    } catch (e) {
      select.replaceChildren(new Option("(the model's default)", ""));
      Izwi.showError($("speech-error"), e);
    }
  }

  /// The request's "voice": a speaker or OpenAI name as a string, a saved voice as {"id"}.
  function chosenVoice() {
    const option = $("speech-voice").selectedOptions[0];
    if (!option || !option.value) return undefined;
    return option.dataset.saved === "true" ? {id: option.value} : option.value;
  }

  return {
    name: "speech",
    init() {
      $("speech-form").addEventListener("submit", (e) => {
        e.preventDefault();
        speak();
      });
      $("speech-stop").addEventListener("click", () => controller?.abort());
      $("speech-download").addEventListener("click", download);
      $("speech-model").addEventListener("change", loadVoices);
    },
    modelsChanged() {
      const before = $("speech-model").value;
      Izwi.fillModelSelect($("speech-model"), ["tts"]);
      if ($("speech-model").value && ($("speech-model").value !== before || !$("speech-voice").options.length)) loadVoices();
    },
  };
})());
