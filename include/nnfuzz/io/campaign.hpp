// nnfuzz: persistent campaigns — a corpus directory that survives a kill, resume, replay.
//
// Directory layout (all files little-endian binary, each ending in a CRC-32 of what precedes it,
// each written atomically: temporary file, fsync, rename):
//   DIR/corpus.bin                    the corpus: "NNFZCORP", u32 version 1, u32 input_dim,
//                                     u32 coverage_dim, u64 count, then per element:
//                                     i64 parent, i64 root, i64 depth, u64 execution,
//                                     u64 times_picked, input floats, coverage floats; crc32
//   DIR/findings/finding-<execution>-<n>.bin
//                                     one finding: "NNFZFIND", u32 version 1, u32 dim,
//                                     i64 root, i64 parent, i64 depth, u64 execution, u64 run seed,
//                                     u32 length + bytes of `what`, input floats; crc32
// Killing the process at any moment leaves the previous corpus.bin or the new one, never a torn
// file, and every finding a FindingSaver reported is on disk before the report returns.
#pragma once

#include "../corpus.hpp"
#include "../detail/config.hpp"
#include "../fuzzer.hpp"
#include "weights.hpp"

#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace nnfuzz {

namespace detail {

inline void put_u64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
inline void put_floats(std::vector<std::uint8_t>& out, const float* p, Index n) {
  const std::size_t at = out.size();
  out.resize(at + 4 * static_cast<std::size_t>(n));
  std::memcpy(out.data() + at, p, 4 * static_cast<std::size_t>(n));  // little-endian hosts only
}
inline void seal(std::vector<std::uint8_t>& out) {
  put_u32(out, static_cast<std::uint32_t>(crc32(0L, out.data(), static_cast<uInt>(out.size()))));
}

/// Reads a whole checksummed file, checking magic and CRC; `fn` names the caller in errors.
inline std::vector<std::uint8_t> read_sealed(const char* fn, const std::string& path, const char magic[8],
                                             std::uintmax_t max_bytes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) fail(fn, ": file '", path, "' does not exist or is not a regular file");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) fail(fn, ": cannot stat '", path, "': ", ec.message());
  if (size < 16) fail(fn, ": file '", path, "' is truncated: ", size, " bytes");
  if (size > max_bytes) fail(fn, ": file '", path, "' is too large: ", size, " bytes");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    const int err = errno;
    fail(fn, ": cannot open '", path, "': ", errno_text(err));
  }
  const std::size_t got = std::fread(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  if (got != bytes.size()) fail(fn, ": cannot read '", path, "': got ", got, " of ", size, " bytes");
  if (std::memcmp(bytes.data(), magic, 8) != 0) fail(fn, ": file '", path, "' has the wrong magic (expected ", std::string(magic, 8), ")");
  const std::uint32_t stored = get_u32(&bytes[bytes.size() - 4]);
  const auto actual = static_cast<std::uint32_t>(crc32(0L, bytes.data(), static_cast<uInt>(bytes.size() - 4)));
  if (stored != actual) fail(fn, ": file '", path, "' is corrupted: CRC-32 ", actual, " != stored ", stored);
  return bytes;
}

/// Cursor over a sealed file's payload that throws, naming the file, instead of overrunning.
struct Reader {
  const char* fn;
  const std::string& path;
  const std::vector<std::uint8_t>& b;
  std::size_t pos = 12;  // after magic and version
  void need(std::size_t n) const {
    if (pos + n + 4 > b.size()) fail(fn, ": file '", path, "' is truncated at byte ", pos, " (needs ", n, " more)");
  }
  std::uint32_t u32() {
    need(4);
    pos += 4;
    return get_u32(&b[pos - 4]);
  }
  std::uint64_t u64() {
    need(8);
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t{b[pos + static_cast<std::size_t>(i)]} << (8 * i);
    pos += 8;
    return v;
  }
  void floats(float* out, Index n) {
    need(4 * static_cast<std::size_t>(n));
    std::memcpy(out, &b[pos], 4 * static_cast<std::size_t>(n));
    pos += 4 * static_cast<std::size_t>(n);
  }
};

constexpr char kCorpusMagic[8] = {'N', 'N', 'F', 'Z', 'C', 'O', 'R', 'P'};
constexpr char kFindingMagic[8] = {'N', 'N', 'F', 'Z', 'F', 'I', 'N', 'D'};

}  // namespace detail

