// izwi-demo: the engine end to end in one host program, with nothing to download.
//
// It composes a custom engine configuration, as a library user would:
//
//   izwi::Engine<izwi::FcfsScheduler, izwi::PagedKVCache<>, CharacterModelExecutor>
//
// where CharacterModelExecutor is written here, against the executor concept:
// a character-level n-gram model built at start-up from a paragraph of text.
// It is not a neural network and it is untrained in any useful sense; it is
// here so that a newcomer sees continuous batching, paged KV blocks, prefix
// reuse, streaming, stop strings and metrics work together. The model keeps
// its context in the KV cache (each token's K row holds the byte), so the
// engine's block tables are what it reads back. Real model families (Qwen3,
// Whisper, ...) plug in the same way through their executors.
//
// Usage: izwi-demo [--requests N] [--max-tokens N] [--seed N] [--metrics]

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "izwi/engine/engine.hpp"
#include "izwi/kv_cache/paged.hpp"
#include "izwi/scheduler/fcfs.hpp"

#include <boost/program_options.hpp>

namespace {

constexpr std::string_view corpus =
    "The engine plans one token budget per step. Running requests are served first, then waiting ones, "
    "and a long prompt is split into chunks so that nobody waits behind it. Every request keeps its keys "
    "and values in fixed blocks of a shared pool; when two prompts begin alike, the blocks of the common "
    "beginning are computed once and shared. When memory runs short, the newest request steps aside and "
    "is recomputed later, in its old place in the queue. Tokens stream to the client as they are made, "
    "and a client that hangs up frees everything it held. The metrics tell the operator how long the "
    "first token took, how fast the rest came, and how full the cache is. ";

/// Order-4 character n-gram counts with back-off to shorter contexts.
class CharacterModel {
 public:
  static constexpr std::size_t order = 4;
  explicit CharacterModel(std::string_view text) {
    for (std::size_t i = 0; i < text.size(); ++i)
      for (std::size_t n = 0; n <= order && n <= i; ++n)
        ++counts_[std::string(text.substr(i - n, n))][static_cast<unsigned char>(text[i])];
  }
  /// Counts of the next byte after the longest known suffix of `context`.
  const std::array<std::uint32_t, 256>& next_counts(std::string_view context) const {
    for (std::size_t n = std::min(order, context.size());; --n) {
      if (auto it = counts_.find(std::string(context.substr(context.size() - n))); it != counts_.end()) return it->second;
      if (n == 0) break;
    }
    return counts_.at("");
  }

 private:
  std::map<std::string, std::array<std::uint32_t, 256>> counts_;
};

struct ByteDetokenizer {
  char byte[1] = {};
  std::string_view append(izwi::TokenId t) noexcept {
    byte[0] = static_cast<char>(t);
    return {byte, 1};
  }
};

/// The executor: writes each scheduled byte into its KV slot, reads every
/// sampling sequence's context back through its block table, and samples the
/// next byte with the request's temperature, top-k and its own generator.
class CharacterModelExecutor {
 public:
  using policy_category = izwi::executor_tag;
  using execution_space = izwi::cpu_execution;

  izwi::KVCacheShape kv_cache_shape() const { return {1, 1, 1, izwi::DType::f32}; }
  ByteDetokenizer make_detokenizer() const { return {}; }

  template <izwi::KVCachePolicy K>
  void execute(const izwi::StepPlan& plan, K& kv, izwi::StepResult& result) {
    float* keys = reinterpret_cast<float*>(kv.layer(0).keys);
    for (const izwi::ScheduledSequence& seq : plan.sequences)
      for (std::size_t i = 0; i < seq.num_tokens; ++i)
        keys[plan.slot_mapping[seq.slot_offset + i]] = static_cast<float>(seq.tokens[seq.num_computed_tokens + i]);
    const std::size_t block = kv.block_size();
    for (const izwi::ScheduledSequence& seq : plan.sequences) {
      if (!seq.samples) continue;
      const std::size_t length = seq.num_computed_tokens + seq.num_tokens;
      const std::size_t from = length > CharacterModel::order ? length - CharacterModel::order : 0;
      context_.clear();
      for (std::size_t p = from; p < length; ++p)
        context_ += static_cast<char>(keys[seq.block_table[p / block] * block + p % block]);
      result.outputs.push_back({seq.id, sample(model_.next_counts(context_), *seq.sampling, *seq.rng)});
    }
  }

