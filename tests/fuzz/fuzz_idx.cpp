// SPDX-License-Identifier: MIT
// libFuzzer harness: nnfuzz::read_idx on arbitrary bytes (raw or gzip IDX).
// A rejection must be std::invalid_argument; any other exception, a sanitizer report, a
// leak, a timeout or an allocation over -rss_limit_mb is a bug. So is an accepted array that
// breaks IdxArray's invariant, or an accepted raw (not gzip) file that is not exactly the
// header and data of the array read from it.
#include <nnfuzz/data/idx.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static nnfuzz_fuzz::MemFile file("nnfuzz_fuzz_idx");
  const std::string& path = file.write(data, size);
  try {
    const nnfuzz::IdxArray a = nnfuzz::read_idx(path);
    if (a.dims.empty() || a.dims.size() > 4 || a.data.size() != nnfuzz::detail::idx_element_count(a.dims)) std::abort();
    const bool gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    if (!gzip) {
      // The raw file must be: 00 00 08 ndims, the dims big-endian, the data, nothing more.
      const std::size_t header = 4 + 4 * a.dims.size();
      if (size != header + a.data.size() || data[0] != 0 || data[1] != 0 || data[2] != 0x08 ||
          data[3] != a.dims.size() || std::memcmp(data + header, a.data.data(), a.data.size()) != 0)
        std::abort();
      for (std::size_t i = 0; i < a.dims.size(); ++i)
        if (nnfuzz::detail::read_be32(data + 4 + 4 * i) != a.dims[i]) std::abort();
    }
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
