#pragma once
// Server bodies: life cycle, routing, models/health/metrics. The endpoint
// families live beside it (generation_routes, admin_routes, audio_routes,
// web_ui_routes).
// Included by izwi/server/server.hpp (header-only) or compiled once
// (IZWI_SEPARATE_COMPILATION: src/izwi_server_http.cpp, izwi/server/src.hpp).

#include "izwi/server/impl/server_common.hpp"

// The endpoint families, each in its own file. Under IZWI_SEPARATE_COMPILATION
// each is a translation unit of its own instead (cmake/izwiCompiled.cmake).
#if !defined(IZWI_SEPARATE_COMPILATION)
#include "izwi/server/impl/generation_routes.hpp"
#include "izwi/server/impl/admin_routes.hpp"
#include "izwi/server/impl/audio_routes.hpp"
#include "izwi/server/impl/speech_routes.hpp"
#include "izwi/server/impl/web_ui_routes.hpp"
#endif

namespace izwi::server {

// --- life cycle -----------------------------------------------------------------

IZWI_DECL Server::Server(ServerConfig config, ModelRegistry& registry)
    : config_(std::move(config)),
      registry_(registry),
      keys_(config_.api_keys),
      admin_keys_(config_.admin_api_keys),
      ioc_(static_cast<int>(config_.io_threads ? config_.io_threads : 1)),
      prep_pool_(config_.prep_threads ? config_.prep_threads : 1) {
  if (config_.vad_model) {
    try {
      vad_.emplace(models::SileroVad::load(*config_.vad_model));
    } catch (const std::exception& error) {
      throw std::runtime_error("cannot load the VAD model " + config_.vad_model->string() + ": " + error.what());
    }
  }
  load_saved_voices();
  add_default_routes();
}

IZWI_DECL Server::~Server() {
  if (started_.load()) {
    stop();
    wait();
  }
}

IZWI_DECL unsigned short Server::start() {
  std::lock_guard lock(state_mutex_);
  if (started_.load()) return port_;
  namespace net = boost::asio;
  // Throws (address in use, bad address) before anything runs: the server
  // stays unstarted and start() may be called again.
  const net::ip::tcp::endpoint endpoint(net::ip::make_address(config_.host), config_.port);
  // More connections than descriptors would make accept fail (EMFILE) and
  // leave clients unanswered: hold no more than the open-file limit allows,
  // so the ones beyond are refused with 503.
  const std::size_t allowed = http::connection_limit_for(config_.limits.max_connections, http::open_file_limit());
  if (allowed < config_.limits.max_connections) {
    detail::log_line("izwi-server: max connections lowered from " + std::to_string(config_.limits.max_connections) +
                     " to " + std::to_string(allowed) + " by the open-file limit (ulimit -n " +
                     std::to_string(http::open_file_limit()) + ")");
    config_.limits.max_connections = allowed;
  }
  listener_ = std::make_shared<http::Listener>(ioc_, endpoint,
                                               [this](net::ip::tcp::socket&& socket) { on_accept(std::move(socket)); });
  port_ = listener_->port();
  work_.emplace(ioc_.get_executor());
  listener_->run();
  const std::size_t n = config_.io_threads ? config_.io_threads : 1;
  for (std::size_t i = 0; i < n; ++i) io_threads_.emplace_back([this] { run_io_thread(); });
  started_.store(true);
  return port_;
}

// The exception barrier of the I/O threads. Sessions catch what their own
// work throws (closing that connection only); anything else that reaches
// here is logged and counted, and the thread goes back to serving.
IZWI_DECL void Server::run_io_thread() noexcept {
  for (;;) {
    try {
      ioc_.run();
      return;
    } catch (const std::exception& e) {
      io_exception(e.what());
    } catch (...) {
      io_exception("unknown exception");
    }
  }
}

IZWI_DECL void Server::io_exception(std::string_view what) noexcept {
  metrics_.handler_exception();
  try {
    detail::log_line("izwi-server: an I/O thread caught an exception and goes on: " + std::string(what));
  } catch (...) {
  }
}

IZWI_DECL void Server::session_failed(std::string_view request_id, std::string_view what) noexcept {
  metrics_.handler_exception();
  try {
    detail::log_line("izwi-server: request " + std::string(request_id.empty() ? "-" : request_id) +
                     ": exception while answering (" + std::string(what) + "); its connection is closed");
  } catch (...) {
  }
}

IZWI_DECL void Server::run() {
  start();
  if (config_.handle_signals) {
    signals_.emplace(ioc_, SIGINT, SIGTERM);
    signals_->async_wait([this](const boost::system::error_code& ec, int signal) { on_signal(ec, signal); });
  }
  wait();
}

// First signal: graceful stop. A second one while in-flight requests still
// run: the operator insists, exit now (as uvicorn does).
IZWI_DECL void Server::on_signal(const boost::system::error_code& ec, int signal) {
  if (ec) return;
  const char* name = signal == SIGINT ? "SIGINT" : "SIGTERM";
  if (stopping()) {
    detail::log_line(std::string("izwi-server: second ") + name + ", exiting without waiting");
    std::_Exit(1);
  }
  detail::log_line(std::string("izwi-server: ") + name + ", shutting down (in-flight requests get " +
                   std::to_string(config_.shutdown_grace.count()) + " ms; again to exit at once)");
  stop();
  signals_->async_wait([this](const boost::system::error_code& e, int s) { on_signal(e, s); });
}

IZWI_DECL void Server::stop() {
  std::lock_guard lock(state_mutex_);
  if (!started_.load() || draining_.exchange(true, std::memory_order_acq_rel)) return;
  shutdown_thread_ = std::thread([this] { shutdown_sequence(); });
}

IZWI_DECL void Server::wait() {
  {
    std::unique_lock lock(state_mutex_);
    stopped_cv_.wait(lock, [&] { return stopped_; });
  }
  std::lock_guard lock(state_mutex_);
  if (shutdown_thread_.joinable()) shutdown_thread_.join();
}

IZWI_DECL void Server::shutdown_sequence() {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + config_.shutdown_grace;
  if (listener_) listener_->stop();
  std::vector<std::shared_ptr<http::Session>> sessions;
  {
    std::lock_guard lock(sessions_mutex_);
    for (auto& [ptr, weak] : sessions_)
      if (auto s = weak.lock()) sessions.push_back(std::move(s));
  }
  for (auto& s : sessions) s->shutdown_soft();
  sessions.clear();
  // The models finish what they run until the deadline, then abort the rest;
  // every stream then ends and its response completes.
  registry_.shutdown(deadline);
  // Let the last bytes go out (an aborted stream's final chunk).
  const auto flush_deadline = std::max(deadline, clock::now()) + std::chrono::seconds(2);
  while (in_flight_.load(std::memory_order_acquire) > 0 && clock::now() < flush_deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  {
    std::lock_guard lock(sessions_mutex_);
    for (auto& [ptr, weak] : sessions_)
      if (auto s = weak.lock()) sessions.push_back(std::move(s));
  }
  for (auto& s : sessions) s->abort();
  sessions.clear();
  work_.reset();
  // Sessions close on their strands; give them a moment, then stop the loop.
  const auto close_deadline = clock::now() + std::chrono::milliseconds(500);
  while (clock::now() < close_deadline) {
    {
      std::lock_guard lock(sessions_mutex_);
      if (sessions_.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  prep_pool_.join();  // requests being prepared finish (their answers go nowhere now)
  ioc_.stop();
  for (auto& t : io_threads_)
    if (t.joinable()) t.join();
  {
    std::lock_guard lock(state_mutex_);
    stopped_ = true;
  }
  stopped_cv_.notify_all();
}

IZWI_DECL void Server::on_accept(boost::asio::ip::tcp::socket&& socket) {
  // SSE chunks are small writes: without TCP_NODELAY, Nagle holds one back
  // until the previous is acknowledged (up to a delayed ACK, ~40 ms).
  boost::system::error_code ec;
  socket.set_option(boost::asio::ip::tcp::no_delay(true), ec);
  http::SessionHost& host = *this;
  auto session = std::make_shared<http::Session>(std::move(socket), host);
  bool reject = false;
  {
    std::lock_guard lock(sessions_mutex_);
    if (sessions_.size() >= config_.limits.max_connections) {
      reject = true;
    } else {
      sessions_.emplace(session.get(), session);
      metrics_.connection_opened();
    }
  }
  if (reject) {
    metrics_.connection_rejected();
    ApiError error = ApiError::unavailable("Too many connections; try again later.");
    session->start_rejected(error_response(error, 11));
    return;
  }
  session->start();
}

IZWI_DECL void Server::session_closed(http::Session* session) noexcept {
  std::lock_guard lock(sessions_mutex_);
  if (sessions_.erase(session)) metrics_.connection_closed();
}

IZWI_DECL void Server::exchange_started() noexcept {
  in_flight_.fetch_add(1, std::memory_order_acq_rel);
  metrics_.request_started();
}

IZWI_DECL void Server::exchange_finished(const http::Exchange& exchange) noexcept {
  try {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - exchange.start).count();
    metrics_.observe(exchange.method, exchange.route, exchange.status, seconds);
    if (config_.access_log) http::write_access_log(exchange);
  } catch (...) {
  }
  metrics_.request_finished();
  in_flight_.fetch_sub(1, std::memory_order_acq_rel);
}

IZWI_DECL http::Response Server::error_response(const ApiError& error, unsigned version) {
  http::Response res = detail::json_response(error.status, openai::error_json(error), version);
  if (error.retry_after_seconds) res.set(boost::beast::http::field::retry_after, std::to_string(*error.retry_after_seconds));
  if (error.status == 401) res.set(boost::beast::http::field::www_authenticate, "Bearer");
  return res;
}

// --- routing --------------------------------------------------------------------

IZWI_DECL void Server::add_route(std::string method, std::string pattern, Handler handler, bool open) {
  add_route(std::move(method), std::move(pattern), std::move(handler), open ? RouteAccess::open : RouteAccess::api_key);
}

IZWI_DECL void Server::add_route(std::string method, std::string pattern, Handler handler, RouteAccess access) {
  route_access_[method + " " + pattern] = access;
  router_.add(std::move(method), std::move(pattern), std::move(handler));
}

// Admin routes load and unload models: they take their own key, never an
// inference key, and are closed when none is configured.
IZWI_DECL void Server::check_admin_key(std::string_view authorization) const {
  if (!admin_keys_.enabled())
    throw ApiError(403, "permission_error",
                   "Admin endpoints are disabled: start the server with --admin-api-key KEY "
                   "(ServerConfig::admin_api_keys) to use them.",
                   std::nullopt, "admin_disabled");
  if (!admin_keys_.allows(authorization)) {
    const bool sent = !authorization.empty();
    throw ApiError(401, "authentication_error",
                   sent ? "Incorrect admin API key provided."
                        : "Missing admin API key: send it as 'Authorization: Bearer KEY'.",
                   std::nullopt, "invalid_api_key");
  }
}

IZWI_DECL void Server::add_default_routes() {
  add_route("POST", "/v1/chat/completions", [this](HandlerContext& c) { generate(c, true); });
  add_route("POST", "/v1/completions", [this](HandlerContext& c) { generate(c, false); });
  add_route("GET", "/v1/models", [this](HandlerContext& c) { list_models(c); });
  add_route("GET", "/v1/models/{id}", [this](HandlerContext& c) { get_model(c); });
  add_route("POST", "/v1/audio/speech", [this](HandlerContext& c) { speech(c); });
  add_route("GET", "/v1/audio/voices", [this](HandlerContext& c) { list_voices(c); });
  add_route("POST", "/v1/audio/voices", [this](HandlerContext& c) { create_voice(c); });
  add_route("DELETE", "/v1/audio/voices/{id}", [this](HandlerContext& c) { delete_voice(c); });
  add_route("POST", "/v1/audio/transcriptions", [this](HandlerContext& c) { transcribe(c, Task::asr); });
  add_route("POST", "/v1/audio/translations", [this](HandlerContext& c) { transcribe(c, Task::translation); });
  add_route("GET", "/health", [this](HandlerContext& c) { health(c); }, RouteAccess::open);
  add_route("GET", "/livez", [this](HandlerContext& c) { livez(c); }, RouteAccess::open);
  add_route("GET", "/readyz", [this](HandlerContext& c) { readyz(c); }, RouteAccess::open);
  add_route("GET", "/metrics", [this](HandlerContext& c) { metrics(c); }, RouteAccess::open);
  add_route("GET", "/v1/admin/models", [this](HandlerContext& c) { admin_list(c); }, RouteAccess::admin);
  add_route("GET", "/v1/admin/models/{id}", [this](HandlerContext& c) { admin_get(c); }, RouteAccess::admin);
  add_route("POST", "/v1/admin/models/{id}/load", [this](HandlerContext& c) { admin_load(c); }, RouteAccess::admin);
  add_route("POST", "/v1/admin/models/{id}/unload", [this](HandlerContext& c) { admin_unload(c); },
            RouteAccess::admin);
}

IZWI_DECL void Server::handle(const std::shared_ptr<http::Session>& session, http::Request&& request) {
  http::Request req = std::move(request);
  const unsigned version = req.version();
  using Routed = http::Router<Handler>::Result;
  // HEAD is GET without the body (the session leaves the body out).
  const std::string_view method = req.method() == boost::beast::http::verb::head ? "GET" : req.method_string();
  const Routed routed = router_.route(method, req.target());
  try {
    RouteAccess access = RouteAccess::api_key;
    if (routed.kind == Routed::Kind::found) {
      session->exchange().route = std::string(routed.match.pattern);
      auto it = route_access_.find(std::string(method) + " " + std::string(routed.match.pattern));
      if (it != route_access_.end()) access = it->second;
    }
    if (access == RouteAccess::admin) {
      check_admin_key(req[boost::beast::http::field::authorization]);
    } else if (access == RouteAccess::api_key && keys_.enabled() &&
               !keys_.allows(req[boost::beast::http::field::authorization])) {
      const bool sent = !req[boost::beast::http::field::authorization].empty();
      throw ApiError(401, "authentication_error",
                     sent ? "Incorrect API key provided." : "Missing API key: send it as 'Authorization: Bearer KEY'.",
                     std::nullopt, "invalid_api_key");
    }
    if (routed.kind == Routed::Kind::not_found) {
      std::string path(http::target_path(req.target()).substr(0, 200));
      throw ApiError::not_found("Unknown endpoint: " + std::string(req.method_string()) + " " +
                                openai::sanitize_utf8(path) + ".");
    }
    if (routed.kind == Routed::Kind::method_not_allowed) {
      std::string allow = routed.allow;
      if (allow.find("GET") != std::string::npos) allow += ", HEAD";
      ApiError error(405, "invalid_request_error",
                     "Method " + std::string(req.method_string().substr(0, 16)) + " is not allowed here; use " +
                         allow + ".");
      http::Response res = error_response(error, version);
      res.set(boost::beast::http::field::allow, allow);
      session->respond(std::move(res));
      return;
    }
    HandlerContext ctx{session, req, routed.match};
    (*routed.match.handler)(ctx);
  } catch (...) {
    session->respond(exception_response(std::current_exception(), session->exchange().request_id, version));
  }
}

IZWI_DECL http::Response Server::exception_response(std::exception_ptr failure, const std::string& request_id,
                                                 unsigned version) {
  try {
    std::rethrow_exception(failure);
  } catch (const ApiError& error) {
    return error_response(error, version);
  } catch (const izwi::invalid_argument& error) {
    return error_response(openai::bad_request_from(error), version);
  } catch (const izwi::unavailable& error) {
    return error_response(draining() ? ApiError::unavailable("The server is shutting down.")
                                     : ApiError::too_many_requests(error.what()),
                          version);
  } catch (const std::exception& error) {
    detail::log_line("izwi-server: request " + request_id + " failed: " + error.what());
  } catch (...) {
    detail::log_line("izwi-server: request " + request_id + " failed");
  }
  return error_response(ApiError::internal(), version);
}

// --- handlers -------------------------------------------------------------------

IZWI_DECL std::shared_ptr<AnyEngine> Server::resolve_model(const std::string& name, Task task) const {
  if (name.empty())
    // OpenAI requires "model"; naming the loaded ones helps the client fix it.
    throw ApiError::bad_request("You must provide a model parameter (loaded: " + loaded_model_names(task) + ").",
                                "model");
  std::shared_ptr<AnyEngine> engine = registry_.find(name);
  if (!engine) {
    // A model on its way in is a retryable 503, not a permanent 404.
    if (registry_.state(name) == ModelState::loading)
      throw ApiError::unavailable("The model `" + openai::sanitize_utf8(name.substr(0, 200)) + "` is loading.", 5);
    throw ApiError(404, "invalid_request_error",
                   "The model `" + openai::sanitize_utf8(name.substr(0, 200)) + "` does not exist.", "model",
                   "model_not_found");
  }
  if (!engine->serves(task))
    throw ApiError::bad_request("The model `" + name + "` does not serve " + std::string(detail::task_words(task)) +
                                    ".",
                                "model");
  return engine;
}

IZWI_DECL std::string Server::loaded_model_names(Task task) const {
  std::string names;
  for (const auto& engine : registry_.loaded())
    if (engine->serves(task)) {
      if (!names.empty()) names += ", ";
      names += engine->info().id;
    }
  return names.empty() ? "none" : names;
}

// --- models, health, metrics ----------------------------------------------------

IZWI_DECL void Server::list_models(HandlerContext& ctx) {
  boost::json::array data;
  for (const auto& engine : registry_.loaded()) {
    const ModelInfo& info = engine->info();
    data.push_back(openai::model_json(info.id, info.created, info.owned_by, info.tasks, info.device));
  }
  ctx.session->respond(detail::json_response(200, openai::model_list_json(std::move(data)), ctx.request.version()));
}

IZWI_DECL void Server::get_model(HandlerContext& ctx) {
  const std::string& id = ctx.match.param("id");
  std::shared_ptr<AnyEngine> engine = registry_.find(id);
  if (!engine)
    throw ApiError(404, "invalid_request_error",
                   "The model `" + openai::sanitize_utf8(id.substr(0, 200)) + "` does not exist.", "model",
                   "model_not_found");
  const ModelInfo& info = engine->info();
  ctx.session->respond(
      detail::json_response(200, openai::model_json(info.id, info.created, info.owned_by, info.tasks, info.device),
                            ctx.request.version()));
}

IZWI_DECL void Server::health(HandlerContext& ctx) {
  if (draining()) throw ApiError::unavailable("The server is shutting down.");
  if (!registry_.ready()) throw ApiError::unavailable("Models are loading.", 5);
  ctx.session->respond(detail::json_response(200, boost::json::object{{"status", "ok"}}, ctx.request.version()));
}

IZWI_DECL void Server::livez(HandlerContext& ctx) {
  ctx.session->respond(detail::json_response(200, boost::json::object{{"status", "ok"}}, ctx.request.version()));
}

IZWI_DECL void Server::readyz(HandlerContext& ctx) {
  if (draining()) throw ApiError::unavailable("The server is shutting down.");
  if (!registry_.ready()) throw ApiError::unavailable("Models are loading.", 5);
  ctx.session->respond(detail::json_response(200, boost::json::object{{"status", "ready"}}, ctx.request.version()));
}

IZWI_DECL void Server::metrics(HandlerContext& ctx) {
  std::string text = registry_.metrics_text();
  if (!text.empty() && text.back() != '\n') text += '\n';
  text += metrics_.prometheus_text();
  // The CPU kernel variant chosen at start-up (kernels/cpu/dispatch.hpp): a
  // slow server is often one running "sse2" where "avx512" was expected.
  text += "# HELP izwi:cpu_info CPU kernel variant in use (scalar, sse2, avx2, avx512) and the optional instruction "
          "sets it uses (vnni, amx-bf16).\n# TYPE izwi:cpu_info gauge\n";
  const kernels::cpu::KernelTable& active = kernels::cpu::active_kernels();
  text += std::string("izwi:cpu_info{arch=\"") + active.name + "\",extensions=\"" + active.extensions + "\"} 1\n";
  ctx.session->respond(detail::text_response(200, std::move(text), "text/plain; version=0.0.4; charset=utf-8",
                                             ctx.request.version()));
}

}  // namespace izwi::server
