// SPDX-License-Identifier: MIT
// EXPECT: needs both `std::vector<std::uint8_t> save_state\(\) const` and `void restore_state
#include "../support/planted.hpp"
// Saves a state it cannot take up again: resume() would silently drop it.
struct HalfState : nnfuzz::KdTreeCoverage {
  HalfState() : nnfuzz::KdTreeCoverage(0.01f) {}
  std::vector<std::uint8_t> save_state() const { return {}; }
};
int main() {
  nnfuzz::Fuzzer<nnfuzz_test::PlantedModel, nnfuzz::UniformSampler, nnfuzz::GaussianMutator, HalfState> f(
      nnfuzz_test::PlantedModel{});
}
