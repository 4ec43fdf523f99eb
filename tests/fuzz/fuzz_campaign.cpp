// SPDX-License-Identifier: MIT
// libFuzzer harness: nnfuzz::load_corpus / nnfuzz::load_findings on a campaign directory
// holding one file cut from the input (layout: nnfuzz_fuzz::campaign_findings in
// fuzz_support.hpp). A rejection must be std::invalid_argument; anything else is a bug, and so
// is a corpus that loads but breaks the invariants load_corpus() promises.
//
// Like fuzz_weights, each input is loaded twice: as it is, and with the file's last 4 bytes
// replaced by the CRC-32 of the rest, so that mutations get past the checksum to the parser.
#include <nnfuzz/campaign/saver.hpp>

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "fuzz_support.hpp"

namespace {

/// Aborts unless every element of a loaded corpus has a consistent lineage and finite inputs
/// (coverage vectors may hold NaN/Inf: a seed's can).
void check_corpus(const nnfuzz::Corpus& c) {
  if (c.size() < 1 || c.input_dim() < 1 || c.coverage_dim() < 1) std::abort();
  for (nnfuzz::Index i = 0; i < c.size(); ++i) {
    const nnfuzz::CorpusEntry& e = c.entry(i);
    if (e.id != i || e.parent >= e.id || e.parent < -1 || e.root < 0 || e.root >= c.size()) std::abort();
    if (!c.input(i).allFinite()) std::abort();
  }
}

void load(nnfuzz_fuzz::TempDir& dir, bool findings, const std::uint8_t* data, std::size_t size) {
  dir.reset();
  if (findings) {
    std::error_code ec;
    if (!std::filesystem::create_directory(std::filesystem::path(dir.path()) / "findings", ec) || ec)
      nnfuzz_fuzz::harness_failure("create_directory findings");
    dir.write("findings/finding-1-0.bin", data, size);
  } else {
    dir.write("corpus.bin", data, size);
  }
  try {
    if (findings) {
      const std::vector<nnfuzz::SavedFinding> all = nnfuzz::load_findings(dir.path());
      // One file was written, so an accepted directory holds exactly one finding.
      if (all.size() != 1 || all[0].finding.input.size() < 1) std::abort();
    } else {
      check_corpus(nnfuzz::load_corpus(dir.path()));
    }
  } catch (const std::invalid_argument&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  static nnfuzz_fuzz::TempDir dir("campaign");
  const bool findings = (data[0] & nnfuzz_fuzz::campaign_findings) != 0;
  const std::uint8_t* file = data + 1;
  const std::size_t n = size - 1;
  load(dir, findings, file, n);
  if (n >= 8) {
    std::vector<std::uint8_t> fixed(file, file + n);
    const auto crc = static_cast<std::uint32_t>(crc32(0L, fixed.data(), static_cast<uInt>(n - 4)));
    for (int i = 0; i < 4; ++i) fixed[n - 4 + i] = static_cast<std::uint8_t>(crc >> (8 * i));  // little-endian
    if (std::memcmp(fixed.data(), file, n) != 0) load(dir, findings, fixed.data(), n);
  }
  return 0;
}
