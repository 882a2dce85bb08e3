// Long-form transcription (izwi/asr/transcriber.hpp) over a fake engine, the
// VAD chunk plan, and the transcription protocol (server/transcription_api.hpp):
// form parsing, srt/vtt/verbose_json/json/text bodies, streamed events.
#include <catch2/catch.hpp>

#include <boost/json/parse.hpp>

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <numbers>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "izwi/asr/chunking.hpp"
#include "izwi/asr/transcriber.hpp"
#include "izwi/engine/beam_search.hpp"
#include "izwi/server/transcription_api.hpp"

#include "multipart_test_support.hpp"

namespace { auto ContainsSubstring(const std::string& s) { return Catch::Matchers::Contains(s); } }
using Catch::Matchers::WithinAbs;
using izwi::TokenId;
namespace asr = izwi::asr;
namespace openai = izwi::server::openai;

namespace {

// A multilingual vocabulary (51865 ids: the special ids are the real ones)
// whose text tokens are the 256 bytes, a few words and unused fillers.
const izwi::tokenizer::WhisperTokenizer& fake_tokenizer() {
  static const izwi::tokenizer::WhisperTokenizer tokenizer = [] {
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
    for (const char* w : {" hello", " world", " again", " la", " silence", " one", " two", " three"}) tokens.emplace_back(w);
    while (tokens.size() < 50257) tokens.push_back("\x01unused" + std::to_string(tokens.size()));
    return izwi::tokenizer::WhisperTokenizer::from_vocabulary(std::move(tokens), 51865);
  }();
  return tokenizer;
}

const izwi::tokenizer::WhisperSpecialTokens& special() { return fake_tokenizer().special(); }
TokenId word(std::string_view w) { return *fake_tokenizer().token_to_id(w); }
TokenId ts(double seconds) { return special().timestamp_begin + static_cast<TokenId>(std::lround(seconds / 0.02)); }

/// What the fake model answers for one decode job.
struct Decoded {
  std::vector<TokenId> tokens;  // without <|endoftext|>
  float logprob = -0.1f;        // each token's, <|endoftext|> included
  std::vector<float> logprobs{};  // when set: each token's (<|endoftext|> last), instead of `logprob`
};

/// A fake decoder's next-token distribution after `prefix`: (token,
/// log-probability), most probable first.
using NextTokens = std::function<std::vector<izwi::TokenLogprob>(const std::vector<TokenId>& prefix)>;

/// Greedy decoding of `next` (argmax until <|endoftext|>), as the engine would.
Decoded greedy_of(const NextTokens& next) {
  Decoded d;
  std::vector<TokenId> prefix;
  for (int i = 0; i < 50; ++i) {
    const izwi::TokenLogprob top = next(prefix).front();
    d.logprobs.push_back(top.logprob);
    if (top.token == special().eot) break;
    prefix.push_back(top.token);
  }
  d.tokens = prefix;
  return d;
}

/// Runs a transcriber to the end: probes answer `language` with
/// probability 0.9 and the given no-speech probability; decodes answer
/// `decode(job)`. `reverse`: finish the jobs of each round last-first (an
/// engine finishing batched windows out of order).
struct FakeEngine {
  std::string language = "en";
  std::function<double(const asr::WindowJob&)> no_speech = [](const asr::WindowJob&) { return 0.01; };
  std::function<Decoded(const asr::WindowJob&)> decode;
  /// Beam rounds (jobs with top_logprobs) answer from this distribution.
  NextTokens next;
  bool reverse = false;
  std::vector<asr::WindowJob> seen;
  std::vector<std::string> deltas;

  izwi::StreamChunk probe_chunk(const asr::WindowJob& job) const {
    izwi::StreamChunk c;
    const TokenId lang = *special().language_token(language);
    c.token_ids = {lang};
    izwi::TokenLogprobs lp;
    lp.token = lang;
    lp.logprob = std::log(0.9f);
    lp.top = {{lang, lp.logprob}, {special().no_speech, static_cast<float>(std::log(no_speech(job)))}};
    c.logprobs.push_back(lp);
    c.finish_reason = izwi::FinishReason::length;
    return c;
  }

  std::vector<izwi::StreamChunk> decode_chunks(const asr::WindowJob& job) const {
    if (job.top_logprobs > 0) {  // a beam round: one token, its alternatives
      REQUIRE(job.max_tokens == 1);
      REQUIRE(job.temperature == 0.0f);
      std::vector<izwi::TokenLogprob> top = next(job.continuation);
      if (top.size() > job.top_logprobs) top.resize(job.top_logprobs);
      izwi::StreamChunk c;
      c.token_ids = {top.front().token};
      c.logprobs.push_back({top.front().token, top.front().logprob, top, {}, {}});
      c.finish_reason = izwi::FinishReason::length;
      return {c};
    }
    Decoded d = decode(job);
    d.tokens.push_back(special().eot);
    std::vector<izwi::StreamChunk> chunks;
    for (std::size_t i = 0; i < d.tokens.size(); ++i) {  // one chunk per token, as the engine streams
      izwi::StreamChunk c;
      c.token_ids = {d.tokens[i]};
      c.logprobs.push_back({d.tokens[i], i < d.logprobs.size() ? d.logprobs[i] : d.logprob, {}, {}, {}});
      if (i + 1 == d.tokens.size()) c.finish_reason = izwi::FinishReason::stop;
      chunks.push_back(std::move(c));
    }
    return chunks;
  }

  void run(asr::Transcriber& t) {
    for (int round = 0; round < 1000 && !t.done(); ++round) {
      std::vector<asr::WindowJob> jobs = t.take_jobs();
      REQUIRE((!jobs.empty() || t.done()));
      if (reverse) std::reverse(jobs.begin(), jobs.end());
      for (const auto& job : jobs) {
        seen.push_back(job);
        answer(t, job);
        while (auto d = t.take_delta()) deltas.push_back(d->text);
      }
    }
    REQUIRE(t.done());
    REQUIRE(t.jobs_in_flight() == 0);
  }

  /// Every chunk of `job`'s answer, fed to the transcriber.
  void answer(asr::Transcriber& t, const asr::WindowJob& job) const {
    if (job.kind == asr::WindowJob::Kind::language_probe) {
      t.on_chunk(job.id, probe_chunk(job));
    } else {
      for (const auto& c : decode_chunks(job)) t.on_chunk(job.id, c);
    }
  }

  std::vector<asr::WindowJob> decodes() const {
    std::vector<asr::WindowJob> out;
    for (const auto& j : seen)
      if (j.kind == asr::WindowJob::Kind::decode) out.push_back(j);
    return out;
  }
};

std::shared_ptr<const std::vector<float>> silence(double seconds) {
  return std::make_shared<const std::vector<float>>(static_cast<std::size_t>(seconds * 16000), 0.0f);
}

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += p;
  return out;
}

}  // namespace

TEST_CASE("compression_ratio: zlib's, repetitive text above 2.4, plain text below", "[asr]") {
  CHECK(asr::compression_ratio("") == 0.0);
  std::string repeated;
  for (int i = 0; i < 40; ++i) repeated += "the the the ";
  CHECK(asr::compression_ratio(repeated) > 10.0);
  CHECK(asr::compression_ratio("And so my fellow Americans, ask not what your country can do for you.") < 2.4);
  // Python: len(b) / len(zlib.compress(b)) for b"hello hello hello hello" is 23 / 16.
  CHECK_THAT(asr::compression_ratio("hello hello hello hello"), WithinAbs(23.0 / 16.0, 1e-12));
}

TEST_CASE("TranscriptionOptions: the fallback temperatures climb to 1.0 by 0.2", "[asr]") {
  asr::TranscriptionOptions o;
  CHECK(o.temperatures() == std::vector<float>{0.0f, 0.2f, 0.4f, 0.6f, 0.8f, 1.0f});
  o.temperature = 0.5f;
  CHECK(o.temperatures() == std::vector<float>{0.5f, 0.7f, 0.9f});
  o.temperature_increment = 0;
  CHECK(o.temperatures() == std::vector<float>{0.5f});
}

