#pragma once
// Speech synthesis (POST /v1/audio/speech) and saved voices (GET, POST
// /v1/audio/voices, DELETE /v1/audio/voices/{id}). A speech request is
// parsed, its voice resolved and its engine request built on a preparation
// thread; a SpeechJob then carries the engine stream's audio through the
// time-stretcher (speed ≠ 1) and the encoder to the connection: the whole
// file, chunked audio bytes, or speech.audio.* events. Streamed and whole
// answers go through the same StreamingEncoder with the same pieces, so they
// carry the same bytes (a whole WAV has its size fields filled in). A client
// that goes away closes the stream, which aborts the request and frees its
// KV blocks. Part of the Server bodies; included by impl/server.hpp.

#include "izwi/server/impl/server_common.hpp"

#include <array>
#include <cstring>
#include <random>
#include <stdexcept>

#include "izwi/audio/decode.hpp"
#include "izwi/audio/encode.hpp"
#include "izwi/audio/time_stretch.hpp"
#include "izwi/server/speech_api.hpp"
#include "izwi/server/transcription_api.hpp"  // multipart forms and their text fields (voice uploads)

namespace izwi::server {

namespace detail {

/// What the preparation thread hands the strand.
struct PreparedSpeech {
  std::shared_ptr<AnyEngine> engine;
  ResponseStream stream;
  audio::AudioFormat format = audio::AudioFormat::mp3;
  openai::SpeechStreamFormat stream_format = openai::SpeechStreamFormat::none;
  double speed = 1.0;
  std::uint32_t sample_rate = 24000;
  std::size_t input_tokens = 0;
  /// Opus: the Ogg stream's serial number (from the seed).
  std::uint32_t ogg_serial = 1;
};

/// Gives every Ogg page of a stream one fixed serial number (and its CRC).
/// libsndfile draws a stream's serial at random, so the same audio would
/// never give the same bytes twice; with the serial fixed (from the request's
/// seed) a seeded request is reproducible and its streamed and whole answers
/// are equal. Pages may arrive split across calls: the tail waits for the rest.
class OggSerialRewriter {
 public:
  explicit OggSerialRewriter(std::uint32_t serial) : serial_(serial) {}

  /// Appends the complete pages of pending + `bytes` to `out`, rewritten.
  void rewrite(const std::vector<std::byte>& bytes, std::vector<std::byte>& out) {
    pending_.insert(pending_.end(), bytes.begin(), bytes.end());
    std::size_t at = 0;
    while (pending_.size() - at >= 27) {
      const std::byte* page = pending_.data() + at;
      if (std::memcmp(page, "OggS", 4) != 0) throw std::runtime_error("the Ogg encoder wrote something not a page");
      const std::size_t segments = std::to_integer<std::size_t>(page[26]);
      if (pending_.size() - at < 27 + segments) break;
      std::size_t length = 27 + segments;
      for (std::size_t i = 0; i < segments; ++i) length += std::to_integer<std::size_t>(page[27 + i]);
      if (pending_.size() - at < length) break;
      const std::size_t begin = out.size();
      out.insert(out.end(), page, page + length);
      std::byte* copy = out.data() + begin;
      put_le32(copy + 14, serial_);
      put_le32(copy + 22, 0);
      put_le32(copy + 22, crc(copy, length));
      at += length;
    }
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(at));
  }

 private:
  static void put_le32(std::byte* p, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xFF);
  }
  /// Ogg's CRC-32: polynomial 0x04C11DB7, no reflection, initial value 0.
  static std::uint32_t crc(const std::byte* p, std::size_t n) {
    static const std::array<std::uint32_t, 256> table = [] {
      std::array<std::uint32_t, 256> t{};
      for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t r = i << 24;
        for (int k = 0; k < 8; ++k) r = (r & 0x80000000u) ? (r << 1) ^ 0x04C11DB7u : r << 1;
        t[i] = r;
      }
      return t;
    }();
    std::uint32_t c = 0;
    for (std::size_t i = 0; i < n; ++i) c = (c << 8) ^ table[((c >> 24) ^ std::to_integer<std::uint32_t>(p[i])) & 0xFF];
    return c;
  }

  std::uint32_t serial_;
  std::vector<std::byte> pending_;
};

/// The rate saved voices are kept at (Qwen3-TTS's: its speaker encoder and
/// codec run at 24 kHz).
inline constexpr std::uint32_t saved_voice_sample_rate = 24000;

