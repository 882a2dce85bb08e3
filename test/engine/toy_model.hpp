#pragma once
// A small deterministic model for exercising the engine: test code, never in include/.
//
// It uses the KV cache the way a real model does: each step it writes one K
// and one V row per scheduled token and layer into the slots the scheduler
// handed out, and to produce the next token it reads the whole context back
// from the cache through the block table. Each K row encodes (token,
// position, layer, head), so a read from the wrong block, a prefix block that
// holds different tokens, or a missed write is detected (corrupt_reads()).
// The next token is a function of the context read back (and, when sampling,
// of the request's own generator) — so the reference output of a prompt can
// be computed without the engine, and any scheduling mistake changes it.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "izwi/concepts/executor.hpp"
#include "izwi/concepts/kv_cache.hpp"
#include "izwi/core/kv_cache_shape.hpp"
#include "izwi/core/random.hpp"
#include "izwi/core/step.hpp"
#include "izwi/executor/sampler.hpp"

namespace izwi::testing {

struct ToyModelConfig {
  std::uint32_t num_layers = 2;
  std::uint32_t num_kv_heads = 2;
  /// Four floats per head row: token, position, layer, head.
  std::uint32_t head_dim = 4;
  TokenId vocab_size = 1000;
  std::vector<TokenId> eos_token_ids;
  std::size_t max_model_len = 0;  // 0: not reported to the engine
  /// Samples of audio emitted per token for Task::tts requests (RTF statistics).
  std::uint32_t audio_samples_per_token = 160;
  std::uint32_t audio_sample_rate = 16000;
  /// Text of a token: one ASCII letter, or (multibyte_text) one of 1- to
  /// 4-byte UTF-8 characters, to test that streamed text is cut only between characters.
  bool multibyte_text = false;
  /// Fault injection. A request whose prompt holds `throw_token` makes
  /// execute() throw after the step's K/V writes (as a fault in the middle of
  /// a forward pass would); one whose prompt holds `nan_token` gets all-NaN
  /// logits, which the real Sampler refuses.
  std::optional<TokenId> throw_token;
  std::optional<TokenId> nan_token;
  /// The detokenizer throws on this generated token: a fault outside the
  /// forward pass, in the engine's output processing.
  std::optional<TokenId> detokenizer_throw_token;
  /// Reported as vocab_size() (the engine then refuses prompt ids past it).
  bool report_vocab_size = false;
  /// A step of more tokens throws izwi::device_memory_exhausted before any
  /// K/V write, as a GPU executor does when its scratch allocation fails; 0: never.
  std::size_t device_memory_step_tokens = 0;
};

/// The model's next-token rule on a context: hash of the tokens; when the
/// request samples (temperature > 0), plus a draw from its generator.
inline TokenId toy_next_token(std::span<const TokenId> context, const SamplingParams& sampling, SequenceRng& rng,
                              TokenId vocab_size) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a over the token values
  for (TokenId t : context) {
    h ^= static_cast<std::uint32_t>(t);
    h *= 1099511628211ULL;
  }
  std::uint64_t value = h >> 17;
  if (!sampling.is_greedy()) value += rng() % 7;
  return static_cast<TokenId>(value % static_cast<std::uint64_t>(vocab_size));
}

/// Reference generation without any engine: the tokens the toy model emits
/// for `prompt`, stopping only at max_tokens or an EOS/stop id (for tests
/// whose requests use no stop strings). The generator is seeded the way the
/// schedulers seed it: SequenceRng(seed).
inline std::vector<TokenId> toy_reference(std::vector<TokenId> context, const SamplingParams& sampling,
                                          const ToyModelConfig& config) {
  SequenceRng rng(sampling.seed.value_or(0));
  std::vector<TokenId> out;
  const std::size_t max_tokens = sampling.max_tokens.value_or(64);
  while (out.size() < max_tokens) {
    const TokenId t = toy_next_token(context, sampling, rng, config.vocab_size);
    out.push_back(t);
    context.push_back(t);
    const bool may_stop = out.size() >= sampling.min_tokens;
    const bool eos = !sampling.ignore_eos && std::find(config.eos_token_ids.begin(), config.eos_token_ids.end(), t) !=
                                                 config.eos_token_ids.end();
    const bool stop_id =
        std::find(sampling.stop_token_ids.begin(), sampling.stop_token_ids.end(), t) != sampling.stop_token_ids.end();
    if (may_stop && (eos || stop_id)) break;
  }
  return out;
}

