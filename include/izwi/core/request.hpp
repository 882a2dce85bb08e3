#pragma once
// Request: what a client asks the engine to do, and the states it moves through.
//
//   waiting ──schedule──▶ running ──▶ finished (stop | length | abort | error)
//      ▲                     │
//      └──── preempted ◀─────┘   (blocks freed; recomputed when resumed)

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "izwi/core/hash.hpp"
#include "izwi/core/ids.hpp"
#include "izwi/core/sampling_params.hpp"

namespace izwi {

/// What the request is for. The engine loop is the same for all; the model
/// family decides what the tokens mean.
enum class Task : std::uint8_t { chat, completion, tts, asr, translation };

enum class RequestStatus : std::uint8_t {
  waiting,    ///< queued, holds no KV blocks (or only a prefix-cache hit in flight)
  running,    ///< admitted: holds KV blocks and is scheduled each step
  preempted,  ///< evicted to make room; back in the waiting queue, recomputed on resume
  finished,   ///< see FinishReason
};

enum class FinishReason : std::uint8_t {
  stop,    ///< EOS, a stop token id or a stop string
  length,  ///< max_tokens reached, or the model's context limit
  abort,   ///< cancelled by the client (abort(), disconnect, shutdown)
  error,   ///< the engine could not serve it (e.g. it can never fit in the cache)
};

std::string_view to_string(Task) noexcept;
std::string_view to_string(RequestStatus) noexcept;
/// As OpenAI and vLLM spell it: "stop", "length", "abort", "error".
std::string_view to_string(FinishReason) noexcept;

/// Audio that a request carries into the model (speech to transcribe, a voice
/// prompt). The samples are mono float PCM at `sample_rate`. In the token
/// sequence the audio occupies `placeholder_length` positions starting at
/// `placeholder_offset`; KV blocks that overlap those positions carry the
/// audio's content hash in their prefix-cache key, so two requests share a
/// cached prefix only if they carry the same audio there.
struct AudioInput {
  std::vector<float> samples;
  std::uint32_t sample_rate = 16000;
  std::uint32_t placeholder_offset = 0;
  std::uint32_t placeholder_length = 0;
  /// Content hash of the samples; computed by the engine when left 0.
  std::uint64_t content_hash = 0;
  /// The model's input features of `samples`, computed off the step loop
  /// (a Whisper window's log-mel, [n_mels][3000]: make_whisper_request does
  /// it on the caller's thread); empty: the executor computes them.
  std::vector<float> features;

  double duration_seconds() const noexcept {
    return sample_rate ? static_cast<double>(samples.size()) / sample_rate : 0.0;
  }
};

/// The AudioInput::content_hash of `samples` (never 0, which means "unset").
/// Requests built from the same samples get the same hash, so the engine need
/// not copy an upload to hash it and they share prefix-cache blocks.
inline std::uint64_t audio_content_hash(std::span<const float> samples) noexcept { return hash64(samples) | 1u; }

/// What a speech-generating model reads while it speaks, besides its prompt
/// and SamplingParams (which govern the first code of each frame).
/// Opaque to the engine and scheduler; the executor reads it.
struct SpeechConditioning {
  /// Text ids fed frame by frame: frame k adds the text row of
  /// trailing_text[k], then a pad row once they run out (Qwen3-TTS's
  /// streaming-text mode; empty in its non-streaming mode).
  std::vector<TokenId> trailing_text;
  /// Sampling of the codes after the first in each frame (Qwen3-TTS's code
  /// predictor); temperature 0 is greedy. Draws come from the request's own
  /// generator, so a seed still decides the whole output.
  float sub_code_temperature = 0.9f;
  std::int32_t sub_code_top_k = 50;
  float sub_code_top_p = 1.0f;
  /// Streaming: the first audio is decoded once this many frames exist; each
  /// later window is twice the one before, up to `window_frames` (2, 4, 8,
  /// 8, ... frames by default), and whatever is left is decoded when the
  /// request ends. A short first window reaches the listener soon; doubling
  /// keeps the buffer ahead of playback while the windows grow to the size
  /// that batches well (with 2-then-8, a listener who starts at the first
  /// window runs dry before the third unless a step takes under 20 ms).
  std::uint32_t first_window_frames = 2;
  std::uint32_t window_frames = 8;
  /// Codes the audio continues from ([frames][codebooks]; Qwen3-TTS's
  /// in-context cloning reference): decoded into the codec's state before the
  /// first generated frame, their audio not emitted, as upstream decodes the
  /// reference and generated codes together and cuts the reference's part.
  std::vector<std::int32_t> codec_prefix;
};

/// One request as a client submits it.
struct Request {
  /// 0 asks the engine to assign a fresh id (returned by add_request).
  RequestId id = 0;
  Task task = Task::completion;
  std::vector<TokenId> prompt_tokens;
  /// Shared so that a large upload is not copied as the request moves through queues.
  std::shared_ptr<const AudioInput> audio;
  /// TTS voice name; part of the prefix-cache key.
  std::string voice;
  /// Speech-generating models only (Task::tts); see SpeechConditioning.
  std::shared_ptr<const SpeechConditioning> speech;
  SamplingParams sampling;
  /// Lower value is served sooner (vLLM's convention). Ignored by FCFS.
  std::int32_t priority = 0;
  /// Set by the engine when left at its default.
  TimePoint arrival_time{};
  /// Isolates prefix-cache reuse: only requests with the same salt share cached blocks.
  std::string cache_salt;
};

/// The parts of a request that key its prefix-cache blocks besides the tokens.
/// Derived once, when the request is added (hashing strings per step would be waste).
struct PrefixCacheKeys {
  /// Hash of (cache_salt, voice); mixed into the first block, and so by
  /// chaining into every block after it. 0 when both are empty.
  std::uint64_t root = 0;
  /// Audio content hash and the token positions it occupies (length 0: none).
  std::uint64_t audio_hash = 0;
  std::uint32_t audio_offset = 0;
  std::uint32_t audio_length = 0;
  /// False for sequences whose blocks must never be shared. (Whisper's need
  /// not be: its blocks' keys chain the audio's hash, so a hit is the same
  /// audio and the same decoder prompt.)
  bool cacheable = true;
};

/// What a KV cache needs to know of a sequence: its id, every token known so
/// far (prompt, then generated output), and its prefix-cache keys.
struct SequenceView {
  RequestId id = 0;
  std::span<const TokenId> tokens;
  const PrefixCacheKeys* keys = nullptr;
};

}  // namespace izwi

#include "izwi/core/impl/request.hpp"
