// SPDX-License-Identifier: MIT
// Shared code of the examples that can run as one worker of a campaign shared through a sync
// directory (--sync DIR --worker ID; see docs/scaling.md and include/nnfuzz/campaign/sync.hpp).
#pragma once

#include <nnfuzz/callbacks.hpp>
#include <nnfuzz/campaign/sync.hpp>

#include <ostream>
#include <stdexcept>
#include <string>

#include "cli_common.hpp"

namespace ex {

/// The command-line flags of a sync worker.
struct SyncFlags {
  std::string dir, worker;
  double interval = 5.0;
  bool enabled() const { return !dir.empty(); }
};

/// Adds --sync, --worker and --sync-interval to `app`.
inline void add_sync_options(CLI::App* app, SyncFlags& f) {
  app->add_option("--sync", f.dir, "run as one worker of a campaign shared through this directory (docs/scaling.md)");
  app->add_option("--worker", f.worker, "this worker's id under --sync: [A-Za-z0-9._-], e.g. 0..N-1");
  app->add_option("--sync-interval", f.interval, "--sync: seconds between syncs")
      ->check(CLI::Range(0.01, 3600.0))
      ->capture_default_str();
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
  return o;
}

/// Resumes the worker from its own directory if it has a checkpoint, else starts from `seeds`;
/// SIGINT/SIGTERM (a job runner's stop) end the run after the batch, with a final checkpoint.
template <class Fuzzer, class Seeds, class... Callbacks>
nnfuzz::FuzzResult run_or_resume(Fuzzer& fuzzer, const Seeds& seeds, nnfuzz::SyncDirectory& sync,
                                 Callbacks&... callbacks) {
  nnfuzz::StopOnSignal stop;
  if (sync.resumable()) return fuzzer.resume(nnfuzz::load_corpus(sync.worker_dir()), sync, stop, callbacks...);
  return fuzzer.run(seeds, sync, stop, callbacks...);
}

/// One line saying what the worker did (the smoke test and scripts/bench_sync.sh read it).
inline void print_worker_summary(std::ostream& os, const nnfuzz::SyncDirectory& sync, const nnfuzz::FuzzResult& r) {
  const nnfuzz::SyncCounters& c = sync.counters();
  os << "worker " << sync.worker_id() << ": " << r.stats.executions << " executions in " << r.stats.seconds
     << " s; corpus " << r.stats.corpus_size << " (imported " << r.stats.imported << ", exported " << c.exported
     << "); findings " << r.findings.size() << " (" << c.findings << " written, " << c.duplicate_findings
     << " already in the campaign); sync " << c.seconds << " s in " << c.syncs << " syncs\n";
}

}  // namespace ex
