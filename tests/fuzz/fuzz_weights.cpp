// SPDX-License-Identifier: MIT
// libFuzzer harness: nnfuzz::load_mlp on arbitrary bytes; a network that loads is run forward
// on one all-zero input. A rejection must be std::invalid_argument; anything else is a bug.
//
// Each input is loaded twice: as it is, and with its last 4 bytes replaced by the CRC-32 of
// the rest. A random mutation almost never keeps the CRC right, so without the second load
// everything after the CRC check (the parameters, the non-finite check, the network, the
// forward pass) would only ever see the seeds.
#include <nnfuzz/models/mlp_file.hpp>
#include <nnfuzz/models/mlp.hpp>

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "fuzz_support.hpp"

namespace {

void load_and_run(nnfuzz_fuzz::MemFile& file, const std::uint8_t* data, std::size_t size) {
  const std::string& path = file.write(data, size);
  try {
    const nnfuzz::Mlp<float> net = nnfuzz::load_mlp(path);
    const nnfuzz::RowMatrix zero = nnfuzz::RowMatrix::Zero(1, net.input_dim());
    const nnfuzz::RowMatrix logits = net.logits(zero);
    if (logits.rows() != 1 || logits.cols() != net.output_dim()) std::abort();
  } catch (const std::invalid_argument&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static nnfuzz_fuzz::MemFile file("nnfuzz_fuzz_weights");
  load_and_run(file, data, size);
  if (size >= 8) {
    std::vector<std::uint8_t> fixed(data, data + size);
    const auto crc = static_cast<std::uint32_t>(crc32(0L, fixed.data(), static_cast<uInt>(size - 4)));
    for (int i = 0; i < 4; ++i) fixed[size - 4 + i] = static_cast<std::uint8_t>(crc >> (8 * i));  // little-endian
    if (std::memcmp(fixed.data(), data, size) != 0) load_and_run(file, fixed.data(), size);
  }
  return 0;
}
