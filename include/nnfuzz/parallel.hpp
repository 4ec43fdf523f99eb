// SPDX-License-Identifier: MIT
// nnfuzz: parallel workers — independent fuzz loops on several cores, merged results.
#pragma once

#include "fuzzer.hpp"

#include <algorithm>
#include <exception>
#include <thread>
#include <vector>

namespace nnfuzz {

/// Result of run_parallel(): each worker's own result, and the findings and counters merged.
struct ParallelFuzzResult {
  std::vector<FuzzResult> workers;  ///< per worker, in worker order
  std::vector<Finding> findings;    ///< all findings, ordered by (execution, worker)
  FuzzStats stats;                  ///< executions, iterations, corpus sizes, findings summed; seconds = wall
  /// True when any worker found something.
  bool found() const { return !findings.empty(); }
};

/// Runs `workers` independent copies of `prototype` on as many threads (seeds: a matrix for a
/// dense model, a std::vector<InputValue> for one with an InputLayout), AFL++-style secondaries
/// without synchronisation: each copy has its own model instance, batch buffers, corpus and
/// coverage, so workers never wait for each other (measured: Eigen's own threading inside one
/// product gains little at batch 64-100; separate loops scale ~2x on 2 cores).
///
/// The budgets (max_executions, max_iterations) are split between workers; max_findings and
/// max_seconds apply to each worker. Worker w runs with RNG seed `seed` for w = 0 (so one worker
/// is exactly Fuzzer::run()) and a splitmix64-derived seed otherwise: for a given seed and worker
/// count the result is reproducible bit for bit. The prototype is copied, not run: its policies
/// must be copyable (all of nnfuzz's are). An exception in a worker is rethrown after all join.
template <typename FuzzerT, typename Seeds>
ParallelFuzzResult run_parallel(const FuzzerT& prototype, const Seeds& seeds, int workers) {
  if (workers < 1) detail::fail("run_parallel(): 'workers' must be >= 1, got ", workers);
  const FuzzOptions base = prototype.options();
  const auto n = static_cast<std::uint64_t>(workers);
  std::vector<FuzzerT> fuzzers;
  fuzzers.reserve(static_cast<std::size_t>(workers));
  for (int w = 0; w < workers; ++w) {
    FuzzOptions o = base;
    const auto wu = static_cast<std::uint64_t>(w);
    // Split budgets; the first workers take the remainder.
    if (base.max_executions > 0) o.max_executions = base.max_executions / n + (wu < base.max_executions % n ? 1 : 0);
    if (base.max_iterations > 0) o.max_iterations = base.max_iterations / n + (wu < base.max_iterations % n ? 1 : 0);
    if (base.max_executions > 0 && o.max_executions == 0) o.max_executions = 1;
    if (base.max_iterations > 0 && o.max_iterations == 0) o.max_iterations = 1;
    if (w > 0) o.seed = detail::mix_seed(base.seed, wu);
    fuzzers.push_back(prototype);
    fuzzers.back().set_options(o);
  }
  ParallelFuzzResult result;
  result.workers.resize(static_cast<std::size_t>(workers));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(workers));
  const auto start = std::chrono::steady_clock::now();
  auto work = [&](std::size_t w) {
    try {
      result.workers[w] = fuzzers[w].run(seeds);
    } catch (...) {
      errors[w] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t w = 1; w < fuzzers.size(); ++w) threads.emplace_back(work, w);
  work(0);
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);

  std::vector<std::pair<std::size_t, std::size_t>> order;  // (worker, index)
  for (std::size_t w = 0; w < result.workers.size(); ++w) {
    const FuzzResult& r = result.workers[w];
    for (std::size_t i = 0; i < r.findings.size(); ++i) order.emplace_back(w, i);
    result.stats.executions += r.stats.executions;
    result.stats.iterations += r.stats.iterations;
    result.stats.corpus_size += r.stats.corpus_size;
    result.stats.findings += r.stats.findings;
  }
  std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    return result.workers[a.first].findings[a.second].execution < result.workers[b.first].findings[b.second].execution;
  });
  for (const auto& [w, i] : order) result.findings.push_back(result.workers[w].findings[i]);
  result.stats.seeds = FuzzerT::Space::count(seeds);
  result.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.stats.executions_per_second =
      result.stats.seconds > 0 ? static_cast<double>(result.stats.executions) / result.stats.seconds : 0;
  return result;
}

}  // namespace nnfuzz
