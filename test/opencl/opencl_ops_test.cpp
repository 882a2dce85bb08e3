// Every OpenClOps operation against the CPU backend's (detail::CpuOps) on the
// same random inputs, on the first OpenCL device (PoCL in CI). Tolerances are
// relative to the largest output value: 1e-5 where only the summation order
// differs (f32 math on both sides, weights widened to f32 the same way), 1e-3
// for an f16 or bf16 KV cache (both round K/V to the same type, RNE, but may
// still differ in one ulp on ties computed from slightly different inputs).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <utility>
#include <vector>

#include "izwi/executor/detail/cpu_ops.hpp"
#include "izwi/kernels/cpu/dispatch.hpp"
#include "izwi/kernels/cpu/thread_pool.hpp"
#include "izwi/kernels/opencl/ops.hpp"
#include "izwi/kernels/opencl/unified_memory.hpp"
#include "izwi/kv_cache/device.hpp"
#include "izwi/kv_cache/paged.hpp"
#include "izwi/kv_cache/unified.hpp"
#include "kernels/kernel_test_util.hpp"
#include "opencl/opencl_test_util.hpp"

using namespace izwi;
using izwi::testing::opencl_context;
using izwi::testing::relative_error;

namespace {

constexpr double f32_tolerance = 1e-5;

struct Backends {
  izwi::detail::ThreadPool pool{2};
  izwi::detail::CpuOps cpu{pool};
  opencl::OpenClOps gpu;
  explicit Backends(std::shared_ptr<opencl::Context> ctx) : gpu(std::move(ctx)) {}
};

}  // namespace

TEST_CASE("OpenClOps matmul and embed equal the CPU's for every weight dtype", "[opencl][ops]") {
  auto ctx = opencl_context();
  if (!ctx) return;
  Backends b(ctx);
  for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::q8_0}) {
    const std::size_t rows = 100, cols = 96;  // rows not a multiple of the 64-wide launch
    const auto w = kernel_test::make_weights(dtype, rows, cols, 11);
    for (std::size_t m : {1u, 3u, 20u}) {  // GEMV, batched GEMV, GEMM paths on the CPU
      INFO("dtype " << to_string(dtype) << " m " << m);
      const auto x = kernel_test::random_floats(m * cols, static_cast<std::uint32_t>(m));
      std::vector<float> expected(m * rows), actual(m * rows, -1.0f);
      b.cpu.matmul(x.data(), m, w.matrix, expected.data());
      b.gpu.matmul(x.data(), m, w.matrix, actual.data());
      // Q8_0 on the CPU's GEMV paths (up to 16 rows, by variant) quantizes the activations to
      // 8-bit blocks too (integer dot products, as llama.cpp's CPU backend):
      // up to half a step of 1/127 of a block's largest value per activation
      // (measured 0.44% here); the GPU widens the weights and stays in f32.
      // BF16 from KernelTable::bf16_rounded_min_rows rows ("avx512" on a CPU
      // with AMX-BF16 or AVX512_BF16) rounds the activations to bf16 (at most
      // 2^-9 relative per value; measured 0.13% here on AMX).
      const std::size_t rounded_rows = kernels::cpu::active_kernels().bf16_rounded_min_rows;
      const bool cpu_quantizes = (dtype == DType::q8_0 && m <= kernels::cpu::gemv_max_rows) ||
                                 (dtype == DType::bf16 && rounded_rows != 0 && m >= rounded_rows);
      CHECK(relative_error(actual, expected) <= (cpu_quantizes ? 1e-2 : f32_tolerance));
    }
    const std::vector<TokenId> tokens = {0, 99, 42, 42, 7};
    std::vector<float> expected(tokens.size() * cols), actual(tokens.size() * cols);
    b.cpu.embed(w.matrix, tokens, expected.data());
    b.gpu.embed(w.matrix, tokens, actual.data());
    CHECK(actual == expected);  // a widening copy: exact
    const std::vector<TokenId> bad = {3, 100};
    CHECK_THROWS_AS(b.gpu.embed(w.matrix, bad, actual.data()), invalid_argument);
  }
}

