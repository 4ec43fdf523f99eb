// SPDX-License-Identifier: MIT
// nnfuzz: CampaignSaver, the callback that writes a run's findings and corpus checkpoints to a
// campaign directory (campaign/files.hpp).
#pragma once

#include "bugs.hpp"
#include "files.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace nnfuzz {

/// Callback that makes a run a persistent campaign in `dir`: every finding that is new by the
/// rule of BugOptions (a bug not seen yet, or one with fewer than `samples_per_bug` files and
/// whose input is far from them) is written (atomically, durably, synchronously) the moment it
/// is reported — pass it before any printer so that what is printed is already on disk — and
/// every finding is counted under its bug (DIR/bugs.bin, campaign/bugs.hpp). The corpus is
/// checkpointed after the seeds, then at most every `checkpoint_seconds` when it grew, and at the
/// end (also when the run is stopped by a callback, e.g. StopOnSignal on Ctrl-C or a job
/// runner's SIGTERM); bugs.bin at most every `checkpoint_seconds` and at the end.
///
/// The constructor creates `dir`, takes an exclusive lock on it (DIR/lock: a second saver on the
/// same directory, in this process or another, is refused with the holder's pid) and removes
/// temporary files that killed writers left behind; it takes up the bugs DIR holds (load_bugs()),
/// so counts and samples go on across restarts. Copies share the lock. Resume with
/// fuzzer.resume(load_corpus(dir), CampaignSaver(dir, seed)).
class CampaignSaver {
 public:
  /// `run_seed` is recorded in each finding; `checkpoint_seconds` (finite, >= 0) spaces corpus saves.
  /// `bugs`: which findings are saved as files (the others are counted).
  explicit CampaignSaver(std::string dir, std::uint64_t run_seed = 0, double checkpoint_seconds = 5.0,
                         BugOptions bugs = BugOptions())
      : dir_(std::move(dir)), seed_(run_seed), every_(checkpoint_seconds), bugs_(bugs) {
    if (!detail::is_finite(checkpoint_seconds) || !(checkpoint_seconds >= 0))
      detail::fail("CampaignSaver(): option 'checkpoint_seconds' must be finite and >= 0, got ", checkpoint_seconds);
    if (dir_.empty()) detail::fail("CampaignSaver(): option 'dir' is empty");
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) detail::fail("CampaignSaver(): cannot create directory '", dir_, "': ", ec.message());
    lock_ = detail::lock_campaign("CampaignSaver()", dir_);
    stale_removed_ = detail::remove_stale_temporaries(dir_) +
                     detail::remove_stale_temporaries((std::filesystem::path(dir_) / "findings").string());
    bugs_.open(dir_);
  }
  /// Counts the finding under its bug and, when it is new by the rule, saves it before anyone
  /// else hears of it.
  void on_finding(const Finding& f, const FuzzStats& st) {
    if (bugs_.count(f)) {
      paths_.push_back(save_finding(dir_, f, seed_));
      bugs_.saved(f, paths_.back());
    }
    if (st.seconds - last_bugs_ >= every_) {
      bugs_.save(dir_);
      last_bugs_ = st.seconds;
    }
  }
  /// Checkpoints the corpus (first call, then at most every checkpoint_seconds, then at the end),
  /// and bugs.bin with it.
  void on_corpus(const Corpus& c, const FuzzStats& st) {
    if (saves_ == 0 || st.seconds - last_ >= every_ || st.finished) {
      save_corpus(dir_, c);
      bugs_.save(dir_);
      last_ = last_bugs_ = st.seconds;
      ++saves_;
    }
  }
  /// The bugs of the directory (every session's) and their counts.
  const BugLog& bugs() const { return bugs_; }
  /// Paths of the findings written by this saver.
  const std::vector<std::string>& finding_paths() const { return paths_; }
  /// Corpus checkpoints written.
  int checkpoints() const { return saves_; }
  /// Temporary files of dead writers removed when the directory was opened.
  std::size_t stale_files_removed() const { return stale_removed_; }
  /// The campaign directory.
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::uint64_t seed_;
  double every_;
  double last_ = 0, last_bugs_ = 0;
  int saves_ = 0;
  BugLog bugs_;
  std::vector<std::string> paths_;
  std::shared_ptr<int> lock_;
  std::size_t stale_removed_ = 0;
};

}  // namespace nnfuzz
