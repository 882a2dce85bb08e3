#pragma once
// Element types of weights, activations and KV-cache tensors.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace izwi {

enum class DType : std::uint8_t { f32, f16, bf16, q8_0 };

/// Bytes per element for the plain floating types. Block-quantized types
/// (q8_0: 32 weights in 34 bytes) have no per-element size; they report 0 and
/// are sized through their block layout.
constexpr std::size_t dtype_size(DType t) noexcept {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::q8_0: return 0;
  }
  return 0;
}

constexpr std::string_view to_string(DType t) noexcept {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::q8_0: return "q8_0";
  }
  return "unknown";
}

}  // namespace izwi
