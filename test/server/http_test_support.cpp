// The compiled half of http_test_support.hpp: the toy engine, the Harness's
// start-up and the Beast client, compiled once for every HTTP test file.

#include "server/http_test_support.hpp"

namespace izwi::testing::http_test {

std::unique_ptr<izwi::server::AnyEngine> make_fake_engine(FakeEngineOptions options) {
  return std::make_unique<FakeEngine>(std::move(options));
}

Harness::Harness(ServerConfig config, FakeEngineOptions options, const std::function<void(Server&)>& add_routes)
    : registry([options](const std::string& id, const std::filesystem::path&) {
        FakeEngineOptions o = options;
        o.id = id;
        return make_fake_engine(o);
      }),
      server(std::move(config), registry) {
  if (add_routes) add_routes(server);
  registry.load_path("toy", std::string("toy"));
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!registry.ready() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  port = server.start();
}

HttpResult http_request(unsigned short port, bhttp::verb method, std::string target, std::string body,
                        std::vector<std::pair<std::string, std::string>> headers) {
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

}  // namespace izwi::testing::http_test
