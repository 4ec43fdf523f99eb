// SPDX-License-Identifier: MIT
// What the adapter tests share: where the test models are, skipping without them, random batches.
#pragma once

#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/adapters/named_outputs.hpp>
#include <nnfuzz/regression/localize.hpp>
#include <nnfuzz/targets/version_pair.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace adapter_test {

/// A file of tools/train_torch_mnist.py --test-models: in $NNFUZZ_ADAPTER_MODELS, else in the
/// directory the build's fixture writes (NNFUZZ_ADAPTER_MODELS, set by tests/adapters/CMakeLists.txt).
inline std::string model_path(const std::string& file) {
  const char* env = std::getenv("NNFUZZ_ADAPTER_MODELS");
  return std::string(env ? env : NNFUZZ_ADAPTER_MODELS) + "/" + file;
}

/// True when the model file is there; otherwise says why the test does not run.
inline bool have(const std::string& file) {
  if (std::filesystem::exists(model_path(file))) return true;
  WARN("skipped: " << model_path(file)
                   << " is missing (run tools/train_torch_mnist.py --test-models <dir>; needs python3-torch, "
                      "python3-onnx)");
  return false;
}

/// `rows` MNIST-sized inputs, uniform in [0, 1].
inline nnfuzz::RowMatrix random_batch(nnfuzz::Index rows, std::uint64_t seed) {
  nnfuzz::Rng rng(seed);
  nnfuzz::RowMatrix x(rows, 784);
  rng.fill_uniform(x.data(), x.size(), 0.0f, 1.0f);
  return x;
}

/// The layers release-v1/-v2 (tools/train_torch_mnist.py --test-models) export, in the order
/// computed: EngineOutputs::layers for them.
inline std::vector<std::string> release_layers() { return {"dense1", "relu1", "dense2", "relu2", "logits"}; }

/// An engine's options for release-v1/-v2: N x 784 inputs, the logits as coverage, every layer
/// named (EngineOutputs::layers).
template <typename Options>
Options release_options() {
  Options o;
  o.input_shape = {784};
  o.select.coverage = {"logits"};
  o.select.layers = release_layers();
  return o;
}

/// Checks that for_each_tensor visits release_layers() in order, each with `rows` rows, and that
/// OutputByName reads the logits (and names the outputs there are for a name that is not one).
inline void check_layer_order(const nnfuzz::NamedOutputs& out, nnfuzz::Index rows) {
  std::vector<std::string> seen;
  out.for_each_tensor([&](const char* name, const nnfuzz::RowMatrix& t) {
    seen.emplace_back(name);
    CHECK(t.rows() == rows);
  });
  CHECK(seen == release_layers());
  CHECK(out["relu1"].isApprox(out["dense1"].cwiseMax(0.0f), 1e-6f));  // dense1: before the ReLU
  CHECK(out["dense1"].minCoeff() < 0);
  CHECK(&nnfuzz::OutputByName{"logits"}(out) == &out["logits"]);
  CHECK_THROWS_WITH(nnfuzz::OutputByName{"probs"}(out),
                    Catch::Contains("no output 'probs'") && Catch::Contains("dense2"));
}

/// Two releases (release-v1 and release-v2: v1 with its second layer perturbed) as a VersionPair
/// of adapter models: fuzzed with DisagreementObjective, every finding must part at dense2, the
/// layers before it equal bit for bit.
template <typename Model>
void check_releases_part_at_dense2(Model v1, Model v2) {
  nnfuzz::VersionPair pair(std::move(v1), std::move(v2), nnfuzz::OutputByName{"logits"});
  static_assert(nnfuzz::can_localize<typename decltype(pair)::Output>(), "adapter pairs localise");
  nnfuzz::FuzzOptions o;
  o.max_executions = 3000;
  o.max_findings = 3;
  o.seed = 1;
  auto fuzzer = nnfuzz::make_fuzzer(pair, nnfuzz::RecentSampler(), nnfuzz::GaussianMutator(0.1f, {0.0f, 1.0f}),
                                    nnfuzz::KdTreeCoverage(0.5f), nnfuzz::DisagreementObjective(), o);
  const nnfuzz::FuzzResult r = fuzzer.run(random_batch(4, 11));
  REQUIRE(r.found());
  const nnfuzz::TensorTolerances tol(nnfuzz::Tolerance::float32(1e-5, 1e-4));
  const std::vector<nnfuzz::Localization> where = nnfuzz::localize_findings(pair, r.findings, tol);
  REQUIRE(where.size() == r.findings.size());
  for (const nnfuzz::Localization& l : where) {
    CHECK(l.first_tensor() == "dense2");
    REQUIRE(l.tensors.size() == 5);
    CHECK(l.tensors[0].name == "dense1");
    CHECK(l.tensors[0].error.max_units == 0);  // the same first layer, the same engine: bit for bit
    CHECK(l.tensors[1].error.max_units == 0);
  }
  const std::vector<nnfuzz::DivergenceGroup> groups = nnfuzz::group_by_first_tensor(where);
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].tensor == "dense2");
  CHECK(groups[0].count == r.findings.size());
}

}  // namespace adapter_test