TEST_CASE("every OpenCL matmul kernel equals the CPU's at every M and ragged N, K", "[opencl][ops][matmul]") {
  auto ctx = opencl_context();
  if (!ctx) return;
  Backends b(ctx);
  using Kernel = opencl::OpenClOps::MatmulKernel;
  INFO("device " << ctx->description() << (ctx->has_subgroups() ? ", with sub-groups" : ", no sub-groups"));
  // The automatic choice: the GEMV while its row sums fit, then the tiled GEMM
  // (PoCL's work-groups hold its 8x8 items; a device whose cannot gets the naive one).
  for (std::size_t m : {1u, 8u}) CHECK(b.gpu.matmul_kernel_for(m, DType::f16) == Kernel::gemv);
  CHECK(b.gpu.matmul_kernel_for(9, DType::q8_0) == Kernel::tiled);
  for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::q8_0}) {
    // N odd and not a multiple of the 32-wide tile; K odd (Q8_0: whole
    // blocks) and past one tile step, one short of the GEMV's work-group.
    const std::size_t rows = 67;
    for (std::size_t cols : dtype == DType::q8_0 ? std::vector<std::size_t>{96, 2080} : std::vector<std::size_t>{75, 257}) {
      const auto w = kernel_test::make_weights(dtype, rows, cols, static_cast<std::uint32_t>(cols));
      for (std::size_t m : {1u, 2u, 3u, 8u, 9u, 33u}) {
        const auto x = kernel_test::random_floats(m * cols, static_cast<std::uint32_t>(m + cols));
        std::vector<float> expected(m * rows);
        if (dtype == DType::q8_0 || dtype == DType::bf16) {
          // The CPU quantizes the activations for Q8_0 at decode sizes, and
          // rounds them to bf16 for BF16 on AMX (docs/kernels.md); these
          // kernels keep them in float, so their reference is the float
          // product with the dequantized weights.
          for (std::size_t i = 0; i < m; ++i)
            for (std::size_t j = 0; j < rows; ++j) {
              double sum = 0;
              for (std::size_t c = 0; c < cols; ++c) sum += double(x[i * cols + c]) * double(w.values[j * cols + c]);
              expected[i * rows + j] = static_cast<float>(sum);
            }
        } else {
          b.cpu.matmul(x.data(), m, w.matrix, expected.data());
        }
        for (Kernel kernel : {Kernel::automatic, Kernel::naive, Kernel::gemv, Kernel::gemv_local_reduction,
                              Kernel::tiled}) {
          const bool gemv = kernel == Kernel::gemv || kernel == Kernel::gemv_local_reduction;
          INFO("dtype " << to_string(dtype) << " m " << m << " k " << cols << " kernel " << static_cast<int>(kernel));
          b.gpu.force_matmul_kernel(kernel);
          std::vector<float> actual(m * rows, -1.0f);
          if (gemv && m > opencl::gemv_max_rows) {
            CHECK_THROWS_AS(b.gpu.matmul(x.data(), m, w.matrix, actual.data()), invalid_argument);
            continue;
          }
          b.gpu.matmul(x.data(), m, w.matrix, actual.data());
          CHECK(relative_error(actual, expected) <= f32_tolerance);
        }
        b.gpu.force_matmul_kernel(Kernel::automatic);
      }
    }
  }
}

namespace {

/// y = x w^T in double from the values the stored weights stand for.
std::vector<float> reference_product(const std::vector<float>& x, std::size_t m, const kernel_test::TestWeights& w,
                                     std::size_t rows, std::size_t cols) {
  std::vector<float> y(m * rows);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < rows; ++j) {
      double sum = 0;
      for (std::size_t c = 0; c < cols; ++c) sum += double(x[i * cols + c]) * double(w.values[j * cols + c]);
      y[i * rows + j] = static_cast<float>(sum);
    }
  return y;
}

