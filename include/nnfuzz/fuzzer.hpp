// SPDX-License-Identifier: MIT
// nnfuzz: the coverage-guided fuzz loop.
#pragma once

#include "corpus.hpp"
#include "feedback.hpp"
#include "input.hpp"
#include "coverage/calibrated.hpp"
#include "detail/config.hpp"
#include "detail/traits.hpp"
#include "mutators.hpp"
#include "objectives.hpp"
#include "rng.hpp"
#include "samplers.hpp"

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

/// Options of a fuzz run: plain fields with defaults (libFuzzer's FuzzingOptions style).
/// At least one budget must be non-zero. Only executions/iterations budgets are reproducible:
/// a wall-clock budget stops wherever the clock says.
struct FuzzOptions {
  Index batch_size = 100;                 ///< mutants per iteration (rows of one model call); > 0
  std::uint64_t max_executions = 100000;  ///< stop after this many model executions (0 = no limit)
  std::uint64_t max_iterations = 0;       ///< stop after this many iterations (0 = no limit)
  double max_seconds = 0;                 ///< stop after this much wall time (0 = no limit)
  Index max_findings = 1;                 ///< stop after this many findings (1 = stop at the first; 0 = collect all)
  std::uint64_t seed = 0;                 ///< the one seed of the run's RNG: same seed => same run, bit for bit
  /// Re-evaluate every finding before reporting it (the hits of a batch together, in one fresh
  /// batch of the shape they were found in); one that does not fire again is counted in
  /// FuzzStats::unconfirmed and dropped. Costs one extra batch per batch with a hit.
  bool recheck_findings = true;
  /// When the objective has a fitness (WithFitness): also keep a mutant whose fitness beats the
  /// best so far although its coverage is not new (a fitness frontier joins the corpus). The
  /// coverage policy is not told of it.
  bool keep_fitter = true;
};

/// An input on which the objective fired.
struct Finding {
  RowVector input;              ///< the input itself
  Index root = 0;               ///< index of the seed its chain started from
  Index parent = -1;            ///< corpus id of the element it was mutated from (-1: a seed)
  Index depth = 0;              ///< mutations from the seed (0: the seed itself)
  std::uint64_t execution = 0;  ///< 1-based execution count at which it ran
  std::string what;             ///< what fired (Objective::describe(), or "objective")
  InputValue value;             ///< the input, for models with structured inputs (InputLayout); `input` is empty then
};

/// Counters of a run, updated after every batch.
struct FuzzStats {
  std::uint64_t executions = 0;      ///< model executions (inputs evaluated), seeds included
  std::uint64_t iterations = 0;      ///< batches of mutants evaluated
  double seconds = 0;                ///< wall time since run() started
  double executions_per_second = 0;  ///< executions / seconds
  Index seeds = 0;                   ///< seeds given to run()
  Index corpus_size = 0;             ///< elements in the corpus (seeds included)
  Index findings = 0;                ///< findings collected
  Index unconfirmed = 0;             ///< hits that did not fire again when re-evaluated (dropped)
  Index coverage_size = 0;           ///< vectors the coverage policy holds (Coverage::size())
  Index imported = 0;                ///< elements callbacks handed over by on_import() that were new (this session)
  float coverage_radius = 0;         ///< the coverage policy's novelty radius, if it has `threshold()` (else 0)
  std::uint64_t last_new_coverage_execution = 0;  ///< execution count at the last new coverage
  double seconds_since_new_coverage = 0;          ///< wall time since the last new coverage
  bool finished = false;                          ///< true in the final on_corpus / on_end calls of a run
  /// Best fitness seen in the run (WithFitness objectives; NaN otherwise).
  float best_fitness = std::numeric_limits<float>::quiet_NaN();
};

/// What run() returns: the findings and the final counters.
struct FuzzResult {
  std::vector<Finding> findings;  ///< in the order found
  FuzzStats stats;                ///< counters at the end of the run
  /// True when at least one finding was made.
  bool found() const { return !findings.empty(); }
};

namespace detail {
// Optional callback hooks (ensmallen style): each may return void or bool; true stops the run.
#define NNFUZZ_HOOK(hook, args_decl, args)                                                      \
 template <typename C, typename = void>                                                         \
 struct has_##hook : std::false_type {};                                                        \
 template <typename C>                                                                          \
 struct has_##hook<C, void_t<decltype(std::declval<C&>().hook args_decl)>> : std::true_type {}; \
 template <typename C, typename... A>                                                           \
 bool call_##hook(C& c, A&&... a) {                                                             \
  if constexpr (has_##hook<C>::value) {                                                         \
   if constexpr (std::is_same<decltype(c.hook(std::forward<A>(a)...)), bool>::value)            \
    return c.hook(std::forward<A>(a)...);                                                       \
   else                                                                                         \
    c.hook(std::forward<A>(a)...);                                                              \
  }                                                                                             \
  return false;                                                                                 \
 }
