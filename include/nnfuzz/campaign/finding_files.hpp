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

}  // namespace nnfuzz
