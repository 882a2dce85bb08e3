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

namespace {

/// An in-context cloned request: the reference's x-vector, codes and transcript.
Qwen3TtsRequest icl_request(const std::vector<float>& xvector, const std::vector<std::int32_t>& codes,
                            Qwen3TtsSampling sampling, std::uint32_t frames, std::vector<TokenId> text = {9707, 11, 1879},
                            Qwen3TtsTextMode mode = Qwen3TtsTextMode::streaming) {
  Qwen3TtsRequest r;
  r.text_tokens = std::move(text);
  r.language = "english";
  r.speaker_embedding = xvector;
  r.reference_codes = codes;
  r.reference_text_tokens = {40, 1079, 264, 5785};
  r.text_mode = mode;
  r.sampling = sampling;
  r.sampling.max_frames = frames;
  return r;
}

std::vector<Qwen3TtsCodes> icl_generate(const Qwen3Tts& m, std::span<const Qwen3TtsRequest> requests) {
  detail::ThreadPool pool(2);
  Qwen3TtsGenerator generator(m, pool);
  return generator.generate(requests);
}

/// The x-vector and codes of a reference recording (0.6 s: 8 frames).
struct IclReference {
  std::vector<float> xvector;
  std::vector<std::int32_t> codes;
};

IclReference icl_reference_of(double f0, std::uint64_t seed) {
  const std::vector<float> pcm = icl_reference(8 * 1920 - 100, f0, seed);
  return {icl_base_model().speaker_embedding(pcm, 24000), icl_base_model().reference_codes(pcm, 24000)};
}

}  // namespace

