#pragma once

#include <string>
#include <utility>

namespace izwi {

template <class Model>
  requires ModelFamilyFor<Model, opencl::OpenClOps>
OpenClExecutor<Model>::OpenClExecutor(Model model, std::shared_ptr<opencl::Context> context,
                                      OpenClExecutorConfig config)
    : model_(std::move(model)),
      context_(context ? std::move(context)
                       : throw invalid_argument("context", "OpenClExecutor needs an OpenCL context")),
      ops_(std::make_unique<opencl::OpenClOps>(context_, config.max_scratch_bytes)) {}

template <class Model>
  requires ModelFamilyFor<Model, opencl::OpenClOps>
template <KVCachePolicy K>
void OpenClExecutor<Model>::execute(const StepPlan& plan, K& kv, StepResult& result) {
  check_cache(kv);
  tokens_.clear();
  positions_.clear();
  logit_rows_.clear();
  sequences_.clear();
  for (const ScheduledSequence& seq : plan.sequences) {
    sequences_.push_back(opencl::OpenClOps::make_sequence(seq, tokens_.size()));
    for (std::size_t i = 0; i < seq.num_tokens; ++i) {
      tokens_.push_back(seq.tokens[seq.num_computed_tokens + i]);
      positions_.push_back(static_cast<std::int64_t>(seq.num_computed_tokens + i));
    }
    if (seq.samples) logit_rows_.push_back(static_cast<std::uint32_t>(tokens_.size() - 1));
  }
  if (tokens_.empty()) return;

  logits_.resize(logit_rows_.size() * model_.vocab_size());
  const ForwardBatch batch{tokens_, positions_, plan.slot_mapping, logit_rows_};
  ops_->begin_step();
  try {
    model_.forward(*ops_, batch, std::span<const opencl::OpenClOps::attention_sequence>(sequences_), kv,
                   logits_.data());
  } catch (...) {
    ops_->end_step();
    throw;
  }
  ops_->end_step();
  context_->finish();
  if (keep_logits_) kept_logits_.assign(logits_.begin(), logits_.end());
  sample(plan, result);
}

// A DeviceKVCache must be on this context; a unified-memory cache's storage
// (one allocation, layer 0's keys first, stats().total_bytes long; see
// kv_cache/detail/kv_storage.hpp) is aliased once, and again if it moved.
template <class Model>
  requires ModelFamilyFor<Model, opencl::OpenClOps>
template <KVCachePolicy K>
void OpenClExecutor<Model>::check_cache(K& kv) {
  if constexpr (requires { kv.context(); }) {
    if (kv.context() != context_)
      throw invalid_argument("kv_cache", "OpenClExecutor: the KV cache lives on another OpenCL context");
  } else if constexpr (std::same_as<typename K::memory_space, unified_space>) {
    std::byte* base = kv.layer(0).keys;
    const std::size_t bytes = kv.stats().total_bytes;
    if (!unified_kv_ || unified_kv_->host() != base || unified_kv_->size() != bytes) {
      unified_kv_.reset();
      unified_kv_ = std::make_unique<opencl::HostMemoryAlias>(*context_, base, bytes);
    }
  }
}

// The host half of the step, as CpuExecutor's: one draw per sampling sequence.
template <class Model>
  requires ModelFamilyFor<Model, opencl::OpenClOps>
void OpenClExecutor<Model>::sample(const StepPlan& plan, StepResult& result) {
  const std::size_t vocab = model_.vocab_size();
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
