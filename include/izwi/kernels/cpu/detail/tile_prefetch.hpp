#pragma once
// How the GEMV tiles (matmul_kernels.hpp's dense tile, matmul_q8_kernels.hpp's
// AVX2 Q8_0 tile) prefetch the weight rows of the tile after theirs.
//
// A tile reads its C weight rows side by side: C short streams (2 KB for
// 1024 f16 values) that the hardware prefetchers pick up late. The next
// tile's rows follow the current ones in memory, so a tile of at most
// tile_prefetch_ascending_max_bytes prefetches them as one ascending stream, a
// cache line for every cache line it reads, one tile ahead; a larger tile
// prefetches the same offset of each of the next rows, as it reads its own.
// On the 2-vCPU AMD EPYC (two SMT siblings of one Zen 3 core), as
// indications from a machine at a load of 0.5-1.3: a read-only model of the
// dense loop read 4 side-by-side rows at 22-25 GB/s with 2 threads, one
// sequential buffer at 28-35, and the side-by-side rows with the ascending
// prefetch at 28-31; with rows of k = 3072 in F16 (24 KiB tiles, about the
// L1) the ascending stream lost 15-25% in the kernel benchmark, so those
// keep the per-row prefetch. Idle, beside llama.cpp, batch-1 decode at 2
// threads went from 0.88-0.98x to 1.16x in F16 and from 1.12x to 1.45x in
// Q8_0 (docs/benchmarks.md). Prefetches change no arithmetic.

#include <algorithm>
#include <cstddef>

#include "izwi/kernels/cpu/matmul.hpp"
#include "izwi/kernels/cpu/detail/simd.hpp"

namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT {

inline constexpr std::size_t tile_prefetch_ascending_max_bytes = 8192;

/// The next tile's rows as one ascending stream: `StepBytes` read by the
/// tile per step, as many prefetched per step from where the last step
/// stopped. Past the matrix's last row (`bytes` 0, or the stream done) it
/// prefetches `fallback` (a line the tile reads anyway).
template <std::size_t StepBytes>
struct AscendingPrefetch {
  const std::byte* next = nullptr;  // the next tile's first row
  std::size_t bytes = 0;            // its rows' bytes (0: none)
  const std::byte* fallback = nullptr;

  /// The tile's `count` rows starting at n; the next tile's (up to `count`) start at n + `cols`.
  AscendingPrefetch(const WeightMatrix& w, std::size_t n, std::size_t cols, std::size_t count) noexcept
      : next(n + cols < w.rows ? w.row(n + cols) : nullptr),
        bytes(n + cols < w.rows ? std::min(count, w.rows - n - cols) * w.row_bytes() : 0),
        fallback(w.row(n)) {}

  /// Step `s` of the tile (0, 1, ...).
  void step(std::size_t s) const noexcept {
    constexpr std::size_t lines = (StepBytes + 63) / 64;
    for (std::size_t l = 0; l < lines; ++l) {
      const std::size_t at = s * StepBytes + 64 * l;
      __builtin_prefetch(at < bytes ? next + at : fallback);
    }
  }
};

/// Whether a tile of `count` rows of w takes the ascending prefetch.
inline bool tile_prefetch_ascending(const WeightMatrix& w, std::size_t count) noexcept {
  return count * w.row_bytes() <= tile_prefetch_ascending_max_bytes;
}

}  // namespace izwi::kernels::cpu::detail::inline IZWI_KERNELS_VARIANT
