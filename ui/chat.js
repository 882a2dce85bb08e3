// Chat panel: streamed /v1/chat/completions with a model picker, system
// prompt and sampling settings; time to first token and tokens/s per reply;
// Stop aborts the request (the server sees the connection go and frees it).
"use strict";

Izwi.panel((() => {
  const {$} = Izwi;
  let history = [];       // {role, content} of the conversation so far
  let controller = null;  // the AbortController of the reply being streamed

  function addMessage(role, text) {
    const item = document.createElement("li");
    item.className = `message ${role}`;
    const who = document.createElement("span");
    who.className = "role";
    who.textContent = role === "user" ? "You" : "Model";
    const content = document.createElement("div");
    content.className = "content";
    content.textContent = text;
    item.append(who, content);
    $("chat-log").append(item);
    item.scrollIntoView({block: "end"});
    return item;
  }

  function numberOf(id) {
    const v = Number($(id).value);
    return Number.isFinite(v) && $(id).value !== "" ? v : undefined;
  }

  async function send() {
    const input = $("chat-input");
    const text = input.value.trim();
    if (!text || controller) return;
    Izwi.showError($("chat-error"), null);
    const messages = [];
    const system = $("chat-system").value.trim();
    if (system) messages.push({role: "system", content: system});
    messages.push(...history, {role: "user", content: text});
    addMessage("user", text);
    input.value = "";
    const reply = addMessage("assistant", "");
    reply.dataset.state = "streaming";
    const content = reply.querySelector(".content");
    const stats = document.createElement("p");
    stats.className = "stats";
    reply.append(stats);

    controller = new AbortController();
    $("chat-send").disabled = true;
    $("chat-stop").disabled = false;
    const start = performance.now();
    let first = 0, chunks = 0, usage = null, finish = "";
    const body = {
      model: $("chat-model").value, messages, stream: true, stream_options: {include_usage: true},
      temperature: numberOf("chat-temperature"), top_p: numberOf("chat-top-p"), max_tokens: numberOf("chat-max-tokens"),
    };
    const showStats = () => {
      const end = performance.now();
      const tokens = usage ? usage.completion_tokens : chunks;
      const parts = [];
      if (first) parts.push(`TTFT ${Izwi.formatSeconds((first - start) / 1000)}`);
      if (first && tokens > 1 && end > first) parts.push(`${((tokens - 1) / ((end - first) / 1000)).toFixed(1)} tokens/s`);
      parts.push(`${tokens} token${tokens === 1 ? "" : "s"}`);
      if (finish) parts.push(`finish: ${finish}`);
      stats.textContent = parts.join(" · ");
      reply.dataset.ttftMs = first ? String(Math.round(first - start)) : "";
      reply.dataset.tokens = String(tokens);
    };
    try {
      const res = await Izwi.request("/v1/chat/completions", {method: "POST", json: body, signal: controller.signal});
      await Izwi.readEvents(res, (event) => {
        if (event.usage) usage = event.usage;
        for (const choice of event.choices || []) {
          const delta = choice.delta?.content ?? "";
          if (delta) {
            if (!first) first = performance.now();
            ++chunks;
            content.textContent += delta;
          }
          if (choice.finish_reason) finish = choice.finish_reason;
        }
        showStats();
      });
      reply.dataset.state = "done";
      history.push({role: "user", content: text}, {role: "assistant", content: content.textContent});
    } catch (e) {
      if (e.name === "AbortError") {
        reply.dataset.state = "stopped";
        finish = "stopped";
        // What was said stays part of the conversation.
        history.push({role: "user", content: text}, {role: "assistant", content: content.textContent});
      } else {
        reply.dataset.state = "error";
        Izwi.showError($("chat-error"), e);
      }
    } finally {
      showStats();
      controller = null;
      $("chat-send").disabled = false;
      $("chat-stop").disabled = true;
    }
  }

  return {
    name: "chat",
    init() {
      $("chat-form").addEventListener("submit", (e) => {
        e.preventDefault();
        send();
      });
      $("chat-input").addEventListener("keydown", (e) => {
        if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
          e.preventDefault();
          send();
        }
      });
      $("chat-stop").addEventListener("click", () => controller?.abort());
      $("chat-clear").addEventListener("click", () => {
        controller?.abort();
        history = [];
        $("chat-log").replaceChildren();
        Izwi.showError($("chat-error"), null);
      });
    },
    modelsChanged() {
      Izwi.fillModelSelect($("chat-model"), ["chat"]);
    },
  };
})());
