#pragma once
// Cutting one windowed frame out of a signal that is (virtually) padded:
// frames in the interior read the signal directly; only the few frames that
// overhang an edge gather through the padding rule, so no padded copy of the
// whole signal is ever made.

#include <cstddef>
#include <cstdint>
#include <span>

namespace izwi::audio::detail {

/// Index of sample i of the infinitely mirror-extended signal of length n
/// (numpy.pad mode "reflect": mirror without repeating the edge sample, and
/// keep mirroring when the padding is longer than the signal). n >= 1.
inline std::size_t reflect_index(std::ptrdiff_t i, std::size_t n) noexcept {
  if (n == 1) return 0;
  const auto period = static_cast<std::ptrdiff_t>(2 * (n - 1));
  std::ptrdiff_t r = i % period;
  if (r < 0) r += period;
  if (r >= static_cast<std::ptrdiff_t>(n)) r = period - r;
  return static_cast<std::size_t>(r);
}

/// frame[j] = window[j] * x[start + j] for j < window.size(). x is `signal`
/// followed by zeros up to `logical_length` (>= signal.size(); Whisper's
/// pad_or_trim without the copy), then extended on both sides by mirroring
/// (reflect) or by zeros (!reflect); `start` may be negative or run past the
/// end. Returns false, leaving `frame` unspecified, when every sample the
/// frame reads is one of those zeros (the caller can skip its FFT).
/// The frame is computed in the window's precision W (float or double).
template <class W>
bool windowed_frame(std::span<const float> signal, std::size_t logical_length, std::ptrdiff_t start, bool reflect,
                    std::span<const W> window, W* frame) noexcept {
  const std::size_t n_fft = window.size();
  const auto n = static_cast<std::ptrdiff_t>(signal.size());
  const auto length = static_cast<std::ptrdiff_t>(logical_length);
  const auto end = start + static_cast<std::ptrdiff_t>(n_fft);
  const float* x = signal.data();
  const W* w = window.data();
  if (start >= 0 && end <= n) {
    // Interior frame, the common case. Unrolled by four over __restrict
    // pointers (the frame never aliases the signal or window) so that GCC's
    // and Clang's straight-line vectoriser turns it into SIMD even at -O2.
    const float* __restrict src = x + start;
    const W* __restrict win = w;
    W* __restrict dst = frame;
    std::size_t j = 0;
    for (; j + 4 <= n_fft; j += 4) {
      dst[j] = win[j] * static_cast<W>(src[j]);
      dst[j + 1] = win[j + 1] * static_cast<W>(src[j + 1]);
      dst[j + 2] = win[j + 2] * static_cast<W>(src[j + 2]);
      dst[j + 3] = win[j + 3] * static_cast<W>(src[j + 3]);
    }
    for (; j < n_fft; ++j) dst[j] = win[j] * static_cast<W>(src[j]);
    return true;
  }
  if (n == 0) return false;
  // Entirely in the zero extension: inside [n, length), and any part past the
  // end mirrors back into [n, length) as well (or is zero padding).
  if (start >= n && (end <= length || !reflect || 2 * (length - 1) - (end - 1) >= n)) return false;
  for (std::size_t j = 0; j < n_fft; ++j) {
    std::ptrdiff_t i = start + static_cast<std::ptrdiff_t>(j);
    if (i < 0 || i >= length) {
      if (!reflect) {
        frame[j] = W(0);
        continue;
      }
      i = static_cast<std::ptrdiff_t>(reflect_index(i, logical_length));
    }
    frame[j] = i < n ? w[j] * static_cast<W>(x[i]) : W(0);
  }
  return true;
}

}  // namespace izwi::audio::detail
