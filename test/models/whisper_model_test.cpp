// Whisper's forward passes: the Hugging Face and ggml loaders agree, KV-cached
// decoding equals a full recompute, and izwi matches whisper.cpp on the same
// random weights (goldens from test/reference/whisper_cpp_goldens.sh).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "izwi/audio/decode.hpp"
#include "izwi/audio/mel.hpp"
#include "izwi/io/json.hpp"
#include "izwi/kv_cache/paged.hpp"
#include "izwi/models/whisper.hpp"
#include "izwi/models/whisper_runner.hpp"
#include "models/random_whisper.hpp"

using namespace izwi;

namespace {

static_assert(WhisperOps<detail::CpuOps>);
static_assert(ModelFamily<Whisper>);

// Against whisper.cpp: max |Δ| / max |reference| over the sampled values.
// whisper.cpp rounds the conv im2col and both KV caches to f16 and takes GELU
// (tanh form) from an f16 table; izwi computes in f32 with erf GELU and an f16
// self-attention cache. Measured on jfk.wav / silero_test.wav: encoder 3.7e-4 /
// 4.9e-4, prompt logits 6.7e-4 / 4.8e-4. The gates leave about 5x margin.
constexpr double WHISPER_ENCODER_TOLERANCE = 2.5e-3;
constexpr double WHISPER_LOGITS_TOLERANCE = 2.5e-3;

std::vector<float> copy(std::span<const float> s) { return {s.begin(), s.end()}; }

/// A JSON array of token ids (goldens, published lists).
std::vector<TokenId> token_ids(const io::JsonValue& list) {
  std::vector<TokenId> out;
  for (const auto& id : list.as_array()) out.push_back(static_cast<TokenId>(id.as_int64()));
  return out;
}

}  // namespace

using testing::log_mel_of;
using testing::model;

namespace {

/// Greedy decoding of jfk.wav under `m`'s generation config writes none of
/// `suppressed` (the checkpoint's suppress list).
void check_greedy_avoids(const Whisper& m, const std::vector<TokenId>& suppressed) {
  WhisperRunner run(m, {.num_threads = 2});
  run.start(log_mel_of("jfk.wav"));
  WhisperGreedyOptions options;
  options.max_tokens = 48;
  const auto r = whisper_greedy_decode(run, options);
  REQUIRE_FALSE(r.tokens.empty());
  for (TokenId t : r.tokens) CHECK(std::find(suppressed.begin(), suppressed.end(), t) == suppressed.end());
}

}  // namespace
using testing::relative_difference;

TEST_CASE("Whisper: the HF directory and the ggml file give the same encoder output and logits", "[whisper][models]") {
  if (!testing::have_whisper_fixtures()) return;
  const auto mel = log_mel_of("jfk.wav");
  const Whisper& ggml = model("ggml-model.bin");
  const Whisper& hf = model("hf");
  REQUIRE(ggml.config().d_model == hf.config().d_model);
  REQUIRE(ggml.tokenizer() != nullptr);
  REQUIRE(hf.tokenizer() != nullptr);  // from vocab.json
  CHECK(hf.tokenizer()->token_text(1000) == ggml.tokenizer()->token_text(1000));

  WhisperRunner a(ggml, {.num_threads = 2}), b(hf, {.num_threads = 2});
  a.start(mel);
  b.start(mel);
  // Same f32 arrays, same code: only the file format differs.
  CHECK(relative_difference(a.encoder_output(), b.encoder_output()) == 0.0);
  const auto prompt = ggml.tokenizer()->sot_sequence("en", false, false);
  const auto la = copy(a.feed(prompt));
  CHECK(relative_difference(la, b.feed(prompt)) == 0.0);

  // The F16 file: weights rounded to f16 (relative error 2^-11 each).
  const Whisper& f16 = model("ggml-model-f16.bin");
  WhisperRunner c(f16, {.num_threads = 2});
  c.start(mel);
  CHECK(relative_difference(c.encoder_output(), a.encoder_output()) < 2e-2);
  CHECK(relative_difference(c.feed(prompt), la) < 2e-2);

  // Q8_0 (whisper.cpp's layout: matrices q8_0, conv kernels f16): 8-bit
  // weights, an error of up to 0.4% of each block's largest value.
  const Whisper& q8 = model("ggml-model-q8_0.bin");
  WhisperRunner d(q8, {.num_threads = 2});
  d.start(mel);
  CHECK(relative_difference(d.encoder_output(), a.encoder_output()) < 5e-2);
  CHECK(relative_difference(d.feed(prompt), la) < 5e-2);
}

