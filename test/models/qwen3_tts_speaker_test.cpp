// Qwen3-TTS voice cloning in x-vector mode on the random small-shape Base
// checkpoint (izwi-make-random-qwen3-tts --model-type base): the speaker
// encoder's config and weights load from both formats with errors that name
// the key or tensor, its x-vector is deterministic and resampling-consistent,
// the x-vector takes the speaker row of the prompt (in the generator and in
// the engine request), a batch with cloned requests equals each alone, the
// engine (Qwen3TtsCpuExecutor, which adds the request's AudioInput features at
// their placeholder row) speaks the generator's cloned frames, and -
// against llama.cpp's llama-tts on the same weights (goldens from
// test/reference/qwen3_tts_goldens.sh) - the x-vector of the same reference
// wav agrees within a relative L2 of 5e-4 (measured 6.2e-5; both sides f32,
// the difference is each side's float FFT, mel filterbank and summation
// order, magnified where log-mel sits at its 1e-5 floor), and the cloned
// greedy codes are identical over 150 frames.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "izwi/audio/decode.hpp"
#include "izwi/audio/resample.hpp"
#include "izwi/core/error.hpp"
#include "izwi/io/gguf.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/models/qwen3_tts.hpp"
#include "izwi/models/qwen3_tts_request.hpp"
#include "izwi/stock_engines.hpp"
#include "models/random_qwen3_tts.hpp"

using namespace izwi;
namespace fs = std::filesystem;

namespace {

const Qwen3Tts& base_model() {
  static const Qwen3Tts m = Qwen3Tts::load(testing::random_qwen3_tts("base"));
  return m;
}

/// A voice-like test signal: a few harmonics of a gliding pitch plus a little noise.
std::vector<float> voice_like(std::uint32_t rate, double seconds, double f0) {
  std::vector<float> x(static_cast<std::size_t>(rate * seconds));
  std::uint64_t state = 12345;
  double phase = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double t = double(i) / rate, f = f0 * (1.0 + 0.2 * std::sin(2.0 * M_PI * 1.5 * t));
    phase += 2.0 * M_PI * f / rate;
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const double noise = double(state >> 40) / double(1ULL << 24) - 0.5;
    x[i] = static_cast<float>(0.3 * std::sin(phase) + 0.15 * std::sin(2 * phase) + 0.08 * std::sin(3 * phase) +
                              0.01 * noise);
  }
  return x;
}

double relative_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff += (a[i] - double(b[i])) * (a[i] - double(b[i])), norm += double(b[i]) * b[i];
  return std::sqrt(diff / norm);
}

Qwen3TtsRequest cloned(std::vector<float> embedding, Qwen3TtsSampling sampling, std::uint32_t frames,
                       std::vector<TokenId> text = {9707, 11, 1879}) {
  Qwen3TtsRequest r;
  r.text_tokens = std::move(text);
  r.language = "english";
  r.speaker_embedding = std::move(embedding);
  r.sampling = sampling;
  r.sampling.max_frames = frames;
  return r;
}

std::vector<Qwen3TtsCodes> generate(const Qwen3Tts& m, std::span<const Qwen3TtsRequest> requests) {
  detail::ThreadPool pool(2);
  Qwen3TtsGenerator generator(m, pool);
  return generator.generate(requests);
}

constexpr auto* load_error = &testing::qwen3_tts_load_error;

/// A copy of the Base checkpoint whose config.json has `from` replaced by `to`.
fs::path base_with(const std::string& name, const std::string& from, const std::string& to) {
  const fs::path source = testing::random_qwen3_tts("base");
  const fs::path dir = fs::current_path() / ("qwen3-tts-base-broken-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir / "speech_tokenizer");
  fs::copy_file(source / "speech_tokenizer/config.json", dir / "speech_tokenizer/config.json");
  fs::create_symlink(source / "model.safetensors", dir / "model.safetensors");
  fs::create_symlink(source / "speech_tokenizer/model.safetensors", dir / "speech_tokenizer/model.safetensors");
  std::ifstream in(source / "config.json");
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  std::ofstream(dir / "config.json") << text;
  return dir;
}

}  // namespace

