#pragma once
// Bodies of izwi/core/huge_pages.hpp.

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <system_error>

namespace izwi {

namespace detail {

/// The whole of a small text file (/proc and /sys entries report a size of
/// 0, so it is read to its end); nullopt when it cannot be opened.
inline std::optional<std::string> read_small_text_file(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace detail

inline std::string parse_huge_page_policy(std::string_view text) {
  const auto open = text.find('['), close = text.find(']');
  if (open == std::string_view::npos || close == std::string_view::npos || close <= open + 1) return {};
  return std::string(text.substr(open + 1, close - open - 1));
}

inline std::string transparent_huge_page_policy() {
  const auto text = detail::read_small_text_file("/sys/kernel/mm/transparent_hugepage/enabled");
  return text ? parse_huge_page_policy(*text) : std::string();
}

inline std::optional<std::uint64_t> parse_anon_huge_pages(std::string_view smaps) {
  constexpr std::string_view key = "AnonHugePages:";
  std::size_t at = 0;
  while (at < smaps.size()) {  // the key at the start of a line
    const std::size_t end = std::min(smaps.find('\n', at), smaps.size());
    std::string_view line = smaps.substr(at, end - at);
    at = end + 1;
    if (!line.starts_with(key)) continue;
    line.remove_prefix(key.size());
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    std::uint64_t kib = 0;
    const auto [rest, ec] = std::from_chars(line.data(), line.data() + line.size(), kib);
    if (ec != std::errc{} || std::string_view(rest, line.data() + line.size()) != " kB") return std::nullopt;
    if (kib > UINT64_MAX / 1024) return std::nullopt;
    return kib * 1024;
  }
  return std::nullopt;
}

inline std::optional<std::uint64_t> process_huge_page_bytes() {
  const auto text = detail::read_small_text_file("/proc/self/smaps_rollup");
  return text ? parse_anon_huge_pages(*text) : std::nullopt;
}

inline std::string describe_huge_pages() {
  const std::string policy = transparent_huge_page_policy();
  if (policy.empty()) return "no transparent huge pages on this host: 4-KiB pages";
  if (policy == "never")
    return "transparent huge pages are off on this host (policy: never): 4-KiB pages";
  const auto bytes = process_huge_page_bytes();
  if (!bytes) return "transparent huge pages allowed (host policy: " + policy + "), the process's share unreadable";
  return std::to_string(*bytes >> 20) + " MiB of the process in transparent huge pages (host policy: " + policy + ")";
}

}  // namespace izwi