TEST_CASE("Whisper: loading errors name the file and the problem", "[whisper][models]") {
  if (!testing::have_whisper_fixtures()) return;
  // whisper.cpp's test file: a valid header and vocabulary, but no weights.
  const auto weightless = testing::whisper_fixtures() / "whisper/for-tests-ggml-tiny.bin";
  CHECK_THROWS_WITH(Whisper::load(weightless),
                    Catch::Contains("for-tests-ggml-tiny.bin") && Catch::Contains("missing tensor") &&
                        Catch::Contains("encoder.conv1.weight"));
  CHECK_THROWS_WITH(Whisper::load(testing::whisper_fixtures() / "whisper/no-such-model.bin"),
                    Catch::Contains("no-such-model.bin"));
}

TEST_CASE("Whisper: KV-cached decoding equals a full recompute", "[whisper][models][properties]") {
  if (!testing::have_whisper_fixtures()) return;
  const auto mel = log_mel_of("jfk.wav");
  const Whisper& m = model("ggml-model.bin");
  WhisperRunner run(m, {.num_threads = 2});
  run.start(mel);
  WhisperGreedyOptions greedy;
  greedy.apply_rules = false;
  greedy.max_tokens = 24;
  const WhisperGreedyResult r = whisper_greedy_decode(run, greedy);
  REQUIRE(r.tokens.size() >= 8);

  // Decode token by token (cache), then feed the whole sequence at once (recompute).
  std::vector<TokenId> all = r.prompt;
  all.insert(all.end(), r.tokens.begin(), r.tokens.end());
  run.restart();
  std::vector<float> stepwise = copy(run.feed(r.prompt));
  for (std::size_t i = 0; i + 1 < r.tokens.size(); ++i) {
    const auto row = run.feed(std::span(&r.tokens[i], 1));
    stepwise.insert(stepwise.end(), row.begin(), row.end());
  }
  run.restart();
  const auto full = copy(run.feed(all, /*all_rows=*/true));
  const std::size_t vocab = m.vocab_size();
  const std::span<const float> recomputed(full.data() + (r.prompt.size() - 1) * vocab, stepwise.size());
  // f32 throughout; GEMV vs GEMM summation order only.
  CHECK(relative_difference(stepwise, recomputed) < 1e-5);
  // And greedy over the recomputed rows gives the same tokens.
  for (std::size_t i = 0; i < r.tokens.size(); ++i) {
    const auto row = recomputed.subspan(i * vocab, vocab);
    CHECK(std::max_element(row.begin(), row.end()) - row.begin() == r.tokens[i]);
  }
}

TEST_CASE("Whisper: decoding rules keep the output well formed", "[whisper][models]") {
  if (!testing::have_whisper_fixtures()) return;
  const Whisper& m = model("ggml-model.bin");
  WhisperRunner run(m, {.num_threads = 2});
  run.start(log_mel_of("jfk.wav"));
  const auto& s = m.special_tokens();
  WhisperGreedyOptions options;
  options.timestamps = true;
  options.max_tokens = 40;
  const WhisperGreedyResult r = whisper_greedy_decode(run, options);
  REQUIRE_FALSE(r.tokens.empty());
  CHECK(s.is_timestamp(r.tokens.front()));
  CHECK(r.tokens.front() <= s.timestamp_begin + 50);  // the first timestamp is at most 1 s
  TokenId last_timestamp = 0;
  for (std::size_t i = 0; i < r.tokens.size(); ++i) {
    const TokenId t = r.tokens[i];
    CHECK((t < s.eot || s.is_timestamp(t)));  // no special token is generated
    if (s.is_timestamp(t)) {
      CHECK(t >= last_timestamp);
      last_timestamp = t;
    }
    if (i >= 2 && s.is_timestamp(r.tokens[i - 1]) && s.is_timestamp(r.tokens[i - 2])) CHECK_FALSE(s.is_timestamp(t));
  }
  options.timestamps = false;
  const WhisperGreedyResult plain = whisper_greedy_decode(run, options);
  REQUIRE_FALSE(plain.tokens.empty());
  CHECK(plain.tokens.front() != *m.tokenizer()->token_to_id(" "));
  for (TokenId t : plain.tokens) CHECK(t < s.eot);
}

