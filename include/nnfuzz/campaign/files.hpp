// SPDX-License-Identifier: MIT
// nnfuzz: persistent campaigns — a corpus directory that survives a kill, resume, replay.
//
// Directory layout (all files little-endian binary, each ending in a CRC-32 of what precedes it,
// each written atomically and durably: temporary file, fsync, rename or link, fsync of the
// directory):
//   DIR/corpus.bin                    the corpus, format version 3 (written; versions 1 and 2 are
//                                     read too): "NNFZCORP", u32 version 3, u32 coverage_dim,
//                                     u64 count, u64 executions (Corpus::executions()), u32 parts
//                                     (0: dense), dense: u32 input_dim; structured: per part u32
//                                     kind (0 floats, 1 tokens), u32 width (max_len), u32 vocab,
//                                     u32 name length + name; u32 state length (at most 2^24) +
//                                     the coverage policy's state (Corpus::coverage_state(), opaque
//                                     here: CalibratedCoverage's radius; 0 bytes for none); then per
//                                     element: i64 parent, i64 root, i64 depth, u64 execution, u64
//                                     times_picked, input floats (the float parts), i32 token cells
//                                     (per token part: max_len ids, then the length), coverage
//                                     floats; crc32
//                                     (version 2: the same without the state; version 1:
//                                     "NNFZCORP", u32 1, u32 input_dim, u32 coverage_dim, u64
//                                     count, elements without token cells)
//   DIR/lock                          held (flock) by the CampaignSaver writing DIR; holds its pid
//   DIR/findings/finding-<execution>-<pid>-<n>.bin
//                                     one finding of a dense model: "NNFZFIND", u32 version 1,
//                                     u32 dim, i64 root, i64 parent, i64 depth, u64 execution,
//                                     u64 run seed, u32 length + bytes of `what`, input floats; crc32
//                                     of a structured model: u32 version 2, u32 parts, the same
//                                     lineage, seed and `what`, then per part u32 kind, u32 count,
//                                     count floats or i32 ids; crc32
// Killing the process at any moment leaves the previous corpus.bin or the new one, never a torn
// file, and every finding a CampaignSaver reported is on disk (and its directory entry synced)
// before the report returns. The writer refuses, before writing anything, what the loader would
// refuse: the two accept exactly the same files.
#pragma once

#include "../corpus.hpp"
#include "../detail/binary_file.hpp"
#include "../detail/config.hpp"
#include "../fuzz_types.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sys/file.h>
#include <string>
#include <vector>

