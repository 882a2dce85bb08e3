// Qwen3-TTS in-context voice cloning on the random small-shape Base
// checkpoint (izwi-make-random-qwen3-tts --model-type base, which writes the
// speech tokenizer's Mimi encoder): the speech encoder's config and tensors
// load with errors naming key, file and tensor; its reference codes are
// deterministic, ceil(N / 1920) frames of 16 codes in range, independent of the
// thread count, and causal (the codes of the first k·1920 samples are the
// first k frames of the whole: the property a streaming encoder must keep).
// No independent implementation of the encoder runs here (no torch); see
// docs/tts.md "In-context cloning" for what is and is not verified.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "izwi/core/error.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/models/qwen3_tts.hpp"
#include "izwi/models/qwen3_tts_request.hpp"
#include "izwi/stock_engines.hpp"
#include "models/random_qwen3_tts.hpp"

using namespace izwi;
namespace fs = std::filesystem;

namespace {

const Qwen3Tts& icl_base_model() {
  static const Qwen3Tts m = Qwen3Tts::load(testing::random_qwen3_tts("base"));
  return m;
}

/// A reference-like signal: a gliding tone with harmonics and a little noise.
std::vector<float> icl_reference(std::size_t samples, double f0, std::uint64_t seed = 99) {
  std::vector<float> x(samples);
  double phase = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double t = double(i) / 24000.0, f = f0 * (1.0 + 0.3 * std::sin(2.0 * M_PI * 0.8 * t));
    phase += 2.0 * M_PI * f / 24000.0;
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    const double noise = double(seed >> 40) / double(1ULL << 24) - 0.5;
    x[i] = static_cast<float>(0.3 * std::sin(phase) + 0.1 * std::sin(3 * phase) + 0.05 * noise);
  }
  return x;
}

/// A copy of the Base checkpoint whose speech_tokenizer/config.json has `from` replaced by `to`.
fs::path icl_codec_with(const std::string& name, const std::string& from, const std::string& to) {
  const fs::path source = testing::random_qwen3_tts("base");
  const fs::path dir = fs::current_path() / ("qwen3-tts-icl-broken-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir / "speech_tokenizer");
  fs::copy_file(source / "config.json", dir / "config.json");
  fs::create_symlink(source / "model.safetensors", dir / "model.safetensors");
  fs::create_symlink(source / "speech_tokenizer/model.safetensors", dir / "speech_tokenizer/model.safetensors");
  std::ifstream in(source / "speech_tokenizer/config.json");
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  std::ofstream(dir / "speech_tokenizer/config.json") << text;
  return dir;
}

}  // namespace

TEST_CASE("Qwen3-TTS speech encoder: encoder_config is read and its tensors are checked", "[qwen3_tts][icl]") {
  const Qwen3TtsSpeechEncoder* enc = icl_base_model().speech_encoder();
  REQUIRE(enc != nullptr);
  const Qwen3TtsSpeechEncoderConfig& c = enc->config();
  CHECK(c.hop() == 960);
  CHECK(c.downsample_stride() == 2);
  CHECK(c.samples_per_frame() == 1920);
  CHECK(c.valid_quantizers == 16);
  CHECK(c.hidden_size == 32);
  // CustomVoice checkpoints clone nothing: no speech encoder, and asking says why.
  const Qwen3Tts custom = Qwen3Tts::load(testing::random_qwen3_tts());
  CHECK(custom.speech_encoder() == nullptr);
  CHECK_THROWS_WITH(custom.reference_codes(std::vector<float>(4800, 0.1f), 24000),
                    Catch::Contains("no speech tokenizer encoder"));

  using testing::qwen3_tts_load_error;
  // A layer the weights lack: the missing tensor named with its file.
  CHECK_THAT(qwen3_tts_load_error(icl_codec_with("layers", "\"num_hidden_layers\": 2", "\"num_hidden_layers\": 3")),
             Catch::Contains("encoder.encoder_transformer.layers.2.input_layernorm.weight") &&
                 Catch::Contains("speech_tokenizer"));
  // A shape the weights do not have.
  CHECK_THAT(qwen3_tts_load_error(icl_codec_with("filters", "\"num_filters\": 8", "\"num_filters\": 16")),
             Catch::Contains("encoder.encoder.layers.0.conv.weight") && Catch::Contains("model.safetensors"));
  CHECK_THAT(qwen3_tts_load_error(icl_codec_with("act", "\"hidden_act\": \"gelu\"", "\"hidden_act\": \"relu\"")),
             Catch::Contains("hidden_act"));
  CHECK_THAT(qwen3_tts_load_error(icl_codec_with("pad", "\"pad_mode\": \"constant\"", "\"pad_mode\": \"reflect\"")),
             Catch::Contains("pad_mode"));
  CHECK_THAT(qwen3_tts_load_error(icl_codec_with("rate", "\"encode_downsample_rate\": 1920",
                                                 "\"encode_downsample_rate\": 960")),
             Catch::Contains("encode_downsample_rate"));
}

TEST_CASE("Qwen3-TTS speech encoder: reference codes are deterministic, causal and in range", "[qwen3_tts][icl]") {
  const Qwen3Tts& m = icl_base_model();
  const std::vector<float> ref = icl_reference(24000 + 700, 140.0);  // not a whole number of frames
  detail::ThreadPool one(1), two(2);
  const std::vector<std::int32_t> codes = m.reference_codes(ref, 24000, two);
  const std::size_t frames = (ref.size() + 1919) / 1920;
  REQUIRE(codes.size() == frames * 16);
  CHECK(m.speech_encoder()->frames(ref.size()) == frames);
  for (std::int32_t code : codes) REQUIRE((code >= 0 && code < 2048));
  // Codes carry the signal: several distinct values per codebook across frames.
  for (std::size_t q : {std::size_t{0}, std::size_t{1}, std::size_t{15}}) {
    std::set<std::int32_t> distinct;
    for (std::size_t t = 0; t < frames; ++t) distinct.insert(codes[t * 16 + q]);
    CHECK(distinct.size() >= 3);
  }
  CHECK(m.reference_codes(ref, 24000, two) == codes);
  CHECK(m.reference_codes(ref, 24000, one) == codes);
  // Causal: the codes of a prefix of whole frames are the whole's first frames.
  for (std::size_t k : {std::size_t{1}, std::size_t{4}, std::size_t{9}}) {
    const std::vector<float> prefix(ref.begin(), ref.begin() + static_cast<std::ptrdiff_t>(k * 1920));
    const std::vector<std::int32_t> head = m.reference_codes(prefix, 24000, two);
    REQUIRE(head.size() == k * 16);
    CHECK(std::equal(head.begin(), head.end(), codes.begin()));
  }
  // Another recording gives other codes.
  CHECK(m.reference_codes(icl_reference(ref.size(), 260.0, 5), 24000, two) != codes);
  // 16 kHz input is resampled to 24 kHz first.
  const std::vector<float> at16k = icl_reference(16000, 140.0);
  CHECK(m.reference_codes(at16k, 16000, two).size() == 13 * 16);
  CHECK_THROWS_AS(m.reference_codes(std::vector<float>{}, 24000, two), invalid_argument);
  std::vector<float> broken = ref;
  broken[10] = std::nanf("");
  CHECK_THROWS_WITH(m.reference_codes(broken, 24000, two), Catch::Contains("not finite"));
}
