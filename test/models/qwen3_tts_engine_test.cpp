// Qwen3-TTS on the engine (Qwen3TtsCpuExecutor), on the random small-shape
// checkpoint: each request's frames equal Qwen3TtsGenerator's (whose greedy
// codes equal llama.cpp's, see qwen3_tts_reference_test.cpp) and its audio
// equals one full decode of those codes; batched = alone (bit for bit), chunked prefill =
// one chunk, preempted = never preempted, streamed = the final output; the
// audio leaves in the requested windows; nothing leaks; bad input is named.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cstring>
#include <cmath>
#include <memory>
#include <vector>

#include "izwi/models/qwen3_tts_request.hpp"
#include "izwi/stock_engines.hpp"
#include "models/random_qwen3_tts.hpp"

using namespace izwi;

namespace {

using TtsEngine = Qwen3TtsCpuEngine;

static_assert(ExecutorFor<Qwen3TtsCpuExecutor, PagedKVCache<>>);
static_assert(HasRequestRelease<Qwen3TtsCpuExecutor> && HasPreemptionHook<Qwen3TtsCpuExecutor>);
static_assert(HasEosTokens<Qwen3TtsCpuExecutor> && !HasDetokenizer<Qwen3TtsCpuExecutor>);

const Qwen3Tts& model() {
  static const Qwen3Tts m = Qwen3Tts::load(testing::random_qwen3_tts());
  return m;
}

struct EngineOptions {
  std::size_t token_budget = 8192;
  std::optional<std::size_t> num_blocks;
};

template <class E = TtsEngine>
std::unique_ptr<E> make_engine(EngineOptions options = {}, Qwen3TtsCpuExecutorConfig config = {.num_threads = 2}) {
  Qwen3TtsCpuExecutor executor(model(), config);
  PagedKVCacheConfig cache_config;
  cache_config.byte_budget = std::size_t{64} << 20;
  cache_config.num_blocks = options.num_blocks;
  PagedKVCache<> cache(executor.kv_cache_shape(), cache_config);
  SchedulerConfig scheduler;
  scheduler.max_num_batched_tokens = options.token_budget;
  using Scheduler = std::remove_cvref_t<decltype(std::declval<E&>().scheduler())>;
  return std::make_unique<E>(Scheduler(scheduler), std::move(cache), std::move(executor));
}

constexpr auto* request = &testing::qwen3_tts_request;

constexpr auto* seeded = &testing::seeded_sampling;

const std::vector<Qwen3TtsRequest>& mixed_requests() {
  static const std::vector<Qwen3TtsRequest> r = [] {
    std::vector<Qwen3TtsRequest> v = {request({9707, 11, 1879}, "english", "ryan", Qwen3TtsSampling::greedy(), 12),
                                      request({100, 200, 300, 400, 500, 600}, "auto", "", Qwen3TtsSampling::greedy(), 7),
                                      request({42}, "chinese", "eric", seeded(11), 10),
                                      request({31, 32, 33, 34, 35}, "english", "", seeded(12), 9)};
    v[3].text_mode = Qwen3TtsTextMode::streaming;
    v.push_back(request({9707, 1879}, "auto", "", seeded(13), 6));
    v.back().instruction_tokens = {100, 200, 300};
    return v;
  }();
  return r;
}

/// What the engine streamed for one request.
struct Heard {
  std::vector<TokenId> tokens;
  std::vector<float> audio;
  std::vector<std::size_t> audio_chunk_frames;  ///< frames generated when each audio piece arrived
  std::optional<FinishReason> finish;
  std::string error;
  RequestStats stats;
};

template <class E>
std::vector<Heard> run_together(E& engine, const std::vector<Qwen3TtsRequest>& requests,
                                Qwen3TtsStreaming streaming = {}) {
  std::vector<RequestId> ids;
  for (const Qwen3TtsRequest& r : requests) ids.push_back(engine.add_request(make_qwen3_tts_request(model(), r, streaming)));
  std::vector<Heard> heard(ids.size());
  while (engine.has_unfinished_requests())
    for (const StreamChunk& chunk : engine.step()) {
      Heard& h = heard[static_cast<std::size_t>(std::find(ids.begin(), ids.end(), chunk.id) - ids.begin())];
      h.tokens.insert(h.tokens.end(), chunk.token_ids.begin(), chunk.token_ids.end());
      if (!chunk.audio.empty()) {
        CHECK(chunk.audio_sample_rate == 24000);
        h.audio.insert(h.audio.end(), chunk.audio.begin(), chunk.audio.end());
        h.audio_chunk_frames.push_back(h.tokens.size());
      }
      if (chunk.finish_reason) h.finish = chunk.finish_reason, h.stats = *chunk.stats;
      h.error += chunk.error;
    }
  return heard;
}

std::vector<Qwen3TtsCodes> generator_codes(std::span<const Qwen3TtsRequest> requests) {
  detail::ThreadPool pool(2);
  Qwen3TtsGenerator generator(model(), pool);
  return generator.generate(requests);
}

std::vector<float> full_decode(const Qwen3TtsCodes& codes) {
  detail::ThreadPool pool(2);
  Qwen3TtsCodecState state = model().codec().new_stream();
  std::vector<float> pcm;
  model().codec().decode(pool, state, codes.codes, pcm);
  return pcm;
}

double max_abs_difference(std::span<const float> a, std::span<const float> b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(double{a[i]} - b[i]));
  return worst;
}

