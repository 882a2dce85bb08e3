#pragma once

#include <string>
#include <utility>

namespace izwi {

template <class Model>
  requires ModelFamilyFor<Model, detail::CpuOps>
CpuExecutor<Model>::CpuExecutor(Model model, CpuExecutorConfig config)
    : model_(std::move(model)), pool_(std::make_unique<detail::ThreadPool>(config.num_threads)), ops_(*pool_) {}

template <class Model>
  requires ModelFamilyFor<Model, detail::CpuOps>
template <KVCachePolicy K>
void CpuExecutor<Model>::execute(const StepPlan& plan, K& kv, StepResult& result) {
  // Flatten the plan: one row per scheduled token, sequences in plan order.
  tokens_.clear();
  positions_.clear();
  logit_rows_.clear();
  sequences_.clear();
  for (const ScheduledSequence& seq : plan.sequences) {
    sequences_.push_back(detail::CpuOps::make_sequence(seq, tokens_.size()));
    for (std::size_t i = 0; i < seq.num_tokens; ++i) {
      tokens_.push_back(seq.tokens[seq.num_computed_tokens + i]);
      positions_.push_back(static_cast<std::int64_t>(seq.num_computed_tokens + i));
    }
    if (seq.samples) logit_rows_.push_back(static_cast<std::uint32_t>(tokens_.size() - 1));
  }
  if (tokens_.empty()) return;

  const std::size_t vocab = model_.vocab_size();
  logits_.resize(logit_rows_.size() * vocab);
  const ForwardBatch batch{tokens_, positions_, plan.slot_mapping, logit_rows_};
  model_.forward(ops_, batch, std::span<const detail::CpuOps::attention_sequence>(sequences_), kv, logits_.data());
  if (keep_logits_) kept_logits_.assign(logits_.begin(), logits_.end());

  std::size_t row = 0;
  for (const ScheduledSequence& seq : plan.sequences) {
    if (!seq.samples) continue;
    const std::span<float> logits(logits_.data() + row * vocab, vocab);
    ++row;
    sampler_.sample_into(logits, seq, seq.tokens.first(seq.num_prompt_tokens), seq.output_tokens(),
                         model_.eos_token_ids(), result);
  }
}

}  // namespace izwi
