#pragma once
// The bytes behind a SafetensorsFile: a read-only private mapping of the file,
// or a buffer the caller handed over.

#include <izwi/core/error.hpp>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
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
  static std::unique_ptr<SafetensorsStorage> map_file(const std::filesystem::path& path) {
    auto storage = std::unique_ptr<SafetensorsStorage>(new SafetensorsStorage());
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
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
    const auto size = static_cast<std::size_t>(st.st_size);
    if (size > 0) {
      void* base = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (base == MAP_FAILED) {
        const int err = errno;
        ::close(fd);
        throw izwi::error(path.string() + ": cannot map: " + std::strerror(err));
      }
      storage->mapping_ = base;
      storage->bytes_ = {static_cast<const std::byte*>(base), size};
    }
    ::close(fd);  // the mapping keeps the file alive
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

  void* mapping_ = nullptr;
  std::vector<std::byte> owned_;
  std::span<const std::byte> bytes_;
};

}  // namespace izwi::io::detail
