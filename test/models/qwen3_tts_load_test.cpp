// Qwen3-TTS configuration and loading: the random checkpoint of
// izwi-make-random-qwen3-tts loads with the shapes it was written with, and
// broken checkpoints fail with errors that name the file, the key or tensor,
// and the problem.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "izwi/io/json.hpp"
#include "izwi/io/safetensors.hpp"
#include "izwi/models/qwen3_tts.hpp"
#include "models/random_qwen3_tts.hpp"

using namespace izwi;
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

/// A copy of the random checkpoint (weights linked, JSON copied) to break.
fs::path scratch_copy(const std::string& name) {
  const fs::path source = testing::random_qwen3_tts();
  const fs::path dir = fs::current_path() / ("qwen3-tts-broken-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir / "speech_tokenizer");
  for (const char* f : {"config.json", "generation_config.json", "speech_tokenizer/config.json"})
    fs::copy_file(source / f, dir / f);
  fs::create_symlink(source / "model.safetensors", dir / "model.safetensors");
  fs::create_symlink(source / "speech_tokenizer/model.safetensors", dir / "speech_tokenizer/model.safetensors");
  return dir;
}

constexpr auto* load_error = &testing::qwen3_tts_load_error;

void replace_once(const fs::path& file, const std::string& from, const std::string& to) {
  std::string text = read_text(file);
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  write_text(file, text);
}

}  // namespace

TEST_CASE("the random Qwen3-TTS checkpoint loads with the shapes it was written with", "[qwen3_tts][load]") {
  const Qwen3Tts model = Qwen3Tts::load(testing::random_qwen3_tts());
  const Qwen3TtsConfig& c = model.config();
  CHECK(c.model_type == "custom_voice");
  CHECK(c.talker.hidden_size == 64);
  CHECK(c.talker.num_layers == 2);
  CHECK(c.talker.num_heads == 4);
  CHECK(c.talker.num_kv_heads == 2);
  CHECK(c.talker.head_dim == 32);
  CHECK(c.talker.vocab_size == 3072);
  CHECK(c.talker.rope_theta == 1e6);
  CHECK(c.mrope_section == std::vector<std::uint32_t>{6, 5, 5});
  CHECK(c.predictor.hidden_size == 48);
  CHECK(c.predictor.vocab_size == 2048);
  CHECK(c.text_hidden_size == 64);
  CHECK(c.codec_eos_id == 2150);
  CHECK(c.first_control_id() == 2048);
  CHECK(c.speakers.at("ryan") == 3061);
  CHECK(c.speaker_dialects.at("eric") == "sichuan_dialect");
  CHECK(c.languages.at("english") == 2050);

  CHECK(model.talker().layers.size() == 2);
  CHECK(model.talker().text_embedding.rows == 151936);
  CHECK(model.predictor().heads.size() == 15);
  CHECK(model.predictor().codec_embeddings.size() == 15);
  CHECK(model.predictor().projection.has_value());  // 48 ≠ 64: small_to_mtp_projection exists
  CHECK(model.predictor().projection->rows == 48);

  const Qwen3TtsCodecConfig& codec = model.codec().config();
  CHECK(codec.samples_per_frame() == 1920);
  CHECK(codec.num_quantizers == 16);
  CHECK(codec.num_layers == 8);
  CHECK(codec.sliding_window == 72);
  CHECK(codec.output_channels() == 4);
  CHECK(model.codec().weights().blocks.size() == 4);
  CHECK(model.codec().weights().codebooks.size() == std::size_t{16} * 2048 * 16);
  // The transposed kernels are stored tap-major, [kernel × out][in].
  CHECK(model.codec().weights().blocks[0].upsample.weight.rows == std::size_t{32} * 16);
  CHECK(model.codec().weights().blocks[0].upsample.weight.cols == 64);
}

