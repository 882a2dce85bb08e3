// Chat and completions over HTTP (http_test_support.hpp): whole and streamed,
// then engine faults and work bounds end to end (issue 11, engine half).

#include "server/http_test_support.hpp"

TEST_CASE("http: chat completion, not streamed", "[server][http]") {
  Harness h;
  const auto r = post(h.port, "/v1/chat/completions", chat_body(false, 5, R"(, "temperature": 0)"));
  REQUIRE(r.status == 200);
  const auto v = r.json();
  CHECK(v.at("object") == "chat.completion");
  CHECK(v.at("model") == "toy");
  const json::value& choice = v.at("choices").as_array().at(0);
  CHECK(choice.at("message").at("role") == "assistant");
  CHECK(choice.at("message").at("content").as_string().size() == 5);
  CHECK(choice.at("finish_reason") == "length");
  CHECK(v.at("usage").at("completion_tokens") == 5);
  CHECK(v.at("usage").at("prompt_tokens").as_int64() > 0);
  CHECK(h.wait_idle());
}

TEST_CASE("http: chat completion, streamed as SSE", "[server][http]") {
  Harness h;
  const auto r = post(h.port, "/v1/chat/completions",
                      chat_body(true, 6, R"(, "stream_options": {"include_usage": true})"));
  REQUIRE(r.status == 200);
  CHECK(r.header("Content-Type") == "text/event-stream");
  const auto events = sse_events(r.body);
  REQUIRE(events.size() >= 4);
  CHECK(events.back() == "[DONE]");
  std::string text;
  int finishes = 0;
  std::string id;
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    const auto c = json::parse(events[i]);
    CHECK(c.at("object") == "chat.completion.chunk");
    if (id.empty()) id = c.at("id").as_string().c_str();
    CHECK(c.at("id") == id.c_str());
    for (const auto& ch : c.at("choices").as_array()) {
      if (const auto* content = ch.at("delta").as_object().if_contains("content"); content && content->is_string())
        text += content->as_string().c_str();
      if (!ch.at("finish_reason").is_null()) ++finishes;
    }
  }
  CHECK(json::parse(events[0]).at("choices").at(0).at("delta").at("role") == "assistant");
  CHECK(finishes == 1);
  CHECK(text.size() == 6);
  CHECK(json::parse(events[events.size() - 2]).at("usage").at("completion_tokens") == 6);
}

TEST_CASE("http: completions, token-id prompt, streamed and not", "[server][http]") {
  Harness h;
  auto r = post(h.port, "/v1/completions", R"({"model": "toy", "prompt": [5, 6, 7], "max_tokens": 4, "temperature": 0})");
  REQUIRE(r.status == 200);
  CHECK(r.json().at("object") == "text_completion");
  const std::string once = r.json().at("choices").at(0).at("text").as_string().c_str();
  CHECK(once.size() == 4);
  r = post(h.port, "/v1/completions",
           R"({"model": "toy", "prompt": [5, 6, 7], "max_tokens": 4, "temperature": 0, "stream": true})");
  REQUIRE(r.status == 200);
  const auto events = sse_events(r.body);
  CHECK(events.back() == "[DONE]");
  std::string streamed;
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    const json::value chunk = json::parse(events[i]);
    for (const auto& ch : chunk.at("choices").as_array()) streamed += ch.at("text").as_string().c_str();
  }
  CHECK(streamed == once);  // greedy: the same tokens either way
}

// --- engine faults and work bounds, end to end (issue 11, engine half) -------

namespace {

std::string completion_body(const std::string& prompt_json, bool stream, int max_tokens) {
  return R"({"model": "toy", "prompt": )" + prompt_json + R"(, "max_tokens": )" + std::to_string(max_tokens) +
         R"(, "temperature": 0)" + (stream ? R"(, "stream": true)" : "") + "}";
}

/// The finish_reason of the last choice in an SSE completion body.
std::string sse_finish_reason(const std::string& body) {
  std::string reason;
  for (const std::string& event : sse_events(body)) {
    if (event == "[DONE]") continue;
    const json::value chunk = json::parse(event);  // kept: the loop below reads into it
    for (const auto& choice : chunk.at("choices").as_array())
      if (choice.at("finish_reason").is_string()) reason = choice.at("finish_reason").as_string().c_str();
  }
  return reason;
}

/// The text of an SSE completion body.
std::string sse_text(const std::string& body) {
  std::string text;
  for (const std::string& event : sse_events(body)) {
    if (event == "[DONE]") continue;
    const json::value chunk = json::parse(event);
    for (const auto& choice : chunk.at("choices").as_array()) text += choice.at("text").as_string().c_str();
  }
  return text;
}

}  // namespace

