#pragma once
// What the HTTP tests (http_*_test.cpp) share: a Server on an ephemeral port
// over the toy engine (http_fake_engine.hpp), a Beast client, raw sockets for
// what a well-behaved client would never send, and checks of OpenAI's
// envelopes. The Server's bodies come compiled from izwi::server_http_compiled
// and the toy engine from http_test_support.cpp, so a test file compiles only
// its own cases: the files build in parallel.

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

#include "izwi/audio/decode.hpp"
#include "izwi/server/server.hpp"
#include "server/http_fake_engine.hpp"

namespace izwi::testing::http_test {

using namespace std::chrono_literals;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace json = boost::json;
using izwi::server::ModelRegistry;
using izwi::server::Server;
using izwi::server::ServerConfig;
using izwi::testing::FakeEngine;
using izwi::testing::FakeEngineOptions;

/// The toy engine behind AnyEngine (its engine instantiated once, in http_test_support.cpp).
std::unique_ptr<izwi::server::AnyEngine> make_fake_engine(FakeEngineOptions options);


inline ServerConfig test_config() {
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
                   const std::function<void(Server&)>& add_routes = {});
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
                        std::vector<std::pair<std::string, std::string>> headers = {});

inline HttpResult get(unsigned short port, std::string target, std::vector<std::pair<std::string, std::string>> headers = {}) {
  return http_request(port, bhttp::verb::get, std::move(target), {}, std::move(headers));
}
inline HttpResult post(unsigned short port, std::string target, std::string body,
                std::vector<std::pair<std::string, std::string>> headers = {}) {
  return http_request(port, bhttp::verb::post, std::move(target), std::move(body), std::move(headers));
}

/// The error object of an OpenAI error envelope (fails the test if it is not one).
inline json::object error_of(const HttpResult& r) {
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
inline std::vector<std::string> sse_events(const std::string& text) {
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

inline std::string chat_body(bool stream, int max_tokens, std::string extra = {}) {
  return R"({"model": "toy", "messages": [{"role": "user", "content": "hello there"}], "max_tokens": )" +
         std::to_string(max_tokens) + (stream ? R"(, "stream": true)" : "") + extra + "}";
}

inline std::string raw_post(std::string_view target, std::string_view body, std::string_view extra_headers = {}) {
  return "POST " + std::string(target) + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
         std::string(extra_headers) + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
         std::string(body);
}

/// Dechunks a chunked HTTP/1.1 body (the whole response text after the headers).
inline std::string dechunk(std::string_view body) {
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

}  // namespace izwi::testing::http_test

using namespace izwi::testing::http_test;  // NOLINT: the test files read as one suite