TEST_CASE("Qwen3-TTS in-context prompt: rows as upstream's generate_icl_prompt in both text modes",
          "[qwen3_tts][icl]") {
  const Qwen3TtsConfig& c = icl_base_model().config();
  const std::vector<TokenId> text = {11, 12, 13}, ref = {21, 22};
  using Row = Qwen3TtsPromptRow;
  // The head: role, codec control rows (language auto), the x-vector row, tts_bos.
  const std::vector<Row> head = {{c.im_start_id, -1},          {c.assistant_id, -1},
                                 {c.newline_id, -1},           {c.tts_pad_id, c.codec_nothink_id},
                                 {c.tts_pad_id, c.codec_think_bos_id}, {c.tts_pad_id, c.codec_think_eos_id},
                                 {c.tts_pad_id, -1},           {c.tts_bos_id, c.codec_pad_id}};
  auto with_head = [&](std::vector<Row> tail) {
    std::vector<Row> rows = head;
    rows.insert(rows.end(), tail.begin(), tail.end());
    return rows;
  };
  const Row pad{c.tts_pad_id, -1};
  // Non-streaming: every text row over codec_pad, then codec_bos and the frames over tts_pad.
  const Qwen3TtsPrompt ns = qwen3_tts_icl_prompt(c, text, ref, 2, "auto", {}, Qwen3TtsTextMode::non_streaming);
  CHECK(ns.rows == with_head({{21, c.codec_pad_id}, {22, c.codec_pad_id}, {11, c.codec_pad_id}, {12, c.codec_pad_id},
                              {13, c.codec_pad_id}, {c.tts_eos_id, c.codec_pad_id}, {c.tts_pad_id, c.codec_bos_id},
                              pad, pad}));
  CHECK(ns.speaker_embedding_row == std::size_t{6});
  CHECK(ns.reference_frame_row == std::size_t{head.size() + 7});
  CHECK(ns.reference_frames == 2);
  CHECK(ns.trailing_text.empty());
  // Streaming, text longer than the codec rows: text and codec rows side by side, the rest trails.
  const Qwen3TtsPrompt st = qwen3_tts_icl_prompt(c, text, ref, 2, "auto", {}, Qwen3TtsTextMode::streaming);
  CHECK(st.rows == with_head({{21, c.codec_bos_id}, {22, -1}, {11, -1}}));
  CHECK(st.reference_frame_row == std::size_t{head.size() + 1});
  CHECK(st.trailing_text == std::vector<TokenId>{12, 13, c.tts_eos_id});
  // Streaming, more codec rows than text: tts_pad fills the text half; nothing trails.
  const Qwen3TtsPrompt lng = qwen3_tts_icl_prompt(c, text, ref, 7, "auto", {}, Qwen3TtsTextMode::streaming);
  CHECK(lng.rows == with_head({{21, c.codec_bos_id}, {22, -1}, {11, -1}, {12, -1}, {13, -1}, {c.tts_eos_id, -1}, pad,
                               pad}));
  CHECK(lng.trailing_text.empty());
  // A language adds its row before think_eos, as in every prompt.
  const Qwen3TtsPrompt en = qwen3_tts_icl_prompt(c, text, ref, 2, "english");
  CHECK(en.rows[5] == Row{c.tts_pad_id, c.languages.at("english")});
  CHECK(en.speaker_embedding_row == std::size_t{7});

  auto field_of = [&](auto&& call) -> std::string {
    try {
      call();
    } catch (const invalid_argument& e) {
      return e.field();
    }
    return "(accepted)";
  };
  CHECK(field_of([&] { qwen3_tts_icl_prompt(c, text, {}, 2); }) == "reference_text");
  CHECK(field_of([&] { qwen3_tts_icl_prompt(c, text, ref, 0); }) == "reference_audio");
  CHECK(field_of([&] { qwen3_tts_icl_prompt(c, {}, ref, 2); }) == "input");
  CHECK(field_of([&] { qwen3_tts_icl_prompt(c, text, ref, 2, "klingon"); }) == "language");

  // The engine request: one audio input from the x-vector row to the last
  // frame's row; frame rows carry their code embeddings' sum, the rows between zeros.
  const IclReference a = icl_reference_of(140.0, 1);
  const std::size_t h = c.talker.hidden_size, frames = a.codes.size() / 16;
  REQUIRE(frames == 8);
  const Qwen3TtsRequest r = icl_request(a.xvector, a.codes, Qwen3TtsSampling::greedy(), 4, text,
                                        Qwen3TtsTextMode::non_streaming);
  const Request engine_request = make_qwen3_tts_request(icl_base_model(), r);
  const Qwen3TtsPrompt p = qwen3_tts_icl_prompt(c, text, r.reference_text_tokens, frames, "english", {},
                                                Qwen3TtsTextMode::non_streaming);
  REQUIRE(engine_request.prompt_tokens.size() == p.rows.size());
  for (std::size_t i = 0; i < p.rows.size(); ++i) CHECK(qwen3_tts_unpack_row(c, engine_request.prompt_tokens[i]) == p.rows[i]);
  const AudioInput& audio = *engine_request.audio;
  CHECK(audio.placeholder_offset == *p.speaker_embedding_row);
  CHECK(audio.placeholder_offset + audio.placeholder_length == p.rows.size());
  REQUIRE(audio.features.size() == std::size_t{audio.placeholder_length} * h);
  CHECK(std::equal(a.xvector.begin(), a.xvector.end(), audio.features.begin()));
  const std::size_t between = *p.reference_frame_row - *p.speaker_embedding_row;
  CHECK(std::all_of(audio.features.begin() + static_cast<std::ptrdiff_t>(h),
                    audio.features.begin() + static_cast<std::ptrdiff_t>(between * h), [](float v) { return v == 0.0f; }));
  // Frame 3's row: Σ of its codes' embeddings (talker's for codebook 0, the predictor's after).
  std::vector<float> expected(h, 0.0f), row(h);
  for (std::size_t g = 0; g < 16; ++g) {
    const TokenId code = a.codes[3 * 16 + g];
    const auto& table = g == 0 ? icl_base_model().talker().codec_embedding
                               : icl_base_model().predictor().codec_embeddings[g - 1];
    kernels::cpu::embedding_gather(table, std::span(&code, 1), row.data(), h);
    for (std::size_t i = 0; i < h; ++i) expected[i] += row[i];
  }
  CHECK(std::equal(expected.begin(), expected.end(), audio.features.begin() + static_cast<std::ptrdiff_t>((between + 3) * h)));
  CHECK(engine_request.speech->codec_prefix == a.codes);
  // The hash covers the codes: another reference with the same x-vector hashes apart.
  Qwen3TtsRequest other = r;
  other.reference_codes[5] = (other.reference_codes[5] + 1) % 2048;
  CHECK(make_qwen3_tts_request(icl_base_model(), other).audio->content_hash != audio.content_hash);

  auto request_field = [&](Qwen3TtsRequest bad) {
    return field_of([&] { (void)make_qwen3_tts_request(icl_base_model(), bad); });
  };
  Qwen3TtsRequest bad = r;
  bad.reference_codes.pop_back();
  CHECK(request_field(bad) == "reference_audio");
  bad = r, bad.reference_codes[0] = 2048;
  CHECK(request_field(bad) == "reference_audio");
  bad = r, bad.speaker_embedding.clear();
  CHECK(request_field(bad) == "reference_audio");
  bad = r, bad.reference_text_tokens.clear();
  CHECK(request_field(bad) == "reference_text");
  bad = r, bad.reference_codes.clear();
  CHECK(request_field(bad) == "reference_text");  // a transcript without reference audio
}

