// SPDX-License-Identifier: MIT
// nnfuzz: bugs, not files. A campaign that collects every finding (max_findings = 0) near one
// NaN reports the same bug hundreds of thousands of times; a campaign directory keeps a bounded
// sample of files per bug and counts the rest (docs/campaigns.md, "Bugs").
//
//   DIR/bugs.bin   the bugs of the campaign directory: "NNFZBUGS", u32 version 1, u64 bugs, per
//                  bug u32 length + signature, u32 length + `what` of its first finding, u64 count
//                  (findings reported with that signature, saved as a file or not), u32 files,
//                  per file u32 length + its name in DIR/findings/; crc32. Written atomically and
//                  durably (campaign/files.hpp) at the writer's checkpoints and at the end.
//
// A finding file is still written the moment its finding is reported (before any printer hears
// of it): what a kill can lose is the count of repeats since the last bugs.bin, never a bug.
#pragma once

#include "files.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace nnfuzz {

/// Which bug a finding is: its signature, a short text built from what fired. The rule, in order:
///  1. `what` names a class pair ("reference says A, candidate says B": DisagreementObjective,
///     OutputDistanceObjective): the pair, from "reference says" to the end (the distance that
///     precedes it varies from finding to finding and is left out);
///  2. `fired` (the tensor, the word) is non-empty and `what` quotes it ('NAME'): `what` up to
///     that quote's end ("non-finite in 'cross_entropy'", "word 'the'", "blacklisted word 'x'");
///  3. `fired` is non-empty: `fired`;
///  4. otherwise `what`.
/// A finding loaded from a file has no `fired` (finding files store `what` only): rules 1 and 4
/// give the same signature for NonFiniteObjective's and the differential objectives' findings;
/// bugs.bin records the signature of every file it names, so nothing depends on rule 2 later.
inline std::string bug_signature(const Finding& f) {
  const auto pair = f.what.find("reference says ");
  if (pair != std::string::npos) return f.what.substr(pair);
  if (!f.fired.empty()) {
    const auto at = f.what.find("'" + f.fired + "'");
    return at != std::string::npos ? f.what.substr(0, at + f.fired.size() + 2) : f.fired;
  }
  return f.what;
}

/// Options of the finding files a campaign directory keeps (CampaignSaver, SyncOptions::bugs).
struct BugOptions {
  /// Finding files kept per bug (signature): its first `samples_per_bug` findings that are new by
  /// the rule below are saved, every other finding of the bug is only counted (bugs.bin,
  /// stats.json). 0: no limit (every finding with a new input is saved, as before bugs existed).
  std::size_t samples_per_bug = 10;
  /// A finding of a known bug is saved only when its input is farther than this from every
  /// saved sample of that bug: the largest absolute difference over the float cells (L-inf);
  /// inputs whose token parts differ are always far. 0: any input not saved yet. Finite, >= 0.
  double min_distance = 0;
};

/// One bug of a campaign directory: its signature, how often it was found, its sample files.
struct Bug {
  std::string signature;           ///< bug_signature() of its findings
  std::string what;                ///< Finding::what of its first finding (for people)
  std::uint64_t count = 0;         ///< findings reported with this signature (saved as files or not)
  std::vector<std::string> files;  ///< its sample files, by name in DIR/findings/, in the order saved
};

namespace detail {
constexpr char kBugsMagic[8] = {'N', 'N', 'F', 'Z', 'B', 'U', 'G', 'S'};
constexpr std::uint64_t kMaxBugsBytes = std::uint64_t{1} << 30;

inline void put_string(std::vector<std::uint8_t>& out, const std::string& s) {
  put_u32(out, static_cast<std::uint32_t>(s.size()));
  out.insert(out.end(), s.begin(), s.end());
}
inline std::string get_string(Reader& r) {
  const std::uint32_t n = r.u32();
  r.need(n);
  std::string s(reinterpret_cast<const char*>(&r.b[r.pos]), n);
  r.pos += n;
  return s;
}
// The L-inf distance of two inputs' float cells; infinity when their token parts or shapes differ.
inline double input_distance(const Finding& a, const Finding& b) {
  constexpr double far = std::numeric_limits<double>::infinity();
  const std::vector<FindingPart> pa = input_parts(a), pb = input_parts(b);
  if (pa.size() != pb.size()) return far;
  double d = 0;
  for (std::size_t p = 0; p < pa.size(); ++p) {
    const FindingPart &x = pa[p], &y = pb[p];
    if (x.kind != y.kind || x.size != y.size) return far;
    if (x.ids && !std::equal(x.ids, x.ids + x.size, y.ids)) return far;
    for (std::size_t i = 0; x.floats && i < x.size; ++i)
      d = std::max(d, std::abs(static_cast<double>(x.floats[i]) - y.floats[i]));
  }
  return d;
}
}  // namespace detail

