// izwi-server's HTTP layer on 127.0.0.1: a Server on an ephemeral port over
// the toy engine (http_fake_engine.hpp), driven by a Beast client and by raw
// sockets for what a well-behaved client would never send.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <cctype>
#include <cmath>
#include <map>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>

#include "izwi/server/server.hpp"
#include "server/http_fake_engine.hpp"

using namespace std::chrono_literals;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace json = boost::json;
using izwi::server::ModelRegistry;
using izwi::server::Server;
using izwi::server::ServerConfig;
using izwi::testing::FakeEngine;
using izwi::testing::FakeEngineOptions;

namespace {

ServerConfig test_config() {
  ServerConfig c;
  c.host = "127.0.0.1";
  c.port = 0;
  c.io_threads = 2;
  c.access_log = false;
  c.limits.header_timeout = 300ms;
  c.limits.body_timeout = 500ms;
  c.limits.idle_timeout = 3s;
  c.limits.write_timeout = 5s;
  c.shutdown_grace = 2s;
  return c;
}

/// A registry serving one FakeEngine as "toy", and a server over it.
struct Harness {
  explicit Harness(ServerConfig config = test_config(), FakeEngineOptions options = {},
                   const std::function<void(Server&)>& add_routes = {})
      : registry([options](const std::string& id, const std::filesystem::path&) {
          FakeEngineOptions o = options;
          o.id = id;
          return std::make_unique<FakeEngine>(o);
        }),
        server(std::move(config), registry) {
    if (add_routes) add_routes(server);
    registry.load_path("toy", std::string("toy"));
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!registry.ready() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
    port = server.start();
  }
  izwi::server::EngineStatus engine_status() { return registry.find("toy")->status(); }
  /// Polls until the engine runs nothing and holds no KV block.
  bool wait_idle(std::chrono::milliseconds timeout = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto s = engine_status();
      if (s.num_running == 0 && s.num_pending == 0 && s.num_kv_blocks_used == 0) return true;
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(5ms);
    }
  }

  ModelRegistry registry;
  Server server;
  unsigned short port = 0;
};

/// A plain blocking socket with a receive timeout, for raw bytes.
class RawSocket {
 public:
  explicit RawSocket(unsigned short port, std::chrono::milliseconds recv_timeout = 5s) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    timeval tv{};
    tv.tv_sec = static_cast<long>(recv_timeout.count() / 1000);
    tv.tv_usec = static_cast<long>((recv_timeout.count() % 1000) * 1000);
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RawSocket() { close(); }
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  bool connected() const { return connected_; }
  bool send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  /// Reads one piece; 0: the peer closed; -1: timeout or error.
  long read_some(std::string& out) {
    char buf[16384];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0) out.append(buf, static_cast<std::size_t>(n));
    return n;
  }
  /// Reads until the server closes the connection (true) or a read times out (false).
  bool read_until_close(std::string& out) {
    for (;;) {
      const long n = read_some(out);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
    }
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  /// Half-close: no more to send, still reading.
  void shutdown_send() { ::shutdown(fd_, SHUT_WR); }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

struct HttpResult {
  unsigned status = 0;
  std::string body;
  bhttp::response<bhttp::string_body> response;
  json::value json() const { return json::parse(body); }
  std::string header(std::string_view name) const { return std::string(response[name]); }
};

/// One request on a fresh connection (Beast client).
HttpResult http_request(unsigned short port, bhttp::verb method, std::string target, std::string body = {},
                        std::vector<std::pair<std::string, std::string>> headers = {}) {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::socket socket(ioc);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  timeval tv{10, 0};
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  bhttp::request<bhttp::string_body> req{method, target, 11};
  req.set(bhttp::field::host, "127.0.0.1");
  if (!body.empty()) req.set(bhttp::field::content_type, "application/json");
  for (auto& [k, v] : headers) req.set(k, v);  // after: a test may send another Content-Type
  req.body() = std::move(body);
  req.prepare_payload();
  bhttp::write(socket, req);
  beast::flat_buffer buffer;
  HttpResult r;
  bhttp::read(socket, buffer, r.response);
  r.status = r.response.result_int();
  r.body = r.response.body();
  beast::error_code ec;
  socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
  return r;
}

HttpResult get(unsigned short port, std::string target, std::vector<std::pair<std::string, std::string>> headers = {}) {
  return http_request(port, bhttp::verb::get, std::move(target), {}, std::move(headers));
}
HttpResult post(unsigned short port, std::string target, std::string body,
                std::vector<std::pair<std::string, std::string>> headers = {}) {
  return http_request(port, bhttp::verb::post, std::move(target), std::move(body), std::move(headers));
}

/// The error object of an OpenAI error envelope (fails the test if it is not one).
json::object error_of(const HttpResult& r) {
  INFO(r.body);
  REQUIRE(r.header("Content-Type") == "application/json");
  const json::value v = json::parse(r.body);
  REQUIRE(v.is_object());
  REQUIRE(v.as_object().contains("error"));
  const json::object e = v.at("error").as_object();
  CHECK(e.at("message").is_string());
  CHECK(!e.at("message").as_string().empty());
  CHECK(e.at("type").is_string());
  CHECK(e.contains("param"));
  CHECK(e.contains("code"));
  return e;
}

/// The data fields of an SSE body; checks the framing.
std::vector<std::string> sse_events(const std::string& text) {
  std::vector<std::string> events;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = text.find("\n\n", pos);
    REQUIRE(end != std::string::npos);
    const std::string block = text.substr(pos, end - pos);
    REQUIRE(block.rfind("data: ", 0) == 0);
    events.push_back(block.substr(6));
    pos = end + 2;
  }
  return events;
}