bool is_power_of_two(std::size_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

TEST_CASE("the OpenCL GEMV packs rows per work-group and is right at ragged N, short K, every M",
          "[opencl][ops][matmul][gemv]") {
  auto ctx = opencl_context();
  if (!ctx) return;
  Backends b(ctx);
  using Kernel = opencl::OpenClOps::MatmulKernel;
  INFO("device " << ctx->description());
  if (!ctx->has_subgroups())
    WARN("SKIPPED: the sub-group GEMV (this device has no cl_khr_subgroups; MatmulKernel::gemv runs the "
         "local-memory reduction here, as gemv_local_reduction does)");
  // The lm_head of the random Qwen3 (k 256, 151936 rows): several rows per
  // work-group, not one.
  CHECK(b.gpu.gemv_shape(Kernel::gemv_local_reduction, DType::f32, 256, 151936).rows_per_group >= 2);
  const std::vector<float> sentinel_value = {12345.0f};
  for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::q8_0}) {
    // K: shorter than one 4-value unit (the scalar tail alone), a few units
    // and a tail, and long enough for wide slices, with a tail (Q8_0: whole
    // 32-value blocks; its unit is 8 values, no tail).
    const std::vector<std::size_t> ks = dtype == DType::q8_0 ? std::vector<std::size_t>{32, 64, 2048}
                                                             : std::vector<std::size_t>{3, 43, 1001};
    // The local reduction also at forced slice widths: one item per row, a
    // few, and a GPU's wide slices (256: the whole group), whatever this
    // device's own choice is (0).
    const std::pair<Kernel, std::size_t> variants[] = {{Kernel::gemv, 0},
                                                       {Kernel::gemv_local_reduction, 0},
                                                       {Kernel::gemv_local_reduction, 1},
                                                       {Kernel::gemv_local_reduction, 2},
                                                       {Kernel::gemv_local_reduction, 32},
                                                       {Kernel::gemv_local_reduction, 256}};
    for (const auto& [kernel, forced_lanes] : variants) {
      b.gpu.force_gemv_lanes(forced_lanes);
      for (std::size_t cols : ks) {
        const auto probe = b.gpu.gemv_shape(kernel, dtype, cols, 1u << 20);
        INFO("dtype " << to_string(dtype) << " kernel " << static_cast<int>(kernel) << " k " << cols << " lanes "
                      << probe.lanes << " rows per group " << probe.rows_per_group);
        CHECK(is_power_of_two(probe.lanes));
        CHECK(probe.group == probe.lanes * probe.rows_per_group);
        CHECK(probe.subgroups == (kernel == Kernel::gemv && ctx->has_subgroups()));
        if (forced_lanes && !probe.subgroups) CHECK(probe.lanes == std::min(forced_lanes, probe.group));
        const std::size_t per_group = probe.rows_per_group;
        // One row; a group less one; whole groups; whole groups and a ragged one.
        for (std::size_t rows : {std::size_t{1}, std::max<std::size_t>(per_group - 1, 1), 2 * per_group,
                                 2 * per_group + 1}) {
          const auto w = kernel_test::make_weights(dtype, rows, cols, static_cast<std::uint32_t>(rows * 7 + cols));
          b.gpu.force_matmul_kernel(kernel);
          for (std::size_t m = 1; m <= opencl::gemv_max_rows; ++m) {
            INFO("rows " << rows << " m " << m);
            const auto x = kernel_test::random_floats(m * cols, static_cast<std::uint32_t>(m * 31 + cols));
            const auto expected = reference_product(x, m, w, rows, cols);
            // Into device scratch with a guard past the end, filled with a
            // sentinel first: every output is written, nothing past it is.
            const std::size_t guard = 64, total = m * rows + guard;
            const std::vector<float> filler(total, sentinel_value[0]);
            float* device_y = b.gpu.buffer(0, total);
            b.gpu.gather_rows(filler.data(), total, std::vector<std::uint32_t>{0}, device_y);
            b.gpu.matmul(x.data(), m, w.matrix, device_y);
            std::vector<float> back(total);
            b.gpu.gather_rows(device_y, total, std::vector<std::uint32_t>{0}, back.data());
            const std::vector<float> actual(back.begin(), back.begin() + static_cast<std::ptrdiff_t>(m * rows));
            CHECK(relative_error(actual, expected) <= f32_tolerance);
            CHECK(std::all_of(back.begin() + static_cast<std::ptrdiff_t>(m * rows), back.end(),
                              [&](float v) { return v == sentinel_value[0]; }));
          }
          b.gpu.force_matmul_kernel(Kernel::automatic);
        }
      }
    }
    b.gpu.force_gemv_lanes(0);
  }
}