TEST_CASE("Transcriber: long audio seeks by the last timestamp and prompts with the previous text", "[asr]") {
  // 65 s. Window 1 (0 s): two segments ending on a pair at 10 s -> seek to 10 s.
  // Window 2 (10 s): two segments, then a single timestamp ending -> seek by the whole window (to 40 s).
  // Window 3 (40 s, 25 s long): text without timestamps -> one segment over the window.
  FakeEngine fake;
  fake.decode = [](const asr::WindowJob& job) -> Decoded {
    const double at = static_cast<double>(job.begin) / 16000;
    if (at == 0) return {{ts(0), word(" hello"), ts(5), ts(5), word(" world"), ts(10), ts(10)}};
    if (at == 10) return {{ts(0), word(" again"), ts(4), ts(4), word(" one"), ts(6)}};
    return {{word(" two"), word(" three")}};
  };
  asr::TranscriptionOptions options;
  options.language = "en";
  asr::Transcriber t(fake_tokenizer(), silence(65), options);
  fake.run(t);
  const asr::Transcription r = t.result();
  REQUIRE(r.segments.size() == 5);
  const std::vector<std::tuple<std::string, double, double, std::size_t>> expected{
      {" hello", 0, 5, 0}, {" world", 5, 10, 0}, {" again", 10, 14, 1000}, {" one", 14, 16, 1000},
      {" two three", 40, 65, 4000}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO("segment " << i);
    CHECK(r.segments[i].id == i);
    CHECK(r.segments[i].text == std::get<0>(expected[i]));
    CHECK_THAT(r.segments[i].start, WithinAbs(std::get<1>(expected[i]), 1e-9));
    CHECK_THAT(r.segments[i].end, WithinAbs(std::get<2>(expected[i]), 1e-9));
    CHECK(r.segments[i].seek == std::get<3>(expected[i]));
  }
  CHECK(r.segments[1].tokens == std::vector<TokenId>{ts(5), word(" world"), ts(10)});
  CHECK(r.text == "hello world again one two three");
  CHECK(r.language == "en");
  CHECK(r.duration == 65.0);

  const auto decodes = fake.decodes();
  REQUIRE(decodes.size() == 3);
  CHECK(decodes[0].previous_tokens.empty());
  CHECK(decodes[1].previous_tokens == std::vector<TokenId>{ts(0), word(" hello"), ts(5), ts(5), word(" world"), ts(10)});
  CHECK(decodes[2].previous_tokens.size() == 12);
  CHECK(decodes[1].begin == 10 * 16000);
  CHECK(decodes[2].begin == 40 * 16000);
  CHECK(decodes[2].end - decodes[2].begin == 25 * 16000);
  // Every window is probed (no-speech probability) before it is decoded.
  CHECK(fake.seen.size() == 6);
  CHECK(joined(fake.deltas) == r.text);
}

TEST_CASE("Transcriber: without timestamps every window is one segment and the next starts where it ends", "[asr]") {
  // 65 s: windows at 0, 30 and 60 s, each decoded after <|notimestamps|>.
  FakeEngine fake;
  fake.decode = [](const asr::WindowJob& job) -> Decoded {
    REQUIRE_FALSE(job.timestamps);
    const double at = static_cast<double>(job.begin) / 16000;
    if (at == 0) return {{word(" hello"), word(" world")}};
    if (at == 30) return {{word(" again")}};
    return {{word(" one")}};
  };
  asr::TranscriptionOptions options;
  options.language = "en";
  options.timestamps = false;
  asr::Transcriber t(fake_tokenizer(), silence(65), options);
  fake.run(t);
  const asr::Transcription r = t.result();
  REQUIRE(r.segments.size() == 3);
  const std::vector<std::tuple<std::string, double, double>> expected{
      {" hello world", 0, 30}, {" again", 30, 60}, {" one", 60, 65}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO("segment " << i);
    CHECK(r.segments[i].text == std::get<0>(expected[i]));
    CHECK_THAT(r.segments[i].start, WithinAbs(std::get<1>(expected[i]), 1e-9));
    CHECK_THAT(r.segments[i].end, WithinAbs(std::get<2>(expected[i]), 1e-9));
  }
  CHECK(r.text == "hello world again one");
  const auto decodes = fake.decodes();
  REQUIRE(decodes.size() == 3);
  CHECK(decodes[1].previous_tokens == std::vector<TokenId>{word(" hello"), word(" world")});
  // With timestamps (the default) the same jobs ask for them.
  FakeEngine timed;
  timed.decode = [](const asr::WindowJob& job) -> Decoded {
    REQUIRE(job.timestamps);
    return {{word(" hello")}};
  };
  options.timestamps = true;
  asr::Transcriber t2(fake_tokenizer(), silence(5), options);
  timed.run(t2);
  CHECK(t2.result().text == "hello");
}

TEST_CASE("Transcriber: the temperature falls back on repetitive text and low log-probability", "[asr]") {
  FakeEngine fake;
  std::vector<TokenId> repetitive{ts(0)};
  for (int i = 0; i < 60; ++i) repetitive.push_back(word(" la"));
  repetitive.push_back(ts(5));
  fake.decode = [&](const asr::WindowJob& job) -> Decoded {
    if (job.temperature < 0.1f) return {repetitive};                             // compression ratio far above 2.4
    if (job.temperature < 0.3f) return {{ts(0), word(" hello"), ts(2)}, -1.5f};  // avg log-probability below -1
    return {{ts(0), word(" world"), ts(2)}};
  };
  asr::TranscriptionOptions options;
  options.language = "en";
  asr::Transcriber t(fake_tokenizer(), silence(3), options);
  fake.run(t);
  const auto decodes = fake.decodes();
  REQUIRE(decodes.size() == 3);
  CHECK(decodes[0].temperature == 0.0f);
  CHECK(decodes[1].temperature == 0.2f);
  CHECK(decodes[2].temperature == 0.4f);
  const asr::Transcription r = t.result();
  REQUIRE(r.segments.size() == 1);
  CHECK(r.segments[0].text == " world");
  CHECK(r.segments[0].temperature == 0.4f);
  CHECK(r.segments[0].compression_ratio < 2.4);
  CHECK_THAT(r.segments[0].avg_logprob, WithinAbs(-0.1, 1e-6));
  CHECK(r.windows_decoded == 3);

  SECTION("when every temperature fails, the last decode stands and the next prompt is reset") {
    FakeEngine bad;
    bad.decode = [&](const asr::WindowJob& job) -> Decoded {
      if (job.begin == 0) return {{ts(0), word(" hello"), ts(20), ts(20)}, -3.0f};
      return {{ts(0), word(" world"), ts(1)}};
    };
    asr::Transcriber t2(fake_tokenizer(), silence(40), options);
    bad.run(t2);
    const auto d = bad.decodes();
    REQUIRE(d.size() == 7);  // 6 temperatures for the first window, one for the second
    CHECK(d[5].temperature == 1.0f);
    CHECK(d[6].previous_tokens.empty());  // decoded above 0.5: not a prompt
    CHECK(t2.result().segments[0].temperature == 1.0f);
  }
}

TEST_CASE("Transcriber: a window of silence (no-speech above 0.6, log-probability below -1) is skipped", "[asr]") {
  FakeEngine fake;
  fake.no_speech = [](const asr::WindowJob& job) { return job.begin == 0 ? 0.9 : 0.01; };
  fake.decode = [](const asr::WindowJob& job) -> Decoded {
    if (job.begin == 0) return {{ts(0), word(" silence"), ts(3)}, -2.0f};
    return {{ts(0), word(" hello"), ts(3)}};
  };
  asr::TranscriptionOptions options;
  options.language = "en";
  asr::Transcriber t(fake_tokenizer(), silence(45), options);
  fake.run(t);
  const auto decodes = fake.decodes();
  REQUIRE(decodes.size() == 2);  // no fallback for silence
  CHECK(decodes[1].begin == 30 * 16000);
  const asr::Transcription r = t.result();
  REQUIRE(r.segments.size() == 1);
  CHECK(r.segments[0].text == " hello");
  CHECK_THAT(r.segments[0].start, WithinAbs(30.0, 1e-9));
  CHECK_THAT(r.segments[0].no_speech_prob, WithinAbs(0.01, 1e-6));

  SECTION("a confident decode is kept despite a high no-speech probability") {
    FakeEngine kept;
    kept.no_speech = [](const asr::WindowJob&) { return 0.9; };
    kept.decode = [](const asr::WindowJob&) -> Decoded { return {{ts(0), word(" hello"), ts(3)}, -0.5f}; };
    asr::Transcriber t2(fake_tokenizer(), silence(5), options);
    kept.run(t2);
    CHECK(t2.result().text == "hello");
  }
}

