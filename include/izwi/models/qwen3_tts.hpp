#pragma once
// Qwen3-TTS 12 Hz: text to 16 codes per frame (12.5 frames/s) to 24 kHz audio.
//
//   talker      a Qwen3 decoder over codec tokens. A prompt row is the sum of
//               a text row and a codec row: text rows are
//               text_projection(text_embedding[id]) = fc2(SiLU(fc1(e) + b1)) + b2,
//               codec rows are codec_embedding[id]. Its last hidden state
//               (after the final norm) gives codebook 0 through codec_head.
//   predictor   a 5-layer Qwen3 that, per frame, reads
//               [talker hidden, codec_embedding[c₀]] and then its own
//               embeddings of c₁..c₁₄, and gives c₁..c₁₅ through 15 heads
//               (inputs pass small_to_mtp_projection when it is narrower).
//   next frame  the talker's next input is Σ of the 16 codes' embeddings
//               (talker's for c₀, the predictor's for c₁..c₁₅) + tts_pad's text row.
//   codec       Qwen3TtsCodecDecoder (qwen3_tts_codec.hpp): 1920 samples per frame.
//
// Loads the Hugging Face layout: config.json, model.safetensors (talker.*),
// speech_tokenizer/{config.json, model.safetensors}, and tokenizer.json when
// present. The weights stay in the mapped file (views), the codec decoder's
// are widened to f32. Errors name the file, the tensor and the problem.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "izwi/kernels/cpu/matmul.hpp"
#include "izwi/models/qwen3.hpp"
#include "izwi/models/qwen3_tts_codec.hpp"
#include "izwi/models/qwen3_tts_config.hpp"
#include "izwi/tokenizer/bpe_tokenizer.hpp"

namespace izwi {

struct Qwen3TtsTalkerWeights {
  kernels::cpu::WeightMatrix text_embedding;  ///< [text_vocab][text_hidden]
  kernels::cpu::WeightMatrix text_fc1;        ///< [text_hidden][text_hidden]
  kernels::cpu::WeightMatrix text_fc2;        ///< [hidden][text_hidden]
  std::vector<float> text_fc1_bias, text_fc2_bias;
  kernels::cpu::WeightMatrix codec_embedding;  ///< [codec vocab][hidden]
  kernels::cpu::WeightMatrix codec_head;       ///< [codec vocab][hidden]
  std::vector<float> final_norm;
  std::vector<Qwen3LayerWeights> layers;
};

struct Qwen3TtsPredictorWeights {
  /// Embeddings of codebooks 1..15 ([codebook][talker hidden] each).
  std::vector<kernels::cpu::WeightMatrix> codec_embeddings;
  /// Heads of codebooks 1..15 ([codebook][predictor hidden] each).
  std::vector<kernels::cpu::WeightMatrix> heads;
  /// small_to_mtp_projection ([predictor hidden][talker hidden]); absent when the widths agree.
  std::optional<kernels::cpu::WeightMatrix> projection;
  std::vector<float> projection_bias;
  std::vector<float> final_norm;
  std::vector<Qwen3LayerWeights> layers;
};

struct Qwen3TtsLoadOptions {
  /// Load tokenizer.json when the directory has one.
  bool load_tokenizer = true;
};

class Qwen3Tts {
 public:
  /// Loads a Hugging Face Qwen3-TTS directory (see the top of this file).
  static Qwen3Tts load(const std::filesystem::path& dir, Qwen3TtsLoadOptions options = {});

  const Qwen3TtsConfig& config() const noexcept { return config_; }
  const Qwen3TtsTalkerWeights& talker() const noexcept { return talker_; }
  const Qwen3TtsPredictorWeights& predictor() const noexcept { return predictor_; }
  const Qwen3TtsCodecDecoder& codec() const noexcept { return *codec_; }
  /// The checkpoint's tokenizer, when it has one.
  const tokenizer::BpeTokenizer* tokenizer() const noexcept { return tokenizer_.get(); }
  /// Where the weights came from, for logs.
  const std::string& description() const noexcept { return description_; }

 private:
  Qwen3Tts() = default;
  Qwen3TtsConfig config_;
  Qwen3TtsTalkerWeights talker_;
  Qwen3TtsPredictorWeights predictor_;
  std::shared_ptr<const Qwen3TtsCodecDecoder> codec_;
  std::shared_ptr<const void> weights_owner_;  // the mapped model.safetensors the views point into
  std::shared_ptr<const tokenizer::BpeTokenizer> tokenizer_;
  std::string description_;
};

}  // namespace izwi

#include "izwi/models/impl/qwen3_tts_load.hpp"
