// SPDX-License-Identifier: MIT
// nnfuzz: stages, the work of a run that needs the fuzzer itself (LibAFL's Stage::perform).
//
// Callbacks (callbacks.hpp) are read-only observers: they see the counters, the findings and
// the corpus. A *stage* is any object passed to run()/resume() with a member
//
//     template <typename Context> bool perform(Context& ctx);   // or returning void
//
// called after every batch (after the callbacks' on_batch()); returning true stops the run.
// `ctx` is a FuzzContext: the fuzzer's model, objective, corpus, counters and RNG, plus
//   - ctx.admit(incoming): offers elements found elsewhere (another worker's, a merge) to the
//     coverage policy; the new ones join the corpus as roots of their own (SyncDirectory);
//   - ctx.confirms(finding): re-evaluates a finding in the shape it was found in (the re-check);
//   - ctx.new_findings(): the findings reported since the stage last ran (MinimizeFindings).
// A stage may also define callback hooks; both kinds go in the same argument list, in any order:
//     fuzzer.run(seeds, nnfuzz::ProgressPrinter(std::cerr), sync, minimize_findings);
// The stock stages: SyncDirectory (campaign/sync.hpp), MinimizeFindings (minimize.hpp). The
// loop's own re-check of findings (FuzzOptions::recheck_findings) goes through the same
// confirmation as ctx.confirms().
#pragma once

#include "corpus.hpp"
#include "fuzz_types.hpp"
#include "rng.hpp"

#include <cstddef>
#include <vector>

namespace nnfuzz {

/// A contiguous range of findings (FuzzContext::new_findings()).
struct FindingRange {
  const Finding* first = nullptr;  ///< the first finding of the range
  const Finding* last = nullptr;   ///< one past the last
  /// Iteration.
  const Finding* begin() const { return first; }
  /// Iteration.
  const Finding* end() const { return last; }
  /// Findings in the range.
  std::size_t size() const { return static_cast<std::size_t>(last - first); }
  /// True when the range holds none.
  bool empty() const { return first == last; }
};

/// What a stage sees of the fuzzer during a run: its policies, corpus, counters and RNG, and
/// the two operations that change the run, admit() and confirms(). Built by the fuzzer for each
/// call of perform(); valid during that call only.
template <typename FuzzerT>
class FuzzContext {
 public:
  /// The fuzzer's model.
  auto& model() { return f_.model(); }
  /// The fuzzer's objective (its state is the run's: copy it before evaluating with it).
  auto& objective() { return f_.objective(); }
  /// The corpus as it is now.
  const Corpus& corpus() const { return f_.corpus(); }
  /// The run's counters as of the last batch.
  const FuzzStats& stats() const { return result_.stats; }
  /// The run's options.
  const FuzzOptions& options() const { return f_.options(); }
  /// The run's RNG (drawing from it is part of the run: one seed still gives one run).
  Rng& rng() { return f_.rng_; }
  /// All findings of the run so far, in the order found.
  const std::vector<Finding>& findings() const { return result_.findings; }
  /// The findings reported since this stage last ran.
  FindingRange new_findings() const {
    const Finding* base = result_.findings.data();
    return {base + first_new_, base + result_.findings.size()};
  }
  /// Offers elements found elsewhere, with their coverage vectors (not evaluated again): the
  /// coverage policy decides, and the new ones join the corpus as roots of their own (parent -1,
  /// root = their own id, depth 0, execution = now), counted in FuzzStats::imported. `incoming`
  /// must be shaped like the corpus (Corpus::reset_like()). Throws std::invalid_argument for an
  /// element with a non-finite input or a token outside the layout. Returns the number admitted.
  Index admit(const Corpus& incoming) { return f_.admit(incoming, result_.stats); }
  /// Re-evaluates a finding in a batch of batch_size copies (the shape it was found in) and
  /// tells whether the objective still fires (Fuzzer::replay()).
  bool confirms(const Finding& finding) { return f_.replay(FuzzerT::Space::finding_input(finding)); }

 private:
  friend FuzzerT;
  FuzzContext(FuzzerT& f, FuzzResult& result, std::size_t first_new) : f_(f), result_(result), first_new_(first_new) {}
  FuzzerT& f_;
  FuzzResult& result_;
  std::size_t first_new_;
};

}  // namespace nnfuzz
