#pragma once
// Bodies of izwi/kernels/cpu/matmul.hpp: the variant chosen at start-up
// (dispatch.hpp) runs the kernels of detail/matmul_kernels.hpp.

#include <cassert>
#include <cstddef>

#include "izwi/kernels/cpu/dispatch.hpp"

namespace izwi::kernels::cpu {

inline void matmul(const float* x, std::size_t ldx, std::size_t m, const WeightMatrix& w, float* y, std::size_t ldy,
                   ThreadPool& pool) noexcept {
  assert(ldx >= w.cols && ldy >= w.rows);
  assert(w.dtype != DType::q8_0 || w.cols % q8_0_block_values == 0);
  active_kernels().matmul(x, ldx, m, w, y, ldy, pool);
}

inline void matmul(const float* x, std::size_t m, std::size_t k, const WeightMatrix& w, float* y,
                   ThreadPool& pool) noexcept {
  assert(k == w.cols);
  (void)k;
  matmul(x, w.cols, m, w, y, w.rows, pool);
}

inline void matmul_batch_invariant(const float* x, std::size_t m, std::size_t k, const WeightMatrix& w, float* y,
                                   ThreadPool& pool) noexcept {
  assert(k == w.cols);
  assert(w.dtype != DType::q8_0 || w.cols % q8_0_block_values == 0);
  (void)k;
  active_kernels().matmul_batch_invariant(x, w.cols, m, w, y, w.rows, pool);
}

inline void matmul_group(const float* x, std::size_t ldx, std::size_t m, std::span<const MatmulOutput> outputs,
                         ThreadPool& pool) noexcept {
  assert(outputs.size() <= matmul_group_max);
  for ([[maybe_unused]] const MatmulOutput& out : outputs)
    assert(out.weight->cols == outputs[0].weight->cols && ldx >= out.weight->cols && out.ldy >= out.weight->rows);
  active_kernels().matmul_group(x, ldx, m, outputs.data(), outputs.size(), pool);
}

inline void matmul_group_batch_invariant(const float* x, std::size_t ldx, std::size_t m,
                                         std::span<const MatmulOutput> outputs, ThreadPool& pool) noexcept {
  assert(outputs.size() <= matmul_group_max);
  for ([[maybe_unused]] const MatmulOutput& out : outputs)
    assert(out.weight->cols == outputs[0].weight->cols && ldx >= out.weight->cols && out.ldy >= out.weight->rows &&
           (out.weight->dtype != DType::q8_0 || out.weight->cols % q8_0_block_values == 0));
  active_kernels().matmul_group_batch_invariant(x, ldx, m, outputs.data(), outputs.size(), pool);
}

inline void dequantize_row(const WeightMatrix& w, std::size_t row, float* out) noexcept {
  active_kernels().dequantize_row(w, row, out);
}

}  // namespace izwi::kernels::cpu
