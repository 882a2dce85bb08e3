#pragma once
// What every part of the Server bodies shares: the response helpers and
// Server::prepare_then_start (the preparation-thread hand-off of the chat,
// transcription and speech routes). Included by impl/server.hpp and by each
// endpoint family's file, so that under IZWI_SEPARATE_COMPILATION each part
// compiles in a translation unit of its own (cmake/izwiCompiled.cmake).

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

}  // namespace detail

}  // namespace izwi::server

namespace izwi::server {

namespace detail {

/// Submits to the engine; a full queue or a draining engine becomes the
/// OpenAI answer (429 or 503), a field the engine refuses a 400 under the
/// client's name for it. Shared by the chat, transcription and speech routes.
inline ResponseStream submit_or_explain(AnyEngine& engine, Request request, bool server_draining,
                                        const openai::ClientFieldNames* client_fields = nullptr) {
  try {
    return engine.submit(std::move(request));
  } catch (const izwi::invalid_argument& error) {
    // The engine's is the one check of the prompt and the sampling ranges.
    if (client_fields)
      throw ApiError::bad_request(error.what(), std::string(client_fields->client_name(error.field())));
    throw;
  } catch (const izwi::unavailable& error) {
    if (server_draining || engine.status().draining)
      throw ApiError::unavailable("The model is shutting down; try again later.");
    throw ApiError::too_many_requests(std::string("Too many requests: ") + error.what(), 1);
  }
}

}  // namespace detail

template <class Prepare, class Start>
void Server::prepare_then_start(HandlerContext& ctx, std::string_view waiting_for, Prepare prepare, Start start) {
  using Prepared = std::invoke_result_t<Prepare&>;
  std::shared_ptr<http::Session> session = ctx.session;
  const unsigned version = ctx.request.version();
  if (config_.max_queued_preparations != 0 && preparing_.load() >= config_.max_queued_preparations)
    throw ApiError::too_many_requests("Too many requests: " + std::to_string(preparing_.load()) + " are waiting " +
                                      std::string(waiting_for) + " (--max-queue " +
                                      std::to_string(config_.max_queued_preparations) + ")");
  ++preparing_;
  boost::asio::post(prep_pool_, [this, session, version, prepare = std::move(prepare),
                                 start = std::move(start)]() mutable {
    std::optional<Prepared> prepared;
    std::exception_ptr failure;
    try {
      prepared.emplace(prepare());
    } catch (...) {
      failure = std::current_exception();
    }
    { [[maybe_unused]] Prepare done = std::move(prepare); }  // frees the body before the job runs
    --preparing_;
    boost::asio::post(session->get_executor(), [this, session, version, failure, prepared = std::move(prepared),
                                                start = std::move(start)]() mutable {
      session->run_guarded([&] {
        if (failure) {
          session->respond(exception_response(failure, session->exchange().request_id, version));
          return;
        }
        start(session, std::move(*prepared));
      });
    });
  });
}

}  // namespace izwi::server
