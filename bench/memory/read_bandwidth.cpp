// izwi-read-bandwidth: the machine's memory read bandwidth, the ceiling of
// batch-1 decode (every weight byte is read once per token).
//
//   izwi-read-bandwidth [--threads 1,2] [--mib 1024] [--reps 10]
//
// Like STREAM's read kernels: each thread sums its own contiguous slice of a
// buffer far larger than the last-level cache (1 GiB by default), 8-byte
// words into four independent accumulators, so the loads, not the adds, set
// the pace. The compiler vectorises the sums; on x86-64 the loop is cloned
// for AVX-512 and AVX2 and the CPU's best clone is picked at load time
// (GCC's target_clones), so the widest loads the CPU has are used without any
// -m flag. The threads start together from a barrier; a repetition
// lasts until the slowest finishes. Prints the best and the median GB/s
// (10^9 bytes) over the repetitions for each thread count, once from 4-KiB
// pages (an ordinary allocation, as a mapped checkpoint is read) and once
// from 2-MiB transparent huge pages (detail::HugePageBuffer, as the models
// read their checkpoints by default: io/file_memory.hpp). Built with no
// special flags, like everything a user builds.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "izwi/core/detail/huge_page_buffer.hpp"

#include "command_line.hpp"

namespace po = boost::program_options;
namespace cli = izwi::command_line;

namespace {

struct Options {
  std::vector<std::size_t> threads{1, 2};
  std::size_t mib = 1024;
  std::size_t reps = 10;
};

constexpr cli::Program program{"izwi-read-bandwidth", "izwi-read-bandwidth [--threads 1,2] [--mib 1024] [--reps 10]",
                               "the machine's memory read bandwidth, from 4-KiB and 2-MiB pages"};

Options parse(int argc, char** argv) {
  Options o;
  std::string threads = "1,2";
  po::options_description options("options");
  options.add_options()
      ("threads", po::value(&threads)->value_name("LIST")->default_value(threads),
       "thread counts to measure, comma-separated (0 is skipped)")
      ("mib", cli::count(&o.mib)->value_name("N"), "buffer size in MiB (far larger than the last-level cache)")
      ("reps", cli::count(&o.reps)->value_name("N"), "timed reads per thread count, after one warm-up")
      ("help,h", "show this help");
  cli::read_command_line(argc, argv, program, options);
  const auto thread_counts = cli::parse_count_list(threads);
  if (!thread_counts)
    cli::usage_error(program, "--threads expects thread counts separated by commas, got '" + threads + "'");
  o.threads = *thread_counts;
  if (o.mib == 0) cli::usage_error(program, "--mib must be >= 1");
  if (o.reps == 0) cli::usage_error(program, "--reps must be >= 1");
  return o;
}

/// Sum of n words: four chains, so an add never waits on the one before.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
std::uint64_t sum_words(const std::uint64_t* p, std::size_t n) {
  std::uint64_t a = 0, b = 0, c = 0, d = 0;
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a += p[i];
    b += p[i + 1];
    c += p[i + 2];
    d += p[i + 3];
  }
  for (; i < n; ++i) a += p[i];
  return a + b + c + d;
}

/// Seconds for `threads` threads to read their slices of `words` once, together.
double timed_read(const std::uint64_t* data, std::size_t words, std::size_t threads, std::uint64_t& sink) {
  std::atomic<std::size_t> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::uint64_t> sums(threads * 8);  // a cache line apart
  std::vector<std::thread> pool;
  const std::size_t slice = words / threads;
  for (std::size_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      sums[t * 8] = sum_words(data + t * slice, slice);
    });
  while (ready.load() != threads) {
  }
  const auto start = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (std::size_t t = 0; t < threads; ++t) sink += sums[t * 8];
  return seconds;
}

/// Best and median GB/s of reading `data` with each thread count of `o`.
void measure(const char* pages, std::uint64_t* data, std::size_t words, const Options& o, std::uint64_t& sink) {
  for (std::size_t i = 0; i < words; ++i) data[i] = i;  // touch every page before timing
  for (std::size_t threads : o.threads) {
    if (threads == 0) continue;
    timed_read(data, words, threads, sink);  // warm-up
    std::vector<double> rates;
    for (std::size_t r = 0; r < o.reps; ++r) {
      const double seconds = timed_read(data, words, threads, sink);
      rates.push_back(static_cast<double>(words / threads * threads * sizeof(std::uint64_t)) / seconds / 1e9);
    }
    std::sort(rates.begin(), rates.end());
    std::printf("read bandwidth  %-10s threads %zu  best %7.2f GB/s  median %7.2f GB/s\n", pages, threads,
                rates.back(), rates[rates.size() / 2]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const std::size_t words = o.mib * (std::size_t{1} << 20) / sizeof(std::uint64_t);
  std::uint64_t sink = 0;
  std::printf("read bandwidth over %zu MiB, %zu repetitions, GB/s = 1e9 bytes/s\n", o.mib, o.reps);
  {
    const std::unique_ptr<std::uint64_t[]> small_pages(new std::uint64_t[words]);
    measure("4 KiB", small_pages.get(), words, o, sink);
  }
  izwi::detail::HugePageBuffer huge(words * sizeof(std::uint64_t), "the huge-page buffer");
  measure("2 MiB THP", reinterpret_cast<std::uint64_t*>(huge.data()), words, o, sink);
  return sink == 42 ? 1 : 0;  // keeps the sums alive
}