TEST_CASE("OpenClOps norms, rotary, SiLU-mul, add and gather equal the CPU's", "[opencl][ops]") {
  auto ctx = opencl_context();
  if (!ctx) return;
  Backends b(ctx);
  const std::size_t rows = 7, heads = 4, head_dim = 64, dim = heads * head_dim;
  const auto x = kernel_test::random_floats(rows * dim, 1, 3.0f);
  const auto weight = kernel_test::random_floats(dim, 2);
  const float eps = 1e-6f;

  SECTION("rms_norm, out of place and in place") {
    std::vector<float> expected(x.size()), actual(x.size());
    b.cpu.rms_norm(x.data(), rows, dim, weight.data(), eps, expected.data());
    b.gpu.rms_norm(x.data(), rows, dim, weight.data(), eps, actual.data());
    CHECK(relative_error(actual, expected) <= f32_tolerance);
    std::vector<float> in_place = x;
    b.gpu.rms_norm(in_place.data(), rows, dim, weight.data(), eps, in_place.data());
    CHECK(relative_error(in_place, expected) <= f32_tolerance);
  }
  SECTION("rms_norm_heads") {
    std::vector<float> expected = x, actual = x;
    b.cpu.rms_norm_heads(expected.data(), rows, heads, head_dim, weight.data(), eps);
    b.gpu.rms_norm_heads(actual.data(), rows, heads, head_dim, weight.data(), eps);
    CHECK(relative_error(actual, expected) <= f32_tolerance);
  }
  SECTION("NeoX rope, positions past the first table") {
    const std::vector<std::int64_t> positions = {0, 1, 2, 17, 4095, 5000, 123};
    std::vector<float> expected = x, actual = x;
    b.cpu.rope(expected.data(), rows, heads, head_dim, positions, 1e6);
    b.gpu.rope(actual.data(), rows, heads, head_dim, positions, 1e6);
    CHECK(relative_error(actual, expected) <= f32_tolerance);
  }
  SECTION("silu_mul and add") {
    const auto up = kernel_test::random_floats(x.size(), 3, 2.0f);
    std::vector<float> expected = x, actual = x;
    b.cpu.silu_mul(expected.data(), up.data(), x.size());
    b.gpu.silu_mul(actual.data(), up.data(), x.size());
    CHECK(relative_error(actual, expected) <= f32_tolerance);
    b.cpu.add(expected.data(), up.data(), x.size());
    b.gpu.add(actual.data(), up.data(), x.size());
    CHECK(relative_error(actual, expected) <= f32_tolerance);
  }
  SECTION("gather_rows from device scratch") {
    float* device_x = b.gpu.buffer(0, x.size());
    // x as one row of x.size() floats: host → device scratch.
    b.gpu.gather_rows(x.data(), x.size(), std::vector<std::uint32_t>{0}, device_x);
    const std::vector<std::uint32_t> pick = {6, 0, 3};
    std::vector<float> expected(pick.size() * dim), actual(pick.size() * dim);
    b.cpu.gather_rows(x.data(), dim, pick, expected.data());
    b.gpu.gather_rows(device_x, dim, pick, actual.data());
    CHECK(actual == expected);
  }
}

