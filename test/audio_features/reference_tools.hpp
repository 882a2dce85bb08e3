#pragma once
// Running the independent references (python3 + numpy, node + transformers.js)
// from a test, and moving float arrays to and from them through raw float32
// files in the build tree.

#include <sndfile.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace izwi_test {

inline std::filesystem::path work_dir() {
  std::filesystem::path dir = IZWI_AUDIO_FEATURES_WORK_DIR;
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::filesystem::path fixtures_dir() { return IZWI_FIXTURES_DIR; }
inline std::filesystem::path script_path(const std::string& name) {
  return std::filesystem::path(IZWI_SOURCE_DIR) / "test" / "audio_features" / name;
}

inline std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

/// Runs a shell command; true when it exits with status 0.
inline bool run_command(const std::string& command) { return std::system(command.c_str()) == 0; }

/// A python3 that can import numpy: $IZWI_PYTHON, Debian's /usr/bin/python3,
/// then python3 on PATH. Empty when there is none.
inline std::optional<std::string> python_with_numpy() {
  static const std::optional<std::string> found = [] () -> std::optional<std::string> {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("IZWI_PYTHON")) candidates.emplace_back(env);
    candidates.emplace_back("/usr/bin/python3");
    candidates.emplace_back("python3");
    for (const auto& python : candidates) {
      if (run_command(quoted(python) + " -c 'import numpy' >/dev/null 2>&1")) return python;
    }
    return std::nullopt;
  }();
  return found;
}

/// node, when it is on PATH and the npm references are installed.
inline std::optional<std::string> transformers_js_node_modules() {
  const auto node_modules = std::filesystem::path(IZWI_SOURCE_DIR) / "test" / "reference" / "node_modules";
  if (!std::filesystem::exists(node_modules / "@huggingface" / "transformers" / "package.json")) return std::nullopt;
  if (!run_command("node --version >/dev/null 2>&1")) return std::nullopt;
  return node_modules.string();
}

inline void write_f32(const std::filesystem::path& path, const std::vector<float>& values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(float)));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

inline std::vector<float> read_f32(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  const auto bytes = static_cast<std::size_t>(in.tellg());
  std::vector<float> values(bytes / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(float)));
  return values;
}

/// Mono float samples of a sound file, through libsndfile (the decoder is not
/// what these tests are about).
inline std::vector<float> read_mono(const std::filesystem::path& path, int* sample_rate = nullptr) {
  SF_INFO info{};
  SNDFILE* file = sf_open(path.c_str(), SFM_READ, &info);
  if (file == nullptr) throw std::runtime_error("cannot open " + path.string());
  std::vector<float> interleaved(static_cast<std::size_t>(info.frames * info.channels));
  sf_readf_float(file, interleaved.data(), info.frames);
  sf_close(file);
  std::vector<float> mono(static_cast<std::size_t>(info.frames));
  for (std::size_t i = 0; i < mono.size(); ++i) {
    float sum = 0;
    for (int c = 0; c < info.channels; ++c) sum += interleaved[i * static_cast<std::size_t>(info.channels) + static_cast<std::size_t>(c)];
    mono[i] = sum / static_cast<float>(info.channels);
  }
  if (sample_rate) *sample_rate = info.samplerate;
  return mono;
}

inline float max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  float worst = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

}  // namespace izwi_test
