#pragma once
// Bodies of izwi/kernels/cpu/thread_pool.hpp.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace izwi::detail {

namespace thread_pool_detail {
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
// Some tens of microseconds of pause instructions (a pause costs 40 to 140
// cycles depending on the core): covers the gap between two kernels of a
// forward pass, not an idle engine. Longer spins cost more than they save on a
// loaded machine, where a spinning thread takes the core from one with work.
inline constexpr int spin_iterations = 1 << 11;
}  // namespace thread_pool_detail

inline ThreadPool::ThreadPool(std::size_t num_threads) {
  if (num_threads == 0) num_threads = std::max<std::size_t>(1, std::thread::hardware_concurrency());
  num_threads_ = num_threads;
  scratch_.resize(num_threads_ + 1);
  threads_.reserve(num_threads_ - 1);
  for (std::size_t w = 1; w < num_threads_; ++w) threads_.emplace_back([this, w] { worker_main(w); });
}

inline ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

inline void* ThreadPool::AlignedBuffer::reserve(std::size_t bytes) {
  if (bytes > capacity) {
    const std::size_t rounded = (std::max<std::size_t>(bytes, 4096) + 63) & ~std::size_t{63};
    data.reset(static_cast<std::byte*>(::operator new[](rounded, std::align_val_t{64})));
    capacity = rounded;
  }
  return data.get();
}

inline void* ThreadPool::scratch(std::size_t worker, std::size_t bytes) { return scratch_[worker].reserve(bytes); }
inline void* ThreadPool::shared_scratch(std::size_t bytes) { return scratch_[num_threads_].reserve(bytes); }

template <class Fn>
void ThreadPool::parallel_for(std::size_t n_tasks, Fn&& fn) {
  using Callable = std::remove_reference_t<Fn>;
  if (n_tasks == 0) return;
  if (n_tasks == 1 || num_threads_ == 1) {
    for (std::size_t t = 0; t < n_tasks; ++t) fn(t, std::size_t{0});
    return;
  }
  run(
      n_tasks,
      [](void* context, std::size_t task, std::size_t worker) { (*static_cast<Callable*>(context))(task, worker); },
      const_cast<void*>(static_cast<const void*>(std::addressof(fn))));
}

inline void ThreadPool::run(std::size_t n_tasks, TaskFn fn, void* context) {
  job_fn_ = fn;
  job_context_ = context;
  job_tasks_ = n_tasks;
  next_task_.store(0, std::memory_order_relaxed);
  // Every worker checks in for every generation, so the job (which lives on
  // the caller's stack) is never read after this call returns.
  workers_busy_.store(num_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_seq_cst);  // publishes the job
  if (sleepers_.load(std::memory_order_seq_cst) != 0) {
    // Taking the mutex orders this wake-up after a sleeper's predicate check.
    { std::lock_guard lock(mutex_); }
    wake_.notify_all();
  }
  run_tasks(0);
  int spins = 0;
  while (workers_busy_.load(std::memory_order_acquire) != 0) {
    if (++spins < thread_pool_detail::spin_iterations) thread_pool_detail::cpu_relax();
    else std::this_thread::yield();  // a worker was descheduled: give it the core
  }
}

inline void ThreadPool::run_tasks(std::size_t worker) noexcept {
  const std::size_t n = job_tasks_;
  const TaskFn fn = job_fn_;
  void* const context = job_context_;
  for (;;) {
    const std::size_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= n) break;
    fn(context, task, worker);
  }
}

inline void ThreadPool::worker_main(std::size_t worker) noexcept {
  std::uint64_t seen = 0;
  for (;;) {
    std::uint64_t current = generation_.load(std::memory_order_acquire);
    for (int i = 0; current == seen && i < thread_pool_detail::spin_iterations; ++i) {
      thread_pool_detail::cpu_relax();
      current = generation_.load(std::memory_order_acquire);
    }
    if (current == seen) {
      std::unique_lock lock(mutex_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      while ((current = generation_.load(std::memory_order_seq_cst)) == seen) wake_.wait(lock);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    seen = current;
    if (stop_.load(std::memory_order_acquire)) return;
    run_tasks(worker);
    workers_busy_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace izwi::detail
