#pragma once
// Long-form Whisper transcription as a state machine over engine requests.
//
// openai-whisper's transcribe() decodes one 30-s window at a time and waits
// for each; here the same algorithm is a Transcriber that hands out window
// jobs (a language/no-speech probe, a decode at some temperature) and takes
// back the engine's chunks for them. The driver — the server's
// TranscriptionJob, or a test's fake engine — turns jobs into engine
// requests (izwi::make_whisper_request / make_whisper_language_probe) and
// feeds the chunks back; nothing here blocks or knows about threads, so every
// window of every concurrent transcription can sit in one engine batch.
//
//   asr::Transcriber t(tokenizer, samples, options, regions);
//   while (!t.done()) {
//     for (asr::WindowJob& job : t.take_jobs()) submit(job);      // probe or decode
//     on each chunk of job j:  t.on_chunk(j, chunk);              // in any order across jobs
//     while (auto d = t.take_delta()) send(d->text);              // streamed text, in audio order
//   }
//   asr::Transcription result = t.result();
//
// The algorithm (openai-whisper's transcribe(), segment timestamps only):
//   * Regions: the whole audio (sequential mode), or the speech chunks of a
//     VAD split (plan_vad_regions), each at most 30 s. Regions are decoded
//     independently and at the same time; segments are stitched by offset.
//   * Per region, a window at `seek` (mel frames, 100 per second): a probe
//     (the most probable language and the <|nospeech|> probability at
//     <|startoftranscript|>), then decodes with temperature fallback: 0.0,
//     0.2, …, 1.0 while the compression ratio of the text (zlib) is above 2.4
//     or the average log-probability below −1.0 — unless the window is
//     silence (no-speech probability above 0.6 with the log-probability below
//     −1.0), which is skipped.
//   * Decoding strategies as openai-whisper's: at temperature 0 a beam search
//     when beam_size > 1 (izwi::BeamSearcher: each round is one single-token
//     job per live beam, its tokens continued after the decoder prompt, all
//     handed out together so the engine batches them); above 0, best_of
//     sampled decodes at once, the most likely (sum_logprob / length) kept.
//     Either way the fallback judges the chosen decode.
//   * Segments come from pairs of timestamp tokens; the window advances to
//     the last timestamp (or by the whole window when the text ends with a
//     single timestamp or has none), the previous text (up to 224 tokens)
//     becomes the next window's prompt, reset after a window decoded above
//     temperature 0.5.
//   * Language detection (no language given, multilingual model): the probe
//     of the first region's first window decides it for the whole file.
//     English-only models are probed for the no-speech probability only.
//
// Differences from openai-whisper, on purpose: the no-speech probability
// comes from the probe (a decoder prompt without the previous text); a
// window whose timestamps would not move `seek` advances by the whole
// window (random-weight models produce such windows; the reference would
// loop); segment times past the window's audio are clamped to its end; each
// window's log-mel is computed from its own samples.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "izwi/audio/splitter.hpp"
#include "izwi/core/ids.hpp"
#include "izwi/engine/output.hpp"
#include "izwi/tokenizer/whisper_tokenizer.hpp"

