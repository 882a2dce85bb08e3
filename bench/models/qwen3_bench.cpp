// izwi-bench-qwen3: Qwen3 throughput through the whole engine, in the units
// llama.cpp's llama-bench and llama-batched-bench report, so the two can be
// run side by side on one GGUF file (bench/models/compare_llama_cpp.sh).
//
//   izwi-bench-qwen3 MODEL [--threads N] [--pp 512] [--tg 128] [--batch 1,4,16] [--reps 3]
//                          [--device cpu|opencl[:PLATFORM:DEVICE]] [--mmap]
//
// --mmap maps the checkpoint (io::FileMemory::map) instead of reading it into
// huge-page memory, the models' default: the A/B of that choice.
//
//   pp<N>   prompt processing: one request with an N-token prompt, tokens/s
//   tg<N>   generation: N tokens decoded one step at a time, tokens/s
//   B=<b>   batched decode: b requests generating tg tokens together, total tokens/s
//
// The KV cache is f16, as llama.cpp's default. Each figure is the mean rate
// of --reps runs after one warm-up, as llama-bench averages its warm runs.
// --device opencl runs OpenClExecutor + DeviceKVCache (built where izwi::opencl
// exists; docs/opencl.md); PLATFORM and DEVICE are clinfo's indices.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "izwi/engine/engine.hpp"
#include "izwi/executor/cpu.hpp"
#include "izwi/kernels/cpu/dispatch.hpp"
#include "izwi/kv_cache/paged.hpp"
#include "izwi/models/qwen3.hpp"
#include "izwi/scheduler/fcfs.hpp"
#include "izwi/stock_engines.hpp"
#if IZWI_BENCH_OPENCL
#include "izwi/executor/opencl.hpp"
#include "izwi/kv_cache/device.hpp"
#endif

#include <boost/program_options.hpp>

namespace {

using Clock = std::chrono::steady_clock;
using Qwen3Engine = izwi::Engine<izwi::FcfsScheduler, izwi::PagedKVCache<>, izwi::CpuExecutor<izwi::Qwen3>>;

std::vector<izwi::TokenId> tokens(std::size_t n, std::uint32_t salt) {
  std::vector<izwi::TokenId> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = static_cast<izwi::TokenId>((salt * 7919u + i * 104729u) % 150000u);
  return t;
}

izwi::Request request(std::size_t prompt, std::uint32_t max_tokens, std::uint32_t salt) {
  izwi::Request r;
  r.prompt_tokens = tokens(prompt, salt);
  r.sampling.temperature = 0.0f;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  r.cache_salt = std::to_string(salt);  // no prefix reuse between runs
  return r;
}

/// Seconds to run `batch` requests of `prompt` tokens generating `max_tokens` each.
template <class Engine>
double run(Engine& engine, std::size_t batch, std::size_t prompt, std::uint32_t max_tokens, std::uint32_t& salt) {
  const auto start = Clock::now();
  for (std::size_t i = 0; i < batch; ++i) engine.add_request(request(prompt, max_tokens, ++salt));
  while (engine.has_unfinished_requests()) engine.step();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Figures {
  std::size_t pp;
  std::uint32_t tg;
  std::size_t reps;
  std::vector<std::size_t> batches;
};

/// pp, tg and batched-decode rates of `engine`, printed as llama-bench's units.
template <class Engine>
void measure(Engine& engine, const Figures& f) {
  std::uint32_t salt = 0;
  // Mean seconds per run after a warm-up (first touches of weights and scratch).
  auto mean_of = [&](auto&& once) {
    once();
    double total = 0;
    for (std::size_t r = 0; r < f.reps; ++r) total += once();
    return total / static_cast<double>(f.reps);
  };
  const double pp_seconds = mean_of([&] { return run(engine, 1, f.pp, 1, salt); });
  std::printf("izwi  pp%zu  %8.2f tokens/s\n", f.pp, static_cast<double>(f.pp) / pp_seconds);
  // tg: the one-token prompt's own step is part of the time, as llama-bench's tg
  // counts every evaluated token; the difference is one step in tg+1.
  const double tg_seconds = mean_of([&] { return run(engine, 1, 1, f.tg, salt); });
  std::printf("izwi  tg%u  %8.2f tokens/s\n", f.tg, static_cast<double>(f.tg) / tg_seconds);
  for (std::size_t b : f.batches) {
    const double seconds = mean_of([&] { return run(engine, b, 16, f.tg, salt); });
    std::printf("izwi  B=%-3zu %8.2f tokens/s (decode %u tokens each, prompts of 16)\n", b,
                static_cast<double>(b * (16 + f.tg)) / seconds, f.tg);
  }
}

}  // namespace

int main(int argc, char** argv) {
  namespace po = boost::program_options;
  const char* usage_line =
      "usage: izwi-bench-qwen3 MODEL [--threads N] [--pp N] [--tg N] [--batch 1,4,16] [--reps N] [--device D] [--mmap]\n";
  std::string model_path, batch_list = "1,4,16", device = "cpu";
  std::size_t threads = 0, pp = 512, reps = 3;
  std::uint32_t tg = 128;
  po::options_description options("options");
  options.add_options()
      ("threads", po::value(&threads)->value_name("N")->default_value(threads), "CPU threads (0: all cores)")
      ("pp", po::value(&pp)->value_name("N")->default_value(pp), "prompt tokens")
      ("tg", po::value(&tg)->value_name("N")->default_value(tg), "generated tokens")
      ("batch", po::value(&batch_list)->value_name("LIST")->default_value(batch_list), "batch sizes, comma-separated")
      ("device", po::value(&device)->value_name("D")->default_value(device), "cpu, or opencl[:PLATFORM:DEVICE]")
      ("reps", po::value(&reps)->value_name("N")->default_value(reps), "timed runs after one warm-up (their mean is reported)")
      ("mmap", "map the checkpoint instead of reading it into huge-page memory")
      ("help,h", "show this help");
  po::options_description all;
  all.add(options).add_options()("model", po::value(&model_path));
  po::positional_options_description positional;
  positional.add("model", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "izwi-bench-qwen3: %s\n%s", e.what(), usage_line);
    return 2;
  }
  if (vm.count("help")) {
    std::cout << usage_line << options;
    return 0;
  }
  if (model_path.empty()) {
    std::fprintf(stderr, "%s", usage_line);
    return 2;
  }
  std::vector<std::size_t> batches;
  std::stringstream list(batch_list);
  for (std::string item; std::getline(list, item, ',');) batches.push_back(std::stoul(item));