std::string chat_body(bool stream, int max_tokens, std::string extra = {}) {
  return R"({"model": "toy", "messages": [{"role": "user", "content": "hello there"}], "max_tokens": )" +
         std::to_string(max_tokens) + (stream ? R"(, "stream": true)" : "") + extra + "}";
}

std::string raw_post(std::string_view target, std::string_view body, std::string_view extra_headers = {}) {
  return "POST " + std::string(target) + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
         std::string(extra_headers) + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
         std::string(body);
}

/// Dechunks a chunked HTTP/1.1 body (the whole response text after the headers).
std::string dechunk(std::string_view body) {
  std::string out;
  for (;;) {
    const std::size_t eol = body.find("\r\n");
    if (eol == std::string_view::npos) break;
    const std::size_t size = std::strtoul(std::string(body.substr(0, eol)).c_str(), nullptr, 16);
    if (size == 0) break;
    out.append(body.substr(eol + 2, size));
    body.remove_prefix(eol + 2 + size + 2);
  }
  return out;
}

/// Polls `condition` for up to two seconds: the server counts a request once
/// its response is written, which may be just after the client has read it.
template <class F>
bool eventually(F condition) {
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

}  // namespace

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
    return std::make_unique<FakeEngine>(o);
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

TEST_CASE("http: audio endpoints answer a clear error while no audio model is loaded", "[server][http]") {
  Harness h;
  auto r = post(h.port, "/v1/audio/speech", R"({"model": "toy", "input": "hi", "voice": "x"})");
  CHECK(r.status == 400);
  CHECK(std::string(error_of(r).at("message").as_string()).find("speech") != std::string::npos);
  r = post(h.port, "/v1/audio/speech", R"({"model": "tts-1", "input": "hi", "voice": "x"})");
  CHECK(r.status == 404);
  CHECK(error_of(r).at("code") == "model_not_found");
  r = post(h.port, "/v1/audio/transcriptions", "x");
  CHECK(r.status == 400);
  CHECK(std::string(error_of(r).at("message").as_string()).find("transcription") != std::string::npos);
  r = post(h.port, "/v1/audio/translations", "x");
  CHECK(r.status == 400);
}

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

// --- speech synthesis (issue 13) over the toy engine -------------------------------
//
// The toy model "speaks" one 1920-sample frame at 24 kHz per token, at a
// constant level: what the server does around a speech model (parsing,
// voices, encoding, streaming, speed, hang-ups) without one.