/// Saves a corpus to DIR/corpus.bin atomically (creating DIR). Throws naming the file on error.
inline void save_corpus(const std::string& dir, const Corpus& c) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) detail::fail("save_corpus(): cannot create directory '", dir, "': ", ec.message());
  std::vector<std::uint8_t> out(detail::kCorpusMagic, detail::kCorpusMagic + 8);
  out.reserve(static_cast<std::size_t>(c.size()) * (4 * static_cast<std::size_t>(c.input_dim() + c.coverage_dim()) + 40) + 64);
  detail::put_u32(out, 1);
  detail::put_u32(out, static_cast<std::uint32_t>(c.input_dim()));
  detail::put_u32(out, static_cast<std::uint32_t>(c.coverage_dim()));
  detail::put_u64(out, static_cast<std::uint64_t>(c.size()));
  for (Index i = 0; i < c.size(); ++i) {
    const CorpusEntry& e = c.entry(i);
    detail::put_u64(out, static_cast<std::uint64_t>(e.parent));
    detail::put_u64(out, static_cast<std::uint64_t>(e.root));
    detail::put_u64(out, static_cast<std::uint64_t>(e.depth));
    detail::put_u64(out, e.execution);
    detail::put_u64(out, e.times_picked);
    detail::put_floats(out, c.input(i).data(), c.input_dim());
    detail::put_floats(out, c.coverage(i).data(), c.coverage_dim());
  }
  detail::seal(out);
  detail::write_file_atomic("save_corpus()", (std::filesystem::path(dir) / "corpus.bin").string(), out);
}

/// Loads DIR/corpus.bin. Validates magic, version, dimensions, the element count against the
/// file size (before allocating), lineage (parents precede children) and the CRC-32; throws
/// std::invalid_argument naming the file and the value otherwise.
inline Corpus load_corpus(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "corpus.bin").string();
  const auto bytes = detail::read_sealed("load_corpus()", path, detail::kCorpusMagic, std::uintmax_t{1} << 36);
  detail::Reader r{"load_corpus()", path, bytes};
  r.pos = 8;
  const std::uint32_t version = r.u32();
  if (version != 1) detail::fail("load_corpus(): file '", path, "' has format version ", version, " (reads 1)");
  const std::uint32_t in_dim = r.u32(), cov_dim = r.u32();
  if (in_dim < 1 || in_dim > (1u << 24) || cov_dim < 1 || cov_dim > (1u << 20))
    detail::fail("load_corpus(): file '", path, "' has absurd dimensions ", in_dim, " x ", cov_dim);
  const std::uint64_t count = r.u64();
  const std::uint64_t per = 40 + 4 * (static_cast<std::uint64_t>(in_dim) + cov_dim);
  if (count == 0 || count > (bytes.size() / per) + 1 || 28 + count * per + 4 != bytes.size())
    detail::fail("load_corpus(): file '", path, "' claims ", count, " elements, its size (", bytes.size(), " bytes) fits ",
                 (bytes.size() - 32) / per);
  Corpus c(in_dim, cov_dim);
  c.reserve(static_cast<Index>(count));
  RowVector in(in_dim), cov(cov_dim);
  for (std::uint64_t i = 0; i < count; ++i) {
    const auto parent = static_cast<std::int64_t>(r.u64()), root = static_cast<std::int64_t>(r.u64()),
               depth = static_cast<std::int64_t>(r.u64());
    const std::uint64_t execution = r.u64(), picked = r.u64();
    if (parent >= static_cast<std::int64_t>(i) || parent < -1 || root < 0 || root >= static_cast<std::int64_t>(count) || depth < 0)
      detail::fail("load_corpus(): file '", path, "' element ", i, " has inconsistent lineage (parent ", parent, ", root ", root,
                   ", depth ", depth, ")");
    r.floats(in.data(), in_dim);
    r.floats(cov.data(), cov_dim);
    if (!detail::all_finite(in) || !detail::all_finite(cov)) detail::fail("load_corpus(): file '", path, "' element ", i, " holds a non-finite value");
    c.add(in.data(), cov.data(), parent, root, depth, execution);
    c.set_times_picked(static_cast<Index>(i), picked);
  }
  return c;
}

/// A finding as stored on disk, with the seed of the run that produced it.
struct SavedFinding {
  Finding finding;         ///< the finding
  std::uint64_t run_seed;  ///< FuzzOptions::seed of the run that made it
  std::string path;        ///< the file it was read from
};

/// Writes one finding to DIR/findings/finding-<execution>-<n>.bin atomically and returns the path.
inline std::string save_finding(const std::string& dir, const Finding& f, std::uint64_t run_seed) {
  namespace fs = std::filesystem;
  const fs::path fdir = fs::path(dir) / "findings";
  std::error_code ec;
  fs::create_directories(fdir, ec);
  if (ec) detail::fail("save_finding(): cannot create directory '", fdir.string(), "': ", ec.message());
  std::vector<std::uint8_t> out(detail::kFindingMagic, detail::kFindingMagic + 8);
  detail::put_u32(out, 1);
  detail::put_u32(out, static_cast<std::uint32_t>(f.input.cols()));
  detail::put_u64(out, static_cast<std::uint64_t>(f.root));
  detail::put_u64(out, static_cast<std::uint64_t>(f.parent));
  detail::put_u64(out, static_cast<std::uint64_t>(f.depth));
  detail::put_u64(out, f.execution);
  detail::put_u64(out, run_seed);
  detail::put_u32(out, static_cast<std::uint32_t>(f.what.size()));
  out.insert(out.end(), f.what.begin(), f.what.end());
  detail::put_floats(out, f.input.data(), f.input.cols());
  detail::seal(out);
  // Never overwrite: a second finding at the same execution gets the next free number.
  for (int n = 0;; ++n) {
    const fs::path p = fdir / ("finding-" + std::to_string(f.execution) + "-" + std::to_string(n) + ".bin");
    if (!fs::exists(p)) {
      detail::write_file_atomic("save_finding()", p.string(), out);
      return p.string();
    }
  }
}

