// SPDX-License-Identifier: MIT
// nnfuzz command-line tool: a campaign's settings (DIR/nnfuzz.json), the fuzzer each objective
// makes, and the glue between them. Every subcommand that runs a model (fuzz, replay) builds its
// fuzzer here, so a campaign is always replayed the way it was fuzzed.
#pragma once

#include "engine.hpp"
#include "seeds.hpp"

#include <nnfuzz/campaign/files.hpp>
#include <nnfuzz/campaign/merge.hpp>
#include <nnfuzz/campaign/saver.hpp>
#include <nnfuzz/minimize.hpp>
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/targets/version_pair.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace nnfuzz_cli {

/// What a campaign was made with: written to DIR/nnfuzz.json by the first `nnfuzz fuzz` on DIR.
struct CampaignSettings {
  ModelSpec model;                          ///< the model fuzzed
  std::optional<ModelSpec> against;         ///< the other version (disagree, distance)
  std::string objective = "nan";            ///< nan, disagree, distance:T, label
  Scale scale;                              ///< the input range
  float eps = 0;                            ///< L-inf radius around the seed (0 = none)
  std::string seeds;                        ///< where the seeds came from
  int height = 0, width = 0, channels = 0;  ///< image geometry of the seeds (0: not images)
  Index batch = 100;                        ///< mutants per model call
  int workers = 1;                          ///< in-process workers (> 1: DIR/workers/<i>, merged into DIR)
  /// The search (nnfuzz/baselines.hpp): random, fitness, tensorfuzz or default.
  std::string baseline = "default";
};

/// The settings as JSON, and back (throws UsageError naming `file` for a malformed one).
nlohmann::json to_json(const CampaignSettings& s);
/// Reads DIR/nnfuzz.json.
CampaignSettings read_settings(const std::string& dir);
/// Writes DIR/nnfuzz.json atomically.
void write_settings(const std::string& dir, const CampaignSettings& s);

/// The predicted class of each seed, for --objective label: the mutator tells it the root of
/// each batch, the objective compares every mutant's class with that root's.
struct LabelState {
  std::unordered_map<std::string, Index> label_of;  ///< seed bytes -> class
  Index current = -1;                               ///< class of the current batch's root (-1: none)
  /// Records the classes of seeds (rows) given their logits.
  void learn(const Eigen::Ref<const RowMatrix>& seeds, const RowMatrix& logits);
  /// Sets `current` from a root row.
  void set_root(const Eigen::Ref<const nnfuzz::RowVector>& root);
};

/// Fires when the predicted class (argmax of the logits) differs from the root seed's.
class LabelObjective {
 public:
  /// Shares `state` with the mutator that tracks the root.
  explicit LabelObjective(std::shared_ptr<LabelState> state) : state_(std::move(state)) {}
  /// Sets hits(r) when row r's class differs from the root's.
  template <typename Batch>
  void check(const Batch& batch, const EngineOutput& out, nnfuzz::Mask& hits) const {
    for (Index r = 0; r < batch.rows(); ++r) hits(r) = fires(out, r);
  }
  /// True when row r's class differs from the root's.
  bool fires(const EngineOutput& out, Index r) const {
    return state_->current >= 0 && nnfuzz::argmax(out.logits().row(r)) != state_->current;
  }
  /// "label: seed says 3, mutant says 5".
  std::string describe(const EngineOutput& out, Index r) const {
    return "label: seed says " + std::to_string(state_->current) + ", mutant says " +
           std::to_string(nnfuzz::argmax(out.logits().row(r)));
  }
  /// Finding::fired: "label".
  std::string fired(const EngineOutput&, Index) const { return "label"; }

 private:
  std::shared_ptr<LabelState> state_;
};

/// What a subcommand needs to drive --objective label: the state, and how to teach it seeds' classes.
struct LabelHook {
  LabelState* state = nullptr;                                    ///< the shared state
  std::function<void(const Eigen::Ref<const RowMatrix>&)> learn;  ///< learns the classes of seed rows
};

/// The mutator of the tool: the library's DefaultMutator (σ a tenth of the --scale range, the
/// --eps ball), behind one type, telling a LabelState the root of each batch.
class CliMutator {
 public:
  template <typename M>
  explicit CliMutator(M m, std::shared_ptr<LabelState> label = {})
      : impl_(std::make_unique<Impl<M>>(std::move(m))), label_(std::move(label)) {}
  CliMutator(const CliMutator& o) : impl_(o.impl_->clone()), label_(o.label_) {}
  CliMutator& operator=(const CliMutator& o) {
    impl_ = o.impl_->clone();
    label_ = o.label_;
    return *this;
  }
  CliMutator(CliMutator&&) = default;
  CliMutator& operator=(CliMutator&&) = default;
  /// Forwards to the mutator (after telling the label state the root).
  void mutate(const Eigen::Ref<const nnfuzz::RowVector>& parent, const Eigen::Ref<const nnfuzz::RowVector>& root,
              Eigen::Ref<RowMatrix> batch, nnfuzz::Rng& rng) {
    if (label_) label_->set_root(root);
    impl_->mutate(parent, root, batch, rng);
  }
  /// Forwards (when the mutator checks seeds).
  void check_seeds(const Eigen::Ref<const RowMatrix>& seeds) const { impl_->check_seeds(seeds); }
  /// Forwards (when the mutator takes feedback).
  void feedback(const nnfuzz::BatchFeedback& fb) { impl_->feedback(fb); }
  /// Forwards (when the mutator resets).
  void reset() { impl_->reset(); }
  /// Forwards (DefaultMutator fits itself to the model and the objective's fitness).
  void prepare(const nnfuzz::RunSetup& setup) { impl_->prepare(setup); }

 private:
  struct Iface {
    virtual ~Iface() = default;
    virtual std::unique_ptr<Iface> clone() const = 0;
    virtual void mutate(const Eigen::Ref<const nnfuzz::RowVector>&, const Eigen::Ref<const nnfuzz::RowVector>&,
                        Eigen::Ref<RowMatrix>, nnfuzz::Rng&) = 0;
    virtual void check_seeds(const Eigen::Ref<const RowMatrix>&) const = 0;
    virtual void feedback(const nnfuzz::BatchFeedback&) = 0;
    virtual void reset() = 0;
    virtual void prepare(const nnfuzz::RunSetup&) = 0;
  };
  template <typename M>
  struct Impl : Iface {
    M m;
    explicit Impl(M x) : m(std::move(x)) {}
    std::unique_ptr<Iface> clone() const override { return std::make_unique<Impl>(*this); }
    void mutate(const Eigen::Ref<const nnfuzz::RowVector>& p, const Eigen::Ref<const nnfuzz::RowVector>& r,
                Eigen::Ref<RowMatrix> b, nnfuzz::Rng& rng) override {
      m.mutate(p, r, b, rng);
    }
    void check_seeds(const Eigen::Ref<const RowMatrix>& s) const override {
      if constexpr (nnfuzz::detail::has_check_seeds<M>::value) m.check_seeds(s);
    }
    void feedback(const nnfuzz::BatchFeedback& fb) override {
      if constexpr (nnfuzz::detail::has_mutator_feedback<M>::value) m.feedback(fb);
    }
    void reset() override {
      if constexpr (nnfuzz::detail::has_policy_reset<M>::value) m.reset();
    }
    void prepare(const nnfuzz::RunSetup& setup) override {
      if constexpr (nnfuzz::detail::has_prepare<M>::value) m.prepare(setup);
    }
  };
  std::unique_ptr<Iface> impl_;
  std::shared_ptr<LabelState> label_;
};

/// The coverage policy of the tool, behind one type: NoCoverage (random, fitness),
/// KdTreeCoverage at TensorFuzz's radius (tensorfuzz) or CalibratedCoverage (default).
class CliCoverage {
 public:
  template <typename C>
  explicit CliCoverage(C c) : impl_(std::make_unique<Impl<C>>(std::move(c))) {}
  CliCoverage(CliCoverage&&) = default;
  CliCoverage& operator=(CliCoverage&&) = default;
  /// Forwards.
  void reset(Index dim) { impl_->reset(dim); }
  /// Forwards.
  void observe(const Eigen::Ref<const RowMatrix>& v, nnfuzz::Mask& is_new) { impl_->observe(v, is_new); }
  /// Forwards.
  Index size() const { return impl_->size(); }
  /// Forwards (when the policy calibrates after the seeds).
  void seeds_done() { impl_->seeds_done(); }
  /// The policy's radius (0 when it has none).
  float radius() const { return impl_->radius(); }
  /// The policy's save_state() (empty when it keeps none).
  std::vector<std::uint8_t> save_state() const { return impl_->save_state(); }
  /// The policy's restore_state(); a policy that keeps no state starts afresh (as the Fuzzer does
  /// for one without restore_state()).
  void restore_state(const std::vector<std::uint8_t>& s) { impl_->restore_state(s); }

 private:
  struct Iface {
    virtual ~Iface() = default;
    virtual void reset(Index) = 0;
    virtual void observe(const Eigen::Ref<const RowMatrix>&, nnfuzz::Mask&) = 0;
    virtual Index size() const = 0;
    virtual void seeds_done() = 0;
    virtual float radius() const = 0;
    virtual std::vector<std::uint8_t> save_state() const = 0;
    virtual void restore_state(const std::vector<std::uint8_t>&) = 0;
  };
  template <typename C>
  struct Impl : Iface {
    C c;
    explicit Impl(C x) : c(std::move(x)) {}
    void reset(Index d) override { c.reset(d); }
    void observe(const Eigen::Ref<const RowMatrix>& v, nnfuzz::Mask& m) override { c.observe(v, m); }
    Index size() const override { return c.size(); }
    void seeds_done() override {
      if constexpr (nnfuzz::detail::has_seeds_done<C>::value) c.seeds_done();
    }
    float radius() const override {
      if constexpr (nnfuzz::detail::has_radius<C>::value)
        return static_cast<float>(c.radius());
      else
        return 0;
    }
    std::vector<std::uint8_t> save_state() const override {
      if constexpr (nnfuzz::detail::has_coverage_state<C>::value)
        return c.save_state();
      else
        return {};
    }
    void restore_state(const std::vector<std::uint8_t>& s) override {
      if constexpr (nnfuzz::detail::has_coverage_state<C>::value) c.restore_state(s);
    }
  };
  std::unique_ptr<Iface> impl_;
};

/// Logits of a VersionPair's engine models.
struct EngineLogits {
  /// The logits output of an EngineModel.
  const RowMatrix& operator()(const EngineOutput& o) const { return o.logits(); }
};

/// The models of a campaign, opened.
struct OpenModels {
  std::optional<EngineModel> a, b;  ///< b: the other version (disagree, distance)
};

/// Opens the model(s) of `s` (`seed_width`: the fallback input width, 0 = none).
OpenModels open_models(CampaignSettings& s, Index seed_width);

/// True for the objectives that compare two versions.
inline bool is_pair_objective(const std::string& o) { return o == "disagree" || o.rfind("distance", 0) == 0; }
/// Checks an --objective value; throws UsageError naming it. Returns the distance threshold (distance:T) or 0.
float check_objective(const std::string& o);

/// Teaches `label` the classes of `rows` (seeds) through `model`.
void learn_labels(LabelState& label, EngineModel& model, const Eigen::Ref<const RowMatrix>& rows);

/// Builds the fuzzer `s` describes and hands it to `use` (a generic lambda taking `auto& fuzzer`
/// and `LabelHook*`, null unless the objective is label). The search is `s.baseline`'s
/// (nnfuzz/baselines.hpp), with σ a tenth of the --scale range and the --eps ball: random
/// search and TensorFuzz's CGF take Gaussian noise and the recent sampler (DefaultSampler with
/// no share for the fittest), fitness only and the defaults DefaultMutator and DefaultSampler.
template <typename Use>
void with_fuzzer(const CampaignSettings& s, OpenModels& m, const nnfuzz::FuzzOptions& options, Use&& use) {
  const nnfuzz::Baseline baseline = nnfuzz::parse_baseline(s.baseline);
  const nnfuzz::FuzzOptions o = nnfuzz::baseline_options(baseline, options);
  const bool tf_noise = baseline == nnfuzz::Baseline::random_search || baseline == nnfuzz::Baseline::tensorfuzz;
  const float sigma = 0.1f * (s.scale.hi - s.scale.lo);
  const nnfuzz::MutationBounds bounds{s.scale.lo, s.scale.hi,
                                      s.eps > 0 ? s.eps : std::numeric_limits<float>::infinity()};
  auto mutator = [&](std::shared_ptr<LabelState> label, auto default_mutator) {
    if (tf_noise) return CliMutator(nnfuzz::GaussianMutator(sigma, bounds), std::move(label));
    const bool custom = s.scale.lo != 0.0f || s.scale.hi != 1.0f || s.eps > 0;
    if (!custom) return CliMutator(std::move(default_mutator), std::move(label));
    return CliMutator(nnfuzz::DefaultMutator(sigma, bounds), std::move(label));
  };
  auto coverage = [&]() {
    switch (baseline) {
      case nnfuzz::Baseline::random_search:
      case nnfuzz::Baseline::fitness_only:
        return CliCoverage(nnfuzz::NoCoverage());
      case nnfuzz::Baseline::tensorfuzz:
        return CliCoverage(nnfuzz::KdTreeCoverage(nnfuzz::BaselineSettings().radius));
      case nnfuzz::Baseline::defaults:
        break;
    }
    return CliCoverage(nnfuzz::CalibratedCoverage());
  };
  // TensorFuzz's recent sampler: DefaultSampler with no picks for the fittest.
  auto sampler = [&]() {
    return tf_noise ? nnfuzz::DefaultSampler(nnfuzz::RecentSampler(), 0.0) : nnfuzz::DefaultSampler();
  };
  if (is_pair_objective(s.objective)) {
    auto base = nnfuzz::make_fuzzer(nnfuzz::VersionPair(std::move(*m.a), std::move(*m.b), EngineLogits{}), o);
    auto mut = mutator({}, base.mutator());
    auto searched = std::move(base).with_sampler(sampler()).with_mutator(std::move(mut)).with_coverage(coverage());
    if (s.objective == "disagree") {
      auto f = std::move(searched).with_objective(nnfuzz::DisagreementObjective());
      use(f, static_cast<LabelHook*>(nullptr));
    } else {
      auto f = std::move(searched).with_objective(nnfuzz::OutputDistanceObjective(check_objective(s.objective)));
      use(f, static_cast<LabelHook*>(nullptr));
    }
  } else if (s.objective == "label") {
    auto label = std::make_shared<LabelState>();
    auto base = nnfuzz::make_fuzzer(std::move(*m.a), o);
    auto mut = mutator(label, base.mutator());
    auto f = std::move(base)
                 .with_sampler(sampler())
                 .with_mutator(std::move(mut))
                 .with_coverage(coverage())
                 .with_objective(LabelObjective(label));
    LabelHook hook{label.get(),
                   [&](const Eigen::Ref<const RowMatrix>& rows) { learn_labels(*label, f.model(), rows); }};
    use(f, &hook);
  } else {
    auto base = nnfuzz::make_fuzzer(std::move(*m.a), o);
    auto mut = mutator({}, base.mutator());
    auto f = std::move(base)
                 .with_sampler(sampler())
                 .with_mutator(std::move(mut))
                 .with_coverage(coverage())
                 .with_objective(nnfuzz::NonFiniteObjective());
    use(f, static_cast<LabelHook*>(nullptr));
  }
}

}  // namespace nnfuzz_cli