namespace {

FakeEngineOptions speech_options() {
  FakeEngineOptions o;
  o.tasks = {izwi::Task::tts};
  o.speech_frames = 12;
  return o;
}

std::string speech_body(std::string extra = {}) {
  return R"({"model": "toy", "input": "Hello there.", "voice": "vivian", "seed": 7)" + extra + "}";
}

izwi::audio::DecodedAudio decode_speech(const std::string& bytes, izwi::audio::AudioFormat format) {
  if (format == izwi::audio::AudioFormat::pcm) {
    izwi::audio::DecodedAudio out;
    out.audio.sample_rate = 24000;
    for (std::size_t i = 0; i + 1 < bytes.size(); i += 2) {
      const auto v = static_cast<std::int16_t>(static_cast<unsigned char>(bytes[i]) |
                                               (static_cast<unsigned char>(bytes[i + 1]) << 8));
      out.audio.samples.push_back(static_cast<float>(v) / 32768.0f);
    }
    return out;
  }
  return izwi::audio::decode(bytes);
}

}  // namespace

TEST_CASE("http: speech in every response_format, whole, chunked and as SSE, the same bytes", "[server][http][speech]") {
  Harness h(test_config(), speech_options());
  using izwi::audio::AudioFormat;
  for (AudioFormat format :
       {AudioFormat::mp3, AudioFormat::opus, AudioFormat::aac, AudioFormat::flac, AudioFormat::wav, AudioFormat::pcm}) {
    const std::string name(izwi::audio::to_string(format));
    INFO("response_format " << name);
    const std::string extra = R"(, "response_format": ")" + name + "\"";
    const HttpResult whole = post(h.port, "/v1/audio/speech", speech_body(extra));
    REQUIRE(whole.status == 200);
    CHECK(whole.header("Content-Type") == izwi::audio::content_type(format));
    const izwi::audio::DecodedAudio decoded = decode_speech(whole.body, format);
    // 12 frames of 1920 samples: 0.96 s (lossy codecs add their padding).
    CHECK(decoded.audio.duration_seconds() == Approx(0.96).margin(format == AudioFormat::aac ? 0.1 : 0.07));

    const HttpResult chunked = post(h.port, "/v1/audio/speech", speech_body(extra + R"(, "stream_format": "audio")"));
    REQUIRE(chunked.status == 200);
    CHECK(chunked.header("Transfer-Encoding") == "chunked");
    std::string streamed = chunked.body;
    if (format == AudioFormat::wav) {
      // A streamed WAV says "until the end" in both size fields; the whole file has the sizes.
      REQUIRE(streamed.size() == whole.body.size());
      CHECK(streamed.substr(4, 4) == std::string(4, '\xFF'));
      streamed.replace(4, 4, whole.body.substr(4, 4));
      streamed.replace(40, 4, whole.body.substr(40, 4));
    }
    CHECK(streamed == whole.body);

    const HttpResult sse = post(h.port, "/v1/audio/speech", speech_body(extra + R"(, "stream_format": "sse")"));
    REQUIRE(sse.status == 200);
    CHECK(sse.header("Content-Type") == "text/event-stream");
    const std::vector<std::string> events = sse_events(sse.body);
    REQUIRE(events.size() >= 2);
    std::string joined;
    for (std::size_t i = 0; i + 1 < events.size(); ++i) {
      const json::object e = json::parse(events[i]).as_object();
      CHECK(e.size() == 2);
      CHECK(e.at("type") == "speech.audio.delta");
      const auto bytes = izwi::server::openai::base64_decode(std::string(e.at("audio").as_string()));
      REQUIRE(bytes);
      joined += *bytes;
    }
    const json::object done = json::parse(events.back()).as_object();
    CHECK(done.at("type") == "speech.audio.done");
    const json::object usage = done.at("usage").as_object();
    CHECK(usage.at("output_tokens") == 12);
    CHECK(usage.at("input_tokens").as_int64() > 0);
    CHECK(usage.at("total_tokens").as_int64() == usage.at("input_tokens").as_int64() + 12);
    if (format == AudioFormat::wav) joined = joined.substr(44);
    CHECK(joined == (format == AudioFormat::wav ? whole.body.substr(44) : whole.body));
  }
  CHECK(h.wait_idle());
  // Each streamed answer (audio and sse, six formats each) timed its first audio.
  CHECK(h.server.http_metrics().prometheus_text().find("izwi_http_speech_time_to_first_audio_seconds_count 12\n") !=
        std::string::npos);
}

