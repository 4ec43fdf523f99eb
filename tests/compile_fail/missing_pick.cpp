// SPDX-License-Identifier: MIT
// EXPECT: Sampler must provide `Index pick
#include "../support/planted.hpp"
struct NoPick {};
int main() {
  nnfuzz::Fuzzer<nnfuzz_test::PlantedModel, NoPick> f(nnfuzz_test::PlantedModel{}, NoPick{}, nnfuzz::GaussianMutator(),
                                                    nnfuzz::KdTreeCoverage(0.01f));
}
