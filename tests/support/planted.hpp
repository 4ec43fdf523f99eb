// SPDX-License-Identifier: MIT
// A tiny model with a planted bug, for loop tests (libFuzzer style).
#pragma once

#include <nnfuzz/nnfuzz.hpp>

#include <cmath>
#include <utility>
#include <vector>

namespace nnfuzz_test {

using nnfuzz::Index;
using nnfuzz::RowMatrix;

/// s = mean of the input; the output y = sqrt((s - lo)(s - hi)) is NaN exactly when s lies in
/// the narrow band (lo, hi), far from seeds near 0.1. Coverage is s itself (one number).
/// Random search around a seed moves s by ~sigma/sqrt(dim): it never reaches the band.
/// CGF walks s up the corpus, generation after generation.
struct PlantedModel {
  struct Output {
    RowMatrix coverage;  // B x 1: s
    RowMatrix y;         // B x 1
    template <class F>
    void for_each_tensor(F&& f) const {
      f("coverage", coverage);
      f("y", y);
    }
  };
  Index dim = 16;
  float lo = 0.80f, hi = 0.83f;
  Index input_dim() const { return dim; }
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) const {
    out.coverage = batch.rowwise().mean();
    out.y = ((out.coverage.array() - lo) * (out.coverage.array() - hi)).sqrt().matrix();
  }
};

inline RowMatrix planted_seeds(Index n = 4, Index dim = 16) { return RowMatrix::Constant(n, dim, 0.1f); }

/// A NaN reached through a probability underflowing, as in TensorFuzz's model: s = mean of the
/// input, logits (60 s, -60 s), TensorFuzz's unsafe softmax and cross entropy. The second
/// probability, e^(-120 s), underflows to exactly 0 once s passes ~0.861, and the cross entropy
/// −Σ y·log p becomes 0·(−inf) = NaN. Seeds near 0.1 are far from it; coverage is s.
struct SoftmaxBandModel {
  struct Output {
    RowMatrix coverage, logits, softmax, cross_entropy;
    template <class F>
    void for_each_tensor(F&& f) const {
      f("logits", logits);
      f("softmax", softmax);
      f("cross_entropy", cross_entropy);
    }
  };
  Index input_dim() const { return 16; }
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) const {
    const Index n = batch.rows();
    out.coverage = batch.rowwise().mean();
    out.logits.resize(n, 2);
    out.logits.col(0) = 60.0f * out.coverage.col(0);
    out.logits.col(1) = -60.0f * out.coverage.col(0);
    out.softmax = out.logits.array().exp().matrix();
    out.softmax.array().colwise() /= out.softmax.array().rowwise().sum();
    out.cross_entropy.resize(n, 1);
    for (Index r = 0; r < n; ++r) {
      const Index label = out.logits(r, 0) >= out.logits(r, 1) ? 0 : 1;
      float ce = 0;
      for (Index c = 0; c < 2; ++c) ce -= (c == label ? 1.0f : 0.0f) * std::log(out.softmax(r, c));
      out.cross_entropy(r, 0) = ce;
    }
  }
};

/// planted_seeds() with seed 3 inside the NaN band: nearly every mutant of it fires, all one bug
/// ("non-finite in 'y'"), and every campaign from these seeds finds that seed's input first.
inline RowMatrix planted_nan_seeds() {
  RowMatrix s = planted_seeds();
  s.row(3).setConstant(0.815f);
  return s;
}

/// A fuzzer of PlantedModel that collects every finding of NonFiniteObjective (max_findings 0),
/// in batches of 50, with KdTreeCoverage(radius).
inline auto planted_nan_fuzzer(std::uint64_t seed, std::uint64_t executions, float radius = 0.005f) {
  nnfuzz::FuzzOptions o;
  o.batch_size = 50;
  o.max_executions = executions;
  o.max_findings = 0;
  o.seed = seed;
  return nnfuzz::make_fuzzer(PlantedModel{}, nnfuzz::RecentSampler(), nnfuzz::GaussianMutator(0.05f),
                             nnfuzz::KdTreeCoverage(radius), nnfuzz::NonFiniteObjective(), o);
}

/// A planted token model: a sequence of ids in [0, 10) (at most 12) and 6 floats; its objective
/// (planted_tokens_fire) fires only when the sequence holds both 3 and 7 (the floats do nothing).
struct PlantedTokenModel {
  struct Output {
    RowMatrix coverage;      // B x 1: the sequence's length
    std::vector<char> both;  // holds both 3 and 7
  };
  nnfuzz::InputLayout input_layout() const { return nnfuzz::InputLayout().tokens("tokens", 10, 12).floats("noise", 6); }
  void evaluate(const nnfuzz::InputBatch& b, Output& out) const {
    out.coverage.setZero(b.rows(), 1);
    out.both.assign(static_cast<std::size_t>(b.rows()), 0);
    for (Index r = 0; r < b.rows(); ++r) {
      bool three = false, seven = false;
      for (Index i = 0; i < b.length(0, r); ++i) {
        three |= b.ids(0, r)[i] == 3;
        seven |= b.ids(0, r)[i] == 7;
      }
      out.both[static_cast<std::size_t>(r)] = three && seven;
      out.coverage(r, 0) = static_cast<float>(b.length(0, r));
    }
  }
};
/// PlantedTokenModel's objective: the row holds both 3 and 7 (a functor: a function pointer as
/// the Objective would trip -Wshadow on Fuzzer::objective()).
struct PlantedTokensFire {
  bool operator()(const PlantedTokenModel::Output& out, Index r) const {
    return out.both[static_cast<std::size_t>(r)] != 0;
  }
};
/// An input of PlantedTokenModel: these ids, these floats (the rest 0).
inline nnfuzz::InputValue planted_value(std::vector<nnfuzz::TokenId> ids, std::vector<float> noise) {
  nnfuzz::InputValue v(PlantedTokenModel{}.input_layout());
  v.tokens[0] = std::move(ids);
  for (std::size_t i = 0; i < noise.size(); ++i) v.floats[1](static_cast<Index>(i)) = noise[i];
  return v;
}

/// A fuzzer of PlantedTokenModel as the minimisation tests run it: uniform sampling, structured
/// mutations of up to 4 edits (half of them on the floats), no coverage, PlantedTokensFire.
inline auto planted_token_fuzzer(const nnfuzz::FuzzOptions& fo) {
  nnfuzz::StructuredMutatorOptions mo;
  mo.max_edits = 4;
  mo.float_fraction = 0.5f;
  return nnfuzz::make_fuzzer(PlantedTokenModel{}, nnfuzz::UniformSampler(), nnfuzz::StructuredMutator(mo),
                             nnfuzz::NoCoverage(), PlantedTokensFire(), fo);
}
/// PlantedTokenModel's seed of the minimisation tests: 0 1 2 4 5 6, no 3 or 7; floats all 0.
inline std::vector<nnfuzz::InputValue> planted_token_seeds() {
  return {planted_value({0, 1, 2, 4, 5, 6}, {0, 0, 0, 0, 0, 0})};
}

}  // namespace nnfuzz_test
