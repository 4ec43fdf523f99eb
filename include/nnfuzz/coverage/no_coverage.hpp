// SPDX-License-Identifier: MIT
// nnfuzz: NoCoverage — nothing is ever new: random search, the baseline.
#pragma once

#include "../detail/config.hpp"

namespace nnfuzz {

/// Coverage policy under which no mutant is ever new, so the corpus stays the seeds: the fuzz
/// loop becomes random search around the seeds (TensorFuzz's baseline), with the same sampler,
/// mutator, model and objective as a CGF run. It declares itself random search, so
/// FuzzOptions::keep_fitter is off under it unless set to true: then the fitness frontier joins
/// the corpus and the run is fitness-only search (Baseline::fitness_only), not random search.
class NoCoverage {
 public:
  /// Read by the Fuzzer: FuzzOptions::keep_fitter defaults to off (the corpus stays the seeds).
  static constexpr bool random_search = true;
  /// Forgets everything; `dim` is the coverage vector length.
  void reset(Index dim) { dim_ = dim; }
  /// Marks every row as not new.
  void observe(const Eigen::Ref<const RowMatrix>& vectors, Mask& is_new) { is_new.setConstant(vectors.rows(), false); }
  /// Vectors remembered: always 0.
  Index size() const { return 0; }
  /// Coverage vector length given to reset().
  Index dim() const { return dim_; }

 private:
  Index dim_ = 0;
};

}  // namespace nnfuzz
