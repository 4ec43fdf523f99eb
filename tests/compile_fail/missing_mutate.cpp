// SPDX-License-Identifier: MIT
// EXPECT: the Mutator does not fit the model.s input space
#include "../support/planted.hpp"
struct NoMutate {
  void mutate(int) {}
};
int main() {
  nnfuzz::Fuzzer<nnfuzz_test::PlantedModel, nnfuzz::UniformSampler, NoMutate> f(nnfuzz_test::PlantedModel{});
}
