// SPDX-License-Identifier: MIT
// EXPECT: Mutator must provide `void mutate
#include "../support/planted.hpp"
struct NoMutate {
  void mutate(int) {}
};
int main() {
  nnfuzz::Fuzzer<nnfuzz_test::PlantedModel, nnfuzz::UniformSampler, NoMutate> f(nnfuzz_test::PlantedModel{});
}
