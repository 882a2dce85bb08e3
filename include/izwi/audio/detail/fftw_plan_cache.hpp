#pragma once
// Process-wide cache of FFTW real-FFT plans, keyed by precision and size.
//
// FFTW's planner (every fftw(f)_plan_* and fftw(f)_destroy_plan call) must not
// run on two threads at once; executing a finished plan with the new-array
// execute functions may. So each plan is made once per size, on
// first use, under fftw_planner_mutex() and then shared read-only. They are never destroyed:
// the set of sizes a process uses is small and bounded (BasicRealFft's
// max_size caps each), and destroying plans during static destruction could
// race with threads that are still transforming.

#include <fftw3.h>

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <izwi/core/error.hpp>

namespace izwi::audio::detail {

/// The mutex every izwi call into FFTW's planner holds (both precisions).
inline std::mutex& fftw_planner_mutex() {
  static std::mutex planner_mutex;
  return planner_mutex;
}

/// FFTW's API for one precision: fftwf_* (libfftw3f) or fftw_* (libfftw3).
template <class Real>
struct fftw_api;

template <>
struct fftw_api<float> {
  using plan = fftwf_plan;
  using complex = fftwf_complex;
  static float* alloc_real(std::size_t n) { return fftwf_alloc_real(n); }
  static complex* alloc_complex(std::size_t n) { return fftwf_alloc_complex(n); }
  static void free(void* p) { fftwf_free(p); }
  static plan plan_r2c(int n, float* in, complex* out, unsigned flags) { return fftwf_plan_dft_r2c_1d(n, in, out, flags); }
  static plan plan_c2r(int n, complex* in, float* out, unsigned flags) { return fftwf_plan_dft_c2r_1d(n, in, out, flags); }
  static void destroy(plan p) { fftwf_destroy_plan(p); }
  static void execute_r2c(plan p, float* in, complex* out) { fftwf_execute_dft_r2c(p, in, out); }
  static void execute_c2r(plan p, complex* in, float* out) { fftwf_execute_dft_c2r(p, in, out); }
  static int alignment_of(float* p) { return fftwf_alignment_of(p); }
};

template <>
struct fftw_api<double> {
  using plan = fftw_plan;
  using complex = fftw_complex;
  static double* alloc_real(std::size_t n) { return fftw_alloc_real(n); }
  static complex* alloc_complex(std::size_t n) { return fftw_alloc_complex(n); }
  static void free(void* p) { fftw_free(p); }
  static plan plan_r2c(int n, double* in, complex* out, unsigned flags) { return fftw_plan_dft_r2c_1d(n, in, out, flags); }
  static plan plan_c2r(int n, complex* in, double* out, unsigned flags) { return fftw_plan_dft_c2r_1d(n, in, out, flags); }
  static void destroy(plan p) { fftw_destroy_plan(p); }
  static void execute_r2c(plan p, double* in, complex* out) { fftw_execute_dft_r2c(p, in, out); }
  static void execute_c2r(plan p, complex* in, double* out) { fftw_execute_dft_c2r(p, in, out); }
  static int alignment_of(double* p) { return fftw_alignment_of(p); }
};

/// Which of a size's four plans: direction x whether both arrays have the
/// alignment of fftw_malloc'd memory (FFTW's fast path) or may be merely
/// element-aligned (FFTW_UNALIGNED).
enum class real_fft_plan_kind { forward_aligned, forward_unaligned, inverse_aligned, inverse_unaligned };

/// The plans of one size, each made on its first use. Planning is lazy per
/// plan because FFTW_MEASURE (below) costs about 0.2 s per plan for Whisper's
/// n_fft = 400 in double (measured on 2 loaded EPYC cores): a caller that only
/// ever runs aligned forward transforms (the Whisper log-mel) pays for one
/// plan, not four. A slot is written once, under fftw_planner_mutex(), and
/// read lock-free afterwards.
template <class Real>
struct real_fft_plans {
  std::size_t size = 0;
  std::atomic<typename fftw_api<Real>::plan> slots[4] = {};
};

/// FFTW_MEASURE times a few candidate algorithms once per plan and keeps the
/// fastest for this machine; FFTW_ESTIMATE would only guess. Inverses keep
/// their input (FFTW_PRESERVE_INPUT), so callers may pass const spectra.
template <class Real>
typename fftw_api<Real>::plan make_real_fft_plan(std::size_t size, real_fft_plan_kind kind) {
  using api = fftw_api<Real>;
  const int n = static_cast<int>(size);
  Real* real = api::alloc_real(size);
  auto* complex = api::alloc_complex(size / 2 + 1);
  if (real == nullptr || complex == nullptr) {
    api::free(real);
    api::free(complex);
    throw izwi::error("FFT of size " + std::to_string(size) + ": out of memory for FFTW's planning buffers");
  }
  constexpr unsigned rigor = FFTW_MEASURE;
  typename api::plan plan = nullptr;
  switch (kind) {
    case real_fft_plan_kind::forward_aligned: plan = api::plan_r2c(n, real, complex, rigor); break;
    case real_fft_plan_kind::forward_unaligned: plan = api::plan_r2c(n, real, complex, rigor | FFTW_UNALIGNED); break;
    case real_fft_plan_kind::inverse_aligned:
      plan = api::plan_c2r(n, complex, real, rigor | FFTW_PRESERVE_INPUT);
      break;
    case real_fft_plan_kind::inverse_unaligned:
      plan = api::plan_c2r(n, complex, real, rigor | FFTW_PRESERVE_INPUT | FFTW_UNALIGNED);
      break;
  }
  api::free(real);
  api::free(complex);
  if (plan == nullptr) throw izwi::error("FFTW could not plan a real FFT of size " + std::to_string(size));
  return plan;
}

/// The cached plan set for `size` (its plans not yet made). The returned
/// reference stays valid for the life of the process.
template <class Real>
real_fft_plans<Real>& real_fft_plans_for(std::size_t size) {
  // Deliberately never destroyed (a heap object behind a static pointer): no
  // destructor runs at exit while other threads may still transform, and the
  // plans stay reachable, so leak checkers do not report them.
  static auto* const cache = new std::map<std::size_t, std::unique_ptr<real_fft_plans<Real>>>();
  std::lock_guard lock(fftw_planner_mutex());
  auto& slot = (*cache)[size];
  if (!slot) {
    slot = std::make_unique<real_fft_plans<Real>>();
    slot->size = size;
  }
  return *slot;
}

/// The plan of `kind` in `plans`, planned on first use (under the planner
/// mutex; once made, later calls from any thread only load it).
template <class Real>
typename fftw_api<Real>::plan real_fft_plan(real_fft_plans<Real>& plans, real_fft_plan_kind kind) {
  auto& slot = plans.slots[static_cast<std::size_t>(kind)];
  if (auto plan = slot.load(std::memory_order_acquire)) return plan;
  std::lock_guard lock(fftw_planner_mutex());
  auto plan = slot.load(std::memory_order_relaxed);
  if (plan == nullptr) {
    plan = make_real_fft_plan<Real>(plans.size, kind);
    slot.store(plan, std::memory_order_release);
  }
  return plan;
}

}  // namespace izwi::audio::detail
