#pragma once
// OpenClOps: the operations a model family's forward pass asks of a backend
// (BackendOps, docs/concepts/backend_ops.md), run as OpenCL kernels
// (kernels/opencl/sources.hpp) on one device's in-order queue.
//
// Pointers. Scratch from buffer() and K/V views from DeviceKVCache are device
// addresses (kernels/opencl/context.hpp) and stay on the device. Any other
// pointer is host memory: an input is copied to the device for the call, an
// output is copied back when the call returns. So the model's logits land in
// the executor's host array, and a test can drive every operation with plain
// std::vectors and compare with CpuOps.
//
// Weights (WeightMatrix, norm vectors) are host memory that never changes
// while the model lives: each is uploaded on first use and kept, keyed by its
// address (and checked by size and a sampled fingerprint, so an array freed
// and another allocated at its address is uploaded anew); forget_weights()
// drops the copies.
//
// Threads: one OpenClOps is used by one thread at a time (the engine's step
// loop); several may share a Context, whose queue OpenCL makes thread-safe.
//
// Per-step index arrays (token ids, positions, slots, block tables) are
// uploaded once per step between begin_step() and end_step() (the model
// passes the same spans to every layer); outside a step they are uploaded on
// every call.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <span>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "izwi/concepts/kv_cache.hpp"
#include "izwi/concepts/tags.hpp"
#include "izwi/core/dtype.hpp"
#include "izwi/core/error.hpp"
#include "izwi/core/ids.hpp"
#include "izwi/core/step.hpp"
#include "izwi/kernels/cpu/attention.hpp"
#include "izwi/kernels/cpu/matmul.hpp"
#include "izwi/kernels/cpu/rotary.hpp"
#include "izwi/kernels/opencl/context.hpp"

namespace izwi::opencl {

class OpenClOps {
 public:
  using policy_category = backend_ops_tag;
  /// A view of the mapped checkpoint (F32, F16, BF16 or Q8_0), uploaded on first use.
  using weight_type = kernels::cpu::WeightMatrix;
  /// As on the CPU: query rows [first_row, first_row + num_tokens) at
  /// positions [num_computed, ...), K/V through its block table.
  using attention_sequence = kernels::cpu::AttentionSequence;
  static attention_sequence make_sequence(const ScheduledSequence& seq, std::size_t first_row) {
    return {seq.num_computed_tokens, seq.num_tokens, seq.block_table, first_row};
  }

  /// `max_scratch_bytes`: a cap on the device scratch of buffer() (0: none).
  /// Past it buffer() throws opencl_error(CL_MEM_OBJECT_ALLOCATION_FAILURE),
  /// as a device that runs out would; the engine then runs the step's
  /// sequences one by one and fails only those that still do not fit.
  explicit OpenClOps(std::shared_ptr<Context> context, std::size_t max_scratch_bytes = 0);
  ~OpenClOps();
  OpenClOps(const OpenClOps&) = delete;
  OpenClOps& operator=(const OpenClOps&) = delete;

  Context& context() const noexcept { return *context_; }

  /// Device scratch of at least `floats` floats for `slot`, grown, never shrunk.
  float* buffer(std::size_t slot, std::size_t floats);

  void embed(const weight_type& table, std::span<const TokenId> tokens, float* out);
  /// y[m][rows] = x[m][cols] w^T. The kernel follows m (matmul_kernel_for):
  /// a GEMV that reads each weight row once for all m rows while m is small
  /// (decode), a tiled GEMM above.
  void matmul(const float* x, std::size_t m, const weight_type& w, float* y);
  struct MatmulTarget {
    const weight_type* weight;
    float* y;
  };
  void matmuls(const float* x, std::size_t m, std::initializer_list<MatmulTarget> targets) {
    for (const MatmulTarget& t : targets) matmul(x, m, *t.weight, t.y);
  }
  /// The matrix-product kernels (kernels/opencl/sources.hpp).
  enum class MatmulKernel {
    automatic,             ///< matmul_kernel_for(m) decides
    naive,                 ///< one work-item per output (the fallback)
    gemv,                  ///< m <= gemv_max_rows; sub-group reduction where the device has them
    gemv_local_reduction,  ///< the same with the local-memory reduction, sub-groups or not
    tiled,                 ///< local-memory tiles, 4x4 outputs per work-item
  };
  /// Up to this many activation rows matmul() runs the GEMV kernel: a
  /// product of so few rows is bound by reading the weights, which the GEMV
  /// reads once for all of them (it keeps one sum per row per work-item,
  /// hence the cap of its gemv_max_rows registers). Above it there is enough
  /// reuse of each weight for the tiled GEMM's local-memory tiles to pay.
  static constexpr std::size_t gemv_rows_limit = gemv_max_rows;
  /// The kernel matmul() runs for m activation rows: gemv up to
  /// gemv_rows_limit, else tiled, else (a device whose work-groups cannot
  /// hold the tiled kernel's 8x8 items) naive; or the forced one.
  MatmulKernel matmul_kernel_for(std::size_t m, DType dtype);
  /// Tests and benchmarks: run every matmul on `kernel` (automatic: undo).
  /// A forced GEMV with more than gemv_max_rows rows is an invalid_argument.
  void force_matmul_kernel(MatmulKernel kernel) noexcept { forced_matmul_ = kernel; }
  /// How the GEMV covers the weight rows: `lanes` neighbouring work-items per
  /// row (a power of two; with sub-groups, one sub-group per row and `lanes`
  /// an estimate of its size), `rows_per_group` rows in each work-group of
  /// `group` items; the last work-group may hold fewer rows.
  struct GemvShape {
    std::size_t lanes = 1, rows_per_group = 1, group = 1;
    bool subgroups = false;  ///< the sub-group reduction (else local memory)
  };
  /// The shape matmul() launches `kernel` (gemv or gemv_local_reduction)
  /// with, for a weight of `rows` rows of `cols` values in `dtype`.
  GemvShape gemv_shape(MatmulKernel kernel, DType dtype, std::size_t cols, std::size_t rows);
  /// Tests and benchmarks: run the local-reduction GEMV with row slices of
  /// `lanes` items (a power of two, at most the group; 0: automatic), e.g.
  /// a GPU's shape on a CPU device. The sub-group GEMV ignores it.
  void force_gemv_lanes(std::size_t lanes) noexcept {
    forced_gemv_lanes_ = lanes;
    gemv_shapes_.clear();
  }