TEST_CASE("Whisper: the timestamp rule is openai-whisper's log-probability comparison", "[whisper][models]") {
  // ApplyTimestampRules forces a timestamp when logsumexp(log-probabilities of
  // the timestamps) > the best text token's log-probability. Checked here
  // against that formula written out over the whole vocabulary in double
  // (log-softmax first), on random logits placed within +-delta of the
  // boundary, so both outcomes occur and near-ties are exercised.
  const auto s = tokenizer::WhisperSpecialTokens::for_vocab_size(51865);
  const auto begin = static_cast<std::size_t>(s.timestamp_begin), eot = static_cast<std::size_t>(s.eot);
  std::mt19937 rng(12);
  std::normal_distribution<float> normal;
  const TokenId generated[] = {220, 1000};  // text only: no other timestamp rule applies
  int forced = 0, kept = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> logits(51865);
    for (float& l : logits) l = 3 * normal(rng);
    // Shift the timestamps so that their logsumexp sits delta above the best text logit.
    const double delta = (trial % 2 ? 1 : -1) * std::pow(10.0, -(trial % 7));
    double mass = 0;
    float best_text = -INFINITY;
    for (std::size_t i = 0; i < eot; ++i) best_text = std::max(best_text, logits[i]);
    for (std::size_t i = begin; i < logits.size(); ++i) mass += std::exp(static_cast<double>(logits[i]));
    const auto shift = static_cast<float>(best_text + delta - std::log(mass));
    for (std::size_t i = begin; i < logits.size(); ++i) logits[i] += shift;
    if (trial % 5 == 0) logits[eot] = best_text + 1;  // <|endoftext|> counts as text

    std::vector<float> expected = logits;
    for (std::size_t id = eot + 1; id < begin; ++id) expected[id] = -INFINITY;
    double top = -INFINITY, total = 0, ts_total = 0, text_best = -INFINITY;
    for (float l : expected) top = std::max(top, static_cast<double>(l));
    for (float l : expected) total += std::exp(l - top);
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const double logprob = expected[i] - top - std::log(total);
      if (i >= begin) ts_total += std::exp(logprob);
      else text_best = std::max(text_best, logprob);
    }
    const bool force = std::log(ts_total) > text_best;
    if (force) std::fill(expected.begin(), expected.begin() + static_cast<std::ptrdiff_t>(begin), -INFINITY);
    (force ? forced : kept) += 1;

    detail::whisper::apply_decoding_rules(logits, generated, s, std::nullopt, true, true);
    INFO("trial " << trial << ", delta " << delta);
    REQUIRE(logits == expected);
  }
  CHECK(forced > 50);
  CHECK(kept > 50);
}

