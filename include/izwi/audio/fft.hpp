#pragma once
// Real-input FFTs of any size (400, 512, 1280 and friends), backed by FFTW3 in
// single precision (libfftw3f) or double precision (libfftw3).
//
// Why FFTW: it is maintained, it is the fastest portable FFT for arbitrary
// sizes including non-powers of two (Whisper's n_fft is 400 = 2^4 * 5^2), and
// Debian ships it (libfftw3-dev); pocketfft, the other common choice, has no
// Debian package.
//
// Threads: FFTW's planner is not thread-safe, its executor is. izwi creates
// every plan under one process-wide mutex (detail::fftw_planner_mutex(), which
// any other izwi code calling the FFTW planner must also hold) and caches plans
// per size for the life of the process; transforms then run through FFTW's
// new-array execute functions, which may be called from many threads at once.
// The first transform of a new size, direction and alignment pays for that
// one plan (FFTW_MEASURE: about 0.2 s for n = 400 in double, measured on a
// loaded EPYC; far more than "a few milliseconds"); later ones, from any
// thread, do not. Plans are made lazily, one per (direction, alignment), so a
// forward-only caller such as the Whisper log-mel plans once, not four times.
//
// Precision: float is the default and what the STFT uses. Whisper's log-mel
// frontend transforms in double: its log10 keeps 8 decades of power, and near
// that floor a float FFT's rounding (about 1e-7 of the frame's largest bin)
// moves values by up to ~1e-4 in log-mel units, the tolerance the frontend is
// held to against float64 references.

#include <complex>
#include <cstddef>
#include <span>
#include <type_traits>

namespace izwi::audio {

/// The forward and inverse real FFT of one size, in precision Real (float or
/// double).
///
/// Cheap to construct and copy: it points into the process-wide plan cache.
/// All member functions are const and safe to call concurrently.
template <class Real>
class BasicRealFft {
  static_assert(std::is_same_v<Real, float> || std::is_same_v<Real, double>,
                "basic_real_fft: FFTW is used in float or double precision");

 public:
  /// Largest size accepted (2^24): plans are cached for the life of the
  /// process, so sizes must not come unchecked from a request.
  static constexpr std::size_t max_size = std::size_t{1} << 24;

  /// Transforms of `size` real samples, through the process-wide plan cache
  /// (plans are made on first use by forward()/inverse(), which throw
  /// izwi::error when FFTW cannot plan). Throws izwi::invalid_argument("n_fft")
  /// when `size` is 0 or above max_size.
  explicit BasicRealFft(std::size_t size);

  /// Number of real samples a transform takes.
  std::size_t size() const noexcept { return size_; }
  /// Number of complex bins it yields: size / 2 + 1 (DC to Nyquist).
  std::size_t bins() const noexcept { return size_ / 2 + 1; }

  /// out[k] = sum_n in[n] * exp(-2*pi*i*k*n/size) for k < bins(); unscaled,
  /// like numpy.fft.rfft. `in` must hold size() samples and `out` bins()
  /// values (checked; izwi::invalid_argument otherwise). Buffers need no
  /// particular alignment, but 64-byte-aligned ones (FftBuffer) take FFTW's
  /// fastest SIMD path.
  void forward(std::span<const Real> in, std::span<std::complex<Real>> out) const;

  /// The inverse of forward(): out[n] = (1/size) * sum over the Hermitian
  /// extension of `in`, like numpy.fft.irfft, so inverse(forward(x)) == x up to
  /// rounding. The imaginary parts of the DC bin (and of the Nyquist bin for
  /// even sizes) are ignored, as a real signal's spectrum has none. `in` is
  /// left unchanged.
  void inverse(std::span<const std::complex<Real>> in, std::span<Real> out) const;

 private:
  std::size_t size_;
  void* plans_;  // detail::real_fft_plans<Real>, owned by the plan cache
};

using RealFft = BasicRealFft<float>;
using RealFftDouble = BasicRealFft<double>;

/// Alignment of FftBuffer storage: at least what FFTW's widest SIMD code
/// (AVX-512) wants, in either precision.
inline constexpr std::size_t fft_buffer_alignment = 64;

/// A zero-filled heap buffer of T (trivially copyable) aligned to
/// fft_buffer_alignment, for the working arrays of hot loops: FFTW takes its
/// fastest code path on such arrays. Move-only.
template <class T>
class FftBuffer {
 public:
  FftBuffer() = default;
  explicit FftBuffer(std::size_t count);
  FftBuffer(FftBuffer&& other) noexcept;
  FftBuffer& operator=(FftBuffer&& other) noexcept;
  FftBuffer(const FftBuffer&) = delete;
  FftBuffer& operator=(const FftBuffer&) = delete;
  ~FftBuffer();

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  std::span<T> span() noexcept { return {data_, size_}; }
  std::span<const T> span() const noexcept { return {data_, size_}; }

 private:
  void release() noexcept;

  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace izwi::audio

#include <izwi/audio/impl/fft.hpp>
