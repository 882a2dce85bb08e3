#pragma once
// Reading and checking Qwen3-TTS's config.json and speech_tokenizer/config.json.
// Inline in header-only builds; compiled once, in <izwi/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include "izwi/config.hpp"
#include "izwi/models/qwen3_tts_config.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <string>
#include <utility>

#include "izwi/core/error.hpp"
#include "izwi/io/json.hpp"

namespace izwi {

IZWI_DECL std::size_t Qwen3TtsCodecConfig::samples_per_frame() const noexcept {
  std::size_t n = 1;
  for (std::uint32_t r : upsample_rates) n *= r;
  for (std::uint32_t r : upsampling_ratios) n *= r;
  return n;
}

IZWI_DECL std::uint32_t Qwen3TtsCodecConfig::output_channels() const noexcept {
  return decoder_dim >> upsample_rates.size();
}

IZWI_DECL Qwen3TtsCodecConfig Qwen3TtsCodecConfig::read(const std::filesystem::path& config_json) {
  const io::JsonValue doc = io::read_json_file(config_json);
  const io::ConfigView root(doc, config_json.string());
  Qwen3TtsCodecConfig c = from(root.object("decoder_config"));
  c.output_sample_rate = root.optional<std::uint32_t>("output_sample_rate", c.output_sample_rate);
  if (const auto rate = root.optional<std::uint32_t>("decode_upsample_rate"); rate && *rate != c.samples_per_frame())
    throw root.make_error("decode_upsample_rate", "is " + std::to_string(*rate) + " but the decoder's strides give " +
                                                      std::to_string(c.samples_per_frame()) + " samples per frame");
  return c;
}

IZWI_DECL Qwen3TtsCodecConfig Qwen3TtsCodecConfig::from(const io::ConfigView& d) {
  Qwen3TtsCodecConfig c;
  c.codebook_size = d.optional<std::uint32_t>("codebook_size", c.codebook_size);
  c.codebook_dim = d.optional<std::uint32_t>("codebook_dim", c.codebook_dim);
  c.num_quantizers = d.optional<std::uint32_t>("num_quantizers", c.num_quantizers);
  c.latent_dim = d.optional<std::uint32_t>("latent_dim", c.latent_dim);
  c.hidden_size = d.optional<std::uint32_t>("hidden_size", c.hidden_size);
  c.intermediate_size = d.optional<std::uint32_t>("intermediate_size", c.intermediate_size);
  c.num_layers = d.optional<std::uint32_t>("num_hidden_layers", c.num_layers);
  c.num_heads = d.optional<std::uint32_t>("num_attention_heads", c.num_heads);
  c.num_kv_heads = d.optional<std::uint32_t>("num_key_value_heads", c.num_heads);
  c.head_dim = d.optional<std::uint32_t>("head_dim", c.num_heads ? c.hidden_size / c.num_heads : 0);
  c.sliding_window = d.optional<std::uint32_t>("sliding_window", c.sliding_window);
  c.rope_theta = d.optional<double>("rope_theta", c.rope_theta);
  c.rms_norm_eps = d.optional<double>("rms_norm_eps", c.rms_norm_eps);
  c.decoder_dim = d.optional<std::uint32_t>("decoder_dim", c.decoder_dim);
  c.upsample_rates = d.optional<std::vector<std::uint32_t>>("upsample_rates", c.upsample_rates);
  c.upsampling_ratios = d.optional<std::vector<std::uint32_t>>("upsampling_ratios", c.upsampling_ratios);
  if (d.optional<bool>("attention_bias", false))
    throw d.make_error("attention_bias", "the codec transformer has no attention bias; this checkpoint does");
  if (const std::string act = d.optional<std::string>("hidden_act", "silu"); act != "silu")
    throw d.make_error("hidden_act", "the codec transformer uses silu; this checkpoint says '" + act + "'");
  c.validate();
  return c;
}

IZWI_DECL void Qwen3TtsCodecConfig::validate() const {
  auto positive = [](std::uint32_t v, const char* field) {
    if (v == 0) throw invalid_argument(field, std::string("Qwen3-TTS codec: ") + field + " must be positive");
  };
  positive(codebook_size, "codebook_size");
  positive(num_quantizers, "num_quantizers");
  positive(latent_dim, "latent_dim");
  positive(hidden_size, "hidden_size");
  positive(intermediate_size, "intermediate_size");
  positive(num_heads, "num_attention_heads");
  positive(num_kv_heads, "num_key_value_heads");
  positive(head_dim, "head_dim");
  positive(sliding_window, "sliding_window");
  if (codebook_dim == 0 || codebook_dim % 2 != 0)
    throw invalid_argument("codebook_dim", "Qwen3-TTS codec: codebook_dim must be even and positive (each RVQ "
                                           "codebook holds codebook_dim / 2)");
  if (num_quantizers < 2)
    throw invalid_argument("num_quantizers", "Qwen3-TTS codec: the split RVQ needs at least 2 quantizers");
  if (num_heads % num_kv_heads != 0)
    throw invalid_argument("num_key_value_heads", "Qwen3-TTS codec: num_attention_heads must be a multiple of it");
  if (head_dim % 2 != 0) throw invalid_argument("head_dim", "Qwen3-TTS codec: rotary embedding needs an even head_dim");
  if (upsample_rates.empty() || upsampling_ratios.empty())
    throw invalid_argument("upsample_rates", "Qwen3-TTS codec: upsample_rates and upsampling_ratios must not be empty");
  for (std::uint32_t r : upsample_rates) positive(r, "upsample_rates");
  for (std::uint32_t r : upsampling_ratios) positive(r, "upsampling_ratios");
  if (upsample_rates.size() >= 31 || (decoder_dim >> upsample_rates.size()) == 0 ||
      (decoder_dim % (1u << upsample_rates.size())) != 0)
    throw invalid_argument("decoder_dim", "Qwen3-TTS codec: decoder_dim " + std::to_string(decoder_dim) +
                                              " must halve evenly once per decoder block (" +
                                              std::to_string(upsample_rates.size()) + " blocks)");
}

IZWI_DECL Qwen3TtsSpeakerEncoderConfig Qwen3TtsSpeakerEncoderConfig::from(const io::ConfigView& e) {
  Qwen3TtsSpeakerEncoderConfig c;
  c.mel_dim = e.optional<std::uint32_t>("mel_dim", c.mel_dim);
  c.enc_dim = e.optional<std::uint32_t>("enc_dim", c.enc_dim);
  c.enc_channels = e.optional<std::vector<std::uint32_t>>("enc_channels", c.enc_channels);
  c.enc_kernel_sizes = e.optional<std::vector<std::uint32_t>>("enc_kernel_sizes", c.enc_kernel_sizes);
  c.enc_dilations = e.optional<std::vector<std::uint32_t>>("enc_dilations", c.enc_dilations);
  c.enc_attention_channels = e.optional<std::uint32_t>("enc_attention_channels", c.enc_attention_channels);
  c.enc_res2net_scale = e.optional<std::uint32_t>("enc_res2net_scale", c.enc_res2net_scale);
  c.enc_se_channels = e.optional<std::uint32_t>("enc_se_channels", c.enc_se_channels);
  c.sample_rate = e.optional<std::uint32_t>("sample_rate", c.sample_rate);
  c.validate();
  return c;
}

IZWI_DECL void Qwen3TtsSpeakerEncoderConfig::validate() const {
  auto fail = [](const char* field, const std::string& problem) {
    throw invalid_argument(std::string("speaker_encoder_config.") + field,
                           std::string("Qwen3-TTS speaker encoder: ") + field + " " + problem);
  };
  if (mel_dim == 0) fail("mel_dim", "must be positive");
  if (enc_dim == 0) fail("enc_dim", "must be positive");
  if (enc_attention_channels == 0) fail("enc_attention_channels", "must be positive");
  if (enc_se_channels == 0) fail("enc_se_channels", "must be positive");
  if (enc_res2net_scale < 2) fail("enc_res2net_scale", "must be at least 2");
  if (sample_rate == 0) fail("sample_rate", "must be positive");
  if (enc_channels.size() < 3) fail("enc_channels", "needs a stem, at least one block and the aggregation");
  if (enc_kernel_sizes.size() != enc_channels.size() || enc_dilations.size() != enc_channels.size())
    fail("enc_kernel_sizes", "and enc_dilations must have one entry per enc_channels entry");
  std::uint64_t aggregated = 0;
  for (std::size_t i = 0; i < enc_channels.size(); ++i) {
    if (enc_channels[i] == 0 || enc_kernel_sizes[i] == 0 || enc_dilations[i] == 0)
      fail("enc_channels", "entry " + std::to_string(i) + ": channels, kernel size and dilation must be positive");
    if (enc_kernel_sizes[i] % 2 == 0)
      fail("enc_kernel_sizes", "entry " + std::to_string(i) + " is even; 'same' padding needs odd kernels");
    if (i == 0 || i + 1 == enc_channels.size()) continue;
    // A block adds its input back, and Res2Net splits its channels into `scale` groups.
    if (enc_channels[i] != enc_channels[i - 1])
      fail("enc_channels", "entry " + std::to_string(i) + " must equal the entry before it (the block is residual)");
    if (enc_channels[i] % enc_res2net_scale != 0)
      fail("enc_channels", "entry " + std::to_string(i) + " is not a multiple of enc_res2net_scale");
    aggregated += enc_channels[i];
  }
  if (aggregated != enc_channels.back())
    fail("enc_channels", "last entry is " + std::to_string(enc_channels.back()) +
                             " but the blocks' outputs concatenated are " + std::to_string(aggregated) + " wide");
}

namespace detail {

IZWI_DECL std::string lower_case(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

/// {"name": id} or {"name": [id]} (both appear in published configs) as a map.
IZWI_DECL std::map<std::string, TokenId, std::less<>> read_id_map(const io::ConfigView& parent, std::string_view key) {
  std::map<std::string, TokenId, std::less<>> out;
  const io::JsonValue* value = parent.find(key);
  if (value == nullptr || value->is_null()) return out;
  if (!value->is_object()) throw parent.make_error(key, "is " + io::json_kind_phrase(*value) + ", not an object");
  for (const auto& [name, id] : value->as_object()) {
    const io::JsonValue* v = &id;
    if (v->is_array() && v->as_array().size() == 1) v = &v->as_array()[0];
    const auto integer = io::json_integer(*v);
    if (!integer || *integer < 0)
      throw parent.make_error(std::string(key) + "." + std::string(name), "is not a non-negative integer id");
    out[lower_case(name)] = static_cast<TokenId>(*integer);
  }
  return out;
}

/// A Qwen3 backbone's shape from talker_config or code_predictor_config.
IZWI_DECL Qwen3Config read_tts_backbone(const io::ConfigView& c, double default_theta) {
  Qwen3Config q;
  q.hidden_size = c.required<std::uint32_t>("hidden_size");
  q.num_layers = c.required<std::uint32_t>("num_hidden_layers");
  q.num_heads = c.required<std::uint32_t>("num_attention_heads");
  q.num_kv_heads = c.optional<std::uint32_t>("num_key_value_heads", q.num_heads);
  q.head_dim = c.optional<std::uint32_t>("head_dim", q.num_heads ? q.hidden_size / q.num_heads : 0);
  q.intermediate_size = c.required<std::uint32_t>("intermediate_size");
  q.vocab_size = c.required<std::uint32_t>("vocab_size");
  q.max_position_embeddings = c.optional<std::uint32_t>("max_position_embeddings", 0);
  q.rope_theta = c.optional<double>("rope_theta", default_theta);
  q.rms_norm_eps = c.optional<double>("rms_norm_eps", 1e-6);
  if (c.optional<bool>("attention_bias", false))
    throw c.make_error("attention_bias", "Qwen3-TTS has no attention bias; this checkpoint does");
  if (c.optional<bool>("use_sliding_window", false))
    throw c.make_error("use_sliding_window", "sliding-window attention is not supported in the talker");
  if (const std::string act = c.optional<std::string>("hidden_act", "silu"); act != "silu")
    throw c.make_error("hidden_act", "Qwen3-TTS uses silu; this checkpoint says '" + act + "'");
  return q;
}

}  // namespace detail

IZWI_DECL Qwen3TtsConfig Qwen3TtsConfig::read(const std::filesystem::path& config_json) {
  const io::JsonValue doc = io::read_json_file(config_json);
  return from(io::ConfigView(doc, config_json.string()));
}

IZWI_DECL Qwen3TtsConfig Qwen3TtsConfig::from(const io::ConfigView& root) {
  Qwen3TtsConfig c;
  c.model_type = root.optional<std::string>("tts_model_type", "custom_voice");
  c.im_start_id = root.optional<TokenId>("im_start_token_id", c.im_start_id);
  c.im_end_id = root.optional<TokenId>("im_end_token_id", c.im_end_id);
  c.assistant_id = root.optional<TokenId>("assistant_token_id", c.assistant_id);
  c.tts_pad_id = root.optional<TokenId>("tts_pad_token_id", c.tts_pad_id);
  c.tts_bos_id = root.optional<TokenId>("tts_bos_token_id", c.tts_bos_id);
  c.tts_eos_id = root.optional<TokenId>("tts_eos_token_id", c.tts_eos_id);

  const io::ConfigView t = root.object("talker_config");
  c.talker = detail::read_tts_backbone(t, 1000000.0);
  c.predictor = detail::read_tts_backbone(t.object("code_predictor_config"), 1000000.0);
  c.text_vocab_size = t.optional<std::uint32_t>("text_vocab_size", c.text_vocab_size);
  c.text_hidden_size = t.optional<std::uint32_t>("text_hidden_size", c.text_hidden_size);
  c.num_code_groups = t.optional<std::uint32_t>("num_code_groups", c.num_code_groups);
  if (t.has("rope_scaling")) {
    const io::ConfigView rope = t.object("rope_scaling");
    c.mrope_section = rope.optional<std::vector<std::uint32_t>>("mrope_section", {});
    const std::string type = rope.optional<std::string>("rope_type", rope.optional<std::string>("type", "default"));
    if (type != "default") throw rope.make_error("rope_type", "'" + type + "' is not supported (only default M-RoPE)");
  }
  c.codec_pad_id = t.optional<TokenId>("codec_pad_id", c.codec_pad_id);
  c.codec_bos_id = t.optional<TokenId>("codec_bos_id", c.codec_bos_id);
  c.codec_eos_id = t.optional<TokenId>("codec_eos_token_id", c.codec_eos_id);
  c.codec_think_id = t.optional<TokenId>("codec_think_id", c.codec_think_id);
  c.codec_nothink_id = t.optional<TokenId>("codec_nothink_id", c.codec_nothink_id);
  c.codec_think_bos_id = t.optional<TokenId>("codec_think_bos_id", c.codec_think_bos_id);
  c.codec_think_eos_id = t.optional<TokenId>("codec_think_eos_id", c.codec_think_eos_id);
  c.languages = detail::read_id_map(t, "codec_language_id");
  c.speakers = detail::read_id_map(t, "spk_id");
  if (const io::JsonValue* dialects = t.find("spk_is_dialect"); dialects && dialects->is_object())
    for (const auto& [name, value] : dialects->as_object())
      if (const auto dialect = io::json_string(value)) c.speaker_dialects[detail::lower_case(name)] = std::string(*dialect);
  if (c.model_type == "base") {
    if (!root.has("speaker_encoder_config"))
      throw root.make_error("speaker_encoder_config", "is missing; a Base model (tts_model_type \"base\") "
                                                      "clones voices through its speaker encoder");
    c.speaker_encoder = Qwen3TtsSpeakerEncoderConfig::from(root.object("speaker_encoder_config"));
  }
  c.validate();
  return c;
}

IZWI_DECL void Qwen3TtsConfig::validate() const {
  auto check_backbone = [](const Qwen3Config& q, const std::string& which) {
    if (q.hidden_size == 0 || q.num_layers == 0 || q.num_heads == 0 || q.num_kv_heads == 0 || q.head_dim == 0 ||
        q.intermediate_size == 0 || q.vocab_size == 0)
      throw invalid_argument(which, "Qwen3-TTS " + which + ": every size must be positive");
    if (q.num_heads % q.num_kv_heads != 0)
      throw invalid_argument(which + ".num_key_value_heads",
                             "Qwen3-TTS " + which + ": num_attention_heads must be a multiple of num_key_value_heads");
    if (q.head_dim % 2 != 0)
      throw invalid_argument(which + ".head_dim", "Qwen3-TTS " + which + ": rotary embedding needs an even head_dim");
  };
  check_backbone(talker, "talker_config");
  check_backbone(predictor, "code_predictor_config");
  if (text_vocab_size == 0 || text_hidden_size == 0)
    throw invalid_argument("text_vocab_size", "Qwen3-TTS: text_vocab_size and text_hidden_size must be positive");
  if (num_code_groups < 2)
    throw invalid_argument("num_code_groups", "Qwen3-TTS: num_code_groups must be at least 2");
  if (talker.vocab_size <= 1024 || predictor.vocab_size > talker.vocab_size - 1024)
    throw invalid_argument("talker_config.vocab_size",
                           "Qwen3-TTS: the talker's vocabulary (" + std::to_string(talker.vocab_size) +
                               ") must hold the codebook (" + std::to_string(predictor.vocab_size) +
                               " ids) below its 1024 control ids");
  if (!mrope_section.empty()) {
    const auto sum = std::accumulate(mrope_section.begin(), mrope_section.end(), std::uint64_t{0});
    if (sum != talker.head_dim / 2)
      throw invalid_argument("talker_config.rope_scaling.mrope_section",
                             "Qwen3-TTS: mrope_section sums to " + std::to_string(sum) + ", not head_dim / 2 = " +
                                 std::to_string(talker.head_dim / 2));
  }
  auto codec_id = [&](TokenId id, const char* field) {
    if (id < 0 || static_cast<std::uint32_t>(id) >= talker.vocab_size)
      throw invalid_argument(field, std::string("Qwen3-TTS: ") + field + " " + std::to_string(id) +
                                        " is outside the talker vocabulary (" + std::to_string(talker.vocab_size) + ")");
  };
  codec_id(codec_pad_id, "codec_pad_id");
  codec_id(codec_bos_id, "codec_bos_id");
  codec_id(codec_eos_id, "codec_eos_token_id");
  codec_id(codec_think_id, "codec_think_id");
  codec_id(codec_nothink_id, "codec_nothink_id");
  codec_id(codec_think_bos_id, "codec_think_bos_id");
  codec_id(codec_think_eos_id, "codec_think_eos_id");
  for (const auto& [name, id] : languages) codec_id(id, "codec_language_id");
  for (const auto& [name, id] : speakers) codec_id(id, "spk_id");
  auto text_id = [&](TokenId id, const char* field) {
    if (id < 0 || static_cast<std::uint32_t>(id) >= text_vocab_size)
      throw invalid_argument(field, std::string("Qwen3-TTS: ") + field + " " + std::to_string(id) +
                                        " is outside the text vocabulary (" + std::to_string(text_vocab_size) + ")");
  };
  text_id(im_start_id, "im_start_token_id");
  text_id(im_end_id, "im_end_token_id");
  text_id(assistant_id, "assistant_token_id");
  text_id(tts_pad_id, "tts_pad_token_id");
  text_id(tts_bos_id, "tts_bos_token_id");
  text_id(tts_eos_id, "tts_eos_token_id");
  if (speaker_encoder) {
    speaker_encoder->validate();
    if (speaker_encoder->enc_dim != talker.hidden_size)
      throw invalid_argument("speaker_encoder_config.enc_dim",
                             "Qwen3-TTS: the speaker encoder's enc_dim " + std::to_string(speaker_encoder->enc_dim) +
                                 " must equal the talker's hidden_size " + std::to_string(talker.hidden_size) +
                                 " (the x-vector fills a prompt row)");
  }
}

}  // namespace izwi
