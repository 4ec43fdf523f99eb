// SPDX-License-Identifier: MIT
// EXPECT: member `fitness` cannot be called as `float fitness\(const Output& out
#include "../support/planted.hpp"
// A user's objective whose fitness takes the wrong arguments (no row): without the check it
// would be silently ignored and the search would run unguided.
struct CloseToBand {
  template <typename Output>
  bool operator()(const Output& out, nnfuzz::Index row) const {
    return !(out.y(row, 0) == out.y(row, 0));
  }
  float fitness(const nnfuzz_test::PlantedModel::Output& out) const { return out.y(0, 0); }
};
int main() {
  auto f = nnfuzz::make_fuzzer(nnfuzz_test::PlantedModel{}, nnfuzz::FuzzOptions()).with_objective(CloseToBand{});
  (void)f;
}
