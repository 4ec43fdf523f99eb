// SPDX-License-Identifier: MIT
// nnfuzz: the coverage-guided fuzz loop. Its plain types are in fuzz_types.hpp, the hook and
// policy checks, input spaces and the loop's state and bookkeeping in detail/loop/ (the loop's
// internals), stages in stages.hpp.
#pragma once

#include "corpus.hpp"
#include "feedback.hpp"
#include "fuzz_types.hpp"
#include "input.hpp"
#include "mutators.hpp"
#include "objectives.hpp"
#include "rng.hpp"
#include "samplers.hpp"
#include "stages.hpp"
#include "coverage/calibrated.hpp"
#include "detail/config.hpp"
#include "detail/loop/hooks.hpp"
#include "detail/loop/input_space.hpp"
#include "detail/loop/loop_state.hpp"
#include "detail/loop/policy_checks.hpp"
#include "detail/traits.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace nnfuzz {

/// The coverage-guided fuzz loop, composed from five policies at compile time.
///
/// Each iteration: `sampler.pick(corpus)` chooses a parent; `mutator.mutate()` fills a batch of
/// mutants (a B×D buffer reused across iterations); `model.evaluate()` runs the network on the
/// batch; the objective marks findings; `coverage.observe()` says which coverage vectors are new,
/// and those mutants join the corpus. With NoCoverage the corpus never grows: random search.
///
/// Policies are passed in by value through the constructor and reachable through accessors.
/// The fuzzer owns the RNG, seeded from FuzzOptions::seed at each run(): one seed, one run.
/// Nothing in the loop allocates per input (findings and corpus growth aside: the corpus grows
/// in 4 MiB chunks).
///
/// Requirements (checked at compile time, with messages that name the missing member):
/// - Model:    `typename Output` (with a RowMatrix-compatible member `coverage`, B×C),
///             `Index input_dim() const`, `void evaluate(const Eigen::Ref<const RowMatrix>&, Output&)`.
///             The batch handed to evaluate() is always contiguous and row-major (B rows of
///             input_dim() floats, `batch.outerStride() == input_dim()`), whatever the caller
///             passed as seeds: `batch.data()` can go straight to a `float*` forward function.
/// - Sampler:  `Index pick(const Corpus&, Rng&)`.
/// - Mutator:  `void mutate(const Eigen::Ref<const RowVector>& parent, const Eigen::Ref<const RowVector>& root,
///              Eigen::Ref<RowMatrix> batch, Rng&)`; optional `check_seeds(seeds) const`.
/// - Coverage: `void reset(Index dim)`, `void observe(const Eigen::Ref<const RowMatrix>&, Mask& is_new)`,
///             `Index size() const`.
/// - Objective: see objectives/ (a `check` member, or any callable).
///
/// Models with an InputLayout (token sequences, several parts; input.hpp) take the same loop:
/// their seeds are a std::vector<InputValue>, their batches InputBatch (detail/loop/input_space.hpp).
/// run() takes callbacks (read-only observers, callbacks.hpp) and stages (work that needs the
/// fuzzer: sync, minimisation; stages.hpp) in one argument list.
///
/// Defaults (`Fuzzer<MyModel> f(MyModel{})`, `make_fuzzer(model, options)`): DefaultSampler,
/// DefaultMutator, CalibratedCoverage, NonFiniteObjective. When the objective has a fitness
/// (every stock objective does: `fitness(out, row)`, how close a row came to firing), the
/// defaults use it — FitnessSampler gives the fittest elements half the picks, keep_fitter keeps
/// the fitness frontier, and DefaultMutator adds multi-scale noise, and Square patches when the
/// model declares an image input_shape(). Without a fitness they are TensorFuzz's set-up:
/// RecentSampler, Gaussian noise σ 0.1 on [0, 1], and the calibrated radius (printed by
/// ProgressPrinter). docs/guidance.md says how to turn each part off.
template <typename Model, typename Sampler = DefaultSampler, typename Mutator = DefaultMutator,
          typename Coverage = CalibratedCoverage, typename Objective = NonFiniteObjective>
class Fuzzer : private detail::LoopState<Model, Sampler, Mutator, Coverage, Objective> {
  // The state, the policies and the bookkeeping (fitness, findings, budgets, stats; with the
  // policy checks): detail/loop/loop_state.hpp. Here: the public API, the loop, the stages.
  using Base = detail::LoopState<Model, Sampler, Mutator, Coverage, Objective>;

