// SPDX-License-Identifier: MIT
// nnfuzz: the finding files of a campaign directory, DIR/findings/*.bin: save_finding(),
// load_finding(), load_findings(), and group_findings() (the format: campaign/files.hpp).
#pragma once

#include "corpus_file.hpp"
#include "../corpus.hpp"
#include "../detail/binary_file.hpp"
#include "../detail/config.hpp"
#include "../fuzz_types.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace nnfuzz {

namespace detail {
constexpr char kFindingMagic[8] = {'N', 'N', 'F', 'Z', 'F', 'I', 'N', 'D'};
constexpr std::uint64_t kMaxFindingBytes = std::uint64_t{1} << 30;
}  // namespace detail

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
  const std::vector<FindingPart> parts = input_parts(f);
  if (parts.size() > detail::kMaxParts || f.value.tokens.size() != f.value.floats.size())
    detail::fail("save_finding(): finding has ", f.value.tokens.size(), " token and ", f.value.floats.size(),
                 " float part slots (must be equal, at most ", detail::kMaxParts, "), directory '", fdir.string(), "'");
  std::uint64_t cells = 0;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    const FindingPart& x = parts[p];
    if (x.both || x.size < 1 || x.size > detail::kMaxCampaignDim)
      detail::fail("save_finding(): finding part ", p, " has width ", x.size, " (must hold 1..",
                   detail::kMaxCampaignDim, " tokens or floats, not both), directory '", fdir.string(), "'");
    for (std::size_t i = 0; x.ids && i < x.size; ++i)
      if (x.ids[i] < 0) detail::fail("save_finding(): finding part ", p, " holds a negative token id ", x.ids[i]);
    if (x.floats && !detail::all_finite(x.floats, x.size))
      detail::fail("save_finding(): finding part ", p, " holds a non-finite input value (the loader refuses it), ",
                   "directory '", fdir.string(), "'");
    cells += x.size;
  }
  if (48 + f.what.size() + 8 * parts.size() + 4 * cells > detail::kMaxFindingBytes)
    detail::fail("save_finding(): finding too large for the loader (description of ", f.what.size(),
                 " bytes), directory '", fdir.string(), "'");
  std::error_code ec;
  fs::create_directories(fdir, ec);
  if (ec) detail::fail("save_finding(): cannot create directory '", fdir.string(), "': ", ec.message());
  // The format's one distinction of input kind: version 1 (a dense row, 0.1's files) stores the
  // floats alone; version 2 stores the parts, each with its kind and size.
  const bool v2 = f.structured();
  std::vector<std::uint8_t> out(detail::kFindingMagic, detail::kFindingMagic + 8);
  detail::put_u32(out, v2 ? 2 : 1);
  detail::put_u32(out, static_cast<std::uint32_t>(v2 ? parts.size() : parts.front().size));
  detail::put_u64(out, static_cast<std::uint64_t>(f.root));
  detail::put_u64(out, static_cast<std::uint64_t>(f.parent));
  detail::put_u64(out, static_cast<std::uint64_t>(f.depth));
  detail::put_u64(out, f.execution);
  detail::put_u64(out, run_seed);
  detail::put_u32(out, static_cast<std::uint32_t>(f.what.size()));
  out.insert(out.end(), f.what.begin(), f.what.end());
  for (const FindingPart& x : parts) {
    if (v2) {
      detail::put_u32(out, x.ids ? 1 : 0);
      detail::put_u32(out, static_cast<std::uint32_t>(x.size));
    }
    if (x.ids)
      for (std::size_t i = 0; i < x.size; ++i) detail::put_u32(out, static_cast<std::uint32_t>(x.ids[i]));
    else
      detail::put_floats(out, x.floats, x.size);
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
  // Version 1: one float part of `dim` values, no part header (Finding::input); version 2: `dim`
  // parts, each with its kind and size (Finding::value).
  const bool v2 = version == 2;
  if (v2) {
    s.finding.value.tokens.resize(dim);
    s.finding.value.floats.resize(dim);
  }
  for (std::uint32_t p = 0; p < (v2 ? dim : 1); ++p) {
    const std::uint32_t kind = v2 ? r.u32() : 0, n = v2 ? r.u32() : dim;
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
      continue;
    }
    RowVector& xs = v2 ? s.finding.value.floats[p] : s.finding.input;
    xs.resize(n);
    r.floats(xs.data(), n);
    if (!all_finite(xs.data(), n))
      fail(fn, ": file '", path, "' part ", p, " holds a non-finite input value (NaN or infinity): not an input ",
           "the fuzzer makes");
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

}  // namespace nnfuzz
