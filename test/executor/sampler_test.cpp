// The sampler against the definitions it implements (vLLM's order and
// semantics), computed independently here in double precision.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "izwi/executor/sampler.hpp"

using namespace izwi;

namespace {

struct Case {
  SamplingParams params;
  std::vector<TokenId> prompt, output, eos;
  SequenceRng rng{1};
  SamplingInput input() { return {&params, prompt, output, eos, &rng}; }
};

std::vector<double> softmax(const std::vector<double>& logits) {
  const double max = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  double sum = 0;
  for (std::size_t i = 0; i < p.size(); ++i) sum += p[i] = std::exp(logits[i] - max);
  for (double& x : p) x /= sum;
  return p;
}

/// Empirical frequencies of `draws` samples.
std::vector<double> frequencies(Sampler& sampler, const std::vector<float>& logits, Case& c, int draws) {
  std::vector<double> f(logits.size(), 0.0);
  for (int i = 0; i < draws; ++i) {
    std::vector<float> l = logits;
    f[static_cast<std::size_t>(sampler.sample(l, c.input()).token)] += 1.0 / draws;
  }
  return f;
}

const std::vector<float> logits{2.0f, 1.0f, 0.5f, 0.0f, -1.0f, 3.0f, -2.0f, 1.5f};

}  // namespace

TEST_CASE("greedy is argmax and consults no generator", "[sampler]") {
  Sampler sampler;
  Case c;
  c.params.temperature = 0.0f;
  std::vector<float> l = logits;
  const SequenceRng before = c.rng;
  CHECK(sampler.sample(l, c.input()).token == 5);
  CHECK(c.rng == before);
}

TEST_CASE("temperature sampling follows softmax(logits / T)", "[sampler]") {
  Sampler sampler;
  for (double t : {0.5, 1.0, 2.0}) {
    Case c;
    c.params.temperature = static_cast<float>(t);
    std::vector<double> scaled(logits.begin(), logits.end());
    for (double& x : scaled) x /= t;
    const auto expected = softmax(scaled);
    const auto seen = frequencies(sampler, logits, c, 40000);
    for (std::size_t i = 0; i < expected.size(); ++i) {
      INFO("T=" << t << " token " << i);
      CHECK(seen[i] == Approx(expected[i]).margin(0.01));
    }
  }
}

TEST_CASE("top_k, top_p and min_p keep exactly the tokens their definitions keep", "[sampler]") {
  Sampler sampler;
  // Order by logit: 5 (3.0), 0 (2.0), 7 (1.5), 1 (1.0), 2 (0.5), 3 (0.0), 4 (-1), 6 (-2).
  const auto probs = softmax({logits.begin(), logits.end()});
  auto support = [&](Case& c) {
    const auto seen = frequencies(sampler, logits, c, 20000);
    std::vector<TokenId> kept;
    for (std::size_t i = 0; i < seen.size(); ++i)
      if (seen[i] > 0) kept.push_back(static_cast<TokenId>(i));
    return kept;
  };
  Case k;
  k.params.top_k = 3;
  CHECK(support(k) == std::vector<TokenId>{0, 5, 7});

  Case p;
  // Smallest set reaching top_p: 5 and 0 hold probs[5] + probs[0]; ask for a bit more.
  p.params.top_p = static_cast<float>(probs[5] + probs[0] + 0.01);
  CHECK(support(p) == std::vector<TokenId>{0, 5, 7});

  Case m;
  // min_p keeps tokens with prob >= min_p * prob(top): exp(l - 3) >= min_p.
  m.params.min_p = static_cast<float>(std::exp(1.0 - 3.0) - 1e-4);  // keeps logits >= 1.0
  CHECK(support(m) == std::vector<TokenId>{0, 1, 5, 7});

  Case both;  // top_k then top_p over what top_k kept, renormalised
  both.params.top_k = 2;
  both.params.top_p = 0.5f;
  CHECK(support(both) == std::vector<TokenId>{5});
}

