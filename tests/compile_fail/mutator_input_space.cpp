// EXPECT: mutator_fits_input_space<nnfuzz::GaussianMutator, nnfuzz::StructuredInputs>
#include "../support/token_model.hpp"
// A dense mutator cannot fill batches of token sequences: the error names both.
int main() {
  nnfuzz::Fuzzer<nnfuzz_test::TokenModel, nnfuzz::RecentSampler, nnfuzz::GaussianMutator> f(nnfuzz_test::TokenModel{});
}
