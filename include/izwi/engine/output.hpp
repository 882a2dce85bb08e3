#pragma once
// What an engine hands back: streamed chunks while a request runs, and the
// complete output when it finishes, with per-request statistics.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "izwi/core/ids.hpp"
#include "izwi/core/request.hpp"
#include "izwi/core/step.hpp"

namespace izwi {

/// Log-probability of one generated token and its top alternatives.
struct TokenLogprobs {
  TokenId token = -1;
  float logprob = 0.0f;
  std::vector<TokenLogprob> top;
  /// The bytes `token` stands for, and those of each `top` entry in order
  /// (a token may hold part of a UTF-8 sequence). Filled by the engine, which
  /// owns the tokenizer, when its executor's detokenizer spells single tokens
  /// (`d.token_bytes(id)`); empty otherwise. They spare a consumer one lookup
  /// per token (the server's logprobs "token" and "bytes").
  std::string bytes;
  std::vector<std::string> top_bytes;
};

/// Timings and counts of one request, all in seconds. A time that did not
/// happen (no token generated) is 0.
struct RequestStats {
  std::size_t num_prompt_tokens = 0;
  std::size_t num_output_tokens = 0;
  std::uint32_t num_preemptions = 0;
  /// Arrival to first scheduled (the queue wait).
  double queue_time = 0.0;
  /// Arrival to first generated token.
  double time_to_first_token = 0.0;
  /// Arrival to finish.
  double e2e_latency = 0.0;
  /// Output tokens after the first, per second between first and last token.
  double decode_tokens_per_second = 0.0;
  /// Seconds of audio the request produced (audio-output models), and the
  /// real-time factor: processing time (first scheduled to finish) / audio seconds.
  /// Below 1 means faster than real time; 0 when no audio was produced.
  double output_audio_seconds = 0.0;
  double real_time_factor = 0.0;
  /// Arrival to the first audio samples (audio-output models; 0 when none).
  double time_to_first_audio = 0.0;
};

/// One piece of a streamed response: what the request produced since the last chunk.
struct StreamChunk {
  RequestId id = 0;
  std::vector<TokenId> token_ids;
  /// Text those tokens completed (empty when the executor does not detokenize).
  /// Text that might be the start of a stop string is held back until it is not.
  std::string text;
  /// One entry per token when the request asked for logprobs.
  std::vector<TokenLogprobs> logprobs;
  std::vector<float> audio;
  std::uint32_t audio_sample_rate = 0;
  /// Set on the last chunk of the request, and only there.
  std::optional<FinishReason> finish_reason;
  /// Set on the last chunk.
  std::optional<RequestStats> stats;
  /// On the last chunk of a request that ended with FinishReason::error: why
  /// (the engine's fault message, e.g. "the model produced non-finite logits").
  std::string error;

  bool finished() const noexcept { return finish_reason.has_value(); }
};

/// The complete result of a request.
struct RequestOutput {
  RequestId id = 0;
  std::vector<TokenId> token_ids;
  std::string text;
  std::vector<TokenLogprobs> logprobs;
  std::vector<float> audio;
  std::uint32_t audio_sample_rate = 0;
  FinishReason finish_reason = FinishReason::stop;
  /// The stop token id or stop string that ended the request, when one did.
  std::optional<TokenId> stop_token;
  std::optional<std::string> stop_string;
  /// Why the request ended with FinishReason::error; empty otherwise.
  std::string error;
  RequestStats stats;
};

}  // namespace izwi