TEST_CASE("a codebook entry is embedding_sum / max(cluster_usage, 1e-5)", "[qwen3_tts][load]") {
  const fs::path dir = testing::random_qwen3_tts();
  const Qwen3TtsCodecDecoder codec = Qwen3TtsCodecDecoder::load(dir / "speech_tokenizer");
  const io::ModelDirectory raw = io::ModelDirectory::open(dir / "speech_tokenizer");
  const std::vector<float> sum = raw.to_f32("decoder.quantizer.rvq_rest.vq.layers.3._codebook.embedding_sum");
  const std::vector<float> usage = raw.to_f32("decoder.quantizer.rvq_rest.vq.layers.3._codebook.cluster_usage");
  const std::size_t half = 16, row = 1234;
  const float* entry = codec.weights().codebooks.data() + (4 * std::size_t{2048} + row) * half;  // codebook 4 = rest 3
  for (std::size_t i = 0; i < half; ++i) CHECK(entry[i] == sum[row * half + i] / usage[row]);
}

TEST_CASE("Qwen3-TTS loading errors name the file, the key or tensor, and the problem", "[qwen3_tts][load]") {
  SECTION("no speech_tokenizer directory") {
    const fs::path dir = scratch_copy("no-codec");
    fs::remove_all(dir / "speech_tokenizer");
    const std::string e = load_error(dir);
    CHECK_THAT(e, Catch::Contains("speech_tokenizer"));
    CHECK_THAT(e, Catch::Contains(dir.string()));
  }
  SECTION("M-RoPE sections that do not sum to head_dim / 2") {
    const fs::path dir = scratch_copy("mrope");
    replace_once(dir / "config.json", "\"mrope_section\": [6, 5, 5]", "\"mrope_section\": [6, 5, 6]");
    const std::string e = load_error(dir);
    CHECK_THAT(e, Catch::Contains("mrope_section"));
    CHECK_THAT(e, Catch::Contains("17"));
  }
  SECTION("a config key of the wrong type") {
    const fs::path dir = scratch_copy("type");
    replace_once(dir / "config.json", "\"hidden_size\": 64", "\"hidden_size\": \"64\"");
    const std::string e = load_error(dir);
    CHECK_THAT(e, Catch::Contains("config.json"));
    CHECK_THAT(e, Catch::Contains("hidden_size"));
  }
  SECTION("a codec control id outside the talker vocabulary") {
    const fs::path dir = scratch_copy("eos");
    replace_once(dir / "config.json", "\"codec_eos_token_id\": 2150", "\"codec_eos_token_id\": 4000");
    CHECK_THAT(load_error(dir), Catch::Contains("codec_eos_token_id 4000 is outside the talker vocabulary"));
  }
  SECTION("decode_upsample_rate that disagrees with the strides") {
    const fs::path dir = scratch_copy("rate");
    replace_once(dir / "speech_tokenizer/config.json", "\"decode_upsample_rate\": 1920", "\"decode_upsample_rate\": 960");
    const std::string e = load_error(dir);
    CHECK_THAT(e, Catch::Contains("decode_upsample_rate"));
    CHECK_THAT(e, Catch::Contains("1920"));
  }
  SECTION("a codec shape the weights do not have") {
    const fs::path dir = scratch_copy("shape");
    replace_once(dir / "speech_tokenizer/config.json", "\"latent_dim\": 64", "\"latent_dim\": 72");
    const std::string e = load_error(dir);
    CHECK_THAT(e, Catch::Contains("decoder.pre_conv.conv.weight"));
    CHECK_THAT(e, Catch::Contains("72"));
  }
  SECTION("a missing codec tensor") {
    const fs::path dir = scratch_copy("missing");
    fs::remove(dir / "speech_tokenizer/model.safetensors");
    const std::vector<float> usage(2048, 1.0f);
    io::TensorToWrite t{"decoder.quantizer.rvq_first.vq.layers.0._codebook.cluster_usage", DType::f32, {2048},
                        std::as_bytes(std::span(usage))};
    io::write_safetensors(dir / "speech_tokenizer/model.safetensors", std::span(&t, 1));
    const std::string e = load_error(dir);
    CHECK_THAT(e, Catch::Contains("decoder.quantizer.rvq_first.vq.layers.0._codebook.embedding_sum"));
    CHECK_THAT(e, Catch::Contains("speech_tokenizer"));
  }
}
