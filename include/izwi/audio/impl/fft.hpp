#pragma once
// Bodies of izwi/audio/fft.hpp.

#include <fftw3.h>

#include <cstring>
#include <new>
#include <string>
#include <utility>

#include <izwi/audio/detail/fftw_plan_cache.hpp>
#include <izwi/core/error.hpp>

namespace izwi::audio {

template <class Real>
BasicRealFft<Real>::BasicRealFft(std::size_t size) : size_(size), plans_(nullptr) {
  if (size == 0 || size > max_size) {
    throw izwi::invalid_argument("n_fft", "FFT size must be between 1 and " + std::to_string(max_size) +
                                              ", got " + std::to_string(size));
  }
  plans_ = &detail::real_fft_plans_for<Real>(size);
}

template <class Real>
void BasicRealFft<Real>::forward(std::span<const Real> in, std::span<std::complex<Real>> out) const {
  using api = detail::fftw_api<Real>;
  if (in.size() != size_ || out.size() != bins()) {
    throw izwi::invalid_argument("n_fft", "real FFT forward of size " + std::to_string(size_) + " needs " +
                                              std::to_string(size_) + " samples and " + std::to_string(bins()) +
                                              " output bins, got " + std::to_string(in.size()) + " and " +
                                              std::to_string(out.size()));
  }
  auto& plans = *static_cast<detail::real_fft_plans<Real>*>(plans_);
  // FFTW's execute functions take non-const pointers; an out-of-place r2c
  // transform only reads its input.
  Real* src = const_cast<Real*>(in.data());
  auto* dst = reinterpret_cast<typename api::complex*>(out.data());
  const bool aligned = api::alignment_of(src) == 0 && api::alignment_of(reinterpret_cast<Real*>(dst)) == 0;
  using kind = detail::real_fft_plan_kind;
  api::execute_r2c(detail::real_fft_plan(plans, aligned ? kind::forward_aligned : kind::forward_unaligned), src, dst);
}

template <class Real>
void BasicRealFft<Real>::inverse(std::span<const std::complex<Real>> in, std::span<Real> out) const {
  using api = detail::fftw_api<Real>;
  if (in.size() != bins() || out.size() != size_) {
    throw izwi::invalid_argument("n_fft", "real FFT inverse of size " + std::to_string(size_) + " needs " +
                                              std::to_string(bins()) + " input bins and " + std::to_string(size_) +
                                              " output samples, got " + std::to_string(in.size()) + " and " +
                                              std::to_string(out.size()));
  }
  auto& plans = *static_cast<detail::real_fft_plans<Real>*>(plans_);
  // Planned with FFTW_PRESERVE_INPUT: the spectrum is read, not overwritten.
  auto* src = reinterpret_cast<typename api::complex*>(const_cast<std::complex<Real>*>(in.data()));
  Real* dst = out.data();
  const bool aligned = api::alignment_of(reinterpret_cast<Real*>(src)) == 0 && api::alignment_of(dst) == 0;
  using kind = detail::real_fft_plan_kind;
  api::execute_c2r(detail::real_fft_plan(plans, aligned ? kind::inverse_aligned : kind::inverse_unaligned), src, dst);
  const Real scale = Real(1) / static_cast<Real>(size_);
  for (Real& x : out) x *= scale;
}

template <class T>
FftBuffer<T>::FftBuffer(std::size_t count) : size_(count) {
  if (count == 0) return;
  data_ = static_cast<T*>(::operator new(count * sizeof(T), std::align_val_t{fft_buffer_alignment}));
  std::memset(static_cast<void*>(data_), 0, count * sizeof(T));
}

template <class T>
FftBuffer<T>::FftBuffer(FftBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

template <class T>
FftBuffer<T>& FftBuffer<T>::operator=(FftBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

template <class T>
FftBuffer<T>::~FftBuffer() {
  release();
}

template <class T>
void FftBuffer<T>::release() noexcept {
  if (data_ != nullptr) ::operator delete(static_cast<void*>(data_), std::align_val_t{fft_buffer_alignment});
  data_ = nullptr;
}

}  // namespace izwi::audio