TEST_CASE("Transcriber: the language is detected once, from the first window", "[asr]") {
  FakeEngine fake;
  fake.language = "de";
  fake.decode = [](const asr::WindowJob&) -> Decoded { return {{ts(0), word(" hello"), ts(3)}}; };
  std::vector<izwi::audio::AudioChunk> regions{{0, 16000 * 10}, {16000 * 20, 16000 * 30}};
  asr::Transcriber t(fake_tokenizer(), silence(30), {}, regions);
  fake.run(t);
  for (const auto& d : fake.decodes()) CHECK(d.language == std::optional<std::string>("de"));
  const asr::Transcription r = t.result();
  CHECK(r.language == "de");
  CHECK_THAT(r.language_probability, WithinAbs(0.9, 1e-6));

  asr::TranscriptionOptions klingon;
  klingon.language = "xx";
  CHECK_THROWS_WITH(asr::Transcriber(fake_tokenizer(), silence(1), klingon),
                    ContainsSubstring("unknown language 'xx'") && ContainsSubstring("en, zh, de"));
}

TEST_CASE("Transcriber: VAD regions decode at once and are stitched in audio order", "[asr]") {
  FakeEngine fake;
  fake.reverse = true;  // later regions finish first
  const std::vector<izwi::audio::AudioChunk> regions{{0, 16000 * 28}, {16000 * 28, 16000 * 55}, {16000 * 70, 16000 * 90}};
  fake.decode = [](const asr::WindowJob& job) -> Decoded {
    const TokenId w = job.begin == 0 ? word(" one") : job.begin == 16000 * 28 ? word(" two") : word(" three");
    return {{ts(1), w, ts(2)}};
  };
  asr::TranscriptionOptions options;
  options.language = "en";
  asr::Transcriber t(fake_tokenizer(), silence(90), options, regions);
  // Every region's first job is handed out at once (one engine batch).
  const auto first = t.take_jobs();
  CHECK(first.size() == 3);
  // Run them (re-queued through a fresh transcriber, since take_jobs consumed them).
  asr::Transcriber t2(fake_tokenizer(), silence(90), options, regions);
  fake.run(t2);
  const asr::Transcription r = t2.result();
  REQUIRE(r.segments.size() == 3);
  CHECK(r.segments[0].text == " one");
  CHECK_THAT(r.segments[0].start, WithinAbs(0.0, 1e-9));  // no timestamp pair: the window's start
  CHECK_THAT(r.segments[0].end, WithinAbs(2.0, 1e-9));
  CHECK(r.segments[1].text == " two");
  CHECK_THAT(r.segments[1].start, WithinAbs(28.0, 1e-9));
  CHECK_THAT(r.segments[1].end, WithinAbs(30.0, 1e-9));
  CHECK(r.segments[1].seek == 2800);
  CHECK(r.segments[2].text == " three");
  CHECK_THAT(r.segments[2].start, WithinAbs(70.0, 1e-9));
  CHECK(r.segments[2].id == 2);
  CHECK(r.text == "one two three");
  CHECK(joined(fake.deltas) == r.text);
  CHECK(fake.deltas.front() == "one");  // in audio order although region 3 finished first
  CHECK(r.duration == 90.0);
}

TEST_CASE("Transcriber: segment times past the audio are clamped to its end", "[asr]") {
  FakeEngine fake;
  fake.decode = [](const asr::WindowJob&) -> Decoded { return {{ts(1), word(" hello"), ts(12), ts(12), word(" world"), ts(20)}}; };
  asr::TranscriptionOptions options;
  options.language = "en";
  asr::Transcriber t(fake_tokenizer(), silence(5), options);
  fake.run(t);
  const asr::Transcription r = t.result();
  REQUIRE(r.segments.size() == 2);
  CHECK(r.segments[0].start == 1.0);
  CHECK(r.segments[0].end == 5.0);
  CHECK(r.segments[1].start == 5.0);  // then zero-length: its text is dropped
  CHECK(r.segments[1].end == 5.0);
  CHECK(r.segments[1].text.empty());
  CHECK(r.text == "hello");
}

TEST_CASE("Transcriber: an aborted window fails the transcription", "[asr]") {
  asr::TranscriptionOptions options;
  options.language = "en";
  asr::Transcriber t(fake_tokenizer(), silence(5), options);
  auto jobs = t.take_jobs();
  REQUIRE(jobs.size() == 1);
  izwi::StreamChunk c;
  c.finish_reason = izwi::FinishReason::abort;
  t.on_chunk(jobs[0].id, c);
  CHECK(t.done());
  CHECK(t.failed());
  CHECK(t.failure_reason() == izwi::FinishReason::abort);
  CHECK(t.take_jobs().empty());
}

TEST_CASE("Transcriber: silence and audio shorter than a mel frame give empty text", "[asr]") {
  asr::TranscriptionOptions options;
  options.language = "en";
  asr::Transcriber none(fake_tokenizer(), silence(0.005), options);
  CHECK(none.done());
  CHECK(none.result().text.empty());
  asr::Transcriber no_regions(fake_tokenizer(), silence(5), options, {{0, 0}});
  CHECK(no_regions.done());
}

TEST_CASE("plan_vad_regions: chunks of at most 30 s, only those holding speech", "[asr]") {
  // 0-20 s silence, 20-40 s a tone, 40-75 s silence (energy VAD: no model).
  std::vector<float> samples(16000 * 75, 0.0f);
  for (std::size_t i = 16000 * 20; i < 16000 * 40; ++i)
    samples[i] = 0.3f * static_cast<float>(std::sin(2 * std::numbers::pi * 220.0 * static_cast<double>(i) / 16000));
  const auto regions = asr::plan_vad_regions(samples, {}, {});
  REQUIRE(!regions.empty());
  std::size_t covered = 0;
  for (const auto& r : regions) {
    CHECK(r.length() <= 16000 * 30);
    CHECK((r.start < 16000 * 40 && r.end > 16000 * 20));
    covered += std::min<std::size_t>(r.end, 16000 * 40) - std::max<std::size_t>(r.start, 16000 * 20);
  }
  CHECK(covered == 16000 * 20);  // every second of the tone is in a region
  CHECK(asr::plan_vad_regions(std::vector<float>(16000 * 5, 0.0f), {}, {}).empty());
  asr::VadChunkingOptions bad;
  bad.threshold = 2.0f;
  CHECK_THROWS(asr::plan_vad_regions(samples, {}, bad));
}

namespace {

constexpr std::size_t vad_rate = 16000, vad_window = 512;

/// Silero-like probabilities: 0.95 inside the given speech intervals (seconds), 0.02 elsewhere.
std::vector<float> speech_probabilities(double seconds, const std::vector<std::pair<double, double>>& speech) {
  std::vector<float> p((static_cast<std::size_t>(seconds * vad_rate) + vad_window - 1) / vad_window, 0.02f);
  for (const auto& [from, to] : speech)
    for (std::size_t i = static_cast<std::size_t>(from * vad_rate) / vad_window;
         i < std::min(p.size(), static_cast<std::size_t>(to * vad_rate) / vad_window); ++i)
      p[i] = 0.95f;
  return p;
}

/// What every plan must be: regions in order, disjoint, non-empty, at most
/// `max_s` each, and no two neighbours fitting in one window together (else
/// one encoder pass would have done for both).
void check_region_plan(const std::vector<izwi::audio::AudioChunk>& regions, std::size_t total, double max_s = 30) {
  const auto max_len = static_cast<std::size_t>(max_s * vad_rate);
  for (std::size_t i = 0; i < regions.size(); ++i) {
    INFO("region " << i << ": " << regions[i].start << "-" << regions[i].end);
    CHECK(regions[i].start < regions[i].end);
    CHECK(regions[i].end <= total);
    CHECK(regions[i].length() <= max_len);
    if (i > 0) {
      CHECK(regions[i].start >= regions[i - 1].end);
      CHECK(regions[i].end - regions[i - 1].start > max_len);
    }
  }
}

/// Every speech window (probability >= 0.5) lies inside some region.
bool speech_covered(const std::vector<izwi::audio::AudioChunk>& regions, std::span<const float> p) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] < 0.5f) continue;
    const std::size_t a = i * vad_window, b = a + vad_window;
    if (!std::any_of(regions.begin(), regions.end(), [&](const auto& r) { return r.start <= a && r.end >= b; }))
      return false;
  }
  return true;
}

}  // namespace

