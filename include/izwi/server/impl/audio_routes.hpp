#pragma once
// The audio endpoints. /v1/audio/transcriptions and /v1/audio/translations
// run Whisper through the engine: the upload is parsed, decoded (16 kHz
// mono) and, for chunking_strategy, split at quiet points on a preparation
// thread (over more than one window, by a Silero pass on the work threads
// that hands over regions as they become final, beside their decoding:
// detail::VadPass); a TranscriptionJob then drives an asr::Transcriber from the
// connection's strand — each window job becomes an engine request, each
// chunk of its stream goes back to the transcriber — and answers in the
// requested format, or as transcript.text.* events. A client that goes away
// closes every stream the job holds, which aborts the engine requests.
// /v1/audio/speech lives in speech_routes.hpp; while no speech model is
// loaded it answers which model is missing (audio_unavailable).
// Part of the Server bodies; included by impl/server.hpp.

#include "izwi/server/impl/server_common.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include <boost/asio/steady_timer.hpp>

#include "izwi/asr/word_timestamps.hpp"
#include "izwi/audio/decode.hpp"
#include "izwi/server/detail/whisper_jobs.hpp"
#include "izwi/server/transcription_api.hpp"

namespace izwi::server {

IZWI_DECL void Server::audio_unavailable(HandlerContext& ctx, Task task) {
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

namespace detail {

/// What the preparation thread hands the strand.
struct PreparedTranscription {
  std::shared_ptr<AnyEngine> engine;
  const Whisper* model = nullptr;
  std::unique_ptr<asr::Transcriber> transcriber;
  /// chunking_strategy with Silero over more than a window: the pass that
  /// hands the transcriber its regions (none given at the start).
  std::shared_ptr<VadPass> vad_pass;
  openai::TranscriptionFormat format = openai::TranscriptionFormat::json;
  bool translation = false;
  bool streaming = false;
  bool logprobs = false;
  openai::TimestampGranularities granularities;
};

/// One transcription being answered: the transcriber, the engine streams of
/// its jobs in flight, and the connection. Owned by the session (as its
/// PendingResponse); engine listeners hold a weak_ptr and post to the strand.
class TranscriptionJob final : public http::PendingResponse, public std::enable_shared_from_this<TranscriptionJob> {
 public:
  TranscriptionJob(std::shared_ptr<http::Session> session, PreparedTranscription prepared,
                   std::function<bool()> server_draining, boost::asio::thread_pool::executor_type work)
      : session_(std::move(session)),
        p_(std::move(prepared)),
        server_draining_(std::move(server_draining)),
        work_(std::move(work)),
        keep_alive_(session_->get_executor()) {}

  /// On the strand: attaches, starts the event stream, submits the first jobs.
  void start() {
    session_->attach(shared_from_this());
    if (session_->closed()) return;
    if (p_.streaming) {
      http::Response head{bhttp::status::ok, 11};
      head.set(bhttp::field::content_type, sse::content_type);
      head.set(bhttp::field::cache_control, "no-cache");
      head.set("X-Accel-Buffering", "no");
      session_->begin_stream(head);
      arm_keep_alive();
    }
    step();
    if (p_.vad_pass) run_vad_piece();
  }

  void cancel() noexcept override {
    cancelled_ = true;
    keep_alive_.cancel();
    streams_.clear();  // closing an unfinished stream aborts its request; its KV blocks return
    // Streams still on their way are dropped when they arrive (attach_stream).
  }

 private:
  /// Streaming: text comes once per window, seconds apart. A client that
  /// hangs up meanwhile is only noticed when something is written (its reset
  /// answers the write), so a comment goes out each half second nothing else
  /// did: the windows of a departed client are aborted within about that.
  void arm_keep_alive() {
    keep_alive_.expires_after(std::chrono::milliseconds(500));
    keep_alive_.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
      auto self = weak.lock();
      if (ec || !self) return;
      self->session_->run_guarded([&] {
        if (self->cancelled_ || self->finished_ || self->session_->closed()) return;
        if (!self->wrote_since_keep_alive_) self->session_->stream_write(sse::keep_alive);
        self->wrote_since_keep_alive_ = false;
        self->arm_keep_alive();
      });
    });
  }

  /// Reads every stream, feeds the transcriber, submits what it asks next,
  /// sends what became final; answers once it is done.
  void step() {
    wake_posted_.store(false, std::memory_order_release);
    if (cancelled_ || finished_ || session_->closed()) return;
    for (auto it = streams_.begin(); it != streams_.end();) {
      bool ended = false;
      while (std::optional<StreamChunk> chunk = it->second.try_next()) {
        p_.transcriber->on_chunk(it->first, *chunk);
        if (chunk->finished()) {
          ended = true;
          break;
        }
      }
      it = ended ? streams_.erase(it) : std::next(it);
    }
    if (p_.transcriber->failed()) return fail();
    submit_jobs();
    if (p_.streaming) send_deltas();
    if (p_.transcriber->done()) finish();
  }

  /// Hands each new window job to a work thread, which builds its request
  /// (the window's log-mel is computed there, never on an I/O thread) and
  /// submits it; the stream comes back to the strand (attach_stream).
  void submit_jobs() {
    for (asr::WindowJob& job : p_.transcriber->take_jobs()) {
      ++submitting_;
      // The work thread touches only what never changes: the engine, the model, the samples.
      boost::asio::post(work_, [self = shared_from_this(), engine = p_.engine, model = p_.model,
                                samples = p_.transcriber->samples(), audio_cache = audio_cache_,
                                draining = server_draining_,
                                request_id = session_->exchange().request_id,
                                task = p_.translation ? Task::translation : Task::asr, job = std::move(job)] {
        std::optional<ResponseStream> stream;
        std::optional<ApiError> refused;
        try {
          stream = submit_or_explain(*engine, whisper_window_request(*model, job, *samples, task, audio_cache.get()),
                                     draining());
        } catch (const ApiError& error) {
          refused = error;
        } catch (const izwi::invalid_argument& error) {
          refused = openai::bad_request_from(error);
        } catch (const std::exception& error) {
          log_line("izwi-server: request " + request_id + ": a window could not be submitted: " + error.what());
          refused = ApiError::internal();
        }
        boost::asio::post(self->session_->get_executor(),
                          [self, id = job.id, stream = std::move(stream), refused = std::move(refused)]() mutable {
                            self->session_->run_guarded([&] { self->attach_stream(id, std::move(stream), refused); });
                          });
      });
    }
  }

  /// The next piece of the VAD pass on a work thread; its regions come back
  /// to the strand (take_vad_regions), which asks for the piece after.
  void run_vad_piece() {
    boost::asio::post(work_, [self = shared_from_this(), pass = p_.vad_pass] {
      std::vector<audio::AudioChunk> regions;
      bool finished = false;
      std::optional<std::string> error;
      try {
        regions = pass->advance(finished);
      } catch (const std::exception& e) {
        error = e.what();
      }
      boost::asio::post(self->session_->get_executor(), [self, regions = std::move(regions), finished, error] {
        self->session_->run_guarded([&] { self->take_vad_regions(regions, finished, error); });
      });
    });
  }

  /// On the strand: regions the VAD pass found final. A job cancelled or
  /// answered meanwhile ends the pass here.
  void take_vad_regions(const std::vector<audio::AudioChunk>& regions, bool finished,
                        const std::optional<std::string>& error) {
    if (cancelled_ || finished_ || session_->closed()) return;
    if (error) {
      log_line("izwi-server: request " + session_->exchange().request_id + ": the VAD pass failed: " + *error);
      return fail(ApiError::internal());
    }
    p_.transcriber->add_regions(regions);
    if (finished) {
      p_.transcriber->close_regions();
      p_.vad_pass.reset();
    } else {
      run_vad_piece();
    }
    step();
  }

  /// On the strand: a submitted window's stream, or why it was refused.
  void attach_stream(std::uint64_t id, std::optional<ResponseStream> stream, const std::optional<ApiError>& refused) {
    --submitting_;
    // Cancelled or answered meanwhile: the stream dies here, which aborts its request.
    if (cancelled_ || finished_ || session_->closed()) return;
    if (refused) return fail(*refused);
    auto executor = session_->get_executor();
    std::weak_ptr<TranscriptionJob> weak = weak_from_this();
    stream->on_ready([weak, executor] {
      // The engine's thread: only wake the strand, once per batch of chunks.
      auto self = weak.lock();
      if (!self || self->wake_posted_.exchange(true, std::memory_order_acq_rel)) return;
      boost::asio::post(executor, [self] { self->session_->run_guarded([&] { self->step(); }); });
    });
    streams_.emplace(id, std::move(*stream));
  }

  boost::json::array logprobs_json(std::span<const asr::TokenLogprob> tokens) const {
    std::vector<openai::TokenLogprob> named;
    named.reserve(tokens.size());
    for (const asr::TokenLogprob& t : tokens) named.push_back({p_.engine->token_bytes(t.token), t.logprob});
    return openai::transcription_logprobs_json(named);
  }

  void send_deltas() {
    std::string out;
    while (std::optional<asr::TextDelta> delta = p_.transcriber->take_delta()) {
      boost::json::array lps;
      if (p_.logprobs) lps = logprobs_json(delta->logprobs);
      sse::append_data(out, boost::json::serialize(
                                openai::transcript_delta_event(delta->text, p_.logprobs ? &lps : nullptr)));
    }
    if (!out.empty()) {
      session_->stream_write(out);
      wrote_since_keep_alive_ = true;
    }
  }

  void finish() {
    finished_ = true;
    keep_alive_.cancel();
    asr::Transcription result = p_.transcriber->result();
    if (p_.granularities.word && !p_.streaming) return align_words_then_answer(std::move(result));
    answer(result);
  }

  /// timestamp_granularities[]=word: each window is encoded again and its
  /// tokens aligned (asr::word_timestamps) on a work thread, never on the
  /// strand; the answer follows on the strand.
  void align_words_then_answer(asr::Transcription result) {
    boost::asio::post(work_, [self = shared_from_this(), result = std::move(result), model = p_.model,
                              samples = p_.transcriber->samples(), translate = p_.translation]() mutable {
      std::optional<std::vector<asr::Word>> words;
      try {
        words = asr::word_timestamps(*model, *samples, result, translate);
      } catch (const std::exception& error) {
        log_line("izwi-server: request " + self->session_->exchange().request_id +
                 ": word timestamps failed: " + error.what());
      }
      boost::asio::post(self->session_->get_executor(), [self, result = std::move(result), words = std::move(words)] {
        self->session_->run_guarded([&] {
          if (self->cancelled_ || self->session_->closed()) return;
          if (!words) return self->session_->respond(json_response(500, openai::error_json(ApiError::internal())));
          self->answer(result, &*words);
        });
      });
    });
  }

  void answer(const asr::Transcription& result, const std::vector<asr::Word>* words = nullptr) {
    std::optional<boost::json::array> lps;
    if (p_.logprobs) {
      std::vector<asr::TokenLogprob> all;
      for (const asr::Segment& s : result.segments) all.insert(all.end(), s.text_logprobs.begin(), s.text_logprobs.end());
      lps = logprobs_json(all);
    }
    const boost::json::array* logprobs = lps ? &*lps : nullptr;
    if (p_.streaming) {
      boost::json::object done = openai::transcript_done_event(result.text, result.duration, logprobs);
      // izwi's extension: a stream asked for as verbose_json ends with its
      // language, duration and timestamped segments, which deltas cannot carry.
      if (p_.format == openai::TranscriptionFormat::verbose_json) {
        const boost::json::object verbose =
            openai::verbose_transcription_json(result, p_.translation, openai::VerboseContents{true, nullptr});
        for (const char* key : {"language", "duration", "segments"})
          if (const boost::json::value* v = verbose.if_contains(key)) done[key] = *v;
      }
      session_->stream_write(sse::data(boost::json::serialize(done)));
      session_->end_stream();
      return;
    }
    const std::string body =
        openai::transcription_body(result, p_.format, p_.translation,
                                   p_.format == openai::TranscriptionFormat::json ? logprobs : nullptr,
                                   openai::VerboseContents{p_.granularities.segment, words});
    session_->respond(text_response(200, body, openai::content_type(p_.format)));
  }

  /// The transcriber failed (an engine abort or error), or a submit was refused.
  void fail(std::optional<ApiError> refused = std::nullopt) {
    finished_ = true;
    keep_alive_.cancel();
    streams_.clear();
    ApiError error = refused ? *refused : ApiError::internal();
    if (!refused) {
      if (p_.transcriber->failure_reason() == FinishReason::abort) {
        error = ApiError::unavailable("The request was aborted: the model is shutting down.");
      } else {
        log_line("izwi-server: request " + session_->exchange().request_id + " failed in the engine: " +
                 p_.transcriber->error());
      }
    }
    if (p_.streaming) {
      // The head is out: the error goes as the stream's last event.
      session_->stream_write(sse::data(boost::json::serialize(openai::error_json(error))));
      session_->end_stream();
      return;
    }
    session_->respond(json_response(error.status, openai::error_json(error)));
  }

  std::shared_ptr<http::Session> session_;
  PreparedTranscription p_;
  std::function<bool()> server_draining_;
  boost::asio::thread_pool::executor_type work_;     // builds and submits window requests
  std::map<std::uint64_t, ResponseStream> streams_;  // job id -> its engine stream
  // The windows' audio inputs, shared by their probe, decodes and beam rounds.
  std::shared_ptr<WindowAudioCache> audio_cache_ = std::make_shared<WindowAudioCache>();
  std::size_t submitting_ = 0;                       // jobs on a work thread, stream not back yet
  boost::asio::steady_timer keep_alive_;             // streaming: ": ping" while no text goes out
  bool wrote_since_keep_alive_ = false;
  bool finished_ = false;
  bool cancelled_ = false;
  std::atomic<bool> wake_posted_{false};
};

/// The decode problem as the client's error: 413 over the duration limit
/// (found from the header, before decoding), 400 naming the problem otherwise.
[[noreturn]] inline void throw_decode_error(const audio::DecodeError& error) {
  if (error.problem() == audio::DecodeProblem::too_long)
    throw ApiError(413, "invalid_request_error", std::string("The audio file is too long: ") + error.what(), "file");
  throw ApiError::bad_request(std::string("Could not decode the audio file (") +
                                  std::string(audio::to_string(error.problem())) + "): " +
                                  openai::sanitize_utf8(error.what()),
                              "file");
}

/// Digital silence (every sample below −70 dBFS): no model is asked to
/// transcribe it; the answer is empty text.
inline bool is_silent(std::span<const float> samples) {
  constexpr float quiet = 3.1623e-4f;  // 10^(−70/20)
  return std::all_of(samples.begin(), samples.end(), [](float x) { return std::fabs(x) < quiet; });
}

/// The model's own language rules: English-only models take "en" only;
/// multilingual ones the codes their vocabulary has (large-v3 adds "yue").
inline void check_language_for_model(const Whisper& model, const std::string& language, const std::string& name) {
  const auto& special = model.special_tokens();
  if (!special.multilingual) {
    if (language != "en")
      throw ApiError::bad_request("The model `" + name + "` is English-only; language '" + language +
                                      "' needs a multilingual model.",
                                  "language");
    return;
  }
  if (!special.language_token(language))
    throw ApiError::bad_request("The model `" + name + "` has no language '" + language +
                                    "'; valid codes: " + special.language_list() + ".",
                                "language");
}

}  // namespace detail

