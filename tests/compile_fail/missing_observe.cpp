// SPDX-License-Identifier: MIT
// EXPECT: Coverage must provide `void observe
#include "../support/planted.hpp"
struct NoObserve {
  void reset(nnfuzz::Index) {}
  nnfuzz::Index size() const { return 0; }
};
int main() {
  nnfuzz::Fuzzer<nnfuzz_test::PlantedModel, nnfuzz::UniformSampler, nnfuzz::GaussianMutator, NoObserve> f(
      nnfuzz_test::PlantedModel{});
}