namespace {

/// K/V for every position of three sequences stored into a host PagedKVCache
/// and a DeviceKVCache through the same scattered block tables, then one
/// attention call for a prefill, a decode and a chunked-prefill sequence.
void check_attention(Backends& b, const std::shared_ptr<opencl::Context>& ctx, DType dtype, double tolerance) {
  const std::size_t heads = 4, kv_heads = 2, head_dim = 64, block = 16, row = kv_heads * head_dim;
  const KVCacheShape shape{1, kv_heads, head_dim, dtype};
  PagedKVCacheConfig config;
  config.num_blocks = 12;
  PagedKVCache<16> host(shape, config);
  DeviceKVCache<16> device(ctx, shape, config);
  // Block tables, deliberately out of order; null block 0 never used.
  const std::vector<std::vector<BlockId>> tables = {{5, 2}, {1, 9, 3}, {12, 7}};
  const std::vector<std::size_t> computed = {0, 37, 16}, fresh = {20, 1, 5};
  std::vector<std::int64_t> slots;
  std::vector<kernels::cpu::AttentionSequence> seqs;
  std::size_t first_row = 0;
  for (std::size_t s = 0; s < tables.size(); ++s) {
    for (std::size_t p = 0; p < computed[s] + fresh[s]; ++p)
      slots.push_back(static_cast<std::int64_t>(tables[s][p / block] * block + p % block));
    seqs.push_back({computed[s], fresh[s], tables[s], first_row + computed[s]});
    first_row += computed[s] + fresh[s];
  }
  slots.push_back(-1);  // a padding slot is skipped
  const auto k = kernel_test::random_floats(slots.size() * row, 21);
  const auto v = kernel_test::random_floats(slots.size() * row, 22);
  b.cpu.store_kv(host.layer(0), dtype, k.data(), v.data(), slots, kv_heads, head_dim);
  b.gpu.store_kv(device.layer(0), dtype, k.data(), v.data(), slots, kv_heads, head_dim);
  // The stored rows, byte for byte (f16/bf16: both sides round to nearest even).
  const auto keys = device.read_layer(0, false);
  const auto values = device.read_layer(0, true);
  const std::size_t row_bytes = row * dtype_size(dtype);
  std::size_t differing = 0;
  for (std::int64_t slot : slots) {
    if (slot < 0) continue;
    const auto at = static_cast<std::size_t>(slot) * row_bytes;
    if (!std::equal(keys.begin() + at, keys.begin() + at + row_bytes, host.layer(0).keys + at) ||
        !std::equal(values.begin() + at, values.begin() + at + row_bytes, host.layer(0).values + at))
      ++differing;
  }
  CHECK(differing == 0);

  const auto q = kernel_test::random_floats(first_row * heads * head_dim, 23, 2.0f);
  std::vector<float> expected(q.size(), 0.0f), actual(q.size(), 0.0f);
  b.cpu.attention(q.data(), seqs, host.layer(0), dtype, block, heads, kv_heads, head_dim, expected.data());
  b.gpu.attention(q.data(), seqs, device.layer(0), dtype, block, heads, kv_heads, head_dim, actual.data());
  for (const auto& s : seqs) {
    const std::size_t begin = s.first_row * heads * head_dim, n = s.num_tokens * heads * head_dim;
    INFO("sequence at row " << s.first_row << ", dtype " << to_string(dtype));
    CHECK(relative_error(std::span(actual).subspan(begin, n), std::span(expected).subspan(begin, n)) <= tolerance);
  }
  // A host KV view is refused by name, not read.
  CHECK_THROWS_AS(b.gpu.store_kv(host.layer(0), dtype, k.data(), v.data(), slots, kv_heads, head_dim),
                  invalid_argument);
}

}  // namespace

