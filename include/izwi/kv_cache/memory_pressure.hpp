#pragma once
// Memory pressure: what the unified-memory KV cache (unified.hpp) reads from
// the system to decide how hard to hold on to memory.
//
// A pressure source is anything with `read()` returning a MemoryPressureSample:
//
//   struct MySource { izwi::MemoryPressureSample read(); };
//
// SystemMemoryPressureSource reads Linux's /proc/meminfo (MemAvailable /
// MemTotal) and /proc/pressure/memory (PSI "some" avg10). Where a file is
// missing (another OS, PSI disabled, a sandbox) it reports what it could
// read, and a machine it cannot read at all reads as no pressure: the cache
// then behaves like the plain paged cache rather than refusing to serve.
// ManualMemoryPressureSource is set by hand, for tests.
//
// A sample becomes a level (normal / warning / critical) with hysteresis:
// a level is entered as soon as one reading crosses its threshold, and left
// only when the reading is better than the threshold by a margin, so a reading
// that hovers at a threshold does not flip the engine's behaviour every step.

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "izwi/concepts/kv_cache.hpp"

namespace izwi {

struct MemoryPressureSample {
  /// Memory the system could hand out without swapping, as a fraction of all
  /// memory (MemAvailable / MemTotal). 1.0 when unknown.
  double available_fraction = 1.0;
  /// Share of the last 10 s in which some task stalled on memory, in percent
  /// (PSI "some avg10"); empty when the system does not report it.
  std::optional<double> psi_some_avg10;
};

/// A source of memory-pressure readings.
template <class S>
concept MemoryPressureSource = requires(S& s) {
  { s.read() } -> std::same_as<MemoryPressureSample>;
};

/// When a sample means warning or critical. A level is entered when either
/// reading crosses its threshold and left when both are clear of it by the margin.
struct MemoryPressureThresholds {
  double warning_available_fraction = 0.15;
  double critical_available_fraction = 0.05;
  double warning_psi = 10.0;
  double critical_psi = 40.0;
  /// Leaving a level needs this much more available memory than its threshold...
  double available_margin = 0.05;
  /// ...and a PSI this many points below its threshold.
  double psi_margin = 5.0;

  /// Throws izwi::invalid_argument naming the first inconsistent field
  /// (fractions outside [0, 1], critical not below warning, negative margins).
  void validate() const;
};

/// The level a sample indicates, without history.
MemoryPressure classify_memory_pressure(const MemoryPressureSample& sample,
                                        const MemoryPressureThresholds& thresholds) noexcept;

/// The level after `sample` when the level was `current`: higher levels are
/// entered at once, lower ones only past the thresholds plus margins.
MemoryPressure next_memory_pressure(MemoryPressure current, const MemoryPressureSample& sample,
                                    const MemoryPressureThresholds& thresholds) noexcept;

/// "normal", "warning", "critical".
std::string_view to_string(MemoryPressure level) noexcept;

/// Physical memory of the machine (sysconf), or empty when it cannot be read.
std::optional<std::size_t> physical_memory_bytes() noexcept;

/// Reads the Linux kernel's memory accounting. Paths can be redirected (tests).
class SystemMemoryPressureSource {
 public:
  SystemMemoryPressureSource() = default;
  SystemMemoryPressureSource(std::string meminfo_path, std::string psi_path)
      : meminfo_path_(std::move(meminfo_path)), psi_path_(std::move(psi_path)) {}

  /// Never throws; unreadable files leave the sample's defaults in place.
  MemoryPressureSample read() const noexcept;

 private:
  std::string meminfo_path_ = "/proc/meminfo";
  std::string psi_path_ = "/proc/pressure/memory";
};

/// A source whose readings a test sets. Copies share one state, so a test can
/// keep a copy and change what a cache that holds another copy will read:
///
///   izwi::ManualMemoryPressureSource pressure;
///   izwi::UnifiedKVCache<izwi::ManualMemoryPressureSource> kv(shape, config, pressure);
///   pressure.set(0.10);   // kv now reads 10 % available
///
/// Setting and reading are atomic, so another thread may set while the engine reads.
class ManualMemoryPressureSource {
 public:
  ManualMemoryPressureSource() : state_(std::make_shared<State>()) {}

  void set(double available_fraction, std::optional<double> psi_some_avg10 = std::nullopt) noexcept {
    state_->available.store(available_fraction, std::memory_order_relaxed);
    state_->psi.store(psi_some_avg10.value_or(std::numeric_limits<double>::quiet_NaN()), std::memory_order_relaxed);
  }
  void set(const MemoryPressureSample& sample) noexcept { set(sample.available_fraction, sample.psi_some_avg10); }

  MemoryPressureSample read() noexcept {
    state_->reads.fetch_add(1, std::memory_order_relaxed);
    MemoryPressureSample s;
    s.available_fraction = state_->available.load(std::memory_order_relaxed);
    const double psi = state_->psi.load(std::memory_order_relaxed);
    if (psi == psi) s.psi_some_avg10 = psi;  // NaN marks "not reported"
    return s;
  }
  /// How many times any copy was read (lets tests see the poll interval work).
  std::uint64_t reads() const noexcept { return state_->reads.load(std::memory_order_relaxed); }

 private:
  struct State {
    std::atomic<double> available{1.0};
    std::atomic<double> psi{std::numeric_limits<double>::quiet_NaN()};
    std::atomic<std::uint64_t> reads{0};
  };
  std::shared_ptr<State> state_;
};

}  // namespace izwi

#include "izwi/kv_cache/impl/memory_pressure.hpp"