/// Reference audio for cloning: the longest accepted, in seconds.
inline constexpr double max_reference_audio_seconds = 60.0;

/// An uploaded recording as mono float at `rate`; errors name `field`.
inline std::shared_ptr<const std::vector<float>> decode_reference_audio(std::string_view bytes, std::uint32_t rate,
                                                                        const char* field) {
  audio::DecodeOptions options;
  options.mono = true;
  options.target_sample_rate = rate;
  options.max_duration_seconds = max_reference_audio_seconds;
  try {
    auto samples = std::make_shared<std::vector<float>>(std::move(audio::decode(bytes, options).audio.samples));
    if (samples->empty()) throw ApiError::bad_request(std::string("'") + field + "' holds no audio.", field);
    return samples;
  } catch (const audio::DecodeError& error) {
    throw ApiError::bad_request(std::string("Could not decode '") + field + "' (" +
                                    std::string(audio::to_string(error.problem())) +
                                    "): " + openai::sanitize_utf8(error.what()),
                                field);
  } catch (const audio::AudioError& error) {
    throw ApiError::bad_request(std::string("Could not decode '") + field + "': " + openai::sanitize_utf8(error.what()),
                                field);
  }
}

/// One speech answer: the engine's stream on one side, the connection on the
/// other. Owned by the session (its PendingResponse); the engine's listener
/// holds a weak_ptr and posts to the strand.
class SpeechJob final : public http::PendingResponse, public std::enable_shared_from_this<SpeechJob> {
 public:
  SpeechJob(std::shared_ptr<http::Session> session, PreparedSpeech prepared, http::HttpMetrics& metrics)
      : session_(std::move(session)),
        p_(std::move(prepared)),
        metrics_(metrics),
        encoder_(p_.format, p_.sample_rate) {
    if (p_.speed != 1.0) stretcher_.emplace(p_.sample_rate, p_.speed);
    if (p_.format == audio::AudioFormat::opus) ogg_.emplace(p_.ogg_serial);
  }

  /// On the strand: attaches, sends the stream's head, listens to the engine.
  void start() {
    session_->attach(shared_from_this());
    if (session_->closed()) return;
    if (streaming()) {
      http::Response head{bhttp::status::ok, 11};
      const bool sse = p_.stream_format == openai::SpeechStreamFormat::sse;
      head.set(bhttp::field::content_type, sse ? sse::content_type : audio::content_type(p_.format));
      head.set(bhttp::field::cache_control, "no-cache");
      head.set("X-Accel-Buffering", "no");
      session_->begin_stream(head);
    }
    auto executor = session_->get_executor();
    std::weak_ptr<SpeechJob> weak = weak_from_this();
    p_.stream.on_ready([weak, executor] {
      // The engine's thread: only wake the strand, once per batch of chunks.
      auto self = weak.lock();
      if (!self || self->wake_posted_.exchange(true, std::memory_order_acq_rel)) return;
      boost::asio::post(executor, [self] { self->session_->run_guarded([&] { self->drain(); }); });
    });
  }

  void cancel() noexcept override {
    cancelled_ = true;
    p_.stream.close();  // aborts the request; its KV blocks return to the pool
  }

  void resume() override { drain(); }

 private:
  bool streaming() const noexcept { return p_.stream_format != openai::SpeechStreamFormat::none; }

  void drain() {
    wake_posted_.store(false, std::memory_order_release);
    if (cancelled_ || finished_ || session_->closed()) return;
    // One write at a time: meanwhile chunks wait in the engine's bounded
    // stream, which pauses this request when it fills (a slow listener
    // costs no memory here).
    if (streaming() && session_->stream_busy()) return;
    std::vector<std::byte> bytes;
    while (!finished_) {
      std::optional<StreamChunk> chunk = p_.stream.try_next();
      if (!chunk) break;
      consume(*chunk, bytes);
    }
    if (finish_reason_ && (*finish_reason_ == FinishReason::stop || *finish_reason_ == FinishReason::length))
      flush_encoder(bytes);
    send(std::move(bytes));
    if (finished_) finish();
  }