template <class E>
void check_nothing_held(const E& engine) {
  CHECK(engine.kv_cache().stats().num_used_blocks == 0);
  CHECK(engine.executor().num_streams() == 0);
}

void check_same(const std::vector<Heard>& a, const std::vector<Heard>& b, double audio_tolerance) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("request " << i);
    CHECK(a[i].tokens == b[i].tokens);
    CHECK(a[i].finish == b[i].finish);
    CHECK(max_abs_difference(a[i].audio, b[i].audio) <= audio_tolerance);
  }
}

}  // namespace

TEST_CASE("Qwen3TtsCpuExecutor: the engine speaks the generator's frames, and its audio is their full decode",
          "[qwen3_tts][engine]") {
  const std::vector<Qwen3TtsRequest>& requests = mixed_requests();
  auto engine = make_engine();
  const std::vector<Heard> heard = run_together(*engine, requests);
  const std::vector<Qwen3TtsCodes> expected = generator_codes(requests);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    INFO("request " << i);
    std::vector<TokenId> first_codes;
    for (std::size_t f = 0; f < expected[i].frames; ++f) first_codes.push_back(expected[i].codes[f * 16]);
    std::vector<TokenId> spoken = heard[i].tokens;
    if (expected[i].finished_by_eos) {
      REQUIRE(!spoken.empty());
      CHECK(spoken.back() == model().config().codec_eos_id);
      spoken.pop_back();
    }
    CHECK(spoken == first_codes);
    CHECK(heard[i].finish == (expected[i].finished_by_eos ? FinishReason::stop : FinishReason::length));
    // Windows of 2, then 8 frames, equal one decode of all frames (the codec is causal).
    CHECK(max_abs_difference(heard[i].audio, full_decode(expected[i])) <= 1e-5);
    CHECK(heard[i].stats.output_audio_seconds == Approx(expected[i].frames * 0.08));
    CHECK(heard[i].stats.real_time_factor > 0.0);
    CHECK(heard[i].stats.time_to_first_audio > 0.0);
    CHECK(heard[i].stats.time_to_first_audio <= heard[i].stats.e2e_latency);
  }
  check_nothing_held(*engine);
}

