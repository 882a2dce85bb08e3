#pragma once
// Whether this process gets transparent huge pages, for start-up logs and
// benchmark notes.
//
// The models read their weights into memory advised for huge pages
// (io::FileMemory::read, detail::HugePageBuffer); the kernel backs it with
// 2-MiB pages only when its policy allows (`always`, or `madvise` for
// advised memory) and it has contiguous memory free, else with 4-KiB pages,
// silently. Batch-1 decode runs ~15% slower from 4-KiB pages
// (docs/benchmarks.md), so an operator wants to see which one a server got:
// izwi-server logs describe_huge_pages() when a model has loaded.
//
//   izwi::transparent_huge_page_policy()   "madvise"
//   izwi::process_huge_page_bytes()        1227882496 (AnonHugePages of the process)
//   izwi::describe_huge_pages()            "1171 MiB of the process in transparent huge pages (host policy: madvise)"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace izwi {

/// The host's policy, the bracketed word of
/// /sys/kernel/mm/transparent_hugepage/enabled ("always", "madvise" or
/// "never"); empty where the file is missing (no THP in the kernel, not Linux).
std::string transparent_huge_page_policy();

/// The bracketed word of such a policy text ("always [madvise] never" ->
/// "madvise"); empty when there is none.
std::string parse_huge_page_policy(std::string_view text);

/// Bytes of this process's memory in transparent huge pages (the
/// AnonHugePages line of /proc/self/smaps_rollup); nullopt where unreadable.
std::optional<std::uint64_t> process_huge_page_bytes();

/// The AnonHugePages line of smaps text ("AnonHugePages:   1024 kB"), in
/// bytes; nullopt when the line is absent or not a number of kB.
std::optional<std::uint64_t> parse_anon_huge_pages(std::string_view smaps);

/// One phrase for a log line: how much of the process is in huge pages and
/// the host's policy, or why there are none.
std::string describe_huge_pages();

}  // namespace izwi

#include "izwi/core/impl/huge_pages.hpp"
