#pragma once
// An allocator whose storage starts on an `Alignment`-byte boundary, for the
// executors' activation buffers: the kernels load 64-byte vectors from them,
// and one that straddles two cache lines costs two L1 accesses (malloc
// aligns to 16 bytes only). Standard aligned operator new, no library: the
// headers that hold activations stay free of SIMD headers, whose inline
// functions change with compiler flags.
//
//   std::vector<float, izwi::AlignedAllocator<float>> x(1024);  // x.data() % 64 == 0

#include <cstddef>
#include <new>

namespace izwi {

template <class T, std::size_t Alignment = 64>
struct AlignedAllocator {
  static_assert(Alignment >= alignof(T) && (Alignment & (Alignment - 1)) == 0,
                "the alignment must be a power of two no smaller than the type's");
  using value_type = T;
  template <class U>
  struct rebind {
    using other = AlignedAllocator<U, Alignment>;
  };

  AlignedAllocator() noexcept = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U, Alignment>&) noexcept {}

  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{Alignment})); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t{Alignment}); }

  template <class U>
  bool operator==(const AlignedAllocator<U, Alignment>&) const noexcept {
    return true;
  }
};

}  // namespace izwi
