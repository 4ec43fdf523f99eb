// SPDX-License-Identifier: MIT
// nnfuzz: magnitude pruning of Mlp<float> and fine-tuning that keeps the pruned weights at zero
// (release candidates for regression fuzzing).
#pragma once

#include "../detail/config.hpp"
#include "mlp.hpp"
#include "train.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <utility>
#include <vector>

namespace nnfuzz {

/// The keep-masks of a pruned network: masks[l] has the shape of layer l's weights, 1 where the
/// weight is kept and 0 where it is pruned.
using PruneMasks = std::vector<RowMatrix>;

/// Sets every weight whose mask is 0 to +0 (the others are unchanged). Throws
/// std::invalid_argument when the masks do not match the layers' shapes.
inline void apply_masks(Mlp<float>& net, const PruneMasks& masks) {
  auto& layers = net.layers();
  if (masks.size() != layers.size())
    detail::fail("apply_masks(): ", masks.size(), " masks for ", layers.size(), " layers");
  for (std::size_t l = 0; l < layers.size(); ++l) {
    RowMatrix& w = layers[l].weights;
    if (masks[l].rows() != w.rows() || masks[l].cols() != w.cols())
      detail::fail("apply_masks(): mask ", l, " is ", masks[l].rows(), " x ", masks[l].cols(), ", layer ", l,
                   "'s weights are ", w.rows(), " x ", w.cols());
    // select, not a product: a pruned negative weight becomes +0, not -0.
    w = (masks[l].array() != 0.0f).select(w, 0.0f);
  }
}

/// Magnitude pruning, layer by layer (as TF Model Optimization's prune_low_magnitude): in each
/// layer, the round(fraction × weights) weights of smallest |w| are set to +0 — exactly that
/// many in every layer (ties in |w| broken by position, first first; weights that are already
/// zero count among the smallest). Biases are untouched. Returns the masks, for apply_masks() and
/// train_pruned(). Throws std::invalid_argument for a fraction outside [0, 1] or a non-finite
/// weight.
inline PruneMasks prune_magnitude(Mlp<float>& net, float fraction) {
  if (!(fraction >= 0.0f && fraction <= 1.0f))
    detail::fail("prune_magnitude(): option 'fraction' must be in [0, 1], got ", fraction);
  PruneMasks masks;
  for (std::size_t l = 0; l < net.layers().size(); ++l) {
    RowMatrix& w = net.layers()[l].weights;
    for (Index i = 0; i < w.size(); ++i)
      if (!detail::is_finite(w.data()[i]))
        detail::fail("prune_magnitude(): weight ", i, " (row-major) of layer ", l, " is not finite (", w.data()[i],
                     ")");
    const auto count = static_cast<Index>(std::llround(static_cast<double>(fraction) * static_cast<double>(w.size())));
    std::vector<Index> order(static_cast<std::size_t>(w.size()));
    std::iota(order.begin(), order.end(), Index{0});
    // A strict total order (magnitude, then position), so the count is exact even with ties.
    const float* v = w.data();
    std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(count), order.end(),
                     [v](Index a, Index b) {
                       const float fa = std::abs(v[a]), fb = std::abs(v[b]);
                       return fa < fb || (fa == fb && a < b);
                     });
    RowMatrix mask = RowMatrix::Ones(w.rows(), w.cols());
    for (Index i = 0; i < count; ++i) mask.data()[order[static_cast<std::size_t>(i)]] = 0.0f;
    masks.push_back(std::move(mask));
  }
  apply_masks(net, masks);
  return masks;
}

/// Fine-tunes a pruned network: train() with the masks re-applied after every step (after o's
/// own after_step hook, if any), so the pruned weights are exactly zero whenever a step ends and
/// when it returns; the kept weights and the biases train as usual.
inline TrainReport train_pruned(Mlp<float>& net, const Eigen::Ref<const RowMatrix>& x,
                                const Eigen::Ref<const Eigen::VectorXi>& labels, const PruneMasks& masks,
                                TrainOptions o) {
  apply_masks(net, masks);  // checks the shapes before any step
  std::function<void(Mlp<float>&)> user = std::move(o.after_step);
  o.after_step = [&masks, user](Mlp<float>& n) {
    if (user) user(n);
    apply_masks(n, masks);
  };
  return train(net, x, labels, o);
}

}  // namespace nnfuzz
