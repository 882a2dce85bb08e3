#pragma once
// izwi::server::Server: the OpenAI-compatible HTTP server of izwi-server.
//
//   ModelRegistry registry(cpu_model_loader(settings), models_dir);
//   registry.load_path("Qwen3-0.6B");
//   Server server({.host = "127.0.0.1", .port = 8000}, registry);
//   server.run();   // until SIGINT/SIGTERM (handle_signals) or stop()
//
// HTTP runs on Asio threads of its own (io_threads); model work runs on each
// engine's loop thread: a handler submits a request and returns, and the
// engine's output comes back to the connection's strand through
// ResponseStream::on_ready. No I/O thread ever waits on a model.
//
// Endpoints (see docs/server.md, "HTTP"):
//   POST /v1/chat/completions, /v1/completions      (stream or not)
//   GET  /v1/models, /v1/models/{id}
//   POST /v1/audio/transcriptions, /v1/audio/translations (Whisper models:
//        multipart upload, json/text/srt/vtt/verbose_json or SSE)
//   POST /v1/audio/speech                            (speech models: the whole file,
//        chunked audio or speech.audio.* events; see speech_api.hpp)
//   GET, POST /v1/audio/voices, DELETE /v1/audio/voices/{id}  (voices; saved voices)
//   GET  /health, /livez, /readyz, /metrics          (no API key needed)
//   GET  /, /ui/{file}       the web playground, when served (serve_web_ui)
//   GET  /v1/admin/models, /v1/admin/models/{id}  (admin key: admin_api_keys)
//   POST /v1/admin/models/{id}/load, /v1/admin/models/{id}/unload
//   HEAD on every GET route (GET's headers, no body)
//
// Errors are OpenAI's envelope ({"error": {message, type, param, code}});
// a 500 says nothing of internals (the log has the details, with the request id).
//
// Boost.JSON's compiled part comes with izwi::izwi (libboost_json), or a
// program compiles <boost/json/src.hpp> once (see docs/server.md).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstddef>
#include <functional>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/thread_pool.hpp>

#include "izwi/config.hpp"
#include "izwi/server/api_error.hpp"
#include "izwi/server/embedded_file.hpp"
#include "izwi/server/http/auth.hpp"
#include "izwi/server/http/limits.hpp"
#include "izwi/server/http/listener.hpp"
#include "izwi/server/http/metrics.hpp"
#include "izwi/server/http/router.hpp"
#include "izwi/server/http/session.hpp"
#include "izwi/models/silero_vad.hpp"
#include "izwi/server/model_registry.hpp"
#include "izwi/server/speech_api.hpp"

