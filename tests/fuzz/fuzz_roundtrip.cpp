// SPDX-License-Identifier: MIT
// libFuzzer harness: the campaign writers never produce a file their loaders reject (dense and
// structured corpora, findings).
//
// The input describes a corpus (widths, element count, lineage, raw float bits: NaN, Inf,
// subnormals, a coverage-policy state) or a finding (width, description, raw input bits). save_corpus()/save_finding()
// either refuse it with std::invalid_argument, writing nothing, or write a file that
// load_corpus()/load_finding() accept and that reads back bit for bit. Anything else aborts.
#include <nnfuzz/campaign/saver.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz_support.hpp"

namespace {

struct Bytes {
  const std::uint8_t* p;
  std::size_t n;
  std::uint8_t u8() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  std::uint32_t u32() {
    return std::uint32_t{u8()} | std::uint32_t{u8()} << 8 | std::uint32_t{u8()} << 16 | std::uint32_t{u8()} << 24;
  }
  float f32() {
    const std::uint32_t u = u32();
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

// Widths: mostly small, sometimes 0 (refused). Widths past the loaders' 2^24 limit are tested by
// the unit tests: a corpus that wide needs a 64 MiB row, over libFuzzer's malloc limit here.
nnfuzz::Index width(std::uint8_t b) {
  if (b >= 250) return 0;
  return 1 + b % 9;
}

bool same_bits(const float* a, const float* b, nnfuzz::Index n) {
  return std::memcmp(a, b, 4 * static_cast<std::size_t>(n)) == 0;
}

// Saves into a fresh directory: true when written; false when refused, which must leave no file.
bool saved(nnfuzz_fuzz::TempDir& dir, const nnfuzz::Corpus& corpus) {
  dir.reset();
  try {
    nnfuzz::save_corpus(dir.path(), corpus);
    return true;
  } catch (const std::invalid_argument&) {
    if (std::filesystem::exists(std::filesystem::path(dir.path()) / "corpus.bin"))
      nnfuzz_fuzz::harness_failure("save_corpus refused but wrote corpus.bin");
    return false;
  }
}

void corpus_roundtrip(nnfuzz_fuzz::TempDir& dir, Bytes in) {
  const nnfuzz::Index d = width(in.u8()), c = width(in.u8());
  const int count = in.u8() % 6;
  nnfuzz::Corpus corpus(d, c);
  nnfuzz::RowVector x(d), v(c);
  for (int i = 0; i < count; ++i) {
    const nnfuzz::Index parent = static_cast<std::int8_t>(in.u8()), root = in.u8() % 8,
                        depth = static_cast<std::int8_t>(in.u8());
    for (nnfuzz::Index k = 0; k < std::min<nnfuzz::Index>(d, 64); ++k) x(k) = in.f32();
    for (nnfuzz::Index k = 0; k < std::min<nnfuzz::Index>(c, 64); ++k) v(k) = in.f32();
    corpus.add(x.data(), v.data(), parent, root, depth, in.u32());
    corpus.set_times_picked(i, in.u8());
  }
  // A coverage-policy state: opaque bytes, kept as they are (restore_state() judges them).
  std::vector<std::uint8_t> state(in.u8() % 100);
  for (auto& b : state) b = in.u8();
  corpus.set_coverage_state(state);
  if (!saved(dir, corpus)) return;
  const nnfuzz::Corpus back = nnfuzz::load_corpus(dir.path());  // must not throw
  if (back.size() != corpus.size() || back.input_dim() != d || back.coverage_dim() != c ||
      back.coverage_state() != state)
    std::abort();
  for (nnfuzz::Index i = 0; i < back.size(); ++i) {
    const auto &a = back.entry(i), &b = corpus.entry(i);
    if (a.parent != b.parent || a.root != b.root || a.depth != b.depth || a.execution != b.execution ||
        a.times_picked != b.times_picked)
      std::abort();
    if (!same_bits(back.input(i).data(), corpus.input(i).data(), d) ||
        !same_bits(back.coverage(i).data(), corpus.coverage(i).data(), c))
      std::abort();
  }
}

// A structured corpus (token and float parts) with arbitrary token cells: ids and lengths may be
// out of range, which the writer must refuse.
void structured_roundtrip(nnfuzz_fuzz::TempDir& dir, Bytes in) {
  nnfuzz::InputLayout layout;
  const int parts = 1 + in.u8() % 3;
  for (int p = 0; p < parts; ++p) {
    const std::uint8_t kind = in.u8();
    if (kind & 1)
      layout.tokens("t" + std::to_string(p), 1 + in.u8() % 12, 1 + in.u8() % 6);
    else
      layout.floats("f" + std::to_string(p), 1 + in.u8() % 5);
  }
  const nnfuzz::Index c = 1 + in.u8() % 3;
  const int count = in.u8() % 5;
  nnfuzz::Corpus corpus(layout, c);
  std::vector<float> f(static_cast<std::size_t>(layout.float_cells()) + 1);
  std::vector<nnfuzz::TokenId> t(static_cast<std::size_t>(layout.token_cells()) + 1);
  nnfuzz::RowVector v(c);
  for (int i = 0; i < count; ++i) {
    for (auto& x : f) x = in.f32();
    for (auto& x : t) x = static_cast<nnfuzz::TokenId>(static_cast<std::int8_t>(in.u8()));
    for (nnfuzz::Index k = 0; k < c; ++k) v(k) = in.f32();
    corpus.add_cells(f.data(), t.data(), v.data(), i - 1, 0, i, in.u32());
  }
  corpus.set_executions(in.u32());
  if (!saved(dir, corpus)) return;
  const nnfuzz::Corpus back = nnfuzz::load_corpus(dir.path());  // must not throw
  if (!back.structured() || back.layout() != layout || back.size() != corpus.size() ||
      back.executions() != corpus.executions())
    std::abort();
  for (nnfuzz::Index i = 0; i < back.size(); ++i) {
    if (layout.float_cells() > 0 &&
        !same_bits(back.view(i).floats_data(), corpus.view(i).floats_data(), layout.float_cells()))
      std::abort();
    if (layout.token_cells() > 0 && std::memcmp(back.view(i).tokens_data(), corpus.view(i).tokens_data(),
                                                4 * static_cast<std::size_t>(layout.token_cells())) != 0)
      std::abort();
    if (!same_bits(back.coverage(i).data(), corpus.coverage(i).data(), c)) std::abort();
  }
}

void finding_roundtrip(nnfuzz_fuzz::TempDir& dir, Bytes in) {
  nnfuzz::Finding f;
  const nnfuzz::Index d = width(in.u8());
  f.input.resize(d);
  for (nnfuzz::Index k = 0; k < d; ++k) f.input(k) = k < 64 ? in.f32() : 0.0f;
  f.root = in.u8();
  f.parent = static_cast<std::int8_t>(in.u8());
  f.depth = in.u8();
  f.execution = in.u32();
  const std::size_t len = in.u8();
  for (std::size_t i = 0; i < len; ++i) f.what.push_back(static_cast<char>(in.u8()));
  dir.reset();
  std::string path;
  try {
    path = nnfuzz::save_finding(dir.path(), f, 7);
  } catch (const std::invalid_argument&) {
    return;
  }
  const nnfuzz::SavedFinding s = nnfuzz::load_finding(path);  // must not throw
  if (s.run_seed != 7 || s.finding.what != f.what || s.finding.execution != f.execution || s.finding.root != f.root ||
      s.finding.parent != f.parent || s.finding.depth != f.depth || s.finding.input.cols() != d ||
      !same_bits(s.finding.input.data(), f.input.data(), d))
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  static nnfuzz_fuzz::TempDir dir("roundtrip");
  Bytes in{data + 1, size - 1};
  if (data[0] & 1)
    finding_roundtrip(dir, in);
  else if (data[0] & 2)
    structured_roundtrip(dir, in);
  else
    corpus_roundtrip(dir, in);
  return 0;
}