  izwi::Qwen3LoadOptions load;
  load.kv_cache_dtype = izwi::DType::f16;
  load.weights_memory = vm.count("mmap") ? izwi::io::FileMemory::map : izwi::io::FileMemory::read;
  izwi::PagedKVCacheConfig kv_config;
  kv_config.byte_budget = std::size_t{2} << 30;
  izwi::SchedulerConfig scheduling;
  scheduling.max_num_batched_tokens = std::max<std::size_t>(pp, 512);  // a pp prompt is one step, as llama-bench's
  const Figures figures{pp, tg, reps, batches};
  if (device == "cpu") {
    izwi::CpuExecutor<izwi::Qwen3> executor(izwi::Qwen3::load(model_path, load), {.num_threads = threads});
    std::printf("model: %s, threads: %zu, CPU kernels: %s, weights: %s\n", executor.model().description().c_str(),
                executor.num_threads(), izwi::kernels::cpu::active_kernels().name,
                std::string(izwi::io::to_string(load.weights_memory)).c_str());
    izwi::PagedKVCache<> kv(executor.kv_cache_shape(), kv_config);
    Qwen3Engine engine(izwi::FcfsScheduler(scheduling), std::move(kv), std::move(executor));
    measure(engine, figures);
    return 0;
  }
#if IZWI_BENCH_OPENCL
  if (device.rfind("opencl", 0) == 0) {
    izwi::opencl::ContextOptions context_options;
    if (device.size() > 6) {  // opencl:PLATFORM:DEVICE
      std::size_t platform = 0, index = 0;
      if (std::sscanf(device.c_str(), "opencl:%zu:%zu", &platform, &index) != 2) {
        std::fprintf(stderr, "izwi-bench-qwen3: --device %s: expected opencl:PLATFORM:DEVICE\n", device.c_str());
        return 2;
      }
      context_options.platform = platform;
      context_options.device = index;
    }
    std::shared_ptr<izwi::opencl::Context> context;
    try {
      context = izwi::opencl::Context::create(context_options);
    } catch (const izwi::error& e) {  // no platform, no such device: say so
      std::fprintf(stderr, "izwi-bench-qwen3: --device %s: %s\n", device.c_str(), e.what());
      return 1;
    }
    izwi::OpenClExecutor<izwi::Qwen3> executor(izwi::Qwen3::load(model_path, load), context);
    std::printf("model: %s, device: %s\n", executor.model().description().c_str(), context->description().c_str());
    izwi::DeviceKVCache<> kv(context, executor.kv_cache_shape(), kv_config);
    izwi::Engine engine(izwi::FcfsScheduler(scheduling), std::move(kv), std::move(executor));
    measure(engine, figures);
    return 0;
  }
#endif
  std::fprintf(stderr, "izwi-bench-qwen3: --device %s: expected cpu%s\n", device.c_str(),
               IZWI_BENCH_OPENCL ? " or opencl[:PLATFORM:DEVICE]" : " (built without OpenCL)");
  return 2;
  return 0;
}
