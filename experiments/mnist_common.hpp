// SPDX-License-Identifier: MIT
// Shared code of the MNIST examples: data, model recipes (train or load cached), pictures, plots,
// checked output files, command-line counts.
#pragma once

#include "shared/scale.hpp"

#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/data/idx.hpp>
#include <nnfuzz/models/mlp_file.hpp>
#include <nnfuzz/models/mlp.hpp>
#include <nnfuzz/targets/mlp_targets.hpp>
#include <nnfuzz/models/train.hpp>
#include <nnfuzz/regression/png.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli_common.hpp"

namespace ex {

using nnfuzz::Index;
using nnfuzz::Mlp;
using nnfuzz::RowMatrix;
namespace fs = std::filesystem;

/// The pixel range (shared/scale.hpp): the drivers train and cache models for 01 and pm1.
using Scale = nnfuzz_flags::Scale;

/// Throws std::invalid_argument unless `scale` is 01 or pm1 (the ranges models are trained for).
inline void require_named(const Scale& scale) {
  if (!scale.named())
    throw std::invalid_argument("--scale must be 01 or pm1 (the ranges the models are trained for), got '" +
                                scale.name() + "'");
}

/// A data set in memory, scaled.
struct Data {
  std::string name;  ///< directory's base name (mnist, fashion-mnist)
  nnfuzz::Dataset train, test;
};

inline Data load_data(const std::string& dir, const Scale& scale) {
  Data d;
  d.name = fs::path(dir).filename().string();
  if (d.name.empty()) d.name = fs::path(dir).parent_path().filename().string();
  d.train = nnfuzz::load_mnist_dir(dir, nnfuzz::Split::train);
  d.test = nnfuzz::load_mnist_dir(dir, nnfuzz::Split::test);
  scale.apply(d.train.images);
  scale.apply(d.test.images);
  return d;
}

/// The model recipes: TensorFuzz's two, and a well-trained one.
struct Recipe {
  std::string name;  ///< tf-nan, tf-quant, adam
  std::vector<Index> sizes{784, 200, 100, 10};
  nnfuzz::TrainOptions train;
  enum class Init { uniform, truncated_normal, he } init = Init::uniform;
  float init_scale = 0.25f;
};

/// The recipe called `name`; `steps` > 0 overrides its training steps (the model file name then
/// says so, so that a shortened model never masquerades as the recipe's).
inline Recipe recipe(const std::string& name, Index steps = 0) {
  Recipe r;
  r.name = name;
  r.train.batch_size = 100;
  r.train.seed = 1;
  if (name == "tf-nan") {  // U(±0.25), SGD 0.01, 35,000 steps
    r.init = Recipe::Init::uniform;
    r.init_scale = 0.25f;
    r.train.optimizer = nnfuzz::Optimizer::sgd;
    r.train.learning_rate = 0.01f;
    r.train.steps = 35000;
  } else if (name == "tf-quant") {  // truncated normal 0.01, SGD 0.01, 10,000 steps
    r.init = Recipe::Init::truncated_normal;
    r.init_scale = 0.01f;
    r.train.optimizer = nnfuzz::Optimizer::sgd;
    r.train.learning_rate = 0.01f;
    r.train.steps = 10000;
  } else if (name == "adam") {  // He init, Adam 1e-3 with a little weight decay
    r.init = Recipe::Init::he;
    r.train.optimizer = nnfuzz::Optimizer::adam;
    r.train.learning_rate = 1e-3f;
    r.train.weight_decay = 1e-4f;
    r.train.steps = 8000;
  } else {
    throw std::invalid_argument("--recipe must be tf-nan, tf-quant or adam, got '" + name + "'");
  }
  if (steps > 0) {
    r.train.steps = steps;
    r.name += "-" + std::to_string(steps) + "steps";
  }
  return r;
}

/// Trains a model by recipe, or loads it from the cache (models_dir/<data>-<recipe>-<scale>.bin).
inline Mlp<float> train_or_load(const Recipe& r, const Data& data, const Scale& scale, const std::string& models_dir,
                                std::ostream& log) {
  fs::create_directories(models_dir);
  const std::string path = (fs::path(models_dir) / (data.name + "-" + r.name + "-" + scale.name() + ".bin")).string();
  Mlp<float> net;
  if (fs::exists(path)) {
    net = nnfuzz::load_mlp(path);
    log << "model " << r.name << ": loaded " << path << "\n";
  } else {
    net = Mlp<float>(r.sizes);
    if (r.init == Recipe::Init::uniform)
      net.init_uniform(r.init_scale, r.train.seed);
    else
      net.init_truncated_normal(r.init == Recipe::Init::he ? 0.0f : r.init_scale, r.train.seed);
    nnfuzz::TrainOptions o = r.train;
    o.progress = &log;
    o.label = "train " + r.name;
    const nnfuzz::TrainReport rep = nnfuzz::train(net, data.train.images, data.train.labels, o);
    nnfuzz::save_mlp(path, net);
    log << "model " << r.name << ": trained in " << rep.seconds << " s, saved " << path << "\n";
  }
  log << "model " << r.name << ": test accuracy " << 100.0 * nnfuzz::accuracy(net, data.test.images, data.test.labels)
      << "% on " << data.test.images.rows() << " " << data.name << " test images (pixels " << scale.name() << ")\n";
  return net;
}

/// Writes seed | found | |found - seed| (magnified to fill the grey range) side by side as a PNG,
/// each panel upscaled `zoom` times (nnfuzz::finding_picture(), the release report's picture
/// without a minimised panel). Pixels are mapped from [lo, hi] to [0, 255].
inline void write_triptych(const std::string& path, const nnfuzz::RowVector& seed, const nnfuzz::RowVector& found,
                           int rows, int cols, float lo, float hi, int zoom = 4) {
  nnfuzz::write_png(path, nnfuzz::finding_picture(seed, found, nnfuzz::RowVector(), {rows, cols, lo, hi, zoom}));
}

/// True when gnuplot is on the PATH.
inline bool have_gnuplot() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

/// Writes a gnuplot script (next to the PNG it makes) and runs it if gnuplot is installed; says so
/// if not. Throws std::runtime_error naming the file if the script cannot be written, or if
/// gnuplot fails or leaves no `png_path` (so a plot that was not written is never taken for one).
inline void gnuplot(const std::string& script_path, const std::string& script, const std::string& png_path,
                    std::ostream& log) {
  write_text_file(script_path, script);
  if (!have_gnuplot()) {
    log << "gnuplot not installed (apt-get install gnuplot-nox): plot skipped, script left in " << script_path << "\n";
    return;
  }
  std::error_code ec;
  fs::remove(png_path, ec);  // a plot left by an earlier run must not pass for this one
  // gnuplot's standard output goes nowhere: a terminal whose output file cannot be opened
  // would write the PNG bytes there.
  const std::string cmd = "gnuplot '" + script_path + "' > /dev/null";
  const int status = std::system(cmd.c_str());
  const bool written = fs::is_regular_file(png_path, ec) && fs::file_size(png_path, ec) > 0 && !ec;
  if (status != 0 || !written)
    throw std::runtime_error("cannot write '" + png_path + "': gnuplot " + (status != 0 ? "failed" : "wrote nothing") +
                             " on '" + script_path + "'");
}

/// Median of a list (NaN when empty).
inline double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace ex
