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

namespace detail {
/// Rethrows the exception being handled; a device allocation that failed
/// (CL_MEM_OBJECT_ALLOCATION_FAILURE, the scratch cap included) as
/// izwi::device_memory_exhausted, with the same message: the engine then
/// preempts sequences instead of failing them.
[[noreturn]] inline void rethrow_step_failure() {
  try {
    throw;
  } catch (const opencl::opencl_error& e) {
    if (e.status() == CL_MEM_OBJECT_ALLOCATION_FAILURE) throw device_memory_exhausted(e.what());
    throw;
  }
}
}  // namespace detail

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
  // Coarse-grained SVM: the kernels own the cache from here to the map back.
  if (svm_kv_) svm_kv_->hand_to_device(svm_kv_base_);
  try {
    model_.forward(*ops_, batch, std::span<const opencl::OpenClOps::attention_sequence>(sequences_), kv,
                   logits_.data());
    context_->finish();
  } catch (...) {
    ops_->end_step();
    if (svm_kv_) {
      clFinish(context_->queue());
      svm_kv_->hand_to_host(svm_kv_base_);
    }
    detail::rethrow_step_failure();
  }
  ops_->end_step();
  if (svm_kv_) svm_kv_->hand_to_host(svm_kv_base_);
  if (keep_logits_) kept_logits_.assign(logits_.begin(), logits_.end());
  sample(plan, result);
}

// A DeviceKVCache must be on this context. A unified-memory cache's storage
// (one allocation, layer 0's keys first, stats().total_bytes long; see
// kv_cache/detail/kv_storage.hpp) is this context's SVM (already a device
// address range), or host memory aliased once, and again if it moved; either
// only on a device that shares the host's memory.
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
    if (svm_kv_ && svm_kv_base_ == base) return;
    if (unified_kv_ && unified_kv_->host() == base && unified_kv_->size() == bytes) return;
    svm_kv_.reset();
    unified_kv_.reset();
    std::shared_ptr<opencl::SvmMemory> svm;
    if constexpr (requires { kv.memory_resource(); })
      svm = std::dynamic_pointer_cast<opencl::SvmMemory>(kv.memory_resource());
    if (svm) {
      if (svm->context() != context_)
        throw invalid_argument("kv_cache", "OpenClExecutor: the KV cache's SVM belongs to another OpenCL context");
      svm_kv_ = std::move(svm);
      svm_kv_base_ = base;
      return;
    }
    // The host-alias way: refused (as unified_memory_for refuses) where the
    // device would keep its own copy of the pages.
    static_cast<void>(opencl::choose_unified_memory_mode(context_->memory_sharing(), context_->description(),
                                                         opencl::UnifiedMemoryMode::host_alias));
    unified_kv_ = std::make_unique<opencl::HostMemoryAlias>(*context_, base, bytes);
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
