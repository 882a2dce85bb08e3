// HTTP hardening (issue 11) over the toy engine (http_test_support.hpp):
// framing, HEAD, Host, metric labels, hang-ups, faults on I/O threads, the
// open-file limit; then the registry and the engine handle under load and unload.

#include "server/http_test_support.hpp"

// --- hardening (issue 11): framing, HEAD, Host, labels, hang-ups, faults ------------

namespace {

/// Counts the status lines ("HTTP/1.x NNN ") of responses in a raw byte stream.
std::size_t count_responses(const std::string& out) {
  std::size_t n = 0;
  for (std::size_t p = out.find("HTTP/1."); p != std::string::npos; p = out.find("HTTP/1.", p + 1)) {
    const std::string_view line = std::string_view(out).substr(p, 13);
    if (line.size() == 13 && line[8] == ' ' && std::isdigit(static_cast<unsigned char>(line[9])) && line[12] == ' ')
      ++n;
  }
  return n;
}

/// Sends `request` on a fresh connection and reads until the server closes.
std::string exchange_until_close(unsigned short port, std::string_view request) {
  RawSocket s(port);
  REQUIRE(s.send(request));
  std::string out;
  CHECK(s.read_until_close(out));
  return out;
}

}  // namespace

TEST_CASE("http: a Transfer-Encoding without a final chunked is 400 and closes, its body is never a request",
          "[server][http]") {
  Harness h;
  const std::string smuggled = "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n";
  for (const std::string te : {"gzip", "chunked, gzip", "identity"}) {
    INFO(te);
    const std::string out = exchange_until_close(
        h.port, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + te +
                    "\r\nContent-Type: application/json\r\n\r\n" + smuggled);
    CHECK(out.rfind("HTTP/1.1 400", 0) == 0);
    CHECK(out.find("Transfer-Encoding") != std::string::npos);  // the message names the problem
    CHECK(count_responses(out) == 1);                            // the body was not run as a request
    CHECK(out.find("\"object\":\"list\"") == std::string::npos);
  }
  // Transfer-Encoding with Content-Length, and in HTTP/1.0: refused the same way.
  std::string out = exchange_until_close(
      h.port, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(smuggled.size()) +
                  "\r\nTransfer-Encoding: gzip\r\n\r\n" + smuggled);
  CHECK(out.rfind("HTTP/1.1 400", 0) == 0);
  CHECK(count_responses(out) == 1);
  out = exchange_until_close(h.port, "POST /v1/completions HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" +
                                         smuggled);
  CHECK(out.rfind("HTTP/1.0 400", 0) == 0);
  CHECK(count_responses(out) == 1);
  // A plain chunked body still works.
  const std::string body = chat_body(false, 2);
  char size[16];
  std::snprintf(size, sizeof size, "%zx", body.size());
  RawSocket s(h.port);
  REQUIRE(s.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
                 std::string(size) + "\r\n" + body + "\r\n0\r\n\r\n"));
  std::string ok;
  while (ok.find("chat.completion") == std::string::npos && s.read_some(ok) > 0) {
  }
  CHECK(ok.rfind("HTTP/1.1 200", 0) == 0);
}

TEST_CASE("http: chunk extensions and chunk-size lines are bounded", "[server][http]") {
  Harness h;
  const std::string head = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  {
    // A chunk-size line that never ends: answered 400 long before 2 MiB.
    RawSocket s(h.port, 10s);
    REQUIRE(s.send(head + "5;"));
    const std::string piece(64 * 1024, 'a');
    std::size_t sent = 0;
    while (sent < (std::size_t{2} << 20) && s.send(piece)) sent += piece.size();
    std::string out;
    s.read_until_close(out);
    INFO(out.substr(0, 300));
    CHECK(out.rfind("HTTP/1.1 400", 0) == 0);
    CHECK(out.find("chunk") != std::string::npos);
  }
  {
    // A complete line whose extensions are over max_chunk_extension_bytes.
    const std::string out =
        exchange_until_close(h.port, head + "5;x=" + std::string(4000, 'b') + "\r\nhello\r\n0\r\n\r\n");
    CHECK(out.rfind("HTTP/1.1 400", 0) == 0);
  }
  CHECK(get(h.port, "/livez").status == 200);
}

