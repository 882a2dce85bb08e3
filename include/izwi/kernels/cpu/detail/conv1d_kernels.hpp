#pragma once
// The kernels of izwi/kernels/cpu/conv1d.hpp, written once over the SIMD
// architecture (see simd.hpp); reached through dispatch.hpp.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>

#include "izwi/kernels/cpu/detail/simd.hpp"

namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT {

/// sin of every lane: xsimd's vectorised sine (Cody-Waite reduction and a
/// minimax polynomial, within a few ulp of libm), libm's on the scalar path.
template <class Arch>
inline typename Simd<Arch>::vec sin_each(typename Simd<Arch>::vec v) noexcept {
  if constexpr (std::is_same_v<Arch, ScalarArch>) return std::sin(v);
  else return xsimd::sin(v);
}

template <class Arch>
inline void snake_beta(const float* x, float* y, std::size_t rows, std::size_t channels, const float* bias,
                       const float* alpha_exp, const float* inv_beta) noexcept {
  using S = Simd<Arch>;
  constexpr std::size_t L = S::lanes;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * channels;
    float* yr = y + r * channels;
    std::size_t c = 0;
    for (; c + L <= channels; c += L) {
      auto v = S::load(xr + c);
      if (bias != nullptr) v = v + S::load(bias + c);
      const auto s = sin_each<Arch>(v * S::load(alpha_exp + c));
      S::store(yr + c, S::fma(S::load(inv_beta + c), s * s, v));
    }
    for (; c < channels; ++c) {
      const float v = bias != nullptr ? xr[c] + bias[c] : xr[c];
      const float s = std::sin(v * alpha_exp[c]);
      yr[c] = v + inv_beta[c] * (s * s);
    }
  }
}

template <class Arch>
inline void transposed_conv_overlap_add(const float* products, std::size_t n, std::size_t kernel, std::size_t stride,
                                        std::size_t channels, const float* carry_in, const float* bias,
                                        std::size_t row_begin, std::size_t row_end, float* out,
                                        float* carry_out) noexcept {
  using S = Simd<Arch>;
  constexpr std::size_t L = S::lanes;
  const std::size_t emitted = n * stride, carried = kernel - stride;
  for (std::size_t u = row_begin; u < row_end; ++u) {
    const bool is_output = u < emitted;
    float* dst = is_output ? out + u * channels : carry_out + (u - emitted) * channels;
    const float* carry = u < carried ? carry_in + u * channels : nullptr;
    const float* add_bias = is_output ? bias : nullptr;
    // Taps reaching row u: t·S + j == u with 0 <= j < K, 0 <= t < n.
    const std::size_t t_first = u + 1 > kernel ? (u + 1 - kernel + stride - 1) / stride : 0;
    const std::size_t t_end = std::min(n, u / stride + 1);
    std::size_t c = 0;
    for (; c + L <= channels; c += L) {
      auto acc = carry != nullptr ? S::load(carry + c) : S::zero();
      for (std::size_t t = t_first; t < t_end; ++t)
        acc = acc + S::load(products + (t * kernel + (u - t * stride)) * channels + c);
      if (add_bias != nullptr) acc = acc + S::load(add_bias + c);
      S::store(dst + c, acc);
    }
    for (; c < channels; ++c) {
      float acc = carry != nullptr ? carry[c] : 0.0f;
      for (std::size_t t = t_first; t < t_end; ++t) acc += products[(t * kernel + (u - t * stride)) * channels + c];
      if (add_bias != nullptr) acc += add_bias[c];
      dst[c] = acc;
    }
  }
}

}  // namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT
