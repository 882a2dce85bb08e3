// izwi-server's HTTP layer on 127.0.0.1 (http_test_support.hpp): the pieces
// without a server, then models, health, API keys, errors, body limits,
// keep-alive, timeouts, connection limits, shutdown, /metrics and the admin
// routes. Chat and completions: http_generation_test.cpp; framing hardening,
// the registry and the engine handle: http_hardening_test.cpp; audio:
// http_speech_test.cpp.

#include "izwi/kernels/cpu/dispatch.hpp"
#include "server/http_test_support.hpp"

// --- pieces without a server --------------------------------------------------------

TEST_CASE("http: constant-time key comparison and bearer parsing", "[server][http]") {
  using namespace izwi::server::http;
  CHECK(constant_time_equal("sk-abc", "sk-abc"));
  CHECK_FALSE(constant_time_equal("sk-abc", "sk-abd"));
  CHECK_FALSE(constant_time_equal("sk-abc", "sk-ab"));
  CHECK_FALSE(constant_time_equal("", "x"));
  CHECK(bearer_token("Bearer sk-1") == "sk-1");
  CHECK(bearer_token("bearer   sk-1 ") == "sk-1");
  CHECK(bearer_token("Basic sk-1").empty());
  CHECK(bearer_token("Bearer").empty());
  CHECK(bearer_token("Bearersk-1").empty());
  ApiKeys keys({"k1", "k2"});
  CHECK(keys.allows("Bearer k1"));
  CHECK(keys.allows("Bearer k2"));
  CHECK_FALSE(keys.allows("Bearer k3"));
  CHECK_FALSE(keys.allows("Bearer "));
  CHECK_FALSE(keys.allows(""));
  CHECK(ApiKeys{}.allows(""));
}

TEST_CASE("http: request ids are honoured when safe, else generated", "[server][http]") {
  using namespace izwi::server::http;
  CHECK(request_id_for("abc-123") == "abc-123");
  const std::string fresh = request_id_for("has space");
  CHECK(fresh.size() == 32);
  CHECK(request_id_for(std::string(200, 'a')).size() == 32);
  CHECK(request_id_for("bad\r\nheader").size() == 32);
  CHECK(make_request_id() != make_request_id());
}

TEST_CASE("http: router matches patterns, reports 405 with the allowed methods", "[server][http]") {
  izwi::server::http::Router<int> router;
  router.add("GET", "/v1/models", 1);
  router.add("GET", "/v1/models/{id}", 2);
  router.add("POST", "/v1/admin/models/{id}/load", 3);
  router.add("POST", "/v1/models", 4);
  using Kind = izwi::server::http::Router<int>::Result::Kind;
  auto r = router.route("GET", "/v1/models/Qwen%2Fx?x=1");
  REQUIRE(r.kind == Kind::found);
  CHECK(*r.match.handler == 2);
  CHECK(r.match.param("id") == "Qwen/x");
  CHECK(r.match.pattern == "/v1/models/{id}");
  r = router.route("DELETE", "/v1/models");
  CHECK(r.kind == Kind::method_not_allowed);
  CHECK(r.allow == "GET, POST");
  CHECK(router.route("GET", "/v1/models/a/b").kind == Kind::not_found);
  CHECK(router.route("GET", "/v1/models/%zz").kind == Kind::not_found);
  CHECK(*router.route("POST", "/v1/admin/models/m1/load").match.handler == 3);
  router.add("GET", "/v1/models", 5);  // replaces
  CHECK(*router.route("GET", "/v1/models").match.handler == 5);
}

