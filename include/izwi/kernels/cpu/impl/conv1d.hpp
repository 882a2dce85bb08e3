#pragma once
// Bodies of izwi/kernels/cpu/conv1d.hpp: the variant chosen at start-up
// (dispatch.hpp) runs the kernels of detail/conv1d_kernels.hpp.

#include <cassert>
#include <cstddef>
#include <vector>

#include "izwi/kernels/cpu/dispatch.hpp"

namespace izwi::kernels::cpu {

inline GemmPanels pack_gemm_panels(const WeightMatrix& w) {
  GemmPanels p{w.rows, w.cols, std::vector<float>((w.rows + gemm_panel_columns - 1) / gemm_panel_columns *
                                                  gemm_panel_columns * w.cols),
               {}};
  active_kernels().pack_gemm_panels(w, p.floats.data());
  return p;
}

inline void conv1d_gemm(const float* const* taps, std::size_t m, std::size_t kernel, std::size_t in,
                        const WeightMatrix& w, float* y, std::size_t ldy, ThreadPool& pool,
                        const GemmPanels* panels) noexcept {
  assert(w.cols == kernel * in && ldy >= w.rows);
  const bool use_panels = panels != nullptr && w.rows > conv1d_dot_max_outputs;
  assert(!use_panels || (panels->rows == w.rows && panels->cols == w.cols));
  assert(use_panels || w.data != nullptr);
  if (use_panels && !panels->bf16.empty()) {
    assert(conv1d_bf16_available());
    active_kernels().conv1d_gemm_bf16(taps, m, kernel, in, w.rows, panels->bf16.data(), y, ldy, pool);
    return;
  }
  active_kernels().conv1d_gemm(taps, m, kernel, in, w, use_panels ? panels->floats.data() : nullptr, y, ldy, pool);
}

inline bool conv1d_bf16_available() noexcept { return active_kernels().conv1d_gemm_bf16 != nullptr; }

inline GemmPanels pack_gemm_panels_bf16(const WeightMatrix& w) {
  assert(conv1d_bf16_available());
  constexpr std::size_t tile_k = 32;
  const std::size_t panels = (w.rows + gemm_panel_columns - 1) / gemm_panel_columns;
  GemmPanels p{w.rows, w.cols, {},
               std::vector<std::uint16_t>(panels * (w.cols + tile_k - 1) / tile_k * gemm_panel_columns * tile_k)};
  active_kernels().pack_gemm_panels_bf16(w, p.bf16.data());
  return p;
}

inline void snake_beta(const float* x, float* y, std::size_t rows, std::size_t channels, const float* bias,
                       const float* alpha_exp, const float* inv_beta) noexcept {
  active_kernels().snake_beta(x, y, rows, channels, bias, alpha_exp, inv_beta);
}

inline void transposed_conv_overlap_add(const float* products, std::size_t n, std::size_t kernel, std::size_t stride,
                                        std::size_t channels, const float* carry_in, const float* bias,
                                        std::size_t row_begin, std::size_t row_end, float* out,
                                        float* carry_out) noexcept {
  assert(stride >= 1 && kernel >= stride && row_end <= n * stride + (kernel - stride));
  active_kernels().transposed_conv_overlap_add(products, n, kernel, stride, channels, carry_in, bias, row_begin,
                                               row_end, out, carry_out);
}

}  // namespace izwi::kernels::cpu