TEST_CASE("Qwen3-TTS in-context cloning: the reference changes the codes, and a batch equals each alone",
          "[qwen3_tts][icl]") {
  const Qwen3Tts& m = icl_base_model();
  const IclReference a = icl_reference_of(140.0, 1), b = icl_reference_of(230.0, 2);
  REQUIRE(a.codes != b.codes);
  Qwen3TtsSampling seeded;
  seeded.seed = 17;
  Qwen3TtsRequest xvector_only = icl_request(a.xvector, {}, Qwen3TtsSampling::greedy(), 10);
  xvector_only.reference_text_tokens.clear();
  const std::vector<Qwen3TtsRequest> batch = {
      icl_request(a.xvector, a.codes, Qwen3TtsSampling::greedy(), 10),
      icl_request(a.xvector, b.codes, Qwen3TtsSampling::greedy(), 10),
      icl_request(a.xvector, a.codes, Qwen3TtsSampling::greedy(), 9, {9707, 11, 1879}, Qwen3TtsTextMode::non_streaming),
      icl_request(b.xvector, b.codes, seeded, 8, {42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54}),
      xvector_only};
  const std::vector<Qwen3TtsCodes> together = icl_generate(m, batch);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    INFO("request " << i);
    const std::vector<Qwen3TtsCodes> alone = icl_generate(m, std::span(&batch[i], 1));
    CHECK(together[i].frames == alone[0].frames);
    CHECK(together[i].codes == alone[0].codes);
    CHECK(together[i].frames >= 2);
  }
  CHECK(together[0].codes != together[1].codes);  // another reference, same x-vector
  CHECK(together[0].codes != together[4].codes);  // in context vs x-vector only
  CHECK(together[0].codes != together[2].codes);  // streaming vs non-streaming text
  // A seed decides a sampled request's codes.
  std::vector<Qwen3TtsRequest> reseeded = {batch[3]};
  CHECK(icl_generate(m, reseeded)[0].codes == together[3].codes);
  reseeded[0].sampling.seed = 18;
  CHECK(icl_generate(m, reseeded)[0].codes != together[3].codes);
}

TEST_CASE("Qwen3-TTS in-context cloning on the engine: the generator's frames, audio after the reference, "
          "no prefix sharing across references",
          "[qwen3_tts][icl][engine]") {
  const Qwen3Tts& m = icl_base_model();
  const IclReference a = icl_reference_of(140.0, 1), b = icl_reference_of(230.0, 2);
  Qwen3TtsSampling seeded;
  seeded.seed = 5;
  const std::vector<Qwen3TtsRequest> requests = {
      icl_request(a.xvector, a.codes, Qwen3TtsSampling::greedy(), 9),
      icl_request(a.xvector, b.codes, seeded, 8, {42, 43, 44}, Qwen3TtsTextMode::non_streaming),
      icl_request(b.xvector, {}, Qwen3TtsSampling::greedy(), 6, {42, 43, 44})};
  std::vector<Qwen3TtsRequest> fixed = requests;
  fixed[2].reference_text_tokens.clear();  // x-vector only
  Qwen3TtsCpuExecutor executor(m, {.num_threads = 2});
  PagedKVCacheConfig cache_config;
  cache_config.byte_budget = std::size_t{32} << 20;  // not a designated initializer: GCC 12 -Wextra warns
  PagedKVCache<> cache(executor.kv_cache_shape(), cache_config);
  Qwen3TtsCpuEngine engine(FcfsScheduler(SchedulerConfig{}), std::move(cache), std::move(executor));
  auto run = [&](std::span<const Qwen3TtsRequest> rs) {
    std::vector<RequestId> ids;
    for (const Qwen3TtsRequest& r : rs) ids.push_back(engine.add_request(make_qwen3_tts_request(m, r)));
    std::vector<std::pair<std::vector<TokenId>, std::vector<float>>> out(ids.size());
    while (engine.has_unfinished_requests())
      for (const StreamChunk& chunk : engine.step()) {
        const auto i = static_cast<std::size_t>(std::find(ids.begin(), ids.end(), chunk.id) - ids.begin());
        CHECK(chunk.error.empty());
        out[i].first.insert(out[i].first.end(), chunk.token_ids.begin(), chunk.token_ids.end());
        out[i].second.insert(out[i].second.end(), chunk.audio.begin(), chunk.audio.end());
      }
    return out;
  };
  const auto got = run(fixed);
  const std::vector<Qwen3TtsCodes> expected = icl_generate(m, fixed);
  detail::ThreadPool pool(2);
  for (std::size_t i = 0; i < fixed.size(); ++i) {
    INFO("request " << i);
    std::vector<TokenId> first_codes;
    for (std::size_t f = 0; f < expected[i].frames; ++f) first_codes.push_back(expected[i].codes[f * 16]);
    if (expected[i].finished_by_eos) first_codes.push_back(m.config().codec_eos_id);
    CHECK(got[i].first == first_codes);
    // Upstream decodes reference + generated codes and cuts the reference's
    // samples: the engine's audio is what follows the reference's.
    std::vector<std::int32_t> all = fixed[i].reference_codes;
    all.insert(all.end(), expected[i].codes.begin(), expected[i].codes.end());
    Qwen3TtsCodecState state = m.codec().new_stream();
    std::vector<float> pcm;
    m.codec().decode(pool, state, all, pcm);
    const std::size_t skip = fixed[i].reference_codes.size() / 16 * m.codec().samples_per_frame();
    REQUIRE(got[i].second.size() == pcm.size() - skip);
    double worst = 0;
    for (std::size_t k = 0; k < got[i].second.size(); ++k)
      worst = std::max(worst, std::abs(double(got[i].second[k]) - pcm[skip + k]));
    CHECK(worst <= 1e-5);
  }
  CHECK(engine.kv_cache().stats().num_used_blocks == 0);

  // The prefix cache: the same reference again shares blocks; another
  // reference with the same text and x-vector shares none.
  const std::vector<Qwen3TtsRequest> first = {icl_request(a.xvector, a.codes, Qwen3TtsSampling::greedy(), 3)};
  const std::vector<Qwen3TtsRequest> other = {icl_request(a.xvector, b.codes, Qwen3TtsSampling::greedy(), 3)};
  (void)run(first);
  const std::uint64_t before_other = engine.kv_cache().stats().prefix_cache_hits;
  (void)run(other);
  CHECK(engine.kv_cache().stats().prefix_cache_hits == before_other);
  const auto again = run(first);
  CHECK(engine.kv_cache().stats().prefix_cache_hits > before_other);
  CHECK(again[0].first == run(first)[0].first);
}