namespace nnfuzz {

namespace detail {

constexpr char kCorpusMagic[8] = {'N', 'N', 'F', 'Z', 'C', 'O', 'R', 'P'};
constexpr char kFindingMagic[8] = {'N', 'N', 'F', 'Z', 'F', 'I', 'N', 'D'};
constexpr std::uint32_t kMaxCampaignDim = 1u << 24;                // input and coverage widths
constexpr std::uint64_t kMaxCorpusBytes = std::uint64_t{1} << 36;  // corpus.bin: 64 GiB
constexpr std::uint64_t kMaxFindingBytes = std::uint64_t{1} << 30;
constexpr std::uint32_t kMaxParts = 4096;
constexpr std::uint32_t kMaxPartName = 4096;
constexpr std::uint32_t kMaxCoverageState = 1u << 24;  // corpus.bin's coverage-policy state, bytes

// Shapes of a structured layout both the writer and the loader accept.
inline void check_layout(const char* fn, const std::string& path, const InputLayout& layout) {
  if (layout.size() < 1 || layout.size() > kMaxParts)
    fail(fn, ": corpus '", path, "' has ", layout.size(), " input parts (must be 1..", kMaxParts, ")");
  for (const InputPart& p : layout.parts()) {
    if (p.width < 1 || p.width > kMaxCampaignDim)
      fail(fn, ": corpus '", path, "' part '", p.name, "' has width ", p.width, " (must be 1..", kMaxCampaignDim, ")");
    if (p.kind == InputPart::Kind::tokens && (p.vocab < 1 || p.vocab > (Index{1} << 30)))
      fail(fn, ": corpus '", path, "' part '", p.name, "' has vocabulary ", p.vocab, " (must be 1..2^30)");
    if (p.name.size() > kMaxPartName)
      fail(fn, ": corpus '", path, "' has a part name of ", p.name.size(), " bytes (at most ", kMaxPartName, ")");
  }
  if (static_cast<std::uint64_t>(layout.float_cells()) + static_cast<std::uint64_t>(layout.token_cells()) >
      kMaxCampaignDim)
    fail(fn, ": corpus '", path, "' has inputs of ", layout.float_cells() + layout.token_cells(), " cells (at most ",
         kMaxCampaignDim, ")");
}
// The token cells of one stored input: lengths in [1, max_len], ids in [0, vocab).
inline void check_token_cells(const char* fn, const std::string& path, std::uint64_t element, const InputLayout& layout,
                              const TokenId* t) {
  for (const InputPart& p : layout.parts()) {
    if (p.kind != InputPart::Kind::tokens) continue;
    const TokenId len = t[p.width];
    if (len < 1 || len > p.width)
      fail(fn, ": corpus '", path, "' element ", element, " part '", p.name, "' has length ", len, " (must be 1..",
           p.width, ")");
    for (Index i = 0; i < len; ++i)
      if (t[i] < 0 || t[i] >= p.vocab)
        fail(fn, ": corpus '", path, "' element ", element, " part '", p.name, "' token ", i, " is ", t[i],
             ", outside [0, ", p.vocab, ")");
    t += p.width + 1;
  }
}

// The one check of a corpus both the writer and the loader make (the writer before writing).
inline void check_corpus_shape(const char* fn, const std::string& path, std::uint64_t in_dim, std::uint64_t cov_dim,
                               std::uint64_t count) {
  if (in_dim < 1 || in_dim > kMaxCampaignDim || cov_dim < 1 || cov_dim > kMaxCampaignDim)
    fail(fn, ": corpus '", path, "' has input width ", in_dim, " and coverage width ", cov_dim,
         " (each must be in [1, ", kMaxCampaignDim, "])");
  if (count == 0) fail(fn, ": corpus '", path, "' has no elements");
}
inline std::uint64_t corpus_file_bytes(std::uint64_t in_dim, std::uint64_t token_cells, std::uint64_t cov_dim,
                                       std::uint64_t count, std::uint64_t header) {
  return header + count * (40 + 4 * (in_dim + token_cells + cov_dim)) + 4;
}
// The inputs' shape as corpus.bin stores it, checked as the loader would: the file format's one
// distinction of input kind — a structured corpus' layout (part count, then per part kind,
// width, vocab and name), or 0 parts and a dense corpus' width.
inline std::vector<std::uint8_t> corpus_input_header(const char* fn, const std::string& path, const Corpus& c) {
  std::vector<std::uint8_t> h;
  if (c.structured()) {
    check_layout(fn, path, c.layout());
    check_corpus_shape(fn, path, 1, static_cast<std::uint64_t>(c.coverage_dim()), static_cast<std::uint64_t>(c.size()));
    put_u32(h, static_cast<std::uint32_t>(c.layout().size()));
    for (const InputPart& p : c.layout().parts()) {
      put_u32(h, p.kind == InputPart::Kind::tokens ? 1u : 0u);
      put_u32(h, static_cast<std::uint32_t>(p.width));
      put_u32(h, static_cast<std::uint32_t>(p.vocab));
      put_u32(h, static_cast<std::uint32_t>(p.name.size()));
      h.insert(h.end(), p.name.begin(), p.name.end());
    }
  } else {
    check_corpus_shape(fn, path, static_cast<std::uint64_t>(c.input_dim()),
                       static_cast<std::uint64_t>(c.coverage_dim()), static_cast<std::uint64_t>(c.size()));
    put_u32(h, 0);
    put_u32(h, static_cast<std::uint32_t>(c.input_dim()));
  }
  return h;
}

}  // namespace detail

/// Saves a corpus to DIR/corpus.bin atomically and durably (creating DIR), streaming it (memory
/// use does not grow with the corpus), in format version 3: with Corpus::coverage_state(), what
/// the coverage policy had learned, so that Fuzzer::resume() goes on with it. Refuses, before
/// writing anything, a corpus the loader would refuse: empty, a width outside [1, 2^24], a
/// non-finite input, broken lineage, a coverage state over 2^24 bytes, or a file over 64 GiB.
/// (Coverage vectors may hold NaN/Inf: a seed's can.) Throws naming the file. `name` names the
/// file in DIR (campaign/sync.hpp writes its shared elements in this format too).
inline void save_corpus(const std::string& dir, const Corpus& c, const std::string& name = "corpus.bin") {
  const std::string path = (std::filesystem::path(dir) / name).string();
  const std::vector<std::uint8_t> input_header = detail::corpus_input_header("save_corpus()", path, c);
  const std::vector<std::uint8_t>& state = c.coverage_state();
  if (state.size() > detail::kMaxCoverageState)
    detail::fail("save_corpus(): corpus '", path, "' has a coverage state of ", state.size(), " bytes (at most ",
                 detail::kMaxCoverageState, ")");
  const std::uint64_t header = 32 + input_header.size() + 4 + static_cast<std::uint64_t>(state.size());
  const std::uint64_t bytes = detail::corpus_file_bytes(
      static_cast<std::uint64_t>(c.input_dim()), static_cast<std::uint64_t>(c.token_cells()),
      static_cast<std::uint64_t>(c.coverage_dim()), static_cast<std::uint64_t>(c.size()), header);
  if (bytes > detail::kMaxCorpusBytes)
    detail::fail("save_corpus(): corpus '", path, "' would take ", bytes, " bytes, more than the loader's limit of ",
                 detail::kMaxCorpusBytes);
  for (Index i = 0; i < c.size(); ++i) {
    const CorpusEntry& e = c.entry(i);
    if (e.parent >= i || e.parent < -1 || e.root < 0 || e.root >= c.size() || e.depth < 0)
      detail::fail("save_corpus(): corpus '", path, "' element ", i, " has inconsistent lineage (parent ", e.parent,
                   ", root ", e.root, ", depth ", e.depth, ")");
    const float* in = c.floats_data(i);
    if (in && !detail::all_finite(in, static_cast<std::size_t>(c.input_dim())))
      detail::fail("save_corpus(): corpus '", path, "' element ", i, " has a non-finite input value");
    if (c.token_cells() > 0)
      detail::check_token_cells("save_corpus()", path, static_cast<std::uint64_t>(i), c.layout(), c.tokens_data(i));
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) detail::fail("save_corpus(): cannot create directory '", dir, "': ", ec.message());
  detail::AtomicFile file("save_corpus()", path);
  std::vector<std::uint8_t> buf(detail::kCorpusMagic, detail::kCorpusMagic + 8);
  detail::put_u32(buf, 3);
  detail::put_u32(buf, static_cast<std::uint32_t>(c.coverage_dim()));
  detail::put_u64(buf, static_cast<std::uint64_t>(c.size()));
  detail::put_u64(buf, c.executions());
  buf.insert(buf.end(), input_header.begin(), input_header.end());
  detail::put_u32(buf, static_cast<std::uint32_t>(state.size()));
  buf.insert(buf.end(), state.begin(), state.end());
  for (Index i = 0; i < c.size(); ++i) {
    const CorpusEntry& e = c.entry(i);
    detail::put_u64(buf, static_cast<std::uint64_t>(e.parent));
    detail::put_u64(buf, static_cast<std::uint64_t>(e.root));
    detail::put_u64(buf, static_cast<std::uint64_t>(e.depth));
    detail::put_u64(buf, e.execution);
    detail::put_u64(buf, e.times_picked);
    if (c.input_dim() > 0) detail::put_floats(buf, c.floats_data(i), c.input_dim());
    if (c.token_cells() > 0) {
      const std::size_t at = buf.size();
      buf.resize(at + 4 * static_cast<std::size_t>(c.token_cells()));
      std::memcpy(buf.data() + at, c.tokens_data(i), 4 * static_cast<std::size_t>(c.token_cells()));
    }
    detail::put_floats(buf, c.coverage(i).data(), c.coverage_dim());
    if (buf.size() >= (1u << 16)) {
      file.write(buf);
      buf.clear();
    }
  }
  file.write(buf);
  file.finish();
}

/// Loads DIR/corpus.bin (format versions 1, 2 and 3). Validates magic, version, dimensions, the
/// element count against the file size (before allocating), lineage (parents precede children),
/// finite inputs and the CRC-32; throws std::invalid_argument naming the file and the value
/// otherwise (a missing file, one that is not a regular file and an unreadable one each say so).
/// The coverage policy's state (version 3) is loaded as Corpus::coverage_state() without being
/// read here: the policy's restore_state() checks it when Fuzzer::resume() hands it over.
/// Versions 1 and 2 have none: resume() starts the policy afresh. `name`: see save_corpus().
inline Corpus load_corpus(const std::string& dir, const std::string& name = "corpus.bin") {
  const std::string path = (std::filesystem::path(dir) / name).string();
  // The header against the file's size before the body is read (a huge file that claims two
  // elements is refused at once, without reading it).
  auto head_check = [&path](const std::vector<std::uint8_t>& h, std::uintmax_t size) {
    if (h.size() < 36) return;  // the full parse below reports it
    const std::uint32_t version = detail::get_u32(&h[8]);
    std::uint64_t header = 0, count = 0, per = 0;
    bool exact = true;
    if (version == 1) {
      header = 28;
      count = detail::get_u64(&h[20]);
      per = 40 + 4 * (std::uint64_t{detail::get_u32(&h[12])} + detail::get_u32(&h[16]));
    } else if ((version == 2 || version == 3) && h.size() >= 40) {
      count = detail::get_u64(&h[16]);
      const std::uint32_t parts = detail::get_u32(&h[32]);
      exact = parts == 0;
      header = exact ? 40 : 36;  // structured: at least 36 (the parts' sizes are not read here)
      if (version == 3) {        // the state's length and bytes, after the dense input width
        if (exact && h.size() < 44) return;
        const std::uint32_t state_len = exact ? detail::get_u32(&h[40]) : 0;
        if (state_len > detail::kMaxCoverageState)
          detail::fail("load_corpus(): file '", path, "' claims a coverage state of ", state_len, " bytes (at most ",
                       detail::kMaxCoverageState, ")");
        header += 4 + std::uint64_t{state_len};
      }
      per = 40 + 4 * (std::uint64_t{detail::get_u32(&h[12])} + (exact ? detail::get_u32(&h[36]) : 0));
    } else {
      return;
    }
    const std::uint64_t fits = size >= header + 4 ? (size - header - 4) / per : 0;
    if (count > fits || (exact && header + count * per + 4 != size))
      detail::fail("load_corpus(): file '", path, "' claims ", count, " elements, its size (", size, " bytes) fits ",
                   fits);
  };
  const auto bytes =
      detail::read_sealed("load_corpus()", path, detail::kCorpusMagic, detail::kMaxCorpusBytes, head_check);
  detail::Reader r{"load_corpus()", path, bytes};
  r.pos = 8;
  const std::uint32_t version = r.u32();
  if (version < 1 || version > 3)
    detail::fail("load_corpus(): file '", path, "' has format version ", version, " (reads 1, 2 and 3)");
  std::uint32_t in_dim = 0, cov_dim = 0, parts = 0;
  std::uint64_t count = 0, executions = 0;
  InputLayout layout;
  if (version == 1) {
    in_dim = r.u32();
    cov_dim = r.u32();
    count = r.u64();
  } else {
    cov_dim = r.u32();
    count = r.u64();
    executions = r.u64();
    parts = r.u32();
    if (parts == 0) {
      in_dim = r.u32();
    } else {
      if (parts > detail::kMaxParts)
        detail::fail("load_corpus(): file '", path, "' claims ", parts, " input parts (at most ", detail::kMaxParts,
                     ")");
      for (std::uint32_t p = 0; p < parts; ++p) {
        const std::uint32_t kind = r.u32(), width = r.u32(), vocab = r.u32(), name_len = r.u32();
        if (kind > 1) detail::fail("load_corpus(): file '", path, "' part ", p, " has unknown kind ", kind);
        if (name_len > detail::kMaxPartName)
          detail::fail("load_corpus(): file '", path, "' part ", p, " has a name of ", name_len, " bytes");
        r.need(name_len);
        std::string part_name(reinterpret_cast<const char*>(&bytes[r.pos]), name_len);
        r.pos += name_len;
        if (width < 1 || width > detail::kMaxCampaignDim || (kind == 1 && (vocab < 1 || vocab > (1u << 30))))
          detail::fail("load_corpus(): file '", path, "' part '", part_name, "' has width ", width, " and vocabulary ",
                       vocab);
        if (kind == 1)
          layout.tokens(part_name, vocab, width);
        else
          layout.floats(part_name, width);
      }
      detail::check_layout("load_corpus()", path, layout);
      in_dim = static_cast<std::uint32_t>(layout.float_cells());
    }
  }
  std::vector<std::uint8_t> state;
  if (version >= 3) {
    const std::uint32_t state_len = r.u32();
    if (state_len > detail::kMaxCoverageState)
      detail::fail("load_corpus(): file '", path, "' claims a coverage state of ", state_len, " bytes (at most ",
                   detail::kMaxCoverageState, ")");
    r.need(state_len);
    state.assign(bytes.begin() + static_cast<std::ptrdiff_t>(r.pos),
                 bytes.begin() + static_cast<std::ptrdiff_t>(r.pos + state_len));
    r.pos += state_len;
  }
  const std::uint32_t token_cells = static_cast<std::uint32_t>(layout.token_cells());
  if (parts > 0)
    detail::check_corpus_shape("load_corpus()", path, 1, cov_dim, count);
  else
    detail::check_corpus_shape("load_corpus()", path, in_dim, cov_dim, count);
  const std::uint64_t per = 40 + 4 * (static_cast<std::uint64_t>(in_dim) + token_cells + cov_dim);
  const std::uint64_t header = r.pos;
  if (count > (bytes.size() / per) + 1 || header + count * per + 4 != bytes.size())
    detail::fail("load_corpus(): file '", path, "' claims ", count, " elements, its size (", bytes.size(),
                 " bytes) fits ", (bytes.size() - header - 4) / per);
  Corpus c;
  if (parts > 0)
    c.reset(layout, cov_dim);
  else
    c.reset(in_dim, cov_dim);
  c.reserve(static_cast<Index>(count));
  RowVector in(in_dim), cov(cov_dim);
  std::vector<TokenId> tokens(token_cells);
  for (std::uint64_t i = 0; i < count; ++i) {
    const auto parent = static_cast<std::int64_t>(r.u64()), root = static_cast<std::int64_t>(r.u64()),
               depth = static_cast<std::int64_t>(r.u64());
    const std::uint64_t execution = r.u64(), picked = r.u64();
    if (parent >= static_cast<std::int64_t>(i) || parent < -1 || root < 0 || root >= static_cast<std::int64_t>(count) ||
        depth < 0)
      detail::fail("load_corpus(): file '", path, "' element ", i, " has inconsistent lineage (parent ", parent,
                   ", root ", root, ", depth ", depth, ")");
    r.floats(in.data(), in_dim);
    if (token_cells > 0) {
      r.need(4 * static_cast<std::size_t>(token_cells));
      std::memcpy(tokens.data(), &bytes[r.pos], 4 * static_cast<std::size_t>(token_cells));
      r.pos += 4 * static_cast<std::size_t>(token_cells);
      detail::check_token_cells("load_corpus()", path, i, layout, tokens.data());
    }
    r.floats(cov.data(), cov_dim);
    if (!detail::all_finite(in))
      detail::fail("load_corpus(): file '", path, "' element ", i, " has a non-finite input value");
    if (parts > 0)
      c.add_cells(in.data(), tokens.data(), cov.data(), parent, root, depth, execution);
    else
      c.add(in.data(), cov.data(), parent, root, depth, execution);
    c.set_times_picked(static_cast<Index>(i), picked);
  }
  c.set_executions(executions);
  c.set_coverage_state(std::move(state));
  return c;
}

/// A finding as stored on disk, with the seed of the run that produced it.
struct SavedFinding {
  Finding finding;         ///< the finding
  std::uint64_t run_seed;  ///< FuzzOptions::seed of the run that made it
  std::string path;        ///< the file it was read from
};

/// Writes one finding to DIR/findings/finding-<execution>-<pid>-<n>.bin atomically and durably,
/// and returns the path. Never replaces a file: the name is taken with link(), so two processes
/// writing into one directory cannot overwrite each other's findings. Refuses (before writing)
/// an input width outside [1, 2^24], a non-finite input value or a file the loader would find
/// too large.
inline std::string save_finding(const std::string& dir, const Finding& f, std::uint64_t run_seed) {
  namespace fs = std::filesystem;
  const fs::path fdir = fs::path(dir) / "findings";
  const bool structured = !f.value.tokens.empty() || !f.value.floats.empty();
  if (structured) {
    const std::size_t parts = f.value.tokens.size();
    if (parts < 1 || parts > detail::kMaxParts || f.value.floats.size() != parts)
      detail::fail("save_finding(): finding has ", parts, " token and ", f.value.floats.size(),
                   " float part slots (must be equal, 1..", detail::kMaxParts, "), directory '", fdir.string(), "'");
    std::uint64_t cells = 0;
    for (std::size_t p = 0; p < parts; ++p) {
      const bool tokens = !f.value.tokens[p].empty();
      const auto n = static_cast<std::uint64_t>(tokens ? f.value.tokens[p].size() : f.value.floats[p].size());
      if ((tokens && f.value.floats[p].size() != 0) || n < 1 || n > detail::kMaxCampaignDim)
        detail::fail("save_finding(): finding part ", p, " must hold 1..", detail::kMaxCampaignDim,
                     " tokens or floats (not both), directory '", fdir.string(), "'");
      if (tokens)
        for (TokenId t : f.value.tokens[p])
          if (t < 0) detail::fail("save_finding(): finding part ", p, " holds a negative token id ", t);
      cells += n;
    }
    if (48 + f.what.size() + 8 * parts + 4 * cells > detail::kMaxFindingBytes)
      detail::fail("save_finding(): finding too large for the loader, directory '", fdir.string(), "'");
  } else if (f.input.cols() < 1 || f.input.cols() > static_cast<Index>(detail::kMaxCampaignDim))
    detail::fail("save_finding(): finding input width ", f.input.cols(), " (must be in [1, ", detail::kMaxCampaignDim,
                 "]), directory '", fdir.string(), "'");
  if (structured) {
    for (std::size_t p = 0; p < f.value.floats.size(); ++p)
      if (!detail::all_finite(f.value.floats[p].data(), f.value.floats[p].size()))
        detail::fail("save_finding(): finding part ", p, " holds a non-finite input value (the loader refuses it), ",
                     "directory '", fdir.string(), "'");
  } else if (!detail::all_finite(f.input.data(), static_cast<std::size_t>(f.input.cols()))) {
    detail::fail("save_finding(): finding holds a non-finite input value (the loader refuses it), directory '",
                 fdir.string(), "'");
  }
  if (48 + f.what.size() + 4 * static_cast<std::uint64_t>(f.input.cols()) > detail::kMaxFindingBytes)
    detail::fail("save_finding(): finding too large for the loader (description of ", f.what.size(),
                 " bytes), directory '", fdir.string(), "'");
  std::error_code ec;
  fs::create_directories(fdir, ec);
  if (ec) detail::fail("save_finding(): cannot create directory '", fdir.string(), "': ", ec.message());
  std::vector<std::uint8_t> out(detail::kFindingMagic, detail::kFindingMagic + 8);
  detail::put_u32(out, structured ? 2 : 1);
  detail::put_u32(out, static_cast<std::uint32_t>(structured ? f.value.tokens.size() : f.input.cols()));
  detail::put_u64(out, static_cast<std::uint64_t>(f.root));
  detail::put_u64(out, static_cast<std::uint64_t>(f.parent));
  detail::put_u64(out, static_cast<std::uint64_t>(f.depth));
  detail::put_u64(out, f.execution);
  detail::put_u64(out, run_seed);
  detail::put_u32(out, static_cast<std::uint32_t>(f.what.size()));
  out.insert(out.end(), f.what.begin(), f.what.end());
  if (structured) {
    for (std::size_t p = 0; p < f.value.tokens.size(); ++p) {
      const auto& ids = f.value.tokens[p];
      if (!ids.empty()) {
        detail::put_u32(out, 1);
        detail::put_u32(out, static_cast<std::uint32_t>(ids.size()));
        for (TokenId t : ids) detail::put_u32(out, static_cast<std::uint32_t>(t));
      } else {
        detail::put_u32(out, 0);
        detail::put_u32(out, static_cast<std::uint32_t>(f.value.floats[p].size()));
        detail::put_floats(out, f.value.floats[p].data(), f.value.floats[p].size());
      }
    }
  } else {
    detail::put_floats(out, f.input.data(), f.input.cols());
  }
  const std::string stem =
      "finding-" + std::to_string(f.execution) + "-" + std::to_string(static_cast<long>(getpid())) + "-";
  for (int n = 0;; ++n) {
    const std::string p = (fdir / (stem + std::to_string(n) + ".bin")).string();
    detail::AtomicFile file("save_finding()", p);
    file.write(out);
    if (file.finish(/*no_replace=*/true)) return p;
  }
}

namespace detail {
// One finding file; `fn` names the public function in error messages.
inline SavedFinding read_finding_file(const char* fn, const std::string& path) {
  const auto bytes = read_sealed(fn, path, kFindingMagic, kMaxFindingBytes);
  Reader r{fn, path, bytes};
  r.pos = 8;
  const std::uint32_t version = r.u32();
  if (version != 1 && version != 2) fail(fn, ": file '", path, "' has format version ", version, " (reads 1 and 2)");
  const std::uint32_t dim = r.u32();  // version 1: floats; version 2: parts
  if (dim < 1 || dim > (version == 1 ? kMaxCampaignDim : kMaxParts))
    fail(fn, ": file '", path, "' has absurd input size ", dim);
  SavedFinding s;
  s.path = path;
  s.finding.root = static_cast<Index>(r.u64());
  s.finding.parent = static_cast<Index>(r.u64());
  s.finding.depth = static_cast<Index>(r.u64());
  s.finding.execution = r.u64();
  s.run_seed = r.u64();
  const std::uint32_t len = r.u32();
  r.need(len);
  s.finding.what.assign(reinterpret_cast<const char*>(&bytes[r.pos]), len);
  r.pos += len;
  if (version == 2) {
    s.finding.value.tokens.resize(dim);
    s.finding.value.floats.resize(dim);
    for (std::uint32_t p = 0; p < dim; ++p) {
      const std::uint32_t kind = r.u32(), n = r.u32();
      if (kind > 1 || n < 1 || n > kMaxCampaignDim)
        fail(fn, ": file '", path, "' part ", p, " has kind ", kind, " and ", n, " values");
      r.need(4 * static_cast<std::size_t>(n));  // before allocating what the file claims
      if (kind == 1) {
        auto& ids = s.finding.value.tokens[p];
        ids.resize(n);
        for (auto& t : ids) {
          t = static_cast<TokenId>(r.u32());
          if (t < 0) fail(fn, ": file '", path, "' part ", p, " holds a negative token id ", t);
        }
      } else {
        s.finding.value.floats[p].resize(n);
        r.floats(s.finding.value.floats[p].data(), n);
        if (!all_finite(s.finding.value.floats[p].data(), n))
          fail(fn, ": file '", path, "' part ", p, " holds a non-finite input value (NaN or infinity): not an input ",
               "the fuzzer makes");
      }
    }
  } else {
    r.need(4 * static_cast<std::size_t>(dim));  // before allocating what the file claims
    s.finding.input.resize(dim);
    r.floats(s.finding.input.data(), dim);
    if (!all_finite(s.finding.input.data(), dim))
      fail(fn, ": file '", path, "' holds a non-finite input value (NaN or infinity): not an input the fuzzer makes");
  }
  if (r.pos + 4 != bytes.size()) fail(fn, ": file '", path, "' has trailing bytes");
  return s;
}
}  // namespace detail

/// Loads one finding file (as written by save_finding(); e.g. to replay it). A malformed file
/// throws, naming it.
inline SavedFinding load_finding(const std::string& path) { return detail::read_finding_file("load_finding()", path); }

/// Loads every finding of DIR/findings/, ordered by execution then file name. No findings/
/// directory means no findings; a findings/ that cannot be examined (EACCES on DIR), is not a
/// directory, cannot be listed, or holds
/// a malformed file throws (naming it): a campaign directory is never silently half-read.
inline std::vector<SavedFinding> load_findings(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<SavedFinding> all;
  const fs::path fdir = fs::path(dir) / "findings";
  std::error_code ec;
  const fs::file_status st = fs::status(fdir, ec);
  if (st.type() == fs::file_type::not_found) return all;
  if (ec || !fs::exists(st))  // EACCES on the campaign directory: never "no findings"
    detail::fail("load_findings(): cannot examine '", fdir.string(),
                 "': ", ec ? ec.message() : std::string("unknown type"));
  if (!fs::is_directory(st)) detail::fail("load_findings(): '", fdir.string(), "' is not a directory");
  std::vector<std::string> paths;
  fs::directory_iterator it(fdir, ec), end;
  for (; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".bin") paths.push_back(it->path().string());  // skips *.tmp.* leftovers
  if (ec) detail::fail("load_findings(): cannot list '", fdir.string(), "': ", ec.message());
  std::sort(paths.begin(), paths.end());
  all.reserve(paths.size());
  for (const auto& path : paths) all.push_back(detail::read_finding_file("load_findings()", path));
  std::stable_sort(all.begin(), all.end(), [](const SavedFinding& a, const SavedFinding& b) {
    return a.finding.execution < b.finding.execution;
  });
  return all;
}

/// One group of findings that share a signature: what fired (the objective's description: the
/// first non-finite tensor, or both predicted labels) and the root seed.
struct FindingGroup {
  std::string what;       ///< Finding::what shared by the group
  Index root = 0;         ///< root seed shared by the group
  std::size_t count = 0;  ///< findings in the group
  std::size_t first = 0;  ///< index (in the list given) of the earliest finding
};

/// Groups findings by signature (what, root seed), in order of first appearance: a campaign that
/// hits the same bug a thousand times reports it once, with its count.
inline std::vector<FindingGroup> group_findings(const std::vector<Finding>& findings) {
  std::vector<FindingGroup> groups;
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const FindingGroup& g) { return g.root == f.root && g.what == f.what; });
    if (it == groups.end()) {
      groups.push_back({f.what, f.root, 1, i});
    } else {
      ++it->count;
      if (f.execution < findings[it->first].execution) it->first = i;
    }
  }
  return groups;
}

namespace detail {
// An exclusive advisory lock (flock) on DIR/lock, holding the owner's pid; released when the last
// copy goes (or the process dies: the kernel drops it).
inline std::shared_ptr<int> lock_campaign(const char* fn, const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "lock").string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    fail(fn, ": cannot open lock file '", path, "': ", errno_text(err));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {0};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    if (err == EWOULDBLOCK)
      fail(fn, ": campaign directory '", dir, "' is in use by process ",
           n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "?", " (lock file '", path,
           "'); two writers in one directory would overwrite each other's corpus: "
           "give each its own directory");
    fail(fn, ": cannot lock '", path, "': ", errno_text(err));
  }
  const std::string pid = std::to_string(static_cast<long>(getpid()));
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int err = errno;
    ::close(fd);
    fail(fn, ": cannot write lock file '", path, "': ", errno_text(err));
  }
  return std::shared_ptr<int>(new int(fd), [](int* p) {
    ::close(*p);
    delete p;
  });
}
}  // namespace detail

}  // namespace nnfuzz