TEST_CASE("OpenClOps store_kv and paged attention equal the CPU's (prefill, decode, chunk)", "[opencl][ops]") {
  auto ctx = opencl_context();
  if (!ctx) return;
  Backends b(ctx);
  check_attention(b, ctx, DType::f32, f32_tolerance);
  check_attention(b, ctx, DType::f16, 1e-3);
  check_attention(b, ctx, DType::bf16, 1e-3);
}

TEST_CASE("DeviceKVCache keeps PagedKVCache's block semantics and zeroes the null block", "[opencl][kv_cache]") {
  auto ctx = opencl_context();
  if (!ctx) return;
  const KVCacheShape shape{2, 2, 8, DType::f32};
  PagedKVCacheConfig config;
  config.num_blocks = 4;
  DeviceKVCache<4> kv(ctx, shape, config);
  static_assert(KVCachePolicy<DeviceKVCache<4>>);
  static_assert(std::same_as<DeviceKVCache<4>::memory_space, device_space>);
  CHECK(kv.stats().num_blocks == 4);
  CHECK(kv.stats().num_free_blocks == 4);
  const auto null_keys = kv.read_layer(1, false);
  CHECK(std::all_of(null_keys.begin(), null_keys.begin() + 4 * 2 * 8 * 4, [](std::byte x) { return x == std::byte{0}; }));
  CHECK(kv.check_invariants().empty());
  // The views are device addresses: they resolve, and a host pointer does not.
  CHECK(opencl::resolve_device_address(kv.layer(1).values).has_value());
  CHECK_FALSE(opencl::resolve_device_address(null_keys.data()).has_value());
  CHECK(kv.layer(2).keys == nullptr);
}

TEST_CASE("a KV cache larger than the device can hold is a clear error, not a crash", "[opencl][kv_cache]") {
  auto ctx = opencl_context();
  if (!ctx) return;
  cl_ulong max_alloc = 0;
  opencl::check(clGetDeviceInfo(ctx->device(), CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, nullptr),
                "clGetDeviceInfo");
  const KVCacheShape shape{4, 8, 128, DType::f32};
  PagedKVCacheConfig config;
  config.byte_budget = static_cast<std::size_t>(max_alloc) * 4 + (std::size_t{1} << 30);
  config.max_num_blocks = std::size_t{1} << 30;
  try {
    DeviceKVCache<16> kv(ctx, shape, config);
    FAIL("a " << config.byte_budget << "-byte KV cache was allocated on a device whose largest buffer is " << max_alloc);
  } catch (const opencl::opencl_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("clCreateBuffer"));
  }
}

TEST_CASE("OpenCL program binaries are cached on disk and a corrupt file is rebuilt", "[opencl][program_cache]") {
  if (!opencl_context()) return;
  const std::filesystem::path dir = std::filesystem::current_path() / "opencl-program-cache-test";
  std::filesystem::remove_all(dir);
  auto first = opencl::Context::create(testing::opencl_options(dir));
  CHECK(first->program_origin() == opencl::ProgramOrigin::built_from_source);
  REQUIRE(std::filesystem::exists(first->program_cache_file()));
  auto second = opencl::Context::create(testing::opencl_options(dir));
  CHECK(second->program_origin() == opencl::ProgramOrigin::loaded_from_cache);
  {  // flip a byte in the middle of the cached binary
    std::fstream f(second->program_cache_file(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(std::filesystem::file_size(second->program_cache_file()) / 2));
    char c = 0;
    f.read(&c, 1);
    f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(second->program_cache_file()) / 2));
    c = static_cast<char>(c ^ 0x5a);
    f.write(&c, 1);
  }
  auto third = opencl::Context::create(testing::opencl_options(dir));
  CHECK(third->program_origin() == opencl::ProgramOrigin::built_from_source);
  auto fourth = opencl::Context::create(testing::opencl_options(dir));
  CHECK(fourth->program_origin() == opencl::ProgramOrigin::loaded_from_cache);
  // The rebuilt program works: one kernel through it.
  opencl::OpenClOps ops(fourth);
  std::vector<float> x = {1, 2, 3}, y = {10, 20, 30};
  ops.add(x.data(), y.data(), 3);
  CHECK(x == std::vector<float>{11, 22, 33});
}