/// Token t reads as one letter, 'a' + t % 26, so tests can aim stop strings;
/// with `multibyte`, as one of "a", "é", "語", "😀" (t % 4).
struct ToyDetokenizer {
  bool multibyte = false;
  std::optional<TokenId> throw_on;
  char letter[1] = {};
  std::string_view append(TokenId t) {
    if (throw_on && t == *throw_on) throw std::runtime_error("toy detokenizer: injected fault");
    if (multibyte) {
      static constexpr std::string_view characters[4] = {"a", "\xC3\xA9", "\xE8\xAA\x9E", "\xF0\x9F\x98\x80"};
      return characters[t % 4];
    }
    letter[0] = static_cast<char>('a' + t % 26);
    return {letter, 1};
  }
  /// The token's own spelling (logprobs' bytes): what append() gives for it alone.
  std::string token_bytes(TokenId t) const {
    ToyDetokenizer alone{multibyte, std::nullopt, {}};
    return std::string(alone.append(t));
  }
};

class ToyExecutor {
 public:
  using policy_category = executor_tag;
  using execution_space = cpu_execution;

  explicit ToyExecutor(ToyModelConfig config = {}) : config_(std::move(config)) {}

  KVCacheShape kv_cache_shape() const {
    return {config_.num_layers, config_.num_kv_heads, config_.head_dim, DType::f32};
  }
  std::span<const TokenId> eos_token_ids() const { return config_.eos_token_ids; }
  ToyDetokenizer make_detokenizer() const { return {config_.multibyte_text, config_.detokenizer_throw_token}; }
  std::size_t max_model_len() const { return config_.max_model_len; }
  std::size_t vocab_size() const {
    return config_.report_vocab_size ? static_cast<std::size_t>(config_.vocab_size) : std::size_t{1} << 40;
  }

