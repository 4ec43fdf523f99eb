// SPDX-License-Identifier: MIT
// nnfuzz: the corpus file of a campaign directory, DIR/corpus.bin: save_corpus(), load_corpus()
// (the format: campaign/files.hpp), and the shape checks the finding files share.
#pragma once

#include "../corpus.hpp"
#include "../detail/binary_file.hpp"
#include "../detail/config.hpp"
#include "../fuzz_types.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace nnfuzz {

namespace detail {

constexpr char kCorpusMagic[8] = {'N', 'N', 'F', 'Z', 'C', 'O', 'R', 'P'};
constexpr std::uint32_t kMaxCampaignDim = 1u << 24;                // input and coverage widths
constexpr std::uint64_t kMaxCorpusBytes = std::uint64_t{1} << 36;  // corpus.bin: 64 GiB
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

}  // namespace nnfuzz
