// Qwen3-TTS's prompt (upstream's non-streaming text mode, row by row), the
// talker's codebook-0 sampling rules, and the talker + code predictor loop on
// the random small-shape checkpoint: greedy codes are reproducible, a batch
// of requests equals each request alone, a seeded request's codes do not
// depend on what else is generated, and the codes decode to audio.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <set>
#include <vector>

#include "izwi/core/error.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/models/qwen3_tts.hpp"
#include "models/random_qwen3_tts.hpp"

using namespace izwi;

namespace {

const Qwen3Tts& model() {
  static const Qwen3Tts m = Qwen3Tts::load(testing::random_qwen3_tts());
  return m;
}

constexpr auto* request = &testing::qwen3_tts_request;

std::vector<Qwen3TtsCodes> generate(std::span<const Qwen3TtsRequest> requests) {
  detail::ThreadPool pool(2);
  Qwen3TtsGenerator generator(model(), pool);
  return generator.generate(requests);
}

Qwen3TtsRequest streaming(Qwen3TtsRequest r) {
  r.text_mode = Qwen3TtsTextMode::streaming;
  return r;
}

Qwen3TtsRequest instructed(Qwen3TtsRequest r, std::vector<TokenId> instruction) {
  r.instruction_tokens = std::move(instruction);
  return r;
}

constexpr auto* seeded = &testing::seeded_sampling;

}  // namespace

TEST_CASE("Qwen3-TTS prompt: the rows upstream builds (both text modes, speakers, instructions)", "[qwen3_tts][prompt]") {
  const Qwen3TtsConfig& c = model().config();
  const TokenId pad = c.tts_pad_id, bos = c.tts_bos_id, eos = c.tts_eos_id;
  const std::vector<TokenId> text = {9707, 1879};
  SECTION("a language and a speaker") {
    const std::vector<Qwen3TtsPromptRow> expected = {
        {151644, -1}, {77091, -1}, {198, -1},  // <|im_start|>assistant\n
        {pad, 2154}, {pad, 2156}, {pad, 2050}, {pad, 2157},  // think, think_bos, english, think_eos
        {pad, 3061},                                         // ryan
        {bos, 2148}, {9707, 2148}, {1879, 2148}, {eos, 2148}, {pad, 2149}};
    CHECK(qwen3_tts_prompt(c, text, "English", "Ryan").rows == expected);
    CHECK(qwen3_tts_prompt(c, text, "English", "Ryan").trailing_text.empty());  // every frame adds tts_pad
  }
  SECTION("auto language, no speaker: nothink and no language row") {
    const std::vector<Qwen3TtsPromptRow> expected = {
        {151644, -1}, {77091, -1}, {198, -1}, {pad, 2155}, {pad, 2156}, {pad, 2157},
        {bos, 2148}, {9707, 2148}, {1879, 2148}, {eos, 2148}, {pad, 2149}};
    CHECK(qwen3_tts_prompt(c, text).rows == expected);
  }
  SECTION("a dialect speaker speaks the dialect for chinese and auto, not for english") {
    CHECK(qwen3_tts_prompt(c, text, "auto", "eric").rows[5] == Qwen3TtsPromptRow{pad, 2062});
    CHECK(qwen3_tts_prompt(c, text, "chinese", "eric").rows[5] == Qwen3TtsPromptRow{pad, 2062});
    CHECK(qwen3_tts_prompt(c, text, "english", "eric").rows[5] == Qwen3TtsPromptRow{pad, 2050});
  }
  SECTION("streaming text: the first text token with codec_bos, the rest added to the frames") {
    const std::vector<TokenId> three = {9707, 1879, 11};
    const Qwen3TtsPrompt p = qwen3_tts_prompt(c, three, "english", "", {}, Qwen3TtsTextMode::streaming);
    const std::vector<Qwen3TtsPromptRow> expected = {
        {151644, -1}, {77091, -1}, {198, -1}, {pad, 2154}, {pad, 2156}, {pad, 2050}, {pad, 2157},
        {bos, 2148}, {9707, 2149}};
    CHECK(p.rows == expected);
    CHECK(p.trailing_text == std::vector<TokenId>{1879, 11, eos});
    CHECK_THROWS_AS(qwen3_tts_prompt(c, {}, "english", "", {}, Qwen3TtsTextMode::streaming), invalid_argument);
  }
  SECTION("an instruction comes first, wrapped as a user turn") {
    const std::vector<TokenId> instruction = {100, 101};
    const Qwen3TtsPrompt p = qwen3_tts_prompt(c, text, "auto", "", instruction);
    const std::vector<Qwen3TtsPromptRow> head = {{151644, -1}, {872, -1}, {198, -1}, {100, -1}, {101, -1},
                                                 {151645, -1}, {198, -1}, {151644, -1}, {77091, -1}, {198, -1}};
    CHECK(std::vector<Qwen3TtsPromptRow>(p.rows.begin(), p.rows.begin() + 10) == head);
    CHECK(p.rows.size() == qwen3_tts_prompt(c, text).rows.size() + 7);
  }
  SECTION("unknown names are refused, listing the known ones") {
    CHECK_THROWS_WITH(qwen3_tts_prompt(c, text, "auto", "bob"),
                      Catch::Contains("unknown speaker 'bob'") && Catch::Contains("eric, ryan, vivian"));
    CHECK_THROWS_WITH(qwen3_tts_prompt(c, text, "klingon"),
                      Catch::Contains("unknown language 'klingon'") && Catch::Contains("english"));
  }
}