NNFUZZ_HOOK(on_start, (std::declval<const FuzzStats&>()), )
NNFUZZ_HOOK(on_batch, (std::declval<const FuzzStats&>()), )
NNFUZZ_HOOK(on_new_coverage, (std::declval<const FuzzStats&>(), Index{0}), )
NNFUZZ_HOOK(on_finding, (std::declval<const Finding&>(), std::declval<const FuzzStats&>()), )
NNFUZZ_HOOK(on_end, (std::declval<const FuzzStats&>()), )
NNFUZZ_HOOK(on_corpus, (std::declval<const Corpus&>(), std::declval<const FuzzStats&>()), )
// on_import(corpus, incoming, stats): a callback appends elements found elsewhere (io/sync.hpp).
NNFUZZ_HOOK(on_import, (std::declval<const Corpus&>(), std::declval<Corpus&>(), std::declval<const FuzzStats&>()), )
#undef NNFUZZ_HOOK

// A member whose name is a known hook, whatever its signature (non-template, non-overloaded).
#define NNFUZZ_NAMED(name)                 \
 template <typename C, typename = void>    \
 struct names_##name : std::false_type {}; \
 template <typename C>                     \
 struct names_##name<C, void_t<decltype(&C::name)>> : std::true_type {};
NNFUZZ_NAMED(on_start)
NNFUZZ_NAMED(on_batch)
NNFUZZ_NAMED(on_new_coverage)
NNFUZZ_NAMED(on_finding)
NNFUZZ_NAMED(on_end)
NNFUZZ_NAMED(on_corpus)
NNFUZZ_NAMED(on_import)
// Likely misspellings of the hooks: a callback that defines one of them is refused.
NNFUZZ_NAMED(on_findings)
NNFUZZ_NAMED(on_found)
NNFUZZ_NAMED(on_find)
NNFUZZ_NAMED(on_new_finding)
NNFUZZ_NAMED(on_crash)
NNFUZZ_NAMED(on_begin)
NNFUZZ_NAMED(on_finish)
NNFUZZ_NAMED(on_stop)
NNFUZZ_NAMED(on_iteration)
NNFUZZ_NAMED(on_batches)
NNFUZZ_NAMED(on_coverage)
NNFUZZ_NAMED(on_new_coverages)
NNFUZZ_NAMED(on_new)
NNFUZZ_NAMED(on_starts)
NNFUZZ_NAMED(on_ends)
#undef NNFUZZ_NAMED

/// Compile-time checks of one callback type passed to run()/resume().
template <typename C>
constexpr void check_callback() {
  static_assert(
      has_on_start<C>::value || has_on_batch<C>::value || has_on_new_coverage<C>::value || has_on_finding<C>::value ||
          has_on_end<C>::value || has_on_corpus<C>::value || has_on_import<C>::value,
      "nnfuzz: a callback passed to run() has none of the hooks on_start(const FuzzStats&), "
      "on_batch(const FuzzStats&), on_new_coverage(const FuzzStats&, Index), "
      "on_finding(const Finding&, const FuzzStats&), on_corpus(const Corpus&, const FuzzStats&), "
      "on_end(const FuzzStats&), on_import(const Corpus&, Corpus&, const FuzzStats&) with these parameters (see "
      "callbacks.hpp)");
  static_assert(!(names_on_start<C>::value && !has_on_start<C>::value),
                "nnfuzz: callback member on_start has the wrong parameters: on_start(const nnfuzz::FuzzStats&)");
  static_assert(!(names_on_batch<C>::value && !has_on_batch<C>::value),
                "nnfuzz: callback member on_batch has the wrong parameters: on_batch(const nnfuzz::FuzzStats&)");
  static_assert(!(names_on_new_coverage<C>::value && !has_on_new_coverage<C>::value),
                "nnfuzz: callback member on_new_coverage has the wrong parameters: "
                "on_new_coverage(const nnfuzz::FuzzStats&, nnfuzz::Index added)");
  static_assert(!(names_on_finding<C>::value && !has_on_finding<C>::value),
                "nnfuzz: callback member on_finding has the wrong parameters: "
                "on_finding(const nnfuzz::Finding&, const nnfuzz::FuzzStats&)");
  static_assert(!(names_on_end<C>::value && !has_on_end<C>::value),
                "nnfuzz: callback member on_end has the wrong parameters: on_end(const nnfuzz::FuzzStats&)");
  static_assert(!(names_on_corpus<C>::value && !has_on_corpus<C>::value),
                "nnfuzz: callback member on_corpus has the wrong parameters: "
                "on_corpus(const nnfuzz::Corpus&, const nnfuzz::FuzzStats&)");
  static_assert(!(names_on_import<C>::value && !has_on_import<C>::value),
                "nnfuzz: callback member on_import has the wrong parameters: "
                "on_import(const nnfuzz::Corpus& corpus, nnfuzz::Corpus& incoming, const nnfuzz::FuzzStats&)");
  static_assert(!(names_on_findings<C>::value || names_on_found<C>::value || names_on_find<C>::value ||
                  names_on_new_finding<C>::value || names_on_crash<C>::value),
                "nnfuzz: callback defines on_findings/on_found/on_find/on_new_finding/on_crash, which is not a hook: "
                "did you mean on_finding(const nnfuzz::Finding&, const nnfuzz::FuzzStats&)?");
  static_assert(!(names_on_begin<C>::value || names_on_starts<C>::value),
                "nnfuzz: callback defines on_begin/on_starts, which is not a hook: did you mean on_start(const "
                "nnfuzz::FuzzStats&)?");
  static_assert(!(names_on_finish<C>::value || names_on_stop<C>::value || names_on_ends<C>::value),
                "nnfuzz: callback defines on_finish/on_stop/on_ends, which is not a hook: did you mean on_end(const "
                "nnfuzz::FuzzStats&)?");
  static_assert(!(names_on_iteration<C>::value || names_on_batches<C>::value),
                "nnfuzz: callback defines on_iteration/on_batches, which is not a hook: did you mean on_batch(const "
                "nnfuzz::FuzzStats&)?");
  static_assert(!(names_on_coverage<C>::value || names_on_new_coverages<C>::value || names_on_new<C>::value),
                "nnfuzz: callback defines on_coverage/on_new_coverages/on_new, which is not a hook: did you mean "
                "on_new_coverage(const nnfuzz::FuzzStats&, nnfuzz::Index added)?");
}

}  // namespace detail

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
/// - Objective: see objectives.hpp (a `check` member, or any callable).
///
/// Defaults: `Fuzzer<MyModel> f(MyModel{})` is TensorFuzz's set-up: RecentSampler, GaussianMutator
/// (σ 0.1 on [0, 1]), CalibratedCoverage (the radius chosen from the first mutants' distances,
/// printed by ProgressPrinter), NonFiniteObjective (needs Output::for_each_tensor).
template <typename Model, typename Sampler = RecentSampler, typename Mutator = GaussianMutator,
          typename Coverage = CalibratedCoverage, typename Objective = NonFiniteObjective>
