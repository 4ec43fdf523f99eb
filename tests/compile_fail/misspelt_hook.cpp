// SPDX-License-Identifier: MIT
// EXPECT: did you mean on_finding
#include "../support/planted.hpp"
// A user's callback with a misspelt hook: it must not be silently ignored.
struct Logger {
  void on_batch(const nnfuzz::FuzzStats&) {}
  void on_findings(const nnfuzz::Finding&, const nnfuzz::FuzzStats&) {}
};
int main() {
  nnfuzz::Fuzzer<nnfuzz_test::PlantedModel> f(nnfuzz_test::PlantedModel{});
  Logger log;
  f.run(nnfuzz_test::planted_seeds(), log);
}