TEST_CASE("plan_vad_regions: speech islands are merged into the fewest regions of at most 30 s", "[asr]") {
  // 300 s: 4-s islands every 12 s (8 s pauses, longer than server_vad's 500 ms).
  const double seconds = 300;
  std::vector<std::pair<double, double>> islands;
  for (double t = 1; t + 4 <= seconds; t += 12) islands.push_back({t, t + 4});
  const std::vector<float> samples(static_cast<std::size_t>(seconds * vad_rate), 0.0f);
  const std::vector<float> p = speech_probabilities(seconds, islands);
  const auto regions = asr::plan_vad_regions(samples, p, {});
  check_region_plan(regions, samples.size());
  CHECK(speech_covered(regions, p));
  // Each region starts and ends at speech (plus server_vad's 300-ms padding
  // and a window of rounding): the pauses around regions are not decoded.
  const auto near_island_edge = [&](std::size_t sample, bool start) {
    const double t = static_cast<double>(sample) / vad_rate;
    return std::any_of(islands.begin(), islands.end(),
                       [&](const auto& i) { return std::abs((start ? i.first : i.second) - t) <= 0.3 + 0.064; });
  };
  for (const auto& r : regions) {
    CHECK(near_island_edge(r.start, true));
    CHECK(near_island_edge(r.end, false));
  }
  // Fewer encoder windows than tiling the audio with 30-s chunks, all of
  // which hold speech here (the plan before: 10).
  izwi::audio::SplitOptions split;
  const std::size_t tiles = izwi::audio::split_at_quiet_points(samples, p, vad_window, split).size();
  CHECK(regions.size() < tiles);
}

TEST_CASE("plan_vad_regions: continuous speech is cut at its pauses into ceil(speech / 30 s) + 1 regions at most", "[asr]") {
  // 95 s of speech from 2 s to 97 s with 200-ms pauses (too short to end
  // speech) every 7 s: one speech segment, longer than a window.
  const double seconds = 100;
  std::vector<std::pair<double, double>> speech;
  for (double t = 2; t < 97; t += 7) speech.push_back({t, std::min(97.0, t + 6.8)});
  const std::vector<float> samples(static_cast<std::size_t>(seconds * vad_rate), 0.0f);
  const std::vector<float> p = speech_probabilities(seconds, speech);
  const auto regions = asr::plan_vad_regions(samples, p, {});
  check_region_plan(regions, samples.size());
  CHECK(speech_covered(regions, p));
  CHECK(regions.size() >= 4);                             // 95 s do not fit in three windows
  CHECK(regions.size() <= static_cast<std::size_t>(std::ceil(95.0 / 30)) + 1);
  // The cuts inside the speech fall in its pauses.
  for (std::size_t i = 1; i < regions.size(); ++i) {
    if (regions[i].start != regions[i - 1].end) continue;  // a pause between segments, not a cut
    CHECK(p[regions[i].start / vad_window] < 0.5f);
  }
}

TEST_CASE("plan_vad_regions: dense speech is cut in the latest pause, so windows fill up", "[asr]") {
  // 140 s of speech with deep pauses (p 0.02) every 25.5 s and shallow ones
  // (p 0.2: below server_vad's 0.35 end-of-speech level, still pauses)
  // every second. The splitter alone takes the deepest in its 25-30 s
  // range: six windows; the latest pause fills each to about 29 s: five.
  const double seconds = 140;
  const std::vector<float> samples(static_cast<std::size_t>(seconds * vad_rate), 0.0f);
  std::vector<float> p = speech_probabilities(seconds, {{0, seconds}});
  const auto set = [&](double from, double to, float value) {
    for (auto i = static_cast<std::size_t>(from * vad_rate / vad_window); i < static_cast<std::size_t>(to * vad_rate / vad_window); ++i)
      p[i] = value;
  };
  for (double t = 1; t < seconds; t += 1) set(t - 0.1, t + 0.1, 0.2f);
  for (double t = 25.5; t < seconds; t += 25.5) set(t - 0.1, t + 0.1, 0.02f);
  const auto regions = asr::plan_vad_regions(samples, p, {});
  check_region_plan(regions, samples.size());
  CHECK(speech_covered(regions, p));
  CHECK(regions.size() <= static_cast<std::size_t>(std::ceil(seconds / 30)) + 1);
  for (std::size_t i = 0; i + 1 < regions.size(); ++i) {
    INFO("region " << i);
    CHECK(regions[i].length() >= static_cast<std::size_t>(28.5 * vad_rate));  // not a deep pause at 25.5 s
    CHECK(p[regions[i].end / vad_window] < 0.35f);                          // but a pause
  }
  izwi::audio::SplitOptions split;
  CHECK(regions.size() < izwi::audio::split_at_quiet_points(samples, p, vad_window, split).size());
}

TEST_CASE("plan_vad_regions: audio of one window with speech is one region of all of it", "[asr]") {
  const std::vector<float> samples(20 * vad_rate, 0.0f);
  const auto regions = asr::plan_vad_regions(samples, speech_probabilities(20, {{5, 10}}), {});
  REQUIRE(regions.size() == 1);
  CHECK(regions[0] == izwi::audio::AudioChunk{0, samples.size()});  // the sequential path's window
  CHECK(asr::plan_vad_regions(samples, speech_probabilities(20, {}), {}).empty());
}

TEST_CASE("Transcriber: segments of planned VAD regions map back to the original timeline", "[asr]") {
  // Islands of speech with long pauses: regions that start well after 0 and
  // after one another; each decode answers two segments, 0-1 s and 1-3 s into its window.
  const double seconds = 150;
  const std::vector<std::pair<double, double>> islands{{3, 8}, {20, 26}, {61, 70}, {75, 80}, {121, 140}};
  const std::vector<float> p = speech_probabilities(seconds, islands);
  auto samples = silence(seconds);
  const auto regions = asr::plan_vad_regions(*samples, p, {});
  check_region_plan(regions, samples->size());
  REQUIRE(regions.size() >= 3);
  FakeEngine fake;
  fake.reverse = true;
  fake.decode = [](const asr::WindowJob&) -> Decoded {
    return {{ts(0), word(" hello"), ts(1), ts(1), word(" world"), ts(3)}};
  };
  asr::TranscriptionOptions options;
  options.language = "en";
  asr::Transcriber t(fake_tokenizer(), samples, options, regions);
  fake.run(t);
  const asr::Transcription r = t.result();
  REQUIRE(r.segments.size() == 2 * regions.size());
  for (std::size_t i = 0; i < regions.size(); ++i) {
    const double offset = static_cast<double>(regions[i].start) / vad_rate;
    INFO("region " << i << " at " << offset << " s");
    const asr::Segment& hello = r.segments[2 * i];
    const asr::Segment& world = r.segments[2 * i + 1];
    CHECK(hello.text == " hello");
    CHECK_THAT(hello.start, WithinAbs(offset, 1e-6));
    CHECK_THAT(hello.end, WithinAbs(offset + 1, 1e-6));
    CHECK_THAT(world.start, WithinAbs(offset + 1, 1e-6));
    CHECK_THAT(world.end, WithinAbs(offset + 3, 1e-6));
    CHECK(hello.seek == regions[i].start / asr::samples_per_frame);
  }
  for (std::size_t i = 1; i < r.segments.size(); ++i)
    CHECK(r.segments[i].start >= r.segments[i - 1].end);  // monotonic, in audio order
}