/// Writes DIR/bugs.bin atomically and durably (see the top of campaign/bugs.hpp).
inline void save_bugs(const std::string& dir, const std::vector<Bug>& bugs) {
  std::vector<std::uint8_t> out(detail::kBugsMagic, detail::kBugsMagic + 8);
  detail::put_u32(out, 1);
  detail::put_u64(out, bugs.size());
  for (const Bug& b : bugs) {
    detail::put_string(out, b.signature);
    detail::put_string(out, b.what);
    detail::put_u64(out, b.count);
    detail::put_u32(out, static_cast<std::uint32_t>(b.files.size()));
    for (const std::string& f : b.files) detail::put_string(out, f);
  }
  if (out.size() + 4 > detail::kMaxBugsBytes)
    detail::fail("save_bugs(): bugs of '", dir, "' would take ", out.size() + 4, " bytes (at most ",
                 detail::kMaxBugsBytes, ")");
  detail::seal(out);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) detail::fail("save_bugs(): cannot create directory '", dir, "': ", ec.message());
  detail::write_file_atomic("save_bugs()", (std::filesystem::path(dir) / "bugs.bin").string(), out);
}

/// The bugs of campaign directory DIR: DIR/bugs.bin (if any), plus every finding file in
/// DIR/findings/ it does not name (written after its last save: a kill), each counted once under
/// its bug_signature(). So every finding on disk is counted, with or without bugs.bin. Bugs are in
/// the order first found. A malformed bugs.bin or finding file throws, naming it.
inline std::vector<Bug> load_bugs(const std::string& dir) {
  namespace fs = std::filesystem;
  const char* fn = "load_bugs()";
  std::vector<Bug> bugs;
  const std::string path = (fs::path(dir) / "bugs.bin").string();
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() != fs::file_type::not_found) {
    const auto bytes = detail::read_sealed(fn, path, detail::kBugsMagic, detail::kMaxBugsBytes);
    detail::Reader r{fn, path, bytes};
    r.pos = 8;
    if (const std::uint32_t v = r.u32(); v != 1) detail::fail(fn, ": file '", path, "' has format version ", v);
    const std::uint64_t n = r.u64();
    if (n > bytes.size() / 20) detail::fail(fn, ": file '", path, "' claims ", n, " bugs in ", bytes.size(), " bytes");
    bugs.resize(static_cast<std::size_t>(n));
    for (Bug& b : bugs) {
      b.signature = detail::get_string(r);
      b.what = detail::get_string(r);
      b.count = r.u64();
      const std::uint32_t files = r.u32();
      if (files > b.count || files > bytes.size() / 4)
        detail::fail(fn, ": file '", path, "' bug '", b.signature, "' has ", files, " files for ", b.count,
                     " findings");
      b.files.resize(files);
      for (std::string& f : b.files) f = detail::get_string(r);
    }
    if (r.pos + 4 != bytes.size()) detail::fail(fn, ": file '", path, "' has trailing bytes");
  }
  std::unordered_map<std::string, std::size_t> index, named;
  for (std::size_t i = 0; i < bugs.size(); ++i) {
    index.emplace(bugs[i].signature, i);
    for (const std::string& f : bugs[i].files) named.emplace(f, i);
  }
  for (const SavedFinding& s : load_findings(dir)) {
    const std::string name = fs::path(s.path).filename().string();
    if (named.count(name)) continue;
    const std::string sig = bug_signature(s.finding);
    auto it = index.find(sig);
    if (it == index.end()) {
      it = index.emplace(sig, bugs.size()).first;
      bugs.push_back({sig, s.finding.what, 0, {}});
    }
    ++bugs[it->second].count;
    bugs[it->second].files.push_back(name);
  }
  return bugs;
}

