// ThreadPool: every task runs exactly once per call, worker indices stay in
// range, back-to-back calls and calls after the workers went to sleep both
// work, destruction is clean. Runs under ThreadSanitizer (label "threads").

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "izwi/kernels/cpu/thread_pool.hpp"

using izwi::detail::ThreadPool;

namespace {
void check_once_each(ThreadPool& pool, std::size_t n_tasks) {
  std::vector<std::atomic<int>> hits(n_tasks);
  std::atomic<bool> bad_worker{false};
  pool.parallel_for(n_tasks, [&](std::size_t task, std::size_t worker) {
    if (worker >= pool.size()) bad_worker = true;
    hits[task].fetch_add(1, std::memory_order_relaxed);
  });
  REQUIRE_FALSE(bad_worker.load());
  for (std::size_t t = 0; t < n_tasks; ++t) REQUIRE(hits[t].load() == 1);
}
}  // namespace

TEST_CASE("ThreadPool runs every task exactly once", "[threads]") {
  for (std::size_t threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    REQUIRE(pool.size() == threads);
    for (std::size_t n : {0, 1, 2, 3, 7, 64, 1000}) check_once_each(pool, n);
  }
  ThreadPool machine_sized;
  REQUIRE(machine_sized.size() >= 1);
  check_once_each(machine_sized, 33);
}

TEST_CASE("ThreadPool: many back-to-back calls see each other's writes", "[threads]") {
  ThreadPool pool(3);
  std::vector<std::uint64_t> data(96, 0);
  // Each call reads what the previous call wrote (in other threads): the pool
  // must order one call's tasks before the next call's.
  for (int round = 0; round < 500; ++round) {
    pool.parallel_for(data.size(), [&](std::size_t task, std::size_t) { data[task] += task + 1; });
  }
  for (std::size_t i = 0; i < data.size(); ++i) REQUIRE(data[i] == 500 * (i + 1));
}

TEST_CASE("ThreadPool: calls after the workers fell asleep, and destruction while asleep", "[threads]") {
  ThreadPool pool(2);
  check_once_each(pool, 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // past the spin phase
  check_once_each(pool, 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

TEST_CASE("ThreadPool: per-worker scratch is aligned, private and kept", "[threads]") {
  ThreadPool pool(3);
  std::vector<void*> first(pool.size() + 1, nullptr);
  for (std::size_t w = 0; w < pool.size(); ++w) {
    first[w] = pool.scratch(w, 1000);
    REQUIRE(reinterpret_cast<std::uintptr_t>(first[w]) % 64 == 0);
  }
  first[pool.size()] = pool.shared_scratch(1000);
  for (std::size_t a = 0; a < first.size(); ++a)
    for (std::size_t b = a + 1; b < first.size(); ++b) REQUIRE(first[a] != first[b]);
  REQUIRE(pool.scratch(1, 500) == first[1]);  // no reallocation for a smaller request
  std::atomic<bool> shared{false};  // Catch2 assertions are not thread-safe: collect, then check
  pool.parallel_for(64, [&](std::size_t task, std::size_t worker) {
    auto* p = static_cast<std::size_t*>(pool.scratch(worker, 4096));
    for (std::size_t i = 0; i < 512; ++i) p[i] = task;
    for (std::size_t i = 0; i < 512; ++i)
      if (p[i] != task) shared = true;
  });
  REQUIRE_FALSE(shared.load());
}