TEST_CASE("Qwen3-TTS Base: speaker_encoder_config is read and checked", "[qwen3_tts][speaker]") {
  const Qwen3TtsConfig& c = base_model().config();
  REQUIRE(c.model_type == "base");
  REQUIRE(c.speaker_encoder.has_value());
  CHECK(c.speaker_encoder->enc_channels == std::vector<std::uint32_t>{64, 64, 64, 64, 192});
  CHECK(c.speaker_encoder->enc_dim == c.talker.hidden_size);
  CHECK(c.speaker_encoder->num_blocks() == 3);
  REQUIRE(base_model().speaker_encoder() != nullptr);
  CHECK(c.speakers.empty());  // a Base checkpoint names no speakers

  CHECK_THAT(load_error(base_with("no-encoder", "\"speaker_encoder_config\"", "\"unused_config\"")),
             Catch::Contains("speaker_encoder_config") && Catch::Contains("is missing"));
  CHECK_THAT(load_error(base_with("enc-dim", "\"enc_dim\": 64", "\"enc_dim\": 32")),
             Catch::Contains("enc_dim 32 must equal the talker's hidden_size 64"));
  CHECK_THAT(load_error(base_with("mfa", "64, 192]", "64, 100]")),
             Catch::Contains("enc_channels") && Catch::Contains("concatenated are 192 wide"));
  CHECK_THAT(load_error(base_with("even", "[5, 3, 3, 3, 1]", "[5, 4, 3, 3, 1]")),
             Catch::Contains("enc_kernel_sizes") && Catch::Contains("even"));
  // A tensor of the wrong shape is named with its file.
  CHECK_THAT(load_error(base_with("se", "\"enc_se_channels\": 16", "\"enc_se_channels\": 32")),
             Catch::Contains("speaker_encoder.blocks.1.se_block.conv1.weight") && Catch::Contains("model.safetensors"));
}

TEST_CASE("Qwen3-TTS speaker embedding: deterministic, the talker's width, and only for Base models",
          "[qwen3_tts][speaker]") {
  const Qwen3Tts& m = base_model();
  const std::vector<float> voice = voice_like(24000, 1.5, 140.0), other = voice_like(24000, 1.5, 220.0);
  const std::vector<float> a = m.speaker_embedding(voice, 24000), b = m.speaker_embedding(voice, 24000);
  REQUIRE(a.size() == m.config().talker.hidden_size);
  CHECK(a == b);
  detail::ThreadPool pool(2);
  const std::vector<float> threaded = m.speaker_embedding(voice, 24000, pool);
  CHECK(relative_l2(threaded, a) < 1e-6);
  double norm = 0;
  for (float v : a) {
    CHECK(std::isfinite(v));
    norm += double(v) * v;
  }
  CHECK(norm > 0.0);
  CHECK(relative_l2(m.speaker_embedding(other, 24000), a) > 1e-3);  // another voice, another x-vector

  // Another rate is resampled with izwi's resampler first: the same as doing it by hand.
  const std::vector<float> at16k = voice_like(16000, 1.5, 140.0);
  CHECK(m.speaker_embedding(at16k, 16000) == m.speaker_embedding(audio::resample(at16k, 16000, 24000), 24000));

  CHECK_THROWS_WITH(m.speaker_embedding(std::vector<float>(1000, 0.1f), 24000), Catch::Contains("too short"));
  std::vector<float> broken = voice;
  broken[100] = std::nanf("");
  CHECK_THROWS_AS(m.speaker_embedding(broken, 24000), invalid_argument);
  CHECK_THROWS_AS(m.speaker_embedding(voice, 0), invalid_argument);

  const Qwen3Tts custom = Qwen3Tts::load(testing::random_qwen3_tts());
  CHECK(custom.speaker_encoder() == nullptr);
  try {
    (void)custom.speaker_embedding(voice, 24000);
    FAIL("a CustomVoice model gave a speaker embedding");
  } catch (const invalid_argument& e) {
    CHECK(e.field() == "reference_audio");
    CHECK_THAT(std::string(e.what()), Catch::Contains("has no speaker encoder"));
  }
}

