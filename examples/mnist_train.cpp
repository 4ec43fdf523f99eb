// SPDX-License-Identifier: MIT
// Trains (or loads cached) the MNIST models of the examples and prints their test accuracy:
// TensorFuzz's NaN recipe, its quantization recipe, and a well-trained Adam model.
//
//   mnist_train --data data/mnist --scale pm1 --recipes tf-nan,tf-quant,adam
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include "mnist_common.hpp"

#include <CLI/CLI.hpp>

#include <chrono>

int main(int argc, char** argv) {
  CLI::App app{"Train (or load cached) the MNIST models nnfuzz's examples fuzz"};
  std::string data_dir = "data/mnist", models_dir = "out/models";
  ex::Scale scale;
  std::vector<std::string> recipes{"tf-nan", "tf-quant", "adam"};
  app.add_option("--data", data_dir, "MNIST-format directory (train-*/t10k-* IDX files, raw or .gz)")
      ->capture_default_str();
  app.add_option("--models", models_dir, "where trained models are cached")->capture_default_str();
  app.add_option("--scale", scale.name, "pixel scale: 01 = [0,1], pm1 = [-1,1] (TensorFuzz)")->capture_default_str();
  app.add_option("--recipes", recipes, "recipes to train: tf-nan, tf-quant, adam")
      ->delimiter(',')
      ->capture_default_str();
  nnfuzz::Index steps = 0;
  app.add_option("--train-steps", steps, "override the recipes' training steps (0 = recipe; for smoke tests)")
      ->transform(ex::integer_count<std::decay_t<decltype(steps)>>())
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    scale.validate();
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