TEST_CASE("Qwen3TtsCpuExecutor: batched = alone, chunked prefill = one chunk, preempted = not preempted",
          "[qwen3_tts][engine][properties]") {
  const std::vector<Qwen3TtsRequest>& requests = mixed_requests();
  auto together_engine = make_engine();
  const std::vector<Heard> together = run_together(*together_engine, requests);
  SECTION("each request alone") {
    std::vector<Heard> alone;
    auto engine = make_engine();
    for (const Qwen3TtsRequest& r : requests) alone.push_back(run_together(*engine, {r})[0]);
    check_same(together, alone, 0.0);  // the codec's matmuls are batch-invariant
    check_nothing_held(*engine);
  }
  SECTION("prompts chunked over steps (a budget of 5 rows)") {
    auto engine = make_engine({.token_budget = 5, .num_blocks = std::nullopt});
    check_same(together, run_together(*engine, requests), 0.0);
    check_nothing_held(*engine);
  }
  SECTION("the playback-deadline scheduler (another order of steps, streams sitting out)") {
    auto engine = make_engine<Qwen3TtsCpuDeadlineEngine>();
    check_same(together, run_together(*engine, requests), 0.0);
    check_nothing_held(*engine);
  }
  SECTION("a cache too small for all: requests are preempted and recomputed from their frames") {
    auto engine = make_engine({.token_budget = 8192, .num_blocks = 4});  // 64 positions; each request needs 17..31
    const std::vector<Heard> squeezed = run_together(*engine, requests);
    check_same(together, squeezed, 0.0);
    std::uint32_t preemptions = 0;
    for (const Heard& h : squeezed) preemptions += h.stats.num_preemptions;
    CHECK(preemptions > 0);
    check_nothing_held(*engine);
  }
}

TEST_CASE("Qwen3TtsCpuExecutor: audio leaves in windows, the first one short, then doubling", "[qwen3_tts][engine]") {
  auto exactly = [](std::uint32_t frames) {
    Qwen3TtsRequest r = request({9707, 11, 1879}, "english", "ryan", seeded(4), frames);
    r.sampling.min_frames = frames;  // EOS masked: exactly `frames` frames, ended by max_tokens
    return r;
  };
  auto engine = make_engine();
  Heard h = run_together(*engine, {exactly(13)}, {.first_window_frames = 3, .window_frames = 4})[0];
  CHECK(h.finish == FinishReason::length);
  CHECK(h.tokens.size() == 13);
  // 3 frames, then 4 (6 capped at 4), and the last two flushed when max_tokens ends the request.
  CHECK(h.audio_chunk_frames == std::vector<std::size_t>{3, 7, 11, 13});
  CHECK(h.audio.size() == 13 * 1920);
  h = run_together(*engine, {exactly(30)})[0];  // the defaults: 2, 4, 8, 8, ...
  CHECK(h.audio_chunk_frames == std::vector<std::size_t>{2, 6, 14, 22, 30});
  CHECK(h.audio.size() == 30 * 1920);
  check_nothing_held(*engine);
}

TEST_CASE("Qwen3TtsCpuExecutor: the same seed gives the same audio, whatever shares the batch", "[qwen3_tts][engine]") {
  const Qwen3TtsRequest a = request({9707, 1879}, "english", "", seeded(5), 8);
  const Qwen3TtsRequest b = request({9707, 1879}, "english", "", seeded(6), 8);
  auto engine = make_engine();
  const Heard first = run_together(*engine, {a})[0];
  const std::vector<Heard> mixed = run_together(*engine, {b, a, b});
  CHECK(mixed[1].tokens == first.tokens);
  // Bit-identical: the same windows, and the codec's matmuls compute each
  // output element the same way whatever the other rows of the batch.
  CHECK(mixed[1].audio == first.audio);
  CHECK(mixed[0].tokens != first.tokens);
  check_nothing_held(*engine);
}

TEST_CASE("Qwen3TtsCpuExecutor: an abort mid-speech frees everything", "[qwen3_tts][engine]") {
  auto engine = make_engine();
  const RequestId id =
      engine->add_request(make_qwen3_tts_request(model(), request({9707, 11, 1879}, "english", "", seeded(1), 40)));
  for (int i = 0; i < 4; ++i) engine->step();
  CHECK(engine->executor().num_streams() == 1);
  CHECK(engine->abort(id));
  while (engine->has_unfinished_requests()) engine->step();
  check_nothing_held(*engine);
}

