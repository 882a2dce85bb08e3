#pragma once
// The stock engine configurations, by name: Qwen3 on the CPU with either
// scheduler and either KV cache (what izwi-server's --scheduling-policy and
// --kv-cache choose between), Whisper and Qwen3-TTS on the CPU.
//
//   izwi::Qwen3CpuEngine engine(izwi::FcfsScheduler{}, std::move(cache), std::move(executor));
//
// Under IZWI_SEPARATE_COMPILATION (izwi/config.hpp) they are declared
// `extern template` here and instantiated once, in <izwi/src.hpp>: a
// translation unit that includes this header compiles none of their step
// loop, forward pass or kernels. Include it before using one of them.

#include "izwi/config.hpp"
#include "izwi/engine/engine.hpp"
#include "izwi/executor/cpu.hpp"
#include "izwi/executor/qwen3_tts_cpu.hpp"
#include "izwi/executor/whisper_cpu.hpp"
#include "izwi/kv_cache/paged.hpp"
#include "izwi/kv_cache/unified.hpp"
#include "izwi/models/qwen3.hpp"
#include "izwi/models/whisper.hpp"
#include "izwi/scheduler/fcfs.hpp"
#include "izwi/scheduler/priority.hpp"

namespace izwi {

/// Qwen3 on the CPU, first come first served, a fixed paged pool.
using Qwen3CpuEngine = Engine<FcfsScheduler, PagedKVCache<>, CpuExecutor<Qwen3>>;
/// ... scheduled by request priority (aged, so nothing starves).
using Qwen3CpuPriorityEngine = Engine<PriorityScheduler, PagedKVCache<>, CpuExecutor<Qwen3>>;
/// ... with the unified-memory cache (a share of RAM, memory-pressure aware).
using Qwen3CpuUnifiedEngine = Engine<FcfsScheduler, UnifiedKVCache<>, CpuExecutor<Qwen3>>;
/// ... both.
using Qwen3CpuPriorityUnifiedEngine = Engine<PriorityScheduler, UnifiedKVCache<>, CpuExecutor<Qwen3>>;

/// Whisper (speech recognition, translation) on the CPU, first come first
/// served, a fixed paged pool holding each request's audio K/V and decoder K/V.
using WhisperCpuEngine = Engine<FcfsScheduler, PagedKVCache<>, WhisperCpuExecutor>;

/// Qwen3-TTS (text to speech) on the CPU, first come first served, a fixed
/// paged pool holding each speaking request's talker K/V.
using Qwen3TtsCpuEngine = Engine<FcfsScheduler, PagedKVCache<>, Qwen3TtsCpuExecutor>;

}  // namespace izwi

#if defined(IZWI_SEPARATE_COMPILATION) && !defined(IZWI_SOURCE)
#define IZWI_STOCK_INSTANTIATION extern template
#include "izwi/detail/stock_instantiations.hpp"
#undef IZWI_STOCK_INSTANTIATION
#endif
