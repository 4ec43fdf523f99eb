// SPDX-License-Identifier: MIT
// nnfuzz: the fuzz loop's state and bookkeeping (internal; included by fuzzer.hpp only): the
// policies, buffers and corpus; the fitness frontier; the findings' record and re-check; the
// budgets and stats; the run guard; elements admitted by stages. Fuzzer (fuzzer.hpp) derives
// from it privately and keeps the public API, the loop itself and the stages.
#pragma once

#include "hooks.hpp"
#include "input_space.hpp"
#include "policy_checks.hpp"
#include "../config.hpp"
#include "../traits.hpp"
#include "../../corpus.hpp"
#include "../../feedback.hpp"
#include "../../fuzz_types.hpp"
#include "../../rng.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace nnfuzz {
namespace detail {

/// Fuzzer's base: what the loop keeps between and within batches, and the steps it is made of.
/// The policy checks come first, so that a policy's missing member is reported by its message
/// before anything here needs it.
template <typename Model, typename Sampler, typename Mutator, typename Coverage, typename Objective>
struct LoopState {
  static_assert(PolicyChecks<Model, Sampler, Mutator, Coverage, Objective>::ok, "nnfuzz: policy checks");
  using Output = typename Model::Output;
  using Space = InputSpace<Model>;
  using Clock = std::chrono::steady_clock;
  static constexpr bool kHasFitness = has_fitness<Objective, Output>::value;

  LoopState(Model model, Sampler sampler, Mutator mutator, Coverage coverage, Objective objective)
      : model_(std::move(model)),
        sampler_(std::move(sampler)),
        mutator_(std::move(mutator)),
        coverage_(std::move(coverage)),
        objective_(std::move(objective)) {}

  bool keeps_fitter() const {
    return kHasFitness && options_.keep_fitter.value_or(!detail::is_random_search<Coverage>::value);
  }

  // True when every row's fitness is read: keep_fitter compares each row with the best, and a
  // sampler's or mutator's feedback() gets the batch's. Otherwise only the rows that join the
  // corpus need it (their element records it), and only theirs is computed: a fitness costs a
  // pass over every reported tensor, which on TensorFuzz's NaN model was 19% of the loop.
  bool every_row_fitness() const {
    return keeps_fitter() || detail::has_sampler_feedback<Sampler>::value ||
           detail::has_mutator_feedback<Mutator>::value;
  }
  // The objective's fitness of the batch's first n rows, into fitness_ (when every row's is read).
  void compute_fitness(Index n) {
    if constexpr (kHasFitness) {
      if (fitness_.size() < n) fitness_.resize(n);  // sized to batch_size at the start: no allocation per batch
      if (!every_row_fitness()) return;
      for (Index r = 0; r < n; ++r) fitness_(r) = objective_.fitness(out_, r);
    } else {
      (void)n;
    }
  }
  // Records row r's fitness on corpus element `id` and in the run's best (computed here when
  // compute_fitness() skipped it; out_ still holds row r's outputs).
  void note_fitness(Index id, Index r) {
    if constexpr (kHasFitness) {
      const float f = every_row_fitness() ? fitness_(r) : objective_.fitness(out_, r);
      corpus_.set_fitness(id, f);
      if (f > best_fitness_ || (detail::is_nan(best_fitness_) && !detail::is_nan(f))) best_fitness_ = f;
    } else {
      (void)id, (void)r;
    }
  }
  // True when row r beats the best fitness so far (FuzzOptions::keep_fitter).
  bool fitter(Index r) const {
    if constexpr (kHasFitness)
      return keeps_fitter() && fitness_(r) > best_fitness_;
    else
      return (void)r, false;
  }

  void start_session() {
    if constexpr (detail::has_prepare<Mutator>::value) {
      RunSetup setup;
      setup.input_dim = Space::cells(model_);
      setup.input_shape = detail::input_shape_of(model_);
      setup.fitness = kHasFitness;
      mutator_.prepare(setup);
    }
    rng_.seed(options_.seed);
    best_fitness_ = std::numeric_limits<float>::quiet_NaN();
    start_ = Clock::now();
    last_new_ = start_;
    const Index b = options_.batch_size;
    const Index d = Space::cells(model_);
    if (d < 1) detail::fail("Fuzzer::run(): the model's input_dim() is ", d, " (must be >= 1)");
    if (b > std::numeric_limits<Index>::max() / 4 / d)
      detail::fail("Fuzzer::run(): option 'batch_size' = ", b, " times input_dim() = ", d,
                   " overflows the batch buffer's size");
    try {
      batch_.reserve(model_, b);
      hits_.resize(b);
      if constexpr (kHasFitness) fitness_.resize(b);
      hit_rows_.reserve(static_cast<std::size_t>(b));
      is_new_.resize(b);
    } catch (const std::bad_alloc&) {
      detail::fail("Fuzzer::run(): option 'batch_size' = ", b, " needs a ", b, " x ", d, " float batch buffer (",
                   static_cast<double>(b) * static_cast<double>(d) * 4.0 / (1 << 20), " MiB): cannot allocate it");
    }
  }