namespace izwi::server {

namespace detail {
struct PreparedGeneration;
struct PreparedTranscription;
struct PreparedSpeech;
}

struct ServerConfig {
  /// Address to listen on; "0.0.0.0" or "::" for every interface.
  std::string host = "127.0.0.1";
  /// 0: an ephemeral port (Server::start returns it).
  unsigned short port = 8000;
  /// Accepted keys for `Authorization: Bearer KEY`; empty: no authentication.
  std::vector<std::string> api_keys;
  /// Keys of the admin routes (/v1/admin/...), which load and unload models.
  /// An inference key never opens them; empty: they answer 403.
  std::vector<std::string> admin_api_keys;
  /// Asio threads for HTTP.
  std::size_t io_threads = 2;
  /// Threads that parse generation requests and tokenize their prompts (work
  /// too slow for an I/O thread with a large body).
  std::size_t prep_threads = 2;
  /// Text in a request that spells a special token ("<|im_end|>"): false
  /// parses it as the control token, as vLLM does (the default); true encodes
  /// it as plain text, so a client cannot forge the chat template's
  /// structure. A request's "special_tokens_as_text" overrides this.
  bool special_tokens_as_text = false;
  /// Generation requests waiting for a preparation thread beyond this get
  /// 429; 0: no limit. izwi-server sets it from --max-queue.
  std::size_t max_queued_preparations = 256;
  http::Limits limits;
  /// On shutdown, in-flight requests get this long to finish before they are aborted.
  std::chrono::milliseconds shutdown_grace{30'000};
  /// Admin unload: in-flight requests of the model get this long.
  std::chrono::milliseconds unload_grace{10'000};
  /// run() stops gracefully on SIGINT and SIGTERM.
  bool handle_signals = false;
  /// One line per request on stderr.
  bool access_log = true;
  /// Longest audio the transcription endpoints accept, in seconds (longer: 413,
  /// found from the file's header before it is decoded).
  double max_audio_seconds = 3600.0;
  /// Silero VAD weights (assets/silero-vad/silero_vad_v5_16k.safetensors) for
  /// chunking_strategy; unset: the energy VAD decides where speech is.
  std::optional<std::filesystem::path> vad_model;
  /// Where saved voices (POST /v1/audio/voices) persist across restarts
  /// (created when missing; openai::VoiceStore says how). Unset: in memory.
  std::optional<std::filesystem::path> voices_dir;
  /// /v1/audio/speech requests without "normalization_options" get
  /// Kokoro-FastAPI's default text normalisation when true (as Kokoro-FastAPI
  /// serves them), the input as written when false (upstream Qwen3-TTS).
  bool normalize_speech_text = false;
};

/// What a route handler gets. Handlers run on the connection's strand: they
/// answer at once (respond / throw ApiError) or attach a PendingResponse and
/// answer later from that strand.
struct HandlerContext {
  const std::shared_ptr<http::Session>& session;
  http::Request& request;
  /// The route's placeholders (match.param("id")).
  const http::Router<std::function<void(HandlerContext&)>>::Match& match;
};

/// Who may call a route.
enum class RouteAccess : std::uint8_t {
  /// Anyone with an inference key (anyone, when no api_keys are set).
  api_key,
  /// Anyone (health, metrics).
  open,
  /// Admin keys only; closed (403) when no admin_api_keys are set.
  admin,
};

class Server final : private http::SessionHost {
 public:
  using Handler = std::function<void(HandlerContext&)>;

  /// The registry must outlive the server. Throws (io::format_error,
  /// izwi::error) when config.vad_model cannot be loaded.
  Server(ServerConfig config, ModelRegistry& registry);
  /// Stops (gracefully, as stop()) and waits.
  ~Server() override;
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Binds, starts the I/O threads and accepts; returns the bound port.
  /// Throws boost::system::system_error when the address cannot be bound.
  unsigned short start();
  /// Blocks until the server has stopped.
  void wait();
  /// start(), then wait(); with handle_signals, SIGINT/SIGTERM call stop().
  void run();
  /// Graceful shutdown, returns at once (any thread, idempotent): stop
  /// accepting, close idle connections, answer new requests 503, let
  /// in-flight ones finish until shutdown_grace, abort the rest (the models
  /// are shut down through the registry), close everything.
  void stop();

  unsigned short port() const noexcept { return port_; }
  bool stopping() const noexcept { return draining_.load(std::memory_order_acquire); }
  const http::HttpMetrics& http_metrics() const noexcept { return metrics_; }
  const ServerConfig& config() const noexcept { return config_; }

  /// The models the server answers for (route handlers added by a host use it).
  ModelRegistry& registry() noexcept { return registry_; }
  /// Threads for work too slow for an I/O thread (parsing a large upload,
  /// tokenizing); post there, then post the answer back to the session's strand.
  boost::asio::thread_pool::executor_type work_executor() noexcept { return prep_pool_.get_executor(); }
  /// The error response for an exception caught while answering: ApiError as
  /// it is, izwi::invalid_argument as a 400 naming its field, izwi::unavailable
  /// as 429 (503 while shutting down), anything else a 500 whose details go to
  /// the log only.
  http::Response exception_response(std::exception_ptr failure, const std::string& request_id, unsigned version);

  /// Serves the web playground from `files` (izwi-server's are ui/ of the
  /// source tree, embedded at build time by cmake/izwiEmbedFiles.cmake):
  /// GET "/" and "/ui/<name>", open routes (the page asks for the API key
  /// itself and holds nothing secret). `files` must outlive the server. Each
  /// answer carries the file's Content-Type; ETag "<digest>" (If-None-Match
  /// naming it: 304 without the body); Cache-Control "no-cache" (revalidate
  /// first) for the page and for a file asked for without ?v=<its digest>,
  /// "public, max-age=31536000, immutable" with it (the page links files so:
  /// their URL changes when they do); a Content-Security-Policy allowing this
  /// server's own scripts, styles and requests and blob: audio only; and
  /// X-Content-Type-Options: nosniff, Referrer-Policy: no-referrer.
  /// Call before start().
  void serve_web_ui(std::span<const EmbeddedFile> files);

  /// Adds a route, or replaces the handler of an existing (method, pattern)
  /// (the audio endpoints are meant to be replaced so). Call before start().
  /// `open`: no API key needed.
  void add_route(std::string method, std::string pattern, Handler handler, bool open = false);
  void add_route(std::string method, std::string pattern, Handler handler, RouteAccess access);

 private:
  // http::SessionHost
  const http::Limits& limits() const noexcept override { return config_.limits; }
  bool draining() const noexcept override { return draining_.load(std::memory_order_acquire); }
  void handle(const std::shared_ptr<http::Session>& session, http::Request&& request) override;
  http::Response error_response(const ApiError& error, unsigned version) override;
  void exchange_started() noexcept override;
  void exchange_finished(const http::Exchange& exchange) noexcept override;
  void session_closed(http::Session* session) noexcept override;
  void session_failed(std::string_view request_id, std::string_view what) noexcept override;

  void run_io_thread() noexcept;
  void io_exception(std::string_view what) noexcept;
  void check_admin_key(std::string_view authorization) const;

  void on_accept(boost::asio::ip::tcp::socket&& socket);
  void on_signal(const boost::system::error_code& ec, int signal);
  void add_default_routes();
  void shutdown_sequence();

  // Handlers.
  /// Runs `prepare()` (parsing, tokenizing, decoding an upload: milliseconds
  /// to seconds) on a preparation thread, never an I/O thread, then
  /// `start(session, prepared)` on the connection's strand; an exception from
  /// `prepare` becomes its error answer. Whatever `prepare` captured (the
  /// body) is freed before `start` runs. Requests waiting for a preparation
  /// thread count against --max-queue: without that, a flood of large bodies
  /// would queue without bound in front of the engines' own limits.
  template <class Prepare, class Start>
  void prepare_then_start(HandlerContext& ctx, std::string_view waiting_for, Prepare prepare, Start start);
  void generate(HandlerContext& ctx, bool chat);
  detail::PreparedGeneration prepare_chat(const std::string& body);
  detail::PreparedGeneration prepare_completion(const std::string& body);
  void list_models(HandlerContext& ctx);
  void get_model(HandlerContext& ctx);
  void health(HandlerContext& ctx);
  void livez(HandlerContext& ctx);
  void readyz(HandlerContext& ctx);
  void metrics(HandlerContext& ctx);
  void admin_list(HandlerContext& ctx);
  void admin_get(HandlerContext& ctx);
  void admin_load(HandlerContext& ctx);
  void admin_unload(HandlerContext& ctx);
  void audio_unavailable(HandlerContext& ctx, Task task);
  void transcribe(HandlerContext& ctx, Task task);
  detail::PreparedTranscription prepare_transcription(const std::string& content_type, const std::string& body,
                                                      Task task);
  void speech(HandlerContext& ctx);
  detail::PreparedSpeech prepare_speech(const std::string& body);
  void resolve_speech_voice(const openai::SpeechRequest& parsed, const SpeechVoices& voices, const std::string& model,
                            SpeechSynthesis& synthesis) const;
  void list_voices(HandlerContext& ctx);
  void create_voice(HandlerContext& ctx);
  void delete_voice(HandlerContext& ctx);
  /// config_.voices_dir: the voices saved there are read back (at construction).
  void load_saved_voices();

  std::shared_ptr<AnyEngine> resolve_model(const std::string& name, Task task) const;
  std::string loaded_model_names(Task task) const;

  struct RouteEntry {
    Handler handler;
    bool open = false;
  };

  ServerConfig config_;
  ModelRegistry& registry_;
  http::ApiKeys keys_;
  http::ApiKeys admin_keys_;
  http::HttpMetrics metrics_;
  http::Router<Handler> router_;
  std::optional<models::SileroVad> vad_;  // config_.vad_model, loaded once
  openai::VoiceStore voice_store_;         // POST /v1/audio/voices (config_.voices_dir)
  std::unordered_map<std::string, RouteAccess> route_access_;  // "METHOD pattern" -> access

  std::atomic<bool> draining_{false};
  std::atomic<bool> started_{false};
  std::atomic<std::int64_t> in_flight_{0};
  std::atomic<std::size_t> preparing_{0};  // generation requests posted to prep_pool_, not yet prepared
  unsigned short port_ = 0;

  std::mutex sessions_mutex_;
  std::unordered_map<http::Session*, std::weak_ptr<http::Session>> sessions_;

  std::mutex state_mutex_;
  std::condition_variable stopped_cv_;
  bool stopped_ = false;
  std::thread shutdown_thread_;

  // Declared after what sessions touch when they die, so handlers destroyed
  // with the io_context still find the server's state alive.
  boost::asio::io_context ioc_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  // After ioc_: destroyed first, so work it still holds (sessions) dies while
  // the io_context lives.
  boost::asio::thread_pool prep_pool_;
  std::shared_ptr<http::Listener> listener_;
  std::optional<boost::asio::signal_set> signals_;
  std::vector<std::thread> io_threads_;
};

}  // namespace izwi::server

// Header-only, the bodies come here; under IZWI_SEPARATE_COMPILATION
// (izwi/config.hpp) they are compiled once, in izwi::server_http_compiled
// (cmake/izwiCompiled.cmake) or <izwi/server/src.hpp>.
#if !defined(IZWI_SEPARATE_COMPILATION)
#include "izwi/server/impl/server.hpp"
#endif
