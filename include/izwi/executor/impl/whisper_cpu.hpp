#pragma once
// WhisperCpuExecutor's step, execute<K> and store_audio<K>: the templates
// among its bodies (the others: impl/whisper_cpu.ipp).

#include <cstddef>

namespace izwi {

template <KVCachePolicy K>
void WhisperCpuExecutor::execute(const StepPlan& plan, K& kv, StepResult& result) {
  failed_.clear();
  store_audio(plan, kv, result);
  flatten_decoder_rows(plan, result);
  if (tokens_.empty()) return;

  const std::size_t vocab = model_.vocab_size();
  logits_.resize(logit_rows_.size() * vocab);
  const ForwardBatch batch{tokens_, positions_, slots_, logit_rows_};
  model_.forward(ops_, batch, std::span<const detail::CpuOps::attention_sequence>(self_),
                 std::span<const detail::CpuOps::attention_sequence>(cross_), kv, logits_.data());
  if (keep_logits_) kept_logits_.assign(logits_.begin(), logits_.end());
  for (std::size_t row = 0; row < sampling_.size(); ++row)
    sample(*sampling_[row], std::span<float>(logits_.data() + row * vocab, vocab), result);
}

/// Steps 1 and 2: encoder windows for the chunks that reach into their audio,
/// and the cross-attention K/V of those positions into the chunks' slots.
template <KVCachePolicy K>
void WhisperCpuExecutor::store_audio(const StepPlan& plan, K& kv, StepResult& result) {
  const std::size_t n_audio = model_.config().n_audio_ctx, d = model_.config().d_model;
  encode_windows(plan, result);
  for (const ScheduledSequence& seq : plan.sequences) {
    const std::size_t first = seq.num_computed_tokens, end = std::min(first + seq.num_tokens, n_audio);
    if (first >= end || failed(seq.id)) continue;
    const float* encoder_out = nullptr;
    const auto encoded = std::find(to_encode_.begin(), to_encode_.end(), &seq);
    if (encoded != to_encode_.end()) {
      encoder_out = encoded_.data() + static_cast<std::size_t>(encoded - to_encode_.begin()) * n_audio * d;
      if (end < n_audio) pending_[seq.id].assign(encoder_out, encoder_out + n_audio * d);  // later chunks need it
    } else {
      encoder_out = pending_.at(seq.id).data();
    }
    const std::span<const std::int64_t> slots = std::span(plan.slot_mapping).subspan(seq.slot_offset, end - first);
    model_.store_cross_kv(ops_, encoder_out, first, slots, kv);
    if (end == n_audio) pending_.erase(seq.id);
  }
}

}  // namespace izwi