TEST_CASE("Qwen3-TTS speaker encoder from llama.cpp's mmproj equals the safetensors one", "[qwen3_tts][speaker]") {
  const fs::path dir = testing::random_qwen3_tts("base");
  const fs::path talker = fs::current_path() / "random-qwen3-tts-small-base-talker.gguf";
  const fs::path mmproj = fs::current_path() / "random-qwen3-tts-small-base-mmproj.gguf";
  if (!fs::exists(mmproj)) {
    const std::string command = std::string(IZWI_QWEN3_TTS_TO_GGUF) + " " + dir.string() + " --talker " +
                                talker.string() + " --mmproj " + mmproj.string() + " > /dev/null";
    REQUIRE(std::system(command.c_str()) == 0);
  }
  const Qwen3Tts gguf = Qwen3Tts::load_gguf(talker, mmproj);
  REQUIRE(gguf.speaker_encoder() != nullptr);
  const Qwen3TtsSpeakerEncoderConfig& hf = *base_model().config().speaker_encoder;
  CHECK(gguf.speaker_encoder()->config().enc_channels == hf.enc_channels);
  CHECK(gguf.speaker_encoder()->config().enc_attention_channels == hf.enc_attention_channels);
  CHECK(gguf.speaker_encoder()->config().enc_se_channels == hf.enc_se_channels);
  const std::vector<float> voice = voice_like(24000, 1.0, 180.0);
  CHECK(gguf.speaker_embedding(voice, 24000) == base_model().speaker_embedding(voice, 24000));
}

TEST_CASE("Qwen3-TTS speaker encoder from a broken mmproj: errors name the file and the tensor", "[qwen3_tts][speaker]") {
  const fs::path path = fs::current_path() / "qwen3-tts-broken-spkenc-mmproj.gguf";
  const std::vector<float> stem(64 * 128 * 5, 0.01f);
  io::GgufWriter w;
  w.set("general.architecture", io::GgufValue::string("clip"));
  w.set("clip.audio.projector_type", io::GgufValue::string("whisper"));
  w.write(path);
  CHECK_THROWS_WITH(Qwen3TtsSpeakerEncoder::load_gguf(io::GgufFile::open(path)),
                    Catch::Contains(path.filename().string()) && Catch::Contains("not qwen3tts_spkenc"));
  w.set("clip.audio.projector_type", io::GgufValue::string("qwen3tts_spkenc"));
  w.add_tensor("a.conv1d.0.weight", io::GgmlType::f32, {64, 128, 5}, stem);
  w.write(path);
  CHECK_THROWS_WITH(Qwen3TtsSpeakerEncoder::load_gguf(io::GgufFile::open(path)),
                    Catch::Contains(path.filename().string()) && Catch::Contains("mm.a.fc.weight"));
}

TEST_CASE("Qwen3-TTS x-vector prompt: the speaker row holds tts_pad and the x-vector", "[qwen3_tts][speaker]") {
  const Qwen3TtsConfig& c = base_model().config();
  const std::vector<TokenId> text = {9707, 1879};
  const Qwen3TtsPrompt plain = qwen3_tts_prompt(c, text, "english");
  const Qwen3TtsPrompt p = qwen3_tts_prompt(c, text, "english", "", {}, Qwen3TtsTextMode::non_streaming, true);
  // <|im_start|>assistant\n, think, think_bos, english, think_eos, then the x-vector's row.
  REQUIRE(p.speaker_embedding_row == std::size_t{7});
  CHECK(p.rows[7] == Qwen3TtsPromptRow{c.tts_pad_id, -1});
  CHECK(p.rows[6] == Qwen3TtsPromptRow{c.tts_pad_id, c.codec_think_eos_id});
  CHECK(p.rows[8] == Qwen3TtsPromptRow{c.tts_bos_id, c.codec_pad_id});
  CHECK(p.rows.size() == plain.rows.size() + 1);
  CHECK(!plain.speaker_embedding_row);
  // Auto language has no language row: the x-vector comes one row earlier; streaming text keeps it.
  CHECK(qwen3_tts_prompt(c, text, "auto", "", {}, Qwen3TtsTextMode::streaming, true).speaker_embedding_row ==
        std::size_t{6});
  CHECK_THROWS_WITH(qwen3_tts_prompt(c, text, "english", "ryan", {}, Qwen3TtsTextMode::non_streaming, true),
                    Catch::Contains("not both"));

  // The engine request: the x-vector is the AudioInput's features at that row.
  const std::vector<float> e = base_model().speaker_embedding(voice_like(24000, 1.0, 150.0), 24000);
  const Request r = make_qwen3_tts_request(base_model(), cloned(e, Qwen3TtsSampling::greedy(), 8, text));
  REQUIRE(r.audio != nullptr);
  CHECK(r.audio->placeholder_offset == 7);
  CHECK(r.audio->placeholder_length == 1);
  CHECK(r.audio->features == e);
  CHECK(r.audio->content_hash == audio_content_hash(e));
  CHECK(r.prompt_tokens.size() == p.rows.size());
  CHECK(qwen3_tts_unpack_row(c, r.prompt_tokens[7]) == Qwen3TtsPromptRow{c.tts_pad_id, -1});
  for (std::size_t i = 0; i < p.rows.size(); ++i) CHECK(qwen3_tts_unpack_row(c, r.prompt_tokens[i]) == p.rows[i]);
  CHECK(make_qwen3_tts_request(base_model(), cloned({}, Qwen3TtsSampling::greedy(), 8, text)).audio == nullptr);
  try {
    (void)make_qwen3_tts_request(base_model(), cloned(std::vector<float>(10, 0.5f), Qwen3TtsSampling::greedy(), 8));
    FAIL("a speaker embedding of the wrong width was accepted");
  } catch (const invalid_argument& error) {
    CHECK(error.field() == "speaker_embedding");
  }
}