TEST_CASE("Qwen3-TTS speech encoder equals an independent float64 implementation on the same weights",
          "[qwen3_tts][icl][reference]") {
  // Goldens from test/reference/qwen3_tts_speech_encoder_goldens.mjs (plain
  // JavaScript, float64, channel-major, direct distances) on this checkpoint
  // and this signal.
  const fs::path goldens = fs::path(IZWI_SOURCE_DIR) / "test/models/goldens";
  std::ifstream latent_file(goldens / "qwen3_tts_speech_encoder_latent.txt"),
      codes_file(goldens / "qwen3_tts_speech_encoder_codes.txt");
  if (!latent_file || !codes_file) {
    WARN("SKIPPED: test/models/goldens/qwen3_tts_speech_encoder_*.txt are absent "
         "(test/reference/qwen3_tts_speech_encoder_goldens.mjs writes them)");
    return;
  }
  std::vector<double> want_latent;
  for (double v; latent_file >> v;) want_latent.push_back(v);
  std::vector<std::int32_t> want_codes;
  for (std::int32_t v; codes_file >> v;) want_codes.push_back(v);

  const std::size_t n = 12 * 1920 + 500;
  std::vector<float> signal(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double t = double(i) / 24000.0;
    signal[i] = static_cast<float>(0.3 * std::sin(2 * M_PI * 140 * t) + 0.1 * std::sin(2 * M_PI * 377 * t + 0.5) +
                                   0.05 * std::sin(2 * M_PI * 1230 * t) * (1 + 0.5 * std::sin(2 * M_PI * 3 * t)));
  }
  const Qwen3TtsSpeechEncoder& enc = *icl_base_model().speech_encoder();
  detail::ThreadPool pool(2);
  const std::vector<float> latent = enc.latent(signal, pool);
  REQUIRE(latent.size() == want_latent.size());
  REQUIRE(latent.size() == 13 * 32);
  double diff = 0, norm = 0, worst = 0;
  for (std::size_t i = 0; i < latent.size(); ++i) {
    diff += (latent[i] - want_latent[i]) * (latent[i] - want_latent[i]);
    norm += want_latent[i] * want_latent[i];
    worst = std::max(worst, std::abs(latent[i] - want_latent[i]));
  }
  const double relative = std::sqrt(diff / norm);
  INFO("latent: relative L2 " << relative << ", max |diff| " << worst);
  CHECK(relative <= 1e-5);
  const std::vector<std::int32_t> codes = enc.encode(signal, pool);
  REQUIRE(codes.size() == want_codes.size());
  std::size_t same = 0;
  for (std::size_t i = 0; i < codes.size(); ++i) same += codes[i] == want_codes[i];
  INFO(same << " of " << codes.size() << " codes identical");
  CHECK(same == codes.size());
}