TEST_CASE("Whisper: matches whisper.cpp on the same weights", "[whisper][models][reference]") {
  if (!testing::have_whisper_fixtures()) return;
  const Whisper& m = model("ggml-model.bin", DType::f16);  // whisper.cpp keeps its KV caches in f16
  WhisperRunner run(m, {.num_threads = 2});
  // name, audio file, offset of the window (s): two files, and two windows of the longer one.
  for (const auto& [name, file, offset] : {std::tuple<std::string, std::string, std::size_t>{"jfk", "jfk.wav", 0},
                                           {"silero_test", "silero_test.wav", 0},
                                           {"silero_test-30s", "silero_test.wav", 30}}) {
    INFO(name);
    const auto golden_path =
        std::filesystem::path(IZWI_SOURCE_DIR) / "test/models/goldens" / ("whisper-tiny-random-" + name + ".json");
    REQUIRE(std::filesystem::exists(golden_path));
    const io::JsonValue golden = io::read_json_file(golden_path);
    run.start(log_mel_of(file, offset));

    // Encoder output (see the tolerances above).
    const auto& sample = golden.at("encoder").as_array();
    const auto stride = static_cast<std::size_t>(golden.at("encoder_stride").as_int64());
    std::vector<float> mine, theirs;
    for (std::size_t i = 0; i < sample.size(); ++i) {
      mine.push_back(run.encoder_output()[i * stride]);
      theirs.push_back(static_cast<float>(*io::json_number(sample[i])));
    }
    CHECK(relative_difference(mine, theirs) < WHISPER_ENCODER_TOLERANCE);

    const std::vector<TokenId> prompt = token_ids(golden.at("prompt"));
    CHECK(prompt == m.tokenizer()->sot_sequence("en", false, false));
    const auto logits = copy(run.feed(prompt));
    const auto& golden_logits = golden.at("prompt_logits").as_array();
    const auto logit_stride = static_cast<std::size_t>(golden.at("prompt_logits_stride").as_int64());
    mine.clear();
    theirs.clear();
    for (std::size_t i = 0; i < golden_logits.size(); ++i) {
      mine.push_back(logits[i * logit_stride]);
      theirs.push_back(static_cast<float>(*io::json_number(golden_logits[i])));
    }
    CHECK(relative_difference(mine, theirs) < WHISPER_LOGITS_TOLERANCE);

    WhisperGreedyOptions plain;
    plain.apply_rules = false;  // the driver takes the argmax of all logits
    const WhisperGreedyResult r = whisper_greedy_decode(run, plain);
    const std::vector<TokenId> expected = token_ids(golden.at("greedy"));
    std::vector<TokenId> got = r.tokens;
    if (r.reached_end) got.push_back(m.special_tokens().eot);
    CHECK(got == expected);

    const WhisperLanguage language = whisper_detect_language(run);
    CHECK(language.code == golden.at("language").as_string());
    CHECK(language.probability == Approx(*io::json_number(golden.at("language_probability"))).epsilon(0.02));
  }
}

TEST_CASE("Whisper: timestamped greedy decoding matches whisper-cli's segments", "[whisper][models][reference]") {
  if (!testing::have_whisper_fixtures()) return;
  // The F32 and the F16 file (whisper.cpp multiplies F16 weights with f16-rounded activations).
  const std::string variant = GENERATE(std::string(""), std::string("-f16"));
  INFO("ggml-model" << variant << ".bin");
  const Whisper& m = model("ggml-model" + variant + ".bin", DType::f16);
  const auto& s = m.special_tokens();
  const io::JsonValue golden = io::read_json_file(std::filesystem::path(IZWI_SOURCE_DIR) /
                                                  ("test/models/goldens/whisper-tiny-random-jfk-cli" + variant + ".json"));
  // whisper-cli lists every token it sampled, segment by segment (timestamps
  // included); it does not force the first token to be a timestamp as
  // openai-whisper does, nor (without --suppress-nst) suppress the
  // non-speech symbols, hence initial_timestamp and checkpoint_suppress_tokens
  // = false below.
  std::vector<TokenId> expected;
  for (const auto& segment : golden.at("segments").as_array()) {
    const std::vector<TokenId> tokens = token_ids(segment.at("tokens"));
    expected.insert(expected.end(), tokens.begin(), tokens.end());
  }
  REQUIRE(expected.size() >= 3);
  WhisperRunner run(m, {.num_threads = 2});
  run.start(log_mel_of("jfk.wav"));
  WhisperGreedyOptions options;
  options.timestamps = true;
  options.initial_timestamp = false;
  options.checkpoint_suppress_tokens = false;
  const WhisperGreedyResult r = whisper_greedy_decode(run, options);
  REQUIRE(r.tokens.size() >= expected.size());
  CHECK(s.is_timestamp(expected.back()));
  CHECK(std::vector<TokenId>(r.tokens.begin(), r.tokens.begin() + static_cast<std::ptrdiff_t>(expected.size())) ==
        expected);
}

