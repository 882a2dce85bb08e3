#pragma once
// The bytes behind a SafetensorsFile, GgufFile or GgmlWhisperFile: a
// read-only private mapping of the file, the file read into huge-page memory
// (io::FileMemory), or a buffer the caller handed over.

#include <izwi/core/detail/huge_page_buffer.hpp>
#include <izwi/core/error.hpp>
#include <izwi/io/file_memory.hpp>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace izwi::io::detail {

class SafetensorsStorage {
 public:
  /// The file's bytes, mapped or read (io::FileMemory); izwi::error naming
  /// the path when it cannot be opened, read or held.
  static std::unique_ptr<SafetensorsStorage> open(const std::filesystem::path& path, FileMemory memory) {
    return memory == FileMemory::map ? map_file(path) : read_file(path);
  }

  static std::unique_ptr<SafetensorsStorage> map_file(const std::filesystem::path& path) {
    auto storage = std::unique_ptr<SafetensorsStorage>(new SafetensorsStorage());
    const OpenFile file(path);
    if (file.size > 0) {
      void* base = ::mmap(nullptr, file.size, PROT_READ, MAP_PRIVATE, file.fd, 0);
      if (base == MAP_FAILED) throw izwi::error(path.string() + ": cannot map: " + std::strerror(errno));
      storage->mapping_ = base;
      storage->bytes_ = {static_cast<const std::byte*>(base), file.size};
    }
    return storage;  // the mapping keeps the file alive once its descriptor closes
  }

  static std::unique_ptr<SafetensorsStorage> read_file(const std::filesystem::path& path) {
    auto storage = std::unique_ptr<SafetensorsStorage>(new SafetensorsStorage());
    const OpenFile file(path);
    storage->buffer_ = izwi::detail::HugePageBuffer(file.size, path.string() + "'s contents");
    std::byte* out = storage->buffer_.data();
    for (std::size_t done = 0; done < file.size;) {
      constexpr std::size_t most_per_call = std::size_t{1} << 30;  // Linux reads at most ~2 GiB per call
      const ::ssize_t n = ::pread(file.fd, out + done, std::min(most_per_call, file.size - done),
                                  static_cast<::off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw izwi::error(path.string() + ": cannot read: " + std::strerror(errno));
      if (n == 0)
        throw izwi::error(path.string() + ": the file shrank while being read (" + std::to_string(done) + " of " +
                          std::to_string(file.size) + " bytes)");
      done += static_cast<std::size_t>(n);
    }
    storage->bytes_ = {out, file.size};
    return storage;
  }

  static std::unique_ptr<SafetensorsStorage> own(std::vector<std::byte> bytes) {
    auto storage = std::unique_ptr<SafetensorsStorage>(new SafetensorsStorage());
    storage->owned_ = std::move(bytes);
    storage->bytes_ = storage->owned_;
    return storage;
  }

  SafetensorsStorage(const SafetensorsStorage&) = delete;
  SafetensorsStorage& operator=(const SafetensorsStorage&) = delete;
  ~SafetensorsStorage() {
    if (mapping_ != nullptr) ::munmap(mapping_, bytes_.size());
  }

  std::span<const std::byte> bytes() const noexcept { return bytes_; }

 private:
  SafetensorsStorage() = default;

  /// A regular file opened for reading, with its size; closed on destruction.
  struct OpenFile {
    int fd = -1;
    std::size_t size = 0;

    explicit OpenFile(const std::filesystem::path& path) : fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
      if (fd < 0) throw izwi::error(path.string() + ": cannot open: " + std::strerror(errno));
      struct stat st {};
      if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        throw izwi::error(path.string() + ": cannot stat: " + std::strerror(err));
      }
      if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw izwi::error(path.string() + ": not a regular file");
      }
      size = static_cast<std::size_t>(st.st_size);
    }
    OpenFile(const OpenFile&) = delete;
    OpenFile& operator=(const OpenFile&) = delete;
    ~OpenFile() { ::close(fd); }
  };

  void* mapping_ = nullptr;
  izwi::detail::HugePageBuffer buffer_;
  std::vector<std::byte> owned_;
  std::span<const std::byte> bytes_;
};

}  // namespace izwi::io::detail
