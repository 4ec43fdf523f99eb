// SPDX-License-Identifier: MIT
// Writes a tiny synthetic MNIST-format directory (IDX files) for the examples' smoke tests:
// 10 classes of 28x28 "digits", each a bright bar at a class-dependent place plus noise.
//   make_tiny_mnist DIR [train=300] [test=100]
#include <nnfuzz/data/idx.hpp>
#include <nnfuzz/rng.hpp>

#include <cstdlib>
#include <iostream>

namespace {
nnfuzz::Dataset make(nnfuzz::Index n, std::uint64_t seed) {
  nnfuzz::Rng rng(seed);
  nnfuzz::Dataset d;
  d.rows = d.cols = 28;
  d.images.resize(n, 784);
  d.labels.resize(n);
  rng.fill_uniform(d.images.data(), d.images.size(), 0.0f, 0.15f);
  for (nnfuzz::Index i = 0; i < n; ++i) {
    const int c = static_cast<int>(rng.uniform_index(10));
    d.labels(i) = c;
    for (int y = 4 + 2 * c; y < 8 + 2 * c; ++y)
      for (int x = 4; x < 24; ++x) d.images(i, y * 28 + x) = 0.8f + 0.2f * static_cast<float>(rng.uniform());
  }
  return d;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: make_tiny_mnist DIR [train] [test]\n";
    return 2;
  }
  try {
    const nnfuzz::Index train = argc > 2 ? std::atol(argv[2]) : 300, test = argc > 3 ? std::atol(argv[3]) : 100;
    nnfuzz::save_mnist_dir(argv[1], nnfuzz::Split::train, make(train, 1));
    nnfuzz::save_mnist_dir(argv[1], nnfuzz::Split::test, make(test, 2));
  } catch (const std::exception& e) {
    std::cerr << "make_tiny_mnist: " << e.what() << "\n";
    return 1;
  }
}
