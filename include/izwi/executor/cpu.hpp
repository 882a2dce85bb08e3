#pragma once
// CpuExecutor<Model>: runs a model family on CPU cores for the engine.
//
//   auto model = izwi::Qwen3::load("Qwen3-0.6B/");
//   izwi::CpuExecutor<izwi::Qwen3> executor(std::move(model), {.num_threads = 2});
//   izwi::PagedKVCache<> cache(executor.kv_cache_shape(), {.byte_budget = 2ull << 30});
//   izwi::Engine engine(izwi::FcfsScheduler{}, std::move(cache), std::move(executor));
//
// Each step is one forward pass for the whole batch, whatever mix of decode
// tokens and prefill chunks the scheduler planned: the executor flattens the
// plan into one token list, the model computes every layer once over all of
// them (paged attention reads each sequence's K/V from its own blocks), and
// only the rows that sample go through the final norm and the lm_head. Then
// each sampling sequence draws its token with the Sampler, from its own
// generator. Work inside each kernel is split over a persistent thread pool.
//
// Satisfies ExecutorFor<CpuExecutor<M>, K> for caches in host or unified
// memory. Optional abilities: eos_token_ids(), make_detokenizer() (text
// through the checkpoint's tokenizer when it has one), max_model_len().

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "izwi/concepts/backend_ops.hpp"
#include "izwi/concepts/executor.hpp"
#include "izwi/concepts/kv_cache.hpp"
#include "izwi/concepts/memory_space.hpp"
#include "izwi/core/step.hpp"
#include "izwi/executor/detail/cpu_ops.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/executor/sampler.hpp"
#include "izwi/models/forward_batch.hpp"

namespace izwi {

struct CpuExecutorConfig {
  /// Worker threads, the caller included; 0 uses every hardware thread.
  std::size_t num_threads = 0;
};

/// Model: a model family whose forward pass runs on the CPU backend's ops
/// (ModelFamilyFor<Model, detail::CpuOps>; docs/concepts/backend_ops.md).
template <class Model>
  requires ModelFamilyFor<Model, detail::CpuOps>
class CpuExecutor {
 public:
  using policy_category = executor_tag;
  using execution_space = cpu_execution;
  using model_type = Model;

  explicit CpuExecutor(Model model, CpuExecutorConfig config = {});

  KVCacheShape kv_cache_shape() const { return model_.kv_cache_shape(); }
  std::span<const TokenId> eos_token_ids() const { return model_.eos_token_ids(); }
  /// The checkpoint's context length (0: unknown, the cache bounds it).
  std::size_t max_model_len() const { return model_.config().max_position_embeddings; }
  /// Text of the generated tokens, for a model that carries a tokenizer
  /// (Model::tokenizer()). make_model_detokenizer is found beside the
  /// tokenizer's type (tokenizer/detokenizer.hpp for BpeTokenizer), so this
  /// header does not pull a tokenizer (nor ICU) into programs whose model has none.
  auto make_detokenizer() const
    requires requires(const Model& m) { make_model_detokenizer(m.tokenizer()); }
  {
    return make_model_detokenizer(model_.tokenizer());
  }
  const Model& model() const noexcept { return model_; }
  /// Rows of the embedding table: token ids at or past it are refused.
  std::size_t vocab_size() const noexcept { return model_.vocab_size(); }
  std::size_t num_threads() const noexcept { return pool_->size(); }

  /// One engine step: one forward pass over every scheduled token, then one
  /// sampled token per sequence whose chunk reaches its last known token.
  template <KVCachePolicy K>
  void execute(const StepPlan& plan, K& kv, StepResult& result);

  /// The logits of the last step's sampling rows, [rows][vocab], before the
  /// sampler changed them (tests compare these with a reference). Kept only
  /// when keep_logits(true) was called.
  std::span<const float> last_logits() const noexcept { return kept_logits_; }
  void keep_logits(bool keep) noexcept { keep_logits_ = keep; }

 private:
  Model model_;
  std::unique_ptr<detail::ThreadPool> pool_;  // the engine moves executors; the pool stays put
  detail::CpuOps ops_;
  Sampler sampler_;
  std::vector<TokenId> tokens_;
  std::vector<std::int64_t> positions_;
  std::vector<std::uint32_t> logit_rows_;
  std::vector<detail::CpuOps::attention_sequence> sequences_;
  std::vector<float> logits_;
  std::vector<float> kept_logits_;
  bool keep_logits_ = false;
};

}  // namespace izwi

#include "izwi/executor/impl/cpu.hpp"
