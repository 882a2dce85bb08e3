#pragma once
// UnifiedKVCache: the "Metal-style" KV cache for machines where the model and
// everything else share one pool of memory (Apple silicon, integrated GPUs,
// a CPU host that also runs other services). Satisfies izwi::KVCachePolicy and
// the optional izwi::PressureAwareKVCache ability.
//
// It blocks, shares prefixes and lays out K/V exactly like PagedKVCache (both
// use detail::BlockManager), and differs in two ways:
//   - its budget is a fraction of physical memory (default 0.85), reserved as
//     address space with mmap(MAP_NORESERVE): a block costs resident memory
//     only once written, and its pages can be given back (madvise) when freed
//     (or, with config.memory, another UnifiedMemoryResource: OpenCL SVM);
//   - it watches memory pressure and tells the scheduler, through
//     admission_advice(), how to behave this step:
//
//       level     cache does                               scheduler is told
//       normal    nothing                                  no limit
//       warning   evicts every cached free block and       max_num_seqs = max(1, 3/4 of the
//                 gives its pages back                     sequences holding blocks)
//       critical  also gives back the pages of every       admit no new requests;
//                 free block                               max_num_seqs = sequences holding blocks
//
//     The source is read at most once per poll_interval; between readings the
//     level and the limits stay as they were, while evictions continue each
//     call (blocks freed since are evicted too). Levels change with hysteresis
//     (memory_pressure.hpp).
//
//   izwi::ManualMemoryPressureSource pressure;                   // tests
//   izwi::UnifiedKVCache<izwi::ManualMemoryPressureSource> kv(shape, {.num_blocks = 64}, pressure);
//
// memory_space is unified_space: a CPU executor and a GPU executor that shares
// host memory (OpenCL SVM, Apple unified memory) can both read it.
// Not thread-safe: the engine calls it from its step loop only.

#include <chrono>
#include <memory>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "izwi/concepts/kv_cache.hpp"
#include "izwi/concepts/memory_space.hpp"
#include "izwi/concepts/tags.hpp"
#include "izwi/core/ids.hpp"
#include "izwi/core/kv_cache_shape.hpp"
#include "izwi/core/request.hpp"
#include "izwi/kv_cache/detail/block_manager.hpp"
#include "izwi/kv_cache/detail/kv_storage.hpp"
#include "izwi/kv_cache/detail/mapped_region.hpp"
#include "izwi/kv_cache/memory_pressure.hpp"
#include "izwi/kv_cache/unified_memory.hpp"

namespace izwi {

struct UnifiedKVCacheConfig {
  /// Share of physical memory given to K/V storage, in (0, 1].
  double memory_fraction = 0.85;
  /// Physical memory to take the fraction of; read from the system when empty.
  std::optional<std::size_t> physical_memory_bytes;
  /// Exact number of usable blocks; overrides the fraction when set.
  std::optional<std::size_t> num_blocks;
  /// Upper bound on blocks derived from the fraction. A real model's block
  /// holds 100 KB or more, so this only bites for toy shapes, whose per-block
  /// bookkeeping would otherwise dwarf their K/V.
  std::size_t max_num_blocks = std::size_t{1} << 20;
  bool enable_prefix_caching = true;
  /// Also remember the partly filled last block of a finished sequence and,
  /// for a later sequence that starts with the same tokens (a beam forked from
  /// it, a chat's next turn), copy the matching rows into a block of its own,
  /// so only what is new is computed. Needs enable_prefix_caching; remembered
  /// blocks are evicted with the cached ones under pressure.
  bool reuse_partial_blocks = true;
  MemoryPressureThresholds thresholds;
  /// Minimum time between two readings of the pressure source; 0 reads on every call.
  std::chrono::nanoseconds poll_interval = std::chrono::milliseconds(100);
  /// Under warning, the share of the sequences holding blocks the scheduler may keep.
  double warning_batch_fraction = 0.75;
  /// Where the storage comes from; null: host memory (HostMappedMemory). For
  /// an OpenCL device: opencl::unified_memory_for(context), shared virtual
  /// memory where the device has it (kernels/opencl/unified_memory.hpp).
  std::shared_ptr<UnifiedMemoryResource> memory;
};

template <class PressureSource = SystemMemoryPressureSource, std::size_t BlockSize = 16>
class UnifiedKVCache {
  static_assert(MemoryPressureSource<PressureSource>,
                "UnifiedKVCache: PressureSource needs `MemoryPressureSample read()` (see memory_pressure.hpp)");
  static_assert(BlockSize > 0, "UnifiedKVCache needs at least one token per block");

 public:
  using policy_category = kv_cache_tag;
  using memory_space = unified_space;
  using config_type = UnifiedKVCacheConfig;
  using pressure_source_type = PressureSource;
  static constexpr std::size_t block_size_v = BlockSize;

