// SPDX-License-Identifier: MIT
// nnfuzz: merge_campaigns() — what N workers found, as one campaign directory (libFuzzer's
// -merge=1, AFL's afl-cmin). See docs/scaling.md, "Merging a campaign".
#pragma once

#include "../coverage/kd_tree.hpp"
#include "bugs.hpp"
#include "sync.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace nnfuzz {

/// Options of merge_campaigns() (plain fields with defaults).
struct MergeOptions {
  /// The L2 novelty radius of the coverage the corpora are reduced with (KdTreeCoverage); use the
  /// campaign's. Required (positive and finite) unless a coverage policy is passed.
  float radius = 0;
  /// Finding files the merged directory keeps per bug (BugOptions: the first `samples_per_bug`
  /// distinct inputs of each bug, in the merge order, farther than `min_distance` apart); every
  /// finding of the sources is still counted under its bug in the merged bugs.bin.
  BugOptions bugs;
  /// Also read each worker's queue files (SYNC/<id>/queue/*.bin): the elements a worker found after
  /// its last checkpoint (a kill) are there, not in its corpus.bin.
  bool read_queues = true;
};

/// What merge_campaigns() did.
struct MergeSummary {
  std::vector<std::string> campaigns;     ///< the campaign directories read, in merge order
  std::uint64_t executions = 0;           ///< their executions, summed (the merged corpus' executions())
  std::size_t elements_read = 0;          ///< corpus elements read (corpus.bin files and queue files)
  std::size_t elements_kept = 0;          ///< elements of the merged corpus: those that added coverage
  std::size_t finding_files_read = 0;     ///< finding files read
  std::size_t duplicate_inputs = 0;       ///< of which an earlier file had the same input (not written)
  std::size_t finding_files_written = 0;  ///< finding files of the merged directory
  std::uint64_t findings_reported = 0;    ///< findings counted under all bugs (saved as files or not)
  std::vector<Bug> bugs;                  ///< the merged bugs (as in the merged bugs.bin), the most found first
};

namespace detail {
// The campaign directories a merge input names: itself (it holds corpus.bin), or the worker
// directories of a sync directory, sorted.
inline std::vector<std::string> merge_sources(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(fs::path(dir) / "corpus.bin", ec)) return {dir};
  if (!fs::is_directory(dir, ec)) fail("merge_campaigns(): input '", dir, "' is not a directory");
  std::vector<std::string> out;
  for (const std::string& w : sync_workers(dir))
    if (fs::exists(fs::path(dir) / w / "corpus.bin", ec)) out.push_back((fs::path(dir) / w).string());
  if (out.empty())
    fail("merge_campaigns(): input '", dir,
         "' is neither a campaign directory (corpus.bin) nor a sync directory with a worker's corpus.bin");
  return out;
}
// The queue files of a worker directory, in sequence order.
inline std::vector<std::string> queue_files(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(fs::path(dir) / "queue", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() == 16 && name.compare(12, 4, ".bin") == 0 &&
        std::all_of(name.begin(), name.begin() + 12, [](char c) { return c >= '0' && c <= '9'; }))
      names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}
}  // namespace detail

