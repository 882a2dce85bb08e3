#pragma once
// Q8_0, the 8-bit block quantization of GGUF/ggml (and of izwi's CPU kernels).
//
// A block holds 32 consecutive values of a row in 34 bytes:
//   bytes 0-1   d, the scale, an IEEE binary16 (little-endian)
//   bytes 2-33  q[0..31], signed 8-bit
// and stands for x[i] = q[i] * d. Quantization follows ggml's reference
// (quantize_row_q8_0_ref): d = max|x| / 127, q[i] = round(x[i] / d) (halves
// away from zero), d then stored as binary16. So each value is off by at most
// d/2 from rounding plus |q| * (the binary16 rounding error of d), i.e.
// |x - x'| <= max|x| * (0.5/127 + 2^-11) over its block; q8_0_error_bound()
// gives that number for a block.
//
// Files written with quantize_q8_0() hold the same bytes llama.cpp's own
// quantizer would write for the same float32 input.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace izwi::io {

inline constexpr std::size_t q8_0_block_values = 32;
inline constexpr std::size_t q8_0_block_bytes = 34;

/// Quantizes `values` (a multiple of 32 long, all finite; izwi::error
/// otherwise) into values.size() / 32 blocks.
std::vector<std::byte> quantize_q8_0(std::span<const float> values);

/// Dequantizes whole blocks: `out.size()` must be 32 x the block count of
/// `blocks` (izwi::error otherwise).
void dequantize_q8_0(std::span<const std::byte> blocks, std::span<float> out);

/// The largest |x - dequantize(quantize(x))| the format allows for a block
/// whose largest magnitude is `block_max_abs`.
constexpr double q8_0_error_bound(double block_max_abs) noexcept {
  return block_max_abs * (0.5 / 127.0 + 1.0 / 2048.0) * 1.0001;
}

}  // namespace izwi::io

#if !defined(IZWI_SEPARATE_COMPILATION)
#include <izwi/config.hpp>
#include <izwi/io/impl/quantize.ipp>
#endif