TEST_CASE("Qwen3-TTS cloning: the x-vector changes the codes, and a batch equals each request alone",
          "[qwen3_tts][speaker]") {
  const Qwen3Tts& m = base_model();
  const std::vector<float> low = m.speaker_embedding(voice_like(24000, 1.2, 120.0), 24000);
  // Another voice: the x-vector negated (two random-weight x-vectors of
  // synthetic voices can be too alike to move a wide-margin greedy choice).
  std::vector<float> high = low;
  for (float& v : high) v = -v;
  Qwen3TtsSampling seeded;
  seeded.seed = 21;
  Qwen3TtsRequest streamed = cloned(high, Qwen3TtsSampling::greedy(), 7, {31, 32, 33, 34});
  streamed.text_mode = Qwen3TtsTextMode::streaming;
  const std::vector<Qwen3TtsRequest> batch = {cloned(low, Qwen3TtsSampling::greedy(), 10),
                                              cloned({}, Qwen3TtsSampling::greedy(), 10),
                                              cloned(high, Qwen3TtsSampling::greedy(), 10),
                                              cloned(low, seeded, 9, {42, 43}), streamed};
  const std::vector<Qwen3TtsCodes> together = generate(m, batch);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    INFO("request " << i);
    const std::vector<Qwen3TtsCodes> alone = generate(m, std::span(&batch[i], 1));
    CHECK(together[i].frames == alone[0].frames);
    CHECK(together[i].codes == alone[0].codes);
  }
  CHECK(together[0].codes != together[1].codes);  // cloned vs no voice
  CHECK(together[0].codes != together[2].codes);  // two voices

  std::vector<Qwen3TtsRequest> bad = {cloned(std::vector<float>(m.config().talker.hidden_size, 0.0f),
                                             Qwen3TtsSampling::greedy(), 4)};
  bad[0].speaker_embedding[3] = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH(generate(m, bad), Catch::Contains("not finite"));
}

