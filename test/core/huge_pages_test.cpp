// izwi/core/huge_pages.hpp: what izwi-server logs about the huge pages its
// weights got.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <string>

#include "izwi/core/detail/huge_page_buffer.hpp"
#include "izwi/core/huge_pages.hpp"

TEST_CASE("huge pages: the policy is the bracketed word of the kernel's setting", "[core][memory]") {
  CHECK(izwi::parse_huge_page_policy("always [madvise] never\n") == "madvise");
  CHECK(izwi::parse_huge_page_policy("[always] madvise never") == "always");
  CHECK(izwi::parse_huge_page_policy("always madvise [never]") == "never");
  CHECK(izwi::parse_huge_page_policy("always madvise never").empty());
  CHECK(izwi::parse_huge_page_policy("[]").empty());
  CHECK(izwi::parse_huge_page_policy("").empty());
  // This host's, when it has one.
  const std::string policy = izwi::transparent_huge_page_policy();
  if (std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled"))
    CHECK((policy == "always" || policy == "madvise" || policy == "never"));
  else
    CHECK(policy.empty());
}

TEST_CASE("huge pages: the process's share is smaps' AnonHugePages, in bytes", "[core][memory]") {
  const char* rollup =
      "55d7c8a00000-7ffd5a3f2000 ---p 00000000 00:00 0                          [rollup]\n"
      "Rss:             1241364 kB\n"
      "ShmemPmdMapped:        0 kB\n"
      "AnonHugePages:   1198080 kB\n"
      "Swap:                  0 kB\n";
  CHECK(izwi::parse_anon_huge_pages(rollup) == std::uint64_t{1198080} * 1024);
  CHECK(izwi::parse_anon_huge_pages("AnonHugePages:         0 kB\n") == 0u);
  CHECK_FALSE(izwi::parse_anon_huge_pages("Rss: 10 kB\nShmemHugePages: 4 kB\n").has_value());  // no such line
  CHECK_FALSE(izwi::parse_anon_huge_pages("AnonHugePages: many kB\n").has_value());
  CHECK_FALSE(izwi::parse_anon_huge_pages("AnonHugePages: 12 MB\n").has_value());
  CHECK_FALSE(izwi::parse_anon_huge_pages("AnonHugePages: 99999999999999999999 kB\n").has_value());
  CHECK_FALSE(izwi::parse_anon_huge_pages("XAnonHugePages: 4 kB\n").has_value());  // only at a line's start

  // This process's, readable where the kernel has smaps_rollup (4.14 on), and
  // the log phrase says what it found. Whether the kernel grants huge pages
  // to a touched buffer depends on its free memory, so no figure is asserted.
  izwi::detail::HugePageBuffer buffer(8u << 20, "a test buffer");
  std::memset(buffer.data(), 1, buffer.size());
  const auto bytes = izwi::process_huge_page_bytes();
  CHECK(bytes.has_value() == std::filesystem::exists("/proc/self/smaps_rollup"));
  const std::string phrase = izwi::describe_huge_pages();
  const std::string policy = izwi::transparent_huge_page_policy();
  if (policy == "always" || policy == "madvise") {
    const std::string tail = " MiB of the process in transparent huge pages (host policy: " + policy + ")";
    if (bytes) {
      CHECK(phrase.ends_with(tail));
      CHECK(phrase.find_first_not_of("0123456789") == phrase.size() - tail.size());
    }
  } else {
    CHECK(phrase.find("4-KiB pages") != std::string::npos);
  }
}