 public:
  /// The model's reusable output type.
  using Output = typename Model::Output;
  /// The model's input space (detail/loop/input_space.hpp): dense rows or structured inputs.
  using Space = typename Base::Space;
  /// What run() takes as seeds: rows of a matrix (dense), or a std::vector<InputValue> (structured).
  using Seeds = typename Space::Seeds;
  /// What replay() takes: a row (dense), or an InputValue (structured).
  using Input = typename Space::Value;
  /// What a stage's perform() receives (stages.hpp).
  using Context = FuzzContext<Fuzzer>;
  /// True for a model with structured inputs (InputLayout: token sequences, several parts).
  static constexpr bool kStructured = detail::has_input_layout<Model>::value;
  /// True when the objective has a fitness (`fitness(out, row)`): corpus elements record it.
  static constexpr bool kHasFitness = Base::kHasFitness;

  /// Composes a fuzzer from policy instances and options (validated here).
  explicit Fuzzer(Model model, Sampler sampler = Sampler(), Mutator mutator = Mutator(), Coverage coverage = Coverage(),
                  Objective objective = Objective(), FuzzOptions options = FuzzOptions())
      : Base(std::move(model), std::move(sampler), std::move(mutator), std::move(coverage), std::move(objective)) {
    set_options(options);
  }

  /// Validates and sets the options of the next run.
  void set_options(const FuzzOptions& o) {
    if (o.batch_size < 1) detail::fail("Fuzzer: option 'batch_size' must be >= 1, got ", o.batch_size);
    if (o.max_executions == 0 && o.max_iterations == 0 && !(o.max_seconds > 0))
      detail::fail("Fuzzer: no budget: set one of 'max_executions', 'max_iterations' or 'max_seconds' (all are 0)");
    if (!detail::is_finite(o.max_seconds) || !(o.max_seconds >= 0))
      detail::fail("Fuzzer: option 'max_seconds' must be finite and >= 0, got ", o.max_seconds);
    if (o.max_findings < 0) detail::fail("Fuzzer: option 'max_findings' must be >= 0, got ", o.max_findings);
    options_ = o;
  }

  /// Fuzzes from `seeds` (rows of a matrix; a std::vector<InputValue> for a model with an
  /// InputLayout) until a budget or max_findings is reached or a callback or stage returns
  /// true. Every seed joins the corpus and is checked by the objective first (a seed that
  /// already fails is reported with depth 0; seeds always run, even past max_executions).
  /// Starts afresh: the corpus, the coverage and the RNG are reset. Throws
  /// std::invalid_argument for no seeds, seeds that do not fit the model (width; parts,
  /// lengths, token ids), a non-finite seed, or one the mutator rejects.
  template <typename... Callbacks>
  FuzzResult run(const Seeds& seeds, Callbacks&&... callbacks) {
    (detail::check_callback<std::decay_t<Callbacks>, Context>(), ...);
    const RunGuard guard(running_, "Fuzzer::run()");
    Space::check_seeds(model_, mutator_, seeds);
    const Index count = Space::count(seeds), b = options_.batch_size;
    start_session();
    FuzzResult result;
    FuzzStats& st = result.stats;
    st.seeds = count;
    // Seeds: copied into the batch buffer (contiguous rows, whatever the caller's stride),
    // evaluated in batches, all kept.
    for (Index first = 0; first < count; first += b) {  // every seed joins, whatever stops
      const Index n = std::min(b, count - first);
      batch_.set_seeds(seeds, first, n);
      decltype(auto) rows = batch_.view(n);
      model_.evaluate(rows, out_);
      const auto cov = coverage_of(n);
      if (first == 0) {
        Space::reset_corpus(corpus_, model_, cov.cols());
        corpus_.reserve(count);
        coverage_.reset(cov.cols());
      }
      detail::run_objective(objective_, rows, out_, hits_);
      coverage_.observe(cov, is_new_);
      compute_fitness(n);
      const std::uint64_t before = st.executions;
      for (Index r = 0; r < n; ++r) {
        ++st.executions;
        note_fitness(batch_.append(corpus_, r, cov.row(r).data(), -1, first + r, 0, 0), r);
      }
      record_hits(
          result, rows, before, [first](Index r) { return first + r; }, -1, 0);
    }
    if constexpr (detail::has_seeds_done<Coverage>::value) coverage_.seeds_done();
    loop(result, 0, callbacks...);
    return result;
  }