TEST_CASE("OpenCL device selection errors name the problem", "[opencl][context]") {
  if (!opencl_context()) return;
  CHECK_THROWS_WITH(opencl::Context::create(testing::opencl_options("-", 99)),
                    Catch::Contains("platform 99 does not exist"));
  CHECK_THROWS_WITH(opencl::Context::create(testing::opencl_options("-", 0, 99)),
                    Catch::Contains("no device 99"));
}

TEST_CASE("the unified-memory way is the best the device offers, and refused where memory is not shared",
          "[opencl][unified]") {
  using opencl::UnifiedMemoryMode;
  const cl_device_svm_capabilities coarse = CL_DEVICE_SVM_COARSE_GRAIN_BUFFER;
  const cl_device_svm_capabilities fine = coarse | CL_DEVICE_SVM_FINE_GRAIN_BUFFER;
  // Devices as they report themselves (no device needed).
  CHECK(opencl::choose_unified_memory_mode({true, fine}, "igpu") == UnifiedMemoryMode::fine_grained_svm);
  CHECK(opencl::choose_unified_memory_mode({true, coarse}, "igpu") == UnifiedMemoryMode::coarse_grained_svm);
  CHECK(opencl::choose_unified_memory_mode({true, 0}, "igpu") == UnifiedMemoryMode::host_alias);
  CHECK(opencl::choose_unified_memory_mode({true, fine}, "igpu", UnifiedMemoryMode::coarse_grained_svm) ==
        UnifiedMemoryMode::coarse_grained_svm);
  CHECK(opencl::choose_unified_memory_mode({true, fine}, "igpu", UnifiedMemoryMode::host_alias) ==
        UnifiedMemoryMode::host_alias);
  CHECK_THROWS_WITH(opencl::choose_unified_memory_mode({true, coarse}, "igpu", UnifiedMemoryMode::fine_grained_svm),
                    Catch::Contains("igpu has no fine-grained SVM"));
  // Fine-grained system SVM reads the host's own pages: shared even without the flag.
  CHECK(opencl::choose_unified_memory_mode({false, fine | CL_DEVICE_SVM_FINE_GRAIN_SYSTEM}, "apu") ==
        UnifiedMemoryMode::fine_grained_svm);
  // A discrete GPU (SVM through its own memory): refused, whatever is asked.
  for (auto forced : {std::optional<UnifiedMemoryMode>{}, std::optional{UnifiedMemoryMode::host_alias},
                      std::optional{UnifiedMemoryMode::coarse_grained_svm}}) {
    CHECK_THROWS_AS(opencl::choose_unified_memory_mode({false, fine}, "dgpu", forced), unavailable);
    CHECK_THROWS_WITH(opencl::choose_unified_memory_mode({false, fine}, "dgpu", forced),
                      Catch::Contains("dgpu does not") && Catch::Contains("use DeviceKVCache"));
  }

  auto ctx = opencl_context();
  if (!ctx) return;
  // What this device reports (PoCL 3.1's CPU device: unified, coarse and fine buffer SVM).
  const opencl::DeviceMemorySharing& sharing = ctx->memory_sharing();
  INFO(ctx->description() << ": host unified " << sharing.host_unified_memory << ", SVM capabilities "
                          << sharing.svm_capabilities);
  cl_device_type type = 0;
  REQUIRE(clGetDeviceInfo(ctx->device(), CL_DEVICE_TYPE, sizeof type, &type, nullptr) == CL_SUCCESS);
  if (type & CL_DEVICE_TYPE_CPU) CHECK(sharing.host_unified_memory);
  const auto memory = opencl::unified_memory_for(ctx);
  const bool has_svm = (sharing.svm_capabilities & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) != 0;
  CHECK((memory != nullptr) == has_svm);
  if (memory) WARN("unified memory on this device: " << memory->description());
}