  void consume(StreamChunk& chunk, std::vector<std::byte>& bytes) {
    output_frames_ += chunk.token_ids.size();
    if (!chunk.audio.empty()) {
      if (chunk.audio_sample_rate != 0 && chunk.audio_sample_rate != p_.sample_rate)
        throw std::runtime_error("the model produced audio at " + std::to_string(chunk.audio_sample_rate) +
                                 " Hz, not the " + std::to_string(p_.sample_rate) + " Hz it declared");
      if (stretcher_) append(bytes, encoder_.push(stretcher_->push(chunk.audio)));
      else append(bytes, encoder_.push(chunk.audio));
    }
    if (!chunk.finished()) return;
    finished_ = true;
    finish_reason_ = chunk.finish_reason;
    engine_error_ = std::move(chunk.error);
    if (chunk.stats) {
      if (chunk.stats->num_prompt_tokens) p_.input_tokens = chunk.stats->num_prompt_tokens;
      if (chunk.stats->num_output_tokens) output_frames_ = chunk.stats->num_output_tokens;
    }
  }

  void flush_encoder(std::vector<std::byte>& bytes) {
    if (stretcher_) append(bytes, encoder_.push(stretcher_->finish()));
    append(bytes, encoder_.finish());
  }

  static void append(std::vector<std::byte>& out, const std::vector<std::byte>& more) {
    out.insert(out.end(), more.begin(), more.end());
  }

  /// What is ready goes out: as it is (audio), as one event (sse), or into the file.
  void send(std::vector<std::byte> bytes) {
    if (ogg_) {
      std::vector<std::byte> pages;
      ogg_->rewrite(bytes, pages);
      bytes = std::move(pages);
    }
    if (bytes.empty()) return;
    if (streaming() && !first_audio_sent_) {
      first_audio_sent_ = true;
      metrics_.observe_time_to_first_audio(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - session_->exchange().start).count());
    }
    switch (p_.stream_format) {
      case openai::SpeechStreamFormat::none: append(file_, bytes); break;
      case openai::SpeechStreamFormat::audio:
        session_->stream_write(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
        break;
      case openai::SpeechStreamFormat::sse:
        session_->stream_write(sse::data(boost::json::serialize(openai::speech_audio_delta_event(bytes))));
        break;
    }
  }

  void finish() {
    const FinishReason reason = finish_reason_.value_or(FinishReason::error);
    if (reason == FinishReason::stop || reason == FinishReason::length) return answer();
    ApiError error = ApiError::internal();
    if (reason == FinishReason::abort) {
      error = ApiError::unavailable("The request was aborted: the model is shutting down.");
    } else {
      log_line("izwi-server: request " + session_->exchange().request_id + " failed in the engine" +
               (engine_error_.empty() ? std::string() : ": " + engine_error_));
    }
    switch (p_.stream_format) {
      case openai::SpeechStreamFormat::none:
        session_->respond(json_response(error.status, openai::error_json(error)));
        break;
      case openai::SpeechStreamFormat::sse:
        session_->stream_write(sse::data(boost::json::serialize(openai::error_json(error))));
        session_->end_stream();
        break;
      case openai::SpeechStreamFormat::audio:
        // Audio bytes cannot carry an error: the connection closes without
        // the last chunk, so the client sees a truncated transfer, never a
        // complete-looking file.
        session_->abort();
        break;
    }
  }

  void answer() {
    switch (p_.stream_format) {
      case openai::SpeechStreamFormat::none: {
        // The whole file is here: a WAV gets its real sizes (the stream's
        // header says "until the end").
        if (p_.format == audio::AudioFormat::wav && file_.size() >= 44) {
          const auto put = [&](std::size_t at, std::uint64_t value) {
            for (int i = 0; i < 4; ++i) file_[at + i] = static_cast<std::byte>((value >> (8 * i)) & 0xFF);
          };
          if (file_.size() - 8 <= 0xFFFFFFFFull) {
            put(4, file_.size() - 8);
            put(40, file_.size() - 44);
          }
        }
        http::Response res = text_response(
            200, std::string(reinterpret_cast<const char*>(file_.data()), file_.size()), audio::content_type(p_.format));
        session_->respond(std::move(res));
        return;
      }
      case openai::SpeechStreamFormat::sse:
        session_->stream_write(
            sse::data(boost::json::serialize(openai::speech_audio_done_event(p_.input_tokens, output_frames_))));
        session_->end_stream();
        return;
      case openai::SpeechStreamFormat::audio: session_->end_stream(); return;
    }
  }

