// SPDX-License-Identifier: MIT
// nnfuzz: the four named baselines every comparison reports — random search, fitness only,
// TensorFuzz's CGF and the defaults — composed from the policies, by name or at compile time.
//
//     nnfuzz::BaselineSettings s;  // σ, bounds, TensorFuzz's radius
//     for (nnfuzz::Baseline b : nnfuzz::kBaselines)
//       nnfuzz::with_baseline(b, model, nnfuzz::NonFiniteObjective(), s, options,
//                             [&](auto& fuzzer) { report(b, fuzzer.run(seeds)); });
#pragma once

#include "fuzzer.hpp"
#include "coverage/calibrated.hpp"
#include "coverage/kd_tree.hpp"
#include "coverage/no_coverage.hpp"
#include "coverage/radius.hpp"
#include "detail/config.hpp"

#include <array>
#include <string>
#include <utility>

namespace nnfuzz {

/// The four searches every nnfuzz table compares, by the same names everywhere (experiment
/// drivers, the demo, `nnfuzz fuzz --baseline`):
///  - `random_search` ("random"): TensorFuzz's baseline. TensorFuzz's sampler and noise
///    (RecentSampler, GaussianMutator), NoCoverage and no fitness frontier, so every mutant is a
///    mutant of a seed and the corpus never grows.
///  - `fitness_only` ("fitness"): the defaults without coverage. DefaultSampler, DefaultMutator,
///    NoCoverage with FuzzOptions::keep_fitter on: the corpus grows only by mutants that beat the
///    best fitness (hill climbing on the objective's fitness).
///  - `tensorfuzz` ("tensorfuzz"): TensorFuzz's CGF. RecentSampler, GaussianMutator,
///    KdTreeCoverage at a fixed radius (TensorFuzz's squared 0.5), no fitness frontier.
///  - `defaults` ("default"): what `make_fuzzer(model, options)` gives. DefaultSampler,
///    DefaultMutator, CalibratedCoverage, the fitness frontier on.
/// Coverage earns its place where `defaults` beats `fitness_only`; fitness where `fitness_only`
/// beats `random_search`.
enum class Baseline {
  random_search,  ///< "random": no coverage, no fitness frontier (TensorFuzz's random search)
  fitness_only,   ///< "fitness": no coverage, fitness frontier (the defaults without coverage)
  tensorfuzz,     ///< "tensorfuzz": TensorFuzz's CGF (fixed radius, recent sampler, Gaussian noise)
  defaults        ///< "default": the library's defaults
};

/// The four baselines in table order.
inline constexpr std::array<Baseline, 4> kBaselines{Baseline::random_search, Baseline::fitness_only,
                                                    Baseline::tensorfuzz, Baseline::defaults};

/// The baseline's short name: "random", "fitness", "tensorfuzz" or "default".
inline const char* baseline_name(Baseline b) {
  switch (b) {
    case Baseline::random_search:
      return "random";
    case Baseline::fitness_only:
      return "fitness";
    case Baseline::tensorfuzz:
      return "tensorfuzz";
    case Baseline::defaults:
      return "default";
  }
  return "?";
}

/// The baseline's name in a table row: "random search", "fitness only", "TensorFuzz's CGF", "the defaults".
inline const char* baseline_label(Baseline b) {
  switch (b) {
    case Baseline::random_search:
      return "random search";
    case Baseline::fitness_only:
      return "fitness only";
    case Baseline::tensorfuzz:
      return "TensorFuzz's CGF";
    case Baseline::defaults:
      return "the defaults";
  }
  return "?";
}

/// The baseline named `name` (baseline_name()); throws std::invalid_argument naming the value
/// and the four names otherwise.
inline Baseline parse_baseline(const std::string& name) {
  for (Baseline b : kBaselines)
    if (name == baseline_name(b)) return b;
  detail::fail("parse_baseline(): unknown baseline '", name, "' (random, fitness, tensorfuzz or default)");
  return Baseline::defaults;  // not reached
}

/// What the four baselines share: the noise, the input domain and TensorFuzz's fixed radius.
struct BaselineSettings {
  float sigma = 0.1f;                        ///< Gaussian noise σ (DefaultMutator draws around it, σ/4 … 4σ)
  MutationBounds bounds{};                   ///< input domain and L-inf ball around the seed
  float radius = radius_from_squared(0.5f);  ///< `tensorfuzz`: the fixed L2 novelty radius (TensorFuzz's)
};

/// FuzzOptions for baseline `b`: `options` with keep_fitter set as the baseline defines it.
inline FuzzOptions baseline_options(Baseline b, FuzzOptions options) {
  options.keep_fitter = b == Baseline::fitness_only || b == Baseline::defaults;
  return options;
}

/// The fuzzer of baseline `B` for `model` and `objective` (the policy types depend on B). Throws
/// std::invalid_argument for bad settings or options, as the policies' constructors do.
template <Baseline B, typename Model, typename Objective>
auto make_baseline_fuzzer(Model model, Objective objective, const BaselineSettings& s, const FuzzOptions& options) {
  const FuzzOptions o = baseline_options(B, options);
  if constexpr (B == Baseline::random_search)
    return make_fuzzer(std::move(model), RecentSampler(), GaussianMutator(s.sigma, s.bounds), NoCoverage(),
                       std::move(objective), o);
  else if constexpr (B == Baseline::fitness_only)
    return make_fuzzer(std::move(model), DefaultSampler(), DefaultMutator(s.sigma, s.bounds), NoCoverage(),
                       std::move(objective), o);
  else if constexpr (B == Baseline::tensorfuzz)
    return make_fuzzer(std::move(model), RecentSampler(), GaussianMutator(s.sigma, s.bounds), KdTreeCoverage(s.radius),
                       std::move(objective), o);
  else
    return make_fuzzer(std::move(model), DefaultSampler(), DefaultMutator(s.sigma, s.bounds), CalibratedCoverage(),
                       std::move(objective), o);
}

/// Composes baseline `b`'s fuzzer (make_baseline_fuzzer()) and hands it to `use`, a generic
/// callable taking `auto& fuzzer`; returns what `use` returns (the same type for every fuzzer).
template <typename Model, typename Objective, typename Use>
decltype(auto) with_baseline(Baseline b, Model model, Objective objective, const BaselineSettings& s,
                             const FuzzOptions& options, Use&& use) {
  switch (b) {
    case Baseline::random_search: {
      auto f = make_baseline_fuzzer<Baseline::random_search>(std::move(model), std::move(objective), s, options);
      return use(f);
    }
    case Baseline::fitness_only: {
      auto f = make_baseline_fuzzer<Baseline::fitness_only>(std::move(model), std::move(objective), s, options);
      return use(f);
    }
    case Baseline::tensorfuzz: {
      auto f = make_baseline_fuzzer<Baseline::tensorfuzz>(std::move(model), std::move(objective), s, options);
      return use(f);
    }
    case Baseline::defaults:
      break;
  }
  auto f = make_baseline_fuzzer<Baseline::defaults>(std::move(model), std::move(objective), s, options);
  return use(f);
}

}  // namespace nnfuzz