namespace {

/// Audio and Silero-like probabilities with random structure: speech runs
/// of random length and loudness with shallow (p 0.2) and deep (p 0.02)
/// pauses inside, silences of random length between, noise at random levels
/// (the planner's quiet cuts look at the energy too).
std::pair<std::vector<float>, std::vector<float>> random_speech(std::mt19937& rng, double seconds) {
  const std::size_t n = static_cast<std::size_t>(seconds * vad_rate);
  std::vector<float> samples(n);
  std::vector<float> p((n + vad_window - 1) / vad_window);
  std::uniform_real_distribution<double> u(0, 1);
  std::uint32_t noise = rng();  // xorshift for the samples: millions of them, cheap under ASan
  const auto next_noise = [&noise] {
    noise ^= noise << 13, noise ^= noise >> 17, noise ^= noise << 5;
    return static_cast<float>(noise) * 4.656613e-10f - 1.0f;  // [-1, 1)
  };
  std::size_t w = 0;
  while (w < p.size()) {
    const bool speech = u(rng) < 0.6;
    const auto run = static_cast<std::size_t>((speech ? 0.3 + 40 * u(rng) * u(rng) : 0.1 + 12 * u(rng)) * vad_rate / vad_window);
    const float level = speech ? static_cast<float>(0.05 + 0.4 * u(rng)) : static_cast<float>(0.002 * u(rng));
    for (std::size_t end = std::min(p.size(), w + run + 1); w < end; ++w) {
      float q = speech ? static_cast<float>(0.6 + 0.4 * u(rng)) : static_cast<float>(0.3 * u(rng));
      if (speech && u(rng) < 0.04) q = u(rng) < 0.5 ? 0.2f : 0.02f;  // a pause inside speech
      p[w] = q;
      for (std::size_t i = w * vad_window; i < std::min(n, (w + 1) * vad_window); ++i)
        samples[i] = level * next_noise() * (q < 0.5f ? 0.05f : 1.0f);
    }
  }
  return {std::move(samples), std::move(p)};
}

}  // namespace

TEST_CASE("VadRegionPlanner: fed in pieces, it hands out plan_vad_regions' plan, each region soon after it is final", "[asr]") {
  std::mt19937 rng(20261129);
  std::size_t early = 0, total_regions = 0;
  for (int trial = 0; trial < 32; ++trial) {
    const double seconds = std::uniform_real_distribution<double>(5, 300)(rng);
    auto [samples, p] = random_speech(rng, seconds);
    asr::VadChunkingOptions options;
    if (trial % 4 == 1) options.prefix_padding_ms = 0, options.silence_duration_ms = 100;
    if (trial % 4 == 2) options.prefix_padding_ms = 1000, options.silence_duration_ms = 2000, options.threshold = 0.7f;
    if (trial % 4 == 3) options.prefix_padding_ms = 800, options.silence_duration_ms = 200;  // padding overlaps
    INFO("trial " << trial << ": " << seconds << " s");
    const auto whole = asr::plan_vad_regions(samples, p, options);

    asr::VadRegionPlanner planner(samples, options);
    REQUIRE(planner.windows() == p.size());
    std::vector<izwi::audio::AudioChunk> handed;
    std::size_t fed = 0;
    while (fed < p.size()) {
      // Small pieces (as the server's VAD pass hands them over) look at
      // nearly every frontier; large ones skip past several regions.
      const std::size_t piece = std::min<std::size_t>(p.size() - fed, 1 + rng() % (trial % 2 == 0 ? 24 : 1500));
      planner.add_probabilities(std::span<const float>(p).subspan(fed, piece));
      fed += piece;
      for (const auto& r : planner.take_final()) {
        // Handed out once final: no sooner than its start + 30 s + the
        // guard, and no later than one piece after that.
        const double guard_s = (options.silence_duration_ms + 2 * options.prefix_padding_ms + 1000) / 1000 + 0.064;
        const double seen_s = static_cast<double>(fed * vad_window) / vad_rate;
        const double start_s = static_cast<double>(r.start) / vad_rate;
        CHECK(seen_s >= start_s + 30 + guard_s - 0.001);
        CHECK(seen_s <= start_s + 30 + guard_s + static_cast<double>(piece * vad_window) / vad_rate + 0.001);
        handed.push_back(r);
        ++early;
      }
    }
    for (const auto& r : planner.finish()) handed.push_back(r);
    CHECK(handed == whole);
    total_regions += whole.size();
    CHECK(planner.take_final().empty());
  }
  // Most regions of these files (5-300 s) are handed out before the VAD ends.
  CHECK(early * 2 > total_regions);
}

TEST_CASE("VadRegionPlanner: errors name the problem", "[asr]") {
  const std::vector<float> samples(16000 * 40, 0.0f);
  asr::VadChunkingOptions bad;
  bad.silence_duration_ms = -1;
  CHECK_THROWS_WITH(asr::VadRegionPlanner(samples, bad), Catch::Contains("silence_duration_ms"));
  asr::VadRegionPlanner planner(samples);
  const std::vector<float> p(planner.windows() - 1, 0.9f);
  planner.add_probabilities(p);
  CHECK_THROWS_WITH(planner.finish(), Catch::Contains("1250 windows, got 1249"));
  CHECK_THROWS_WITH(planner.add_probabilities(std::vector<float>(2, 0.9f)), Catch::Contains("more probabilities"));
  planner.add_probabilities(std::vector<float>(1, 0.9f));
  CHECK(planner.finish() == asr::plan_vad_regions(samples, std::vector<float>(planner.windows(), 0.9f)));
  CHECK_THROWS_WITH(planner.add_probabilities(std::vector<float>(1, 0.9f)), Catch::Contains("finished"));
}

TEST_CASE("Transcriber: regions added as they are planned give the transcription of all of them at once", "[asr]") {
  const double seconds = 150;
  const std::vector<std::pair<double, double>> islands{{3, 8}, {20, 26}, {61, 70}, {75, 80}, {121, 140}};
  const std::vector<float> p = speech_probabilities(seconds, islands);
  auto samples = silence(seconds);
  const auto regions = asr::plan_vad_regions(*samples, p, {});
  REQUIRE(regions.size() >= 3);
  FakeEngine fake;
  fake.decode = [](const asr::WindowJob& job) -> Decoded {
    return {{ts(0), word(" w" + std::to_string(job.begin / 16000)), ts(1), ts(1), word(" x"), ts(3)}};
  };
  asr::TranscriptionOptions options;  // language detected from the first region's probe
  asr::Transcriber all(fake_tokenizer(), samples, options, regions);
  fake.run(all);
  const std::vector<std::string> all_deltas = fake.deltas;

  asr::Transcriber t(fake_tokenizer(), samples, options, asr::Transcriber::regions_to_come);
  CHECK(!t.done());
  CHECK(t.take_jobs().empty());
  std::vector<std::string> deltas;
  std::size_t next = 0;
  for (int round = 0; round < 1000 && !t.done(); ++round) {
    // A region arrives every other round, while the earlier ones decode.
    if (round % 2 == 0 && next < regions.size()) t.add_regions(std::span(regions).subspan(next++, 1));
    if (next == regions.size()) t.close_regions();
    for (const auto& job : t.take_jobs()) fake.answer(t, job);
    while (auto d = t.take_delta()) deltas.push_back(d->text);
  }
  REQUIRE(t.done());
  REQUIRE(!t.failed());
  const asr::Transcription a = all.result(), b = t.result();
  CHECK(b.text == a.text);
  CHECK(b.language == a.language);
  REQUIRE(b.segments.size() == a.segments.size());
  for (std::size_t i = 0; i < a.segments.size(); ++i) {
    CHECK(b.segments[i].start == a.segments[i].start);
    CHECK(b.segments[i].text == a.segments[i].text);
  }
  CHECK(joined(deltas) == joined(all_deltas));
  CHECK(joined(deltas) == b.text);

  // No region at all: empty text once closed. Regions out of order, or after closing, are refused.
  asr::Transcriber none(fake_tokenizer(), samples, options, asr::Transcriber::regions_to_come);
  CHECK_THROWS_WITH(none.add_regions(std::vector<izwi::audio::AudioChunk>{{16000, 32000}, {0, 8000}}),
                    Catch::Contains("in order"));
  CHECK(none.take_jobs().empty());  // nothing of a refused batch was added
  none.close_regions();
  CHECK(none.done());
  CHECK(none.result().text.empty());
  CHECK_THROWS_WITH(none.add_regions(regions), Catch::Contains("after close_regions"));
}

