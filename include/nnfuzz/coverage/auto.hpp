// SPDX-License-Identifier: MIT
// nnfuzz: AutoCoverage — brute force while it is cheaper, the KD-tree once it is not.
#pragma once

#include "brute_force.hpp"
#include "kd_tree.hpp"

namespace nnfuzz {

/// Coverage policy that picks its back-end: BruteForceCoverage (batched Eigen products) for
/// high-dimensional vectors and small corpora, KdTreeCoverage (with 64-vector leaves) once a
/// low-dimensional corpus grows past `switch_size` vectors. The switch moves the stored vectors
/// into a KD-tree once (they are already pairwise novel, so no check is needed); decisions are
/// identical either way, since both back-ends are exact.
///
/// The default switch, `AutoCoverage::by_dimension`, uses the KD-tree from the first vector for
/// coverage vectors of up to 16 elements (logits, most often) and switches at 4,096 vectors above
/// that. Measured on a user's 784-64-10 model with the default policies (10-d logits, a corpus of
/// 7,259, `bench_user`): the KD-tree from the start ran the loop at 73–75% of the forward pass
/// against 68–70% with the switch at 4,096, in a `-O2` build (the brute force's products are
/// compiled for SSE2 there), and the same within noise natively. At 100 and 200 dimensions brute
/// force stays faster up to a few thousand vectors (the coverage-scaling benchmark). Set
/// `max_kd_dim` lower if your coverage vectors are high-dimensional and the radius is large
/// relative to their spread, where KD-tree pruning degrades.
class AutoCoverage {
 public:
  /// The default `switch_size`: 0 (the KD-tree from the start) for coverage vectors of at most
  /// kSmallDim elements, 4,096 vectors otherwise.
  static constexpr Index by_dimension = -1;
  /// Coverage vectors of at most this many elements use the KD-tree from the start by default.
  static constexpr Index kSmallDim = 16;
  /// Leaf size of the KD-tree back-end (KdTreeCoverage's `leaf_size`).
  static constexpr std::size_t kLeafSize = 64;

  /// `radius`: L2 radius; `switch_size`: corpus size at which a low-dimensional corpus moves
  /// to the KD-tree (>= 0, or by_dimension); `max_kd_dim`: dimensions at or above which brute
  /// force is kept.
  explicit AutoCoverage(float radius, Index switch_size = by_dimension, Index max_kd_dim = 1024)
      : brute_(radius), kd_(radius, kLeafSize), switch_size_(switch_size), max_kd_dim_(max_kd_dim) {
    if (switch_size < by_dimension)
      detail::fail("AutoCoverage(): option 'switch_size' must be >= 0 (or AutoCoverage::by_dimension), got ",
                   switch_size);
  }
  /// Forgets every vector; `dim` is the coverage vector length.
  void reset(Index dim) {
    brute_.reset(dim);
    using_kd_ = false;
    dim_ = dim;
  }
  /// Sets is_new(i) for each row and remembers the new ones.
  void observe(const Eigen::Ref<const RowMatrix>& vectors, Mask& is_new) {
    const Index switch_size = switch_size_ != by_dimension ? switch_size_ : dim_ <= kSmallDim ? 0 : 4096;
    if (!using_kd_ && dim_ < max_kd_dim_ && brute_.size() >= switch_size) {
      kd_.reset(dim_);
      for (Index i = 0; i < brute_.size(); ++i) kd_.insert(brute_.vector(i).data());
      brute_.reset(dim_);  // frees the brute-force copy
      using_kd_ = true;
    }
    if (using_kd_)
      kd_.observe(vectors, is_new);
    else
      brute_.observe(vectors, is_new);
  }
  /// Vectors remembered.
  Index size() const { return using_kd_ ? kd_.size() : brute_.size(); }
  /// True once the KD-tree is in use.
  bool using_kd_tree() const { return using_kd_; }
  /// The L2 novelty radius.
  float radius() const { return brute_.radius(); }
  /// The old name of radius().
  [[deprecated("use radius()")]] float threshold() const { return radius(); }
  /// The old name of set_radius().
  [[deprecated("use set_radius()")]] void set_threshold(float r) { set_radius(r); }
  /// Changes the radius for later observe() calls (the stored vectors stay).
  void set_radius(float radius) {
    brute_.set_radius(radius);
    kd_.set_radius(radius);
  }

 private:
  BruteForceCoverage brute_;
  KdTreeCoverage kd_;
  Index switch_size_, max_kd_dim_;
  Index dim_ = 0;
  bool using_kd_ = false;
};

}  // namespace nnfuzz
