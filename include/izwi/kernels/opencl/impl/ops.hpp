#pragma once
// Bodies of kernels/opencl/ops.hpp.

#include <algorithm>
#include <cmath>
#include <string>

#include "izwi/core/hash.hpp"

namespace izwi::opencl {

namespace detail {
inline std::size_t round_up(std::size_t n, std::size_t multiple) { return (n + multiple - 1) / multiple * multiple; }
}  // namespace detail

inline OpenClOps::OpenClOps(std::shared_ptr<Context> context, std::size_t max_scratch_bytes)
    : context_(std::move(context)), max_scratch_bytes_(max_scratch_bytes) {
  if (!context_) throw invalid_argument("context", "OpenClOps needs an OpenCL context");
}

inline float* OpenClOps::buffer(std::size_t slot, std::size_t floats) {
  if (scratch_.size() <= slot) scratch_.resize(slot + 1);
  const std::size_t bytes = std::max<std::size_t>(floats, 1) * sizeof(float);
  if (scratch_[slot].size() < bytes) {
    const std::size_t total = scratch_bytes_ - scratch_[slot].size() + bytes;
    try {
      if (max_scratch_bytes_ && total > max_scratch_bytes_)
        throw opencl_error("device scratch of " + std::to_string(total) + " bytes (the executor's limit is " +
                               std::to_string(max_scratch_bytes_) + ")",
                           CL_MEM_OBJECT_ALLOCATION_FAILURE);
      scratch_[slot] = DeviceBuffer();  // give the old one back first
      scratch_[slot] = DeviceBuffer(*context_, bytes);
      scratch_bytes_ = total;
    } catch (const opencl_error&) {
      // The step is abandoned: give every scratch buffer back, so that a
      // smaller step (the engine retries sequence by sequence) starts afresh
      // instead of under buffers sized for the one that failed.
      scratch_.clear();
      scratch_bytes_ = 0;
      throw;
    }
  }
  return scratch_[slot].address<float>();
}

inline DeviceBuffer& OpenClOps::staging(std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 64);
  if (staging_used_ == staging_.size()) staging_.emplace_back();
  DeviceBuffer& b = staging_[staging_used_++];
  // An in-order queue: a command enqueued before the replacement still owns
  // the old cl_mem (released when that command completes).
  if (b.size() < bytes) b = DeviceBuffer(*context_, bytes);
  return b;
}

inline OpenClOps::Bound OpenClOps::bind(const float* p, std::size_t floats, Direction direction) {
  if (auto loc = resolve_device_address(p)) {
    if (loc->available < floats * sizeof(float) || loc->offset % sizeof(float) != 0)
      throw invalid_argument("buffer", "OpenCL: an operation needs " + std::to_string(floats) +
                                           " floats past a device address that has " +
                                           std::to_string(loc->available / sizeof(float)));
    return {loc->buffer, loc->offset / sizeof(float), nullptr, floats};
  }
  DeviceBuffer& b = staging(floats * sizeof(float));
  if (direction != Direction::out) b.write(*context_, p, floats * sizeof(float));
  return {b.get(), 0, direction != Direction::in ? const_cast<float*>(p) : nullptr, floats};
}

inline void OpenClOps::finish(const Bound& b) {
  if (!b.host_out || b.floats == 0) return;
  check(clEnqueueReadBuffer(context_->queue(), b.mem, CL_TRUE, b.offset * sizeof(float), b.floats * sizeof(float),
                            b.host_out, 0, nullptr, nullptr),
        "clEnqueueReadBuffer");
}

inline cl_mem OpenClOps::upload_indices(const void* data, std::size_t bytes) {
  if (!in_step_) {
    DeviceBuffer& b = staging(bytes);
    b.write(*context_, data, bytes);
    return b.get();
  }
  for (std::size_t i = 0; i < step_uploads_used_; ++i)
    if (step_uploads_[i].data == data && step_uploads_[i].bytes == bytes) return step_uploads_[i].buffer.get();
  if (step_uploads_used_ == step_uploads_.size()) step_uploads_.emplace_back();
  StepUpload& u = step_uploads_[step_uploads_used_++];
  if (u.buffer.size() < std::max<std::size_t>(bytes, 64))
    u.buffer = DeviceBuffer(*context_, std::max<std::size_t>(bytes, 64));
  u.buffer.write(*context_, data, bytes);
  u.data = data;
  u.bytes = bytes;
  return u.buffer.get();
}

