// SPDX-License-Identifier: MIT
// EXPECT: Model must provide `void evaluate
#include <nnfuzz/nnfuzz.hpp>
struct NoEvaluate {
  struct Output {
    nnfuzz::RowMatrix coverage;
  };
  nnfuzz::Index input_dim() const { return 4; }
};
int main() { nnfuzz::Fuzzer<NoEvaluate> f(NoEvaluate{}); }