TEST_CASE("top_k over a near-uniform vocabulary draws what the definition draws, seed by seed", "[sampler]") {
  // Qwen3-TTS's codebooks: thousands of logits close together, all of them
  // candidates, top_k 50. The draw, written out here in double precision:
  // sort by probability, keep top_k, then min_p and top_p over what is kept,
  // then one uniform from the same generator walked over the kept mass.
  const std::size_t vocab = 2048;
  SequenceRng make(7);
  std::vector<float> base(vocab);
  for (float& l : base) l = static_cast<float>(make.uniform_float()) * 4.0f - 2.0f;
  struct Setting { std::int32_t top_k; float top_p, min_p; };
  for (const Setting setting : {Setting{50, 1.0f, 0.0f}, Setting{50, 0.8f, 0.0f}, Setting{50, 1.0f, 0.5f},
                                Setting{3000, 1.0f, 0.0f}, Setting{1, 1.0f, 0.0f}}) {
    Sampler sampler;
    Case c;
    c.params.temperature = 0.9f;
    c.params.top_k = setting.top_k;
    c.params.top_p = setting.top_p;
    c.params.min_p = setting.min_p;
    c.rng.reseed(11);
    SequenceRng reference_rng(11);
    std::set<TokenId> drawn;
    for (int draw = 0; draw < 300; ++draw) {
      INFO("top_k " << setting.top_k << " top_p " << setting.top_p << " min_p " << setting.min_p << " draw " << draw);
      std::vector<std::pair<double, TokenId>> ranked;
      double max = -1e300;
      for (float l : base) max = std::max(max, double(l) / 0.9);
      for (std::size_t i = 0; i < vocab; ++i) ranked.emplace_back(std::exp(double(base[i]) / 0.9 - max), TokenId(i));
      std::sort(ranked.begin(), ranked.end(), std::greater<>());
      std::size_t keep = std::min<std::size_t>(ranked.size(), static_cast<std::size_t>(setting.top_k));
      std::size_t min_p_keep = 1;
      while (min_p_keep < keep && ranked[min_p_keep].first >= setting.min_p) ++min_p_keep;
      keep = min_p_keep;
      double kept = 0;
      for (std::size_t i = 0; i < keep; ++i) kept += ranked[i].first;
      if (setting.top_p < 1.0f) {
        double running = 0;
        std::size_t k = 0;
        while (k < keep && running < setting.top_p * kept) running += ranked[k++].first;
        keep = k;
        kept = running;
      }
      double u = double(reference_rng.uniform_float()) * kept;
      TokenId expected = ranked[keep - 1].second;
      for (std::size_t i = 0; i < keep; ++i)
        if ((u -= ranked[i].first) < 0) {
          expected = ranked[i].second;
          break;
        }
      std::vector<float> l = base;
      const TokenId got = sampler.sample(l, c.input()).token;
      CHECK(got == expected);
      drawn.insert(got);
    }
    CHECK(drawn.size() > (setting.top_k == 1 ? 0u : 10u));
  }
}

TEST_CASE("penalties follow vLLM's definitions", "[sampler]") {
  Sampler sampler;
  Case c;
  c.params.temperature = 0.0f;
  c.params.repetition_penalty = 2.0f;
  c.params.frequency_penalty = 0.5f;
  c.params.presence_penalty = 0.25f;
  c.prompt = {0, 4};         // repetition only
  c.output = {5, 5, 7, 4};   // repetition, frequency and presence
  std::vector<float> l = logits;
  sampler.sample(l, c.input());
  std::vector<float> expected = logits;
  expected[0] = 2.0f / 2.0f;                         // prompt, positive: divided
  expected[4] = -1.0f * 2.0f - 0.5f * 1 - 0.25f;     // prompt and output, negative: multiplied, then 1 occurrence
  expected[5] = 3.0f / 2.0f - 0.5f * 2 - 0.25f;      // output twice
  expected[7] = 1.5f / 2.0f - 0.5f * 1 - 0.25f;
  for (std::size_t i = 0; i < l.size(); ++i) {
    INFO("token " << i);
    CHECK(l[i] == Approx(expected[i]));
  }
  // The scratch counters are clean for the next call: no penalty leaks over.
  Case plain;
  plain.params.temperature = 0.0f;
  plain.params.frequency_penalty = 0.5f;
  std::vector<float> again = logits;
  sampler.sample(again, plain.input());
  CHECK(again == logits);
}

TEST_CASE("min_tokens masks EOS and stop ids until enough tokens exist", "[sampler]") {
  Sampler sampler;
  Case c;
  c.params.temperature = 0.0f;
  c.params.min_tokens = 2;
  c.params.stop_token_ids = {0};
  c.eos = {5};
  c.output = {1};
  std::vector<float> l = logits;
  CHECK(sampler.sample(l, c.input()).token == 7);  // 5 and 0 masked: next best is 7
  c.output = {1, 2};
  l = logits;
  CHECK(sampler.sample(l, c.input()).token == 5);
}

TEST_CASE("logit_bias is added before the draw, greedy included, and logprobs stay raw", "[sampler]") {
  Sampler sampler;
  Case c;
  c.params.temperature = 0.0f;
  c.params.logprobs = 1;
  c.params.logit_bias = {{5, -100.0f}, {3, 2.5f}};  // 3: 0.0 + 2.5 passes 0 (2.0) and 5 (banned)
  std::vector<float> l = logits;
  std::vector<TokenLogprob> top;
  const SampledToken s = sampler.sample(l, c.input(), &top);
  CHECK(s.token == 3);
  const auto probs = softmax({logits.begin(), logits.end()});
  CHECK(s.logprob == Approx(std::log(probs[3])).margin(1e-5));  // the raw logits' log-softmax
  REQUIRE(top.size() == 1u);
  CHECK(top[0].token == 5);

  // Sampling: the draw follows softmax(logits + bias); a -100 bias bans.
  c.params = {};
  c.params.temperature = 1.0f;
  c.params.logit_bias = {{5, -100.0f}, {6, 4.0f}};
  std::vector<double> biased(logits.begin(), logits.end());
  biased[5] -= 100.0;
  biased[6] += 4.0;
  const auto expected = softmax(biased);
  const auto f = frequencies(sampler, logits, c, 20000);
  CHECK(f[5] == 0.0);
  for (std::size_t i = 0; i < f.size(); ++i) CHECK(f[i] == Approx(expected[i]).margin(0.015));
}

