#pragma once
// Chat and completions (POST /v1/chat/completions, /v1/completions): request
// preparation off the I/O threads (parse, bound, tokenize, submit), and the
// GenerationJob that carries an engine stream to the connection, whole or as
// SSE. Part of the Server bodies; included by impl/server.hpp.

#include "izwi/server/impl/server_common.hpp"

namespace izwi::server {

namespace detail {

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
/// model's context, naming both lengths. An empty prompt, ids outside the
/// vocabulary and a prompt that fills the context alone are the engine's to
/// refuse (izwi::check_prompt_tokens, run by submit), in vLLM's words too;
/// this check, which the engine does not make (it caps max_tokens instead),
/// leaves those to it.
inline void check_output_fits(std::size_t prompt_tokens, std::optional<std::uint32_t> max_tokens,
                              std::size_t max_model_len, std::string_view max_tokens_field) {
  if (max_model_len == 0 || prompt_tokens == 0 || prompt_tokens >= max_model_len) return;
  if (max_tokens && prompt_tokens + *max_tokens > max_model_len)
    throw ApiError::bad_request(
        "This model's maximum context length is " + std::to_string(max_model_len) +
            " tokens. However, you requested " + std::to_string(prompt_tokens + *max_tokens) + " tokens (" +
            std::to_string(prompt_tokens) + " in the input, " + std::to_string(*max_tokens) +
            " in the completion). Please reduce the length of the input or completion.",
        std::string(max_tokens_field));
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
    if (streaming_)
      text_envelope_ = kind == Kind::chat ? openai::TextChunkEnvelope::chat(meta_)
                                          : openai::TextChunkEnvelope::completion(meta_);
  }

  /// A whole chat reply is answered with its <tool_call> blocks as
  /// message.tool_calls (tool_choice "auto"; openai::split_tool_calls).
  void answer_tool_calls() noexcept { answer_tool_calls_ = true; }

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

  std::vector<openai::PositionLogprobs> positions(StreamChunk& chunk) const {
    std::vector<openai::PositionLogprobs> out;
    if (!want_logprobs_) return out;
    out.reserve(chunk.logprobs.size());
    for (TokenLogprobs& lp : chunk.logprobs) {
      openai::PositionLogprobs p;
      // The engine spelled the tokens (TokenLogprobs::bytes): no call back into it per token.
      p.sampled = {std::move(lp.bytes), lp.logprob};
      p.top.reserve(lp.top.size());
      for (std::size_t i = 0; i < lp.top.size(); ++i)
        p.top.push_back({i < lp.top_bytes.size() ? std::move(lp.top_bytes[i]) : std::string(), lp.top[i].logprob});
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
    if (lps.empty()) {
      // The common case, once per token: no JSON tree, one copy of the text.
      text_envelope_.append_event(out, chunk.text);
    } else if (kind_ == Kind::chat) {
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
    text_offset_ += izwi::detail::count_code_points(chunk.text);
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
      if (answer_tool_calls_)
        body = openai::chat_completion_json(meta_, openai::split_tool_calls(text_), finish_reason_, usage, std::move(lp));
      else
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
  bool answer_tool_calls_ = false;
  openai::ResponseMeta meta_;
  openai::TextChunkEnvelope text_envelope_;  // streaming: a text chunk's JSON around its text
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

}  // namespace detail

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
  bool tool_calls = false;  ///< answer <tool_call> blocks as tool_calls
  std::size_t prompt_tokens = 0;
};

}  // namespace detail

IZWI_DECL void Server::generate(HandlerContext& ctx, bool chat) {
  prepare_then_start(
      ctx, "to be parsed and tokenized",
      [this, chat, body = std::move(ctx.request.body())] { return chat ? prepare_chat(body) : prepare_completion(body); },
      [](const std::shared_ptr<http::Session>& session, detail::PreparedGeneration prepared) {
        const std::string model = prepared.engine->info().id;
        auto job = std::make_shared<detail::GenerationJob>(
            session, std::move(prepared.engine), std::move(prepared.stream), prepared.kind, prepared.streaming,
            prepared.include_usage, prepared.logprobs, prepared.prompt_tokens, model);
        if (prepared.tool_calls) job->answer_tool_calls();
        job->start();  // a client already gone cancels it at once
      });
}

IZWI_DECL detail::PreparedGeneration Server::prepare_chat(const std::string& body) {
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
  detail::check_output_fits(request.prompt_tokens.size(), parsed.sampling.max_tokens, engine->info().max_model_len,
                            parsed.field_names.max_tokens);
  request.sampling = std::move(parsed.sampling);
  request.priority = parsed.priority;
  detail::PreparedGeneration out;
  out.kind = detail::GenerationJob::Kind::chat;
  out.streaming = parsed.stream;
  out.include_usage = parsed.include_usage;
  out.logprobs = parsed.logprobs;
  out.tool_calls = parsed.parse_tool_calls;
  out.prompt_tokens = request.prompt_tokens.size();
  out.stream = detail::submit_or_explain(*engine, std::move(request), draining(), &parsed.field_names);
  out.engine = std::move(engine);
  return out;
}

IZWI_DECL detail::PreparedGeneration Server::prepare_completion(const std::string& body) {
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
    request.prompt_tokens = std::get<std::vector<TokenId>>(parsed.prompt);  // ids checked by the engine
  }
  detail::check_output_fits(request.prompt_tokens.size(), parsed.sampling.max_tokens, engine->info().max_model_len,
                            parsed.field_names.max_tokens);
  detail::PreparedGeneration out;
  out.kind = detail::GenerationJob::Kind::completion;
  out.streaming = parsed.stream;
  out.include_usage = parsed.include_usage;
  out.logprobs = parsed.sampling.logprobs.has_value();
  out.prompt_tokens = request.prompt_tokens.size();
  request.sampling = std::move(parsed.sampling);
  request.priority = parsed.priority;
  out.stream = detail::submit_or_explain(*engine, std::move(request), draining(), &parsed.field_names);
  out.engine = std::move(engine);
  return out;
}

}  // namespace izwi::server