TEST_CASE("Qwen3-TTS cloning on the engine: the generator's frames and their audio", "[qwen3_tts][speaker][engine]") {
  const Qwen3Tts& m = base_model();
  const std::vector<float> voice = m.speaker_embedding(voice_like(24000, 1.2, 120.0), 24000);
  std::vector<float> other = voice;
  for (float& v : other) v = -v;
  Qwen3TtsSampling seeded;
  seeded.seed = 5;
  const std::vector<Qwen3TtsRequest> requests = {cloned(voice, Qwen3TtsSampling::greedy(), 9),
                                                 cloned(other, seeded, 8, {42, 43, 44}),
                                                 cloned({}, Qwen3TtsSampling::greedy(), 9)};
  Qwen3TtsCpuExecutor executor(m, {.num_threads = 2});
  PagedKVCacheConfig cache_config;
  cache_config.byte_budget = std::size_t{32} << 20;  // not a designated initializer: GCC 12 -Wextra warns
  PagedKVCache<> cache(executor.kv_cache_shape(), cache_config);
  Qwen3TtsCpuEngine engine(FcfsScheduler(SchedulerConfig{}), std::move(cache), std::move(executor));
  std::vector<RequestId> ids;
  for (const Qwen3TtsRequest& r : requests) ids.push_back(engine.add_request(make_qwen3_tts_request(m, r)));
  std::vector<std::vector<TokenId>> tokens(ids.size());
  std::vector<std::vector<float>> audio(ids.size());
  while (engine.has_unfinished_requests())
    for (const StreamChunk& chunk : engine.step()) {
      const auto i = static_cast<std::size_t>(std::find(ids.begin(), ids.end(), chunk.id) - ids.begin());
      CHECK(chunk.error.empty());
      tokens[i].insert(tokens[i].end(), chunk.token_ids.begin(), chunk.token_ids.end());
      audio[i].insert(audio[i].end(), chunk.audio.begin(), chunk.audio.end());
    }
  const std::vector<Qwen3TtsCodes> expected = generate(m, requests);
  detail::ThreadPool pool(2);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    INFO("request " << i);
    std::vector<TokenId> first_codes;
    for (std::size_t f = 0; f < expected[i].frames; ++f) first_codes.push_back(expected[i].codes[f * 16]);
    if (expected[i].finished_by_eos) first_codes.push_back(m.config().codec_eos_id);
    CHECK(tokens[i] == first_codes);
    // The audio depends on all 16 codes of every frame.
    Qwen3TtsCodecState state = m.codec().new_stream();
    std::vector<float> pcm;
    m.codec().decode(pool, state, expected[i].codes, pcm);
    REQUIRE(audio[i].size() == pcm.size());
    double worst = 0;
    for (std::size_t k = 0; k < pcm.size(); ++k) worst = std::max(worst, std::abs(double(audio[i][k]) - pcm[k]));
    CHECK(worst <= 1e-5);
  }
  CHECK(engine.kv_cache().stats().num_used_blocks == 0);
}

TEST_CASE("Qwen3-TTS x-vector and cloned greedy codes match llama.cpp's", "[qwen3_tts][speaker][reference]") {
  const fs::path goldens = fs::path(IZWI_SOURCE_DIR) / "test/models/goldens";
  const fs::path wav = goldens / "qwen3_tts_speaker_ref_24k.wav", xvector = goldens / "qwen3_tts_llama_cpp_xvector.txt",
                 codes = goldens / "qwen3_tts_llama_cpp_clone_codes.txt";
  if (!fs::exists(wav) || !fs::exists(xvector) || !fs::exists(codes)) {
    WARN("SKIPPED: the x-vector goldens are missing (" << wav << ", " << xvector << ", " << codes
                                                       << "); run test/reference/qwen3_tts_goldens.sh");
    return;
  }
  const audio::DecodedAudio reference = audio::decode_file(wav);
  REQUIRE(reference.audio.sample_rate == 24000);  // the encoder's rate: neither side resamples
  std::vector<float> theirs;
  std::ifstream in(xvector);
  for (float v; in >> v;) theirs.push_back(v);
  const Qwen3Tts& m = base_model();
  const std::vector<float> ours = m.speaker_embedding(reference.audio.samples, 24000);
  REQUIRE(theirs.size() == ours.size());
  const double relative = relative_l2(ours, theirs);
  INFO("x-vector relative L2 " << relative);
  CHECK(relative <= 5e-4);  // measured 6.2e-5

  std::ifstream code_lines(codes);
  std::string line;
  std::getline(code_lines, line);
  REQUIRE(line.rfind("text:", 0) == 0);
  std::istringstream ids(line.substr(5));
  std::vector<TokenId> text;
  for (TokenId t; ids >> t;) text.push_back(t);
  std::vector<std::int32_t> expected;
  while (std::getline(code_lines, line)) {
    std::istringstream row(line);
    for (std::int32_t c; row >> c;) expected.push_back(c);
  }
  const std::size_t frames = expected.size() / 16;
  const Qwen3TtsRequest r = cloned(ours, Qwen3TtsSampling::greedy(), static_cast<std::uint32_t>(frames), text);
  const Qwen3TtsCodes got = generate(m, std::span(&r, 1))[0];
  REQUIRE(got.frames == frames);
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (got.codes[i] != expected[i])
      FAIL("frame " << i / 16 << ", codebook " << i % 16 << ": izwi " << got.codes[i] << ", llama.cpp " << expected[i]);
  SUCCEED(frames << " cloned frames × 16 codes identical");
}