/// Merges campaign directories into one: `inputs` are campaign directories (CampaignSaver's, or a
/// worker's SYNC/<id>) or sync directories (each of their workers is read, in sorted order);
/// `out` is created and must not hold a campaign yet. In one deterministic order — the inputs as
/// given, then per campaign corpus.bin's elements, then its queue files' (read_queues) — every
/// element's saved coverage vector goes through `coverage` (reset first) and only those it calls
/// new are kept, each as a root (parent -1) with the execution it was found at; the merged
/// corpus' executions() is the sum of the campaigns'. Findings: every finding file is read, one
/// file per input kept (finding_signature()), grouped by bug (each campaign's bugs.bin says which
/// bug its files are; files it does not name get bug_signature()), at most
/// options.bugs.samples_per_bug files per bug; each bug's count is the sum of the campaigns'
/// counts, so the findings that were only counted are not lost. Writes out/corpus.bin,
/// out/findings/ and out/bugs.bin; `Fuzzer::resume(load_corpus(out), CampaignSaver(out, seed))`
/// goes on from it, its coverage policy started afresh (the merged corpus keeps no campaign's
/// Corpus::coverage_state()). Every campaign must come from the same model (shapes are checked). Throws
/// std::invalid_argument naming the directory or the file.
template <typename Coverage>
MergeSummary merge_campaigns(const std::vector<std::string>& inputs, const std::string& out,
                             const MergeOptions& options, Coverage coverage) {
  namespace fs = std::filesystem;
  const char* fn = "merge_campaigns()";
  if (inputs.empty()) detail::fail(fn, ": no input directory");
  if (out.empty()) detail::fail(fn, ": the output directory is empty");
  BugLog check(options.bugs);  // validates options.bugs
  (void)check;
  MergeSummary s;
  for (const std::string& in : inputs)
    for (std::string& d : detail::merge_sources(in)) s.campaigns.push_back(std::move(d));
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_empty(out, ec))
    detail::fail(fn, ": output directory '", out, "' is not empty; merge into a new directory");

  // The corpora, reduced through the coverage policy in merge order.
  Corpus merged;
  Mask fresh;
  RowMatrix block;
  bool shaped = false;
  auto reduce = [&](const Corpus& c, const std::string& path) {
    if (!shaped) {
      shaped = true;
      merged.reset_like(c);
      coverage.reset(c.coverage_dim());
    } else if (!merged.same_shape(c)) {
      detail::fail(fn, ": '", path, "' holds inputs of ", detail::shape_of(c), ", the campaigns before it ",
                   detail::shape_of(merged), ": every campaign merged must come from the same model");
    }
    s.elements_read += static_cast<std::size_t>(c.size());
    constexpr Index kBlock = 1024;
    for (Index first = 0; first < c.size(); first += kBlock) {
      const Index n = std::min(kBlock, c.size() - first);
      block.resize(n, c.coverage_dim());
      for (Index i = 0; i < n; ++i) block.row(i) = c.coverage(first + i);
      coverage.observe(block, fresh);
      for (Index i = 0; i < n; ++i)
        if (fresh(i)) merged.add_from(c, first + i, -1, merged.size(), 0, c.entry(first + i).execution);
    }
  };
  for (const std::string& dir : s.campaigns) {
    const Corpus c = load_corpus(dir);
    s.executions += c.executions();
    reduce(c, (fs::path(dir) / "corpus.bin").string());
    if (options.read_queues)
      for (const std::string& q : detail::queue_files(dir))
        reduce(load_corpus((fs::path(dir) / "queue").string(), q), (fs::path(dir) / "queue" / q).string());
  }
  s.elements_kept = static_cast<std::size_t>(merged.size());
  if (merged.size() == 0)
    detail::fail(fn, ": no element of the campaigns has a finite coverage vector: nothing to merge into '", out, "'");
  merged.set_executions(s.executions);
  // No coverage state (Corpus::coverage_state(); reset_like() cleared it): each campaign's state
  // describes its own corpus (CalibratedCoverage's radius grows with a worker's acceptance rate),
  // not the merged one, so a resumed merge starts its coverage policy afresh (recalibrates).

  // The findings: one file per input, grouped by bug, counts summed.
  struct Merged {
    Bug bug;
    std::vector<Finding> samples;  // for min_distance
  };
  std::vector<Merged> bugs;
  std::unordered_map<std::string, std::size_t> index;
  auto bug_of = [&](const std::string& sig, const std::string& what) -> Merged& {
    auto it = index.find(sig);
    if (it == index.end()) {
      it = index.emplace(sig, bugs.size()).first;
      bugs.push_back({{sig, what, 0, {}}, {}});
    }
    return bugs[it->second];
  };
  struct Pending {
    SavedFinding saved;
    std::size_t bug;
  };
  std::vector<Pending> pending;
  std::unordered_set<std::uint64_t> inputs_seen;
  for (const std::string& dir : s.campaigns) {
    std::unordered_map<std::string, std::string> sig_of;  // file name -> signature (its bugs.bin)
    for (const Bug& b : load_bugs(dir)) {
      bug_of(b.signature, b.what).bug.count += b.count;
      for (const std::string& f : b.files) sig_of.emplace(f, b.signature);
    }
    for (SavedFinding& f : load_findings(dir)) {
      ++s.finding_files_read;
      if (!inputs_seen.insert(finding_signature(f.finding)).second) {
        ++s.duplicate_inputs;
        continue;
      }
      const auto named = sig_of.find(fs::path(f.path).filename().string());
      const std::string sig = named != sig_of.end() ? named->second : bug_signature(f.finding);
      bug_of(sig, f.finding.what);
      pending.push_back({std::move(f), index.at(sig)});
    }
  }
  std::error_code mk;
  fs::create_directories(out, mk);
  if (mk) detail::fail(fn, ": cannot create directory '", out, "': ", mk.message());
  const auto lock = detail::lock_campaign(fn, out);
  for (Pending& p : pending) {
    Merged& m = bugs[p.bug];
    if (options.bugs.samples_per_bug > 0 && m.bug.files.size() >= options.bugs.samples_per_bug) continue;
    if (options.bugs.min_distance > 0 && std::any_of(m.samples.begin(), m.samples.end(), [&](const Finding& o) {
          return detail::input_distance(p.saved.finding, o) <= options.bugs.min_distance;
        }))
      continue;
    const std::string path = save_finding(out, p.saved.finding, p.saved.run_seed);
    m.bug.files.push_back(fs::path(path).filename().string());
    if (options.bugs.min_distance > 0) m.samples.push_back(p.saved.finding);
    ++s.finding_files_written;
  }
  save_corpus(out, merged);
  for (Merged& m : bugs) {
    s.findings_reported += m.bug.count;
    s.bugs.push_back(std::move(m.bug));
  }
  save_bugs(out, s.bugs);
  std::stable_sort(s.bugs.begin(), s.bugs.end(), [](const Bug& a, const Bug& b) { return a.count > b.count; });
  return s;
}

/// merge_campaigns() with KdTreeCoverage(options.radius): the L2 novelty of the campaign's
/// coverage vectors (set `radius` to the campaign's).
inline MergeSummary merge_campaigns(const std::vector<std::string>& inputs, const std::string& out,
                                    const MergeOptions& options) {
  if (!(options.radius > 0) || !detail::is_finite(options.radius))
    detail::fail(
        "merge_campaigns(): option 'radius' (the campaign's L2 novelty radius) must be positive and finite, "
        "got ",
        options.radius);
  return merge_campaigns(inputs, out, options, KdTreeCoverage(options.radius));
}

}  // namespace nnfuzz