  template <KVCachePolicy K>
  void execute(const StepPlan& plan, K& kv, StepResult& result) {
    ++num_steps_;
    if (config_.device_memory_step_tokens != 0 && plan.num_scheduled_tokens > config_.device_memory_step_tokens) {
      ++num_faults_thrown_;
      throw device_memory_exhausted("toy model: a step of " + std::to_string(plan.num_scheduled_tokens) +
                                    " tokens does not fit the device");
    }
    max_step_tokens_ = std::max(max_step_tokens_, plan.num_scheduled_tokens);
    const std::size_t row = kv.shape().row_elements();
    // Every K/V write of the step happens before any read, as a real model
    // writes a layer's K/V for the whole batch before attention.
    for (const ScheduledSequence& seq : plan.sequences) {
      for (std::size_t i = 0; i < seq.num_tokens; ++i) {
        const std::size_t position = seq.num_computed_tokens + i;
        const auto slot = static_cast<std::size_t>(plan.slot_mapping[seq.slot_offset + i]);
        for (std::uint32_t layer = 0; layer < config_.num_layers; ++layer) {
          const KVLayerView view = kv.layer(layer);
          float* k = reinterpret_cast<float*>(view.keys) + slot * row;
          float* v = reinterpret_cast<float*>(view.values) + slot * row;
          for (std::uint32_t head = 0; head < config_.num_kv_heads; ++head) {
            float* kh = k + head * config_.head_dim;
            kh[0] = static_cast<float>(seq.tokens[position]);
            kh[1] = static_cast<float>(position);
            kh[2] = static_cast<float>(layer);
            kh[3] = static_cast<float>(head);
            float* vh = v + head * config_.head_dim;
            for (std::uint32_t d = 0; d < config_.head_dim; ++d) vh[d] = -kh[d];
          }
        }
      }
    }
    for (const ScheduledSequence& seq : plan.sequences)
      if (prompt_holds(seq, config_.throw_token)) {
        ++num_faults_thrown_;
        throw std::runtime_error("toy model: injected fault in the forward pass of request " + std::to_string(seq.id));
      }
    const std::size_t block_size = kv.block_size();
    for (const ScheduledSequence& seq : plan.sequences) {
      if (!seq.samples) continue;
      if (prompt_holds(seq, config_.nan_token)) {
        // The real sampler, on the logits a NaN weight produces.
        std::vector<float> logits(static_cast<std::size_t>(config_.vocab_size),
                                  std::numeric_limits<float>::quiet_NaN());
        SamplingInput input;
        input.params = seq.sampling;
        input.rng = seq.rng;
        const SampledToken sampled = sampler_.sample(logits, input);
        if (!sampled.ok()) {
          result.failures.push_back({seq.id, std::string(describe(sampled.error))});
          continue;
        }
      }
      const std::size_t length = seq.num_computed_tokens + seq.num_tokens;
      context_.clear();
      for (std::size_t position = 0; position < length; ++position) {
        const std::size_t slot = seq.block_table[position / block_size] * block_size + position % block_size;
        TokenId token = -1;
        for (std::uint32_t layer = 0; layer < config_.num_layers; ++layer) {
          const KVLayerView view = kv.layer(layer);
          const float* k = reinterpret_cast<const float*>(view.keys) + slot * row;
          const float* v = reinterpret_cast<const float*>(view.values) + slot * row;
          for (std::uint32_t head = 0; head < config_.num_kv_heads; ++head) {
            const float* kh = k + head * config_.head_dim;
            const float* vh = v + head * config_.head_dim;
            const bool intact = kh[1] == static_cast<float>(position) && kh[2] == static_cast<float>(layer) &&
                                kh[3] == static_cast<float>(head) && vh[0] == -kh[0] &&
                                kh[0] == static_cast<float>(seq.tokens[position]);
            if (!intact) ++corrupt_reads_;
            token = static_cast<TokenId>(kh[0]);
          }
        }
        context_.push_back(token);
      }
      SequenceOutput out;
      out.id = seq.id;
      out.token = toy_next_token(context_, *seq.sampling, *seq.rng, config_.vocab_size);
      out.logprob = -1.0f;
      if (seq.sampling->logprobs) {
        out.top_logprobs_begin = static_cast<std::uint32_t>(result.top_logprobs.size());
        for (std::uint32_t i = 0; i < *seq.sampling->logprobs; ++i)
          result.top_logprobs.push_back({static_cast<TokenId>((out.token + i) % config_.vocab_size),
                                         -1.0f - static_cast<float>(i)});
        out.top_logprobs_count = *seq.sampling->logprobs;
      }
      if (seq.task == Task::tts) {
        out.audio_begin = static_cast<std::uint32_t>(result.audio.size());
        result.audio.insert(result.audio.end(), config_.audio_samples_per_token,
                            static_cast<float>(out.token) / static_cast<float>(config_.vocab_size));
        out.audio_count = config_.audio_samples_per_token;
        result.audio_sample_rate = config_.audio_sample_rate;
      }
      result.outputs.push_back(out);
    }
  }

  std::uint64_t corrupt_reads() const { return corrupt_reads_; }
  std::size_t num_faults_thrown() const { return num_faults_thrown_; }
  std::size_t num_steps() const { return num_steps_; }
  std::size_t max_step_tokens() const { return max_step_tokens_; }
  const ToyModelConfig& config() const { return config_; }

 private:
  static bool prompt_holds(const ScheduledSequence& seq, std::optional<TokenId> token) {
    if (!token) return false;
    const auto prompt = seq.tokens.first(seq.num_prompt_tokens);
    return std::find(prompt.begin(), prompt.end(), *token) != prompt.end();
  }

  ToyModelConfig config_;
  Sampler sampler_;
  std::size_t num_faults_thrown_ = 0;
  std::vector<TokenId> context_;
  std::uint64_t corrupt_reads_ = 0;
  std::size_t num_steps_ = 0;
  std::size_t max_step_tokens_ = 0;
};

}  // namespace izwi::testing
