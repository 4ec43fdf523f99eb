// SPDX-License-Identifier: MIT
// nnfuzz: ready-made callbacks for Fuzzer::run().
//
// A callback is any object passed after the seeds to run(); it may define any of
//     on_start(const FuzzStats&)                      before the first seed batch is checked
//     on_batch(const FuzzStats&)                      after every batch of mutants
//     on_new_coverage(const FuzzStats&, Index added)  after a batch that grew the corpus
//     on_finding(const Finding&, const FuzzStats&)    for every finding
//     on_corpus(const Corpus&, const FuzzStats&)      after the seeds, after each batch that grew
//                                                     the corpus, and at the end (checkpoints)
//     on_end(const FuzzStats&)                        once, at the end
// each returning void or bool; returning true stops the run (ensmallen's convention).
// Callbacks observe; work that changes the run (importing elements, minimising findings) is a
// stage (stages.hpp), passed in the same argument list.
#pragma once

#include "corpus.hpp"
#include "fuzz_types.hpp"

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include <signal.h>

namespace nnfuzz {

namespace detail {
// "95k", "1.2M": libFuzzer-style compact rates.
inline std::string compact_number(double v) {
  char buf[32];
  if (v >= 1e6)
    std::snprintf(buf, sizeof buf, "%.1fM", v / 1e6);
  else if (v >= 1e4)
    std::snprintf(buf, sizeof buf, "%.0fk", v / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}
}  // namespace detail

/// Prints one libFuzzer-style status line per event:
///     #12800  NEW    cov: 38 corp: 41 finds: 0 exec/s: 95k
/// (`cov`: vectors the coverage policy holds; `corp`: corpus elements, seeds included; they
/// differ when seeds are close to each other, and `cov` is 0 for random search), and a line
///     radius: 0.0213 (chosen by the coverage policy)
/// whenever the coverage policy's novelty radius changes (CalibratedCoverage chooses it after
/// the first batch), and a line
///     radius: 0.0213 (on resume)
/// when a resumed run starts with one (CalibratedCoverage's, taken up from the saved corpus)
/// on new coverage (at most one line per `min_interval` seconds, so a fast-growing corpus does
/// not flood the terminal), on every finding (FOUND, with what fired), every `pulse_seconds`
/// (pulse) and at the end (DONE). Output never changes the run itself.
///
/// With budget() each line also shows a progress bar and how much of the run's budget is spent
/// (the larger of the executions' and the seconds' share):
///     #12800  pulse  cov: 38 corp: 41 finds: 0 exec/s: 95k [######..............] 32%
class ProgressPrinter {
 public:
  /// Writes to `os`; pulse every `pulse_seconds`; NEW lines at most every `min_interval` s.
  explicit ProgressPrinter(std::ostream& os, double pulse_seconds = 2.0, double min_interval = 0.25)
      : os_(&os), pulse_(pulse_seconds), min_interval_(min_interval) {}

  /// Shows the progress bar against this budget: `executions` (0: none) and `seconds` (0: none),
  /// as in FuzzOptions::max_executions / max_seconds; executions count from
  /// FuzzStats::budget_start, as the budget does (a resumed run: from where the saved one stopped).
  /// Negative or non-finite seconds are refused.
  ProgressPrinter& budget(std::uint64_t executions, double seconds) {
    if (!(seconds >= 0) || !detail::is_finite(seconds))
      detail::fail("ProgressPrinter::budget(): option 'seconds' must be >= 0 and finite, got ", seconds);
    budget_executions_ = executions;
    budget_seconds_ = seconds;
    return *this;
  }

  /// Prints the INITED line (and, for a resumed run with a radius already, the radius line).
  void on_start(const FuzzStats& st) {
    last_radius_ = st.coverage_radius;
    if (st.budget_start > 0 && st.coverage_radius > 0) *os_ << "radius: " << st.coverage_radius << " (on resume)\n";
    line("INITED", st);
  }
  /// NEW line (rate-limited).
  void on_new_coverage(const FuzzStats& st, Index) {
    if (st.seconds - last_new_line_ >= min_interval_) {
      last_new_line_ = st.seconds;
      line("NEW", st);
    }
  }
  /// FOUND line with what fired and the lineage.
  void on_finding(const Finding& f, const FuzzStats& st) {
    line("FOUND", st);
    *os_ << "    " << f.what << " (seed " << f.root << ", depth " << f.depth << ", execution " << f.execution << ")\n";
  }
  /// pulse line every pulse_seconds.
  void on_batch(const FuzzStats& st) {
    if (st.coverage_radius != last_radius_) {
      last_radius_ = st.coverage_radius;
      *os_ << "radius: " << st.coverage_radius << " (chosen by the coverage policy)\n";
    }
    if (st.seconds - last_pulse_ >= pulse_) {
      last_pulse_ = st.seconds;
      line("pulse", st);
    }
  }
  /// DONE line.
  void on_end(const FuzzStats& st) { line("DONE", st); }