TEST_CASE("Qwen3-TTS talker sampling: control ids suppressed, EOS only from frame 2, repetition penalty",
          "[qwen3_tts][sampling]") {
  const Qwen3TtsConfig& c = model().config();
  Sampler sampler;
  SequenceRng rng(1);
  const Qwen3TtsSampling greedy = Qwen3TtsSampling::greedy();
  auto logits = [&] {
    std::vector<float> l(c.talker.vocab_size, 0.0f);
    l[2100] = 30.0f;             // a control id: never sampled
    l[c.codec_eos_id] = 20.0f;  // EOS: sampled once two frames exist
    l[7] = 10.0f;
    return l;
  };
  std::vector<float> l = logits();
  CHECK(Qwen3TtsGenerator::sample_first_code(c, l, {}, greedy, rng, sampler) == 7);
  const std::vector<TokenId> one = {5}, two = {5, 6};
  l = logits();
  CHECK(Qwen3TtsGenerator::sample_first_code(c, l, one, greedy, rng, sampler) == 7);
  l = logits();
  CHECK(Qwen3TtsGenerator::sample_first_code(c, l, two, greedy, rng, sampler) == c.codec_eos_id);

  // 10 / 1.05 < 9.6: a code already generated loses to a fresh one.
  std::vector<float> close(c.talker.vocab_size, 0.0f);
  close[3] = 10.0f, close[4] = 9.6f;
  const std::vector<TokenId> previous = {3};
  Qwen3TtsSampling penalised = greedy;
  penalised.repetition_penalty = 1.05f;
  std::vector<float> l2 = close;
  CHECK(Qwen3TtsGenerator::sample_first_code(c, l2, previous, penalised, rng, sampler) == 4);
  l2 = close;
  CHECK(Qwen3TtsGenerator::sample_first_code(c, l2, previous, greedy, rng, sampler) == 3);

  // Sampled (temperature 0.9, top-k 50): never a control id, over many draws.
  Qwen3TtsSampling sampled;
  std::vector<float> flat(c.talker.vocab_size, 1.0f);
  for (int i = 0; i < 200; ++i) {
    std::vector<float> f = flat;
    const TokenId t = Qwen3TtsGenerator::sample_first_code(c, f, two, sampled, rng, sampler);
    CHECK((t < 2048 || t == c.codec_eos_id));
  }
}

TEST_CASE("Qwen3-TTS greedy codes are reproducible and in range", "[qwen3_tts][generate]") {
  const std::vector<Qwen3TtsRequest> r = {request({9707, 11, 1879, 0}, "english", "ryan", Qwen3TtsSampling::greedy(), 16)};
  const std::vector<Qwen3TtsCodes> a = generate(r), b = generate(r);
  REQUIRE(a[0].frames >= 2);
  CHECK(a[0].codes.size() == a[0].frames * 16);
  CHECK(a[0].codes == b[0].codes);
  std::set<std::int32_t> distinct;
  for (std::size_t f = 0; f < a[0].frames; ++f) {
    distinct.insert(a[0].codes[f * 16]);
    for (int q = 0; q < 16; ++q) {
      CHECK(a[0].codes[f * 16 + q] >= 0);
      CHECK(a[0].codes[f * 16 + q] < 2048);
    }
  }
  INFO("frames " << a[0].frames << ", distinct codebook-0 codes " << distinct.size());
  CHECK(distinct.size() >= 2);  // the codes depend on the context, not one code repeated
}