/// The bug counts of one campaign directory, and the rule that decides which findings are saved
/// as files (BugOptions). CampaignSaver and SyncDirectory own one; a test or a tool may too.
class BugLog {
 public:
  /// An empty log with these options (checked: min_distance finite and >= 0).
  explicit BugLog(BugOptions options = BugOptions()) : o_(options) {
    if (!detail::is_finite(o_.min_distance) || !(o_.min_distance >= 0))
      detail::fail("BugLog(): option 'min_distance' must be finite and >= 0, got ", o_.min_distance);
  }
  /// Takes up the bugs of DIR (load_bugs()) and their sample files' inputs, to count on.
  void open(const std::string& dir) {
    bugs_ = load_bugs(dir);
    index_.clear();
    samples_.assign(bugs_.size(), {});
    for (std::size_t i = 0; i < bugs_.size(); ++i) {
      index_.emplace(bugs_[i].signature, i);
      for (const std::string& f : bugs_[i].files) {
        std::error_code ec;
        const std::string p = (std::filesystem::path(dir) / "findings" / f).string();
        if (o_.min_distance > 0 && std::filesystem::exists(p, ec)) samples_[i].push_back(load_finding(p).finding);
      }
    }
    dirty_ = false;
  }
  /// Counts `f` under its signature; true when it is new by the rule (BugOptions) and `may_save`:
  /// the caller then saves it and calls saved() with the file's path.
  bool count(const Finding& f, bool may_save = true) {
    std::string sig = bug_signature(f);
    auto it = index_.find(sig);
    if (it == index_.end()) {
      it = index_.emplace(sig, bugs_.size()).first;
      bugs_.push_back({std::move(sig), f.what, 0, {}});
      samples_.emplace_back();
    }
    last_ = it->second;
    Bug& b = bugs_[last_];
    ++b.count;
    ++total_;
    dirty_ = true;
    if (!may_save || (o_.samples_per_bug > 0 && b.files.size() >= o_.samples_per_bug)) return false;
    if (o_.min_distance > 0)
      for (const Finding& s : samples_[last_])
        if (detail::input_distance(f, s) <= o_.min_distance) return false;
    return true;
  }
  /// Records that the finding count() last accepted was saved at `path` (DIR/findings/<name>).
  void saved(const Finding& f, const std::string& path) {
    bugs_[last_].files.push_back(std::filesystem::path(path).filename().string());
    if (o_.min_distance > 0) samples_[last_].push_back(f);
  }
  /// Writes DIR/bugs.bin if anything was counted since the last save.
  void save(const std::string& dir) {
    if (!dirty_) return;
    save_bugs(dir, bugs_);
    dirty_ = false;
  }
  /// The bugs, in the order first found.
  const std::vector<Bug>& bugs() const { return bugs_; }
  /// Findings counted since open() (this session).
  std::uint64_t counted() const { return total_; }
  /// Findings of all bugs (every session: what open() read, plus this session's).
  std::uint64_t findings() const {
    std::uint64_t n = 0;
    for (const Bug& b : bugs_) n += b.count;
    return n;
  }
  /// Finding files of all bugs.
  std::uint64_t files() const {
    std::uint64_t n = 0;
    for (const Bug& b : bugs_) n += b.files.size();
    return n;
  }
  /// The options.
  const BugOptions& options() const { return o_; }

 private:
  BugOptions o_;
  std::vector<Bug> bugs_;
  std::vector<std::vector<Finding>> samples_;  // the saved inputs per bug (only with min_distance > 0)
  std::unordered_map<std::string, std::size_t> index_;
  std::size_t last_ = 0;
  std::uint64_t total_ = 0;
  bool dirty_ = false;
};

namespace detail {
// A JSON string literal (quotes, backslashes and control characters escaped).
inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}
// The bugs as a JSON array of at most `limit` entries, the most found first (stats.json).
inline std::string bugs_json(const std::vector<Bug>& bugs, std::size_t limit, const std::string& indent) {
  std::vector<const Bug*> order;
  for (const Bug& b : bugs) order.push_back(&b);
  std::stable_sort(order.begin(), order.end(), [](const Bug* a, const Bug* b) { return a->count > b->count; });
  if (order.size() > limit) order.resize(limit);
  std::string j = "[";
  for (std::size_t i = 0; i < order.size(); ++i) {
    j += (i ? ",\n" : "\n") + indent + "  {\"signature\": " + json_string(order[i]->signature);
    j += ", \"count\": " + std::to_string(order[i]->count) + ", \"files\": " + std::to_string(order[i]->files.size()) +
         "}";
  }
  return j + (order.empty() ? "]" : "\n" + indent + "]");
}
}  // namespace detail

}  // namespace nnfuzz
