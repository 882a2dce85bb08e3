#pragma once
// How a checkpoint file's bytes are held while a model computes from them in
// place (the readers' open() and the models' load options take one).
//
//   map   mmap the file read-only (the readers' default, and llama.cpp's):
//         nothing is read up front, pages are shared with other processes
//         through the page cache. 4-KiB pages.
//   read  read the whole file into the process's own memory, laid out for
//         transparent huge pages (detail::HugePageBuffer). What the models
//         load with by default: batch-1 decode streams every weight once per
//         token, and from huge pages it ran ~15% faster than from a mapping
//         (docs/benchmarks.md). It costs one read of the file at load and
//         the file's size in private memory, and the bytes stop depending on
//         the file: a checkpoint truncated or replaced on disk while a server
//         runs cannot fault it (a mapping would take SIGBUS).

#include <string_view>

namespace izwi::io {

enum class FileMemory { map, read };

constexpr std::string_view to_string(FileMemory memory) noexcept {
  return memory == FileMemory::map ? "map" : "read";
}

}  // namespace izwi::io