// --- the protocol --------------------------------------------------------------------

namespace {

izwi::server::multipart::FormData form_of(std::string& body, const std::vector<izwi_multipart_test::Field>& fields) {
  body = izwi_multipart_test::encode("B0undary", fields);
  return izwi::server::multipart::parse(body, "B0undary");
}

asr::Transcription sample_result() {
  asr::Transcription r;
  r.language = "en";
  r.duration = 3661.4;
  r.text = "Hello --> world. Again";
  asr::Segment a;
  a.id = 0;
  a.start = 0;
  a.end = 2.5;
  a.text = " Hello --> world.";
  a.tokens = {1, 2, 3};
  a.avg_logprob = -0.25;
  a.compression_ratio = 1.1;
  a.no_speech_prob = 0.01;
  asr::Segment empty;
  empty.id = 1;
  empty.start = empty.end = 2.5;
  asr::Segment b;
  b.id = 2;
  b.seek = 3000;
  b.start = 3600.0;
  b.end = 3661.2346;
  b.text = " Again";
  b.temperature = 0.2f;
  r.segments = {a, empty, b};
  return r;
}

}  // namespace

TEST_CASE("transcription form: fields, defaults and errors that name the field", "[server][asr]") {
  std::string body;
  auto form = form_of(body, {{"file", "a.wav", "audio/wav", "RIFF...."},
                             {"model", {}, {}, "whisper-1"},
                             {"language", {}, {}, "German"},
                             {"response_format", {}, {}, "verbose_json"},
                             {"temperature", {}, {}, "0.3"},
                             {"timestamp_granularities[]", {}, {}, "segment"},
                             {"include[]", {}, {}, "logprobs"},
                             {"stream", {}, {}, "true"},
                             {"chunking_strategy[type]", {}, {}, "server_vad"},
                             {"chunking_strategy[threshold]", {}, {}, "0.4"}});
  const auto r = openai::parse_transcription_request(form, false);
  CHECK(r.file == "RIFF....");
  CHECK(r.filename == std::optional<std::string>("a.wav"));
  CHECK(r.model == "whisper-1");
  CHECK(r.language == std::optional<std::string>("de"));
  CHECK(r.response_format == openai::TranscriptionFormat::verbose_json);
  CHECK(r.temperature == 0.3f);
  CHECK(r.logprobs);
  CHECK(r.stream);
  REQUIRE(r.vad);
  CHECK(r.vad->threshold == 0.4f);

  auto error_of = [&](const std::vector<izwi_multipart_test::Field>& fields, bool translation = false) {
    std::string b;
    auto f = form_of(b, fields);
    try {
      openai::parse_transcription_request(f, translation);
    } catch (const izwi::server::ApiError& e) {
      CHECK(e.status == 400);
      return std::string(e.param.value_or("")) + ": " + e.what();
    }
    return std::string("no error");
  };
  const izwi_multipart_test::Field file{"file", "a.wav", {}, "x"};
  CHECK_THAT(error_of({{"model", {}, {}, "m"}}), ContainsSubstring("file: "));
  CHECK_THAT(error_of({file, {"language", {}, {}, "klingon"}}),
             ContainsSubstring("language: Unknown language 'klingon'") && ContainsSubstring("en, zh, de"));
  CHECK_THAT(error_of({file, {"timestamp_granularities[]", {}, {}, "word"}}),
             ContainsSubstring("timestamp_granularities: ") && ContainsSubstring("verbose_json"));
  CHECK_THAT(error_of({file, {"response_format", {}, {}, "verbose_json"}, {"timestamp_granularities[]", {}, {}, "char"}}),
             ContainsSubstring("timestamp_granularities: "));
  CHECK_THAT(error_of({file, {"response_format", {}, {}, "docx"}}), ContainsSubstring("response_format: "));
  CHECK_THAT(error_of({file, {"temperature", {}, {}, "1.5"}}), ContainsSubstring("temperature: "));
  CHECK_THAT(error_of({file, {"temperature", {}, {}, "hot"}}), ContainsSubstring("must be a number"));
  CHECK_THAT(error_of({file, {"chunking_strategy", {}, {}, "{\"type\": \"fixed\"}"}}),
             ContainsSubstring("chunking_strategy.type"));
  CHECK_THAT(error_of({file, {"include[]", {}, {}, "words"}}), ContainsSubstring("include: "));
  // A single-valued field sent twice is refused, naming it (list fields take repeats, above).
  CHECK_THAT(error_of({file, file}), ContainsSubstring("file: 'file' is given 2 times"));
  CHECK_THAT(error_of({file, {"model", {}, {}, "a"}, {"model", {}, {}, "b"}}), ContainsSubstring("model: "));
  CHECK_THAT(error_of({file, {"temperature", {}, {}, "0"}, {"temperature", {}, {}, "0.2"}}),
             ContainsSubstring("temperature: ") && ContainsSubstring("2 times"));
  CHECK_THAT(error_of({file, {"beam_size", {}, {}, "2"}, {"beam_size", {}, {}, "2"}}), ContainsSubstring("beam_size: "));
  CHECK_THAT(error_of({file, {"chunking_strategy[type]", {}, {}, "server_vad"}, {"chunking_strategy[threshold]", {}, {}, "0.4"},
                       {"chunking_strategy[threshold]", {}, {}, "0.6"}}),
             ContainsSubstring("chunking_strategy.threshold: 'chunking_strategy[threshold]' is given more than once"));
  CHECK_THAT(error_of({file, {"beam_size", {}, {}, "0"}}), ContainsSubstring("beam_size: ") && ContainsSubstring("[1, 19]"));
  CHECK_THAT(error_of({file, {"beam_size", {}, {}, "2.5"}}), ContainsSubstring("beam_size: "));
  CHECK_THAT(error_of({file, {"beam_size", {}, {}, "20"}}), ContainsSubstring("beam_size: "));
  CHECK_THAT(error_of({file, {"best_of", {}, {}, "17"}}), ContainsSubstring("best_of: "));
  CHECK_THAT(error_of({file, {"best_of", {}, {}, "many"}}), ContainsSubstring("best_of: "));
  CHECK_THAT(error_of({file, {"temperature", {}, {}, "nan"}}), ContainsSubstring("temperature: "));
  CHECK_THAT(error_of({file, {"temperature_inc", {}, {}, "-0.1"}}), ContainsSubstring("temperature_inc: ") &&
                                                                      ContainsSubstring("[0, 1]"));
  CHECK_THAT(error_of({file, {"temperature_inc", {}, {}, "1.01"}}), ContainsSubstring("temperature_inc: "));
  CHECK(r.beam_size == 1);  // absent: greedy, one sample
  CHECK(r.best_of == 1);
  CHECK(r.temperature_increment == 0.2f);  // absent: openai-whisper's fallback step
  CHECK(r.timestamps);  // absent: decoded with timestamps, as openai-whisper
  CHECK_THAT(error_of({file, {"no_timestamps", {}, {}, "maybe"}}), ContainsSubstring("no_timestamps: "));
  {
    std::string b;
    auto f = form_of(b, {file, {"no_timestamps", {}, {}, "true"}});
    for (const bool translation : {false, true}) CHECK_FALSE(openai::parse_transcription_request(f, translation).timestamps);
  }
  {
    std::string b;
    auto f = form_of(b, {file, {"temperature_inc", {}, {}, "0"}});
    for (const bool translation : {false, true})  // 0: one decode per window, on both endpoints
      CHECK(openai::parse_transcription_request(f, translation).temperature_increment == 0.0f);
  }
  {
    std::string b;
    auto f = form_of(b, {file, {"beam_size", {}, {}, "5"}, {"best_of", {}, {}, "3"}});
    for (const bool translation : {false, true}) {  // both endpoints take them
      const auto parsed = openai::parse_transcription_request(f, translation);
      CHECK(parsed.beam_size == 5);
      CHECK(parsed.best_of == 3);
    }
  }

  std::string b2;
  auto f2 = form_of(b2, {file, {"chunking_strategy", {}, {}, "auto"}, {"language", {}, {}, "en"}});
  CHECK(openai::parse_transcription_request(f2, false).vad.has_value());
  CHECK(!openai::parse_transcription_request(f2, true).language.has_value());  // translations ignore it
}