TEST_CASE("http: HTTP metrics are valid Prometheus text", "[server][http]") {
  izwi::server::http::HttpMetrics m;
  m.observe("GET", "/v1/models", 200, 0.002);
  m.observe("POST", "/v1/chat/completions", 200, 1.5);
  m.observe("POST", "/v1/chat/completions", 400, 0.001);
  CHECK(m.count("/v1/chat/completions", 200) == 1);
  const std::string text = m.prometheus_text();
  CHECK(text.find("izwi_http_requests_total{method=\"POST\",route=\"/v1/chat/completions\",status=\"400\"} 1") !=
        std::string::npos);
  CHECK(text.find("izwi_http_request_duration_seconds_bucket{method=\"POST\",route=\"/v1/chat/completions\",le=\"+Inf\"} 2") !=
        std::string::npos);
  // promtool (Debian's prometheus package) when installed.
  if (std::system("command -v promtool >/dev/null 2>&1") == 0) {
    char path[] = "/tmp/izwi-http-metrics-XXXXXX";
    const int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    ::close(fd);
    const int rc = std::system(("promtool check metrics < " + std::string(path) + " >/dev/null 2>&1").c_str());
    std::remove(path);
    CHECK(rc == 0);
  }
}

// --- a server on 127.0.0.1 --------------------------------------------------------

TEST_CASE("http: models, health and routing errors", "[server][http]") {
  Harness h;
  auto r = get(h.port, "/v1/models");
  REQUIRE(r.status == 200);
  CHECK(r.json().at("object") == "list");
  CHECK(r.json().at("data").as_array().at(0).at("id") == "toy");
  r = get(h.port, "/v1/models/toy");
  CHECK(r.status == 200);
  CHECK(r.json().at("object") == "model");
  r = get(h.port, "/v1/models/nope");
  CHECK(r.status == 404);
  CHECK(error_of(r).at("code") == "model_not_found");
  r = get(h.port, "/v1/nothing");
  CHECK(r.status == 404);
  error_of(r);
  r = http_request(h.port, bhttp::verb::delete_, "/v1/models");
  CHECK(r.status == 405);
  CHECK(r.header("Allow") == "GET, HEAD");
  error_of(r);
  r = post(h.port, "/health", "{}");
  CHECK(r.status == 405);
  CHECK(get(h.port, "/health").status == 200);
  CHECK(get(h.port, "/livez").status == 200);
  CHECK(get(h.port, "/readyz").status == 200);
}

TEST_CASE("http: X-Request-Id is echoed or generated", "[server][http]") {
  Harness h;
  auto r = get(h.port, "/v1/models", {{"X-Request-Id", "my-id-7"}});
  CHECK(r.header("X-Request-Id") == "my-id-7");
  r = get(h.port, "/v1/models");
  CHECK(r.header("X-Request-Id").size() == 32);
  r = get(h.port, "/v1/nothing", {{"X-Request-Id", "err-id"}});
  CHECK(r.header("X-Request-Id") == "err-id");
}

TEST_CASE("http: API keys guard /v1, health stays open", "[server][http]") {
  ServerConfig config = test_config();
  config.api_keys = {"sk-test-1"};
  Harness h(config);
  auto r = get(h.port, "/v1/models");
  CHECK(r.status == 401);
  CHECK(error_of(r).at("type") == "authentication_error");
  CHECK(r.header("WWW-Authenticate") == "Bearer");
  CHECK(get(h.port, "/v1/models", {{"Authorization", "Bearer sk-test-2"}}).status == 401);
  CHECK(get(h.port, "/v1/models", {{"Authorization", "sk-test-1"}}).status == 401);
  CHECK(get(h.port, "/v1/models", {{"Authorization", "Bearer sk-test-1"}}).status == 200);
  CHECK(post(h.port, "/v1/chat/completions", chat_body(false, 2)).status == 401);
  // Admin routes: closed without an admin key, whatever inference key is sent.
  r = get(h.port, "/v1/admin/models", {{"Authorization", "Bearer sk-test-1"}});
  CHECK(r.status == 403);
  CHECK(std::string(error_of(r).at("message").as_string()).find("--admin-api-key") != std::string::npos);
  CHECK(get(h.port, "/health").status == 200);
  CHECK(get(h.port, "/livez").status == 200);
  CHECK(get(h.port, "/metrics").status == 200);
}

