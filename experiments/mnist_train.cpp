// SPDX-License-Identifier: MIT
// Trains (or loads cached) the MNIST models of the examples and prints their test accuracy:
// TensorFuzz's NaN recipe, its quantization recipe, and a well-trained Adam model.
//
//   mnist_train --data data/mnist --scale pm1 --recipes tf-nan,tf-quant,adam
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include "mnist_common.hpp"
#include "shared/flags.hpp"

#include <CLI/CLI.hpp>

#include <chrono>

int main(int argc, char** argv) {
  CLI::App app{"Train (or load cached) the MNIST models nnfuzz's examples fuzz"};
  std::string data_dir = "data/mnist", models_dir = "out/models";
  ex::Scale scale{-1.0f, 1.0f};
  std::vector<std::string> recipes{"tf-nan", "tf-quant", "adam"};
  nnfuzz_flags::data(app, data_dir);
  nnfuzz_flags::models(app, models_dir, "where trained models are cached");
  nnfuzz_flags::scale(app, scale);
  app.add_option("--recipes", recipes, "recipes to train: tf-nan, tf-quant, adam")
      ->delimiter(',')
      ->capture_default_str();
  nnfuzz::Index steps = 0;
  nnfuzz_flags::train_steps(app, steps);
  CLI11_PARSE(app, argc, argv);
  try {
    ex::pin_eigen_cache_sizes();  // NNFUZZ_EIGEN_CACHE_SIZES (scripts/reproduce.sh --quick)
    ex::require_named(scale);
    const ex::Data data = ex::load_data(data_dir, scale);
    std::cout << "data " << data.name << ": " << data.train.images.rows() << " train, " << data.test.images.rows()
              << " test images\n";
    for (const auto& name : recipes) ex::train_or_load(ex::recipe(name, steps), data, scale, models_dir, std::cout);
    ex::check_stdout();
  } catch (const std::exception& e) {
    std::cerr << "mnist_train: " << e.what() << "\n";
    return 1;
  }
}
