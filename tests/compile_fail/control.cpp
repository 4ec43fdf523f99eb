// SPDX-License-Identifier: MIT
// The control of the compile-fail tests (fmt's compile-error-test does the same): the constructs
// the other cases get wrong, written right, built the same way. It must compile; if it does
// not, the compile-fail tests prove nothing (their expected message could come from elsewhere).
#include <nnfuzz/objectives.hpp>
#include <nnfuzz/targets/version_pair.hpp>

#include "../support/planted.hpp"

struct Logger {  // a callback: hooks with the right names and parameters
  void on_batch(const nnfuzz::FuzzStats&) {}
  void on_finding(const nnfuzz::Finding&, const nnfuzz::FuzzStats&) {}
};
struct Counter {  // a stage
  int batches = 0;
  template <typename Context>
  void perform(Context& ctx) {
    batches += ctx.corpus().size() > 0;
  }
};
struct Scorer {  // a version with logits, for VersionPair
  struct Output {
    nnfuzz::RowMatrix logits;
  };
  nnfuzz::Index input_dim() const { return 16; }
  void evaluate(const Eigen::Ref<const nnfuzz::RowMatrix>& b, Output& out) const { out.logits = b.leftCols(2); }
};
struct CloseToBand {  // an objective with its own fitness, spelt right
  template <typename Output>
  bool operator()(const Output& out, nnfuzz::Index row) const {
    return !(out.y(row, 0) == out.y(row, 0));
  }
  float fitness(const nnfuzz_test::PlantedModel::Output& out, nnfuzz::Index row) const { return -out.y(row, 0); }
};
int main() {
  nnfuzz::Fuzzer<nnfuzz_test::PlantedModel> f(nnfuzz_test::PlantedModel{});
  Logger log;
  Counter stage;
  f.run(nnfuzz_test::planted_seeds(), log, stage);
  auto pair = nnfuzz::make_fuzzer(
      nnfuzz::VersionPair<Scorer, Scorer>(Scorer{}, Scorer{}), nnfuzz::RecentSampler(), nnfuzz::GaussianMutator(),
      nnfuzz::KdTreeCoverage(0.1f),
      nnfuzz::any_of(nnfuzz::DisagreementObjective(), nnfuzz::OutputDistanceObjective(0.5f)), nnfuzz::FuzzOptions());
  (void)pair;
  auto guided = nnfuzz::make_fuzzer(nnfuzz_test::PlantedModel{}, nnfuzz::FuzzOptions()).with_objective(CloseToBand{});
  static_assert(decltype(guided)::kHasFitness, "the control's objective has a fitness");
}