TEST_CASE("Qwen3-TTS: a batch of requests equals each request alone", "[qwen3_tts][generate]") {
  const std::vector<Qwen3TtsRequest> batch = {
      request({9707, 11, 1879}, "english", "ryan", Qwen3TtsSampling::greedy(), 12),
      request({100, 200, 300, 400, 500, 600}, "auto", "", Qwen3TtsSampling::greedy(), 7),
      request({42}, "chinese", "eric", seeded(11), 10),
      request({5, 6, 7, 8}, "german", "vivian", seeded(12), 9),
      streaming(request({31, 32, 33, 34, 35}, "english", "", Qwen3TtsSampling::greedy(), 8)),
      instructed(request({9707, 1879}, "auto", "", seeded(13), 6), {100, 200, 300})};
  const std::vector<Qwen3TtsCodes> together = generate(batch);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const std::vector<Qwen3TtsCodes> alone = generate(std::span(&batch[i], 1));
    INFO("request " << i);
    CHECK(together[i].frames == alone[0].frames);
    CHECK(together[i].codes == alone[0].codes);
    CHECK(together[i].finished_by_eos == alone[0].finished_by_eos);
  }
}

TEST_CASE("Qwen3-TTS: the text mode and the instruction change the codes", "[qwen3_tts][generate]") {
  const Qwen3TtsRequest plain = request({9707, 11, 1879, 0, 5}, "english", "", Qwen3TtsSampling::greedy(), 6);
  const std::vector<Qwen3TtsRequest> r = {plain, streaming(plain), instructed(plain, {100, 200})};
  const std::vector<Qwen3TtsCodes> codes = generate(r);
  CHECK(codes[0].codes != codes[1].codes);
  CHECK(codes[0].codes != codes[2].codes);
}

TEST_CASE("Qwen3-TTS: the seed decides a sampled request's codes", "[qwen3_tts][generate]") {
  const Qwen3TtsRequest a = request({9707, 1879}, "english", "", seeded(5), 8);
  const Qwen3TtsRequest b = request({9707, 1879}, "english", "", seeded(6), 8);
  const auto first = generate(std::span(&a, 1)), again = generate(std::span(&a, 1)), other = generate(std::span(&b, 1));
  CHECK(first[0].codes == again[0].codes);
  CHECK(first[0].codes != other[0].codes);
}

TEST_CASE("Qwen3-TTS: bad requests are refused before anything runs", "[qwen3_tts][generate]") {
  const std::vector<Qwen3TtsRequest> bad_id = {request({151936}, "auto", "", Qwen3TtsSampling::greedy(), 4)};
  CHECK_THROWS_WITH(generate(bad_id), Catch::Contains("text token 151936 is outside the text vocabulary"));
  const std::vector<Qwen3TtsRequest> bad_voice = {request({1}, "auto", "nobody", Qwen3TtsSampling::greedy(), 4)};
  CHECK_THROWS_AS(generate(bad_voice), invalid_argument);
}

TEST_CASE("Qwen3-TTS: generated codes decode to 1920 samples per frame", "[qwen3_tts][generate]") {
  const std::vector<Qwen3TtsRequest> r = {request({9707, 11, 1879}, "english", "ryan", seeded(3), 6)};
  const Qwen3TtsCodes codes = generate(r)[0];
  detail::ThreadPool pool(2);
  Qwen3TtsCodecState state = model().codec().new_stream();
  std::vector<float> pcm;
  model().codec().decode(pool, state, codes.codes, pcm);
  CHECK(pcm.size() == codes.frames * 1920);
  CHECK(std::any_of(pcm.begin(), pcm.end(), [](float x) { return x != 0.0f; }));
}

TEST_CASE("Qwen3-TTS: a checkpoint named by IZWI_QWEN3_TTS_MODEL loads, speaks and decodes", "[qwen3_tts][generate]") {
  // For published weights (Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice) or the 0.6B
  // random shape (izwi-make-random-qwen3-tts --shape 0.6b): too large for CI.
  const char* dir = std::getenv("IZWI_QWEN3_TTS_MODEL");
  if (dir == nullptr || *dir == '\0') {
    WARN("SKIPPED: set IZWI_QWEN3_TTS_MODEL to a Qwen3-TTS directory to run this test");
    return;
  }
  const Qwen3Tts m = Qwen3Tts::load(dir);
  Qwen3TtsRequest r;
  r.text_tokens = {9707, 11, 1879};
  r.sampling = seeded(1);
  r.sampling.max_frames = 3;
  detail::ThreadPool pool(2);
  Qwen3TtsGenerator generator(m, pool);
  const Qwen3TtsCodes codes = generator.generate(std::span(&r, 1))[0];
  REQUIRE(codes.frames >= 1);
  Qwen3TtsCodecState state = m.codec().new_stream();
  std::vector<float> pcm;
  m.codec().decode(pool, state, codes.codes, pcm);
  CHECK(pcm.size() == codes.frames * m.codec().samples_per_frame());
}
