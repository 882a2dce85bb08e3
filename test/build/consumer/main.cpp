// A tiny program written against izwi's public API only, as a user would.
// Built twice by CTest: against an installed izwi (find_package) and against
// izwi's source tree (add_subdirectory). It must compile, link and exit 0.
//
// It uses core/, concepts/, io/json.hpp (a compiled dependency: Boost.JSON) and
// the CPU kernels: built like this (no -m or -march flags), it must still run the
// fastest kernel variant this CPU supports (kernels/cpu/dispatch.hpp).
// To extend it once an area lands, add a block below (and its header above):
//   - KV cache:  construct izwi::PagedKVCache<> from a KVCacheShape and check stats()
//   - scheduler: add a Request to izwi::FcfsScheduler and schedule() one step
//   - engine:    instantiate izwi::Engine<...> with a test executor and generate()
//   - audio:     link izwi::audio and decode a WAV held in memory

#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "izwi/concepts.hpp"
#include "izwi/core/error.hpp"
#include "izwi/core/hash.hpp"
#include "izwi/core/kv_cache_shape.hpp"
#include "izwi/core/random.hpp"
#include "izwi/core/request.hpp"
#include "izwi/core/sampling_params.hpp"
#include "izwi/core/step.hpp"
#include "izwi/kernels/cpu/dispatch.hpp"
#include "izwi/kernels/cpu/elementwise.hpp"
#include "izwi/io/json.hpp"

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) ++failures;
}

// A user's own policy type: opts in with the tag and meets the contract.
struct MyCache {
  using policy_category = izwi::kv_cache_tag;
  using memory_space = izwi::host_space;
  std::size_t block_size() const;
  const izwi::KVCacheShape& shape() const;
  izwi::PrefixHit find_cached_prefix(const izwi::SequenceView&);
  bool allocate_slots(const izwi::SequenceView&, std::size_t, std::size_t, izwi::PrefixHit);
  void free(izwi::RequestId);
  std::span<const izwi::BlockId> block_table(izwi::RequestId) const;
  izwi::KVCacheStats stats() const;
  izwi::KVLayerView layer(std::uint32_t);
};

/// The kernel variant a program should run on this CPU, from the compiler's
/// own reading of cpuid (not izwi's).
std::string best_kernel_variant_here() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512cd");
  return avx512 ? "avx512" : avx2 ? "avx2" : "sse2";
#else
  return "baseline";
#endif
}

}  // namespace

int main() {
  // Sampling parameters: vLLM's defaults, and validation that names the field.
  izwi::SamplingParams params;
  params.temperature = 0.7f;
  params.top_p = 0.9f;
  params.seed = 1234;
  bool valid = true;
  try {
    params.validate();
  } catch (const izwi::error&) {
    valid = false;
  }
  check(valid, "SamplingParams with temperature 0.7, top_p 0.9 validates");

  params.top_p = 1.5f;
  std::string field;
  try {
    params.validate();
  } catch (const izwi::invalid_argument& e) {
    field = e.field();
  }
  check(field == "top_p", "SamplingParams rejects top_p 1.5 and names the field");

  // The per-request generator: same seed, same stream.
  izwi::SequenceRng a(42), b(42);
  bool same = true;
  for (int i = 0; i < 16; ++i) same = same && a() == b();
  check(same, "SequenceRng is reproducible from its seed");

  // Hashing (pulls in xxHash through izwi::izwi's usage requirements).
  const std::vector<izwi::TokenId> tokens{1, 2, 3, 4};
  check(izwi::hash128(tokens.data(), tokens.size() * sizeof(izwi::TokenId)) ==
            izwi::hash128(tokens.data(), tokens.size() * sizeof(izwi::TokenId)),
        "hash128 is deterministic");

  // Shapes and requests.
  const izwi::KVCacheShape shape{.num_layers = 2, .num_kv_heads = 4, .head_dim = 64, .dtype = izwi::DType::f16};
  check(shape.bytes_per_token() == 2u * 2 * 4 * 64 * 2, "KVCacheShape::bytes_per_token");
  izwi::Request request;
  request.task = izwi::Task::chat;
  request.prompt_tokens = tokens;
  check(izwi::to_string(izwi::FinishReason::length) == "length", "FinishReason spells as OpenAI does");

  // Contracts: a user's type opts in; a CPU executor cannot read device memory.
  static_assert(izwi::KVCachePolicy<MyCache>);
  static_assert(izwi::accessible_from<izwi::cpu_execution, izwi::host_space>);
  static_assert(!izwi::accessible_from<izwi::cpu_execution, izwi::device_space>);
  check(true, "concepts accept a user-written KV cache type");

  // CPU kernels through izwi::izwi's link of izwi::kernels, chosen at run time.
  const std::string arch = izwi::kernels::cpu::active_kernels().name;
  std::printf("CPU kernels: %s (this CPU's best: %s)\n", arch.c_str(), best_kernel_variant_here().c_str());
  check(std::getenv("IZWI_CPU_ARCH") != nullptr || arch == best_kernel_variant_here(),
        "a program built with no flags dispatches to the best kernel variant for this CPU");
  std::vector<float> probabilities{1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f};
  izwi::kernels::cpu::softmax(probabilities.data(), probabilities.size());
  float total = 0.0f;
  for (float p : probabilities) total += p;
  check(total > 0.9999f && total < 1.0001f && probabilities[8] > probabilities[0], "softmax through the dispatched kernels");
  // io: JSON through Boost.JSON, whose compiled part comes with izwi::izwi.
  const izwi::io::JsonValue doc = izwi::io::parse_json(R"({"hidden_size": 1024, "name": "q"})", "config.json");
  check(izwi::io::json_integer(*izwi::io::json_find(doc, "hidden_size")) == 1024, "parse_json reads a config (links Boost.JSON)");
  std::string refusal;
  try {
    izwi::io::parse_json(R"({"a": 1,})", "bad.json");
  } catch (const izwi::io::json_error& e) {
    refusal = e.what();
  }
  check(refusal.find("bad.json: invalid JSON at line 1") == 0, "parse_json refuses a trailing comma with file and line");

  // ---- extend here as areas land (see the list at the top) ----

  std::printf("%s\n", failures ? "izwi consumer: FAILED" : "izwi consumer: all checks passed");
  return failures ? 1 : 0;
}