  std::shared_ptr<http::Session> session_;
  PreparedSpeech p_;
  http::HttpMetrics& metrics_;  // the server's: time to first audio
  audio::StreamingEncoder encoder_;
  std::optional<audio::TimeStretcher> stretcher_;
  std::optional<OggSerialRewriter> ogg_;
  std::vector<std::byte> file_;  // the whole answer (stream_format none)
  std::uint64_t output_frames_ = 0;
  std::optional<FinishReason> finish_reason_;
  std::string engine_error_;
  bool finished_ = false;
  bool cancelled_ = false;
  bool first_audio_sent_ = false;
  std::atomic<bool> wake_posted_{false};
};

inline std::string voice_list_for_error(const SpeechVoices& voices) {
  std::string out;
  for (const std::string& s : voices.speakers) out += (out.empty() ? "" : ", ") + s;
  out += "; or an OpenAI voice name (";
  bool first = true;
  for (const auto& alias : openai::speech_voice_aliases()) {
    out += (first ? "" : ", ") + std::string(alias.name);
    first = false;
  }
  return out + ")";
}

}  // namespace detail

IZWI_DECL void Server::speech(HandlerContext& ctx) {
  // No model speaks at all: say so before looking into the body.
  if (loaded_model_names(Task::tts) == "none") audio_unavailable(ctx, Task::tts);
  prepare_then_start(
      ctx, "to be prepared", [this, body = std::move(ctx.request.body())] { return prepare_speech(body); },
      [this](const std::shared_ptr<http::Session>& session, detail::PreparedSpeech prepared) {
        auto job = std::make_shared<detail::SpeechJob>(session, std::move(prepared), metrics_);
        job->start();  // a client already gone cancels it at once
      });
}

/// The voice as the model takes it: a saved voice's recording, a speaker, or
/// (models without named speakers) nothing.
IZWI_DECL void Server::resolve_speech_voice(const openai::SpeechRequest& parsed, const SpeechVoices& voices,
                                         const std::string& model, SpeechSynthesis& s) const {
  std::optional<openai::SavedVoice> saved;
  if (parsed.voice_is_saved_id || (!parsed.voice.empty() && !openai::resolve_speaker(parsed.voice, voices)))
    saved = voice_store_.find(parsed.voice);
  if (parsed.voice_is_saved_id && !saved)
    throw ApiError::bad_request("No saved voice has the id '" + openai::sanitize_utf8(parsed.voice.substr(0, 80)) +
                                    "' (GET /v1/audio/voices lists them).",
                                "voice");
  if (saved || !parsed.reference_audio.empty()) {
    const char* field = saved ? "voice" : "reference_audio";
    if (!voices.cloning_unavailable.empty())
      throw ApiError::bad_request("The model `" + model + "` cannot speak in a cloned voice: " +
                                      voices.cloning_unavailable + ".",
                                  field);
    if (saved) {
      s.reference_audio = saved->samples;
      s.reference_sample_rate = saved->sample_rate;
      s.reference_text = saved->reference_text;
    } else {
      s.reference_audio = detail::decode_reference_audio(parsed.reference_audio, voices.sample_rate, field);
      s.reference_sample_rate = voices.sample_rate;
      s.reference_text = parsed.reference_text;
    }
    return;
  }
  if (voices.speakers.empty()) return;  // VoiceDesign: the instructions describe the voice
  const std::optional<std::string> speaker = openai::resolve_speaker(parsed.voice, voices);
  if (!speaker)
    throw ApiError::bad_request("Unknown voice '" + openai::sanitize_utf8(parsed.voice.substr(0, 80)) +
                                    "' for the model `" + model + "`; its voices: " +
                                    detail::voice_list_for_error(voices) + ", or a saved voice {\"id\"}.",
                                "voice");
  s.speaker = *speaker;
}