TEST_CASE("OpenCL SVM memory is a device address range the kernels and the host share", "[opencl][unified]") {
  auto ctx = opencl_context();
  if (!ctx) return;
  for (auto mode : {opencl::UnifiedMemoryMode::coarse_grained_svm, opencl::UnifiedMemoryMode::fine_grained_svm}) {
    INFO(opencl::to_string(mode));
    std::shared_ptr<opencl::SvmMemory> svm;
    try {
      svm = std::make_shared<opencl::SvmMemory>(ctx, mode);
    } catch (const unavailable& e) {
      WARN("SKIPPED: " << e.what());
      continue;
    }
    const std::size_t n = 3000, bytes = 2 * n * sizeof(float);
    std::byte* p = svm->allocate(bytes);
    CHECK(reinterpret_cast<std::uintptr_t>(p) % izwi::detail::MappedRegion::page_size() == 0);
    const auto location = opencl::resolve_device_address(p + 8);
    REQUIRE(location.has_value());
    CHECK(location->available >= bytes - 8);
    CHECK(svm->host_mapped(p));
    // Host writes, a kernel adds in place, the host reads the sums.
    auto* x = reinterpret_cast<float*>(p);
    float* y = x + n;
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(i) * 0.5f;
      y[i] = 1.0f - static_cast<float>(i);
    }
    opencl::OpenClOps ops(ctx);
    svm->hand_to_device(p);
    CHECK(svm->host_mapped(p) == (mode == opencl::UnifiedMemoryMode::fine_grained_svm));
    ops.add(x, y, n);
    ctx->finish();
    svm->hand_to_host(p);
    CHECK(svm->host_mapped(p));
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) wrong += x[i] != static_cast<float>(i) * 0.5f + (1.0f - static_cast<float>(i));
    CHECK(wrong == 0);
    // Whole pages inside the range are given back (PoCL's SVM is private host memory).
    const std::size_t page = izwi::detail::MappedRegion::page_size();
    CHECK(svm->release(p, bytes) == bytes / page * page);
    svm->deallocate(p, bytes);
    CHECK_FALSE(opencl::resolve_device_address(p + 8).has_value());
  }
}

TEST_CASE("UnifiedKVCache on OpenCL SVM zeroes its null block and hands out device addresses", "[opencl][unified]") {
  auto ctx = opencl_context();
  if (!ctx) return;
  std::shared_ptr<UnifiedMemoryResource> memory;
  try {
    memory = opencl::unified_memory_for(ctx, opencl::UnifiedMemoryMode::coarse_grained_svm);
  } catch (const unavailable& e) {
    WARN("SKIPPED: " << e.what());
    return;
  }
  const KVCacheShape shape{2, 2, 8, DType::f32};
  UnifiedKVCacheConfig config;
  config.num_blocks = 4;
  config.memory = memory;
  UnifiedKVCache<ManualMemoryPressureSource, 4> kv(shape, config);
  CHECK(kv.memory_resource() == memory);
  const KVLayerView layer = kv.layer(1);
  REQUIRE(opencl::resolve_device_address(layer.values).has_value());
  const std::size_t null_bytes = 4 * 2 * 8 * sizeof(float);
  CHECK(std::all_of(layer.keys, layer.keys + null_bytes, [](std::byte b) { return b == std::byte{0}; }));
  CHECK(std::all_of(layer.values, layer.values + null_bytes, [](std::byte b) { return b == std::byte{0}; }));
  CHECK(kv.check_invariants().empty());
}