 private:
  static izwi::TokenId sample(const std::array<std::uint32_t, 256>& counts, const izwi::SamplingParams& params,
                              izwi::SequenceRng& rng) {
    std::array<std::pair<double, int>, 256> candidates{};
    std::size_t n = 0;
    for (int b = 0; b < 256; ++b)
      if (counts[b]) candidates[n++] = {static_cast<double>(counts[b]), b};
    std::sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(n), std::greater<>());
    if (params.is_greedy()) return candidates[0].second;
    if (params.top_k > 0) n = std::min<std::size_t>(n, static_cast<std::size_t>(params.top_k));
    double total = 0;
    for (std::size_t i = 0; i < n; ++i) total += candidates[i].first = std::pow(candidates[i].first, 1.0 / params.temperature);
    double u = rng.uniform_float() * total;
    for (std::size_t i = 0; i < n; ++i)
      if ((u -= candidates[i].first) <= 0) return candidates[i].second;
    return candidates[n - 1].second;
  }

  CharacterModel model_{corpus};
  std::string context_;
};

std::vector<izwi::TokenId> bytes_of(std::string_view text) {
  return {text.begin(), text.end()};
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t num_requests = 6;
  std::uint32_t max_tokens = 160;
  std::uint64_t seed = 7;
  bool print_metrics = false;
  namespace po = boost::program_options;
  po::options_description options("usage: izwi-demo [--requests N] [--max-tokens N] [--seed N] [--metrics]");
  options.add_options()
      ("requests", po::value(&num_requests)->value_name("N")->default_value(num_requests), "requests to run at once")
      ("max-tokens", po::value(&max_tokens)->value_name("N")->default_value(max_tokens), "tokens per request")
      ("seed", po::value(&seed)->value_name("N")->default_value(seed), "sampling seed")
      ("metrics", po::bool_switch(&print_metrics), "print the Prometheus metrics at the end")
      ("help,h", "show this help");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, options), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "izwi-demo: " << e.what() << "\n" << options;
    return 2;
  }
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }

  using DemoEngine = izwi::Engine<izwi::FcfsScheduler, izwi::PagedKVCache<>, CharacterModelExecutor>;
  CharacterModelExecutor executor;
  izwi::PagedKVCacheConfig kv_config;
  kv_config.byte_budget = 1 << 20;
  izwi::PagedKVCache<> kv(executor.kv_cache_shape(), kv_config);
  izwi::SchedulerConfig scheduling;
  scheduling.max_num_batched_tokens = 64;  // small, so prompts are chunked and batches mix
  izwi::EngineConfig engine_config;
  engine_config.model_name = "izwi-demo-character-ngram (untrained toy)";
  DemoEngine engine(izwi::FcfsScheduler(scheduling), std::move(kv), std::move(executor), engine_config);
  engine.run();

  std::cout << "izwi-demo: " << num_requests << " requests through Engine<FcfsScheduler, PagedKVCache<16>, "
            << "CharacterModelExecutor>\n(a toy character model built from one paragraph: the point is the "
               "engine, not the prose)\n\n";
  const std::array<std::string_view, 4> openings{"The engine ", "When memory ", "Every request ", "Tokens "};
  std::vector<izwi::ResponseStream> streams;
  for (std::size_t i = 0; i < num_requests; ++i) {
    izwi::Request request;
    // A shared system prefix: its blocks are computed once and reused.
    request.prompt_tokens = bytes_of(std::string(corpus.substr(0, 96)) + std::string(openings[i % openings.size()]));
    request.sampling.temperature = 0.8f;
    request.sampling.top_k = 8;
    request.sampling.seed = seed + i;
    request.sampling.max_tokens = max_tokens;
    request.sampling.stop = {". "};
    streams.push_back(engine.generate_streaming(std::move(request)));
  }
  for (std::size_t i = 0; i < streams.size(); ++i) {
    std::cout << "[" << i << "] " << openings[i % openings.size()] << std::flush;
    while (auto chunk = streams[i].next()) {
      std::cout << chunk->text << std::flush;
      if (chunk->finished()) {
        const izwi::RequestStats& s = *chunk->stats;
        std::printf("\n    %zu tokens, finish=%s, ttft %.2f ms, %.0f tokens/s, preempted %u times\n",
                    s.num_output_tokens, std::string(izwi::to_string(*chunk->finish_reason)).c_str(),
                    s.time_to_first_token * 1e3, s.decode_tokens_per_second, s.num_preemptions);
      }
    }
  }
  engine.stop();

  const izwi::EngineMetrics m = engine.metrics();
  std::printf("\nengine: %llu prompt + %llu generated tokens; prefix cache hits %llu of %llu queried tokens; "
              "TTFT p50 %.2f ms, p99 %.2f ms\n",
              static_cast<unsigned long long>(m.prompt_tokens), static_cast<unsigned long long>(m.generation_tokens),
              static_cast<unsigned long long>(m.prefix_cache_hits),
              static_cast<unsigned long long>(m.prefix_cache_queries), m.time_to_first_token.quantile(0.5) * 1e3,
              m.time_to_first_token.quantile(0.99) * 1e3);
  if (print_metrics) std::cout << "\n" << engine.metrics_text();
  return 0;
}