TEST_CASE("transcription formats: srt, vtt, verbose_json, json and text", "[server][asr]") {
  CHECK(openai::format_timestamp(3661.25, ',') == "01:01:01,250");
  CHECK(openai::format_timestamp(0.0014, '.') == "00:00:00.001");
  CHECK(openai::format_timestamp(59.9996, '.') == "00:01:00.000");
  CHECK(openai::format_timestamp(-1, ',') == "00:00:00,000");

  const asr::Transcription r = sample_result();
  CHECK(openai::srt_text(r) ==
        "1\n00:00:00,000 --> 00:00:02,500\nHello -> world.\n\n"
        "2\n01:00:00,000 --> 01:01:01,235\nAgain\n\n");
  CHECK(openai::vtt_text(r) ==
        "WEBVTT\n\n00:00:00.000 --> 00:00:02.500\nHello -> world.\n\n"
        "01:00:00.000 --> 01:01:01.235\nAgain\n\n");
  CHECK(openai::transcription_body(r, openai::TranscriptionFormat::text, false) == "Hello --> world. Again\n");

  const auto verbose = boost::json::parse(openai::transcription_body(r, openai::TranscriptionFormat::verbose_json, true));
  const auto& v = verbose.as_object();
  CHECK(v.at("task") == "translate");
  CHECK(v.at("language") == "english");
  CHECK(v.at("duration").as_double() == 3661.4);
  CHECK(v.at("usage").at("type") == "duration");
  CHECK(v.at("usage").at("seconds").as_int64() == 3662);
  const auto& segments = v.at("segments").as_array();
  REQUIRE(segments.size() == 3);
  for (const char* key : {"id", "seek", "start", "end", "text", "tokens", "temperature", "avg_logprob",
                          "compression_ratio", "no_speech_prob"})
    CHECK(segments[0].as_object().contains(key));
  CHECK(segments[0].at("tokens").as_array().size() == 3);
  CHECK(segments[2].at("seek").as_int64() == 3000);
  CHECK_THAT(segments[2].at("temperature").as_double(), WithinAbs(0.2, 1e-6));

  const boost::json::array lps = openai::transcription_logprobs_json(std::vector<openai::TokenLogprob>{{" Hi", -0.5f}});
  const auto json = boost::json::parse(openai::transcription_body(r, openai::TranscriptionFormat::json, false, &lps));
  CHECK(json.at("text") == "Hello --> world. Again");
  CHECK(json.at("logprobs").as_array()[0].at("bytes").as_array().size() == 3);
  CHECK(json.at("logprobs").as_array()[0].at("logprob").as_double() == -0.5);

  const auto delta = openai::transcript_delta_event("Hi");
  CHECK(delta.at("type") == "transcript.text.delta");
  CHECK(delta.at("delta") == "Hi");
  CHECK(!delta.contains("logprobs"));
  const auto done = openai::transcript_done_event("Hi there", 10.2, &lps);
  CHECK(done.at("type") == "transcript.text.done");
  CHECK(done.at("text") == "Hi there");
  CHECK(done.at("usage").at("seconds").as_int64() == 11);
  CHECK(done.at("logprobs").as_array().size() == 1);
  CHECK(openai::language_name("yue") == "cantonese");
}

namespace {

// A decoder where greedy decoding is myopic: " hello" is the likelier first
// token, but every continuation of it is unlikely; " la two" is the likelier
// whole. Sums: " hello world" -0.4 - 2.0 - 0.01 = -2.41 (score -1.205),
// " la two" -1.1 - 0.05 - 0.01 = -1.16 (score -0.58).
std::vector<izwi::TokenLogprob> myopic_next(const std::vector<TokenId>& prefix) {
  const TokenId eot = special().eot;
  auto fill = [](std::vector<izwi::TokenLogprob> top) {
    for (const char* w : {" one", " two", " three", " again", " silence", " world"}) {
      if (top.size() >= 8) break;
      if (std::none_of(top.begin(), top.end(), [&](const auto& t) { return t.token == word(w); }))
        top.push_back({word(w), -7.0f - static_cast<float>(top.size())});
    }
    return top;
  };
  if (prefix.empty()) return fill({{word(" hello"), -0.4f}, {word(" la"), -1.1f}});
  if (prefix == std::vector<TokenId>{word(" hello")})
    return fill({{word(" world"), -2.0f}, {word(" again"), -2.1f}, {eot, -2.2f}});
  if (prefix == std::vector<TokenId>{word(" la")}) return fill({{word(" two"), -0.05f}, {eot, -3.5f}});
  return fill({{eot, -0.01f}});
}

asr::Transcription transcribe_with(FakeEngine& fake, const asr::TranscriptionOptions& options, double seconds = 3) {
  asr::Transcriber t(fake_tokenizer(), silence(seconds), options);
  fake.run(t);
  return t.result();
}

}  // namespace

TEST_CASE("Transcriber: beam_size 1 decodes greedily, beam_size 5 finds the likelier text", "[asr][beam]") {
  FakeEngine fake;
  fake.next = myopic_next;
  fake.decode = [](const asr::WindowJob& job) {
    CHECK(job.continuation.empty());
    CHECK(job.top_logprobs == 0);
    return greedy_of(myopic_next);
  };
  asr::TranscriptionOptions options;
  options.language = "en";
  options.beam_size = 1;
  const asr::Transcription greedy = transcribe_with(fake, options);
  CHECK(greedy.text == "hello world");
  CHECK(fake.decodes().size() == 1);
  CHECK_THAT(greedy.segments.at(0).avg_logprob, WithinAbs(-2.41 / 3, 1e-6));

  options.beam_size = 5;
  for (const bool reverse : {false, true}) {  // rounds finished in any order give the same search
    FakeEngine beams;
    beams.next = myopic_next;
    beams.reverse = reverse;
    beams.decode = [](const asr::WindowJob&) -> Decoded {
      FAIL("a temperature-0 decode with beam_size 5 must be a beam search");
      return {};
    };
    const asr::Transcription r = transcribe_with(beams, options);
    CHECK(r.text == "la two");
    CHECK(r.windows_decoded == 1);
    REQUIRE(r.segments.size() == 1);
    CHECK(r.segments[0].temperature == 0.0f);
    CHECK_THAT(r.segments[0].avg_logprob, WithinAbs(-1.16 / 3, 1e-6));
    REQUIRE(r.segments[0].text_logprobs.size() == 2);
    CHECK_THAT(r.segments[0].text_logprobs[1].logprob, WithinAbs(-0.05, 1e-6));
    const auto jobs = beams.decodes();
    // Round 1: one beam; round 2: five (" hello", " la" and three fillers); then the finished count stops it.
    REQUIRE(jobs.size() >= 6);
    CHECK(jobs[0].continuation.empty());
    std::size_t second_round = 0;
    for (const auto& j : jobs) {
      CHECK(j.top_logprobs == 6);
      CHECK(j.max_tokens == 1);
      CHECK(j.continuation.size() <= 3);
      if (j.continuation.size() == 1) ++second_round;
    }
    CHECK(second_round == 5);
  }
}

