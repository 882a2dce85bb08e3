#pragma once
// StepPlan and StepResult: the contract between scheduler, executor and engine
// for one engine step.
//
// One step has one token budget and no separate prefill and decode phases
// (DESIGN §3). A scheduled sequence computes `num_tokens` tokens starting at
// position `num_computed_tokens`: one for a decoding request, a chunk of its
// prompt for a prefilling one. Every span in a plan points into storage owned
// by the scheduler and stays valid until the scheduler's next schedule() or
// update() call.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "izwi/core/ids.hpp"
#include "izwi/core/random.hpp"
#include "izwi/core/request.hpp"
#include "izwi/core/sampling_params.hpp"

namespace izwi {

struct ScheduledSequence {
  RequestId id = 0;
  /// Position of the first token computed this step (tokens before it are in the KV cache).
  std::size_t num_computed_tokens = 0;
  /// Tokens computed this step.
  std::size_t num_tokens = 0;
  /// Prompt length. Positions at or past it hold generated tokens; after a
  /// preemption they are recomputed like prompt tokens.
  std::size_t num_prompt_tokens = 0;
  /// Every known token: prompt, then output. This step computes
  /// `tokens.subspan(num_computed_tokens, num_tokens)`.
  std::span<const TokenId> tokens;
  /// The request's KV blocks, in position order: position p lives in block
  /// `block_table[p / block_size]` at offset `p % block_size`.
  std::span<const BlockId> block_table;
  /// Index into StepPlan::slot_mapping of this sequence's first token.
  std::size_t slot_offset = 0;
  /// This chunk reaches the last known token, so the executor samples the next one.
  bool samples = false;
  const SamplingParams* sampling = nullptr;
  /// The request's own generator; the executor advances it only when sampling.
  SequenceRng* rng = nullptr;
  /// Task and audio input of the request, for model families that use them.
  Task task = Task::completion;
  const AudioInput* audio = nullptr;
  /// What a speech-generating request reads while it speaks (null otherwise).
  const SpeechConditioning* speech = nullptr;

  std::span<const TokenId> new_tokens() const noexcept { return tokens.subspan(num_computed_tokens, num_tokens); }
  /// Generated tokens so far (penalties read these).
  std::span<const TokenId> output_tokens() const noexcept { return tokens.subspan(num_prompt_tokens); }
  bool is_prefill() const noexcept { return num_computed_tokens < num_prompt_tokens; }
};

struct StepPlan {
  /// Running requests first (in admission order), then requests admitted this step.
  std::vector<ScheduledSequence> sequences;
  /// One cache slot per scheduled token, in plan order: the flat index
  /// `block * block_size + offset` where that token's K and V are written.
  std::vector<std::int64_t> slot_mapping;
  /// Requests preempted during this step's scheduling; their blocks are already freed.
  std::vector<RequestId> preempted;
  /// Requests the scheduler ended with FinishReason::error this step because
  /// they can never fit in the KV cache, even alone; their blocks are freed.
  std::vector<RequestId> failed;
  /// Sum of num_tokens over sequences; never above the scheduler's token budget.
  std::size_t num_scheduled_tokens = 0;

  bool empty() const noexcept { return sequences.empty(); }
  /// Keeps capacity: the step loop reuses one plan and allocates nothing in steady state.
  void clear() noexcept {
    sequences.clear();
    slot_mapping.clear();
    preempted.clear();
    failed.clear();
    num_scheduled_tokens = 0;
  }
};

/// One alternative in a top-N log-probability list.
struct TokenLogprob {
  TokenId token = -1;
  float logprob = 0.0f;
};

/// What the executor produced for one sequence that sampled this step.
struct SequenceOutput {
  RequestId id = 0;
  TokenId token = -1;
  /// Log-probability of `token` under the processed distribution (when logprobs were asked for).
  float logprob = 0.0f;
  /// Range in StepResult::top_logprobs.
  std::uint32_t top_logprobs_begin = 0;
  std::uint32_t top_logprobs_count = 0;
  /// Range in StepResult::audio of samples this step decoded (audio-output models).
  std::uint32_t audio_begin = 0;
  std::uint32_t audio_count = 0;
};

/// A sequence the executor could not produce a token for this step (its
/// logits were NaN or infinite, say). The engine ends it with
/// FinishReason::error and `message`; the rest of the batch is unaffected.
struct SequenceFailure {
  RequestId id = 0;
  std::string message;
};

struct StepResult {
  /// One entry per ScheduledSequence with samples == true, in plan order,
  /// except those listed in `failures`.
  std::vector<SequenceOutput> outputs;
  /// Sequences of this step that failed (rare: allocates only then).
  std::vector<SequenceFailure> failures;
  std::vector<TokenLogprob> top_logprobs;
  std::vector<float> audio;
  /// Sample rate of `audio` (0 when the model produces no audio).
  std::uint32_t audio_sample_rate = 0;

  void clear() noexcept {
    outputs.clear();
    failures.clear();
    top_logprobs.clear();
    audio.clear();
  }
  std::span<const TokenLogprob> top_logprobs_of(const SequenceOutput& o) const noexcept {
    return std::span(top_logprobs).subspan(o.top_logprobs_begin, o.top_logprobs_count);
  }
  std::span<const float> audio_of(const SequenceOutput& o) const noexcept {
    return std::span(audio).subspan(o.audio_begin, o.audio_count);
  }
};

}  // namespace izwi
