#pragma once
// The row-wise kernels of izwi/kernels/cpu/elementwise.hpp, written once over
// the SIMD architecture (see simd.hpp); reached through dispatch.hpp.

#include <cassert>
#include <cmath>
#include <cstddef>
#include <limits>

#include "izwi/kernels/cpu/detail/simd.hpp"

namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT {

template <class Arch>
inline void rms_norm_row(const float* x, std::size_t n, const float* weight, float eps, float* y) noexcept {
  using S = Simd<Arch>;
  constexpr std::size_t L = S::lanes;
  // Sum of squares in float like the reference (HF computes in float32), in
  // several lanes, which only makes it more accurate.
  const float mean_square = dot<Arch>(x, x, n) / static_cast<float>(n);
  const float inv = 1.0f / std::sqrt(mean_square + eps);
  const auto vinv = S::broadcast(inv);
  std::size_t i = 0;
  for (; i + L <= n; i += L) S::store(y + i, S::load(x + i) * vinv * S::load(weight + i));
  for (; i < n; ++i) y[i] = x[i] * inv * weight[i];
}

template <class Arch>
inline void rms_norm(const float* x, std::size_t ldx, std::size_t rows, std::size_t n, const float* weight, float eps,
                     float* y, std::size_t ldy) noexcept {
  for (std::size_t r = 0; r < rows; ++r) rms_norm_row<Arch>(x + r * ldx, n, weight, eps, y + r * ldy);
}

template <class Arch>
inline void rms_norm_heads(float* x, std::size_t ld, std::size_t rows, std::size_t heads, std::size_t head_dim,
                           const float* weight, float eps) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t h = 0; h < heads; ++h) {
      float* head = x + r * ld + h * head_dim;
      rms_norm_row<Arch>(head, head_dim, weight, eps, head);
    }
}

template <class Arch>
inline void silu_mul(const float* gate, const float* up, float* out, std::size_t n) noexcept {
  using S = Simd<Arch>;
  constexpr std::size_t L = S::lanes;
  const auto one = S::broadcast(1.0f);
  std::size_t i = 0;
  for (; i + L <= n; i += L) {
    const auto g = S::load(gate + i);
    S::store(out + i, g / (one + S::exp(-g)) * S::load(up + i));
  }
  for (; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

template <class Arch>
inline void softmax(float* x, std::size_t n) noexcept {
  using S = Simd<Arch>;
  constexpr std::size_t L = S::lanes;
  if (n == 0) return;
  float m = -std::numeric_limits<float>::infinity();
  std::size_t i = 0;
  if (n >= L) {
    auto vm = S::load(x);
    for (i = L; i + L <= n; i += L) vm = S::max(vm, S::load(x + i));
    m = S::max_element(vm);
  }
  for (; i < n; ++i) m = std::max(m, x[i]);
  const auto vmax = S::broadcast(m);
  auto vsum = S::zero();
  for (i = 0; i + L <= n; i += L) {
    const auto e = S::exp(S::load(x + i) - vmax);
    S::store(x + i, e);
    vsum = vsum + e;
  }
  float sum = S::sum(vsum);
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    sum += x[i];
  }
  const auto vinv = S::broadcast(1.0f / sum);
  for (i = 0; i + L <= n; i += L) S::store(x + i, S::load(x + i) * vinv);
  for (; i < n; ++i) x[i] *= 1.0f / sum;
}

template <class Arch>
inline void add_inplace(float* y, const float* x, std::size_t n) noexcept {
  using S = Simd<Arch>;
  constexpr std::size_t L = S::lanes;
  std::size_t i = 0;
  for (; i + L <= n; i += L) S::store(y + i, S::load(y + i) + S::load(x + i));
  for (; i < n; ++i) y[i] += x[i];
}

// ---- Whisper's row ops (layer norm with bias, exact GELU) ----

/// One row of LayerNorm: (x - mean) / sqrt(var + eps) * weight + bias, the
/// mean and the (biased) variance in two passes, each summed in lanes.
template <class Arch>
inline void layer_norm_row(const float* x, std::size_t n, const float* weight, const float* bias, float eps,
                           float* y) noexcept {
  using S = Simd<Arch>;
  constexpr std::size_t L = S::lanes;
  auto vsum = S::zero();
  std::size_t i = 0;
  for (; i + L <= n; i += L) vsum = vsum + S::load(x + i);
  float sum = S::sum(vsum);
  for (; i < n; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(n);
  const auto vmean = S::broadcast(mean);
  auto vsq = S::zero();
  for (i = 0; i + L <= n; i += L) {
    const auto d = S::load(x + i) - vmean;
    vsq = S::fma(d, d, vsq);
  }
  float sq = S::sum(vsq);
  for (; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
  const float inv = 1.0f / std::sqrt(sq / static_cast<float>(n) + eps);
  const auto vinv = S::broadcast(inv);
  for (i = 0; i + L <= n; i += L)
    S::store(y + i, S::fma((S::load(x + i) - vmean) * vinv, S::load(weight + i), S::load(bias + i)));
  for (; i < n; ++i) y[i] = (x[i] - mean) * inv * weight[i] + bias[i];
}

template <class Arch>
inline void layer_norm(const float* x, std::size_t ldx, std::size_t rows, std::size_t n, const float* weight,
                       const float* bias, float eps, float* y, std::size_t ldy) noexcept {
  for (std::size_t r = 0; r < rows; ++r) layer_norm_row<Arch>(x + r * ldx, n, weight, bias, eps, y + r * ldy);
}

/// x = x * Φ(x) = 0.5 x (1 + erf(x / √2)): torch's exact GELU, in place.
template <class Arch>
inline void gelu(float* x, std::size_t n) noexcept {
  using S = Simd<Arch>;
  constexpr std::size_t L = S::lanes;
  constexpr float inv_sqrt2 = 0.70710678118654752f;
  const auto half = S::broadcast(0.5f), one = S::broadcast(1.0f), k = S::broadcast(inv_sqrt2);
  std::size_t i = 0;
  for (; i + L <= n; i += L) {
    const auto v = S::load(x + i);
    S::store(x + i, half * v * (one + S::erf(v * k)));
  }
  for (; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * inv_sqrt2));
}

}  // namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT
