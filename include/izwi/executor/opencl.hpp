#pragma once
// OpenClExecutor<Model>: runs a model family on an OpenCL device for the
// engine (DESIGN §4). The model code is the CPU executor's (Qwen3::forward is
// written against BackendOps); the kernels are OpenClOps'.
//
//   auto ctx = izwi::opencl::Context::create({});        // or {.platform = 0, .device = 1}
//   izwi::OpenClExecutor<izwi::Qwen3> executor(izwi::Qwen3::load("Qwen3-0.6B/"), ctx);
//   izwi::DeviceKVCache<> kv(ctx, executor.kv_cache_shape(), {.byte_budget = 1ull << 30});
//   izwi::Engine engine(izwi::FcfsScheduler{}, std::move(kv), std::move(executor));
//
// A step is one forward pass over every scheduled token (activations stay on
// the device; weights are uploaded on first use), then the logits of the
// sampling rows are read back and each sequence samples on the host with the
// shared Sampler, exactly as CpuExecutor does. execution_space is
// gpu_execution: it pairs with DeviceKVCache (device_space) and with
// UnifiedKVCache (unified_space: shared virtual memory from
// opencl::unified_memory_for, or its own host memory wrapped once in a
// CL_MEM_USE_HOST_PTR buffer; zero copy either way, and it keeps its
// memory-pressure behaviour; refused on a device that does not share the
// host's memory, see kernels/opencl/unified_memory.hpp); pairing it with a
// host cache (PagedKVCache) fails to compile (memory_space.hpp).

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "izwi/concepts/backend_ops.hpp"
#include "izwi/concepts/executor.hpp"
#include "izwi/concepts/kv_cache.hpp"
#include "izwi/concepts/memory_space.hpp"
#include "izwi/core/step.hpp"
#include "izwi/executor/sampler.hpp"
#include "izwi/kernels/opencl/context.hpp"
#include "izwi/kernels/opencl/ops.hpp"
#include "izwi/kernels/opencl/unified_memory.hpp"
#include "izwi/models/forward_batch.hpp"

namespace izwi {

struct OpenClExecutorConfig {
  /// Cap on the device scratch for activations, in bytes (0: none). A step
  /// that needs more fails as a device allocation failure does: execute()
  /// throws izwi::device_memory_exhausted (CL_MEM_OBJECT_ALLOCATION_FAILURE),
  /// the engine preempts the step's newest sequences until the rest fit, and
  /// fails only a sequence that does not fit even alone, with that reason.
  std::size_t max_scratch_bytes = 0;
};

/// Model: a model family whose forward pass runs on OpenClOps.
template <class Model>
  requires ModelFamilyFor<Model, opencl::OpenClOps>
class OpenClExecutor {
 public:
  using policy_category = executor_tag;
  using execution_space = gpu_execution;
  using model_type = Model;

  /// Runs on `context`'s device; a DeviceKVCache for it must use the same context.
  OpenClExecutor(Model model, std::shared_ptr<opencl::Context> context, OpenClExecutorConfig config = {});

  KVCacheShape kv_cache_shape() const { return model_.kv_cache_shape(); }
  std::span<const TokenId> eos_token_ids() const { return model_.eos_token_ids(); }
  std::size_t max_model_len() const { return model_.config().max_position_embeddings; }
  auto make_detokenizer() const
    requires requires(const Model& m) { make_model_detokenizer(m.tokenizer()); }
  {
    return make_model_detokenizer(model_.tokenizer());
  }
  const Model& model() const noexcept { return model_; }
  std::size_t vocab_size() const noexcept { return model_.vocab_size(); }
  const std::shared_ptr<opencl::Context>& context() const noexcept { return context_; }

  /// One engine step. A cache on another context is izwi::invalid_argument; a
  /// unified-memory cache on a device that does not share the host's memory
  /// is izwi::unavailable (one sentence: use DeviceKVCache).
  template <KVCachePolicy K>
  void execute(const StepPlan& plan, K& kv, StepResult& result);

  /// As CpuExecutor: the last step's logits, kept when keep_logits(true).
  std::span<const float> last_logits() const noexcept { return kept_logits_; }
  void keep_logits(bool keep) noexcept { keep_logits_ = keep; }

 private:
  void sample(const StepPlan& plan, StepResult& result);
  template <KVCachePolicy K>
  void check_cache(K& kv);

  Model model_;
  std::shared_ptr<opencl::Context> context_;
  std::unique_ptr<opencl::OpenClOps> ops_;  // owns device scratch; stays put when the executor moves
  std::unique_ptr<opencl::HostMemoryAlias> unified_kv_;  // a unified_space cache's host storage, as a cl_mem
  std::shared_ptr<opencl::SvmMemory> svm_kv_;            // or its SVM, mapped per step where coarse-grained
  const std::byte* svm_kv_base_ = nullptr;
  Sampler sampler_;
  std::vector<TokenId> tokens_;
  std::vector<std::int64_t> positions_;
  std::vector<std::uint32_t> logit_rows_;
  std::vector<opencl::OpenClOps::attention_sequence> sequences_;
  std::vector<float> logits_;
  std::vector<float> kept_logits_;
  bool keep_logits_ = false;
};

}  // namespace izwi

#include "izwi/executor/impl/opencl.hpp"
