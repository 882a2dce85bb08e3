#pragma once
// Qwen3-TTS (12 Hz) hyperparameters as the Hugging Face checkpoint states them:
//
//   config.json                      Qwen3TTSForConditionalGeneration: the talker
//                                    (talker_config), its code predictor
//                                    (talker_config.code_predictor_config), the
//                                    special text tokens and, for Base models,
//                                    the speaker encoder (speaker_encoder_config)
//   speech_tokenizer/config.json     Qwen3TTSTokenizerV2: the codec decoder
//                                    (decoder_config) that turns 16 codes per
//                                    frame into 1920 samples at 24 kHz
//
// The talker and the code predictor are Qwen3 decoders, so their shapes are
// Qwen3Configs; what Qwen3-TTS adds (the text projection's sizes, the codec
// control ids, speakers, languages) sits beside them. Every error names the
// file and the key (io::config_error) or the field (izwi::invalid_argument).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "izwi/core/ids.hpp"
#include "izwi/io/config.hpp"
#include "izwi/models/qwen3.hpp"

namespace izwi {

/// speech_tokenizer/config.json's decoder_config (Qwen3TTSTokenizerV2DecoderConfig).
struct Qwen3TtsCodecConfig {
  std::uint32_t codebook_size = 2048;
  /// Width of the dequantised codes (each RVQ codebook holds codebook_dim / 2).
  std::uint32_t codebook_dim = 512;
  std::uint32_t num_quantizers = 16;
  /// Width of the pre-conv output, the upsampling stages and the transformer's in/out projections.
  std::uint32_t latent_dim = 1024;
  /// The sliding-window transformer.
  std::uint32_t hidden_size = 512;
  std::uint32_t intermediate_size = 1024;
  std::uint32_t num_layers = 8;
  std::uint32_t num_heads = 16;
  std::uint32_t num_kv_heads = 16;
  std::uint32_t head_dim = 64;
  std::uint32_t sliding_window = 72;
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-5;
  /// Channels of the first SnakeBeta decoder block (halved by each block).
  std::uint32_t decoder_dim = 1536;
  /// Strides of the SnakeBeta decoder blocks (kernel 2 × stride each).
  std::vector<std::uint32_t> upsample_rates{8, 5, 4, 3};
  /// Strides of the ConvNeXt upsampling stages (kernel = stride).
  std::vector<std::uint32_t> upsampling_ratios{2, 2};
  std::uint32_t output_sample_rate = 24000;

  /// Output samples per frame of codes: the product of every stride (1920).
  std::size_t samples_per_frame() const noexcept;
  /// Channels after the last decoder block (decoder_dim / 2^blocks).
  std::uint32_t output_channels() const noexcept;

  /// From speech_tokenizer/config.json (its decoder_config object).
  static Qwen3TtsCodecConfig read(const std::filesystem::path& config_json);
  static Qwen3TtsCodecConfig from(const io::ConfigView& decoder_config);
  /// izwi::invalid_argument naming the field when the shape cannot run.
  void validate() const;
};

/// config.json's speaker_encoder_config (Qwen3TTSSpeakerEncoderConfig), Base
/// models only: the ECAPA-TDNN that turns reference audio into the x-vector
/// a cloned voice speaks with. Layer i of enc_channels / enc_kernel_sizes /
/// enc_dilations is: 0 the stem TDNN, 1..n-2 the SE-Res2Net blocks, n-1 the
/// multi-layer feature aggregation (over the blocks' outputs concatenated).
struct Qwen3TtsSpeakerEncoderConfig {
  std::uint32_t mel_dim = 128;
  /// Width of the x-vector; the talker's hidden size (it fills a prompt row).
  std::uint32_t enc_dim = 1024;
  std::vector<std::uint32_t> enc_channels{512, 512, 512, 512, 1536};
  std::vector<std::uint32_t> enc_kernel_sizes{5, 3, 3, 3, 1};
  std::vector<std::uint32_t> enc_dilations{1, 2, 3, 4, 1};
  std::uint32_t enc_attention_channels = 128;
  std::uint32_t enc_res2net_scale = 8;
  std::uint32_t enc_se_channels = 128;
  /// The mel front end's rate (upstream's mel_spectrogram: n_fft 1024, hop
  /// 256, Hann 1024, 128 Slaney mels over 0-12 kHz, ln with a 1e-5 floor).
  std::uint32_t sample_rate = 24000;

