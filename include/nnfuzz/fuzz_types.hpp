// SPDX-License-Identifier: MIT
// nnfuzz: the plain types of a fuzz run: its options, a finding, the counters and the result.
// Callbacks, campaign files and the sync directory include this, not the loop (fuzzer.hpp).
#pragma once

#include "input.hpp"
#include "detail/config.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace nnfuzz {

/// A yes/no option whose default the composed policies decide (FuzzOptions::keep_fitter).
/// Assign `true` or `false` to decide it yourself, AutoFlag::automatic() to hand it back; read it
/// with value_or() (it does not convert to bool, so that "automatic" is never read as "off").
class AutoFlag {
 public:
  /// Automatic: the policies decide.
  constexpr AutoFlag() = default;
  /// Decided: on or off (implicit, so that `options.keep_fitter = false;` reads as it says).
  constexpr AutoFlag(bool on) : state_(on ? State::on : State::off) {}  // NOLINT(google-explicit-constructor)
  /// The automatic value (the default).
  static constexpr AutoFlag automatic() { return AutoFlag(); }
  /// True unless true or false was assigned.
  constexpr bool is_automatic() const { return state_ == State::automatic; }
  /// The value assigned, or `automatic_value` when none was.
  constexpr bool value_or(bool automatic_value) const {
    return state_ == State::automatic ? automatic_value : state_ == State::on;
  }
  /// Same state (automatic, on or off).
  friend constexpr bool operator==(AutoFlag a, AutoFlag b) { return a.state_ == b.state_; }
  /// Different state.
  friend constexpr bool operator!=(AutoFlag a, AutoFlag b) { return a.state_ != b.state_; }

 private:
  enum class State : unsigned char { automatic, off, on };
  State state_ = State::automatic;
};

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
  /// When the objective has a fitness (every stock objective has one): also keep a mutant whose
  /// fitness beats the best so far although its coverage is not new (a fitness frontier joins
  /// the corpus; the coverage policy is not told of it). Automatic (the default): on, except
  /// under a coverage policy that declares itself random search (`static constexpr bool
  /// random_search = true`, as NoCoverage does), where the corpus must stay the seeds. So
  /// NoCoverage alone is TensorFuzz's random search; NoCoverage with `keep_fitter = true` is
  /// fitness-only search (hill climbing on the fitness), and `keep_fitter = false` under a real
  /// coverage is TensorFuzz's CGF. baselines.hpp composes the four by name.
  AutoFlag keep_fitter;
};

/// An input on which the objective fired.
struct Finding {
  RowVector input;              ///< the input itself
  Index root = 0;               ///< index of the seed its chain started from
  Index parent = -1;            ///< corpus id of the element it was mutated from (-1: a seed)
  Index depth = 0;              ///< mutations from the seed (0: the seed itself)
  std::uint64_t execution = 0;  ///< 1-based execution count at which it ran
  std::string what;             ///< what fired, as text (Objective::describe(), or "objective")
  /// What fired, as a name code can read: the tensor (NonFiniteObjective), the word
  /// (BlacklistObjective), the part of a combinator… (Objective::fired(); empty when the
  /// objective does not say). `what` is the sentence for people.
  std::string fired;
  InputValue value;  ///< the input, for models with structured inputs (InputLayout); `input` is empty then

  /// True when the input is structured (held by `value`), false when it is a dense row (`input`).
  bool structured() const { return !value.tokens.empty() || !value.floats.empty(); }
};

/// One part of a finding's input, as code that handles both input kinds reads it (input_parts()).
struct FindingPart {
  InputPart::Kind kind = InputPart::Kind::floats;  ///< floats or token ids
  const float* floats = nullptr;                   ///< float parts: `size` values (else nullptr)
  const TokenId* ids = nullptr;                    ///< token parts: `size` ids (else nullptr)
  std::size_t size = 0;                            ///< values or ids in the part
  bool both = false;  ///< a malformed InputValue slot holding ids and floats (the ids are described)
};

/// The parts of a finding's input, pointing into it: a dense input is one float part (its row);
/// a structured one has a part per slot of Finding::value (a token part where the slot holds ids).
/// The one place that reads `input` or `value` by the input's kind: writers, signatures,
/// distances and messages go through these parts.
inline std::vector<FindingPart> input_parts(const Finding& f) {
  std::vector<FindingPart> parts;
  if (!f.structured()) {
    parts.push_back({InputPart::Kind::floats, f.input.data(), nullptr, static_cast<std::size_t>(f.input.size())});
    return parts;
  }
  const std::size_t n = std::max(f.value.tokens.size(), f.value.floats.size());
  for (std::size_t p = 0; p < n; ++p) {
    const std::vector<TokenId>* ids = p < f.value.tokens.size() ? &f.value.tokens[p] : nullptr;
    const RowVector* xs = p < f.value.floats.size() ? &f.value.floats[p] : nullptr;
    const bool has_floats = xs && xs->size() > 0;
    if (ids && !ids->empty())
      parts.push_back({InputPart::Kind::tokens, nullptr, ids->data(), ids->size(), has_floats});
    else
      parts.push_back({InputPart::Kind::floats, has_floats ? xs->data() : nullptr, nullptr,
                       has_floats ? static_cast<std::size_t>(xs->size()) : 0});
  }
  return parts;
}

/// Counters of a run, updated after every batch.
struct FuzzStats {
  std::uint64_t executions = 0;  ///< model executions (inputs evaluated), seeds included
  std::uint64_t iterations = 0;  ///< batches of mutants evaluated
  /// The execution count the budgets (FuzzOptions::max_executions) count from: 0 for run(),
  /// where the saved session stopped for resume().
  std::uint64_t budget_start = 0;
  double seconds = 0;                ///< wall time since run() started
  double executions_per_second = 0;  ///< executions / seconds
  Index seeds = 0;                   ///< seeds given to run()
  Index corpus_size = 0;             ///< elements in the corpus (seeds included)
  Index findings = 0;                ///< findings collected
  Index unconfirmed = 0;             ///< hits that did not fire again when re-evaluated (dropped)
  Index coverage_size = 0;           ///< vectors the coverage policy holds (Coverage::size())
  Index imported = 0;                ///< elements stages admitted (FuzzContext::admit()) that were new (this session)
  float coverage_radius = 0;         ///< the coverage policy's novelty radius, if it has `radius()` (else 0)
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

}  // namespace nnfuzz