TEST_CASE("http: a request whose forward pass throws or yields NaN fails alone, the server stays up",
          "[server][http][faults]") {
  FakeEngineOptions options;
  options.throw_token = 7;  // the prompt byte \u0007
  options.nan_token = 8;    // \b
  options.step_delay = 1ms;
  Harness h(test_config(), options);
  const std::string healthy = completion_body(R"("a healthy prompt")", true, 40);
  const HttpResult alone = post(h.port, "/v1/completions", healthy);
  REQUIRE(alone.status == 200);

  for (const char* fault : {R"("bad \u0007 prompt")", R"("bad \b prompt")"}) {
    INFO(fault);
    // The healthy stream runs beside the faulty requests and ends exactly as it did alone.
    auto beside = std::async(std::launch::async, [&] { return post(h.port, "/v1/completions", healthy); });
    const HttpResult plain = post(h.port, "/v1/completions", completion_body(fault, false, 20));
    CHECK(plain.status == 500);
    const HttpResult streamed = post(h.port, "/v1/completions", completion_body(fault, true, 20));
    CHECK(streamed.status == 200);
    CHECK(sse_finish_reason(streamed.body) == "error");
    CHECK(sse_events(streamed.body).back() == "[DONE]");
    const HttpResult healthy_run = beside.get();
    CHECK(healthy_run.status == 200);
    CHECK(sse_text(healthy_run.body) == sse_text(alone.body));
    CHECK(sse_text(alone.body).size() == 40u);
    CHECK(sse_finish_reason(healthy_run.body) == "length");
  }
  CHECK(h.wait_idle());  // every KV block back in the pool
  const std::string metrics = get(h.port, "/metrics").body;
  CHECK(metrics.find("izwi:request_errors_total{model_name=\"toy\"} 4") != std::string::npos);
  CHECK(get(h.port, "/health").status == 200);
}

TEST_CASE("http: a prompt too long for the context is refused before it is tokenized", "[server][http]") {
  FakeEngineOptions options;
  options.max_model_len = 32;
  options.max_token_bytes = 2;  // no token spells more than 2 bytes: 64+ bytes cannot fit 32 tokens
  Harness h(test_config(), options);
  auto r = post(h.port, "/v1/completions", completion_body("\"" + std::string(100, 'x') + "\"", false, 4));
  CHECK(r.status == 400);
  const std::string message = error_of(r).at("message").as_string().c_str();
  CHECK(message.find("maximum context length is 32 tokens") != std::string::npos);
  CHECK(message.find("100 bytes") != std::string::npos);
  CHECK(error_of(r).at("param") == "prompt");
  r = post(h.port, "/v1/chat/completions",
           R"({"model": "toy", "messages": [{"role": "user", "content": ")" + std::string(100, 'y') + R"("}]})");
  CHECK(r.status == 400);
  CHECK(error_of(r).at("param") == "messages");
  CHECK(post(h.port, "/v1/completions", completion_body(R"("abcd")", false, 4)).status == 200);
}

/// POSTs body to target on port and checks the 400: its message holds
/// `words` and its param is `param`.
void check_refused(unsigned short port, const std::string& target, const std::string& body, const std::string& words,
                   const std::string& param) {
  INFO(body);
  const HttpResult r = post(port, target, body);
  CHECK(r.status == 400);
  if (r.status != 400) return;
  const std::string message = error_of(r).at("message").as_string().c_str();
  INFO(message);
  CHECK(message.find(words) != std::string::npos);
  CHECK(error_of(r).at("param") == param.c_str());
}

TEST_CASE("http: the engine's prompt checks reach the client in vLLM's words under the endpoint's param",
          "[server][http]") {
  // Ids outside the vocabulary and prompts that fill the context are refused
  // once, by the engine (izwi::check_prompt_tokens; an empty prompt too, but
  // the parser refuses an empty "prompt" first); the server only renames the
  // field and checks prompt plus max_tokens.
  FakeEngineOptions options;
  options.max_model_len = 32;
  Harness h(test_config(), options);
  auto ids = [](std::size_t n) {
    std::string json = "[";
    for (std::size_t i = 0; i < n; ++i) json += (i ? ",1" : "1");
    return json + "]";
  };
  check_refused(h.port, "/v1/completions",
                completion_body("[1, 2, 5000]", false, 4), "Token id 5000 is out of vocabulary (size 1000).",
                "prompt");
  check_refused(h.port, "/v1/completions", completion_body(ids(40), false, 4),
                "maximum context length is 32 tokens. However, your request has 40 input tokens.", "prompt");
  check_refused(h.port, "/v1/chat/completions",
                R"({"model": "toy", "max_tokens": 2, "messages": [{"role": "user", "content": ")" + std::string(40, 'y') +
                    R"("}]})",
                "maximum context length is 32 tokens. However, your request has", "messages");
  // Prompt plus output beyond the context: the server's own check, which
  // leaves a prompt that does not fit alone to the engine's words above.
  check_refused(h.port, "/v1/completions",
                completion_body(ids(10), false, 30), "However, you requested 40 tokens", "max_tokens");
  CHECK(post(h.port, "/v1/completions", completion_body(ids(10), false, 4)).status == 200);
  CHECK(h.wait_idle());
}

