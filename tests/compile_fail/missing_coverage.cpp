// SPDX-License-Identifier: MIT
// EXPECT: Model::Output must provide a member `coverage`
#include <nnfuzz/nnfuzz.hpp>
struct NoCoverageVector {
  struct Output {
    nnfuzz::RowMatrix logits;
  };
  nnfuzz::Index input_dim() const { return 4; }
  void evaluate(const Eigen::Ref<const nnfuzz::RowMatrix>&, Output&) {}
};
int main() { nnfuzz::Fuzzer<NoCoverageVector> f(NoCoverageVector{}); }