IZWI_DECL detail::PreparedTranscription Server::prepare_transcription(const std::string& content_type,
                                                                   const std::string& body, Task task) {
  const bool translation = task == Task::translation;
  const multipart::FormData form = multipart::parse_form_data(content_type, body);
  openai::TranscriptionRequest parsed = openai::parse_transcription_request(form, translation);
  std::shared_ptr<AnyEngine> engine = resolve_model(parsed.model, task);
  const Whisper* model = engine->whisper_model();
  if (model == nullptr || model->tokenizer() == nullptr)
    throw ApiError::bad_request("The model `" + parsed.model + "` does not serve " +
                                    std::string(detail::task_words(task)) + ".",
                                "model");
  if (parsed.language) detail::check_language_for_model(*model, *parsed.language, parsed.model);

  audio::DecodeOptions decode_options;
  decode_options.mono = true;
  decode_options.target_sample_rate = asr::sample_rate;
  decode_options.max_duration_seconds = config_.max_audio_seconds;
  std::shared_ptr<std::vector<float>> samples;
  try {
    samples = std::make_shared<std::vector<float>>(std::move(audio::decode(parsed.file, decode_options).audio.samples));
  } catch (const audio::DecodeError& error) {
    detail::throw_decode_error(error);
  } catch (const audio::AudioError& error) {
    throw ApiError::bad_request("Could not decode the audio file: " + openai::sanitize_utf8(error.what()), "file");
  }

  asr::TranscriptionOptions options;
  options.language = parsed.language;
  options.translate = translation;
  options.temperature = parsed.temperature;
  options.beam_size = parsed.beam_size;
  options.best_of = parsed.best_of;
  options.temperature_increment = parsed.temperature_increment;
  options.timestamps = parsed.timestamps;
  options.text_context = model->config().n_text_ctx;
  options.multilingual = model->special_tokens().multilingual;
  // The fallback's sampled decodes are seeded: the same upload gives the
  // same text (openai-whisper's are as reproducible as torch's RNG state).
  options.seed = 0;
  if (const std::string_view prompt = openai::detail::trimmed(parsed.prompt); !prompt.empty())
    options.initial_prompt = model->tokenizer()->encode(" " + std::string(prompt));  // as openai-whisper
  std::vector<audio::AudioChunk> regions;
  std::shared_ptr<detail::VadPass> vad_pass;
  if (detail::is_silent(*samples)) {
    regions.push_back({0, 0});  // nothing to hear: empty text, whatever the model would make of it
  } else if (parsed.vad && vad_ && samples->size() > asr::samples_per_window) {
    // Silero runs beside the decoding (detail::VadPass); the options are checked here.
    vad_pass = std::make_shared<detail::VadPass>(*vad_, samples, *parsed.vad);
  } else if (parsed.vad) {
    std::vector<float> probabilities;
    if (vad_) probabilities = vad_->speech_probabilities(*samples);
    regions = asr::plan_vad_regions(*samples, probabilities, *parsed.vad);
    if (regions.empty()) regions.push_back({0, 0});  // no speech anywhere: empty text
  }
  detail::PreparedTranscription out;
  out.transcriber = vad_pass ? std::make_unique<asr::Transcriber>(*model->tokenizer(), std::move(samples),
                                                                  std::move(options), asr::Transcriber::regions_to_come)
                             : std::make_unique<asr::Transcriber>(*model->tokenizer(), std::move(samples),
                                                                  std::move(options), std::move(regions));
  out.vad_pass = std::move(vad_pass);
  out.format = parsed.response_format;
  out.translation = translation;
  out.streaming = parsed.stream;
  out.logprobs = parsed.logprobs;
  out.granularities = parsed.granularities;
  out.model = model;
  out.engine = std::move(engine);
  return out;
}

IZWI_DECL void Server::transcribe(HandlerContext& ctx, Task task) {
  // Parsing the form, decoding the audio and running the VAD take
  // milliseconds to seconds: on the preparation threads, as chat prompts.
  // No model serves the task at all: say so before looking into the upload.
  if (loaded_model_names(task) == "none") audio_unavailable(ctx, task);
  prepare_then_start(
      ctx, "to be prepared",
      [this, task, content_type = std::string(ctx.request[boost::beast::http::field::content_type]),
       body = std::move(ctx.request.body())] { return prepare_transcription(content_type, body, task); },
      [this](const std::shared_ptr<http::Session>& session, detail::PreparedTranscription prepared) {
        auto job = std::make_shared<detail::TranscriptionJob>(session, std::move(prepared),
                                                              [this] { return draining(); }, work_executor());
        job->start();  // a client already gone cancels it at once
      });
}

}  // namespace izwi::server
