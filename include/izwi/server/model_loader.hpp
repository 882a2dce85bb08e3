#pragma once
// The stock model loader of izwi-server: recognizes a checkpoint and builds
// the engine that serves it on the CPU.
//
//   Hugging Face directory (config.json "model_type": "qwen3") or a qwen3
//   .gguf file  →  Engine<Scheduler, KVCache, CpuExecutor<Qwen3>>
//   with the scheduler (FcfsScheduler or PriorityScheduler) and the KV cache
//   (PagedKVCache<> or UnifiedKVCache<>) the settings name: four compile-time
//   configurations behind the one AnyEngine boundary;
//
//   Hugging Face directory ("model_type": "whisper") or a whisper.cpp ggml
//   .bin file  →  WhisperCpuEngine (FCFS, paged cache), serving asr (and
//   translation, multilingual models) through /v1/audio/*.
//
// With settings.device on OpenCL (izwi-server --device opencl[:P:D]; see
// izwi/server/device.hpp), Qwen3 runs on OpenClExecutor<Qwen3> with a
// DeviceKVCache<> (--kv-cache paged: kv_cache_bytes of device memory) or the
// UnifiedKVCache<> (--kv-cache unified: host memory the device reads in
// place), compiled only where izwi was built with OpenCL (IZWI_WITH_OPENCL);
// Whisper and every other family is refused there: they run on the CPU only.
//
// Anything else is refused with an error naming the path and what was found.
// Host programs with other engine configurations write their own Loader
// (ModelRegistry::Loader) around EngineModel<TheirEngine>.

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

#include "izwi/config.hpp"
#include "izwi/io/file_memory.hpp"
#include "izwi/server/any_engine.hpp"
#include "izwi/server/device.hpp"
#include "izwi/server/model_registry.hpp"

namespace izwi::server {

/// Which scheduler serves the model (izwi-server --scheduling-policy).
enum class SchedulingPolicy {
  fcfs,      ///< FcfsScheduler: arrival order
  priority,  ///< PriorityScheduler: the request's `priority` (lower first), aged so nothing starves
  /// PlaybackDeadlineScheduler for speech models: first the streams whose
  /// listeners are closest to running out of audio. Text and Whisper models
  /// are served in arrival order under it (FCFS).
  playback_deadline,
};
/// Which KV cache holds the model's K/V (izwi-server --kv-cache).
enum class KVCacheKind {
  paged,    ///< PagedKVCache<>: a fixed pool of kv_cache_bytes
  unified,  ///< UnifiedKVCache<>: a share of physical memory, watching memory pressure
};

/// A Whisper engine's token budget per step when none is given: five 30-s
/// windows (1536 positions each) start in one encoder batch.
inline constexpr std::size_t whisper_default_batched_tokens = 8192;

struct CpuLoaderSettings {
  SchedulingPolicy scheduling = SchedulingPolicy::fcfs;
  KVCacheKind kv_cache = KVCacheKind::paged;
  /// KV-cache share of physical memory with KVCacheKind::unified, in (0, 1].
  double kv_cache_memory_fraction = 0.85;
  /// Executor threads; 0: one per core.
  std::size_t num_threads = 0;
  /// KV-cache memory per model (KVCacheKind::paged).
  std::size_t kv_cache_bytes = std::size_t{1} << 30;
  /// Requests waiting beyond this get 429; 0: no limit.
  std::size_t max_waiting_requests = 256;
  /// Scheduler limits per step (vLLM's max_num_seqs / max_num_batched_tokens);
  /// 0: the scheduler's default (for Whisper, whisper_default_batched_tokens).
  std::size_t max_num_seqs = 0;
  std::size_t max_num_batched_tokens = 0;
  /// Context limit override; 0: the model's.
  std::size_t max_model_len = 0;
  bool enable_prefix_caching = true;
  /// Qwen3-TTS: the codec decoder in bf16 on AMX or AVX512_BF16 where the CPU has one
  /// (Qwen3TtsCodecPrecision::bf16; izwi-server --tts-codec-precision).
  bool tts_codec_bf16 = false;
  /// Qwen3 and Qwen3-TTS checkpoints read into huge-page memory, or mapped
  /// (io/file_memory.hpp; izwi-server --mmap). Whisper copies its weights
  /// into huge-page memory either way.
  io::FileMemory weights_memory = io::FileMemory::read;
  /// Chunks a response stream holds before its request pauses.
  std::size_t stream_capacity = 64;
  /// Where chat models run: the CPU, or an OpenCL device opened once with
  /// open_device (izwi-server --device). Named in ModelInfo::device.
  ServingDevice device{};
};

/// Loads one model from `path`; throws izwi::error with a message naming
/// the path and the problem.
IZWI_DECL std::unique_ptr<AnyEngine> load_cpu_model(const std::string& id, const std::filesystem::path& path,
                                          const CpuLoaderSettings& settings);

/// A ModelRegistry::Loader that calls load_cpu_model with `settings`.
inline ModelRegistry::Loader cpu_model_loader(CpuLoaderSettings settings) {
  return [settings](const std::string& id, const std::filesystem::path& path) {
    return load_cpu_model(id, path, settings);
  };
}

}  // namespace izwi::server

#if !defined(IZWI_SEPARATE_COMPILATION)
#include "izwi/server/impl/model_loader.ipp"
#endif