namespace {
/// The field and message of the invalid_argument make_qwen3_tts_request throws.
std::string refusal(const Qwen3TtsRequest& r) {
  try {
    make_qwen3_tts_request(model(), r);
  } catch (const invalid_argument& e) {
    return e.field() + ": " + e.what();
  }
  return "accepted";
}
}  // namespace

TEST_CASE("Qwen3-TTS requests: bad input is refused naming the field", "[qwen3_tts][engine]") {
  CHECK(refusal(request({}, "auto", "", seeded(1), 4)) == "input: the text to speak is empty");
  CHECK_THAT(refusal(request({1}, "auto", "nobody", seeded(1), 4)), Catch::StartsWith("voice: unknown speaker 'nobody'"));
  CHECK_THAT(refusal(request({1}, "auto", "", seeded(1), 0)), Catch::StartsWith("max_tokens: max_frames"));
  CHECK_THAT(refusal(request({151936}, "auto", "", seeded(1), 4)),
             Catch::StartsWith("input: text token 151936 is outside the text vocabulary"));

  auto engine = make_engine();
  Request out_of_space = make_qwen3_tts_request(model(), request({1}, "auto", "", seeded(1), 4));
  out_of_space.prompt_tokens.back() = static_cast<TokenId>(qwen3_tts_token_space(model().config()));
  CHECK_THROWS_AS(engine->add_request(std::move(out_of_space)), invalid_argument);
  // A code where a packed prompt row belongs fails that request alone, naming it.
  Request codes_as_prompt = make_qwen3_tts_request(model(), request({1}, "auto", "", seeded(1), 4));
  codes_as_prompt.prompt_tokens.front() = 5;
  const Qwen3TtsRequest good = request({9707, 11}, "english", "", seeded(2), 4);
  const RequestId bad_id = engine->add_request(std::move(codes_as_prompt));
  const RequestId good_id = engine->add_request(make_qwen3_tts_request(model(), good));
  std::string bad_error;
  std::optional<FinishReason> good_finish;
  while (engine->has_unfinished_requests())
    for (const StreamChunk& chunk : engine->step()) {
      if (chunk.id == bad_id) bad_error += chunk.error;
      if (chunk.id == good_id && chunk.finish_reason) good_finish = chunk.finish_reason;
    }
  CHECK_THAT(bad_error, Catch::Contains("packed Qwen3-TTS prompt row"));
  CHECK(good_finish.has_value());
  CHECK(good_finish != FinishReason::error);
  check_nothing_held(*engine);
}

// ---------------------------------------------------------------------------
// Batch invariance (issue 13: "the same seed gives bit-identical audio
// whatever else is batched"). A sampled code hides last-bit differences (a
// draw flips only at a near-tie), so these compare what the codes are drawn
// from bit for bit: the talker's raw logprob of every frame's first code and
// the code predictor's logits of every codebook.

