// SPDX-License-Identifier: MIT
// A user's program: fuzz an ONNX network run by OpenCV DNN for a NaN (nnfuzz's OpenCV adapter,
// from the installed package). Exits 0 only if it finds the NaN planted in the model
// (tools/train_torch_mnist.py --test-models writes planted-nan.onnx).
//
// Usage: engine_app <planted-nan.onnx>
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/adapters/opencv_dnn.hpp>

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: engine_app <planted-nan.onnx>\n";
    return 2;
  }
  try {
    nnfuzz::OpenCvDnnOptions o;
    o.input_shape = {784};
    o.select.coverage = {"logits"};
    o.select.reduce = nnfuzz::CoverageReduce::sum_abs;  // TensorFuzz's coverage: Σ|logits|
    o.select.outputs = {"softmax", "cross_entropy"};
    nnfuzz::FuzzOptions options;
    options.max_executions = 5000;
    options.seed = 1;
    auto fuzzer = nnfuzz::make_fuzzer(nnfuzz::OpenCvDnnModel(argv[1], o), nnfuzz::RecentSampler(),
                                      nnfuzz::GaussianMutator(0.1f, {0.0f, 1.0f}), nnfuzz::KdTreeCoverage(0.707f),
                                      nnfuzz::NonFiniteObjective(), options);
    const nnfuzz::FuzzResult r = fuzzer.run(nnfuzz::RowMatrix::Zero(2, 784));
    if (!r.found()) {
      std::cerr << "engine_app: no NaN found in " << r.stats.executions << " executions\n";
      return 1;
    }
    std::cout << "engine_app: " << r.findings[0].what << " at execution " << r.findings[0].execution << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "engine_app: " << e.what() << "\n";
    return 1;
  }
}
