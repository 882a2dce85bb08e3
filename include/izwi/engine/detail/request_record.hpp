#pragma once
// What the engine keeps per request besides the scheduler's state: where its
// output goes, what it produced, its stop conditions and its timings.

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "izwi/concepts/executor.hpp"
#include "izwi/core/ids.hpp"
#include "izwi/core/request.hpp"
#include "izwi/core/sampling_params.hpp"
#include "izwi/engine/output.hpp"
#include "izwi/engine/stream.hpp"

namespace izwi::detail {

/// Stand-in for executors that do not detokenize: produces no text.
struct NoDetokenizer {
  std::string_view append(TokenId) noexcept { return {}; }
  std::string_view flush() noexcept { return {}; }
};

/// The largest offset <= `at` that starts a UTF-8 character of `text` (or is
/// its end). Text held back for a possible stop string is released only up
/// to such a boundary, so no chunk ends inside a character: the detokenizer
/// already produced valid UTF-8, and a chunk cut mid-character would be
/// "repaired" into U+FFFD by whoever reads it.
inline std::size_t utf8_boundary_at_or_before(std::string_view text, std::size_t at) noexcept {
  if (at >= text.size()) return text.size();
  while (at > 0 && (static_cast<unsigned char>(text[at]) & 0xC0u) == 0x80u) --at;
  return at;
}

template <class E>
struct detokenizer_of_impl {
  using type = NoDetokenizer;
};
template <HasDetokenizer E>
struct detokenizer_of_impl<E> {
  using type = std::remove_cvref_t<decltype(std::declval<const E&>().make_detokenizer())>;
};
template <class E>
using detokenizer_of = typename detokenizer_of_impl<E>::type;

/// A detokenizer that can spell one token alone (logprobs' bytes).
template <class D>
concept SpellsTokens = requires(const D& d, TokenId id) {
  { d.token_bytes(id) } -> std::convertible_to<std::string_view>;
};

/// The logprobs of one sampled token, with the bytes of it and of its top
/// alternatives when the detokenizer can spell them.
template <class Detokenizer>
TokenLogprobs spelled_logprobs(const Detokenizer& detokenizer, TokenId token, float logprob,
                               std::span<const TokenLogprob> top) {
  TokenLogprobs out{token, logprob, {top.begin(), top.end()}, {}, {}};
  if constexpr (SpellsTokens<Detokenizer>) {
    // Converted inside each full expression: token_bytes may return a temporary string.
    out.bytes.assign(std::string_view(detokenizer.token_bytes(token)));
    out.top_bytes.reserve(top.size());
    for (const TokenLogprob& alt : top) out.top_bytes.emplace_back(std::string_view(detokenizer.token_bytes(alt.token)));
  }
  return out;
}

/// Where a blocking generate() waits for its output.
class CompletionSlot {
 public:
  void fulfil(RequestOutput output) {
    {
      std::lock_guard lock(mutex_);
      output_ = std::move(output);
    }
    ready_.notify_all();
  }
  bool ready() const {
    std::lock_guard lock(mutex_);
    return output_.has_value();
  }
  RequestOutput wait() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return output_.has_value(); });
    return std::move(*output_);
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::optional<RequestOutput> output_;
};

template <class Detokenizer>
struct RequestRecord {
  RequestId id = 0;
  Task task = Task::completion;
  std::size_t num_prompt_tokens = 0;
  /// Stop conditions and output options of the request.
  SamplingParams sampling;
  /// max_tokens, further capped by the context limit.
  std::size_t max_output_tokens = 0;
  /// Longest stop string, minus one: text that might still become a stop
  /// string is held back from streaming until it cannot.
  std::size_t stop_hold_back = 0;

  // Where output goes: exactly one of stream, waiter, or neither (polled by step()).
  std::shared_ptr<StreamChannel> stream;
  std::shared_ptr<CompletionSlot> waiter;
  bool paused = false;

