// SPDX-License-Identifier: MIT
// nnfuzz: Mlp weights files — a small checksummed binary format, written atomically.
//
// Format (all integers little-endian u32, floats IEEE-754 binary32 little-endian):
//   "NNFZMLP1"                8 bytes of magic
//   version                   1
//   scalar                    1 = float32
//   L                         number of dense layers, 1..64
//   sizes[L + 1]              input size first, each in [1, 2^24]
//   per layer l: weights (sizes[l] x sizes[l+1], row-major), then bias (sizes[l+1])
//   crc32                     zlib CRC-32 of every byte before it
#pragma once

#include "../detail/config.hpp"
#include "mlp.hpp"
#include "../detail/binary_file.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

namespace nnfuzz {

namespace detail {

constexpr char kWeightsMagic[8] = {'N', 'N', 'F', 'Z', 'M', 'L', 'P', '1'};
constexpr std::uint32_t kWeightsVersion = 1;

}  // namespace detail

/// Saves a float network to `path` (format above), atomically. Throws std::invalid_argument
/// naming the file on any I/O error, and for a network with no layers or non-finite weights.
inline void save_mlp(const std::string& path, const Mlp<float>& net) {
  const auto sizes = net.sizes();
  if (sizes.size() < 2) detail::fail("save_mlp(): network has no layers (file '", path, "')");
  std::vector<std::uint8_t> out(detail::kWeightsMagic, detail::kWeightsMagic + 8);
  detail::put_u32(out, detail::kWeightsVersion);
  detail::put_u32(out, 1);
  detail::put_u32(out, static_cast<std::uint32_t>(sizes.size() - 1));
  for (Index s : sizes) detail::put_u32(out, static_cast<std::uint32_t>(s));
  auto put_floats = [&](const float* p, Index n, std::size_t layer) {
    for (Index i = 0; i < n; ++i) {
      if (!detail::is_finite(p[i]))
        detail::fail("save_mlp(): layer ", layer, " has a non-finite parameter ", p[i], " (file '", path, "')");
      std::uint32_t u;
      std::memcpy(&u, p + i, 4);
      detail::put_u32(out, u);
    }
  };
  for (std::size_t l = 0; l < net.layers().size(); ++l) {
    put_floats(net.layers()[l].weights.data(), net.layers()[l].weights.size(), l);
    put_floats(net.layers()[l].bias.data(), net.layers()[l].bias.size(), l);
  }
  detail::seal(out);
  detail::write_file_atomic("save_mlp()", path, out);
}

/// Loads a network saved by save_mlp(). Validates everything before trusting it: magic,
/// version, scalar type, layer count and sizes, the exact file size those imply (checked before
/// allocating), the CRC-32, and finite parameters. Throws std::invalid_argument naming the
/// file and the offending value.
inline Mlp<float> load_mlp(const std::string& path) {
  // The largest legal file: 64 layers of 2^24 x 2^24 is absurd; cap parameters at 2^28 (1 GiB).
  constexpr std::uint64_t kMaxParams = std::uint64_t{1} << 28;
  const std::vector<std::uint8_t> bytes = detail::read_whole_file("load_mlp()", path, 24, kMaxParams * 4 + 1024);
  const std::uint64_t size = bytes.size();
  if (std::memcmp(bytes.data(), detail::kWeightsMagic, 8) != 0)
    detail::fail("load_mlp(): file '", path, "' is not an nnfuzz weights file (bad magic; expected NNFZMLP1)");
  const std::uint32_t version = detail::get_u32(&bytes[8]);
  if (version != detail::kWeightsVersion)
    detail::fail("load_mlp(): file '", path, "' has format version ", version, ", this nnfuzz reads version 1");
  const std::uint32_t scalar = detail::get_u32(&bytes[12]);
  if (scalar != 1)
    detail::fail("load_mlp(): file '", path, "' has scalar type code ", scalar, " (only 1 = float32 is supported)");
  const std::uint32_t layers = detail::get_u32(&bytes[16]);
  if (layers < 1 || layers > 64)
    detail::fail("load_mlp(): file '", path, "' claims ", layers, " layers (must be 1..64)");
  const std::size_t header = 20 + 4 * (static_cast<std::size_t>(layers) + 1);
  if (size < header + 4)
    detail::fail("load_mlp(): file '", path, "' is truncated: ", size, " bytes, its header needs ", header + 4);
  std::vector<Index> sizes;
  std::uint64_t params = 0;
  for (std::uint32_t i = 0; i <= layers; ++i) {
    const std::uint32_t s = detail::get_u32(&bytes[20 + 4 * i]);
    if (s < 1 || s > (1u << 24))
      detail::fail("load_mlp(): file '", path, "' has absurd layer size ", s, " at position ", i);
    sizes.push_back(s);
    if (i > 0) {
      params += static_cast<std::uint64_t>(sizes[i - 1]) * s + s;
      if (params > kMaxParams) detail::fail("load_mlp(): file '", path, "' claims more than 2^28 parameters");
    }
  }
  const std::uint64_t expected = header + 4 * params + 4;
  if (size != expected)
    detail::fail("load_mlp(): file '", path, "' has ", size, " bytes, its header implies ", expected,
                 size < expected ? " (truncated)" : " (trailing bytes)");
  detail::check_crc("load_mlp()", path, bytes);
  Mlp<float> net(sizes);
  std::size_t pos = header;
  auto get_floats = [&](float* p, Index n, std::size_t layer) {
    for (Index i = 0; i < n; ++i, pos += 4) {
      const std::uint32_t u = detail::get_u32(&bytes[pos]);
      std::memcpy(p + i, &u, 4);
      if (!detail::is_finite(p[i]))
        detail::fail("load_mlp(): file '", path, "' has a non-finite parameter in layer ", layer);
    }
  };
  for (std::size_t l = 0; l < net.layers().size(); ++l) {
    get_floats(net.layers()[l].weights.data(), net.layers()[l].weights.size(), l);
    get_floats(net.layers()[l].bias.data(), net.layers()[l].bias.size(), l);
  }
  return net;
}

}  // namespace nnfuzz