namespace detail {
// One finding file; `fn` names the public function in error messages.
inline SavedFinding read_finding_file(const char* fn, const std::string& path) {
  const auto bytes = read_sealed(fn, path, kFindingMagic, std::uintmax_t{1} << 30);
  Reader r{fn, path, bytes};
  r.pos = 8;
  if (r.u32() != 1) fail(fn, ": file '", path, "' has an unknown format version");
  const std::uint32_t dim = r.u32();
  if (dim < 1 || dim > (1u << 24)) fail(fn, ": file '", path, "' has absurd input size ", dim);
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
  r.need(4 * static_cast<std::size_t>(dim));  // before allocating what the file claims
  s.finding.input.resize(dim);
  r.floats(s.finding.input.data(), dim);
  if (r.pos + 4 != bytes.size()) fail(fn, ": file '", path, "' has trailing bytes");
  return s;
}
}  // namespace detail

/// Loads one finding file (as written by save_finding(); e.g. to replay it). A malformed file
/// throws, naming it.
inline SavedFinding load_finding(const std::string& path) { return detail::read_finding_file("load_finding()", path); }

/// Loads every finding of DIR/findings/, ordered by execution then file name. A malformed file
/// throws (naming it): a campaign directory is never silently half-read.
inline std::vector<SavedFinding> load_findings(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<SavedFinding> all;
  const fs::path fdir = fs::path(dir) / "findings";
  std::error_code ec;
  if (!fs::is_directory(fdir, ec)) return all;
  std::vector<std::string> paths;
  for (const auto& e : fs::directory_iterator(fdir))
    if (e.path().extension() == ".bin") paths.push_back(e.path().string());  // skips *.tmp.* leftovers
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
  std::string what;            ///< Finding::what shared by the group
  Index root = 0;              ///< root seed shared by the group
  std::size_t count = 0;       ///< findings in the group
  std::size_t first = 0;       ///< index (in the list given) of the earliest finding
};

/// Groups findings by signature (what, root seed), in order of first appearance: a campaign that
/// hits the same bug a thousand times reports it once, with its count.
inline std::vector<FindingGroup> group_findings(const std::vector<Finding>& findings) {
  std::vector<FindingGroup> groups;
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    auto it = std::find_if(groups.begin(), groups.end(), [&](const FindingGroup& g) { return g.root == f.root && g.what == f.what; });
    if (it == groups.end()) {
      groups.push_back({f.what, f.root, 1, i});
    } else {
      ++it->count;
      if (f.execution < findings[it->first].execution) it->first = i;
    }
  }
  return groups;
}

/// Callback that makes a run a persistent campaign in `dir`: every finding is written
/// (atomically, synchronously) the moment it is reported — pass it before any printer so that
/// what is printed is already on disk — and the corpus is checkpointed after the seeds, then at
/// most every `checkpoint_seconds` when it grew, and at the end. Resume with
/// fuzzer.resume(load_corpus(dir), CampaignSaver(dir, seed)).
class CampaignSaver {
 public:
  /// `run_seed` is recorded in each finding; `checkpoint_seconds` >= 0 spaces corpus saves.
  explicit CampaignSaver(std::string dir, std::uint64_t run_seed = 0, double checkpoint_seconds = 5.0)
      : dir_(std::move(dir)), seed_(run_seed), every_(checkpoint_seconds) {}
  /// Saves the finding before anyone else hears of it.
  void on_finding(const Finding& f, const FuzzStats&) { paths_.push_back(save_finding(dir_, f, seed_)); }
  /// Checkpoints the corpus (first call, then at most every checkpoint_seconds, then at the end).
  void on_corpus(const Corpus& c, const FuzzStats& st) {
    if (saves_ == 0 || st.seconds - last_ >= every_ || st.finished) {
      save_corpus(dir_, c);
      last_ = st.seconds;
      ++saves_;
    }
  }
  /// Paths of the findings written by this saver.
  const std::vector<std::string>& finding_paths() const { return paths_; }
  /// Corpus checkpoints written.
  int checkpoints() const { return saves_; }

 private:
  std::string dir_;
  std::uint64_t seed_;
  double every_;
  double last_ = 0;
  int saves_ = 0;
  std::vector<std::string> paths_;
};

}  // namespace nnfuzz
