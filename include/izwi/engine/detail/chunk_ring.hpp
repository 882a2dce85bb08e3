#pragma once
// ChunkRing: a stream's queue of chunks, a ring over slots allocated once.
//
// A std::deque of StreamChunk allocates a node per chunk or two (a chunk is
// large), once per token per stream; the ring reuses the slots it was given at
// construction (the stream's capacity plus one for the final chunk) and moves
// chunks in and out of them. It grows only if the engine ever pushes beyond
// that bound, so it can never lose a chunk.

#include <cstddef>
#include <utility>
#include <vector>

#include "izwi/engine/output.hpp"

namespace izwi::detail {

class ChunkRing {
 public:
  explicit ChunkRing(std::size_t slots) : slots_(slots < 1 ? 1 : slots) {}

  bool empty() const noexcept { return size_ == 0; }
  std::size_t size() const noexcept { return size_; }

  void push_back(StreamChunk&& chunk) {
    if (size_ == slots_.size()) grow();
    slots_[(head_ + size_) % slots_.size()] = std::move(chunk);
    ++size_;
  }
  StreamChunk& front() noexcept { return slots_[head_]; }
  void pop_front() noexcept {
    slots_[head_] = StreamChunk{};  // let go of its text and audio now
    head_ = (head_ + 1) % slots_.size();
    --size_;
  }
  void clear() noexcept {
    while (!empty()) pop_front();
  }

 private:
  void grow() {
    std::vector<StreamChunk> bigger(slots_.size() * 2);
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = std::move(slots_[(head_ + i) % slots_.size()]);
    slots_ = std::move(bigger);
    head_ = 0;
  }

  std::vector<StreamChunk> slots_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace izwi::detail
