// SPDX-License-Identifier: MIT
// nnfuzz: InputFocus — where in an input a mutation should aim, recorded by an objective that
// knows (e.g. the generated step at which a text came closest to a blacklisted word) and read by
// a mutator that can use it (StructuredMutatorOptions::focus). The two meet through a key of
// the input's contents, since the loop hands the objective a batch and the mutator a corpus
// element: the same values, the same key.
#pragma once

#include "detail/config.hpp"
#include "input.hpp"

#include <cstdint>
#include <cstring>
#include <unordered_map>

namespace nnfuzz {

namespace detail {
inline std::uint64_t key_mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}
inline std::uint64_t key_floats(std::uint64_t h, const float* f, Index n) {
  for (Index i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, f + i, sizeof bits);
    h = key_mix(h, bits);
  }
  return h;
}
inline std::uint64_t key_tokens(std::uint64_t h, const TokenId* t, Index n) {
  h = key_mix(h, static_cast<std::uint64_t>(n));
  for (Index i = 0; i < n; ++i) h = key_mix(h, static_cast<std::uint64_t>(static_cast<std::uint32_t>(t[i])));
  return h;
}
}  // namespace detail

/// A 64-bit key of an input's contents (every part: the ids within its length, the float bits).
/// input_key(view) == input_key(batch, r) when the view holds row r's values.
inline std::uint64_t input_key(const InputView& v) {
  std::uint64_t h = 0x6e6e66757a7aull;
  for (Index p = 0; p < v.layout().size(); ++p) {
    const InputPart& part = v.layout().part(p);
    if (part.kind == InputPart::Kind::tokens)
      h = detail::key_tokens(h, v.ids(p), v.length(p));
    else
      h = detail::key_floats(h, v.floats(p).data(), part.width);
  }
  return h;
}
/// The key of row r of a batch (see input_key(const InputView&)).
inline std::uint64_t input_key(const InputBatch& batch, Index r) {
  std::uint64_t h = 0x6e6e66757a7aull;
  for (Index p = 0; p < batch.layout().size(); ++p) {
    const InputPart& part = batch.layout().part(p);
    if (part.kind == InputPart::Kind::tokens)
      h = detail::key_tokens(h, batch.ids(p, r), batch.length(p, r));
    else
      h = detail::key_floats(h, batch.floats(p).row(r).data(), part.width);
  }
  return h;
}

/// Remembers, per input (by input_key()), one position to aim mutations at — for a language
/// model's input, the generated step (noise element) where its text came closest to a
/// blacklisted word. Share one between an objective that records (BlacklistObjective::focus())
/// and a mutator that reads (StructuredMutatorOptions::focus), through a std::shared_ptr. Holds
/// at most `capacity` inputs and forgets all when full (positions are hints: a forgotten input
/// is mutated without aim). Not thread-safe: one per fuzzer.
class InputFocus {
 public:
  /// `capacity` >= 1 inputs remembered.
  explicit InputFocus(std::size_t capacity = std::size_t{1} << 20) : capacity_(capacity) {
    if (capacity < 1) detail::fail("InputFocus(): option 'capacity' must be >= 1, got ", capacity);
  }
  /// Records `position` (>= 0) for the input with key `key`.
  void record(std::uint64_t key, Index position) {
    if (map_.size() >= capacity_) map_.clear();
    map_[key] = position;
  }
  /// The position recorded for `key`, or -1.
  Index find(std::uint64_t key) const {
    const auto it = map_.find(key);
    return it == map_.end() ? -1 : it->second;
  }
  /// Forgets every position.
  void clear() { map_.clear(); }
  /// Inputs remembered.
  std::size_t size() const { return map_.size(); }

 private:
  std::size_t capacity_;
  std::unordered_map<std::uint64_t, Index> map_;
};

}  // namespace nnfuzz
