#pragma once
// Shared by the VAD tests: fixture paths, WAV reading through libsndfile, and
// running the reference scripts (onnxruntime-node, Python) into the build dir.

#include <sndfile.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace vad_test {

inline std::filesystem::path fixtures() { return IZWI_FIXTURES_DIR; }
inline std::filesystem::path source_dir() { return IZWI_SOURCE_DIR; }
inline std::filesystem::path output_dir() { return IZWI_VAD_TEST_OUTPUT_DIR; }
inline std::filesystem::path silero_weights() { return source_dir() / "assets/silero-vad/silero_vad_v5_16k.safetensors"; }
inline std::filesystem::path silero_onnx() { return fixtures() / "silero-vad/silero_vad_16k_op15.onnx"; }

/// True (after a WARN saying why) when ../shared/fixtures is absent: the
/// caller returns, and the test reports itself skipped.
inline bool skip_without_fixtures() {
  if (std::filesystem::exists(fixtures() / "audio/jfk.wav")) return false;
  WARN("skipped: fixtures not found at " << fixtures().string());
  return true;
}

/// Mono float samples of a 16 kHz fixture; FAILs the test if unreadable.
inline std::vector<float> read_wav_16k_mono(const std::filesystem::path& path) {
  SF_INFO info{};
  SNDFILE* file = sf_open(path.c_str(), SFM_READ, &info);
  REQUIRE(file != nullptr);
  REQUIRE(info.samplerate == 16000);
  REQUIRE(info.channels == 1);
  std::vector<float> samples(static_cast<std::size_t>(info.frames));
  const sf_count_t got = sf_readf_float(file, samples.data(), info.frames);
  sf_close(file);
  REQUIRE(got == info.frames);
  return samples;
}

inline std::string quoted(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

inline bool command_works(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; }

/// Why the onnxruntime reference cannot run here, or nullopt if it can.
inline std::optional<std::string> onnxruntime_missing() {
  if (!std::filesystem::exists(silero_onnx())) return "fixture " + silero_onnx().string() + " is missing";
  if (!command_works("node --version")) return "node is not on PATH";
  if (!std::filesystem::exists(source_dir() / "test/reference/node_modules/onnxruntime-node"))
    return "onnxruntime-node is not installed (npm ci --ignore-scripts in test/reference)";
  return std::nullopt;
}

inline std::vector<double> read_numbers(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<double> values;
  double v;
  while (in >> v) values.push_back(v);
  return values;
}

/// Runs test/vad/silero_reference.mjs on a fixture (once per process);
/// returns onnxruntime's per-window probabilities.
inline std::vector<double> onnxruntime_probabilities(const std::string& wav_name) {
  static std::map<std::string, std::vector<double>> computed;
  if (const auto it = computed.find(wav_name); it != computed.end()) return it->second;
  const auto out = output_dir() / (wav_name + ".onnxruntime.txt");
  const std::string command = "node " + quoted(source_dir() / "test/vad/silero_reference.mjs") + " " + quoted(silero_onnx()) +
                              " " + quoted(fixtures() / "audio" / wav_name) + " " + quoted(out);
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
  return computed[wav_name] = read_numbers(out);
}

}  // namespace vad_test