TEST_CASE("Whisper: generation_config.json and tokenizer.json of an HF directory", "[whisper][models]") {
  if (!testing::have_whisper_fixtures()) return;
  const Whisper& hf = model("hf");
  const auto& g = hf.generation_config();
  const auto& s = hf.special_tokens();
  CHECK(g.begin_suppress_tokens == std::vector<TokenId>{220, s.eot});
  CHECK(g.suppress_tokens.size() == 23);
  REQUIRE(g.alignment_heads.size() == 2);
  CHECK(g.alignment_heads[0].first == hf.config().decoder_layers - 1);
  // (A ggml file has none: it gets openai-whisper's defaults, the next test.)

  // The suppress lists apply: no suppressed token is ever generated.
  check_greedy_avoids(hf, g.suppress_tokens);

  // A directory whose generation_config disagrees with the vocabulary is refused, naming the key.
  const auto source = testing::random_whisper() / "hf";
  const auto dir = std::filesystem::temp_directory_path() / "izwi-whisper-bad-generation-config";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors"}) std::filesystem::create_symlink(source / f, dir / f);
  std::ofstream(dir / "generation_config.json") << R"({"lang_to_id": {"<|en|>": 50258}})";
  CHECK_THROWS_WITH(Whisper::load(dir), Catch::Contains("generation_config.json") && Catch::Contains("lang_to_id") &&
                                            Catch::Contains("<|en|>"));
  // tokenizer.json (model.vocab) is read like vocab.json.
  std::ofstream(dir / "generation_config.json") << "{}";
  {
    std::ifstream vocab(source / "vocab.json");
    const std::string body((std::istreambuf_iterator<char>(vocab)), std::istreambuf_iterator<char>());
    std::ofstream(dir / "tokenizer.json") << R"({"model": {"type": "BPE", "merges": [], "vocab": )" << body << "}}";
  }
  const auto from_json = tokenizer::WhisperTokenizer::from_tokenizer_json(dir / "tokenizer.json", 51865);
  const std::string text = " ask not what your country can do for you";
  CHECK(from_json.encode(text) == hf.tokenizer()->encode(text));
  std::filesystem::remove_all(dir);
}

TEST_CASE("Whisper: openai-whisper's default suppress lists equal the published generation_config.json files",
          "[whisper][models][reference]") {
  if (!testing::have_whisper_fixtures()) return;
  // The lists Hugging Face publishes with openai/whisper-tiny and tiny.en were
  // made by openai-whisper's own tokenizer code; izwi computes them from the
  // vocabulary (for ggml files, which carry none).
  const io::JsonValue published = io::read_json_file(std::filesystem::path(IZWI_SOURCE_DIR) /
                                                     "test/models/goldens/whisper-hf-generation-config-suppress.json");
  for (const auto& [kind, tiktoken] : {std::pair<std::string, std::string>{"multilingual", "multilingual.tiktoken"},
                                       {"english", "gpt2.tiktoken"}}) {
    INFO(kind);
    const io::JsonValue& expected = published.at(kind);
    const auto tokenizer = tokenizer::WhisperTokenizer::from_tiktoken(
        testing::whisper_fixtures() / "whisper" / tiktoken, static_cast<std::size_t>(expected.at("vocab_size").as_int64()));
    const WhisperGenerationConfig g = WhisperGenerationConfig::openai_defaults(tokenizer);
    CHECK(g.suppress_tokens == token_ids(expected.at("suppress_tokens")));
    CHECK(g.begin_suppress_tokens == token_ids(expected.at("begin_suppress_tokens")));
  }
  // A ggml file's own vocabulary (whisper.cpp's tiny) gives the same lists,
  // and greedy decoding under them never writes a suppressed token.
  const Whisper& ggml = model("ggml-model.bin");
  CHECK(ggml.generation_config().suppress_tokens == token_ids(published.at("multilingual").at("suppress_tokens")));
  check_greedy_avoids(ggml, ggml.generation_config().suppress_tokens);
}

TEST_CASE("Whisper: the encoder of a batch of windows equals each window alone", "[whisper][models][properties]") {
  if (!testing::have_whisper_fixtures()) return;
  const Whisper& m = model("ggml-model.bin");
  std::vector<float> mels = log_mel_of("jfk.wav");
  const auto second = log_mel_of("silero_test.wav", 30);
  mels.insert(mels.end(), second.begin(), second.end());
  const std::size_t window = std::size_t{m.config().n_audio_ctx} * m.config().d_model;
  detail::ThreadPool pool(2);
  detail::CpuOps ops(pool);
  std::vector<float> batched(2 * window), alone(window);
  m.encode_batch(ops, mels.data(), 2, batched.data());
  for (std::size_t w = 0; w < 2; ++w) {
    m.encode(ops, mels.data() + w * mels.size() / 2, alone.data());
    // GEMM over 3000 rows vs 1500: the same kernel, blocked differently.
    CHECK(relative_difference(std::span(batched).subspan(w * window, window), alone) < 1e-5);
  }
}