  /// Continues a campaign from a saved corpus (load_corpus()): the corpus is taken over with its
  /// lineage, the coverage is rebuilt from its vectors (in order, so it holds exactly the vectors
  /// it held), and the loop goes on with this fuzzer's options — its budgets count the executions
  /// of this session, numbered on from where the saved one stopped (Corpus::executions(); for
  /// a version-1 file, the last element's execution). The RNG starts from
  /// options().seed mixed with that execution count: one directory and one seed give one run.
  /// A coverage policy that keeps a state (save_state() / restore_state(): CalibratedCoverage's
  /// radius and adaptation) takes up the corpus' Corpus::coverage_state() before the vectors are
  /// observed, so the campaign goes on with what it had learned; without one (another policy, a
  /// corpus.bin of version 1 or 2, a state cleared with set_coverage_state({})) the policy starts
  /// afresh on the saved vectors, as a run does on its seeds.
  /// Throws std::invalid_argument for an empty corpus, one whose widths do not fit the model, or
  /// a state the policy's restore_state() refuses (e.g. one of another policy).
  template <typename... Callbacks>
  FuzzResult resume(const Corpus& corpus, Callbacks&&... callbacks) {
    (detail::check_callback<std::decay_t<Callbacks>, Context>(), ...);
    const RunGuard guard(running_, "Fuzzer::resume()");
    if (corpus.empty()) detail::fail("Fuzzer::resume(): the corpus is empty");
    Space::check_corpus("Fuzzer::resume()", model_, corpus);
    std::uint64_t last = 0;
    Index seeds = 0;
    for (const CorpusEntry& e : corpus.entries()) {
      last = std::max(last, e.execution);
      seeds += e.parent < 0;
    }
    last = std::max(last, corpus.executions());  // where the saved session stopped
    start_session();
    rng_.seed(detail::mix_seed(options_.seed, last + 1));
    // Check the model still produces coverage of the corpus' width, on the first element.
    batch_.copy_row(0, Space::stored(corpus, 0), 0);
    model_.evaluate(batch_.view(1), out_);
    if (Eigen::Ref<const RowMatrix>(out_.coverage).cols() != corpus.coverage_dim())
      detail::fail("Fuzzer::resume(): the model's coverage vectors have ",
                   Eigen::Ref<const RowMatrix>(out_.coverage).cols(), " elements, the corpus' have ",
                   corpus.coverage_dim());
    corpus_ = corpus;
    coverage_.reset(corpus.coverage_dim());
    if constexpr (detail::has_coverage_state<Coverage>::value)
      if (!corpus.coverage_state().empty()) coverage_.restore_state(corpus.coverage_state());
    RowMatrix block(std::min<Index>(1024, corpus.size()), corpus.coverage_dim());
    for (Index first = 0; first < corpus.size(); first += block.rows()) {
      const Index n = std::min<Index>(block.rows(), corpus.size() - first);
      for (Index i = 0; i < n; ++i) block.row(i) = corpus.coverage(first + i);
      coverage_.observe(block.topRows(n), is_new_);
    }
    if constexpr (detail::has_seeds_done<Coverage>::value) coverage_.seeds_done();
    FuzzResult result;
    result.stats.seeds = seeds;
    result.stats.executions = last;
    result.stats.last_new_coverage_execution = last;
    loop(result, last, callbacks...);
    return result;
  }

  /// Re-evaluates one input (a row; an InputValue for a model with an InputLayout) and tells
  /// whether the objective still fires (a finding's re-check). The input is evaluated in a
  /// batch of batch_size copies, the shape it was found in: a blocked matrix product may sum in
  /// another order for another batch size, and a finding on a rounding edge should be judged in
  /// the arithmetic that produced it. The objective's state is left as it was.
  bool replay(const Input& input) {
    typename Space::Buffer copies;
    Space::fill_replay(model_, input, copies, options_.batch_size);
    decltype(auto) rows = copies.view(options_.batch_size);
    model_.evaluate(rows, replay_out_);
    Objective objective = objective_;
    Mask hit;
    detail::run_objective(objective, rows, replay_out_, hit);
    return hit(0);
  }

