// SPDX-License-Identifier: MIT
// nnfuzz: little-endian fields of a coverage policy's saved state (internal; save_state() /
// restore_state(), kept with a corpus as Corpus::coverage_state()).
#pragma once

#include "config.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace nnfuzz {
namespace detail {

/// Appends fixed-width little-endian fields to a state blob.
struct StateWriter {
  std::vector<std::uint8_t> bytes;  ///< the blob so far
  /// Appends the 8 bytes of a magic string.
  void magic(const char (&m)[9]) { bytes.insert(bytes.end(), m, m + 8); }
  /// Appends a u32.
  void u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  /// Appends a u64.
  void u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  /// Appends an i64 (two's complement).
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  /// Appends the bits of a float.
  void f32(float v) {
    std::uint32_t u;
    std::memcpy(&u, &v, 4);
    u32(u);
  }
  /// Appends the bits of a double.
  void f64(double v) {
    std::uint64_t u;
    std::memcpy(&u, &v, 8);
    u64(u);
  }
};

/// Reads the fields StateWriter wrote. The caller checks the blob's size first (each state has
/// one exact size), so the reads never overrun.
struct StateReader {
  const std::vector<std::uint8_t>& bytes;  ///< the blob
  std::size_t pos = 0;                     ///< the next byte
  /// True when the next 8 bytes are `m` (and skips them).
  bool magic(const char (&m)[9]) {
    const bool same = bytes.size() >= pos + 8 && std::memcmp(bytes.data() + pos, m, 8) == 0;
    pos += 8;
    return same;
  }
  /// Reads a u32.
  std::uint32_t u32() {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= std::uint32_t{bytes[pos++]} << (8 * i);
    return v;
  }
  /// Reads a u64.
  std::uint64_t u64() {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t{bytes[pos++]} << (8 * i);
    return v;
  }
  /// Reads an i64.
  std::int64_t i64() { return static_cast<std::int64_t>(u64()); }
  /// Reads a float.
  float f32() {
    const std::uint32_t u = u32();
    float v;
    std::memcpy(&v, &u, 4);
    return v;
  }
  /// Reads a double.
  double f64() {
    const std::uint64_t u = u64();
    double v;
    std::memcpy(&v, &u, 8);
    return v;
  }
};

}  // namespace detail
}  // namespace nnfuzz