class Fuzzer {
  static_assert(
      detail::has_output_type<Model>::value,
      "nnfuzz: Model must provide a nested type `Output` (the reusable result of evaluate(); see fuzzer.hpp)");
  static_assert(detail::has_input_dim<Model>::value || detail::has_input_layout<Model>::value,
                "nnfuzz: Model must provide `Index input_dim() const` (floats per input row) or, for token "
                "sequences and inputs of several parts, `nnfuzz::InputLayout input_layout() const` (see input.hpp)");
  static_assert(detail::has_input_layout<Model>::value || detail::has_evaluate<Model>::value,
                "nnfuzz: Model must provide `void evaluate(const Eigen::Ref<const nnfuzz::RowMatrix>& batch, Output& "
                "out)`");
  static_assert(!detail::has_input_layout<Model>::value || detail::has_structured_evaluate<Model>::value,
                "nnfuzz: a Model with input_layout() must provide `void evaluate(const nnfuzz::InputBatch& batch, "
                "Output& out)`");
  static_assert(detail::has_coverage_member<Model>::value,
                "nnfuzz: Model::Output must provide a member `coverage` (a RowMatrix, one coverage vector per row)");
  static_assert(
      detail::has_pick<Sampler>::value,
      "nnfuzz: Sampler must provide `Index pick(const nnfuzz::Corpus& corpus, nnfuzz::Rng& rng)` (see samplers.hpp)");
  static_assert(detail::mutator_fits_input_space<Mutator, detail::input_space_t<Model>>::value,
                "nnfuzz: the Mutator does not fit the model's input space (see the note naming both). Dense models "
                "(input_dim()) need `void mutate(const Eigen::Ref<const RowVector>& parent, const "
                "Eigen::Ref<const RowVector>& root, Eigen::Ref<RowMatrix> batch, nnfuzz::Rng& rng)`; models with an "
                "InputLayout need `void mutate(const nnfuzz::InputView& parent, const nnfuzz::InputView& root, "
                "nnfuzz::InputBatch& batch, nnfuzz::Rng& rng)` (see mutators.hpp, text_mutators.hpp)");
  static_assert(detail::has_reset<Coverage>::value,
                "nnfuzz: Coverage must provide `void reset(Index dim)` (forget everything; see coverage/)");
  static_assert(detail::has_observe<Coverage>::value,
                "nnfuzz: Coverage must provide `void observe(const Eigen::Ref<const RowMatrix>& vectors, nnfuzz::Mask& "
                "is_new)` (see coverage/)");
  static_assert(detail::has_size<Coverage>::value, "nnfuzz: Coverage must provide `Index size() const`");

 public:
  /// The model's reusable output type.
  using Output = typename Model::Output;
  /// True for a model with structured inputs (InputLayout: token sequences, several parts).
  static constexpr bool kStructured = detail::has_input_layout<Model>::value;
  /// True when the objective has a fitness (WithFitness): corpus elements record it.
  static constexpr bool kHasFitness = detail::has_fitness<Objective, typename Model::Output>::value;
  /// What run() takes as seeds: a matrix of rows (dense), or a vector of InputValue (structured).
  using Seeds = std::conditional_t<kStructured, std::vector<InputValue>, RowMatrix>;
  static_assert(
      detail::is_objective_v<Objective, Output,
                             std::conditional_t<kStructured, InputBatch, Eigen::Ref<const RowMatrix>>>,
      "nnfuzz: Objective must provide `void check(const Eigen::Ref<const RowMatrix>& batch, const Output& out, "
      "Mask& hits)`, or be callable as `bool(const Output&, Index row)` (see objectives.hpp)");