TEST_CASE("http: HEAD is answered like GET without a body, keep-alive stays in step", "[server][http]") {
  Harness h;
  const std::string get_body = get(h.port, "/v1/models").body;
  RawSocket s(h.port);
  // HEAD on a GET route, HEAD on a POST-only route (405), then a GET: three
  // responses, the first two without bodies, on one connection.
  REQUIRE(s.send("HEAD /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
                 "HEAD /v1/chat/completions HTTP/1.1\r\nHost: x\r\n\r\n"
                 "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string out;
  while (out.find("\"status\":\"ok\"") == std::string::npos && s.read_some(out) > 0) {
  }
  INFO(out);
  const std::size_t first_end = out.find("\r\n\r\n");
  REQUIRE(first_end != std::string::npos);
  const std::string first = out.substr(0, first_end);
  CHECK(first.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(first.find("Content-Length: " + std::to_string(get_body.size())) != std::string::npos);
  const std::string rest = out.substr(first_end + 4);
  REQUIRE(rest.rfind("HTTP/1.1 405", 0) == 0);  // no body between the two
  const std::size_t second_end = rest.find("\r\n\r\n");
  REQUIRE(second_end != std::string::npos);
  CHECK(rest.substr(0, second_end).find("Allow: POST") != std::string::npos);
  CHECK(rest.substr(second_end + 4).rfind("HTTP/1.1 200", 0) == 0);
  CHECK(eventually([&] { return h.server.http_metrics().count("/v1/models", 200) >= 2; }));
}

TEST_CASE("http: an HTTP/1.1 request without exactly one Host is 400", "[server][http]") {
  Harness h;
  std::string out = exchange_until_close(h.port, "GET /v1/models HTTP/1.1\r\n\r\n");
  CHECK(out.rfind("HTTP/1.1 400", 0) == 0);
  CHECK(out.find("Host") != std::string::npos);
  CHECK(out.find("\"object\":\"list\"") == std::string::npos);
  out = exchange_until_close(h.port, "GET /v1/models HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n");
  CHECK(out.rfind("HTTP/1.1 400", 0) == 0);
  // HTTP/1.0 has no Host requirement.
  out = exchange_until_close(h.port, "GET /v1/models HTTP/1.0\r\n\r\n");
  CHECK(out.rfind("HTTP/1.0 200", 0) == 0);
}

TEST_CASE("http: metric labels take known methods only, others count as OTHER", "[server][http]") {
  izwi::server::http::HttpMetrics m;
  m.observe("BREW", "unmatched", 405, 0.001);
  m.observe("GET", "unmatched", 404, 0.001);
  CHECK(m.prometheus_text().find("method=\"OTHER\"") != std::string::npos);
  CHECK(m.prometheus_text().find("BREW") == std::string::npos);

  Harness h;
  for (int i = 0; i < 20; ++i) {
    RawSocket s(h.port);
    REQUIRE(s.send("MADEUP" + std::to_string(i) + " /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"));
    std::string out;
    while (out.find("\r\n\r\n") == std::string::npos && s.read_some(out) > 0) {
    }
    CHECK(out.rfind("HTTP/1.1 405", 0) == 0);
  }
  REQUIRE(eventually([&] { return h.server.http_metrics().count("unmatched", 405) == 20; }));
  const std::string text = get(h.port, "/metrics").body;
  CHECK(text.find("MADEUP") == std::string::npos);
  CHECK(text.find(R"(izwi_http_requests_total{method="OTHER",route="unmatched",status="405"} 20)") !=
        std::string::npos);
}

TEST_CASE("http: a client that pipelines a request and disconnects aborts its generation", "[server][http][threads]") {
  FakeEngineOptions options;
  options.step_delay = 2ms;
  Harness h(test_config(), options);
  for (const bool stream : {false, true}) {
    INFO("stream " << stream);
    RawSocket s(h.port);
    REQUIRE(s.send(raw_post("/v1/chat/completions", chat_body(stream, 5000)) +
                   "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"));
    const auto deadline = std::chrono::steady_clock::now() + 3s;
    while (h.engine_status().num_running == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    REQUIRE(h.engine_status().num_running == 1);
    s.close();  // 5000 steps of 2 ms: only an abort ends it within the wait below
    CHECK(h.wait_idle(3s));
  }
  CHECK(eventually([&] { return h.server.http_metrics().count("/v1/chat/completions", 499) >= 1; }));
  CHECK(post(h.port, "/v1/chat/completions", chat_body(false, 2)).status == 200);
}

TEST_CASE("http: a half-closed client still gets its answer", "[server][http][threads]") {
  FakeEngineOptions options;
  options.step_delay = 2ms;
  Harness h(test_config(), options);
  for (const bool stream : {false, true}) {
    INFO("stream " << stream);
    RawSocket s(h.port, 10s);
    REQUIRE(s.send(raw_post("/v1/chat/completions", chat_body(stream, 60))));
    s.shutdown_send();  // done sending, still reading
    std::string out;
    CHECK(s.read_until_close(out));
    // An interim 100 may come first (the server checking the client is there).
    const std::size_t final_status = out.find("HTTP/1.1 200");
    REQUIRE(final_status != std::string::npos);
    CHECK(out.substr(0, final_status).find("HTTP/1.1 1") == (final_status == 0 ? std::string::npos : 0));
    if (stream) {
      CHECK(out.find("data: [DONE]") != std::string::npos);
    } else {
      const std::size_t body = out.find("\r\n\r\n", final_status);
      REQUIRE(body != std::string::npos);
      const json::value v = json::parse(out.substr(body + 4));
      CHECK(v.at("usage").at("completion_tokens") == 60);
    }
  }
  CHECK(h.wait_idle());
}

TEST_CASE("http: an exception on an I/O thread closes one connection, the server goes on", "[server][http][threads]") {
  // A pending response whose resume() throws (a handler bug), and a handler
  // that posts throwing work to the strand outside any session guard.
  struct ThrowingPending final : izwi::server::http::PendingResponse {
    void cancel() noexcept override {}
    void resume() override { throw std::runtime_error("resume failed"); }
  };
  auto routes = [](Server& server) {
    server.add_route("GET", "/test/throw-in-stream", [](izwi::server::HandlerContext& c) {
      izwi::server::http::Response head{bhttp::status::ok, 11};
      head.set(bhttp::field::content_type, "text/plain");
      c.session->begin_stream(head);
      c.session->attach(std::make_shared<ThrowingPending>());
      c.session->stream_write("first");
    });
    server.add_route("GET", "/test/throw-posted", [](izwi::server::HandlerContext& c) {
      boost::asio::post(c.session->get_executor(), [] { throw std::runtime_error("unguarded"); });
      c.session->respond(izwi::server::http::Response{bhttp::status::ok, 11});
    });
  };
  Harness h(test_config(), {}, routes);
  RawSocket s(h.port);
  REQUIRE(s.send("GET /test/throw-in-stream HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string out;
  CHECK(s.read_until_close(out));  // that connection only is closed
  CHECK(out.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(out.find("0\r\n\r\n") == std::string::npos);  // no well-formed end: it was cut
  CHECK(eventually([&] { return h.server.http_metrics().handler_exceptions() == 1; }));
  CHECK(get(h.port, "/test/throw-posted").status == 200);
  CHECK(eventually([&] { return h.server.http_metrics().handler_exceptions() == 2; }));
  for (int i = 0; i < 4; ++i) CHECK(get(h.port, "/livez").status == 200);  // every I/O thread still serves
  CHECK(get(h.port, "/metrics").body.find("izwi_http_handler_exceptions_total 2") != std::string::npos);
}

TEST_CASE("http: the connection limit fits the open-file limit, beyond it, 503", "[server][http][threads]") {
  using izwi::server::http::connection_limit_for;
  CHECK(connection_limit_for(1024, 1024) < 1024);
  CHECK(connection_limit_for(1024, 1u << 20) == 1024);
  CHECK(connection_limit_for(10, 96) == 10);
  CHECK(connection_limit_for(1024, 96) == 32);
  CHECK(connection_limit_for(1024, 8) == 1);

  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
  if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max < 256) {
    WARN("SKIPPED: the hard open-file limit is below 256");
    return;
  }
  rlimit low = saved;
  low.rlim_cur = 96;  // 96 - 64 reserved = 32 connections
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  struct Restore {
    rlimit limit;
    ~Restore() { ::setrlimit(RLIMIT_NOFILE, &limit); }
  } restore{saved};
  {
    Harness h;  // max_connections 1024 asked
    CHECK(h.server.config().limits.max_connections == 32);
    std::vector<std::unique_ptr<RawSocket>> clients;
    int ok = 0, refused = 0;
    for (int i = 0; i < 34; ++i) {
      clients.push_back(std::make_unique<RawSocket>(h.port));
      REQUIRE(clients.back()->connected());
      REQUIRE(clients.back()->send("GET /livez HTTP/1.1\r\nHost: x\r\n\r\n"));
      std::string out;
      while (out.find("\r\n\r\n") == std::string::npos && clients.back()->read_some(out) > 0) {
      }
      if (out.rfind("HTTP/1.1 200", 0) == 0) ++ok;
      if (out.rfind("HTTP/1.1 503", 0) == 0) ++refused;
    }
    CHECK(ok == 32);
    CHECK(refused == 2);
  }
  // raise_open_file_limit lifts the soft limit to the hard one.
  CHECK(izwi::server::http::raise_open_file_limit() ==
        (saved.rlim_max == RLIM_INFINITY ? std::uint64_t{1} << 32 : saved.rlim_max));
}

// --- registry and engine handle: races, ids, paths ----------------------------------------------

namespace {

/// An engine for EngineModel: the toy engine, with a submit that can be made
/// slow to open the window between the draining check and the queueing.
class SlowSubmitEngine {
 public:
  struct Tokenizer {
    std::vector<izwi::TokenId> encode(std::string_view text) const {
      return std::vector<izwi::TokenId>(text.begin(), text.end());
    }
    std::vector<izwi::TokenId> encode(std::string_view text, const izwi::tokenizer::EncodeOptions&) const {
      return encode(text);
    }
    std::string_view token_bytes(izwi::TokenId) const { return "x"; }
  };
  struct Model {
    const Tokenizer* tokenizer() const { return &tok; }
    std::size_t vocab_size() const { return 1000; }
    Tokenizer tok;
  };
  struct Executor {
    const Model& model() const { return m; }
    Model m;
  };

  SlowSubmitEngine()
      : engine_(izwi::FcfsScheduler(izwi::SchedulerConfig{}),
                izwi::testing::ToyKV(izwi::testing::SlowToyExecutor({}, 1ms).kv_cache_shape(), {.num_blocks = 256}),
                izwi::testing::SlowToyExecutor({}, 1ms), izwi::EngineConfig{}) {}

  std::chrono::milliseconds submit_delay{0};

  void run() { engine_.run(); }
  void stop() { engine_.stop(); }
  std::size_t abort_all() { return engine_.abort_all(); }
  bool has_unfinished_requests() const { return engine_.has_unfinished_requests(); }
  izwi::ResponseStream generate_streaming(izwi::Request request) {
    std::this_thread::sleep_for(submit_delay);
    return engine_.generate_streaming(std::move(request));
  }
  izwi::EngineMetrics metrics() const { return engine_.metrics(); }
  std::string metrics_text() const { return engine_.metrics_text(); }
  const Executor& executor() const { return executor_; }

 private:
  FakeEngine::EngineType engine_;
  Executor executor_;
};

/// Reads a stream until its final chunk or the timeout; true when it ended.
bool drains_within(izwi::ResponseStream& stream, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!stream.done() && std::chrono::steady_clock::now() < deadline)
    if (stream.wait_for(20ms))
      while (stream.try_next()) {
      }
  return stream.done();
}

}  // namespace

TEST_CASE("engine handle: a request submitted while the model shuts down finishes or is refused",
          "[server][registry][threads]") {
  izwi::server::ModelInfo info;
  info.id = "slow";
  izwi::server::EngineModel<SlowSubmitEngine> model(std::make_unique<SlowSubmitEngine>(), info);
  model.engine().submit_delay = 300ms;
  auto submitted = std::async(std::launch::async, [&]() -> std::optional<izwi::ResponseStream> {
    izwi::Request request;
    request.prompt_tokens = {1, 2, 3};
    request.sampling.max_tokens = 100000;
    request.sampling.ignore_eos = true;
    try {
      return model.submit(std::move(request));
    } catch (const izwi::unavailable&) {
      return std::nullopt;
    }
  });
  std::this_thread::sleep_for(50ms);  // the submit has passed its draining check and sleeps
  model.shutdown(std::chrono::steady_clock::now());
  std::optional<izwi::ResponseStream> stream = submitted.get();
  if (stream) CHECK(drains_within(*stream, 3s));  // accepted: it must end (aborted), not hang
  CHECK_THROWS_AS(model.submit(izwi::Request{}), izwi::unavailable);
}

namespace {

/// A model whose status() takes a while: entries() is then still reading the
/// table's engines when an unload resets one.
class SlowStatusEngine final : public izwi::server::AnyEngine {
 public:
  explicit SlowStatusEngine(std::string id) { info_.id = std::move(id); }
  const izwi::server::ModelInfo& info() const noexcept override { return info_; }
  std::vector<izwi::TokenId> encode(std::string_view) const override { return {1}; }
  std::string render_chat(std::span<const izwi::tokenizer::ChatMessage>,
                          const izwi::tokenizer::ChatTemplateOptions&) const override {
    return {};
  }
  std::string token_bytes(izwi::TokenId) const override { return {}; }
  std::size_t vocab_size() const noexcept override { return 1; }
  izwi::ResponseStream submit(izwi::Request) override { throw izwi::unavailable("not serving"); }
  std::string metrics_text() const override { return {}; }
  izwi::server::EngineStatus status() const override {
    std::this_thread::sleep_for(2ms);
    return {};
  }
  void shutdown(std::chrono::steady_clock::time_point) override {}

 private:
  izwi::server::ModelInfo info_;
};

}  // namespace

TEST_CASE("registry: entries() while models load and unload (ThreadSanitizer)", "[server][registry][threads]") {
  ModelRegistry registry([](const std::string& id, const std::filesystem::path&) {
    return std::make_unique<SlowStatusEngine>(id);
  });
  auto load = [&](const std::string& id) {
    std::promise<void> done;
    registry.load_path(id, id, [&](std::optional<izwi::server::ApiError>) { done.set_value(); });
    done.get_future().wait();
  };
  load("a");  // listed first: its slow status() is read while "b" unloads
  load("b");
  std::atomic<bool> stop{false};
  std::atomic<int> listings{0};
  std::thread reader([&] {
    while (!stop.load()) {
      for (const auto& e : registry.entries()) (void)e.status;
      ++listings;
    }
  });
  for (int round = 0; round < 30; ++round) {
    std::promise<void> unloaded;
    registry.unload("b", 0ms, [&](std::optional<izwi::server::ApiError>) { unloaded.set_value(); });
    unloaded.get_future().wait();
    std::this_thread::sleep_for(1ms);
    load("b");
  }
  stop = true;
  reader.join();
  CHECK(listings.load() > 0);
  CHECK(registry.find("b") != nullptr);
}

TEST_CASE("registry: one id per checkpoint, load errors do not show the models directory", "[server][registry]") {
  const auto root = std::filesystem::temp_directory_path() / ("izwi-http-models-" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  std::ofstream(root / "quant.gguf") << "GGUF";
  struct Cleanup {
    std::filesystem::path p;
    ~Cleanup() { std::filesystem::remove_all(p); }
  } cleanup{root};
  ModelRegistry registry(
      [](const std::string&, const std::filesystem::path& path) -> std::unique_ptr<izwi::server::AnyEngine> {
        throw izwi::invalid_argument("model", path.string() + ": truncated checkpoint");
      },
      root);
  CHECK(registry.resolve("quant") == root / "quant.gguf");
  try {
    registry.resolve("quant.gguf");
    FAIL("'quant.gguf' resolved as a second id of quant.gguf");
  } catch (const izwi::server::ApiError& e) {
    CHECK(e.status == 404);
    CHECK(std::string(e.what()).find("'quant'") != std::string::npos);  // says which id to use
  }
  std::promise<std::optional<izwi::server::ApiError>> done;
  registry.load("quant", [&](std::optional<izwi::server::ApiError> e) { done.set_value(std::move(e)); });
  const auto failure = done.get_future().get();
  REQUIRE(failure.has_value());
  const std::string message = failure->what();
  INFO(message);
  CHECK(message.find("truncated checkpoint") != std::string::npos);
  CHECK(message.find(root.string()) == std::string::npos);
  CHECK(message.find("<models-dir>/quant.gguf") != std::string::npos);
  CHECK(registry.entry("quant")->error.find(root.string()) == std::string::npos);
}
