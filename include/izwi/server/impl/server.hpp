#pragma once
// Server bodies. Included by izwi/server/server.hpp.

#include <csignal>
#include <cstdlib>
#include <functional>
#include <cstdio>
#include <exception>
#include <optional>
#include <random>
#include <variant>

#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/json/serialize.hpp>

#include "izwi/core/error.hpp"
#include "izwi/kernels/cpu/dispatch.hpp"
#include "izwi/server/http/access_log.hpp"
#include "izwi/server/openai.hpp"
#include "izwi/server/sse.hpp"

namespace izwi::server {

namespace detail {

namespace bhttp = boost::beast::http;

inline http::Response json_response(unsigned status, const boost::json::value& body, unsigned version = 11) {
  http::Response res{static_cast<bhttp::status>(status), version};
  res.set(bhttp::field::content_type, "application/json");
  res.body() = boost::json::serialize(body);
  return res;
}

inline http::Response text_response(unsigned status, std::string body, std::string_view content_type,
                                    unsigned version = 11) {
  http::Response res{static_cast<bhttp::status>(status), version};
  res.set(bhttp::field::content_type, content_type);
  res.body() = std::move(body);
  return res;
}

inline std::string_view task_words(Task task) noexcept {
  switch (task) {
    case Task::chat: return "chat completions";
    case Task::completion: return "completions";
    case Task::tts: return "speech synthesis (text-to-speech)";
    case Task::asr: return "transcription";
    case Task::translation: return "translation";
  }
  return "this task";
}

inline void log_line(const std::string& text) {
  const std::string line = text + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

/// Refuses, before tokenizing, a prompt text that cannot fit the context
/// whatever its tokens: no token spells more than info.max_token_bytes bytes
/// (a generous 256 when unknown), so a longer text has more tokens than the
/// context holds. Tokenizing it first would cost a BPE pass over megabytes.
inline void check_prompt_bytes(std::size_t prompt_bytes, const ModelInfo& info, const char* param) {
  if (info.max_model_len == 0) return;
  const std::size_t per_token = info.max_token_bytes ? info.max_token_bytes : 256;
  const std::size_t min_tokens = prompt_bytes / per_token + (prompt_bytes % per_token != 0);
  if (min_tokens >= info.max_model_len)
    throw ApiError::bad_request("This model's maximum context length is " + std::to_string(info.max_model_len) +
                                    " tokens. However, your prompt is " + std::to_string(prompt_bytes) +
                                    " bytes, more than that many tokens can spell (at most " +
                                    std::to_string(per_token) +
                                    " bytes per token). Please reduce the length of the input.",
                                std::string(param));
}

/// Encodes a chat with the template's own special tokens parsed and the text
/// of system, user and tool messages as plain text: those messages are
/// rendered with markers in place of their text, the prompt is cut at the
/// markers, and each piece is encoded the way it came. (Assistant messages
/// are rendered as they are: the template rewrites their think blocks.)
/// Pieces meet at the template's newlines and special tokens, where the
/// pre-tokenizer splits anyway; a text that starts with spaces may merge
/// differently than in one pass, and is still a valid encoding of it.
inline std::vector<TokenId> encode_chat_as_text(const AnyEngine& engine,
                                                std::span<const tokenizer::ChatMessage> messages,
                                                const tokenizer::ChatTemplateOptions& options) {
  const std::string nonce = std::to_string(std::random_device{}());
  std::vector<tokenizer::ChatMessage> marked(messages.begin(), messages.end());
  std::vector<std::pair<std::string, const std::string*>> markers;  // marker, the text it stands for
  for (std::size_t i = 0; i < marked.size(); ++i) {
    if (marked[i].role == "assistant") continue;
    markers.emplace_back("\x1E" "izwi:" + nonce + ":" + std::to_string(i) + "\x1F", &messages[i].content);
    marked[i].content = markers.back().first;
  }
  const std::string rendered = engine.render_chat(marked, options);
  std::vector<TokenId> out;
  std::size_t from = 0;
  auto append = [&out](std::vector<TokenId> piece) { out.insert(out.end(), piece.begin(), piece.end()); };
  for (const auto& [marker, text] : markers) {
    const std::size_t at = rendered.find(marker, from);
    if (at == std::string::npos) continue;  // the template left this message out
    append(engine.encode(std::string_view(rendered).substr(from, at - from)));
    append(engine.encode_as_text(*text));
    from = at + marker.size();
  }
  append(engine.encode(std::string_view(rendered).substr(from)));
  return out;
}

/// The 400 that vLLM answers when prompt plus requested output exceed the
/// model's context, naming both lengths.
inline void check_prompt_length(std::size_t prompt_tokens, std::optional<std::uint32_t> max_tokens,
                                std::size_t max_model_len, const char* param) {
  if (prompt_tokens == 0) throw ApiError::bad_request("The prompt is empty.", std::string(param));
  if (max_model_len == 0) return;
  if (prompt_tokens >= max_model_len)
    throw ApiError::bad_request("This model's maximum context length is " + std::to_string(max_model_len) +
                                    " tokens. However, your request has " + std::to_string(prompt_tokens) +
                                    " input tokens. Please reduce the length of the input.",
                                std::string(param));
  if (max_tokens && prompt_tokens + *max_tokens > max_model_len)
    throw ApiError::bad_request(
        "This model's maximum context length is " + std::to_string(max_model_len) +
            " tokens. However, you requested " + std::to_string(prompt_tokens + *max_tokens) + " tokens (" +
            std::to_string(prompt_tokens) + " in the input, " + std::to_string(*max_tokens) +
            " in the completion). Please reduce the length of the input or completion.",
        "max_tokens");
}

/// One generation being answered: the engine's stream on one side, the
/// connection on the other. Owned by the session (as its PendingResponse);
/// the engine's listener holds only a weak_ptr and posts to the strand.
class GenerationJob final : public http::PendingResponse, public std::enable_shared_from_this<GenerationJob> {
 public:
  enum class Kind { chat, completion };

  GenerationJob(std::shared_ptr<http::Session> session, std::shared_ptr<AnyEngine> engine, ResponseStream stream,
                Kind kind, bool streaming, bool include_usage, bool want_logprobs, std::size_t prompt_tokens,
                std::string model_name)
      : session_(std::move(session)),
        engine_(std::move(engine)),
        stream_(std::move(stream)),
        kind_(kind),
        streaming_(streaming),
        want_logprobs_(want_logprobs),
        prompt_tokens_(prompt_tokens) {
    meta_.id = openai::make_response_id(kind == Kind::chat ? "chatcmpl-" : "cmpl-");
    meta_.created = openai::unix_time_now();
    meta_.model = std::move(model_name);
    meta_.include_usage = include_usage && streaming;
  }

  /// On the strand: attaches to the session, starts the stream's head and
  /// listens to the engine.
  void start() {
    session_->attach(shared_from_this());
    if (session_->closed()) return;
    if (streaming_) {
      http::Response head{bhttp::status::ok, 11};
      head.set(bhttp::field::content_type, sse::content_type);
      head.set(bhttp::field::cache_control, "no-cache");
      head.set("X-Accel-Buffering", "no");
      session_->begin_stream(head);
      if (kind_ == Kind::chat) {
        openai::ChatDelta first;
        first.role = true;
        first.content = std::string_view();
        session_->stream_write(sse::data(boost::json::serialize(openai::chat_completion_chunk_json(meta_, first))));
      }
    }
    auto executor = session_->get_executor();
    std::weak_ptr<GenerationJob> weak = weak_from_this();
    stream_.on_ready([weak, executor] {
      // The engine's thread: only wake the strand, once per batch of chunks.
      auto self = weak.lock();
      if (!self || self->wake_posted_.exchange(true, std::memory_order_acq_rel)) return;
      boost::asio::post(executor, [self] { self->session_->run_guarded([&] { self->drain(); }); });
    });
  }

  void cancel() noexcept override {
    cancelled_ = true;
    stream_.close();  // aborts the request; its KV blocks return to the pool
  }

  void resume() override { drain(); }

 private:
  void drain() {
    wake_posted_.store(false, std::memory_order_release);
    if (cancelled_ || finished_ || session_->closed()) return;
    // One write at a time: while one is out, chunks wait in the engine's
    // bounded stream, which pauses this request when it fills.
    if (streaming_ && session_->stream_busy()) return;
    std::string out;
    while (!finished_) {
      std::optional<StreamChunk> chunk = stream_.try_next();
      if (!chunk) break;
      consume(*chunk, out);
    }
    if (streaming_ && !out.empty()) session_->stream_write(out);
    if (finished_) finish();
  }

  std::vector<openai::PositionLogprobs> positions(const StreamChunk& chunk) const {
    std::vector<openai::PositionLogprobs> out;
    if (!want_logprobs_) return out;
    out.reserve(chunk.logprobs.size());
    for (const TokenLogprobs& lp : chunk.logprobs) {
      openai::PositionLogprobs p;
      p.sampled = {engine_->token_bytes(lp.token), lp.logprob};
      for (const auto& alt : lp.top) p.top.push_back({engine_->token_bytes(alt.token), alt.logprob});
      out.push_back(std::move(p));
    }
    return out;
  }

  void consume(StreamChunk& chunk, std::string& out) {
    completion_tokens_ += chunk.token_ids.size();
    if (chunk.finished()) {
      finished_ = true;
      finish_reason_ = *chunk.finish_reason;
      engine_error_ = std::move(chunk.error);
      if (chunk.stats) {
        if (chunk.stats->num_prompt_tokens) prompt_tokens_ = chunk.stats->num_prompt_tokens;
        if (chunk.stats->num_output_tokens) completion_tokens_ = chunk.stats->num_output_tokens;
      }
    }
    std::vector<openai::PositionLogprobs> lps = positions(chunk);
    if (!streaming_) {
      text_ += chunk.text;
      for (auto& p : lps) logprobs_.push_back(std::move(p));
      return;
    }
    if (chunk.text.empty() && lps.empty()) return;
    if (kind_ == Kind::chat) {
      openai::ChatDelta delta;
      delta.content = std::string_view(chunk.text);
      if (!lps.empty()) delta.logprobs = openai::chat_logprobs_json(lps);
      sse::append_data(out, boost::json::serialize(openai::chat_completion_chunk_json(meta_, delta)));
    } else {
      boost::json::value logprobs = nullptr;
      if (!lps.empty()) logprobs = openai::completion_logprobs_json(lps, text_offset_);
      sse::append_data(out, boost::json::serialize(openai::completion_chunk_json(meta_, chunk.text, std::nullopt,
                                                                                 std::move(logprobs))));
    }
    text_offset_ += count_code_points(chunk.text);
  }

  static std::size_t count_code_points(std::string_view s) noexcept {
    std::size_t n = 0;
    for (char c : s)
      if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
    return n;
  }

  void finish() {
    const openai::Usage usage{prompt_tokens_, completion_tokens_};
    if (streaming_) {
      std::string out;
      if (kind_ == Kind::chat) {
        openai::ChatDelta last;
        last.finish_reason = finish_reason_;
        sse::append_data(out, boost::json::serialize(openai::chat_completion_chunk_json(meta_, last)));
        if (meta_.include_usage)
          sse::append_data(out, boost::json::serialize(openai::chat_completion_usage_chunk_json(meta_, usage)));
      } else {
        sse::append_data(out, boost::json::serialize(openai::completion_chunk_json(meta_, "", finish_reason_)));
        if (meta_.include_usage)
          sse::append_data(out, boost::json::serialize(openai::completion_usage_chunk_json(meta_, usage)));
      }
      out += sse::done;
      session_->stream_write(out);
      session_->end_stream();
      return;
    }
    if (finish_reason_ == FinishReason::error) {
      log_line("izwi-server: request " + session_->exchange().request_id + " failed in the engine" +
               (engine_error_.empty() ? std::string() : ": " + engine_error_));
      session_->respond(json_response(500, openai::error_json(ApiError::internal())));
      return;
    }
    if (finish_reason_ == FinishReason::abort) {
      session_->respond(json_response(
          503, openai::error_json(ApiError::unavailable("The request was aborted: the model is shutting down."))));
      return;
    }
    boost::json::object body;
    if (kind_ == Kind::chat) {
      boost::json::value lp = nullptr;
      if (want_logprobs_) lp = openai::chat_logprobs_json(logprobs_);
      body = openai::chat_completion_json(meta_, text_, std::nullopt, finish_reason_, usage, std::move(lp));
    } else {
      boost::json::value lp = nullptr;
      if (want_logprobs_) lp = openai::completion_logprobs_json(logprobs_, 0);
      body = openai::completion_json(meta_, text_, finish_reason_, usage, std::move(lp));
    }
    session_->respond(json_response(200, body));
  }

  std::shared_ptr<http::Session> session_;
  std::shared_ptr<AnyEngine> engine_;  // keeps the model loaded while it answers
  ResponseStream stream_;
  Kind kind_;
  bool streaming_;
  bool want_logprobs_;
  openai::ResponseMeta meta_;
  std::uint64_t prompt_tokens_ = 0;
  std::uint64_t completion_tokens_ = 0;
  std::string text_;
  std::size_t text_offset_ = 0;
  std::vector<openai::PositionLogprobs> logprobs_;
  FinishReason finish_reason_ = FinishReason::stop;
  std::string engine_error_;  // why the engine ended it with "error" (logged, not sent)
  bool finished_ = false;
  bool cancelled_ = false;
  std::atomic<bool> wake_posted_{false};
};

/// A registry operation (admin load/unload) answered when it ends. The
/// registry calls back on its worker thread; the answer is posted to the
/// connection's strand.
inline ModelRegistry::Done answer_on_strand(const std::shared_ptr<http::Session>& session, std::string id,
                                            std::string_view state) {
  auto executor = session->get_executor();
  std::weak_ptr<http::Session> weak = session;
  return [weak, executor, id = std::move(id), state = std::string(state)](std::optional<ApiError> error) {
    boost::asio::post(executor, [weak, id, state, error = std::move(error)] {
      auto session = weak.lock();
      if (!session) return;
      session->run_guarded([&] {
        if (error) {
          session->respond(json_response(error->status, openai::error_json(*error)));
          return;
        }
        boost::json::object body{{"id", id}, {"object", "model"}, {"state", state}};
        session->respond(json_response(200, body));
      });
    });
  };
}

/// A pending admin operation holds nothing to cancel: the load goes on.
struct DetachedOperation final : http::PendingResponse {
  void cancel() noexcept override {}
};

inline boost::json::object entry_json(const ModelEntry& entry) {
  boost::json::object o;
  o["id"] = entry.id;
  o["object"] = "model";
  o["state"] = std::string(to_string(entry.state));
  if (!entry.error.empty()) o["error"] = openai::sanitize_utf8(entry.error);
  if (entry.info) {
    const ModelInfo& info = *entry.info;
    o["path"] = openai::sanitize_utf8(info.path.string());
    o["created"] = info.created;
    o["owned_by"] = info.owned_by;
    boost::json::array tasks;
    for (Task t : info.tasks) tasks.emplace_back(std::string(to_string(t)));
    o["tasks"] = std::move(tasks);
    o["max_model_len"] = info.max_model_len;
    o["untrained"] = info.untrained;
    o["description"] = openai::sanitize_utf8(info.description);
  }
  if (entry.status) {
    const EngineStatus& s = *entry.status;
    o["status"] = boost::json::object{{"num_running", s.num_running},
                                      {"num_pending", s.num_pending},
                                      {"num_kv_blocks", s.num_kv_blocks},
                                      {"num_kv_blocks_used", s.num_kv_blocks_used},
                                      {"draining", s.draining}};
  }
  return o;
}

}  // namespace detail

// --- life cycle -----------------------------------------------------------------

inline Server::Server(ServerConfig config, ModelRegistry& registry)
    : config_(std::move(config)),
      registry_(registry),
      keys_(config_.api_keys),
      admin_keys_(config_.admin_api_keys),
      ioc_(static_cast<int>(config_.io_threads ? config_.io_threads : 1)),
      prep_pool_(config_.prep_threads ? config_.prep_threads : 1) {
  add_default_routes();
}

inline Server::~Server() {
  if (started_.load()) {
    stop();
    wait();
  }
}

inline unsigned short Server::start() {
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
inline void Server::run_io_thread() noexcept {
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

inline void Server::io_exception(std::string_view what) noexcept {
  metrics_.handler_exception();
  try {
    detail::log_line("izwi-server: an I/O thread caught an exception and goes on: " + std::string(what));
  } catch (...) {
  }
}

inline void Server::session_failed(std::string_view request_id, std::string_view what) noexcept {
  metrics_.handler_exception();
  try {
    detail::log_line("izwi-server: request " + std::string(request_id.empty() ? "-" : request_id) +
                     ": exception while answering (" + std::string(what) + "); its connection is closed");
  } catch (...) {
  }
}

inline void Server::run() {
  start();
  if (config_.handle_signals) {
    signals_.emplace(ioc_, SIGINT, SIGTERM);
    signals_->async_wait([this](const boost::system::error_code& ec, int signal) { on_signal(ec, signal); });
  }
  wait();
}

// First signal: graceful stop. A second one while in-flight requests still
// run: the operator insists, exit now (as uvicorn does).
inline void Server::on_signal(const boost::system::error_code& ec, int signal) {
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

inline void Server::stop() {
  std::lock_guard lock(state_mutex_);
  if (!started_.load() || draining_.exchange(true, std::memory_order_acq_rel)) return;
  shutdown_thread_ = std::thread([this] { shutdown_sequence(); });
}

inline void Server::wait() {
  {
    std::unique_lock lock(state_mutex_);
    stopped_cv_.wait(lock, [&] { return stopped_; });
  }
  std::lock_guard lock(state_mutex_);
  if (shutdown_thread_.joinable()) shutdown_thread_.join();
}

inline void Server::shutdown_sequence() {
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

inline void Server::on_accept(boost::asio::ip::tcp::socket&& socket) {
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

inline void Server::session_closed(http::Session* session) noexcept {
  std::lock_guard lock(sessions_mutex_);
  if (sessions_.erase(session)) metrics_.connection_closed();
}

inline void Server::exchange_started() noexcept {
  in_flight_.fetch_add(1, std::memory_order_acq_rel);
  metrics_.request_started();
}

inline void Server::exchange_finished(const http::Exchange& exchange) noexcept {
  try {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - exchange.start).count();
    metrics_.observe(exchange.method, exchange.route, exchange.status, seconds);
    if (config_.access_log) http::write_access_log(exchange);
  } catch (...) {
  }
  metrics_.request_finished();
  in_flight_.fetch_sub(1, std::memory_order_acq_rel);
}

inline http::Response Server::error_response(const ApiError& error, unsigned version) {
  http::Response res = detail::json_response(error.status, openai::error_json(error), version);
  if (error.retry_after_seconds) res.set(boost::beast::http::field::retry_after, std::to_string(*error.retry_after_seconds));
  if (error.status == 401) res.set(boost::beast::http::field::www_authenticate, "Bearer");
  return res;
}

// --- routing --------------------------------------------------------------------

inline void Server::add_route(std::string method, std::string pattern, Handler handler, bool open) {
  add_route(std::move(method), std::move(pattern), std::move(handler), open ? RouteAccess::open : RouteAccess::api_key);
}

inline void Server::add_route(std::string method, std::string pattern, Handler handler, RouteAccess access) {
  route_access_[method + " " + pattern] = access;
  router_.add(std::move(method), std::move(pattern), std::move(handler));
}

// Admin routes load and unload models: they take their own key, never an
// inference key, and are closed when none is configured.
inline void Server::check_admin_key(std::string_view authorization) const {
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

inline void Server::add_default_routes() {
  add_route("POST", "/v1/chat/completions", [this](HandlerContext& c) { generate(c, true); });
  add_route("POST", "/v1/completions", [this](HandlerContext& c) { generate(c, false); });
  add_route("GET", "/v1/models", [this](HandlerContext& c) { list_models(c); });
  add_route("GET", "/v1/models/{id}", [this](HandlerContext& c) { get_model(c); });
  add_route("POST", "/v1/audio/speech", [this](HandlerContext& c) { audio_unavailable(c, Task::tts); });
  add_route("POST", "/v1/audio/transcriptions", [this](HandlerContext& c) { audio_unavailable(c, Task::asr); });
  add_route("POST", "/v1/audio/translations", [this](HandlerContext& c) { audio_unavailable(c, Task::translation); });
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

inline void Server::handle(const std::shared_ptr<http::Session>& session, http::Request&& request) {
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

inline http::Response Server::exception_response(std::exception_ptr failure, const std::string& request_id,
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

inline std::shared_ptr<AnyEngine> Server::resolve_model(const std::string& name, Task task) const {
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

inline std::string Server::loaded_model_names(Task task) const {
  std::string names;
  for (const auto& engine : registry_.loaded())
    if (engine->serves(task)) {
      if (!names.empty()) names += ", ";
      names += engine->info().id;
    }
  return names.empty() ? "none" : names;
}

namespace detail {

/// A request ready to stream: what the preparation thread hands back to the
/// connection's strand.
struct PreparedGeneration {
  std::shared_ptr<AnyEngine> engine;
  ResponseStream stream;
  GenerationJob::Kind kind = GenerationJob::Kind::chat;
  bool streaming = false;
  bool include_usage = false;
  bool logprobs = false;
  std::size_t prompt_tokens = 0;
};

inline ResponseStream submit_or_explain(AnyEngine& engine, Request request, bool server_draining) {
  try {
    return engine.submit(std::move(request));
  } catch (const izwi::unavailable& error) {
    if (server_draining || engine.status().draining)
      throw ApiError::unavailable("The model is shutting down; try again later.");
    throw ApiError::too_many_requests(std::string("Too many requests: ") + error.what(), 1);
  }
}

}  // namespace detail

inline void Server::generate(HandlerContext& ctx, bool chat) {
  // Parsing a large body and tokenizing its prompt take milliseconds to
  // seconds: that runs on the preparation threads, never on an I/O thread.
  // The answer comes back to the connection's strand.
  std::shared_ptr<http::Session> session = ctx.session;
  const unsigned version = ctx.request.version();
  // Requests waiting for a preparation thread count against the queue
  // limit too: without this, a flood of large prompts queues without bound
  // in front of the engines' own max_waiting_requests.
  if (config_.max_queued_preparations != 0 && preparing_.load() >= config_.max_queued_preparations)
    throw ApiError::too_many_requests("Too many requests: " + std::to_string(preparing_.load()) +
                                      " are waiting to be parsed and tokenized (--max-queue " +
                                      std::to_string(config_.max_queued_preparations) + ")");
  ++preparing_;
  boost::asio::post(prep_pool_, [this, session, version, chat, body = std::move(ctx.request.body())]() mutable {
    std::optional<detail::PreparedGeneration> prepared;
    std::exception_ptr failure;
    try {
      prepared = chat ? prepare_chat(body) : prepare_completion(body);
    } catch (...) {
      failure = std::current_exception();
    }
    --preparing_;
    boost::asio::post(session->get_executor(), [this, session, version, failure,
                                                prepared = std::move(prepared)]() mutable {
      session->run_guarded([&] {
        if (failure) {
          session->respond(exception_response(failure, session->exchange().request_id, version));
          return;
        }
        const std::string model = prepared->engine->info().id;
        auto job = std::make_shared<detail::GenerationJob>(
            session, std::move(prepared->engine), std::move(prepared->stream), prepared->kind, prepared->streaming,
            prepared->include_usage, prepared->logprobs, prepared->prompt_tokens, model);
        job->start();  // a client already gone cancels it at once
      });
    });
  });
}

inline detail::PreparedGeneration Server::prepare_chat(const std::string& body) {
  openai::ChatCompletionRequest parsed = openai::parse_chat_completion_request(body);
  std::shared_ptr<AnyEngine> engine = resolve_model(parsed.model, Task::chat);
  const std::string prompt = engine->render_chat(parsed.messages, parsed.template_options());
  detail::check_prompt_bytes(prompt.size(), engine->info(), "messages");
  Request request;
  request.task = Task::chat;
  if (parsed.special_tokens_as_text.value_or(config_.special_tokens_as_text))
    request.prompt_tokens = detail::encode_chat_as_text(*engine, parsed.messages, parsed.template_options());
  else
    request.prompt_tokens = engine->encode(prompt);
  detail::check_prompt_length(request.prompt_tokens.size(), parsed.sampling.max_tokens, engine->info().max_model_len,
                              "messages");
  request.sampling = std::move(parsed.sampling);
  request.priority = parsed.priority;
  request.stream = parsed.stream;
  detail::PreparedGeneration out;
  out.kind = detail::GenerationJob::Kind::chat;
  out.streaming = parsed.stream;
  out.include_usage = parsed.include_usage;
  out.logprobs = parsed.logprobs;
  out.prompt_tokens = request.prompt_tokens.size();
  out.stream = detail::submit_or_explain(*engine, std::move(request), draining());
  out.engine = std::move(engine);
  return out;
}

inline detail::PreparedGeneration Server::prepare_completion(const std::string& body) {
  openai::CompletionRequest parsed = openai::parse_completion_request(body);
  std::shared_ptr<AnyEngine> engine = resolve_model(parsed.model, Task::chat);
  Request request;
  request.task = Task::completion;
  if (const auto* text = std::get_if<std::string>(&parsed.prompt)) {
    detail::check_prompt_bytes(text->size(), engine->info(), "prompt");
    request.prompt_tokens = parsed.special_tokens_as_text.value_or(config_.special_tokens_as_text)
                                ? engine->encode_as_text(*text)
                                : engine->encode(*text);
  } else {
    request.prompt_tokens = std::get<std::vector<TokenId>>(parsed.prompt);
    const std::size_t vocab = engine->vocab_size();
    for (const TokenId t : request.prompt_tokens)
      if (t < 0 || static_cast<std::size_t>(t) >= vocab)
        throw ApiError::bad_request("Token id " + std::to_string(t) + " is out of vocabulary (size " +
                                        std::to_string(vocab) + ").",
                                    "prompt");
  }
  detail::check_prompt_length(request.prompt_tokens.size(), parsed.sampling.max_tokens, engine->info().max_model_len,
                              "prompt");
  detail::PreparedGeneration out;
  out.kind = detail::GenerationJob::Kind::completion;
  out.streaming = parsed.stream;
  out.include_usage = parsed.include_usage;
  out.logprobs = parsed.sampling.logprobs.has_value();
  out.prompt_tokens = request.prompt_tokens.size();
  request.sampling = std::move(parsed.sampling);
  request.priority = parsed.priority;
  request.stream = parsed.stream;
  out.stream = detail::submit_or_explain(*engine, std::move(request), draining());
  out.engine = std::move(engine);
  return out;
}

inline void Server::list_models(HandlerContext& ctx) {
  boost::json::array data;
  for (const auto& engine : registry_.loaded()) {
    const ModelInfo& info = engine->info();
    data.push_back(openai::model_json(info.id, info.created, info.owned_by));
  }
  ctx.session->respond(detail::json_response(200, openai::model_list_json(std::move(data)), ctx.request.version()));
}

inline void Server::get_model(HandlerContext& ctx) {
  const std::string& id = ctx.match.param("id");
  std::shared_ptr<AnyEngine> engine = registry_.find(id);
  if (!engine)
    throw ApiError(404, "invalid_request_error",
                   "The model `" + openai::sanitize_utf8(id.substr(0, 200)) + "` does not exist.", "model",
                   "model_not_found");
  const ModelInfo& info = engine->info();
  ctx.session->respond(
      detail::json_response(200, openai::model_json(info.id, info.created, info.owned_by), ctx.request.version()));
}

inline void Server::health(HandlerContext& ctx) {
  if (draining()) throw ApiError::unavailable("The server is shutting down.");
  if (!registry_.ready()) throw ApiError::unavailable("Models are loading.", 5);
  ctx.session->respond(detail::json_response(200, boost::json::object{{"status", "ok"}}, ctx.request.version()));
}

inline void Server::livez(HandlerContext& ctx) {
  ctx.session->respond(detail::json_response(200, boost::json::object{{"status", "ok"}}, ctx.request.version()));
}

inline void Server::readyz(HandlerContext& ctx) {
  if (draining()) throw ApiError::unavailable("The server is shutting down.");
  if (!registry_.ready()) throw ApiError::unavailable("Models are loading.", 5);
  ctx.session->respond(detail::json_response(200, boost::json::object{{"status", "ready"}}, ctx.request.version()));
}

inline void Server::metrics(HandlerContext& ctx) {
  std::string text = registry_.metrics_text();
  if (!text.empty() && text.back() != '\n') text += '\n';
  text += metrics_.prometheus_text();
  // The CPU kernel variant chosen at start-up (kernels/cpu/dispatch.hpp): a
  // slow server is often one running "sse2" where "avx512" was expected.
  text += "# HELP izwi:cpu_info CPU kernel variant in use (scalar, sse2, avx2, avx512).\n# TYPE izwi:cpu_info gauge\n";
  text += std::string("izwi:cpu_info{arch=\"") + kernels::cpu::active_kernels().name + "\"} 1\n";
  ctx.session->respond(detail::text_response(200, std::move(text), "text/plain; version=0.0.4; charset=utf-8",
                                             ctx.request.version()));
}

inline void Server::admin_list(HandlerContext& ctx) {
  boost::json::array data;
  for (const ModelEntry& entry : registry_.entries()) data.push_back(detail::entry_json(entry));
  ctx.session->respond(detail::json_response(200, boost::json::object{{"object", "list"}, {"data", std::move(data)}},
                                             ctx.request.version()));
}

inline void Server::admin_get(HandlerContext& ctx) {
  const std::string& id = ctx.match.param("id");
  std::optional<ModelEntry> entry = registry_.entry(id);
  if (!entry)
    throw ApiError::not_found("No model `" + openai::sanitize_utf8(id.substr(0, 200)) + "` is known.",
                              "model_not_found");
  ctx.session->respond(detail::json_response(200, detail::entry_json(*entry), ctx.request.version()));
}

inline void Server::admin_load(HandlerContext& ctx) {
  if (draining()) throw ApiError::unavailable("The server is shutting down.");
  const std::string& id = ctx.match.param("id");
  ctx.session->attach(std::make_shared<detail::DetachedOperation>());
  registry_.load(id, detail::answer_on_strand(ctx.session, id, "loaded"));
}

inline void Server::admin_unload(HandlerContext& ctx) {
  const std::string& id = ctx.match.param("id");
  ctx.session->attach(std::make_shared<detail::DetachedOperation>());
  registry_.unload(id, config_.unload_grace, detail::answer_on_strand(ctx.session, id, "unloaded"));
}

inline void Server::audio_unavailable(HandlerContext& ctx, Task task) {
  // The model a JSON body names (speech); multipart bodies are not looked into here.
  std::string name;
  if (task == Task::tts) {
    try {
      const boost::json::object body = openai::parse_json_object(ctx.request.body());
      if (const auto* m = body.if_contains("model"); m && m->is_string()) name = std::string(m->as_string());
    } catch (const ApiError&) {
    }
  }
  if (!name.empty()) {
    std::shared_ptr<AnyEngine> engine = registry_.find(name);
    if (!engine)
      throw ApiError(404, "invalid_request_error",
                     "The model `" + openai::sanitize_utf8(name.substr(0, 200)) + "` does not exist.", "model",
                     "model_not_found");
  }
  throw ApiError::bad_request("No model serving " + std::string(detail::task_words(task)) +
                                  " is loaded; this endpoint answers once one is.",
                              "model", "model_not_found");
}

}  // namespace izwi::server