  /// Composes a fuzzer from policy instances and options (validated here).
  explicit Fuzzer(Model model, Sampler sampler = Sampler(), Mutator mutator = Mutator(), Coverage coverage = Coverage(),
                  Objective objective = Objective(), FuzzOptions options = FuzzOptions())
      : model_(std::move(model)),
        sampler_(std::move(sampler)),
        mutator_(std::move(mutator)),
        coverage_(std::move(coverage)),
        objective_(std::move(objective)) {
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

  /// Fuzzes from `seeds` (one input per row) until a budget or max_findings is reached or a
  /// callback returns true. Every seed joins the corpus and is checked by the objective first
  /// (a seed that already fails is reported with depth 0; seeds always run, even past
  /// max_executions). Starts afresh: the corpus, the
  /// coverage and the RNG are reset. Throws std::invalid_argument for an empty seed matrix, a
  /// width different from model.input_dim(), a non-finite seed, or one the mutator rejects.
  template <typename... Callbacks>
  FuzzResult run(const Eigen::Ref<const RowMatrix>& seeds, Callbacks&&... callbacks) {
    static_assert(!kStructured,
                  "nnfuzz: this model has an InputLayout: pass its seeds as a std::vector<nnfuzz::InputValue>");
    (detail::check_callback<std::decay_t<Callbacks>>(), ...);
    const RunGuard guard(running_.on, "Fuzzer::run()");
    check_seeds(seeds);
    return run_impl(
        seeds.rows(), [&](Index first, Index n) { batch_.topRows(n) = seeds.middleRows(first, n); }, callbacks...);
  }

  /// Fuzzes a model with structured inputs (InputLayout) from `seeds`, as run() above. Throws
  /// std::invalid_argument for no seeds, or a seed that does not fit the layout (parts, widths,
  /// lengths, token ids outside the vocabulary, non-finite floats) or that the mutator rejects.
  template <typename... Callbacks>
  FuzzResult run(const std::vector<InputValue>& seeds, Callbacks&&... callbacks) {
    static_assert(kStructured,
                  "nnfuzz: this model takes dense rows (input_dim()): pass its seeds as a matrix, one row per input");
    (detail::check_callback<std::decay_t<Callbacks>>(), ...);
    const RunGuard guard(running_.on, "Fuzzer::run()");
    if constexpr (kStructured) {
      if (seeds.empty()) detail::fail("Fuzzer::run(): no seeds (the seed vector is empty)");
      const InputLayout layout = model_.input_layout();
      for (std::size_t i = 0; i < seeds.size(); ++i)
        check_input("Fuzzer::run()", detail::message("seed ", i), layout, seeds[i]);
      if constexpr (detail::has_check_seeds_structured<Mutator>::value) mutator_.check_seeds(seeds);
    }
    return run_impl(
        static_cast<Index>(seeds.size()),
        [&](Index first, Index n) {
          if constexpr (kStructured)
            for (Index r = 0; r < n; ++r) sbatch_.set_row(r, seeds[static_cast<std::size_t>(first + r)]);
        },
        callbacks...);
  }

  /// Continues a campaign from a saved corpus (load_corpus()): the corpus is taken over with its
  /// lineage, the coverage is rebuilt from its vectors (in order, so it holds exactly the vectors
  /// it held), and the loop goes on with this fuzzer's options — its budgets count the executions
  /// of this session, numbered on from where the saved one stopped (Corpus::executions(); for
  /// a version-1 file, the last element's execution). The RNG starts from
  /// options().seed mixed with that execution count: one directory and one seed give one run.
  /// Throws std::invalid_argument for an empty corpus or one whose widths do not fit the model.
  template <typename... Callbacks>
  FuzzResult resume(const Corpus& corpus, Callbacks&&... callbacks) {
    (detail::check_callback<std::decay_t<Callbacks>>(), ...);
    const RunGuard guard(running_.on, "Fuzzer::resume()");
    if (corpus.empty()) detail::fail("Fuzzer::resume(): the corpus is empty");
    if constexpr (kStructured) {
      if (!corpus.structured() || corpus.layout() != model_.input_layout())
        detail::fail("Fuzzer::resume(): the corpus holds ",
                     corpus.structured() ? corpus.layout().describe() : detail::message(corpus.input_dim(), " floats"),
                     ", the model takes ", model_.input_layout().describe());
    } else {
      if (corpus.structured() || corpus.input_dim() != model_.input_dim())
        detail::fail(
            "Fuzzer::resume(): corpus inputs have ",
            corpus.structured() ? corpus.layout().describe() : detail::message(corpus.input_dim(), " elements"),
            ", the model takes ", model_.input_dim());
    }
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
    if constexpr (kStructured) {
      sbatch_.set_rows(1);
      sbatch_.set_row(0, corpus.view(0));
      model_.evaluate(static_cast<const InputBatch&>(sbatch_), out_);
    } else {
      const RowMatrix probe = corpus.input(0);
      model_.evaluate(probe, out_);
    }
    if (Eigen::Ref<const RowMatrix>(out_.coverage).cols() != corpus.coverage_dim())
      detail::fail("Fuzzer::resume(): the model's coverage vectors have ",
                   Eigen::Ref<const RowMatrix>(out_.coverage).cols(), " elements, the corpus' have ",
                   corpus.coverage_dim());
    corpus_ = corpus;
    coverage_.reset(corpus.coverage_dim());
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

  /// Re-evaluates one input and tells whether the objective still fires (a finding's re-check).
  /// The input is evaluated in a batch of batch_size copies, the shape it was found in: a
  /// blocked matrix product may sum in another order for another batch size, and a finding on a
  /// rounding edge should be judged in the arithmetic that produced it.
  bool replay(const InputValue& input) {
    static_assert(kStructured, "nnfuzz: replay(InputValue) is for models with an InputLayout; pass a row");
    if constexpr (kStructured) {
      const InputLayout layout = model_.input_layout();
      check_input("Fuzzer::replay()", "the input", layout, input);
      InputBatch copies;
      copies.reserve(layout, options_.batch_size);
      for (Index r = 0; r < options_.batch_size; ++r) copies.set_row(r, input);
      model_.evaluate(static_cast<const InputBatch&>(copies), out_);
      Mask hit;
      detail::run_objective(objective_, copies, out_, hit);
      return hit(0);
    }
    return false;
  }
  /// Re-evaluates one dense input (see above).
  bool replay(const Eigen::Ref<const RowVector>& input) {
    static_assert(!kStructured, "nnfuzz: this model has an InputLayout: replay an InputValue (Finding::value)");
    if (input.cols() != model_.input_dim())
      detail::fail("Fuzzer::replay(): input has ", input.cols(), " elements, the model takes ", model_.input_dim());
    const RowMatrix copies = input.replicate(options_.batch_size, 1);
    model_.evaluate(copies, out_);
    Mask hit(copies.rows());
    detail::run_objective(objective_, copies, out_, hit);
    return hit(0);
  }

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
  using Clock = std::chrono::steady_clock;

  // The seed pass and the loop of run(): `count` seeds; fill(first, n) copies seeds
  // [first, first + n) into the batch buffer's first n rows.
  template <typename Fill, typename... Callbacks>
  FuzzResult run_impl(Index count, Fill fill, Callbacks&... callbacks) {
    const Index b = options_.batch_size;
    start_session();
    FuzzResult result;
    FuzzStats& st = result.stats;
    st.seeds = count;
    // Seeds: copied into the batch buffer (contiguous rows, whatever the caller's stride),
    // evaluated in batches, all kept.
    for (Index first = 0; first < count; first += b) {  // every seed joins, whatever stops
      const Index n = std::min(b, count - first);
      fill(first, n);
      decltype(auto) rows = batch_rows(n);
      model_.evaluate(rows, out_);
      const auto cov = coverage_of(n);
      if (first == 0) {
        if constexpr (kStructured)
          corpus_.reset(sbatch_.layout(), cov.cols());
        else
          corpus_.reset(batch_.cols(), cov.cols());
        corpus_.reserve(count);
        coverage_.reset(cov.cols());
      }
      detail::run_objective(objective_, rows, out_, hits_);
      coverage_.observe(cov, is_new_);
      compute_fitness(n);
      const std::uint64_t before = st.executions;
      for (Index r = 0; r < n; ++r) {
        ++st.executions;
        const Index id = add_row(r, cov.row(r).data(), -1, first + r, 0, 0);
        note_fitness(id, r);
      }
      record_hits(
          result, rows, before, [first](Index r) { return first + r; }, -1, 0);
    }
    if constexpr (detail::has_seeds_done<Coverage>::value) coverage_.seeds_done();
    loop(result, 0, callbacks...);
    return result;
  }

  // The first n rows of the batch buffer, as the model takes them.
  decltype(auto) batch_rows(Index n) {
    if constexpr (kStructured) {
      sbatch_.set_rows(n);
      return static_cast<InputBatch&>(sbatch_);
    } else {
      return batch_.topRows(n);
    }
  }
  // Appends row r of the batch buffer to the corpus.
  Index add_row(Index r, const float* cov, Index parent, Index root, Index depth, std::uint64_t execution) {
    if constexpr (kStructured)
      return corpus_.add(sbatch_, r, cov, parent, root, depth, execution);
    else
      return corpus_.add(batch_.row(r).data(), cov, parent, root, depth, execution);
  }
  // The objective's fitness of the batch's first n rows (WithFitness), into fitness_.
  void compute_fitness(Index n) {
    if constexpr (kHasFitness) {
      if (fitness_.size() < n) fitness_.resize(n);  // sized to batch_size at the start: no allocation per batch
      for (Index r = 0; r < n; ++r) fitness_(r) = objective_.fitness(out_, r);
    } else {
      (void)n;
    }
  }
  // Records row r's fitness on corpus element `id` and in the run's best.
  void note_fitness(Index id, Index r) {
    if constexpr (kHasFitness) {
      const float f = fitness_(r);
      corpus_.set_fitness(id, f);
      if (f > best_fitness_ || (detail::is_nan(best_fitness_) && !detail::is_nan(f))) best_fitness_ = f;
    } else {
      (void)id, (void)r;
    }
  }
  // True when row r beats the best fitness so far (FuzzOptions::keep_fitter).
  bool fitter(Index r) const {
    if constexpr (kHasFitness)
      return options_.keep_fitter && fitness_(r) > best_fitness_;
    else
      return (void)r, false;
  }
  // Stored input i, as the mutator takes it.
  auto stored_input(Index i) const {
    if constexpr (kStructured)
      return corpus_.view(i);
    else
      return corpus_.input(i);
  }
  // Structured mutants reach the model only with lengths in [1, max_len] and ids in [0, vocab):
  // a mutator's bug must not become an out-of-range embedding lookup in the user's model.
  void check_mutants() const {
    const InputLayout& layout = sbatch_.layout();
    for (Index p = 0; p < layout.size(); ++p) {
      const InputPart& part = layout.part(p);
      if (part.kind != InputPart::Kind::tokens) continue;
      for (Index r = 0; r < sbatch_.rows(); ++r) {
        const Index len = sbatch_.length(p, r);
        if (len < 1 || len > part.width)
          detail::fail("Fuzzer::run(): the mutator gave row ", r, " of part '", part.name, "' length ", len,
                       " (must be 1..", part.width, ")");
        const TokenId* ids = sbatch_.ids(p, r);
        for (Index i = 0; i < len; ++i)
          if (ids[i] < 0 || ids[i] >= part.vocab)
            detail::fail("Fuzzer::run(): the mutator wrote token ", ids[i], " at position ", i, " of row ", r,
                         " of part '", part.name, "', outside [0, ", part.vocab, ")");
      }
    }
  }
  bool row_finite(Index r) const {
    if constexpr (kStructured)
      return sbatch_.row_finite(r);
    else
      return detail::row_all_finite(batch_, r);
  }

  void start_session() {
    rng_.seed(options_.seed);
    best_fitness_ = std::numeric_limits<float>::quiet_NaN();
    start_ = Clock::now();
    last_new_ = start_;
    const Index b = options_.batch_size;
    Index d = 0;
    if constexpr (kStructured) {
      const InputLayout layout = model_.input_layout();
      if (layout.size() == 0) detail::fail("Fuzzer::run(): the model's input_layout() has no parts");
      d = layout.float_cells() + layout.token_cells();
    } else {
      d = model_.input_dim();
    }
    if (d < 1) detail::fail("Fuzzer::run(): the model's input_dim() is ", d, " (must be >= 1)");
    if (b > std::numeric_limits<Index>::max() / 4 / d)
      detail::fail("Fuzzer::run(): option 'batch_size' = ", b, " times input_dim() = ", d,
                   " overflows the batch buffer's size");
    try {
      if constexpr (kStructured)
        sbatch_.reserve(model_.input_layout(), b);
      else
        batch_.resize(b, d);
      hits_.resize(b);
      if constexpr (kHasFitness) fitness_.resize(b);
      hit_rows_.reserve(static_cast<std::size_t>(b));
      is_new_.resize(b);
    } catch (const std::bad_alloc&) {
      detail::fail("Fuzzer::run(): option 'batch_size' = ", b, " needs a ", b, " x ", d, " float batch buffer (",
                   static_cast<double>(b) * static_cast<double>(d) * 4.0 / (1 << 20), " MiB): cannot allocate it");
    }
  }

  // Marks a run in progress; run() or resume() called from one of its own callbacks is refused.
  struct RunGuard {
    bool& flag;
    RunGuard(bool& f, const char* who) : flag(f) {
      if (flag) detail::fail(who, ": called while this fuzzer is already running (from one of its own callbacks?)");
      flag = true;
    }
    ~RunGuard() { flag = false; }
    RunGuard(const RunGuard&) = delete;
    RunGuard& operator=(const RunGuard&) = delete;
  };

  // The fuzz loop proper, after the corpus is in place; `offset` executions were done before.
  template <typename... Callbacks>
  void loop(FuzzResult& result, std::uint64_t offset, Callbacks&... callbacks) {
    FuzzStats& st = result.stats;
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

    // The loop.
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
      decltype(auto) batch = batch_rows(n);
      mutator_.mutate(stored_input(parent), stored_input(pe.root), batch, rng_);
      if constexpr (kStructured) check_mutants();
      model_.evaluate(batch, out_);
      const auto cov = coverage_of(n);
      detail::run_objective(objective_, batch, out_, hits_);
      coverage_.observe(cov, is_new_);
      compute_fitness(n);
      Index added = 0, first_added = -1;
      const std::uint64_t before = st.executions;
      for (Index r = 0; r < n; ++r) {
        ++st.executions;
        if ((is_new_(r) || fitter(r)) && row_finite(r)) {  // a non-finite input is never stored
          const Index id = add_row(r, cov.row(r).data(), parent, pe.root, pe.depth + 1, st.executions);
          note_fitness(id, r);
          if (added++ == 0) first_added = id;
        }
      }
      if (!stop)
        stop = record_hits(
            result, batch, before, [root = pe.root](Index) { return root; }, parent, pe.depth + 1, callbacks...);
      ++st.iterations;
      update_stats(st);
      if constexpr (detail::has_sampler_feedback<Sampler>::value || detail::has_mutator_feedback<Mutator>::value) {
        BatchFeedback fb;
        fb.parent = parent;
        fb.rows = n;
        fb.added = added;
        fb.first_added = first_added;
        fb.hits = static_cast<Index>(hits_.head(n).count());
        fb.executions = st.executions;
        if constexpr (kHasFitness) fb.fitness = fitness_.data();
        fb.best_fitness = best_fitness_;
        if constexpr (detail::has_sampler_feedback<Sampler>::value) sampler_.feedback(fb, corpus_);
        if constexpr (detail::has_mutator_feedback<Mutator>::value) mutator_.feedback(fb);
      }
      if (added > 0) {
        last_new_ = Clock::now();
        st.last_new_coverage_execution = st.executions;
        st.seconds_since_new_coverage = 0;
        if (any_of_hooks([&](auto& c) { return detail::call_on_new_coverage(c, st, added); }, callbacks...))
          stop = true;
        if (any_of_hooks([&](auto& c) { return detail::call_on_corpus(c, corpus_, st); }, callbacks...)) stop = true;
      }
      if (any_of_hooks([&](auto& c) { return detail::call_on_batch(c, st); }, callbacks...)) stop = true;
      if (!stop && import_elements(st, callbacks...)) stop = true;
    }
    update_stats(st);
    st.finished = true;
    any_of_hooks([&](auto& c) { return detail::call_on_corpus(c, corpus_, st); }, callbacks...);
    any_of_hooks([&](auto& c) { return detail::call_on_end(c, st); }, callbacks...);
  }

  // The on_import() hook, after each batch: callbacks append to `imports_` (handed over empty,
  // shaped like the corpus) elements found elsewhere — another worker's (io/sync.hpp) — with
  // their coverage vectors. They are not evaluated again: their vectors go through
  // coverage_.observe() like a batch's, and the new ones join the corpus as roots of their own
  // (parent -1, root = their own id, depth 0, execution = now); FuzzStats::imported counts them
  // and on_corpus() hears of the growth. Works alike for dense and structured inputs. A
  // non-finite input, or a token outside the layout, throws (naming the element). Returns true
  // when a callback stops the run. Compiled away when no callback has on_import().
  template <typename... Callbacks>
  bool import_elements(FuzzStats& st, Callbacks&... callbacks) {
    if constexpr ((detail::has_on_import<Callbacks>::value || ...)) {
      auto reshape = [&] {
        if constexpr (kStructured)
          imports_.reset(corpus_.layout(), corpus_.coverage_dim());
        else
          imports_.reset(corpus_.input_dim(), corpus_.coverage_dim());
      };
      if (imports_.coverage_dim() != corpus_.coverage_dim() || imports_.structured() != corpus_.structured() ||
          imports_.input_dim() != corpus_.input_dim() || imports_.token_cells() != corpus_.token_cells())
        reshape();
      bool stop = any_of_hooks(
          [&](auto& c) { return detail::call_on_import(c, static_cast<const Corpus&>(corpus_), imports_, st); },
          callbacks...);
      const Index m = imports_.size();
      if (m == 0) return stop;
      if (imports_.structured() != corpus_.structured() || imports_.input_dim() != corpus_.input_dim() ||
          imports_.coverage_dim() != corpus_.coverage_dim() || (kStructured && imports_.layout() != corpus_.layout()))
        detail::fail(
            "Fuzzer::run(): on_import() handed over elements shaped unlike the corpus (add() to the corpus "
            "given, do not reset() it)");
      for (Index i = 0; i < m; ++i) {
        if constexpr (kStructured)
          check_input("Fuzzer::run()", detail::message("on_import() element ", i), corpus_.layout(),
                      imports_.view(i).value());
        else if (!detail::all_finite(imports_.input(i).data(), static_cast<std::size_t>(imports_.input_dim())))
          detail::fail("Fuzzer::run(): on_import() element ", i, " has a non-finite input value");
      }
      const Index block = std::min<Index>(m, 1024);
      import_cov_.resize(block, corpus_.coverage_dim());
      Index added = 0;
      for (Index first = 0; first < m; first += block) {
        const Index n = std::min(block, m - first);
        for (Index i = 0; i < n; ++i) import_cov_.row(i) = imports_.coverage(first + i);
        coverage_.observe(import_cov_.topRows(n), import_new_);
        for (Index i = 0; i < n; ++i) {
          if (!import_new_(i)) continue;
          const Index k = first + i, id = corpus_.size();
          if constexpr (kStructured) {
            const InputView v = imports_.view(k);
            corpus_.add_cells(v.floats_data(), v.tokens_data(), imports_.coverage(k).data(), -1, id, 0, st.executions);
          } else {
            corpus_.add(imports_.input(k).data(), imports_.coverage(k).data(), -1, id, 0, st.executions);
          }
          ++added;
        }
      }
      reshape();  // empty for the next batch
      if (added == 0) return stop;
      st.imported += added;
      update_stats(st);
      return any_of_hooks([&](auto& c) { return detail::call_on_corpus(c, corpus_, st); }, callbacks...) || stop;
    } else {
      (void)st;
      return false;
    }
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

  void check_seeds(const Eigen::Ref<const RowMatrix>& seeds) const {
    if (seeds.rows() == 0) detail::fail("Fuzzer::run(): no seeds (the seed matrix has 0 rows)");
    if (seeds.cols() != model_.input_dim())
      detail::fail("Fuzzer::run(): seeds have ", seeds.cols(), " columns, the model takes ", model_.input_dim(),
                   " inputs per row");
    if (!detail::all_finite(seeds)) {
      for (Index r = 0; r < seeds.rows(); ++r)
        for (Index c = 0; c < seeds.cols(); ++c)
          if (!detail::is_finite(seeds(r, c)))
            detail::fail("Fuzzer::run(): seed ", r, " element ", c, " is ", seeds(r, c), " (seeds must be finite)");
    }
    if constexpr (detail::has_check_seeds<Mutator>::value) mutator_.check_seeds(seeds);
  }

  bool budget_spent(FuzzStats& st, std::uint64_t offset) {
    if (options_.max_executions > 0 && st.executions - offset >= options_.max_executions) return true;
    if (options_.max_iterations > 0 && st.iterations >= options_.max_iterations) return true;
    if (options_.max_seconds > 0 && seconds_since(start_) >= options_.max_seconds) return true;
    return false;
  }

  // Records the rows the objective hit (hits_), in row order; row r was execution
  // `first_execution + r + 1`. With recheck_findings, the hits of a batch are first re-evaluated
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
    if (options_.recheck_findings) {
      Objective objective = objective_;
      if constexpr (kStructured) {
        if (recheck_sbatch_.rows() != n || recheck_sbatch_.layout() != rows.layout())
          recheck_sbatch_.reserve(rows.layout(), n);
        for (Index j = 0; j < n; ++j)
          recheck_sbatch_.set_row(j, rows.value(hit_rows_[static_cast<std::size_t>(std::min(j, k - 1))]));
        model_.evaluate(static_cast<const InputBatch&>(recheck_sbatch_), recheck_out_);
        detail::run_objective(objective, recheck_sbatch_, recheck_out_, recheck_hits_);
      } else {
        recheck_batch_.resize(n, rows.cols());
        for (Index j = 0; j < n; ++j)
          recheck_batch_.row(j) = rows.row(hit_rows_[static_cast<std::size_t>(std::min(j, k - 1))]);
        model_.evaluate(recheck_batch_, recheck_out_);
        detail::run_objective(objective, recheck_batch_, recheck_out_, recheck_hits_);
      }
    }
    for (Index j = 0; j < k; ++j) {
      if (options_.max_findings > 0 && st.findings >= options_.max_findings) return true;
      const Index r = hit_rows_[static_cast<std::size_t>(j)];
      if (options_.recheck_findings && !(recheck_hits_.size() > j && recheck_hits_(j))) {
        ++st.unconfirmed;
        continue;
      }
      Finding f;
      if constexpr (kStructured)
        f.value = rows.value(r);
      else
        f.input = rows.row(r);
      f.root = root_of(r);
      f.parent = parent;
      f.depth = depth;
      f.execution = first_execution + static_cast<std::uint64_t>(r) + 1;
      f.what = detail::describe_objective(objective_, out_, r);
      result.findings.push_back(std::move(f));
      st.findings = static_cast<Index>(result.findings.size());
      if (any_of_hooks([&](auto& c) { return detail::call_on_finding(c, result.findings.back(), st); }, callbacks...))
        return true;
    }
    return options_.max_findings > 0 && st.findings >= options_.max_findings;
  }

  void update_stats(FuzzStats& st) {
    corpus_.set_executions(st.executions);
    st.seconds = seconds_since(start_);
    st.executions_per_second = st.seconds > 0 ? static_cast<double>(st.executions) / st.seconds : 0;
    st.corpus_size = corpus_.size();
    st.coverage_size = coverage_.size();
    if constexpr (detail::has_threshold<Coverage>::value)
      st.coverage_radius = static_cast<float>(coverage_.threshold());
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
  Corpus imports_;        // on_import(): elements handed over, shaped like corpus_
  RowMatrix import_cov_;  // their coverage vectors, a block at a time
  Mask import_new_;
  Output out_, recheck_out_;
  RowMatrix batch_, recheck_batch_;
  InputBatch sbatch_, recheck_sbatch_;  // structured inputs
  Mask recheck_hits_;
  Mask hits_, is_new_;
  Eigen::VectorXf fitness_;  // the current batch's fitness (WithFitness objectives)
  float best_fitness_ = std::numeric_limits<float>::quiet_NaN();
  std::vector<Index> hit_rows_;  // rows of the current batch the objective hit
  Clock::time_point start_, last_new_;
  // run()/resume() in progress. The flag belongs to the run, not to the fuzzer's value: a copy
  // (one taken inside a callback, mid-run) is not running, and assigning to a fuzzer keeps its own.
  struct RunningFlag {
    bool on = false;
    RunningFlag() = default;
    RunningFlag(const RunningFlag&) noexcept {}
    RunningFlag& operator=(const RunningFlag&) noexcept { return *this; }
  };
  RunningFlag running_;
};

/// Builds a Fuzzer with the default policies (see Fuzzer) and the given options.
template <typename Model>
Fuzzer<Model> make_fuzzer(Model model, FuzzOptions options) {
  return Fuzzer<Model>(std::move(model), RecentSampler(), GaussianMutator(), CalibratedCoverage(), NonFiniteObjective(),
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