TEST_CASE("Transcriber: beams over long audio carry timestamps, seek by the chosen beam and prompt the next window with it",
          "[asr][beam]") {
  // Two paths, both ending on a timestamp pair at 5 s, no fillers (so both
  // finish): greedy takes " hello" (-0.4) and then " world" (-2.0), sum
  // -2.44 over 5 tokens; the beam finds " la two" (-1.1, -0.05), sum -1.19.
  const TokenId eot = special().eot;
  const NextTokens next = [eot](const std::vector<TokenId>& prefix) -> std::vector<izwi::TokenLogprob> {
    const std::size_t n = prefix.size();
    if (n == 0) return {{ts(0), -0.01f}};
    if (n == 1) return {{word(" hello"), -0.4f}, {word(" la"), -1.1f}};
    if (n == 2) return {{prefix[1] == word(" hello") ? word(" world") : word(" two"), prefix[1] == word(" hello") ? -2.0f : -0.05f}};
    if (n < 5) return {{ts(5), -0.01f}};
    return {{eot, -0.01f}};
  };
  // 8 s: the window at 0 s seeks to the pair at 5 s; the window at 5 s ends the audio.
  asr::TranscriptionOptions options;
  options.language = "en";
  FakeEngine greedy;
  greedy.decode = [&](const asr::WindowJob&) { return greedy_of(next); };
  const asr::Transcription g = transcribe_with(greedy, options, 8);
  CHECK(g.text == "hello world hello world");

  options.beam_size = 3;
  FakeEngine beams;
  beams.next = next;
  beams.decode = [](const asr::WindowJob&) -> Decoded {
    FAIL("a temperature-0 decode with beam_size 3 must be a beam search");
    return {};
  };
  const asr::Transcription r = transcribe_with(beams, options, 8);
  CHECK(r.text == "la two la two");
  REQUIRE(r.segments.size() == 2);
  REQUIRE(g.segments.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {  // the beam's segments where greedy's are
    INFO("segment " << i);
    CHECK(r.segments[i].tokens == std::vector<TokenId>{ts(0), word(" la"), word(" two"), ts(5)});
    CHECK(r.segments[i].start == g.segments[i].start);
    CHECK(r.segments[i].end == g.segments[i].end);
    CHECK(r.segments[i].seek == g.segments[i].seek);
    CHECK_THAT(r.segments[i].avg_logprob, WithinAbs(-1.19 / 6, 1e-6));  // the fallback's: over 5 tokens + 1
  }
  CHECK_THAT(r.segments[0].start, WithinAbs(0, 1e-9));
  CHECK_THAT(r.segments[0].end, WithinAbs(5, 1e-9));
  CHECK_THAT(r.segments[1].start, WithinAbs(5, 1e-9));
  CHECK_THAT(r.segments[1].end, WithinAbs(8, 1e-9));  // 10 s clamped to the audio's end
  CHECK(r.windows_decoded == 2);
  CHECK(joined(beams.deltas) == r.text);
  // Every round of the second window continues after the first window's beam.
  std::size_t second_window = 0;
  for (const auto& j : beams.decodes()) {
    CHECK(j.timestamps);
    CHECK(j.top_logprobs == 4);
    if (j.begin == 5 * 16000) {
      ++second_window;
      CHECK(j.previous_tokens == std::vector<TokenId>{ts(0), word(" la"), word(" two"), ts(5)});
    } else {
      CHECK(j.previous_tokens.empty());
    }
  }
  CHECK(second_window == 10);  // rounds of 1, 1, 2, 2, 2 and 2 beams (two paths, both ending)
}

TEST_CASE("Transcriber: a beam result that fails the thresholds falls back to sampling, and best_of keeps the likeliest sample",
          "[asr][beam]") {
  // Every beam is unlikely (avg log-probability below -1): 0.2 is tried, as sampling.
  FakeEngine fake;
  fake.next = [](const std::vector<TokenId>& prefix) -> std::vector<izwi::TokenLogprob> {
    if (prefix.size() < 2) return {{word(" one"), -1.5f}, {word(" two"), -1.6f}, {special().eot, -4.0f}};
    return {{special().eot, -1.5f}, {word(" three"), -2.0f}};
  };
  // Sample i (seed i) says " one" ×(i+1) with log-probability -0.5 × (3 - i):
  // the third is the likeliest by sum / length.
  fake.decode = [](const asr::WindowJob& job) {
    REQUIRE(job.seed.has_value());
    Decoded d;
    d.tokens.assign(*job.seed + 1, word(" one"));
    d.logprob = -0.5f * static_cast<float>(3 - *job.seed);
    return d;
  };
  asr::TranscriptionOptions options;
  options.language = "en";
  options.beam_size = 3;
  options.best_of = 3;
  options.seed = 0;
  const asr::Transcription r = transcribe_with(fake, options);
  std::size_t beam_jobs = 0;
  std::vector<std::uint64_t> seeds;
  for (const auto& j : fake.decodes()) {
    if (j.top_logprobs > 0) {
      ++beam_jobs;
      CHECK(j.temperature == 0.0f);
    } else {
      CHECK(j.temperature == 0.2f);
      seeds.push_back(*j.seed);
    }
  }
  CHECK(beam_jobs > 0);
  CHECK(seeds == std::vector<std::uint64_t>{0, 1, 2});  // three distinct samples, all at once
  CHECK(r.windows_decoded == 2);                        // the beam search, then the best_of group
  REQUIRE(r.segments.size() == 1);
  CHECK(r.segments[0].temperature == 0.2f);
  CHECK(r.text == "one one one");
  CHECK_THAT(r.segments[0].avg_logprob, WithinAbs(-0.5, 1e-6));

  SECTION("beam_size and best_of out of range are refused naming the option") {
    asr::TranscriptionOptions bad = options;
    bad.beam_size = 0;
    CHECK_THROWS_WITH(asr::Transcriber(fake_tokenizer(), silence(1), bad), ContainsSubstring("beam_size"));
    bad.beam_size = 20;
    CHECK_THROWS_WITH(asr::Transcriber(fake_tokenizer(), silence(1), bad), ContainsSubstring("beam_size"));
    bad = options;
    bad.best_of = 0;
    CHECK_THROWS_WITH(asr::Transcriber(fake_tokenizer(), silence(1), bad), ContainsSubstring("best_of"));
  }
}

TEST_CASE("BeamSearcher: openai-whisper's ranking, length penalty and patience", "[asr][beam]") {
  const TokenId eot = special().eot;
  CHECK_THAT(izwi::beam_score(-3.0, 2, std::nullopt), WithinAbs(-1.5, 1e-12));
  CHECK_THAT(izwi::beam_score(-3.0, 2, 1.0), WithinAbs(-3.0 / (7.0 / 6.0), 1e-12));
  CHECK_THAT(izwi::beam_score(-3.0, 0, std::nullopt), WithinAbs(-3.0, 1e-12));

  auto search = [&](izwi::BeamSearchOptions o) {
    izwi::BeamSearcher s(std::span(&eot, 1), o);
    std::size_t rounds = 0;
    while (!s.done()) {
      std::vector<std::vector<izwi::TokenLogprob>> tops;
      for (const auto& b : s.beams()) {
        auto top = myopic_next(b.tokens);
        top.resize(std::min<std::size_t>(top.size(), s.candidates_per_beam()));
        tops.push_back(top);
      }
      s.advance(tops);
      ++rounds;
    }
    auto r = s.finish();
    CHECK(r.num_requests >= rounds);
    return r;
  };
  izwi::BeamSearchOptions o;
  o.beam_width = 1;
  const auto one = search(o);
  CHECK(one.best().tokens == greedy_of(myopic_next).tokens);  // width 1 = greedy
  CHECK(one.best().finished);
  CHECK(one.best().logprobs.size() == one.best().tokens.size() + 1);  // the end token's too

  o.beam_width = 5;
  const auto five = search(o);
  CHECK(five.best().tokens == std::vector<TokenId>{word(" la"), word(" two")});
  CHECK_THAT(five.best().score, WithinAbs(-1.16 / 2, 1e-6));  // the end token is not counted in the length
  CHECK(five.hypotheses.size() == 5);
  for (const auto& h : five.hypotheses) {
    double sum = 0;
    for (float l : h.logprobs) sum += l;
    CHECK_THAT(sum, WithinAbs(h.sum_logprob, 1e-5));
  }
  CHECK(std::is_sorted(five.hypotheses.begin(), five.hypotheses.end(),
                       [](const auto& a, const auto& b) { return a.score > b.score; }));
  o.patience = 2.0;
  CHECK(search(o).hypotheses.size() == 10);
  o.patience = 1.0;
  o.max_tokens = 1;  // no room: the live beams compete
  const auto cut = search(o);
  CHECK(!cut.best().finished);
  CHECK(cut.best().tokens.size() == 1);
  o.beam_width = 0;
  CHECK_THROWS_WITH(izwi::BeamSearcher(std::span(&eot, 1), o), ContainsSubstring("beam_width"));
}