  /// This fuzzer with another sampler (the other policies and the options moved over):
  /// `make_fuzzer(model, options).with_objective(my_objective)` replaces one policy without
  /// spelling out the other four. Likewise with_mutator(), with_coverage(), with_objective().
  template <typename S>
  Fuzzer<Model, S, Mutator, Coverage, Objective> with_sampler(S sampler) && {
    return Fuzzer<Model, S, Mutator, Coverage, Objective>(std::move(model_), std::move(sampler), std::move(mutator_),
                                                          std::move(coverage_), std::move(objective_), options_);
  }
  /// This fuzzer with another mutator (see with_sampler()).
  template <typename M>
  Fuzzer<Model, Sampler, M, Coverage, Objective> with_mutator(M mutator) && {
    return Fuzzer<Model, Sampler, M, Coverage, Objective>(std::move(model_), std::move(sampler_), std::move(mutator),
                                                          std::move(coverage_), std::move(objective_), options_);
  }
  /// This fuzzer with another coverage policy (see with_sampler()).
  template <typename C>
  Fuzzer<Model, Sampler, Mutator, C, Objective> with_coverage(C coverage) && {
    return Fuzzer<Model, Sampler, Mutator, C, Objective>(std::move(model_), std::move(sampler_), std::move(mutator_),
                                                         std::move(coverage), std::move(objective_), options_);
  }
  /// This fuzzer with another objective (see with_sampler()).
  template <typename O>
  Fuzzer<Model, Sampler, Mutator, Coverage, O> with_objective(O objective) && {
    return Fuzzer<Model, Sampler, Mutator, Coverage, O>(std::move(model_), std::move(sampler_), std::move(mutator_),
                                                        std::move(coverage_), std::move(objective), options_);
  }

  /// FuzzOptions::keep_fitter resolved for these policies: true when a mutant that beats the best
  /// fitness joins the corpus (automatic: unless the coverage policy is random search, NoCoverage).
  using Base::keeps_fitter;

  /// The corpus of the last run (seeds first, then new-coverage mutants).
  const Corpus& corpus() const { return corpus_; }
  /// The options of the next run.
  const FuzzOptions& options() const { return options_; }
  /// The model policy.
  const Model& model() const { return model_; }
  /// The model policy.
  Model& model() { return model_; }
  /// The sampler policy.
  const Sampler& sampler() const { return sampler_; }
  /// The sampler policy.
  Sampler& sampler() { return sampler_; }
  /// The mutator policy.
  const Mutator& mutator() const { return mutator_; }
  /// The mutator policy.
  Mutator& mutator() { return mutator_; }
  /// The coverage policy (holds the coverage of the last run).
  const Coverage& coverage() const { return coverage_; }
  /// The coverage policy.
  Coverage& coverage() { return coverage_; }
  /// The objective policy.
  const Objective& objective() const { return objective_; }
  /// The objective policy.
  Objective& objective() { return objective_; }

 private:
  friend Context;
  using Base::admit;
  using Base::model_, Base::sampler_, Base::mutator_, Base::coverage_, Base::objective_, Base::options_;
  using Base::record_hits, Base::update_stats, Base::any_of_hooks, Base::budget_spent, Base::feed_back;
  using Base::rng_, Base::corpus_, Base::out_, Base::replay_out_, Base::batch_, Base::hits_, Base::is_new_;
  using Base::running_, Base::last_new_;
  using Base::start_session, Base::coverage_of, Base::compute_fitness, Base::note_fitness, Base::fitter;
  using typename Base::Clock;
  using typename Base::RunGuard;