namespace izwi::asr {

/// Whisper's fixed framing at 16 kHz.
inline constexpr std::size_t sample_rate = 16000;
inline constexpr std::size_t samples_per_frame = 160;        ///< mel hop: 100 frames per second
inline constexpr std::size_t frames_per_window = 3000;       ///< 30 s
inline constexpr std::size_t samples_per_window = 480000;
inline constexpr std::size_t max_prompt_tokens = 224;        ///< n_text_ctx / 2

struct TranscriptionOptions {
  /// Language code ("en"); nullopt: detected from the first window (multilingual models).
  std::optional<std::string> language;
  /// Translate to English instead of transcribing.
  bool translate = false;
  /// The client's prompt, already tokenized (placed after <|startofprev|>).
  std::vector<TokenId> initial_prompt;
  /// The first decoding temperature; the fallback climbs from it to 1.0 in
  /// steps of `temperature_increment` (0: no fallback).
  float temperature = 0.0f;
  float temperature_increment = 0.2f;
  double compression_ratio_threshold = 2.4;
  double logprob_threshold = -1.0;
  double no_speech_threshold = 0.6;
  bool condition_on_previous_text = true;
  /// false: openai-whisper's without_timestamps (whisper.cpp's
  /// no_timestamps): each window is decoded after <|notimestamps|> as one
  /// segment spanning it, and the next window starts where it ends.
  bool timestamps = true;
  /// Tokens generated per window at most.
  std::uint32_t max_tokens_per_window = 224;
  /// Seed of the sampled (temperature > 0) decodes; unset: the engine draws.
  std::optional<std::uint64_t> seed;
  /// Beam width of the temperature-0 decodes (openai-whisper's beam_size; 1: greedy).
  std::size_t beam_size = 1;
  /// Sampled decodes per temperature above 0, the most likely kept (best_of; 1: one).
  std::size_t best_of = 1;
  /// Ranking of beams and best_of samples: unset, sum_logprob / length; set,
  /// sum_logprob / ((5 + length) / 6)^length_penalty.
  std::optional<double> length_penalty;
  /// Beam search ends once round(beam_size × patience) hypotheses have.
  double patience = 1.0;
  /// The decoder's context (n_text_ctx): a beam's prompt and tokens stay inside it.
  std::size_t text_context = 448;
  /// Whether the model has language tokens (languages are detected only then).
  bool multilingual = true;
  /// Probe every window before decoding it (its no-speech probability; the
  /// first one's language). false: no-speech probability 0, and a language
  /// must be given (or the model be English-only).
  bool probe_windows = true;

  /// The temperatures tried, in order.
  std::vector<float> temperatures() const;
};

/// What the driver must run for the Transcriber.
struct WindowJob {
  enum class Kind : std::uint8_t {
    /// make_whisper_language_probe over the window: one token, logprobs[0]
    /// holds the language and, last in .top, <|nospeech|>.
    language_probe,
    /// make_whisper_request over the window with the prompt options below.
    decode,
  };
  std::uint64_t id = 0;
  Kind kind = Kind::decode;
  /// The window's samples [begin, end) in the transcriber's audio (≤ 30 s).
  std::size_t begin = 0, end = 0;
  // decode only:
  std::optional<std::string> language;
  bool translate = false;
  bool timestamps = true;                ///< false: <|notimestamps|> in the prompt
  std::vector<TokenId> previous_tokens;  ///< after <|startofprev|>
  float temperature = 0.0f;
  std::uint32_t max_tokens = 224;
  std::optional<std::uint64_t> seed;
  /// A beam-search round: the beam's tokens so far, continued after the
  /// decoder prompt (max_tokens is then 1, temperature 0).
  std::vector<TokenId> continuation;
  /// Top log-probabilities each generated token must carry (a beam round:
  /// beam_size + 1); 0: none.
  std::uint32_t top_logprobs = 0;
};

/// One generated text token and its log-probability (include[]=logprobs).
struct TokenLogprob {
  TokenId token = 0;
  float logprob = 0.0f;
};

/// A transcribed segment, as openai-whisper's verbose output has it.
struct Segment {
  std::size_t id = 0;
  std::size_t seek = 0;  ///< the window's start, in mel frames from the start of the audio
  double start = 0, end = 0;
  std::string text;
  std::vector<TokenId> tokens;  ///< text and timestamp tokens
  float temperature = 0.0f;
  double avg_logprob = 0;
  double compression_ratio = 0;
  double no_speech_prob = 0;
  std::vector<TokenLogprob> text_logprobs;  ///< the text tokens' log-probabilities
};

/// A word and its time (timestamp_granularities[]=word; word_timestamps.hpp).
struct Word {
  std::string word;  ///< without its leading space, as OpenAI's verbose_json gives it
  double start = 0, end = 0;
  double probability = 0;
};

struct Transcription {
  std::string language;              ///< code; the detected one when none was given
  double language_probability = 0;   ///< when detected (else 0)
  double duration = 0;               ///< seconds of audio
  std::string text;                  ///< segments' text joined, leading whitespace removed
  std::vector<Segment> segments;
  std::size_t windows_decoded = 0;   ///< decodes judged (fallbacks included; a beam search or a best_of group is one)
};

/// Text that became final, in audio order.
struct TextDelta {
  std::string text;
  std::vector<TokenLogprob> logprobs;
};

class Transcriber {
 public:
  /// Tag: the regions come later (add_regions), as a VAD pass finds them.
  struct RegionsToCome {};
  static constexpr RegionsToCome regions_to_come{};

