#pragma once
// Bodies of include/izwi/io/quantize.hpp.
// Inline in header-only builds; compiled once, in <izwi/io/src.hpp>, under
// IZWI_SEPARATE_COMPILATION (see izwi/config.hpp).

#include <izwi/core/error.hpp>
#include <izwi/io/detail/half_float.hpp>

#include <cmath>
#include <cstring>
#include <string>

namespace izwi::io {

IZWI_DECL std::vector<std::byte> quantize_q8_0(std::span<const float> values) {
  if (values.size() % q8_0_block_values != 0)
    throw izwi::error("quantize_q8_0: " + std::to_string(values.size()) + " values, not a multiple of the 32-value block");
  const std::size_t blocks = values.size() / q8_0_block_values;
  std::vector<std::byte> out(blocks * q8_0_block_bytes);
  for (std::size_t b = 0; b < blocks; ++b) {
    const float* x = values.data() + b * q8_0_block_values;
    std::byte* block = out.data() + b * q8_0_block_bytes;
    float max_abs = 0.0f;
    for (std::size_t i = 0; i < q8_0_block_values; ++i) {
      if (!std::isfinite(x[i]))
        throw izwi::error("quantize_q8_0: value " + std::to_string(b * q8_0_block_values + i) + " is not finite");
      max_abs = std::fmax(max_abs, std::fabs(x[i]));
    }
    const float d = max_abs / 127.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    const std::uint16_t d_bits = detail::f32_to_f16(d);
    std::memcpy(block, &d_bits, 2);
    for (std::size_t i = 0; i < q8_0_block_values; ++i) {
      const auto q = static_cast<std::int8_t>(std::round(x[i] * inverse));
      std::memcpy(block + 2 + i, &q, 1);
    }
  }
  return out;
}

IZWI_DECL void dequantize_q8_0(std::span<const std::byte> blocks, std::span<float> out) {
  if (blocks.size() % q8_0_block_bytes != 0 || out.size() != blocks.size() / q8_0_block_bytes * q8_0_block_values)
    throw izwi::error("dequantize_q8_0: " + std::to_string(blocks.size()) + " bytes of blocks do not make " +
                      std::to_string(out.size()) + " values");
  const std::size_t count = blocks.size() / q8_0_block_bytes;
  for (std::size_t b = 0; b < count; ++b) {
    const std::byte* block = blocks.data() + b * q8_0_block_bytes;
    std::uint16_t d_bits;
    std::memcpy(&d_bits, block, 2);
    const float d = detail::f16_to_f32(d_bits);
    float* y = out.data() + b * q8_0_block_values;
    for (std::size_t i = 0; i < q8_0_block_values; ++i) {
      std::int8_t q;
      std::memcpy(&q, block + 2 + i, 1);
      y[i] = static_cast<float>(q) * d;
    }
  }
}

}  // namespace izwi::io