  // The fuzz loop proper, after the corpus is in place; `offset` executions were done before.
  // One iteration: pick a parent, mutate a batch, evaluate, check the objective, observe the
  // coverage, grow the corpus, confirm and report the hits, feed back to sampler and mutator,
  // tell the callbacks, run the stages.
  template <typename... Callbacks>
  void loop(FuzzResult& result, std::uint64_t offset, Callbacks&... callbacks) {
    FuzzStats& st = result.stats;
    st.budget_start = offset;
    const Index b = options_.batch_size;
    if constexpr (detail::has_policy_reset<Sampler>::value) sampler_.reset();
    if constexpr (detail::has_policy_reset<Mutator>::value) mutator_.reset();
    bool stop = options_.max_findings > 0 && result.stats.findings >= options_.max_findings;
    // Callbacks start once the seeds are in (libFuzzer's INITED), then hear of seed findings.
    update_stats(st);
    stop = any_of_hooks([&](auto& c) { return detail::call_on_start(c, st); }, callbacks...) || stop;
    stop = any_of_hooks([&](auto& c) { return detail::call_on_corpus(c, corpus_, st); }, callbacks...) || stop;
    for (const Finding& f : result.findings)
      stop = any_of_hooks([&](auto& c) { return detail::call_on_finding(c, f, st); }, callbacks...) || stop;
    std::size_t staged = 0;  // findings the stages have seen

    while (!stop && !budget_spent(st, offset)) {
      const Index parent = sampler_.pick(corpus_, rng_);
      if (parent < 0 || parent >= corpus_.size())
        detail::fail("Fuzzer::run(): the sampler picked element ", parent, " of a corpus of ", corpus_.size(),
                     " elements (Sampler::pick() must return an index in [0, corpus.size()))");
      corpus_.mark_picked(parent);
      const CorpusEntry pe = corpus_.entry(parent);
      // The last batch may be short so that max_executions is met exactly.
      Index n = b;
      if (options_.max_executions > 0)
        n = static_cast<Index>(std::min<std::uint64_t>(b, options_.max_executions - (st.executions - offset)));
      decltype(auto) batch = batch_.view(n);
      mutator_.mutate(Space::stored(corpus_, parent), Space::stored(corpus_, pe.root), batch, rng_);
      batch_.check_mutants(n);
      model_.evaluate(batch, out_);
      const auto cov = coverage_of(n);
      detail::run_objective(objective_, batch, out_, hits_);
      coverage_.observe(cov, is_new_);
      compute_fitness(n);
      Index added = 0, first_added = -1;
      const std::uint64_t before = st.executions;
      for (Index r = 0; r < n; ++r) {
        ++st.executions;
        if ((is_new_(r) || fitter(r)) && batch_.row_finite(r)) {  // a non-finite input is never stored
          const Index id = batch_.append(corpus_, r, cov.row(r).data(), parent, pe.root, pe.depth + 1, st.executions);
          note_fitness(id, r);
          if (added++ == 0) first_added = id;
        }
      }
      stop = record_hits(
          result, batch, before, [root = pe.root](Index) { return root; }, parent, pe.depth + 1, callbacks...);
      ++st.iterations;
      update_stats(st);
      feed_back(parent, n, added, first_added, st);
      if (added > 0) {
        last_new_ = Clock::now();
        st.last_new_coverage_execution = st.executions;
        st.seconds_since_new_coverage = 0;
        if (any_of_hooks([&](auto& c) { return detail::call_on_new_coverage(c, st, added); }, callbacks...))
          stop = true;
        if (any_of_hooks([&](auto& c) { return detail::call_on_corpus(c, corpus_, st); }, callbacks...)) stop = true;
      }
      if (any_of_hooks([&](auto& c) { return detail::call_on_batch(c, st); }, callbacks...)) stop = true;
      if (perform_stages(result, staged, callbacks...)) stop = true;  // also on the last batch: its findings
    }
    // Findings made before the loop ran (a seed that fires and ends the run) still reach the stages.
    if (staged < result.findings.size()) perform_stages(result, staged, callbacks...);
    update_stats(st);
    st.finished = true;
    any_of_hooks([&](auto& c) { return detail::call_on_corpus(c, corpus_, st); }, callbacks...);
    any_of_hooks([&](auto& c) { return detail::call_on_end(c, st); }, callbacks...);
  }

  // Every stage's perform(), in argument order; on_corpus() hears of elements they admitted.
  // Returns true when a stage or callback stops the run. Compiled away without stages.
  template <typename... Callbacks>
  bool perform_stages(FuzzResult& result, std::size_t& staged, Callbacks&... callbacks) {
    if constexpr ((detail::has_perform<Callbacks, Context>::value || ...)) {
      Context ctx(*this, result, staged);
      const Index before = corpus_.size();
      bool stop = any_of_hooks([&](auto& c) { return detail::call_perform(c, ctx); }, callbacks...);
      staged = result.findings.size();
      if (corpus_.size() != before) {
        update_stats(result.stats);
        stop = any_of_hooks([&](auto& c) { return detail::call_on_corpus(c, corpus_, result.stats); }, callbacks...) ||
               stop;
      }
      return stop;
    } else {
      (void)result, (void)staged;
      return false;
    }
  }
};

/// Builds a Fuzzer with the default policies (see Fuzzer) and the given options. Replace one
/// with with_objective(), with_mutator(), with_sampler() or with_coverage().
template <typename Model>
Fuzzer<Model> make_fuzzer(Model model, FuzzOptions options) {
  return Fuzzer<Model>(std::move(model), DefaultSampler(), DefaultMutator(), CalibratedCoverage(), NonFiniteObjective(),
                       options);
}

/// Builds a Fuzzer, deducing the policy types from the arguments.
template <typename Model, typename Sampler, typename Mutator, typename Coverage, typename Objective>
Fuzzer<Model, Sampler, Mutator, Coverage, Objective> make_fuzzer(Model model, Sampler sampler, Mutator mutator,
                                                                 Coverage coverage, Objective objective,
                                                                 FuzzOptions options = FuzzOptions()) {
  return Fuzzer<Model, Sampler, Mutator, Coverage, Objective>(std::move(model), std::move(sampler), std::move(mutator),
                                                              std::move(coverage), std::move(objective), options);
}

}  // namespace nnfuzz