  /// `samples_16k`: the whole audio (16 kHz mono), shared with the jobs'
  /// requests. `regions`: the parts to decode (plan_vad_regions); empty: the
  /// whole audio as one region (the sequential algorithm). Throws
  /// izwi::invalid_argument for an unknown language, a region out of range,
  /// or a beam_size / best_of of 0 (or a beam_size above 19).
  Transcriber(const tokenizer::WhisperTokenizer& tokenizer, std::shared_ptr<const std::vector<float>> samples_16k,
              TranscriptionOptions options, std::vector<audio::AudioChunk> regions = {});
  /// No region yet: add_regions() hands them over as they are planned
  /// (asr::VadRegionPlanner), close_regions() says there are no more. Each
  /// region's windows start as soon as it is added; text is still streamed
  /// in audio order. Throws as the constructor above.
  Transcriber(const tokenizer::WhisperTokenizer& tokenizer, std::shared_ptr<const std::vector<float>> samples_16k,
              TranscriptionOptions options, RegionsToCome);
  Transcriber(const Transcriber&) = delete;
  Transcriber& operator=(const Transcriber&) = delete;
  ~Transcriber();

  /// Jobs to submit now (each exactly once).
  std::vector<WindowJob> take_jobs();
  /// A chunk of job `job_id`'s output (in order within the job). Unknown ids
  /// are ignored. A job that ends with abort or error fails the transcription.
  void on_chunk(std::uint64_t job_id, const StreamChunk& chunk);

  /// Regions after the last one (a regions_to_come transcriber). Throws
  /// izwi::invalid_argument for a region outside the audio, before the end
  /// of the last one, or after close_regions(); then none is added.
  void add_regions(std::span<const audio::AudioChunk> regions);
  /// No more regions; with none added at all the transcription is empty text.
  void close_regions() noexcept;

  /// Every region is given and decoded (or the transcription failed).
  bool done() const noexcept;
  bool failed() const noexcept { return !error_.empty(); }
  /// Why it failed ("the engine aborted a window", the engine's error).
  const std::string& error() const noexcept { return error_; }
  /// The job whose failure failed it, with its finish reason (abort tells a shutdown).
  std::optional<FinishReason> failure_reason() const noexcept { return failure_reason_; }

  /// Text finalized since the last call, in audio order; nullopt when none.
  std::optional<TextDelta> take_delta();
  /// The transcription so far (all of it once done()).
  Transcription result() const;
  /// Jobs handed out and not yet finished.
  std::size_t jobs_in_flight() const noexcept;

  std::shared_ptr<const std::vector<float>> samples() const noexcept { return samples_; }

 private:
  struct Region;
  struct PendingJob;
  struct DecodedWindow;
  void start_window(Region& region);
  void submit_decode(Region& region);
  WindowJob& push_job(Region& region, WindowJob::Kind kind, std::size_t slot);
  void submit_beam_round(Region& region);
  void finish_probe(PendingJob& job, const StreamChunk& last);
  void finish_decode(PendingJob& job);
  void judge_window(Region& region, DecodedWindow decoded);
  void accept_window(Region& region, const DecodedWindow& decoded, double avg_logprob, double compression_ratio);
  void language_known();
  void fail(std::string why, FinishReason reason);

  const tokenizer::WhisperTokenizer* tokenizer_;
  std::shared_ptr<const std::vector<float>> samples_;
  TranscriptionOptions options_;
  std::vector<float> temperatures_;
  std::vector<std::unique_ptr<Region>> regions_;
  std::vector<std::unique_ptr<PendingJob>> in_flight_;
  std::vector<WindowJob> ready_;
  std::uint64_t next_job_id_ = 1;
  std::optional<std::string> language_;
  double language_probability_ = 0;
  std::size_t windows_decoded_ = 0;
  std::size_t emitted_region_ = 0, emitted_segment_ = 0;
  bool emitted_any_text_ = false;
  bool regions_closed_ = false;
  std::string error_;
  std::optional<FinishReason> failure_reason_;
};

/// openai-whisper's compression ratio: bytes of `text` over bytes of its
/// zlib compression (default level); 0 for empty text.
double compression_ratio(std::string_view text);

}  // namespace izwi::asr

#include "izwi/asr/impl/transcriber.hpp"