namespace detail {
/// A cheap check that a weight at a known address is still the array that
/// was uploaded (a test may free one and allocate another at the same
/// address): its size and 64 bytes from its start, middle and end.
inline std::uint64_t weight_fingerprint(const void* data, std::size_t bytes) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  const std::size_t n = std::min<std::size_t>(64, bytes);
  std::uint64_t h = hash64(p, n, bytes);
  h = hash64(p + (bytes - n) / 2, n, h);
  return hash64(p + bytes - n, n, h);
}
}  // namespace detail

inline cl_mem OpenClOps::weight_buffer(const void* data, std::size_t bytes) {
  const std::uint64_t fingerprint = detail::weight_fingerprint(data, bytes);
  auto it = weights_.find(data);
  if (it == weights_.end() || it->second.bytes != bytes || it->second.fingerprint != fingerprint) {
    DeviceBuffer b(*context_, bytes);
    b.write(*context_, data, bytes);
    it = weights_.insert_or_assign(data, UploadedWeight{std::move(b), bytes, fingerprint}).first;
  }
  return it->second.buffer.get();
}

inline cl_mem OpenClOps::bind_view(const std::byte* address, cl_ulong& offset, const char* which) {
  auto loc = resolve_device_address(address);
  if (!loc)
    throw invalid_argument("kv_cache", std::string("OpenCL: the KV cache's ") + which +
                                           " are not on the device (pair OpenClExecutor with DeviceKVCache)");
  offset = loc->offset;
  return loc->buffer;
}

inline cl_kernel OpenClOps::kernel(const char* name) {
  if (auto it = kernels_.find(name); it != kernels_.end()) return it->second;
  cl_int status = CL_SUCCESS;
  cl_kernel k = clCreateKernel(context_->program(), name, &status);
  check(status, std::string("clCreateKernel(") + name + ")");
  kernels_.emplace(name, k);
  return k;
}

inline OpenClOps::~OpenClOps() {
  for (auto& [name, k] : kernels_) clReleaseKernel(k);
}

namespace detail {
/// A __local float[count] kernel argument (set by size, no value).
struct LocalFloats {
  std::size_t count = 0;
};
template <class T>
void set_kernel_arg(cl_kernel k, cl_uint index, const T& value, const char* name) {
  check(clSetKernelArg(k, index, sizeof(T), &value), std::string("clSetKernelArg of ") + name);
}
inline void set_kernel_arg(cl_kernel k, cl_uint index, const LocalFloats& local, const char* name) {
  check(clSetKernelArg(k, index, local.count * sizeof(float), nullptr), std::string("clSetKernelArg of ") + name);
}
}  // namespace detail

template <class... Args>
void OpenClOps::set_args(const char* name, const Args&... args) {
  cl_kernel k = kernel(name);
  cl_uint index = 0;
  (detail::set_kernel_arg(k, index++, args, name), ...);
}

inline void OpenClOps::launch(const char* name, std::size_t global0, std::size_t global1, std::size_t local0,
                              std::size_t local1) {
  if (global0 == 0 || global1 == 0) return;
  const std::size_t global[2] = {global0, global1};
  const std::size_t local[2] = {local0, local1 ? local1 : 1};
  check(clEnqueueNDRangeKernel(context_->queue(), kernel(name), 2, nullptr, global, local0 ? local : nullptr, 0,
                               nullptr, nullptr),
        std::string("clEnqueueNDRangeKernel(") + name + ")");
}

inline std::size_t OpenClOps::kernel_group_limit(const char* name) {
  if (auto it = group_limits_.find(name); it != group_limits_.end()) return it->second;
  std::size_t limit = 0;
  check(clGetKernelWorkGroupInfo(kernel(name), context_->device(), CL_KERNEL_WORK_GROUP_SIZE, sizeof limit, &limit,
                                 nullptr),
        std::string("clGetKernelWorkGroupInfo(") + name + ")");
  group_limits_.emplace(name, limit);
  return limit;
}

namespace detail {
inline const char* weight_kernel(const char* prefix, DType dtype, std::string& name) {
  name = prefix;
  switch (dtype) {
    case DType::f32: name += "_f32"; break;
    case DType::f16: name += "_f16"; break;
    case DType::bf16: name += "_bf16"; break;
    case DType::q8_0: name += "_q8_0"; break;
    default: throw invalid_argument("dtype", std::string("OpenCL: no ") + prefix + " kernel for weights in " +
                                                 std::string(to_string(dtype)));
  }
  return name.c_str();
}
inline const char* cache_kernel(const char* prefix, DType dtype, std::string& name) {
  if (dtype == DType::q8_0) throw invalid_argument("kv_cache_dtype", "OpenCL: a KV cache in q8_0 is not supported");
  return weight_kernel(prefix, dtype, name);
}
}  // namespace detail

