// SPDX-License-Identifier: MIT
// EXPECT: Objective must provide `void check
#include "../support/planted.hpp"
struct NotAnObjective {
  int check(double) { return 0; }
};
int main() {
  nnfuzz::Fuzzer<nnfuzz_test::PlantedModel, nnfuzz::UniformSampler, nnfuzz::GaussianMutator, nnfuzz::NoCoverage,
                 NotAnObjective>
      f(nnfuzz_test::PlantedModel{});
}