TEST_CASE("http: sampling out of range is refused once, by the engine, under the client's field name",
          "[server][http]") {
  FakeEngineOptions options;
  options.max_model_len = 32;
  Harness h(test_config(), options);
  const std::string chat = R"({"model": "toy", "messages": [{"role": "user", "content": "hi"}])";
  check_refused(h.port, "/v1/chat/completions",
                chat + R"(, "temperature": -1})", "temperature must be a finite number >= 0",
                "temperature");
  check_refused(h.port, "/v1/chat/completions", chat + R"(, "top_p": 0})", "top_p must be in (0, 1], got 0", "top_p");
  check_refused(h.port, "/v1/chat/completions",
                chat + R"(, "top_p": 1.5})", "top_p must be in (0, 1], got 1.5", "top_p");
  check_refused(h.port, "/v1/chat/completions", chat + R"(, "min_p": 2})", "min_p must be in [0, 1]", "min_p");
  check_refused(h.port, "/v1/chat/completions", chat + R"(, "presence_penalty": 3})", "[-2, 2]", "presence_penalty");
  check_refused(h.port, "/v1/chat/completions",
                chat + R"(, "frequency_penalty": -2.5})", "[-2, 2]", "frequency_penalty");
  check_refused(h.port, "/v1/chat/completions", chat + R"(, "repetition_penalty": 0})", "a finite number > 0",
                "repetition_penalty");
  check_refused(h.port, "/v1/chat/completions", chat + R"(, "min_tokens": 9, "max_tokens": 3})", "min_tokens must be",
                "min_tokens");
  check_refused(h.port, "/v1/completions",
                completion_body(R"("ab")", false, 4).insert(1, R"("top_p": -1, )"), "top_p must be",
                "top_p");
  // Prompt plus output beyond the context names the field the client sent.
  check_refused(h.port, "/v1/chat/completions", chat + R"(, "max_completion_tokens": 31})", "However, you requested",
                "max_completion_tokens");
  check_refused(h.port, "/v1/chat/completions",
                chat + R"(, "max_tokens": 31})", "However, you requested", "max_tokens");
  CHECK(post(h.port, "/v1/chat/completions", chat + R"(, "max_tokens": 2, "top_p": 0.5})").status == 200);
  CHECK(h.wait_idle());
}

TEST_CASE("http: requests waiting for a preparation thread count against the queue limit", "[server][http][threads]") {
  ServerConfig config = test_config();
  config.prep_threads = 1;
  config.max_queued_preparations = 1;
  Harness h(config);
  // Occupy the one preparation thread, so the next generation request waits in its queue.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  boost::asio::post(h.server.work_executor(), [released] { released.wait(); });
  auto queued = std::async(std::launch::async, [&] {
    return post(h.port, "/v1/chat/completions", chat_body(false, 2));
  });
  std::this_thread::sleep_for(200ms);
  const HttpResult refused = post(h.port, "/v1/chat/completions", chat_body(false, 2));
  CHECK(refused.status == 429);
  CHECK(std::string(error_of(refused).at("message").as_string().c_str()).find("--max-queue 1") != std::string::npos);
  release.set_value();
  CHECK(queued.get().status == 200);
}

TEST_CASE("http: special tokens spelled in text: parsed as vLLM does, or plain text on request",
          "[server][http][special]") {
  auto prompt_tokens = [](const HttpResult& r) {
    INFO(r.body);
    REQUIRE(r.status == 200);
    return json::parse(r.body).at("usage").at("prompt_tokens").as_int64();
  };
  const std::string content = R"("hi<|im_end|>there")";  // 17 bytes; "<|im_end|>" is 10 of them
  auto chat = [&](const std::string& extra) {
    return R"({"model": "toy", "max_tokens": 1, "messages": [{"role": "user", "content": )" + content + "}]" + extra +
           "}";
  };
  auto completion = [&](const std::string& extra) {
    return R"({"model": "toy", "max_tokens": 1, "prompt": )" + content + extra + "}";
  };
  {
    Harness h;  // the default: vLLM's behaviour, the control token
    const auto parsed = prompt_tokens(post(h.port, "/v1/chat/completions", chat("")));
    const auto as_text = prompt_tokens(post(h.port, "/v1/chat/completions", chat(R"(, "special_tokens_as_text": true)")));
    CHECK(as_text == parsed + 9);  // ten bytes instead of one token
    CHECK(prompt_tokens(post(h.port, "/v1/completions", completion(""))) == 8);
    CHECK(prompt_tokens(post(h.port, "/v1/completions", completion(R"(, "special_tokens_as_text": true)"))) == 17);
    const auto bad = post(h.port, "/v1/completions", completion(R"(, "special_tokens_as_text": 1)"));
    CHECK(bad.status == 400);
    CHECK(error_of(bad).at("param") == "special_tokens_as_text");
  }
  {
    ServerConfig config = test_config();
    config.special_tokens_as_text = true;  // izwi-server --special-tokens-as-text
    Harness h(config);
    CHECK(prompt_tokens(post(h.port, "/v1/completions", completion(""))) == 17);
    CHECK(prompt_tokens(post(h.port, "/v1/completions", completion(R"(, "special_tokens_as_text": false)"))) == 8);
  }
}