 private:
  void line(const char* what, const FuzzStats& st) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "#%llu\t%-6s cov: %lld corp: %lld finds: %lld exec/s: %s\n",
                  static_cast<unsigned long long>(st.executions), what, static_cast<long long>(st.coverage_size),
                  static_cast<long long>(st.corpus_size), static_cast<long long>(st.findings),
                  detail::compact_number(st.executions_per_second).c_str());
    std::string text = buf;
    if (budget_executions_ > 0 || budget_seconds_ > 0) {
      double done = 0;
      if (budget_executions_ > 0)
        done = static_cast<double>(st.executions - std::min(st.executions, st.budget_start)) /
               static_cast<double>(budget_executions_);
      if (budget_seconds_ > 0) done = std::max(done, st.seconds / budget_seconds_);
      done = std::min(1.0, std::max(0.0, done));
      constexpr int kWidth = 20;
      const int filled = static_cast<int>(done * kWidth);
      text.pop_back();  // the newline
      text += " [" + std::string(static_cast<std::size_t>(filled), '#') +
              std::string(static_cast<std::size_t>(kWidth - filled), '.') + "] ";
      text += std::to_string(static_cast<int>(done * 100)) + "%\n";
    }
    *os_ << text << std::flush;
  }
  std::ostream* os_;
  double pulse_, min_interval_;
  std::uint64_t budget_executions_ = 0;
  double budget_seconds_ = 0;
  double last_pulse_ = 0, last_new_line_ = -1e300;
  float last_radius_ = 0;
};

/// Writes `executions,corpus_size,findings` after every batch that grew the corpus or found
/// something (and at start and end): the data of a corpus-growth plot. Deterministic content.
class CsvLogger {
 public:
  /// Appends to `os`; writes the header line when `header` is true.
  explicit CsvLogger(std::ostream& os, bool header = true) : os_(&os), header_(header) {}
  /// Header and the seeds' row.
  void on_start(const FuzzStats&) {
    if (header_) *os_ << "executions,corpus_size,findings\n";
  }
  /// One row per batch whose corpus or findings changed.
  void on_batch(const FuzzStats& st) {
    if (st.corpus_size != last_corpus_ || st.findings != last_findings_) write(st);
  }
  /// Final row.
  void on_end(const FuzzStats& st) { write(st); }

 private:
  void write(const FuzzStats& st) {
    last_corpus_ = st.corpus_size;
    last_findings_ = st.findings;
    *os_ << st.executions << ',' << st.corpus_size << ',' << st.findings << '\n';
  }
  std::ostream* os_;
  bool header_;
  Index last_corpus_ = -1, last_findings_ = -1;
};

/// Stops the run when no new coverage has been seen for `executions` executions (a plateau).
class StopOnPlateau {
 public:
  /// `executions` > 0: patience, in executions.
  explicit StopOnPlateau(std::uint64_t executions) : patience_(executions) {
    if (executions == 0) detail::fail("StopOnPlateau(): option 'executions' must be > 0");
  }
  /// True (stop) once the plateau is long enough.
  bool on_batch(const FuzzStats& st) const { return st.executions - st.last_new_coverage_execution >= patience_; }

 private:
  std::uint64_t patience_;
};

namespace detail {
// The signal StopOnSignal received (0: none). Written only by the handler.
inline volatile std::sig_atomic_t stop_signal = 0;
extern "C" inline void stop_signal_handler(int sig) { stop_signal = sig; }
}  // namespace detail

/// A clean stop on Ctrl-C and on a job runner's SIGTERM (Kubernetes, Slurm and systemd send
/// SIGTERM, then SIGKILL after a grace period): while it exists, SIGINT and SIGTERM (or the
/// signals given) only set a flag; the run stops after the current batch, and the callbacks'
/// end-of-run events still happen — a CampaignSaver writes its final checkpoint. A second
/// signal of the same kind acts as if nnfuzz were not there (the default action: the process
/// ends), so a stuck run can still be interrupted. The previous handlers come back when it is
/// destroyed. One per process at a time; not copyable.
///
///     nnfuzz::StopOnSignal stop;                    // before run(), alive during it
///     nnfuzz::CampaignSaver saver("campaign", seed);
///     fuzzer.run(seeds, saver, stop, progress);     // Ctrl-C: final checkpoint, then return
///     if (stop.received()) ...                      // which signal stopped it (0: none)
class StopOnSignal {
 public:
  /// Installs the handler for `signals` (default SIGINT and SIGTERM).
  explicit StopOnSignal(std::vector<int> signals = {SIGINT, SIGTERM}) : signals_(std::move(signals)) {
    if (signals_.empty()) detail::fail("StopOnSignal(): no signals given");
    detail::stop_signal = 0;
    old_.resize(signals_.size());
    for (std::size_t i = 0; i < signals_.size(); ++i) {
      struct sigaction sa {};
      sa.sa_handler = &detail::stop_signal_handler;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESETHAND;  // the second signal gets the default action
      if (::sigaction(signals_[i], &sa, &old_[i]) != 0) {
        for (std::size_t j = 0; j < i; ++j) ::sigaction(signals_[j], &old_[j], nullptr);
        detail::fail("StopOnSignal(): cannot install a handler for signal ", signals_[i]);
      }
    }
  }
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;
  /// Restores the previous handlers.
  ~StopOnSignal() {
    for (std::size_t i = 0; i < signals_.size(); ++i) ::sigaction(signals_[i], &old_[i], nullptr);
  }
  /// Stops after the seeds when a signal came during them.
  bool on_start(const FuzzStats&) const { return received() != 0; }
  /// Stops after the batch during which a signal came.
  bool on_batch(const FuzzStats&) const { return received() != 0; }
  /// The signal received (0: none yet).
  int received() const { return static_cast<int>(detail::stop_signal); }

 private:
  std::vector<int> signals_;
  std::vector<struct sigaction> old_;
};

}  // namespace nnfuzz