inline OpenClOps::GemvShape OpenClOps::gemv_shape(MatmulKernel choice, DType dtype, std::size_t cols,
                                                  std::size_t rows) {
  // Called for every GEMV of every step: the driver queries behind a shape
  // run once per weight shape.
  const auto key = std::make_tuple(choice, dtype, cols, rows);
  if (auto it = gemv_shapes_.find(key); it != gemv_shapes_.end()) return it->second;
  const GemvShape shape = compute_gemv_shape(choice, dtype, cols, rows);
  gemv_shapes_.emplace(key, shape);
  return shape;
}

inline OpenClOps::GemvShape OpenClOps::compute_gemv_shape(MatmulKernel choice, DType dtype, std::size_t cols,
                                                          std::size_t rows) {
  std::string kernel_name;
  const char* name = detail::weight_kernel("gemv", dtype, kernel_name);
  // An item's unit of work: 4 values (a float4), Q8_0 a quarter block (8).
  const std::size_t units = dtype == DType::q8_0 ? cols / 8 : (cols + 3) / 4;
  const bool subgroups = context_->has_subgroups() && choice == MatmulKernel::gemv;
  // Work-groups of 256 items where the kernel and local memory allow (the
  // local reduction keeps gemv_max_rows floats per item): enough loads in
  // flight per group to cover memory latency on a GPU, few groups to start
  // on a CPU device (PoCL pays per work-group). A power of two.
  constexpr std::size_t target = 256;
  cl_ulong local_bytes = 0;
  check(clGetDeviceInfo(context_->device(), CL_DEVICE_LOCAL_MEM_SIZE, sizeof local_bytes, &local_bytes, nullptr),
        "clGetDeviceInfo(CL_DEVICE_LOCAL_MEM_SIZE)");
  const auto floor_pow2 = [](std::size_t v) {
    std::size_t p = 1;
    while (p * 2 <= v) p *= 2;
    return p;
  };
  const std::size_t limit = std::min({target, kernel_group_limit(name),
                                      static_cast<std::size_t>(local_bytes / (gemv_max_rows * sizeof(float)))});
  const std::size_t group = floor_pow2(std::max<std::size_t>(limit, 1));
  if (subgroups) {
    // One sub-group per row; the kernel strides over rows, so an estimate
    // of the sub-group size (the preferred multiple, the SIMD width) only
    // sizes the launch.
    std::size_t preferred = 1;
    clGetKernelWorkGroupInfo(kernel(name), context_->device(), CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                             sizeof preferred, &preferred, nullptr);
    preferred = std::min(floor_pow2(std::max<std::size_t>(preferred, 1)), group);
    return {preferred, group / preferred, group, true};
  }
  // A row slice as wide as gives each item about 16 units: enough work per
  // item to pay for its share of the log2(lanes) reduction steps, and on a
  // CPU device (PoCL runs a group's items one after another) short runs of
  // items per row, measured fastest there. Slices narrower than the SIMD
  // width idle no lanes: neighbouring slices (rows) fill them, each slice
  // still reading whole runs of 16-byte units.
  constexpr std::size_t units_per_item = 16;
  std::size_t lanes = std::min(floor_pow2(std::max<std::size_t>(units / units_per_item, 1)), group);
  if (forced_gemv_lanes_) lanes = std::min(floor_pow2(forced_gemv_lanes_), group);
  // Fewer slices than rows would only add idle items to a lone group.
  const std::size_t slices = std::min(group / lanes, std::max<std::size_t>(rows, 1));
  return {lanes, slices, lanes * slices, false};
}

inline void OpenClOps::embed(const weight_type& table, std::span<const TokenId> tokens, float* out) {
  staging_used_ = 0;
  for (TokenId t : tokens)
    if (t < 0 || static_cast<std::size_t>(t) >= table.rows)
      throw invalid_argument("token", "token id " + std::to_string(t) + " is outside the embedding table (" +
                                          std::to_string(table.rows) + " rows)");
  if (tokens.empty()) return;
  std::string name;
  const char* kernel_name = detail::weight_kernel("embed", table.dtype, name);
  const cl_mem w = weight_buffer(table.data, table.rows * table.row_bytes());
  const cl_mem ids = upload_indices(tokens.data(), tokens.size_bytes());
  const Bound o = bind(out, tokens.size() * table.cols, Direction::out);
  set_args(kernel_name, w, cl_ulong{table.row_bytes()}, static_cast<cl_uint>(table.cols), ids, o.mem, o.offset);
  launch(kernel_name, detail::round_up(table.cols, 64), tokens.size());
  finish(o);
}