TEST_CASE("http: malformed bodies and requests answer 400 in OpenAI's envelope", "[server][http]") {
  Harness h;
  for (const std::string body : {"{\"model\": ", "not json", "", "[1]", "null"}) {
    const auto r = post(h.port, "/v1/chat/completions", body);
    INFO(body);
    CHECK(r.status == 400);
    CHECK(error_of(r).at("type") == "invalid_request_error");
  }
  auto r = post(h.port, "/v1/chat/completions", R"({"model": "toy", "messages": "hi"})");
  CHECK(r.status == 400);
  CHECK(error_of(r).at("param") == "messages");
  r = post(h.port, "/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}]})");
  CHECK(r.status == 400);
  CHECK(error_of(r).at("param") == "model");
  r = post(h.port, "/v1/chat/completions", R"({"model": "nope", "messages": [{"role": "user", "content": "x"}]})");
  CHECK(r.status == 404);
  CHECK(error_of(r).at("code") == "model_not_found");
  r = post(h.port, "/v1/completions", R"({"model": "toy", "prompt": [1, 2, 5000]})");
  CHECK(r.status == 400);
  CHECK(error_of(r).at("param") == "prompt");
  // Not HTTP at all: 400, then the connection closes.
  RawSocket s(h.port);
  REQUIRE(s.send("BLAH\r\n\r\n"));
  std::string out;
  CHECK(s.read_until_close(out));
  CHECK(out.rfind("HTTP/1.1 400", 0) == 0);
}

TEST_CASE("http: a prompt beyond the context answers 400 naming the lengths", "[server][http]") {
  FakeEngineOptions options;
  options.max_model_len = 32;
  Harness h(test_config(), options);
  const std::string long_text(100, 'x');
  auto r = post(h.port, "/v1/completions", R"({"model": "toy", "prompt": ")" + long_text + R"(", "max_tokens": 4})");
  CHECK(r.status == 400);
  const auto e = error_of(r);
  CHECK(std::string(e.at("message").as_string()).find("32") != std::string::npos);
  CHECK(std::string(e.at("message").as_string()).find("100") != std::string::npos);
  r = post(h.port, "/v1/completions", R"({"model": "toy", "prompt": "abcd", "max_tokens": 40})");
  CHECK(r.status == 400);
  CHECK(error_of(r).at("param") == "max_tokens");
  CHECK(post(h.port, "/v1/completions", R"({"model": "toy", "prompt": "abcd", "max_tokens": 4})").status == 200);
}

TEST_CASE("http: bodies over the limit answer 413", "[server][http]") {
  ServerConfig config = test_config();
  config.limits.max_body_bytes = 1024;
  Harness h(config);
  {
    // Content-Length over the limit: refused before the body is sent.
    RawSocket s(h.port);
    REQUIRE(s.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"));
    std::string out;
    CHECK(s.read_until_close(out));
    CHECK(out.rfind("HTTP/1.1 413", 0) == 0);
  }
  {
    // Chunked, growing past the limit.
    RawSocket s(h.port);
    std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 4; ++i) req += "200\r\n" + std::string(512, ' ') + "\r\n";
    REQUIRE(s.send(req));
    std::string out;
    s.read_until_close(out);
    CHECK(out.rfind("HTTP/1.1 413", 0) == 0);
  }
  CHECK(post(h.port, "/v1/chat/completions", chat_body(false, 2)).status == 200);
  CHECK(eventually([&] { return h.server.http_metrics().count("unmatched", 413) == 2; }));
}

TEST_CASE("http: keep-alive serves several requests on one connection", "[server][http]") {
  Harness h;
  RawSocket s(h.port);
  const std::string one = "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(s.send(one + one));  // pipelined
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  std::size_t answers = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (s.read_some(out) <= 0) break;
    answers = 0;
    for (std::size_t p = out.find("HTTP/1.1 200"); p != std::string::npos; p = out.find("HTTP/1.1 200", p + 1)) ++answers;
    if (answers == 2 && out.size() > 0 && out.ends_with("}")) break;
  }
  CHECK(answers == 2);
  REQUIRE(s.send(raw_post("/v1/chat/completions", chat_body(false, 2))));
  std::string third;
  while (third.find("chat.completion") == std::string::npos && s.read_some(third) > 0) {
  }
  CHECK(third.rfind("HTTP/1.1 200", 0) == 0);
}

