#pragma once
// Qwen3TtsCompute::talker<KV>, the one template among its bodies (after
// Qwen3Tts is complete); the others are in impl/qwen3_tts_compute.ipp.

namespace izwi::detail {

template <class KV>
void Qwen3TtsCompute::talker(float* x, const ForwardBatch& batch, std::span<const CpuOps::attention_sequence> sequences,
                             KV& kv, DType kv_dtype, float* hidden_out, float* logits_out) {
  const Qwen3TtsConfig& c = model_->config();
  const Qwen3TtsTalkerWeights& w = model_->talker();
  const std::size_t h = c.talker.hidden_size, n = batch.logit_rows.size();
  qwen3_decoder_layers(ops_, c.talker, std::span<const Qwen3LayerWeights>(w.layers), kv_dtype, batch, sequences, kv, x);
  if (n == 0) return;
  ops_.gather_rows(x, h, batch.logit_rows, hidden_out);
  ops_.rms_norm(hidden_out, n, h, w.final_norm.data(), static_cast<float>(c.talker.rms_norm_eps), hidden_out);
  ops_.matmul(hidden_out, n, w.codec_head, logits_out);
}

}  // namespace izwi::detail
