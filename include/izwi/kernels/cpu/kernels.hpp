#pragma once
// All CPU kernels: matmul (GEMV/GEMM), row-wise ops, rotary embedding, paged
// attention. See docs/kernels.md.

#include "izwi/kernels/cpu/attention.hpp"
#include "izwi/kernels/cpu/elementwise.hpp"
#include "izwi/kernels/cpu/matmul.hpp"
#include "izwi/kernels/cpu/rotary.hpp"