TEST_CASE("http: a client sending half a header is dropped after the header timeout", "[server][http][threads]") {
  Harness h;
  std::vector<std::unique_ptr<RawSocket>> slow;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 8; ++i) {
    slow.push_back(std::make_unique<RawSocket>(h.port, 5s));
    REQUIRE(slow.back()->send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty"));
  }
  // Others are served meanwhile.
  CHECK(get(h.port, "/health").status == 200);
  for (auto& s : slow) {
    std::string out;
    CHECK(s->read_until_close(out));  // closed by the server, not a read timeout
    CHECK(out.rfind("HTTP/1.1 408", 0) == 0);  // and told why first
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed < 3s);  // header timeout 300 ms
  // A body that stops half way is dropped after the body timeout.
  RawSocket half(h.port, 5s);
  REQUIRE(half.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{\"model\""));
  std::string out;
  CHECK(half.read_until_close(out));
  CHECK(out.rfind("HTTP/1.1 408", 0) == 0);
  CHECK(out.find("not received in time") != std::string::npos);
}

TEST_CASE("http: idle keep-alive connections are closed", "[server][http]") {
  ServerConfig config = test_config();
  config.limits.idle_timeout = 200ms;
  Harness h(config);
  RawSocket s(h.port, 5s);
  const auto start = std::chrono::steady_clock::now();
  std::string out;
  CHECK(s.read_until_close(out));
  CHECK(out.empty());
  CHECK(std::chrono::steady_clock::now() - start < 3s);
}

