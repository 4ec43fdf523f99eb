// SPDX-License-Identifier: MIT
// EXPECT: VersionPair cannot read the OLD model's logits
#include <nnfuzz/targets/version_pair.hpp>
struct NoLogits {
  struct Output {
    nnfuzz::RowMatrix probabilities;  // not `logits`, and no extractor given
  };
  nnfuzz::Index input_dim() const { return 2; }
  void evaluate(const Eigen::Ref<const nnfuzz::RowMatrix>&, Output&) const {}
};
int main() { nnfuzz::VersionPair<NoLogits, NoLogits> pair(NoLogits{}, NoLogits{}); }
