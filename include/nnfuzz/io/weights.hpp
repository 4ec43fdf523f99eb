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
#include "../models/mlp.hpp"
#include "idx.hpp"

#include <zlib.h>

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

inline void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
inline std::uint32_t get_u32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) | (std::uint32_t{p[3]} << 24);
}

/// Writes bytes to `path` atomically: a temporary file in the same directory, flushed and
/// fsync'ed, then renamed over `path`. A crash leaves either the old file or the new one.
inline void write_file_atomic(const char* fn, const std::string& path, const std::vector<std::uint8_t>& bytes) {
  const std::string tmp = temp_name_for(path);
  TempFileGuard guard(tmp);
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    const int err = errno;
    fail(fn, ": cannot create '", tmp, "' (for '", path, "'): ", errno_text(err));
  }
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size() && std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  int err = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) fail(fn, ": cannot write '", tmp, "' (for '", path, "'): ", errno_text(err));
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    fail(fn, ": cannot rename '", tmp, "' to '", path, "': ", errno_text(err));
  }
  guard.release();
}

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
      if (!detail::is_finite(p[i])) detail::fail("save_mlp(): layer ", layer, " has a non-finite parameter ", p[i], " (file '", path, "')");
      std::uint32_t u;
      std::memcpy(&u, p + i, 4);
      detail::put_u32(out, u);
    }
  };
  for (std::size_t l = 0; l < net.layers().size(); ++l) {
    put_floats(net.layers()[l].weights.data(), net.layers()[l].weights.size(), l);
    put_floats(net.layers()[l].bias.data(), net.layers()[l].bias.size(), l);
  }
  detail::put_u32(out, static_cast<std::uint32_t>(crc32(0L, out.data(), static_cast<uInt>(out.size()))));
  detail::write_file_atomic("save_mlp()", path, out);
}

/// Loads a network saved by save_mlp(). Validates everything before trusting it: magic,
/// version, scalar type, layer count and sizes, the exact file size those imply (checked before
/// allocating), the CRC-32, and finite parameters. Throws std::invalid_argument naming the
/// file and the offending value.
inline Mlp<float> load_mlp(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) detail::fail("load_mlp(): file '", path, "' does not exist or is not a regular file");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) detail::fail("load_mlp(): cannot stat '", path, "': ", ec.message());
  // The largest legal file: 64 layers of 2^24 x 2^24 is absurd; cap parameters at 2^28 (1 GiB).
  constexpr std::uint64_t kMaxParams = std::uint64_t{1} << 28;
  if (size < 24) detail::fail("load_mlp(): file '", path, "' is truncated: ", size, " bytes, a header alone is 24");
  if (size > kMaxParams * 4 + 1024) detail::fail("load_mlp(): file '", path, "' is too large: ", size, " bytes");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) {
      const int err = errno;
      detail::fail("load_mlp(): cannot open '", path, "': ", detail::errno_text(err));
    }
    const std::size_t got = std::fread(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
    if (got != bytes.size()) detail::fail("load_mlp(): cannot read '", path, "': got ", got, " of ", size, " bytes");
  }
  if (std::memcmp(bytes.data(), detail::kWeightsMagic, 8) != 0)
    detail::fail("load_mlp(): file '", path, "' is not an nnfuzz weights file (bad magic; expected NNFZMLP1)");
  const std::uint32_t version = detail::get_u32(&bytes[8]);
  if (version != detail::kWeightsVersion)
    detail::fail("load_mlp(): file '", path, "' has format version ", version, ", this nnfuzz reads version 1");
  const std::uint32_t scalar = detail::get_u32(&bytes[12]);
  if (scalar != 1) detail::fail("load_mlp(): file '", path, "' has scalar type code ", scalar, " (only 1 = float32 is supported)");
  const std::uint32_t layers = detail::get_u32(&bytes[16]);
  if (layers < 1 || layers > 64) detail::fail("load_mlp(): file '", path, "' claims ", layers, " layers (must be 1..64)");
  const std::size_t header = 20 + 4 * (static_cast<std::size_t>(layers) + 1);
  if (size < header + 4) detail::fail("load_mlp(): file '", path, "' is truncated: ", size, " bytes, its header needs ", header + 4);
  std::vector<Index> sizes;
  std::uint64_t params = 0;
  for (std::uint32_t i = 0; i <= layers; ++i) {
    const std::uint32_t s = detail::get_u32(&bytes[20 + 4 * i]);
    if (s < 1 || s > (1u << 24)) detail::fail("load_mlp(): file '", path, "' has absurd layer size ", s, " at position ", i);
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
  const std::uint32_t stored = detail::get_u32(&bytes[static_cast<std::size_t>(size) - 4]);
  const auto actual = static_cast<std::uint32_t>(crc32(0L, bytes.data(), static_cast<uInt>(size - 4)));
  if (stored != actual) detail::fail("load_mlp(): file '", path, "' is corrupted: CRC-32 ", actual, " != stored ", stored);
  Mlp<float> net(sizes);
  std::size_t pos = header;
  auto get_floats = [&](float* p, Index n, std::size_t layer) {
    for (Index i = 0; i < n; ++i, pos += 4) {
      const std::uint32_t u = detail::get_u32(&bytes[pos]);
      std::memcpy(p + i, &u, 4);
      if (!detail::is_finite(p[i])) detail::fail("load_mlp(): file '", path, "' has a non-finite parameter in layer ", layer);
    }
  };
  for (std::size_t l = 0; l < net.layers().size(); ++l) {
    get_floats(net.layers()[l].weights.data(), net.layers()[l].weights.size(), l);
    get_floats(net.layers()[l].bias.data(), net.layers()[l].bias.size(), l);
  }
  return net;
}

}  // namespace nnfuzz