TEST_CASE("http: speech speed time-stretches, voices and OpenAI's names resolve", "[server][http][speech]") {
  Harness h(test_config(), speech_options());
  const auto samples = [&](const std::string& extra) {
    const HttpResult r = post(h.port, "/v1/audio/speech", speech_body(R"(, "response_format": "wav")" + extra));
    REQUIRE(r.status == 200);
    return izwi::audio::decode(r.body).audio.samples.size();
  };
  CHECK(samples("") == 12 * 1920);
  CHECK(samples(R"(, "speed": 2.0)") == 12 * 1920 / 2);
  CHECK(samples(R"(, "speed": 0.5)") == 12 * 1920 * 2);
  CHECK(samples(R"(, "speed": 2.0, "stream_format": "audio")") == 12 * 1920 / 2);
  CHECK(samples(R"(, "max_tokens": 3)") == 3 * 1920);
  for (const char* voice : {"alloy", "ONYX", "Ryan"}) {
    INFO(voice);
    CHECK(post(h.port, "/v1/audio/speech", R"({"model": "toy", "input": "hi", "voice": ")" + std::string(voice) + "\"}")
              .status == 200);
  }
  const HttpResult voices = get(h.port, "/v1/audio/voices");
  REQUIRE(voices.status == 200);
  std::map<std::string, std::string> listed;  // id -> type
  const json::value voices_json = voices.json();
  for (const auto& v : voices_json.at("data").as_array())
    listed[std::string(v.at("id").as_string())] = std::string(v.at("type").as_string());
  CHECK(listed["vivian"] == "speaker");
  CHECK(listed["ryan"] == "speaker");
  CHECK(listed["alloy"] == "alias");
  CHECK(listed["onyx"] == "alias");
  CHECK(listed.size() == 2 + izwi::server::openai::speech_voice_aliases().size());
}

TEST_CASE("http: speech requests a model cannot serve answer 400 naming the field", "[server][http][speech]") {
  Harness h(test_config(), speech_options());
  const auto check = [&](const std::string& body, const std::string& param, const std::string& words = {}) {
    INFO(body);
    const HttpResult r = post(h.port, "/v1/audio/speech", body);
    CHECK(r.status == 400);
    const json::object e = error_of(r);
    CHECK(std::string(e.at("param").as_string()) == param);
    if (!words.empty()) CHECK(std::string(e.at("message").as_string()).find(words) != std::string::npos);
  };
  check(R"({"model": "toy", "input": "", "voice": "vivian"})", "input");
  check(R"({"model": "toy", "voice": "vivian"})", "input");
  check(R"({"model": "toy", "input": ")" + std::string(4097, 'a') + R"(", "voice": "vivian"})", "input", "4097");
  check(R"({"model": "toy", "input": "hi"})", "voice");
  check(R"({"model": "toy", "input": "hi", "voice": "nobody"})", "voice", "vivian, ryan");
  check(R"({"model": "toy", "input": "hi", "voice": {"id": "voice_nope"}})", "voice");
  check(speech_body(R"(, "speed": 4.5)"), "speed");
  check(speech_body(R"(, "speed": 0.2)"), "speed");
  check(speech_body(R"(, "response_format": "ogg")"), "response_format", "mp3, opus, aac, flac, wav, pcm");
  check(speech_body(R"(, "stream_format": "video")"), "stream_format");
  check(speech_body(R"(, "language": "klingon")"), "language");
  check(speech_body(R"(, "reference_audio": "%%%")"), "reference_audio", "base64");
  check(speech_body(R"(, "reference_text": "words")"), "reference_audio");
  check(speech_body(R"(, "max_tokens": 0)"), "max_tokens");
  check(speech_body(R"(, "temperature": -1)"), "temperature");
  // A 4096-character input (multibyte characters count once) is fine.
  std::string long_input;
  for (int i = 0; i < 4096; ++i) long_input += "\xC3\xA9";  // é
  CHECK(post(h.port, "/v1/audio/speech",
             R"({"model": "toy", "voice": "vivian", "max_tokens": 1, "input": ")" + long_input + "\"}")
            .status == 200);
}