inline OpenClOps::MatmulKernel OpenClOps::matmul_kernel_for(std::size_t m, DType dtype) {
  if (forced_matmul_ != MatmulKernel::automatic) return forced_matmul_;
  if (m <= gemv_rows_limit) return MatmulKernel::gemv;
  std::string name;
  const std::size_t side = gemm_work_group_side;
  return kernel_group_limit(detail::weight_kernel("gemm_tiled", dtype, name)) >= side * side ? MatmulKernel::tiled
                                                                                              : MatmulKernel::naive;
}

inline void OpenClOps::matmul(const float* x, std::size_t m, const weight_type& w, float* y) {
  staging_used_ = 0;
  if (m == 0) return;
  const MatmulKernel choice = matmul_kernel_for(m, w.dtype);
  const bool gemv = choice == MatmulKernel::gemv || choice == MatmulKernel::gemv_local_reduction;
  if (gemv && m > gemv_max_rows)
    throw invalid_argument("m", "OpenCL: the GEMV kernel takes at most " + std::to_string(gemv_max_rows) +
                                    " activation rows, not " + std::to_string(m));
  std::string name;
  const char* kernel_name = detail::weight_kernel(gemv                           ? "gemv"
                                                  : choice == MatmulKernel::tiled ? "gemm_tiled"
                                                                                  : "matmul",
                                                  w.dtype, name);
  const cl_mem wb = weight_buffer(w.data, w.rows * w.row_bytes());
  const Bound in = bind(x, m * w.cols, Direction::in);
  const Bound out = bind(y, m * w.rows, Direction::out);
  const auto k = static_cast<cl_uint>(w.cols), n = static_cast<cl_uint>(w.rows);
  if (gemv) {
    const GemvShape shape = gemv_shape(choice, w.dtype, w.cols, w.rows);
    // The sub-group path uses no local memory (one float: the argument must have a size).
    set_args(kernel_name, in.mem, in.offset, k, static_cast<cl_uint>(m), wb, cl_ulong{w.row_bytes()}, n, out.mem,
             out.offset, detail::LocalFloats{shape.subgroups ? 1 : gemv_max_rows * shape.group},
             static_cast<cl_uint>(shape.lanes), cl_uint{shape.subgroups ? 1u : 0u});
    const std::size_t groups = (w.rows + shape.rows_per_group - 1) / shape.rows_per_group;
    launch(kernel_name, groups * shape.group, 1, shape.group, 1);
  } else if (choice == MatmulKernel::tiled) {
    if (kernel_group_limit(kernel_name) < gemm_work_group_side * gemm_work_group_side)
      throw invalid_argument("matmul", "OpenCL: this device cannot run the tiled GEMM's 8x8 work-groups");
    set_args(kernel_name, in.mem, in.offset, k, static_cast<cl_uint>(m), wb, cl_ulong{w.row_bytes()}, n, out.mem,
             out.offset);
    const std::size_t side = gemm_work_group_side;
    launch(kernel_name, (w.rows + gemm_tile - 1) / gemm_tile * side, (m + gemm_tile - 1) / gemm_tile * side, side,
           side);
  } else {
    set_args(kernel_name, in.mem, in.offset, k, wb, cl_ulong{w.row_bytes()}, n, out.mem, out.offset);
    launch(kernel_name, detail::round_up(w.rows, 64), m);
  }
  finish(out);
}

inline void OpenClOps::rms_norm(const float* x, std::size_t rows, std::size_t dim, const float* weight, float eps,
                                float* out) {
  staging_used_ = 0;
  const cl_mem wb = weight_buffer(weight, dim * sizeof(float));
  if (x == out) {
    const Bound io = bind(out, rows * dim, Direction::in_out);
    set_args("rms_norm", io.mem, io.offset, static_cast<cl_uint>(dim), wb, eps, io.mem, io.offset);
    launch("rms_norm", rows, 1);
    finish(io);
    return;
  }
  const Bound in = bind(x, rows * dim, Direction::in);
  const Bound o = bind(out, rows * dim, Direction::out);
  set_args("rms_norm", in.mem, in.offset, static_cast<cl_uint>(dim), wb, eps, o.mem, o.offset);
  launch("rms_norm", rows, 1);
  finish(o);
}

