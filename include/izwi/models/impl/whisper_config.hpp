#pragma once
// WhisperConfig: the published shapes and their checks. Inline in both build
// modes: the HTTP Server's word timestamps use them (impl/whisper_alignment.hpp)
// and must not need the stock engines' compiled unit.

#include <string>
#include <string_view>

#include "izwi/core/error.hpp"

namespace izwi {

inline WhisperConfig WhisperConfig::preset(std::string_view name) {
  struct Shape {
    std::string_view name;
    std::uint32_t d, heads, enc_layers, dec_layers, mels, vocab;
  };
  static constexpr Shape shapes[] = {
      {"tiny", 384, 6, 4, 4, 80, 51865},          {"tiny.en", 384, 6, 4, 4, 80, 51864},
      {"base", 512, 8, 6, 6, 80, 51865},          {"base.en", 512, 8, 6, 6, 80, 51864},
      {"small", 768, 12, 12, 12, 80, 51865},      {"small.en", 768, 12, 12, 12, 80, 51864},
      {"medium", 1024, 16, 24, 24, 80, 51865},    {"medium.en", 1024, 16, 24, 24, 80, 51864},
      {"large-v1", 1280, 20, 32, 32, 80, 51865},  {"large-v2", 1280, 20, 32, 32, 80, 51865},
      {"large-v3", 1280, 20, 32, 32, 128, 51866}, {"large-v3-turbo", 1280, 20, 32, 4, 128, 51866},
  };
  for (const Shape& s : shapes)
    if (s.name == name) {
      WhisperConfig c;
      c.d_model = s.d;
      c.encoder_heads = c.decoder_heads = s.heads;
      c.encoder_layers = s.enc_layers;
      c.decoder_layers = s.dec_layers;
      c.ffn_dim = 4 * s.d;
      c.n_mels = s.mels;
      c.vocab_size = s.vocab;
      return c;
    }
  throw izwi::invalid_argument("model", "unknown Whisper shape '" + std::string(name) +
                                            "' (tiny, base, small, medium, large-v1, large-v2, large-v3, "
                                            "large-v3-turbo, or tiny.en ... medium.en)");
}

inline void WhisperConfig::validate() const {
  auto need = [](bool ok, const char* field, const std::string& why) {
    if (!ok) throw izwi::invalid_argument(field, std::string("Whisper config: ") + field + " " + why);
  };
  need(d_model > 0 && encoder_layers > 0 && decoder_layers > 0 && ffn_dim > 0, "d_model", "and layer sizes must be positive");
  need(encoder_heads > 0 && d_model % encoder_heads == 0, "encoder_heads", "must divide d_model");
  need(decoder_heads == encoder_heads, "decoder_heads", "must equal encoder_heads (one head_dim)");
  need(n_mels == 80 || n_mels == 128, "n_mels", "must be 80 or 128, is " + std::to_string(n_mels));
  need(n_audio_ctx > 0 && n_text_ctx > 0, "n_audio_ctx", "and n_text_ctx must be positive");
  (void)tokenizer::WhisperSpecialTokens::for_vocab_size(vocab_size);  // throws for a size no Whisper has
}

}  // namespace izwi
