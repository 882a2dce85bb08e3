#pragma once
// Qwen3TtsCpuExecutor::execute<K>, the step (input rows, talker, codebook 0,
// predictor, codec), the one template among its bodies; the others are in
// impl/qwen3_tts_cpu.ipp.

namespace izwi {

template <KVCachePolicy K>
void Qwen3TtsCpuExecutor::execute(const StepPlan& plan, K& kv, StepResult& result) {
  const std::size_t h = compute_.hidden();
  positions_.clear(), logit_rows_.clear(), sequences_.clear();
  for (const ScheduledSequence& seq : plan.sequences) {
    sequences_.push_back(detail::CpuOps::make_sequence(seq, positions_.size()));
    for (std::size_t i = 0; i < seq.num_tokens; ++i)
      positions_.push_back(static_cast<std::int64_t>(seq.num_computed_tokens + i));
    if (seq.samples) logit_rows_.push_back(static_cast<std::uint32_t>(positions_.size() - 1));
  }
  if (positions_.empty()) return;
  float* x = compute_.ops().buffer(0, positions_.size() * h);
  input_rows(plan, x);
  hidden_.resize(logit_rows_.size() * h);
  logits_.resize(logit_rows_.size() * model_->config().talker.vocab_size);
  const ForwardBatch batch{{}, positions_, plan.slot_mapping, logit_rows_};
  compute_.talker(x, batch, std::span<const detail::CpuOps::attention_sequence>(sequences_), kv,
                  kv_cache_shape().dtype, hidden_.data(), logits_.data());
  sample_first_codes(plan, result);
  compute_.predict(jobs_);
  // Nothing below throws on a valid frame, so the streams change only now.
  const std::size_t groups = model_->config().num_code_groups;
  for (const Spoken& s : spoken_)
    if (s.token != eos_)
      s.stream->codes.insert(s.stream->codes.end(), frames_.begin() + static_cast<std::ptrdiff_t>(s.frame_row * groups),
                             frames_.begin() + static_cast<std::ptrdiff_t>((s.frame_row + 1) * groups));
  decode_audio(result);
}

}  // namespace izwi