namespace {

/// A request whose talker logits are observed: its logprobs are asked for.
template <class E>
RequestId add_observed(E& engine, const Qwen3TtsRequest& r) {
  Request request = make_qwen3_tts_request(model(), r);
  request.sampling.logprobs = 0;
  return engine.add_request(std::move(request));
}

struct Observed {
  Heard heard;
  std::vector<std::uint32_t> logprob_bits;  ///< the talker's logprob of each first code, bit for bit
};

/// Runs `requests`, request i added before step arrivals[i] (0: at once),
/// and returns what each one produced.
template <class E>
std::vector<Observed> run_arriving(E& engine, const std::vector<Qwen3TtsRequest>& requests,
                                   const std::vector<std::size_t>& arrivals) {
  std::vector<RequestId> ids(requests.size(), RequestId(-1));
  std::vector<Observed> seen(requests.size());
  for (std::size_t step = 0;; ++step) {
    bool pending = false;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (arrivals[i] == step) ids[i] = add_observed(engine, requests[i]);
      pending = pending || arrivals[i] > step;
    }
    if (!pending && !engine.has_unfinished_requests()) break;
    for (const StreamChunk& chunk : engine.step()) {
      Observed& o = seen[static_cast<std::size_t>(std::find(ids.begin(), ids.end(), chunk.id) - ids.begin())];
      o.heard.tokens.insert(o.heard.tokens.end(), chunk.token_ids.begin(), chunk.token_ids.end());
      for (const TokenLogprobs& l : chunk.logprobs) o.logprob_bits.push_back(std::bit_cast<std::uint32_t>(l.logprob));
      o.heard.audio.insert(o.heard.audio.end(), chunk.audio.begin(), chunk.audio.end());
      if (chunk.finish_reason) o.heard.finish = chunk.finish_reason;
      o.heard.error += chunk.error;
    }
  }
  return seen;
}

/// Seven requests unlike the probe and unlike each other: other texts, speakers, languages, modes, lengths.
std::vector<Qwen3TtsRequest> other_requests() {
  std::vector<Qwen3TtsRequest> v = {
      request({100, 200, 300, 400, 500, 600, 700, 800, 900}, "auto", "", seeded(31), 17),
      request({42}, "chinese", "eric", seeded(32), 9),
      request({31, 32, 33, 34, 35}, "english", "", seeded(33), 21),
      request({9707, 1879}, "auto", "ryan", Qwen3TtsSampling::greedy(), 5),
      request({5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}, "english", "eric", seeded(35), 12),
      request({77, 78}, "auto", "", seeded(36), 30),
      request({1000, 2000, 3000}, "chinese", "", seeded(37), 14)};
  v[2].text_mode = Qwen3TtsTextMode::streaming;
  v[5].instruction_tokens = {100, 200, 300};
  for (Qwen3TtsRequest& r : v) r.sampling.min_frames = r.sampling.max_frames;  // long enough to overlap the probe
  return v;
}

void check_bit_identical(const Observed& alone, const Observed& batched) {
  CHECK(batched.heard.error.empty());
  CHECK(batched.heard.tokens == alone.heard.tokens);
  CHECK(batched.logprob_bits == alone.logprob_bits);
  REQUIRE(batched.heard.audio.size() == alone.heard.audio.size());
  CHECK(std::memcmp(batched.heard.audio.data(), alone.heard.audio.data(), alone.heard.audio.size() * sizeof(float)) == 0);
}

}  // namespace

TEST_CASE("Qwen3TtsCpuExecutor: a seeded request is bit-identical alone and batched with 1, 3 or 7 others",
          "[qwen3_tts][engine][properties]") {
  // Upstream's sampling (temperature 0.9, top-k 50, repetition penalty 1.05), 40 frames.
  for (const std::uint64_t seed : {21u, 22u}) {
    Qwen3TtsRequest probe = request({9707, 11, 1879, 374, 264, 1273}, "english", "ryan", seeded(seed), 40);
    probe.sampling.min_frames = 40;
    const std::vector<Qwen3TtsRequest> others = other_requests();
    auto alone_engine = make_engine();
    const Observed alone = run_arriving(*alone_engine, {probe}, {0})[0];
    REQUIRE(alone.heard.tokens.size() == 40);
    REQUIRE(alone.logprob_bits.size() == 40);
    REQUIRE(alone.heard.audio.size() == 40 * 1920);
    {
      INFO("seed " << seed << ", alone on 1 thread and on 3");
      for (const std::size_t threads : {1u, 3u}) {
        auto engine = make_engine({}, {.num_threads = threads});
        check_bit_identical(alone, run_arriving(*engine, {probe}, {0})[0]);
      }
    }
    for (const std::size_t n : {1u, 3u, 7u})
      for (const bool staggered : {false, true})
        for (const std::size_t budget : {std::size_t{8192}, std::size_t{7}}) {
          INFO("seed " << seed << ", " << n << " others, " << (staggered ? "staggered" : "arriving together")
                       << ", token budget " << budget);
          std::vector<Qwen3TtsRequest> batch(others.begin(), others.begin() + static_cast<std::ptrdiff_t>(n));
          std::vector<std::size_t> arrivals(n, 0);
          if (staggered)
            for (std::size_t i = 0; i < n; ++i) arrivals[i] = 3 * i;  // joining while the probe prefills and decodes
          // The probe in the middle of the batch: rows before and after it.
          batch.insert(batch.begin() + static_cast<std::ptrdiff_t>(n / 2), probe);
          arrivals.insert(arrivals.begin() + static_cast<std::ptrdiff_t>(n / 2), staggered ? 1 : 0);
          auto engine = make_engine({.token_budget = budget, .num_blocks = std::nullopt});
          const std::vector<Observed> seen = run_arriving(*engine, batch, arrivals);
          check_bit_identical(alone, seen[n / 2]);
          check_nothing_held(*engine);
        }
  }
}

