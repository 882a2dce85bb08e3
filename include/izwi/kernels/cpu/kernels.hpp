#pragma once
// All CPU kernels: matmul (GEMV/GEMM), row-wise ops, rotary embedding, paged
// attention, audio-decoder activations and overlap-add. See docs/kernels.md.

#include "izwi/kernels/cpu/attention.hpp"
#include "izwi/kernels/cpu/conv1d.hpp"
#include "izwi/kernels/cpu/elementwise.hpp"
#include "izwi/kernels/cpu/matmul.hpp"
#include "izwi/kernels/cpu/rotary.hpp"
