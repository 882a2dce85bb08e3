#pragma once

#include <cstdio>
#include <cstring>

#include <unistd.h>

#include "izwi/core/error.hpp"

namespace izwi {

inline void MemoryPressureThresholds::validate() const {
  const auto fraction = [](const char* field, double v) {
    if (!(v >= 0.0 && v <= 1.0)) {
      throw invalid_argument(field, std::string(field) + " must be a fraction in [0, 1], got " + std::to_string(v));
    }
  };
  fraction("warning_available_fraction", warning_available_fraction);
  fraction("critical_available_fraction", critical_available_fraction);
  fraction("available_margin", available_margin);
  if (critical_available_fraction > warning_available_fraction) {
    throw invalid_argument("critical_available_fraction",
                           "critical_available_fraction (" + std::to_string(critical_available_fraction) +
                               ") must not exceed warning_available_fraction (" +
                               std::to_string(warning_available_fraction) + ")");
  }
  if (!(warning_psi >= 0.0 && critical_psi >= warning_psi)) {
    throw invalid_argument("critical_psi", "PSI thresholds need 0 <= warning_psi <= critical_psi, got " +
                                               std::to_string(warning_psi) + " and " + std::to_string(critical_psi));
  }
  if (!(psi_margin >= 0.0)) {
    throw invalid_argument("psi_margin", "psi_margin must be >= 0, got " + std::to_string(psi_margin));
  }
}

namespace memory_pressure_detail {
/// Level with every threshold made stricter by the given margins (0 for entering).
inline MemoryPressure classify(const MemoryPressureSample& s, const MemoryPressureThresholds& t,
                               double available_margin, double psi_margin) noexcept {
  const double psi = s.psi_some_avg10.value_or(0.0);
  if (s.available_fraction < t.critical_available_fraction + available_margin || psi > t.critical_psi - psi_margin) {
    return MemoryPressure::critical;
  }
  if (s.available_fraction < t.warning_available_fraction + available_margin || psi > t.warning_psi - psi_margin) {
    return MemoryPressure::warning;
  }
  return MemoryPressure::normal;
}
}  // namespace memory_pressure_detail

inline MemoryPressure classify_memory_pressure(const MemoryPressureSample& sample,
                                               const MemoryPressureThresholds& thresholds) noexcept {
  return memory_pressure_detail::classify(sample, thresholds, 0.0, 0.0);
}

inline MemoryPressure next_memory_pressure(MemoryPressure current, const MemoryPressureSample& sample,
                                           const MemoryPressureThresholds& thresholds) noexcept {
  const MemoryPressure entered = classify_memory_pressure(sample, thresholds);
  if (entered >= current) return entered;
  // Going down: the reading must also clear the stricter thresholds; it may
  // step down one level or two, but never below what it plainly indicates.
  const MemoryPressure cleared =
      memory_pressure_detail::classify(sample, thresholds, thresholds.available_margin, thresholds.psi_margin);
  return cleared < current ? cleared : current;
}

inline std::string_view to_string(MemoryPressure level) noexcept {
  switch (level) {
    case MemoryPressure::normal: return "normal";
    case MemoryPressure::warning: return "warning";
    case MemoryPressure::critical: return "critical";
  }
  return "unknown";
}

inline std::optional<std::size_t> physical_memory_bytes() noexcept {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return std::nullopt;
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
}

inline MemoryPressureSample SystemMemoryPressureSource::read() const noexcept {
  MemoryPressureSample sample;
  if (std::FILE* f = std::fopen(meminfo_path_.c_str(), "r")) {
    char line[256];
    unsigned long long total = 0, available = 0;
    bool have_total = false, have_available = false;
    while ((!have_total || !have_available) && std::fgets(line, sizeof line, f)) {
      if (std::sscanf(line, "MemTotal: %llu", &total) == 1) have_total = true;
      else if (std::sscanf(line, "MemAvailable: %llu", &available) == 1) have_available = true;
    }
    std::fclose(f);
    if (have_total && have_available && total > 0) {
      sample.available_fraction = static_cast<double>(available) / static_cast<double>(total);
    }
  }
  if (std::FILE* f = std::fopen(psi_path_.c_str(), "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
      double avg10 = 0.0;
      if (std::sscanf(line, "some avg10=%lf", &avg10) == 1) {
        sample.psi_some_avg10 = avg10;
        break;
      }
    }
    std::fclose(f);
  }
  return sample;
}

}  // namespace izwi
