#pragma once
// The 16-bit float conversions of the io readers and writers: izwi's shared
// ones (izwi/core/half.hpp, round to nearest even, exact widening), under the
// names io code has used since the safetensors reader.

#include <izwi/core/half.hpp>

namespace izwi::io::detail {

using izwi::bf16_to_f32;
using izwi::f16_to_f32;
using izwi::f32_to_bf16;
using izwi::f32_to_f16;

}  // namespace izwi::io::detail