TEST_CASE("Qwen3TtsCompute: the code predictor's logits of a frame are bit-identical whatever frames share its passes",
          "[qwen3_tts][engine][properties]") {
  const Qwen3TtsConfig& c = model().config();
  const std::size_t h = c.talker.hidden_size, vocab = c.predictor.vocab_size, groups = c.num_code_groups;
  detail::ThreadPool pool(2);
  detail::Qwen3TtsCompute compute(model(), pool);
  SamplingParams sampling;
  sampling.temperature = 0.9f, sampling.top_k = 50;
  // Hidden states of 24 frames (deterministic, talker-sized values).
  std::vector<float> hidden(24 * h);
  for (std::size_t i = 0; i < hidden.size(); ++i) hidden[i] = std::sin(0.37f * static_cast<float>(i)) * 2.0f;
  struct Run {
    std::vector<std::int32_t> frames;
    std::vector<float> logits;
  };
  // Frames [first, first + n); the probe is frame 5, seed 99.
  auto run = [&](std::size_t first, std::size_t n) {
    std::vector<std::int32_t> frames(n * groups, 0);
    std::vector<float> logits(n * (groups - 1) * vocab);
    std::vector<SequenceRng> rngs;
    for (std::size_t i = 0; i < n; ++i) rngs.emplace_back(first + i == 5 ? 99 : 1000 + first + i);
    std::vector<detail::Qwen3TtsFrameJob> jobs;
    for (std::size_t i = 0; i < n; ++i) {
      frames[i * groups] = static_cast<std::int32_t>((first + i) * 37 % 2048);
      jobs.push_back({hidden.data() + (first + i) * h, frames.data() + i * groups, &sampling, &rngs[i],
                      logits.data() + i * (groups - 1) * vocab});
    }
    compute.predict(jobs);
    const std::size_t at = 5 - first;
    return Run{{frames.begin() + static_cast<std::ptrdiff_t>(at * groups),
                frames.begin() + static_cast<std::ptrdiff_t>((at + 1) * groups)},
               {logits.begin() + static_cast<std::ptrdiff_t>(at * (groups - 1) * vocab),
                logits.begin() + static_cast<std::ptrdiff_t>((at + 1) * (groups - 1) * vocab)}};
  };
  const Run alone = run(5, 1);
  // 2 to 20 frames: every matmul path of the old kernels (1 row, 2..16 rows, 17 and more).
  for (const auto& [first, n] : {std::pair<std::size_t, std::size_t>{4, 2}, {3, 4}, {0, 8}, {1, 9}, {2, 13}, {0, 20}}) {
    INFO(n << " frames in each pass");
    const Run batched = run(first, n);
    CHECK(batched.frames == alone.frames);
    CHECK(std::memcmp(batched.logits.data(), alone.logits.data(), alone.logits.size() * sizeof(float)) == 0);
  }
}