inline void OpenClOps::rms_norm_heads(float* x, std::size_t rows, std::size_t heads, std::size_t head_dim,
                                      const float* weight, float eps) {
  staging_used_ = 0;
  const cl_mem wb = weight_buffer(weight, head_dim * sizeof(float));
  const Bound io = bind(x, rows * heads * head_dim, Direction::in_out);
  set_args("rms_norm", io.mem, io.offset, static_cast<cl_uint>(head_dim), wb, eps, io.mem, io.offset);
  launch("rms_norm", rows * heads, 1);
  finish(io);
}

inline void OpenClOps::rope(float* x, std::size_t rows, std::size_t heads, std::size_t head_dim,
                            std::span<const std::int64_t> positions, double theta) {
  staging_used_ = 0;
  if (positions.size() < rows)
    throw invalid_argument("positions", "OpenCL rope: fewer positions than rows");
  std::int64_t furthest = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    if (positions[r] < 0) throw invalid_argument("positions", "OpenCL rope: a negative position");
    furthest = std::max(furthest, positions[r]);
  }
  const auto needed = static_cast<std::size_t>(furthest) + 1;
  if (!rotary_cos_.get() || rotary_head_dim_ != head_dim || rotary_theta_ != theta || rotary_positions_ < needed) {
    // The CPU backend's table, so both backends rotate by the same floats.
    const std::size_t positions_kept = std::max<std::size_t>(needed * 2, 4096);
    const kernels::cpu::RotaryTable table(head_dim, theta, positions_kept);
    const std::size_t bytes = positions_kept * (head_dim / 2) * sizeof(float);
    rotary_cos_ = DeviceBuffer(*context_, bytes);
    rotary_sin_ = DeviceBuffer(*context_, bytes);
    rotary_cos_.write(*context_, table.cos(0), bytes);
    rotary_sin_.write(*context_, table.sin(0), bytes);
    rotary_head_dim_ = head_dim;
    rotary_theta_ = theta;
    rotary_positions_ = positions_kept;
  }
  const cl_mem pos = upload_indices(positions.data(), rows * sizeof(std::int64_t));
  const Bound io = bind(x, rows * heads * head_dim, Direction::in_out);
  set_args("rope", io.mem, io.offset, static_cast<cl_uint>(heads), static_cast<cl_uint>(head_dim), pos,
           rotary_cos_.get(), rotary_sin_.get());
  launch("rope", rows * heads, head_dim / 2);
  finish(io);
}

inline void OpenClOps::store_kv(const KVLayerView& view, DType dtype, const float* k, const float* v,
                                std::span<const std::int64_t> slots, std::size_t kv_heads, std::size_t head_dim) {
  staging_used_ = 0;
  if (slots.empty()) return;
  std::string name;
  const char* kernel_name = detail::cache_kernel("store_kv", dtype, name);
  const std::size_t row = kv_heads * head_dim;
  cl_ulong keys_off = 0, values_off = 0;
  const cl_mem keys = bind_view(view.keys, keys_off, "keys");
  const cl_mem values = bind_view(view.values, values_off, "values");
  const cl_mem slot_ids = upload_indices(slots.data(), slots.size_bytes());
  const Bound kb = bind(k, slots.size() * row, Direction::in);
  const Bound vb = bind(v, slots.size() * row, Direction::in);
  set_args(kernel_name, kb.mem, kb.offset, vb.mem, vb.offset, slot_ids, static_cast<cl_uint>(row), keys, keys_off, values,
           values_off);
  launch(kernel_name, slots.size(), row);
}