  // Whether a run is in progress. It belongs to the run, not to the fuzzer's value: a copy
  // (a snapshot taken inside a callback) is not running.
  struct RunFlag {
    bool on = false;
    RunFlag() = default;
    RunFlag(const RunFlag&) {}
    RunFlag& operator=(const RunFlag&) { return *this; }
  };
  // Marks a run in progress; run() or resume() called from one of its own callbacks is refused.
  struct RunGuard {
    bool& flag;
    RunGuard(RunFlag& f, const char* who) : flag(f.on) {
      if (flag) detail::fail(who, ": called while this fuzzer is already running (from one of its own callbacks?)");
      flag = true;
    }
    ~RunGuard() { flag = false; }
    RunGuard(const RunGuard&) = delete;
    RunGuard& operator=(const RunGuard&) = delete;
  };

  // BatchFeedback to the sampler and the mutator (compiled away when neither listens).
  void feed_back(Index parent, Index n, Index added, Index first_added, const FuzzStats& st) {
    if constexpr (detail::has_sampler_feedback<Sampler>::value || detail::has_mutator_feedback<Mutator>::value) {
      BatchFeedback fb;
      fb.parent = parent;
      fb.rows = n;
      fb.added = added;
      fb.first_added = first_added;
      fb.hits = static_cast<Index>(hits_.head(n).count());
      fb.executions = st.executions;
      if constexpr (kHasFitness) {
        fb.fitness = fitness_.data();
        fb.parent_fitness = corpus_.entry(parent).fitness;
      }
      fb.best_fitness = best_fitness_;
      if constexpr (detail::has_sampler_feedback<Sampler>::value) sampler_.feedback(fb, corpus_);
      if constexpr (detail::has_mutator_feedback<Mutator>::value) mutator_.feedback(fb);
    } else {
      (void)parent, (void)n, (void)added, (void)first_added, (void)st;
    }
  }

  // FuzzContext::admit(): elements found elsewhere, with their coverage vectors (not evaluated
  // again), go through coverage_.observe() like a batch's; the new ones join as roots.
  Index admit(const Corpus& incoming, FuzzStats& st) {
    const Index m = incoming.size();
    if (m == 0) return 0;
    if (!corpus_.same_shape(incoming))
      detail::fail(
          "FuzzContext::admit(): the elements are shaped unlike the corpus (build them in a corpus made with "
          "reset_like(ctx.corpus()))");
    for (Index i = 0; i < m; ++i) Space::check_element("FuzzContext::admit()", incoming, i);
    const Index block = std::min<Index>(m, 1024);
    import_cov_.resize(block, corpus_.coverage_dim());
    Index added = 0;
    for (Index first = 0; first < m; first += block) {
      const Index n = std::min(block, m - first);
      for (Index i = 0; i < n; ++i) import_cov_.row(i) = incoming.coverage(first + i);
      coverage_.observe(import_cov_.topRows(n), import_new_);
      for (Index i = 0; i < n; ++i) {
        if (!import_new_(i)) continue;
        corpus_.add_from(incoming, first + i, -1, corpus_.size(), 0, st.executions);
        ++added;
      }
    }
    st.imported += added;
    return added;
  }

  template <typename F, typename... C>
  static bool any_of_hooks(F&& f, C&... callbacks) {
    bool stop = false;
    ((stop = f(callbacks) || stop), ...);  // every callback sees every event
    return stop;
  }

  Eigen::Ref<const RowMatrix> coverage_of(Index n) const {
    const Eigen::Ref<const RowMatrix> cov(out_.coverage);
    if (cov.cols() < 1 && n > 0)
      detail::fail(
          "Fuzzer::run(): the model's Output::coverage has 0 columns (each input needs a coverage vector of >= 1 "
          "element)");
    if (cov.rows() != n)
      detail::fail("Fuzzer::run(): the model's Output::coverage has ", cov.rows(), " rows for a batch of ", n,
                   " inputs (it must have one coverage vector per input)");
    if (corpus_.size() > 0 && cov.cols() != corpus_.coverage_dim() && cov.rows() > 0)
      detail::fail("Fuzzer::run(): the model's coverage vectors changed width from ", corpus_.coverage_dim(), " to ",
                   cov.cols());
    return cov;
  }

  bool budget_spent(FuzzStats& st, std::uint64_t offset) {
    if (options_.max_executions > 0 && st.executions - offset >= options_.max_executions) return true;
    if (options_.max_iterations > 0 && st.iterations >= options_.max_iterations) return true;
    if (options_.max_seconds > 0 && seconds_since(start_) >= options_.max_seconds) return true;
    return false;
  }

