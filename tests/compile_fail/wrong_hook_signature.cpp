// SPDX-License-Identifier: MIT
// EXPECT: callback member on_finding has the wrong parameters
#include "../support/planted.hpp"
// The right name with the wrong parameters is not a hook either.
struct Logger {
  void on_finding(const nnfuzz::Finding&) {}
  void on_end(const nnfuzz::FuzzStats&) {}
};
int main() {
  nnfuzz::Fuzzer<nnfuzz_test::PlantedModel> f(nnfuzz_test::PlantedModel{});
  Logger log;
  f.run(nnfuzz_test::planted_seeds(), log);
}