  Detokenizer detokenizer{};
  std::vector<TokenId> output_tokens;
  std::vector<TokenLogprobs> logprobs;
  std::string text;
  std::size_t text_delivered = 0;
  std::vector<float> audio;
  std::uint32_t audio_sample_rate = 0;
  std::optional<TokenId> stop_token;
  std::optional<std::string> stop_string;
  /// Why the request ended with FinishReason::error (an engine fault, a
  /// non-finite forward pass); empty otherwise.
  std::string error;

  // What this step produced, not yet delivered (streams and polling).
  std::size_t tokens_delivered = 0;
  std::size_t logprobs_delivered = 0;
  std::size_t audio_delivered = 0;

  TimePoint arrival{};
  TimePoint first_scheduled{};
  TimePoint first_token{};
  TimePoint last_token{};
  TimePoint first_audio{};
  bool scheduled = false;
  std::uint32_t num_preemptions = 0;
  bool finished = false;
  FinishReason finish_reason = FinishReason::stop;

  bool wants_chunks() const noexcept { return waiter == nullptr; }

  RequestStats stats(TimePoint now) const {
    RequestStats s;
    s.num_prompt_tokens = num_prompt_tokens;
    s.num_output_tokens = output_tokens.size();
    s.num_preemptions = num_preemptions;
    if (scheduled) s.queue_time = seconds_between(arrival, first_scheduled);
    if (!output_tokens.empty()) {
      s.time_to_first_token = seconds_between(arrival, first_token);
      const double decode_seconds = seconds_between(first_token, last_token);
      if (output_tokens.size() > 1 && decode_seconds > 0)
        s.decode_tokens_per_second = static_cast<double>(output_tokens.size() - 1) / decode_seconds;
    }
    s.e2e_latency = seconds_between(arrival, now);
    if (audio_sample_rate > 0 && !audio.empty()) {
      s.output_audio_seconds = static_cast<double>(audio.size()) / audio_sample_rate;
      const double processing = scheduled ? seconds_between(first_scheduled, now) : s.e2e_latency;
      s.real_time_factor = processing / s.output_audio_seconds;
      s.time_to_first_audio = seconds_between(arrival, first_audio);
    }
    return s;
  }

  /// Everything produced since the last chunk. Text held back for a possible
  /// stop string stays back unless the request finished.
  StreamChunk take_chunk() {
    StreamChunk chunk;
    chunk.id = id;
    chunk.token_ids.assign(output_tokens.begin() + static_cast<std::ptrdiff_t>(tokens_delivered), output_tokens.end());
    tokens_delivered = output_tokens.size();
    chunk.logprobs.assign(logprobs.begin() + static_cast<std::ptrdiff_t>(logprobs_delivered), logprobs.end());
    logprobs_delivered = logprobs.size();
    chunk.audio.assign(audio.begin() + static_cast<std::ptrdiff_t>(audio_delivered), audio.end());
    audio_delivered = audio.size();
    chunk.audio_sample_rate = audio_sample_rate;
    const std::size_t deliverable =
        finished ? text.size()
                 : utf8_boundary_at_or_before(text, text.size() > stop_hold_back ? text.size() - stop_hold_back : 0);
    if (deliverable > text_delivered) {
      chunk.text = text.substr(text_delivered, deliverable - text_delivered);
      text_delivered = deliverable;
    }
    if (finished) {
      chunk.finish_reason = finish_reason;
      chunk.error = error;
    }
    return chunk;
  }

  RequestOutput take_output(TimePoint now) {
    RequestOutput out;
    out.stats = stats(now);  // before the moves below empty the vectors it reads
    out.id = id;
    out.token_ids = std::move(output_tokens);
    out.text = std::move(text);
    out.logprobs = std::move(logprobs);
    out.audio = std::move(audio);
    out.audio_sample_rate = audio_sample_rate;
    out.finish_reason = finish_reason;
    out.stop_token = stop_token;
    out.stop_string = std::move(stop_string);
    out.error = std::move(error);
    return out;
  }
};

}  // namespace izwi::detail
