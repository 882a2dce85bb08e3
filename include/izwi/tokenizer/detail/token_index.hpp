#pragma once
// Spelling -> id lookup for the vocabulary: an open-addressing table of
// (hash, id) slots. The spellings themselves stay in the tokenizer's token
// table, so a lookup touches one slot and, on a hash match, one string.
// Loading does ~450k lookups (three per merge rule); a node-based
// std::unordered_map spent half the load time chasing bucket chains.

#include <izwi/core/ids.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace izwi::tokenizer::detail {

class TokenIndex {
 public:
  /// Sizes the table for `count` entries (load factor <= 0.5).
  void reserve(std::size_t count) {
    std::size_t cap = 16;
    while (cap < count * 2) cap <<= 1;
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
  }

  /// Adds spelling -> id unless the spelling is present; returns whether it
  /// was added. `spelling_of(id)` gives the spelling of an id already added.
  template <class SpellingOf>
  bool insert(std::string_view spelling, TokenId id, const SpellingOf& spelling_of) {
    const std::size_t h = hash(spelling);
    const auto tag = static_cast<std::uint32_t>(h >> 32);
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.id < 0) {
        s = Slot{tag, id};
        return true;
      }
      if (s.tag == tag && spelling_of(s.id) == spelling) return false;
    }
  }

  /// The id spelled `spelling`, or -1.
  template <class SpellingOf>
  TokenId find(std::string_view spelling, const SpellingOf& spelling_of) const noexcept {
    if (slots_.empty()) return -1;
    const std::size_t h = hash(spelling);
    const auto tag = static_cast<std::uint32_t>(h >> 32);
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id < 0) return -1;
      if (s.tag == tag && spelling_of(s.id) == spelling) return s.id;
    }
  }

 private:
  struct Slot {
    std::uint32_t tag = 0;  ///< high bits of the hash: most mismatches never touch a string
    TokenId id = -1;
  };
  static std::size_t hash(std::string_view s) noexcept {
    // FNV-1a, then a final mix so both the low (slot) and high (tag) bits vary.
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return static_cast<std::size_t>(h);
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
};

}  // namespace izwi::tokenizer::detail
