// Transcription panel: an uploaded or recorded clip to /v1/audio/transcriptions
// (or /translations). The "json (streamed)" format streams the text as it is
// decoded (stream=true); with segment timestamps the request asks for
// verbose_json, whose streamed done event carries the segments (izwi's
// extension). Other formats come whole. Each segment is a button that plays
// the clip from its start.
"use strict";

Izwi.panel((() => {
  const {$} = Izwi;
  let clip = null;        // {blob, name}
  let controller = null;
  let recorder = null;

  function useClip(blob, name) {
    clip = {blob, name};
    const player = $("transcription-audio");
    if (player.src) URL.revokeObjectURL(player.src);
    player.src = URL.createObjectURL(blob);
    player.hidden = false;
  }

  const clock = (s) => {
    const m = Math.floor(s / 60);
    return `${m}:${(s - m * 60).toFixed(2).padStart(5, "0")}`;
  };

  function showSegments(segments) {
    const list = $("transcription-segments");
    // Segments without text (a window's trailing timestamp) have nothing to play to.
    list.replaceChildren(...(segments || []).filter((s) => String(s.text).trim()).map((s) => {
      const item = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "segment";
      button.dataset.start = String(s.start);
      button.dataset.end = String(s.end);
      const time = document.createElement("span");
      time.className = "time";
      time.textContent = `${clock(s.start)} – ${clock(s.end)}`;
      button.append(time, document.createTextNode(` ${String(s.text).trim()}`));
      button.setAttribute("aria-label", `Play from ${clock(s.start)}: ${String(s.text).trim()}`);
      button.addEventListener("click", () => {
        const player = $("transcription-audio");
        player.currentTime = s.start;
        player.play().catch(() => {});
      });
      item.append(button);
      return item;
    }));
  }

  async function toggleRecording() {
    const button = $("transcription-record");
    if (recorder) {
      recorder.stop();
      return;
    }
    Izwi.showError($("transcription-error"), null);
    try {
      const stream = await navigator.mediaDevices.getUserMedia({audio: true});
      const parts = [];
      recorder = new MediaRecorder(stream);
      recorder.ondataavailable = (e) => e.data.size && parts.push(e.data);
      recorder.onstop = () => {
        for (const t of stream.getTracks()) t.stop();
        const type = recorder.mimeType || "audio/webm";
        const ext = type.includes("ogg") ? "ogg" : type.includes("mp4") ? "m4a" : "webm";
        useClip(new Blob(parts, {type}), `recording.${ext}`);
        recorder = null;
        button.textContent = "Record from the microphone";
        button.setAttribute("aria-pressed", "false");
      };
      recorder.start();
      button.textContent = "Stop recording";
      button.setAttribute("aria-pressed", "true");
    } catch (e) {
      recorder = null;
      Izwi.showError($("transcription-error"), new Izwi.ApiError(`The microphone cannot be used: ${e.message}`));
    }
  }

  async function run() {
    if (controller) return;
    const error = $("transcription-error");
    Izwi.showError(error, null);
    if (!clip) return Izwi.showError(error, new Izwi.ApiError("Choose an audio file or record one first."));
    const translate = $("transcription-translate").checked;
    const chosen = $("transcription-format").value;
    const timestamps = $("transcription-timestamps").checked;
    const stream = !translate && chosen === "json";
    const format = timestamps && (chosen === "json" || chosen === "text") ? "verbose_json" : chosen;
    const form = new FormData();
    form.append("file", clip.blob, clip.name);
    form.append("model", $("transcription-model").value);
    form.append("response_format", format);
    if (format === "verbose_json") form.append("timestamp_granularities[]", "segment");
    const language = $("transcription-language").value.trim();
    if (language && !translate) form.append("language", language);
    if (stream) form.append("stream", "true");

    const text = $("transcription-text");
    const stats = $("transcription-stats");
    const raw = $("transcription-raw");
    text.textContent = "";
    raw.hidden = true;
    showSegments([]);
    stats.dataset.state = "running";
    stats.textContent = "Transcribing…";
    controller = new AbortController();
    $("transcription-run").disabled = true;
    $("transcription-stop").disabled = false;
    const start = performance.now();
    let first = 0, duration = 0;
    const show = () => {
      const wall = (performance.now() - start) / 1000;
      const parts = [];
      if (first) parts.push(`first text after ${Izwi.formatSeconds((first - start) / 1000)}`);
      parts.push(`took ${Izwi.formatSeconds(wall)}`);
      if (duration) parts.push(`${duration.toFixed(2)} s of audio`, `real-time factor ${(wall / duration).toFixed(2)}`);
      stats.textContent = parts.join(" · ");
    };
    const finishWith = (body) => {
      if (typeof body.text === "string") text.textContent = body.text;
      if (body.duration) duration = body.duration;
      else if (body.usage?.seconds) duration = body.usage.seconds;
      if (body.segments) showSegments(body.segments);
    };
    try {
      const route = translate ? "/v1/audio/translations" : "/v1/audio/transcriptions";
      const res = await Izwi.request(route, {method: "POST", body: form, signal: controller.signal});
      if (stream) {
        await Izwi.readEvents(res, (event) => {
          if (event.type === "transcript.text.delta") {
            if (!first) first = performance.now();
            text.textContent += event.delta;
          } else if (event.type === "transcript.text.done") {
            finishWith(event);
          }
          show();
        });
      } else {
        const body = await res.text();
        first = performance.now();
        if (format === "json" || format === "verbose_json") {
          finishWith(JSON.parse(body));
        } else {
          text.textContent = format === "text" ? body.trim() : "";
          raw.textContent = body;
          raw.hidden = format === "text";
        }
      }
      stats.dataset.state = "done";
    } catch (e) {
      stats.dataset.state = e.name === "AbortError" ? "stopped" : "error";
      Izwi.showError(error, e);
    } finally {
      show();
      controller = null;
      $("transcription-run").disabled = false;
      $("transcription-stop").disabled = true;
    }
  }

  return {
    name: "transcription",
    init() {
      $("transcription-file").addEventListener("change", (e) => {
        const file = e.target.files[0];
        if (file) useClip(file, file.name);
      });
      $("transcription-record").addEventListener("click", toggleRecording);
      $("transcription-form").addEventListener("submit", (e) => {
        e.preventDefault();
        run();
      });
      $("transcription-stop").addEventListener("click", () => controller?.abort());
      // Translations are not streamed: the format says so.
      $("transcription-translate").addEventListener("change", (e) => {
        $("transcription-language").disabled = e.target.checked;
      });
    },
    modelsChanged() {
      Izwi.fillModelSelect($("transcription-model"), ["asr", "translation"]);
    },
  };
})());
