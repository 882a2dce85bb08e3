#pragma once
// The random-weight Whisper (tiny shape, seed 7) the Whisper tests share,
// written once per build tree by izwi-make-random-whisper from whisper.cpp's
// for-tests-ggml-tiny.bin (mel filters + vocabulary) and multilingual.tiktoken:
// an HF directory and F32, F16 and Q8_0 ggml files of the same arrays. The goldens under
// test/models/goldens come from the same command (test/reference/whisper_cpp_goldens.sh).

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <span>
#include <vector>
#include <filesystem>
#include <string>

#include "relative_difference.hpp"
#include "izwi/audio/decode.hpp"
#include "izwi/audio/mel.hpp"
#include "izwi/models/whisper.hpp"
#include "models/made_once.hpp"

namespace izwi::testing {

/// ../shared/fixtures beside the source tree, or $IZWI_FIXTURES_DIR when set
/// (a git worktree has no shared/ beside it).
inline std::filesystem::path whisper_fixtures() {
  if (const char* dir = std::getenv("IZWI_FIXTURES_DIR"); dir != nullptr && *dir != '\0') return dir;
  return std::filesystem::path(IZWI_FIXTURES_DIR);
}

/// False (with the reason printed) when ../shared/fixtures is absent.
inline bool have_whisper_fixtures() {
  if (std::filesystem::exists(whisper_fixtures() / "whisper/for-tests-ggml-tiny.bin")) return true;
  WARN("SKIPPED: " << whisper_fixtures() << " lacks whisper/for-tests-ggml-tiny.bin (../shared/fixtures)");
  return false;
}

inline std::filesystem::path random_whisper() {
  return made_once(std::filesystem::current_path() / "random-whisper-tiny", "ggml-model-q8_0.bin",
                   [](const std::filesystem::path& out) {
                     return std::string(IZWI_MAKE_RANDOM_WHISPER) + " --out " + out.string() + " --vocab-from " +
                            (whisper_fixtures() / "whisper/for-tests-ggml-tiny.bin").string() + " --tiktoken " +
                            (whisper_fixtures() / "whisper/multilingual.tiktoken").string() +
                            " --seed 7 --ggml-type f16,q8_0";
                   });
}

/// 16-kHz mono samples of the 30-s window of fixtures/audio/`file` that starts `offset_seconds` in.
inline std::vector<float> window_samples_of(const std::string& file, std::size_t offset_seconds = 0) {
  audio::DecodeOptions options;
  options.target_sample_rate = audio::whisper_sample_rate;
  const auto decoded = audio::decode_file(whisper_fixtures() / "audio" / file, options);
  const auto& samples = decoded.audio.samples;
  const std::size_t skip = std::min(samples.size(), offset_seconds * audio::whisper_sample_rate);
  const std::size_t take = std::min<std::size_t>(samples.size() - skip, 30 * audio::whisper_sample_rate);
  return {samples.begin() + static_cast<std::ptrdiff_t>(skip), samples.begin() + static_cast<std::ptrdiff_t>(skip + take)};
}

/// Whisper's log-mel of the 30-s window of `file` that starts `offset_seconds` in.
inline std::vector<float> log_mel_of(const std::string& file, std::size_t offset_seconds = 0) {
  return audio::WhisperLogMel(80)(window_samples_of(file, offset_seconds)).values;
}

/// A file of the random model, loaded once per process (each load copies ~150 MB).
inline const Whisper& model(const std::string& file, DType kv = DType::f32) {
  static std::map<std::pair<std::string, DType>, std::unique_ptr<Whisper>> cache;
  auto& slot = cache[{file, kv}];
  if (!slot) {
    WhisperLoadOptions options;
    options.kv_cache_dtype = kv;
    slot = std::make_unique<Whisper>(Whisper::load(random_whisper() / file, options));
  }
  return *slot;
}

}  // namespace izwi::testing
