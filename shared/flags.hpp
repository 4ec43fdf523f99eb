// SPDX-License-Identifier: MIT
// The flags the nnfuzz command (cli/) and the experiment drivers (experiments/) share, each
// declared once (libFuzzer's FuzzerFlags.def): one spelling, one help text, one check. A program
// adds a flag with nnfuzz_flags::NAME(app, variable) and may append a note saying what the flag
// means there ("per run", "per seed image").
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "integer_count.hpp"
#include "scale.hpp"

#include <nnfuzz/baselines.hpp>

namespace nnfuzz_flags {

/// "random, fitness, tensorfuzz, default": the names of `bs`, comma-separated.
inline std::string baseline_names(const std::vector<nnfuzz::Baseline>& bs) {
  std::string out;
  for (nnfuzz::Baseline b : bs) out += (out.empty() ? "" : ",") + std::string(nnfuzz::baseline_name(b));
  return out;
}

namespace detail {
inline std::string help(const char* text, const std::string& note) {
  return note.empty() ? std::string(text) : std::string(text) + " (" + note + ")";
}
}  // namespace detail

/// --data DIR: a directory of MNIST-format IDX files.
inline CLI::Option* data(CLI::App& app, std::string& v, const std::string& note = "") {
  return app.add_option("--data", v, detail::help("MNIST-format directory (train-*/t10k-* IDX, raw or .gz)", note))
      ->capture_default_str();
}
/// --models DIR: the trained-model cache.
inline CLI::Option* models(CLI::App& app, std::string& v, const std::string& note = "") {
  return app.add_option("--models", v, detail::help("trained-model cache directory", note))->capture_default_str();
}
/// --out DIR: where the driver writes its results.
inline CLI::Option* out(CLI::App& app, std::string& v, const std::string& note = "") {
  return app.add_option("--out", v, detail::help("output directory", note))->capture_default_str();
}
/// --recipe NAME: the model recipe.
inline CLI::Option* recipe(CLI::App& app, std::string& v, const std::string& note = "") {
  return app.add_option("--recipe", v, detail::help("model recipe: tf-nan, tf-quant (TensorFuzz's), adam", note))
      ->capture_default_str();
}
/// The help text of --scale (both forms below).
inline constexpr const char* kScaleHelp =
    "input range: 01 = [0,1], pm1 = [-1,1] (TensorFuzz), or LO,HI; bytes map onto it";
/// Checks a --scale value as it is read (Scale::parse's message).
inline CLI::Validator scale_check() {
  return CLI::Validator(
      [](std::string& text) {
        try {
          Scale::parse(text);
          return std::string();
        } catch (const std::invalid_argument& e) {
          const std::string what = e.what(), prefix = "option --scale: ";  // CLI11 names the option itself
          return what.compare(0, prefix.size(), prefix) == 0 ? what.substr(prefix.size()) : what;
        }
      },
      "SCALE");
}
/// --scale 01|pm1|LO,HI: the input range (shared/scale.hpp), parsed and checked as it is read.
inline CLI::Option* scale(CLI::App& app, Scale& v, const std::string& note = "") {
  return app
      .add_option_function<std::string>(
          "--scale", [&v](const std::string& text) { v = Scale::parse(text); }, detail::help(kScaleHelp, note))
      ->check(scale_check())
      ->default_str(v.name());
}
/// The same, kept as text (a driver whose default depends on other flags); checked as it is read.
inline CLI::Option* scale(CLI::App& app, std::string& v, const std::string& note = "") {
  return app.add_option("--scale", v, detail::help(kScaleHelp, note))->check(scale_check())->capture_default_str();
}
/// --runs N: independent runs per method.
inline CLI::Option* runs(CLI::App& app, int& v, const std::string& note = "") {
  return app.add_option("--runs", v, detail::help("runs per method", note))
      ->transform(integer_count<int>())
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
}
/// --seed N: the master seed every run's seed is mixed from.
template <typename T>
CLI::Option* seed(CLI::App& app, T& v, const std::string& note = "") {
  return app.add_option("--seed", v, detail::help("master RNG seed", note))
      ->transform(integer_count<T>())
      ->capture_default_str();
}
/// --executions N: the execution budget (1e6 and 2.5e5 are accepted; out-of-range counts refused).
template <typename T>
CLI::Option* executions(CLI::App& app, T& v, const std::string& note = "") {
  return app.add_option("--executions", v, detail::help("execution budget", note))
      ->transform(integer_count<T>())
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}
/// --batch N: mutants per model call.
template <typename T>
CLI::Option* batch(CLI::App& app, T& v, const std::string& note = "") {
  return app.add_option("--batch", v, detail::help("mutants per iteration (one model call)", note))
      ->transform(integer_count<T>())
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
}
/// --seeds N: how many inputs seed each campaign.
template <typename T>
CLI::Option* seeds(CLI::App& app, T& v, const std::string& note = "") {
  return app.add_option("--seeds", v, detail::help("seed inputs", note))
      ->transform(integer_count<T>())
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
}
/// --sigma S: the Gaussian noise deviation.
template <typename T>
CLI::Option* sigma(CLI::App& app, T& v, const std::string& note = "") {
  return app.add_option("--sigma", v, detail::help("Gaussian noise deviation, in pixel units", note))
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}
/// --sigma-range R: multi-scale noise.
template <typename T>
CLI::Option* sigma_range(CLI::App& app, T& v, const std::string& note = "") {
  return app
      .add_option(
          "--sigma-range", v,
          detail::help("multi-scale noise: per-mutant sigma log-uniform in [sigma/R, sigma*R] (1 = fixed)", note))
      ->check(CLI::Range(1.0f, 1000.0f))
      ->capture_default_str();
}
/// --radius R: the coverage novelty radius (plain L2).
template <typename T>
CLI::Option* radius(CLI::App& app, T& v, const std::string& note = "") {
  return app
      .add_option("--radius", v,
                  detail::help("coverage novelty radius (plain L2; TensorFuzz's squared 0.5 = 0.707)", note))
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}
/// --eps E[,E...]: L-inf radii around the seed.
inline CLI::Option* eps(CLI::App& app, std::vector<float>& v, const std::string& note = "") {
  return app.add_option("--eps", v, detail::help("L-inf radii around the seed, in pixel units", note))
      ->delimiter(',')
      ->capture_default_str();
}
/// --eps E: one L-inf radius around the seed.
template <typename T, typename = std::enable_if_t<std::is_floating_point<T>::value>>
CLI::Option* eps(CLI::App& app, T& v, const std::string& note = "") {
  return app.add_option("--eps", v, detail::help("L-inf radius around the seed, in pixel units", note))
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}
/// --samples-per-bug K: finding files a campaign directory keeps per bug (nnfuzz::BugOptions).
template <typename T>
CLI::Option* samples_per_bug(CLI::App& app, T& v, const std::string& note = "") {
  return app
      .add_option("--samples-per-bug", v,
                  detail::help("finding files kept per bug (signature); the others are counted (0 = no limit)", note))
      ->transform(integer_count<T>())
      ->capture_default_str();
}
/// --backend kdtree|brute: the coverage index.
inline CLI::Option* backend(CLI::App& app, std::string& v, const std::string& note = "") {
  return app.add_option("--backend", v, detail::help("coverage index: kdtree or brute", note))->capture_default_str();
}
/// --jobs N: worker threads; results never depend on it.
inline CLI::Option* jobs(CLI::App& app, int& v, const std::string& note = "") {
  return app.add_option("--jobs", v, detail::help("worker threads (0 = all cores); results do not depend on it", note))
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
}
/// --train-steps N: override the recipe's training steps (smoke tests).
template <typename T>
CLI::Option* train_steps(CLI::App& app, T& v, const std::string& note = "") {
  return app
      .add_option("--train-steps", v,
                  detail::help("override the recipe's training steps (0 = recipe; for smoke tests)", note))
      ->transform(integer_count<T>())
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}
/// --target-rate R: CalibratedCoverage's target acceptance rate.
template <typename T>
CLI::Option* target_rate(CLI::App& app, T& v, const std::string& note = "") {
  return app
      .add_option("--target-rate", v,
                  detail::help("CalibratedCoverage: the share of the first mutants that are new", note))
      ->check(CLI::Range(0.0f, 1.0f))
      ->capture_default_str();
}

/// --baselines random,fitness,tensorfuzz,default: the table's rows (nnfuzz/baselines.hpp), in
/// the order given; each name once.
inline CLI::Option* baselines(CLI::App& app, std::vector<nnfuzz::Baseline>& v, const std::string& note = "") {
  return app
      .add_option_function<std::vector<std::string>>(
          "--baselines",
          [&v](const std::vector<std::string>& names) {
            v.clear();
            for (const std::string& n : names) {
              const nnfuzz::Baseline b = nnfuzz::parse_baseline(n);  // throws, naming the value
              if (std::find(v.begin(), v.end(), b) != v.end())
                throw CLI::ValidationError("--baselines", "'" + n + "' is given twice");
              v.push_back(b);
            }
          },
          detail::help("rows of the table: random (random search), fitness (fitness only), tensorfuzz "
                       "(TensorFuzz's CGF), default (the defaults); default all four",
                       note))
      ->delimiter(',');
}

/// What the campaign flags mean in one driver (notes appended to their help).
struct CampaignNotes {
  std::string seed;        ///< note of --seed
  std::string executions;  ///< note of --executions ("per run", "per seed image")
  std::string radius;      ///< note of --radius
};

/// The flags every image-fuzzing driver shares, in one order: --seed, --executions, --batch,
/// --sigma, --sigma-range, --radius. `S` has members seed, executions, batch, sigma, sigma_range
/// and radius.
template <typename S>
void campaign(CLI::App& app, S& s, const CampaignNotes& notes = {}) {
  seed(app, s.seed, notes.seed);
  executions(app, s.executions, notes.executions);
  batch(app, s.batch);
  sigma(app, s.sigma);
  sigma_range(app, s.sigma_range);
  radius(app, s.radius, notes.radius);
}

}  // namespace nnfuzz_flags
