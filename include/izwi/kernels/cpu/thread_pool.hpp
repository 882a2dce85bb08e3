#pragma once
// ThreadPool: the persistent workers the CPU kernels split their work over
// (below the executor, which owns one: kernels do not depend on executors).
//
//   ThreadPool pool;                       // hardware_concurrency() threads, caller included
//   pool.parallel_for(n_tasks, [&](std::size_t task, std::size_t worker) { ... });
//
// - `size()` threads take part in a parallel_for: the calling thread (worker
//   index 0) and size() - 1 pool threads (1 .. size()-1). Tasks are handed out
//   one at a time from a shared counter, so uneven tasks balance themselves;
//   callers cut their work into a few times more tasks than threads.
// - parallel_for returns when every task has run. The callable is invoked as
//   fn(task, worker) and must not throw (kernels report status, never throw).
// - Between calls the workers spin for a short while (a forward pass issues
//   hundreds of parallel_for calls back to back, and waking a sleeping thread
//   costs tens of microseconds), then sleep on a condition variable, so an
//   idle engine costs no CPU.
// - No allocation per call and no std::function: the callable is passed as a
//   plain function pointer plus a pointer to it.
// - One parallel_for at a time per pool, from one thread at a time; a task may
//   not call parallel_for on its own pool.
// - scratch(worker, bytes): a per-worker buffer (64-byte aligned) that grows
//   only when asked for more than it holds, so steady-state calls allocate
//   nothing. Valid until the next scratch() call for the same worker.
//   shared_scratch(bytes): the same for the caller, outside tasks.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <type_traits>
#include <vector>

namespace izwi::detail {

class ThreadPool {
 public:
  /// `num_threads` threads in all, caller included; 0 means
  /// std::thread::hardware_concurrency() (at least 1).
  explicit ThreadPool(std::size_t num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  std::size_t size() const noexcept { return num_threads_; }

  /// Runs fn(task, worker) for task in [0, n_tasks) on all threads.
  template <class Fn>
  void parallel_for(std::size_t n_tasks, Fn&& fn);

  /// Per-worker scratch, 64-byte aligned, at least `bytes` long.
  /// (Always inlined, as run() below and for its reason.)
  [[gnu::always_inline]] void* scratch(std::size_t worker, std::size_t bytes);
  /// Scratch for the calling thread outside tasks (distinct from scratch(0, ...)).
  [[gnu::always_inline]] void* shared_scratch(std::size_t bytes);

 private:
  using TaskFn = void (*)(void* context, std::size_t task, std::size_t worker);

  struct alignas(64) AlignedBuffer {
    struct Free {
      void operator()(std::byte* p) const noexcept { ::operator delete[](p, std::align_val_t{64}); }
    };
    std::unique_ptr<std::byte[], Free> data;
    std::size_t capacity = 0;
    [[gnu::always_inline]] void* reserve(std::size_t bytes);
  };

  // Always inlined into parallel_for: an out-of-line copy emitted by a kernel
  // variant compiled with AVX flags would be one symbol the linker could
  // pick for every caller (test/kernels/check_variant_symbols.cmake); GCC
  // stopped inlining it on its own once the avx512 variant had enough
  // parallel_for instantiations, and the same befell AlignedBuffer::reserve
  // when the vdpbf16ps kernels added their scratch calls.
  [[gnu::always_inline]] void run(std::size_t n_tasks, TaskFn fn, void* context);
  void run_tasks(std::size_t worker) noexcept;
  void worker_main(std::size_t worker) noexcept;

  std::size_t num_threads_ = 1;
  std::vector<std::thread> threads_;
  std::vector<AlignedBuffer> scratch_;  // size()+1: one per worker, then the shared one

  // The current job. Written by the caller before `generation_` is bumped
  // (release) and read by workers after they see the new generation (acquire).
  TaskFn job_fn_ = nullptr;
  void* job_context_ = nullptr;
  std::size_t job_tasks_ = 0;

  alignas(64) std::atomic<std::uint64_t> generation_{0};
  alignas(64) std::atomic<std::size_t> next_task_{0};
  alignas(64) std::atomic<std::size_t> workers_busy_{0};
  alignas(64) std::atomic<std::size_t> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace izwi::detail

#include "izwi/kernels/cpu/impl/thread_pool.hpp"
