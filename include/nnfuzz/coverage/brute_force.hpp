// SPDX-License-Identifier: MIT
// nnfuzz: BruteForceCoverage — exact nearest-neighbour novelty with batched Eigen products.
#pragma once

#include "../detail/config.hpp"
#include "../detail/row_store.hpp"
#include "radius.hpp"

#include <algorithm>
#include <vector>

namespace nnfuzz {

/// Coverage policy: a vector is new when its L2 distance to every vector seen so far (including
/// earlier new rows of the same batch) is at least `radius`; new vectors are remembered. A
/// vector with a NaN or infinite element is never new and never stored.
///
/// Exact. A batch is screened against the stored vectors with one matrix product per 4 MiB chunk
/// (|q|² + |s|² − 2 q·s, fast at any dimension); rows whose screened distance is within rounding
/// of the radius are re-checked with exact differences. Cost grows linearly with the corpus:
/// prefer it for high-dimensional coverage or small corpora, KdTreeCoverage for large
/// low-dimensional ones.
class BruteForceCoverage {
 public:
  /// `radius`: the L2 radius (not squared; see radius_from_squared()).
  explicit BruteForceCoverage(float radius) : radius_(detail::checked_radius("BruteForceCoverage()", radius)) {}

  /// Forgets every vector; `dim` is the coverage vector length.
  void reset(Index dim) {
    store_.reset(dim);
    norms_.clear();
  }
  /// Sets is_new(i) for each row and remembers the new ones.
  void observe(const Eigen::Ref<const RowMatrix>& vectors, Mask& is_new) {
    NNFUZZ_ASSERT(vectors.cols() == store_.cols());
    const Index b = vectors.rows();
    is_new.resize(b);
    const float r2 = radius_ * radius_;
    qnorm_ = vectors.rowwise().squaredNorm();
    min_d2_.setConstant(b, std::numeric_limits<float>::infinity());
    float max_snorm = 0;
    const Index stored = store_.size();
    if (gram_.rows() != b) gram_.resize(b, kBlock);  // reused: no allocation per batch
    for (std::size_t c = 0; c < store_.chunk_count(); ++c) {
      const auto chunk = store_.chunk(c);
      const Index chunk_first = static_cast<Index>(c) * store_.rows_per_chunk();
      // Blocks of kBlock stored rows keep the Gram buffer small (B x 1024 floats).
      for (Index first = 0; first < chunk.rows(); first += kBlock) {
        const Index m = std::min(kBlock, chunk.rows() - first);
        const Eigen::Map<const Eigen::ArrayXf> sn(norms_.data() + chunk_first + first, m);
        max_snorm = std::max(max_snorm, sn.maxCoeff());
        auto g = gram_.leftCols(m);
        g.noalias() = vectors * chunk.middleRows(first, m).transpose();
        for (Index i = 0; i < b; ++i) {
          const float d2 = (sn.transpose() - 2.0f * g.row(i).array()).minCoeff() + qnorm_(i);
          min_d2_(i) = std::min(min_d2_(i), d2);
        }
      }
    }
    for (Index i = 0; i < b; ++i) {
      const float* q = vectors.row(i).data();
      if (!detail::all_finite(vectors.row(i))) {  // no distance to anything: never new
        is_new(i) = false;
        continue;
      }
      bool fresh;
      // Rounding of the expansion is bounded by a few ulps of |q|² + |s|²; only rows inside that
      // band need the exact check.
      const float margin = 1e-4f * (qnorm_(i) + max_snorm) + 1e-30f;
      if (stored == 0 || min_d2_(i) > r2 + margin) {
        fresh = true;
      } else if (min_d2_(i) < r2 - margin) {
        fresh = false;
      } else {
        fresh = exact_far(q, 0, stored, r2);
      }
      // Earlier new rows of this batch (appended below) are checked exactly.
      if (fresh) fresh = exact_far(q, stored, store_.size(), r2);
      is_new(i) = fresh;
      if (fresh) {
        store_.append(q);
        norms_.push_back(qnorm_(i));
      }
    }
  }
  /// Vectors remembered.
  Index size() const { return store_.size(); }
  /// The L2 novelty radius.
  float radius() const { return radius_; }
  /// The old name of radius().
  [[deprecated("use radius()")]] float threshold() const { return radius(); }
  /// The old name of set_radius().
  [[deprecated("use set_radius()")]] void set_threshold(float r) { set_radius(r); }
  /// Changes the radius for later observe() calls (the stored vectors stay).
  void set_radius(float radius) { radius_ = detail::checked_radius("BruteForceCoverage::set_radius()", radius); }
  /// Coverage vector length given to reset().
  Index dim() const { return store_.cols(); }
  /// Stored vector i.
  Eigen::Map<const RowVector> vector(Index i) const { return {store_.row(i), store_.cols()}; }

 private:
  // True when stored rows [first, last) are all at squared distance >= r2 from q.
  bool exact_far(const float* q, Index first, Index last, float r2) const {
    const Index d = store_.cols();
    for (Index j = first; j < last; ++j)
      if (detail::squared_distance_below(q, store_.row(j), d, r2)) return false;
    return true;
  }

  static constexpr Index kBlock = 1024;
  float radius_;
  detail::RowStore store_;
  std::vector<float> norms_;
  Eigen::ArrayXf qnorm_, min_d2_;
  RowMatrix gram_;
};

}  // namespace nnfuzz