IZWI_DECL detail::PreparedSpeech Server::prepare_speech(const std::string& body) {
  openai::SpeechRequest parsed = openai::parse_speech_request(body);
  std::shared_ptr<AnyEngine> engine = resolve_model(parsed.model, Task::tts);
  const SpeechVoices* voices = engine->speech_voices();
  if (voices == nullptr)
    throw ApiError::bad_request("The model `" + parsed.model + "` does not synthesize speech.", "model");
  SpeechSynthesis s;
  if (!parsed.normalization && config_.normalize_speech_text) parsed.normalization = text::SpeechTextOptions{};
  s.text = parsed.normalization ? text::normalize_speech_text(parsed.input, *parsed.normalization) : std::move(parsed.input);
  s.instructions = parsed.instructions;
  s.language = parsed.language;
  // No seed: a fresh one, so that two requests sound different (as OpenAI's).
  s.seed = parsed.seed ? *parsed.seed : (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  s.temperature = parsed.temperature;
  s.top_k = parsed.top_k;
  s.max_frames = parsed.max_frames;
  resolve_speech_voice(parsed, *voices, parsed.model, s);
  Request request = engine->make_speech_request(s);
  detail::PreparedSpeech out;
  out.format = parsed.response_format;
  out.stream_format = parsed.stream_format;
  out.speed = parsed.speed;
  out.sample_rate = voices->sample_rate;
  out.input_tokens = request.prompt_tokens.size();
  out.ogg_serial = static_cast<std::uint32_t>(s.seed ^ (s.seed >> 32)) | 1u;
  out.stream = detail::submit_or_explain(*engine, std::move(request), draining());
  out.engine = std::move(engine);
  return out;
}

// --- saved voices ---------------------------------------------------------------

IZWI_DECL void Server::list_voices(HandlerContext& ctx) {
  boost::json::array data;
  for (const auto& engine : registry_.loaded())
    if (const SpeechVoices* voices = engine->speech_voices())
      for (auto& v : openai::model_voices_json(engine->info().id, *voices)) data.push_back(std::move(v));
  for (const openai::SavedVoice& voice : voice_store_.list()) data.push_back(openai::saved_voice_json(voice));
  ctx.session->respond(detail::json_response(200, boost::json::object{{"object", "list"}, {"data", std::move(data)}},
                                             ctx.request.version()));
}

IZWI_DECL void Server::create_voice(HandlerContext& ctx) {
  // Decoding the recording takes milliseconds to seconds: on a preparation thread.
  std::shared_ptr<http::Session> session = ctx.session;
  const unsigned version = ctx.request.version();
  std::string content_type(ctx.request[boost::beast::http::field::content_type]);
  boost::asio::post(prep_pool_, [this, session, version, content_type = std::move(content_type),
                                 body = std::move(ctx.request.body())]() mutable {
    std::optional<openai::SavedVoice> saved;
    std::exception_ptr failure;
    try {
      const multipart::FormData form = multipart::parse_form_data(content_type, body);
      const multipart::Part* file = form.single("file");
      if (!file) file = form.single("audio_sample");  // OpenAI's name for a custom voice's recording
      if (!file) throw ApiError::bad_request("You must provide a 'file' field holding the reference audio.", "file");
      std::string name, text;
      if (const auto* p = form.single("name")) name = openai::detail::text_field(*p);
      if (const auto* p = form.single("reference_text")) text = openai::detail::text_field(*p);
      if (name.size() > 256) throw ApiError::bad_request("'name' is longer than 256 bytes.", "name");
      saved = voice_store_.add(std::move(name),
                               detail::decode_reference_audio(file->body, detail::saved_voice_sample_rate, "file"),
                               detail::saved_voice_sample_rate, std::move(text), file->body);
    } catch (...) {
      failure = std::current_exception();
    }
    boost::asio::post(session->get_executor(), [this, session, version, failure, saved = std::move(saved)] {
      session->run_guarded([&] {
        if (failure) return session->respond(exception_response(failure, session->exchange().request_id, version));
        session->respond(detail::json_response(200, openai::saved_voice_json(*saved), version));
      });
    });
  });
}

IZWI_DECL void Server::load_saved_voices() {
  if (!config_.voices_dir) return;
  const auto decode = [](std::string_view recording) {
    return detail::decode_reference_audio(recording, detail::saved_voice_sample_rate, "file");
  };
  const std::vector<std::string> problems = voice_store_.persist_in(*config_.voices_dir, decode);
  for (const std::string& problem : problems)
    detail::log_line("izwi-server: voices directory " + config_.voices_dir->string() + ": " + problem);
  detail::log_line("izwi-server: saved voices: " + std::to_string(voice_store_.list().size()) + " read from " +
                   config_.voices_dir->string());
}

IZWI_DECL void Server::delete_voice(HandlerContext& ctx) {
  const std::string& id = ctx.match.param("id");
  if (!voice_store_.remove(id))
    throw ApiError::not_found("No saved voice has the id '" + openai::sanitize_utf8(id.substr(0, 80)) + "'.");
  ctx.session->respond(detail::json_response(
      200, boost::json::object{{"id", id}, {"object", "audio.voice.deleted"}, {"deleted", true}}, ctx.request.version()));
}

}  // namespace izwi::server