TEST_CASE("logprobs are the raw logits' log-softmax, top-N most likely first", "[sampler]") {
  Sampler sampler;
  Case c;
  c.params.temperature = 0.7f;
  c.params.repetition_penalty = 1.3f;  // must not affect the raw logprobs
  c.params.logprobs = 3;
  c.output = {5};
  const auto probs = softmax({logits.begin(), logits.end()});
  std::vector<float> l = logits;
  std::vector<TokenLogprob> top;
  const SampledToken s = sampler.sample(l, c.input(), &top);
  CHECK(s.logprob == Approx(std::log(probs[static_cast<std::size_t>(s.token)])).margin(1e-5));
  REQUIRE(top.size() == 3u);
  CHECK(top[0].token == 5);
  CHECK(top[1].token == 0);
  CHECK(top[2].token == 7);
  CHECK(top[0].logprob == Approx(std::log(probs[5])).margin(1e-5));
}

TEST_CASE("a seeded request draws the same tokens every time", "[sampler]") {
  Sampler a, b;
  std::vector<TokenId> first, second;
  Case c1, c2;
  c1.rng.reseed(99);
  c2.rng.reseed(99);
  for (int i = 0; i < 50; ++i) {
    std::vector<float> l1 = logits, l2 = logits;
    first.push_back(a.sample(l1, c1.input()).token);
    second.push_back(b.sample(l2, c2.input()).token);
  }
  CHECK(first == second);
  CHECK(std::set<TokenId>(first.begin(), first.end()).size() > 1);
}

TEST_CASE("a large vocabulary samples from the right region quickly", "[sampler]") {
  Sampler sampler;
  std::vector<float> big(151936, -5.0f);
  big[1234] = 10.0f;
  big[99999] = 9.5f;
  Case c;
  c.params.top_p = 0.9f;
  std::map<TokenId, int> seen;
  for (int i = 0; i < 200; ++i) {
    std::vector<float> l = big;
    ++seen[sampler.sample(l, c.input()).token];
  }
  for (const auto& [token, n] : seen) CHECK((token == 1234 || token == 99999));
}

TEST_CASE("the sampler is total over NaN and infinite logits", "[sampler][nan]") {
  Sampler sampler;
  constexpr float nan = std::numeric_limits<float>::quiet_NaN();
  constexpr float inf = std::numeric_limits<float>::infinity();
  for (float temperature : {0.0f, 0.7f}) {
    for (bool logprobs : {false, true}) {
      INFO("temperature " << temperature << ", logprobs " << logprobs);
      Case c;
      c.params.temperature = temperature;
      c.params.top_p = 0.9f;
      if (logprobs) c.params.logprobs = 3;
      std::vector<TokenLogprob> top;
      // All NaN: before the fix the candidate list was empty and indexed at -1.
      std::vector<float> all_nan(64, nan);
      SampledToken out = sampler.sample(all_nan, c.input(), &top);
      CHECK(out.error == SampleError::non_finite_logits);
      CHECK(out.token == -1);
      CHECK(top.empty());
      CHECK(describe(out.error).find("non-finite logits") != std::string_view::npos);
      // One NaN or one +infinity among finite logits poisons the row as well.
      for (float bad : {nan, inf}) {
        std::vector<float> one_bad(64, 0.5f);
        one_bad[17] = bad;
        out = sampler.sample(one_bad, c.input(), &top);
        CHECK(out.error == SampleError::non_finite_logits);
        CHECK_FALSE(out.ok());
      }
      // Nothing but -infinity: no token has any probability.
      std::vector<float> all_masked(64, -inf);
      out = sampler.sample(all_masked, c.input(), &top);
      CHECK(out.error == SampleError::no_candidate);
      CHECK(top.empty());
      // -infinity beside finite logits is ordinary masking.
      std::vector<float> masked(64, -inf);
      masked[5] = 1.0f;
      out = sampler.sample(masked, c.input(), &top);
      CHECK(out.ok());
      CHECK(out.token == 5);
    }
  }
  // min_tokens masking the only finite token leaves nothing to sample.
  Case c;
  c.params.min_tokens = 3;
  c.eos = {2};
  std::vector<float> only_eos(8, -inf);
  only_eos[2] = 4.0f;
  CHECK(sampler.sample(only_eos, c.input()).error == SampleError::no_candidate);
  // A temperature small enough to overflow the scaled logits is greedy in the limit.
  Case tiny;
  tiny.params.temperature = 1e-38f;
  std::vector<float> logits{0.0f, 30.0f, 10.0f, -2.0f};  // x 1e38 overflows float
  const SampledToken out = sampler.sample(logits, tiny.input());
  CHECK(out.ok());
  CHECK(out.token == 1);
}