TEST_CASE("http: saved voices are stored, listed and deleted, and cloning needs a Base model", "[server][http][speech]") {
  Harness h(test_config(), speech_options());
  std::vector<float> tone(24000);
  for (std::size_t i = 0; i < tone.size(); ++i) tone[i] = 0.3f * std::sin(0.05f * static_cast<float>(i));
  const auto wav = izwi::audio::encode(tone, 24000, 1, izwi::audio::AudioFormat::wav);
  const std::string boundary = "izwiVoiceBoundary";
  std::string form = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nmy voice\r\n--" +
                     boundary + "\r\nContent-Disposition: form-data; name=\"reference_text\"\r\n\r\nHello.\r\n--" +
                     boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"v.wav\"\r\n\r\n" +
                     std::string(reinterpret_cast<const char*>(wav.data()), wav.size()) + "\r\n--" + boundary + "--\r\n";
  const auto multipart = std::vector<std::pair<std::string, std::string>>{
      {"Content-Type", "multipart/form-data; boundary=" + boundary}};
  HttpResult r = http_request(h.port, bhttp::verb::post, "/v1/audio/voices", form, multipart);
  INFO(r.body);
  REQUIRE(r.status == 200);
  const json::object saved = r.json().as_object();
  const std::string id(saved.at("id").as_string());
  CHECK(id.rfind("voice_", 0) == 0);
  CHECK(saved.at("name") == "my voice");
  CHECK(saved.at("reference_text") == "Hello.");
  CHECK(saved.at("duration").as_double() == Approx(1.0).margin(0.01));
  bool listed = false;
  const json::value voices_json = get(h.port, "/v1/audio/voices").json();
  for (const auto& v : voices_json.at("data").as_array()) listed |= std::string(v.at("id").as_string()) == id;
  CHECK(listed);
  // This model cannot clone: 400 naming the voice, and what is missing.
  r = post(h.port, "/v1/audio/speech", R"({"model": "toy", "input": "hi", "voice": {"id": ")" + id + "\"}}");
  CHECK(r.status == 400);
  CHECK(error_of(r).at("param") == "voice");
  CHECK(std::string(error_of(r).at("message").as_string()).find("Base model") != std::string::npos);
  const std::string b64 = izwi::server::openai::base64_encode(wav);
  r = post(h.port, "/v1/audio/speech", speech_body(R"(, "reference_audio": ")" + b64 + "\""));
  CHECK(r.status == 400);
  CHECK(error_of(r).at("param") == "reference_audio");
  // Not audio, no file: 400 naming the field.
  r = http_request(h.port, bhttp::verb::post, "/v1/audio/voices",
                   "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x\"\r\n\r\nnot audio\r\n--" +
                       boundary + "--\r\n",
                   multipart);
  CHECK(r.status == 400);
  CHECK(error_of(r).at("param") == "file");
  CHECK(http_request(h.port, bhttp::verb::delete_, "/v1/audio/voices/" + id).status == 200);
  CHECK(http_request(h.port, bhttp::verb::delete_, "/v1/audio/voices/" + id).status == 404);
}

TEST_CASE("http: a speech client that disconnects mid-stream frees its KV blocks", "[server][http][threads][speech]") {
  FakeEngineOptions options = speech_options();
  options.step_delay = 2ms;
  Harness h(test_config(), options);
  for (const char* stream_format : {"audio", "sse"}) {
    INFO(stream_format);
    RawSocket s(h.port);
    const std::string body = speech_body(std::string(R"(, "max_tokens": 5000, "response_format": "pcm", )") +
                                         R"("stream_format": ")" + stream_format + "\"");
    REQUIRE(s.send(raw_post("/v1/audio/speech", body)));
    std::string out;
    while (out.size() < 64 * 1024 && s.read_some(out) > 0) {
    }
    CHECK(out.size() >= 64 * 1024);
    CHECK(h.engine_status().num_running == 1);
    s.close();
    CHECK(h.wait_idle());
  }
  // The server still speaks.
  CHECK(post(h.port, "/v1/audio/speech", speech_body(R"(, "max_tokens": 2)")).status == 200);
}