  /// Reserves the storage. Throws izwi::invalid_argument naming the field when
  /// the shape is unusable, memory_fraction is outside (0, 1], the budget
  /// cannot hold one block besides the null block, or the thresholds are
  /// inconsistent; izwi::error when the system refuses the reservation.
  UnifiedKVCache(KVCacheShape shape, UnifiedKVCacheConfig config = {}, PressureSource source = PressureSource{});

  UnifiedKVCache(const UnifiedKVCache&) = delete;
  UnifiedKVCache& operator=(const UnifiedKVCache&) = delete;
  UnifiedKVCache(UnifiedKVCache&&) noexcept = default;
  UnifiedKVCache& operator=(UnifiedKVCache&&) noexcept = default;

  std::size_t block_size() const noexcept { return BlockSize; }
  const KVCacheShape& shape() const noexcept { return shape_; }
  const UnifiedKVCacheConfig& config() const noexcept { return config_; }

  /// As PagedKVCache::find_cached_prefix.
  PrefixHit find_cached_prefix(const SequenceView& seq) { return blocks_.find_cached_prefix(seq); }
  /// As PagedKVCache::allocate_slots: false, changing nothing, when the free
  /// blocks do not suffice or the hit is stale; a partial part's rows are copied here.
  bool allocate_slots(const SequenceView& seq, std::size_t num_computed, std::size_t num_new, PrefixHit hit = {}) {
    detail::BlockRowCopy copy;
    if (!blocks_.allocate_slots(seq, num_computed, num_new, hit, &copy)) return false;
    if (copy.rows != 0) layout_.copy_block_rows(storage_.data(), copy.from, copy.to, copy.rows, row_bytes());
    return true;
  }
  /// Releases the sequence's blocks, last block first, remembering a partly
  /// filled last block (reuse_partial_blocks). Unknown ids are ignored.
  void free(RequestId id) noexcept { blocks_.free(id); }
  /// free(id) for a sequence preempted after its step was planned: blocks past
  /// its first num_written_tokens tokens lose their prefix-cache keys (unwritten).
  void free_unwritten(RequestId id, std::size_t num_written_tokens) noexcept {
    blocks_.free_unwritten(id, num_written_tokens);
  }
  std::span<const BlockId> block_table(RequestId id) const noexcept { return blocks_.block_table(id); }
  /// Every field of KVCacheStats. total_bytes is the address space reserved
  /// (resident memory is less: see released_bytes()); evictions also counts
  /// cached blocks evicted under pressure.
  KVCacheStats stats() const noexcept;
  /// K and V storage of `layer`; both null for a layer past shape().num_layers.
  KVLayerView layer(std::uint32_t layer) noexcept { return layout_.view(storage_.data(), layer); }

  /// Reads the pressure source if poll_interval has passed, applies the
  /// current level's evictions, and says what the scheduler may do this step.
  AdmissionAdvice admission_advice();
  /// The level as of the last reading (no new reading).
  MemoryPressure pressure() const noexcept { return level_; }
  PressureSource& pressure_source() noexcept { return source_; }
  /// The resource the storage came from (HostMappedMemory unless config.memory said otherwise).
  const std::shared_ptr<UnifiedMemoryResource>& memory_resource() const noexcept { return storage_.resource(); }

  // --- introspection, for tests and metrics -----------------------------------
  /// Bytes of pages given back to the system so far.
  std::uint64_t released_bytes() const noexcept { return released_bytes_; }
  std::uint32_t ref_count(BlockId b) const noexcept { return blocks_.ref_count(b); }
  std::size_t num_sequences() const noexcept { return blocks_.num_sequences(); }
  std::size_t num_partial_blocks() const noexcept { return blocks_.num_partial_blocks(); }
  std::string check_invariants() const { return blocks_.check_invariants(); }

 private:
  static std::size_t usable_blocks(const KVCacheShape& shape, const UnifiedKVCacheConfig& config);
  std::size_t row_bytes() const noexcept { return shape_.row_elements() * dtype_size(shape_.dtype); }
  void poll_if_due();
  /// Gives back the pages of `ids` (free, uncached blocks), coalescing runs of adjacent ids.
  void release_pages(std::vector<BlockId>& ids) noexcept;
  void release_all_free_pages() noexcept;

  KVCacheShape shape_;
  UnifiedKVCacheConfig config_;
  std::size_t bytes_per_block_;
  detail::BlockManager blocks_;
  detail::KVStorageLayout layout_;
  detail::UnifiedRegion storage_;
  [[no_unique_address]] PressureSource source_;
  MemoryPressure level_ = MemoryPressure::normal;
  std::optional<TimePoint> last_poll_;
  AdmissionAdvice advice_;
  std::uint64_t swept_generation_ = 0;
  std::uint64_t released_bytes_ = 0;
  std::vector<BlockId> release_scratch_;
};

}  // namespace izwi

#include "izwi/kv_cache/impl/unified.hpp"