inline void OpenClOps::attention(const float* q, std::span<const attention_sequence> sequences,
                                 const KVLayerView& view, DType dtype, std::size_t block_size, std::size_t heads,
                                 std::size_t kv_heads, std::size_t head_dim, float* out) {
  staging_used_ = 0;
  if (head_dim > static_cast<std::size_t>(max_head_dim))
    throw invalid_argument("head_dim", "OpenCL attention: head_dim " + std::to_string(head_dim) + " is above " +
                                           std::to_string(max_head_dim));
  if (kv_heads == 0 || heads % kv_heads != 0)
    throw invalid_argument("num_kv_heads", "OpenCL attention: heads must be a multiple of kv heads");
  std::string name;
  const char* kernel_name = detail::cache_kernel("attention", dtype, name);
  std::size_t rows = 0;
  for (const attention_sequence& s : sequences) rows = std::max(rows, s.first_row + s.num_tokens);
  if (rows == 0) return;
  const bool reuse = in_step_ && attention_key_.sequences == sequences.data() &&
                     attention_key_.count == sequences.size();
  if (!reuse) {
    row_seq_host_.assign(rows, -1);
    seq_info_host_.clear();
    tables_host_.clear();
    for (std::size_t i = 0; i < sequences.size(); ++i) {
      const attention_sequence& s = sequences[i];
      for (std::size_t t = 0; t < s.num_tokens; ++t) row_seq_host_[s.first_row + t] = static_cast<cl_int>(i);
      const std::size_t last_visible = s.visible_limit(s.num_tokens ? s.num_tokens - 1 : 0);
      if (s.num_tokens && (last_visible + block_size - 1) / block_size > s.block_table.size())
        throw invalid_argument("block_table", "OpenCL attention: a sequence's block table is shorter than its positions");
      seq_info_host_.insert(seq_info_host_.end(),
                            {static_cast<cl_int>(s.num_computed), static_cast<cl_int>(s.first_row),
                             static_cast<cl_int>(tables_host_.size()), static_cast<cl_int>(s.first_visible),
                             static_cast<cl_int>(s.visible_end)});
      tables_host_.insert(tables_host_.end(), s.block_table.begin(), s.block_table.end());
    }
    if (tables_host_.empty()) tables_host_.push_back(0);
    row_seq_ = upload_indices(row_seq_host_.data(), row_seq_host_.size() * sizeof(cl_int));
    seq_info_ = upload_indices(seq_info_host_.data(), seq_info_host_.size() * sizeof(cl_int));
    tables_ = upload_indices(tables_host_.data(), tables_host_.size() * sizeof(cl_uint));
    if (in_step_) attention_key_ = {sequences.data(), sequences.size()};
  }
  cl_ulong keys_off = 0, values_off = 0;
  const cl_mem keys = bind_view(view.keys, keys_off, "keys");
  const cl_mem values = bind_view(view.values, values_off, "values");
  const Bound qb = bind(q, rows * heads * head_dim, Direction::in);
  const Bound ob = bind(out, rows * heads * head_dim, Direction::out);
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  set_args(kernel_name, qb.mem, qb.offset, row_seq_, seq_info_, tables_, keys, keys_off, values,
           values_off, static_cast<cl_uint>(heads), static_cast<cl_uint>(kv_heads),
           static_cast<cl_uint>(head_dim), static_cast<cl_uint>(block_size), scale, ob.mem, ob.offset);
  launch(kernel_name, rows, heads);
  finish(ob);
}

inline void OpenClOps::silu_mul(float* gate, const float* up, std::size_t n) {
  staging_used_ = 0;
  const Bound g = bind(gate, n, Direction::in_out);
  const Bound u = bind(up, n, Direction::in);
  set_args("silu_mul", g.mem, g.offset, u.mem, u.offset);
  launch("silu_mul", n, 1);
  finish(g);
}

inline void OpenClOps::add(float* x, const float* y, std::size_t n) {
  staging_used_ = 0;
  const Bound xb = bind(x, n, Direction::in_out);
  const Bound yb = bind(y, n, Direction::in);
  set_args("add_inplace", xb.mem, xb.offset, yb.mem, yb.offset);
  launch("add_inplace", n, 1);
  finish(xb);
}

inline void OpenClOps::gather_rows(const float* x, std::size_t dim, std::span<const std::uint32_t> rows, float* out) {
  staging_used_ = 0;
  if (rows.empty()) return;
  std::uint32_t furthest = 0;
  for (std::uint32_t r : rows) furthest = std::max(furthest, r);
  const cl_mem ids = upload_indices(rows.data(), rows.size_bytes());
  const Bound in = bind(x, (std::size_t{furthest} + 1) * dim, Direction::in);
  const Bound o = bind(out, rows.size() * dim, Direction::out);
  set_args("gather_rows", in.mem, in.offset, static_cast<cl_uint>(dim), ids, o.mem, o.offset);
  launch("gather_rows", detail::round_up(dim, 64), rows.size());
  finish(o);
}

}  // namespace izwi::opencl
