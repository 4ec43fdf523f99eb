// SPDX-License-Identifier: MIT
// Shared code of the examples that can run as one worker of a campaign shared through a sync
// directory (--sync DIR --worker ID; see docs/scaling.md and include/nnfuzz/campaign/sync.hpp).
#pragma once

#include <nnfuzz/callbacks.hpp>
#include <nnfuzz/campaign/sync.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <ostream>
#include <stdexcept>
#include <string>

#include "cli_common.hpp"
#include "shared/flags.hpp"

namespace ex {

/// The command-line flags of a sync worker.
struct SyncFlags {
  std::string dir, worker;
  double interval = 5.0;
  std::size_t samples_per_bug = nnfuzz::BugOptions().samples_per_bug;
  bool enabled() const { return !dir.empty(); }
};

/// Adds --sync, --worker, --sync-interval and --samples-per-bug to `app`.
inline void add_sync_options(CLI::App* app, SyncFlags& f) {
  app->add_option("--sync", f.dir, "run as one worker of a campaign shared through this directory (docs/scaling.md)");
  app->add_option("--worker", f.worker, "this worker's id under --sync: [A-Za-z0-9._-], e.g. 0..N-1");
  app->add_option("--sync-interval", f.interval, "--sync: seconds between syncs")
      ->check(CLI::Range(0.01, 3600.0))
      ->capture_default_str();
  nnfuzz_flags::samples_per_bug(*app, f.samples_per_bug, "--sync: in this worker's directory");
}

/// Throws std::invalid_argument for --sync without a valid --worker, or --worker without --sync.
inline void check_sync_flags(const SyncFlags& f) {
  if (f.enabled() && !nnfuzz::is_worker_id(f.worker))
    throw std::invalid_argument("--sync needs --worker ID (1..64 characters of [A-Za-z0-9._-]), got '" + f.worker +
                                "'");
  if (!f.enabled() && !f.worker.empty()) throw std::invalid_argument("--worker needs --sync DIR");
}

/// The worker's SyncOptions: sync every --sync-interval seconds, findings recorded with `run_seed`.
inline nnfuzz::SyncOptions sync_options(const SyncFlags& f, std::uint64_t run_seed) {
  nnfuzz::SyncOptions o;
  o.interval_seconds = f.interval;
  o.run_seed = run_seed;
  o.bugs.samples_per_bug = f.samples_per_bug;
  return o;
}

/// Resumes the worker from its own directory if it has a checkpoint, else starts from `seeds`;
/// SIGINT/SIGTERM (a job runner's stop) end the run after the batch, with a final checkpoint.
/// The fuzzer's max_executions and max_findings are the worker's totals over all its starts (a
/// job runner that requeues a task gives it what is left, not a new budget): a resumed worker
/// runs for what its checkpoint has not done yet, and says so in one line on stdout.
template <class Fuzzer, class Seeds, class... Callbacks>
nnfuzz::FuzzResult run_or_resume(Fuzzer& fuzzer, const Seeds& seeds, nnfuzz::SyncDirectory& sync,
                                 Callbacks&... callbacks) {
  std::ostream& log = std::cout;
  nnfuzz::StopOnSignal stop;
  if (!sync.resumable()) return fuzzer.run(seeds, sync, stop, callbacks...);
  const nnfuzz::Corpus corpus = nnfuzz::load_corpus(sync.worker_dir());
  std::uint64_t done = corpus.executions();  // as Fuzzer::resume() numbers on
  for (const nnfuzz::CorpusEntry& e : corpus.entries()) done = std::max(done, e.execution);
  // The findings it reported (saved as files or counted under their bug: bugs.bin), and its files.
  const auto reported = static_cast<nnfuzz::Index>(sync.bugs().findings());
  const auto files = static_cast<nnfuzz::Index>(sync.bugs().files());
  nnfuzz::FuzzOptions o = fuzzer.options();
  const bool spent =
      (o.max_executions > 0 && done >= o.max_executions) || (o.max_findings > 0 && reported >= o.max_findings);
  log << "worker " << sync.worker_id() << ": resumed from " << sync.worker_dir() << "/corpus.bin: " << corpus.size()
      << " elements, " << done << " executions, " << files << " findings on disk, " << reported << " reported; ";
  if (o.max_executions > 0) o.max_executions -= std::min(done, o.max_executions);
  if (o.max_findings > 0) o.max_findings -= std::min(reported, o.max_findings);
  if (spent) {
    log << "its budget is spent, nothing to do\n" << std::flush;
    nnfuzz::FuzzResult r;
    r.stats.executions = done;
    r.stats.corpus_size = corpus.size();
    return r;
  }
  log << "left: " << o.max_executions << " executions, " << o.max_findings << " findings (0: no limit)\n" << std::flush;
  fuzzer.set_options(o);
  return fuzzer.resume(corpus, sync, stop, callbacks...);
}

/// One line saying what the worker did (the smoke test and scripts/bench_sync.sh read it).
inline void print_worker_summary(std::ostream& os, const nnfuzz::SyncDirectory& sync, const nnfuzz::FuzzResult& r) {
  const nnfuzz::SyncCounters& c = sync.counters();
  os << "worker " << sync.worker_id() << ": " << r.stats.executions << " executions in " << r.stats.seconds
     << " s; corpus " << r.stats.corpus_size << " (imported " << r.stats.imported << ", exported " << c.exported
     << "); findings " << r.findings.size() << " (" << c.findings << " written, " << c.duplicate_findings
     << " already in the campaign, " << c.repeat_findings << " repeats of known bugs; " << sync.bugs().bugs().size()
     << " bug(s)); sync " << c.seconds << " s in " << c.syncs << " syncs\n";
}

}  // namespace ex