  void rms_norm(const float* x, std::size_t rows, std::size_t dim, const float* weight, float eps, float* out);
  void rms_norm_heads(float* x, std::size_t rows, std::size_t heads, std::size_t head_dim, const float* weight,
                      float eps);
  void rope(float* x, std::size_t rows, std::size_t heads, std::size_t head_dim,
            std::span<const std::int64_t> positions, double theta);
  void store_kv(const KVLayerView& view, DType dtype, const float* k, const float* v,
                std::span<const std::int64_t> slots, std::size_t kv_heads, std::size_t head_dim);
  void attention(const float* q, std::span<const attention_sequence> sequences, const KVLayerView& view, DType dtype,
                 std::size_t block_size, std::size_t heads, std::size_t kv_heads, std::size_t head_dim, float* out);
  void silu_mul(float* gate, const float* up, std::size_t n);
  void add(float* x, const float* y, std::size_t n);
  void gather_rows(const float* x, std::size_t dim, std::span<const std::uint32_t> rows, float* out);

  /// Index arrays are uploaded once from here to end_step() (see above).
  void begin_step() noexcept {
    step_uploads_used_ = 0;
    in_step_ = true;
    attention_key_ = {};
  }
  void end_step() noexcept { in_step_ = false; }
  void forget_weights() { weights_.clear(); }

 private:
  /// A float array bound to a kernel argument: buffer and element offset;
  /// `host_out` is where to copy it back after the kernel (host outputs).
  struct Bound {
    cl_mem mem = nullptr;
    cl_ulong offset = 0;
    float* host_out = nullptr;
    std::size_t floats = 0;
  };
  enum class Direction { in, out, in_out };
  Bound bind(const float* p, std::size_t floats, Direction direction);
  void finish(const Bound& b);
  DeviceBuffer& staging(std::size_t bytes);
  cl_mem upload_indices(const void* data, std::size_t bytes);
  cl_mem weight_buffer(const void* data, std::size_t bytes);
  cl_mem bind_view(const std::byte* address, cl_ulong& offset, const char* which);
  /// local0 == 0: the driver picks the work-group size.
  void launch(const char* kernel, std::size_t global0, std::size_t global1, std::size_t local0 = 0,
              std::size_t local1 = 0);
  /// CL_KERNEL_WORK_GROUP_SIZE of a kernel on this device (cached).
  std::size_t kernel_group_limit(const char* kernel);
  GemvShape compute_gemv_shape(MatmulKernel kernel, DType dtype, std::size_t cols, std::size_t rows);
  cl_kernel kernel(const char* name);
  template <class... Args>
  void set_args(const char* kernel, const Args&... args);

  std::shared_ptr<Context> context_;
  // Kernel objects of this ops' own: their arguments are set per call, so two
  // executors on one context (two engines, two threads) must not share them.
  std::map<std::string, cl_kernel, std::less<>> kernels_;
  std::map<std::string, std::size_t, std::less<>> group_limits_;
  MatmulKernel forced_matmul_ = MatmulKernel::automatic;
  std::size_t forced_gemv_lanes_ = 0;
  /// gemv_shape()'s answers by (kernel, dtype, cols, rows).
  std::map<std::tuple<MatmulKernel, DType, std::size_t, std::size_t>, GemvShape> gemv_shapes_;
  std::vector<DeviceBuffer> scratch_;
  std::size_t scratch_bytes_ = 0, max_scratch_bytes_ = 0;
  std::vector<DeviceBuffer> staging_;
  std::size_t staging_used_ = 0;
  struct StepUpload {
    const void* data = nullptr;
    std::size_t bytes = 0;
    DeviceBuffer buffer;
  };
  std::vector<StepUpload> step_uploads_;
  std::size_t step_uploads_used_ = 0;
  bool in_step_ = false;
  struct UploadedWeight {
    DeviceBuffer buffer;
    std::size_t bytes = 0;
    std::uint64_t fingerprint = 0;
  };
  std::unordered_map<const void*, UploadedWeight> weights_;
  // NeoX cos/sin table (same values as the CPU's, computed in double on the host).
  DeviceBuffer rotary_cos_, rotary_sin_;
  std::size_t rotary_head_dim_ = 0, rotary_positions_ = 0;
  double rotary_theta_ = 0;
  // The step's attention metadata, built once per step.
  struct AttentionKey {
    const void* sequences = nullptr;
    std::size_t count = 0;
  } attention_key_;
  cl_mem row_seq_ = nullptr, seq_info_ = nullptr, tables_ = nullptr;
  std::vector<cl_int> row_seq_host_, seq_info_host_;
  std::vector<cl_uint> tables_host_;
};

}  // namespace izwi::opencl

#include "izwi/kernels/opencl/impl/ops.hpp"