TEST_CASE("http: connections beyond the limit get 503", "[server][http][threads]") {
  ServerConfig config = test_config();
  config.limits.max_connections = 2;
  Harness h(config);
  RawSocket a(h.port), b(h.port);
  // Make sure both are accepted and counted before the third arrives.
  REQUIRE(a.send("GET /livez HTTP/1.1\r\nHost: x\r\n\r\n"));
  REQUIRE(b.send("GET /livez HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string out_a, out_b;
  a.read_some(out_a);
  b.read_some(out_b);
  RawSocket c(h.port);
  std::string out;
  c.read_until_close(out);
  CHECK(out.rfind("HTTP/1.1 503", 0) == 0);
  CHECK(out.find("Retry-After") != std::string::npos);
  a.close();
  b.close();
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  while (h.server.http_metrics().connections_open() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  CHECK(get(h.port, "/livez").status == 200);
}

TEST_CASE("http: a client that disconnects mid-stream frees its KV blocks", "[server][http][threads]") {
  FakeEngineOptions options;
  options.step_delay = 2ms;
  Harness h(test_config(), options);
  for (int round = 0; round < 3; ++round) {
    RawSocket s(h.port);
    REQUIRE(s.send(raw_post("/v1/chat/completions", chat_body(true, 5000))));
    std::string out;
    std::size_t events = 0;
    while (events < 4 && s.read_some(out) > 0) {
      events = 0;
      for (std::size_t p = out.find("\n\n"); p != std::string::npos; p = out.find("\n\n", p + 2)) ++events;
    }
    CHECK(events >= 4);
    CHECK(h.engine_status().num_running == 1);
    s.close();
    CHECK(h.wait_idle());
  }
  // Gone before the first token (the request may still be queued).
  {
    RawSocket s(h.port);
    REQUIRE(s.send(raw_post("/v1/chat/completions", chat_body(false, 5000))));
    std::this_thread::sleep_for(20ms);
  }
  CHECK(h.wait_idle());
  CHECK(eventually([&] { return h.server.http_metrics().count("/v1/chat/completions", 499) >= 1; }));
  CHECK(post(h.port, "/v1/chat/completions", chat_body(false, 2)).status == 200);
}

TEST_CASE("http: a full queue answers 429 with Retry-After", "[server][http][threads]") {
  FakeEngineOptions options;
  options.step_delay = 5ms;
  options.max_waiting_requests = 1;
  options.max_num_seqs = 1;
  Harness h(test_config(), options);
  std::vector<std::future<HttpResult>> results;
  for (int i = 0; i < 6; ++i)
    results.push_back(std::async(std::launch::async, [&] { return post(h.port, "/v1/chat/completions", chat_body(false, 30)); }));
  int ok = 0, limited = 0;
  for (auto& f : results) {
    const HttpResult r = f.get();
    if (r.status == 200) ++ok;
    if (r.status == 429) {
      ++limited;
      CHECK(r.header("Retry-After") == "1");
      CHECK(error_of(r).at("type") == "rate_limit_error");
    }
  }
  CHECK(ok >= 1);
  CHECK(limited >= 1);
  CHECK(ok + limited == 6);
}

TEST_CASE("http: graceful shutdown finishes accepted requests, then refuses", "[server][http][threads]") {
  FakeEngineOptions options;
  options.step_delay = 5ms;
  Harness h(test_config(), options);
  // Two accepted requests of ~40 steps each (~200 ms), one streamed.
  auto plain = std::async(std::launch::async, [&] { return post(h.port, "/v1/chat/completions", chat_body(false, 40)); });
  auto streamed = std::async(std::launch::async, [&] { return post(h.port, "/v1/chat/completions", chat_body(true, 40)); });
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  while (h.engine_status().num_running < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  REQUIRE(h.engine_status().num_running == 2);
  h.server.stop();
  const HttpResult a = plain.get();
  CHECK(a.status == 200);
  CHECK(a.json().at("choices").at(0).at("finish_reason") == "length");
  CHECK(a.json().at("usage").at("completion_tokens") == 40);
  const HttpResult b = streamed.get();
  CHECK(b.status == 200);
  CHECK(sse_events(b.body).back() == "[DONE]");
  h.server.wait();
  // Nothing listens any more.
  RawSocket late(h.port, 1s);
  CHECK_FALSE(late.connected());
}

TEST_CASE("http: at the shutdown deadline, running streams are aborted and end well formed", "[server][http][threads]") {
  ServerConfig config = test_config();
  config.shutdown_grace = 200ms;
  FakeEngineOptions options;
  options.step_delay = 2ms;
  Harness h(config, options);
  RawSocket s(h.port, 10s);
  REQUIRE(s.send(raw_post("/v1/chat/completions", chat_body(true, 100000))));
  std::string out;
  REQUIRE(s.read_some(out) > 0);
  const auto start = std::chrono::steady_clock::now();
  h.server.stop();
  CHECK(s.read_until_close(out));
  h.server.wait();
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  const std::size_t body_start = out.find("\r\n\r\n");
  REQUIRE(body_start != std::string::npos);
  const auto events = sse_events(dechunk(std::string_view(out).substr(body_start + 4)));
  REQUIRE(events.size() >= 2);
  CHECK(events.back() == "[DONE]");
  CHECK(json::parse(events[events.size() - 2]).at("choices").at(0).at("finish_reason") == "abort");
}

TEST_CASE("http: /health answers 503 while a model loads", "[server][http][threads]") {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  ModelRegistry registry([released](const std::string& id, const std::filesystem::path&) {
    released.wait();
    FakeEngineOptions o;
    o.id = id;
    return make_fake_engine(o);
  });
  Server server(test_config(), registry);
  const unsigned short port = server.start();
  registry.load_path("slow", std::string("slow"));
  auto r = get(port, "/health");
  CHECK(r.status == 503);
  error_of(r);
  CHECK(get(port, "/readyz").status == 503);
  CHECK(get(port, "/livez").status == 200);
  release.set_value();
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!registry.ready() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  CHECK(get(port, "/health").status == 200);
  server.stop();
  server.wait();
}

TEST_CASE("http: /metrics has the engine's and the HTTP layer's metrics", "[server][http]") {
  Harness h;
  CHECK(post(h.port, "/v1/chat/completions", chat_body(false, 3)).status == 200);
  get(h.port, "/v1/nothing");
  REQUIRE(eventually([&] { return h.server.http_metrics().count("unmatched", 404) == 1; }));
  const auto r = get(h.port, "/metrics");
  REQUIRE(r.status == 200);
  CHECK(r.header("Content-Type").rfind("text/plain; version=0.0.4", 0) == 0);
  CHECK(r.body.find("izwi:num_requests_running{model_name=\"toy\"}") != std::string::npos);
  CHECK(r.body.find(R"(izwi_http_requests_total{method="POST",route="/v1/chat/completions",status="200"} 1)") !=
        std::string::npos);
  CHECK(r.body.find(R"(izwi_http_requests_total{method="GET",route="unmatched",status="404"} 1)") != std::string::npos);
  CHECK(r.body.find("izwi_http_request_duration_seconds_bucket") != std::string::npos);
  const auto& kernels = izwi::kernels::cpu::active_kernels();
  CHECK(r.body.find(std::string("izwi:cpu_info{arch=\"") + kernels.name + "\",extensions=\"" + kernels.extensions +
                    "\"} 1\n") != std::string::npos);
}

TEST_CASE("http: admin routes take the admin key only, none configured: 403 naming the flag", "[server][http]") {
  {
    Harness h;  // no keys at all: inference is open, admin is not
    CHECK(get(h.port, "/v1/models").status == 200);
    for (const auto& [method, target] : std::vector<std::pair<bhttp::verb, std::string>>{
             {bhttp::verb::get, "/v1/admin/models"},
             {bhttp::verb::get, "/v1/admin/models/toy"},
             {bhttp::verb::post, "/v1/admin/models/toy/unload"},
             {bhttp::verb::post, "/v1/admin/models/other/load"}}) {
      INFO(target);
      const auto r = http_request(h.port, method, target);
      CHECK(r.status == 403);
      CHECK(std::string(error_of(r).at("message").as_string()).find("--admin-api-key") != std::string::npos);
    }
    CHECK(h.registry.find("toy") != nullptr);  // the unload above did nothing
  }
  ServerConfig config = test_config();
  config.api_keys = {"sk-user"};
  config.admin_api_keys = {"sk-admin"};
  Harness h(config);
  CHECK(get(h.port, "/v1/admin/models", {{"Authorization", "Bearer sk-user"}}).status == 401);
  CHECK(get(h.port, "/v1/admin/models").status == 401);
  CHECK(get(h.port, "/v1/admin/models", {{"Authorization", "Bearer sk-admin"}}).status == 200);
  CHECK(get(h.port, "/v1/models", {{"Authorization", "Bearer sk-user"}}).status == 200);
}

TEST_CASE("http: admin views, unload, and loads outside a models directory", "[server][http]") {
  ServerConfig config = test_config();
  config.admin_api_keys = {"sk-admin"};
  Harness h(config);
  const std::vector<std::pair<std::string, std::string>> admin{{"Authorization", "Bearer sk-admin"}};
  auto get = [&](unsigned short port, std::string target) { return ::get(port, std::move(target), admin); };
  auto post = [&](unsigned short port, std::string target, std::string body) {
    return ::post(port, std::move(target), std::move(body), admin);
  };
  auto r = get(h.port, "/v1/admin/models");
  REQUIRE(r.status == 200);
  const json::value listing = r.json();
  const auto& entry = listing.at("data").at(0);
  CHECK(entry.at("id") == "toy");
  CHECK(entry.at("state") == "loaded");
  CHECK(entry.at("status").at("num_kv_blocks_used") == 0);
  CHECK(get(h.port, "/v1/admin/models/toy").status == 200);
  CHECK(get(h.port, "/v1/admin/models/none").status == 404);
  r = post(h.port, "/v1/admin/models/other/load", "");
  CHECK(r.status == 404);  // no --models-dir
  error_of(r);
  r = post(h.port, "/v1/admin/models/toy/unload", "");
  CHECK(r.status == 200);
  CHECK(get(h.port, "/v1/models").json().at("data").as_array().empty());
  r = post(h.port, "/v1/chat/completions", chat_body(false, 2));
  CHECK(r.status == 404);
  CHECK(error_of(r).at("code") == "model_not_found");
}
