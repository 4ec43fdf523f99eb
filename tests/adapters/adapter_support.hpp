// SPDX-License-Identifier: MIT
// What the adapter tests share: where the test models are, skipping without them, random batches.
#pragma once

#include <nnfuzz/nnfuzz.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

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

}  // namespace adapter_test