  /// SE-Res2Net blocks: enc_channels.size() - 2.
  std::size_t num_blocks() const noexcept { return enc_channels.size() < 2 ? 0 : enc_channels.size() - 2; }

  static Qwen3TtsSpeakerEncoderConfig from(const io::ConfigView& speaker_encoder_config);
  /// izwi::invalid_argument naming the field when the shape cannot run.
  void validate() const;
};

/// talker_config and the top-level token ids of config.json.
struct Qwen3TtsConfig {
  /// "custom_voice", "voice_design" or "base" (tts_model_type).
  std::string model_type;
  /// The talker: a Qwen3 over codec tokens; vocab_size is the codec vocabulary (3072).
  Qwen3Config talker;
  /// The code predictor: a Qwen3 whose vocab_size is one codebook (2048).
  Qwen3Config predictor;
  /// Rows and width of the text embedding, and the text projection's hidden width.
  std::uint32_t text_vocab_size = 151936;
  std::uint32_t text_hidden_size = 2048;
  /// Codebooks per frame: codebook 0 from the talker, 1..15 from the predictor.
  std::uint32_t num_code_groups = 16;
  /// M-RoPE sections of the talker (they sum to head_dim / 2). The talker
  /// gives every section the same position, where M-RoPE equals plain RoPE.
  std::vector<std::uint32_t> mrope_section;

  // Codec control ids (talker vocabulary).
  TokenId codec_pad_id = 2148, codec_bos_id = 2149, codec_eos_id = 2150;
  TokenId codec_think_id = 2154, codec_nothink_id = 2155, codec_think_bos_id = 2156, codec_think_eos_id = 2157;
  /// Language name (lower case) → codec id ("english" → …); "auto" is not listed.
  std::map<std::string, TokenId, std::less<>> languages;
  /// CustomVoice speaker name (lower case) → codec id.
  std::map<std::string, TokenId, std::less<>> speakers;
  /// Speaker → dialect language name, for speakers that speak one (spk_is_dialect).
  std::map<std::string, std::string, std::less<>> speaker_dialects;
  /// The speaker encoder (Base models: tts_model_type "base"); absent otherwise.
  std::optional<Qwen3TtsSpeakerEncoderConfig> speaker_encoder;

  // Text-token ids (text vocabulary).
  TokenId im_start_id = 151644, im_end_id = 151645, assistant_id = 77091, newline_id = 198;
  /// "user" in Qwen's vocabulary, for the instruction's chat wrap (no config key carries it).
  TokenId user_id = 872;
  TokenId tts_pad_id = 151671, tts_bos_id = 151672, tts_eos_id = 151673;

  /// The first codebook's ids the talker may sample: [0, codebook_size) and EOS.
  /// Ids [vocab - 1024, vocab) other than EOS are control ids, never sampled.
  std::uint32_t first_control_id() const noexcept { return talker.vocab_size - 1024; }

  /// From config.json (izwi::io::config_error naming the key).
  static Qwen3TtsConfig read(const std::filesystem::path& config_json);
  static Qwen3TtsConfig from(const io::ConfigView& config);
  /// izwi::invalid_argument naming the field when the model cannot run.
  void validate() const;
};

}  // namespace izwi

#if !defined(IZWI_SEPARATE_COMPILATION)
#include "izwi/models/impl/qwen3_tts_config.ipp"
#endif