  // Records the rows the objective hit (hits_), in row order; row r was execution
  // `first_execution + r + 1`. With recheck_findings, the hits of a batch are first confirmed
  // together in one fresh batch of the same shape (hit j in row j, the rest copies of the last
  // hit), with a copy of the objective (whose state, such as AnyOf's record of which part fired,
  // must stay that of this batch); a hit that does not fire again is dropped and counted.
  // Returns true when a callback or max_findings stops the run.
  template <typename Rows, typename RootOf, typename... Callbacks>
  bool record_hits(FuzzResult& result, const Rows& rows, std::uint64_t first_execution, RootOf root_of, Index parent,
                   Index depth, Callbacks&... callbacks) {
    FuzzStats& st = result.stats;
    if (options_.max_findings > 0 && st.findings >= options_.max_findings) return true;
    const Index n = rows.rows();
    hit_rows_.clear();
    for (Index r = 0; r < n; ++r)
      if (hits_(r)) hit_rows_.push_back(r);
    if (hit_rows_.empty()) return false;
    const Index k = static_cast<Index>(hit_rows_.size());
    if (options_.recheck_findings) confirm_hits(rows, n, k);
    for (Index j = 0; j < k; ++j) {
      if (options_.max_findings > 0 && st.findings >= options_.max_findings) return true;
      const Index r = hit_rows_[static_cast<std::size_t>(j)];
      if (options_.recheck_findings && !(recheck_hits_.size() > j && recheck_hits_(j))) {
        ++st.unconfirmed;
        continue;
      }
      Finding f;
      Space::Buffer::to_finding(f, rows, r);
      f.root = root_of(r);
      f.parent = parent;
      f.depth = depth;
      f.execution = first_execution + static_cast<std::uint64_t>(r) + 1;
      f.what = detail::describe_objective(objective_, out_, r);
      f.fired = detail::fired_of_objective(objective_, out_, r);
      result.findings.push_back(std::move(f));
      st.findings = static_cast<Index>(result.findings.size());
      if (any_of_hooks([&](auto& c) { return detail::call_on_finding(c, result.findings.back(), st); }, callbacks...))
        return true;
    }
    return options_.max_findings > 0 && st.findings >= options_.max_findings;
  }

  // The re-check: the k hit rows of `rows` (an n-row batch) evaluated again, together, in a
  // fresh n-row batch (hit j in row j); recheck_hits_(j) says whether hit j fires again.
  template <typename Rows>
  void confirm_hits(const Rows& rows, Index n, Index k) {
    Objective objective = objective_;
    recheck_.shape_like(batch_, n);
    for (Index j = 0; j < n; ++j) recheck_.copy_row(j, rows, hit_rows_[static_cast<std::size_t>(std::min(j, k - 1))]);
    decltype(auto) again = recheck_.view(n);
    model_.evaluate(again, recheck_out_);
    detail::run_objective(objective, again, recheck_out_, recheck_hits_);
  }

  // Brings the corpus up to date (what on_corpus() callbacks and stages see, and save): its
  // executions and the coverage policy's state (policies with save_state(); a few dozen bytes).
  void update_stats(FuzzStats& st) {
    corpus_.set_executions(st.executions);
    if constexpr (detail::has_coverage_state<Coverage>::value) corpus_.set_coverage_state(coverage_.save_state());
    st.seconds = seconds_since(start_);
    st.executions_per_second = st.seconds > 0 ? static_cast<double>(st.executions) / st.seconds : 0;
    st.corpus_size = corpus_.size();
    st.coverage_size = coverage_.size();
    if constexpr (detail::has_radius<Coverage>::value) st.coverage_radius = static_cast<float>(coverage_.radius());
    st.seconds_since_new_coverage = seconds_since(last_new_);
    st.best_fitness = best_fitness_;
  }
  static double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

  Model model_;
  Sampler sampler_;
  Mutator mutator_;
  Coverage coverage_;
  Objective objective_;
  FuzzOptions options_;
  Rng rng_;
  Corpus corpus_;
  RowMatrix import_cov_;  // admit(): coverage vectors of incoming elements, a block at a time
  Mask import_new_;
  Output out_, recheck_out_, replay_out_;
  typename Space::Buffer batch_, recheck_;  // the batch; the re-check's batch
  Mask recheck_hits_;
  Mask hits_, is_new_;
  Eigen::VectorXf fitness_;  // the current batch's fitness (objectives with fitness())
  float best_fitness_ = std::numeric_limits<float>::quiet_NaN();
  std::vector<Index> hit_rows_;  // rows of the current batch the objective hit
  Clock::time_point start_, last_new_;
  RunFlag running_;  // run()/resume() in progress
};

}  // namespace detail
}  // namespace nnfuzz
