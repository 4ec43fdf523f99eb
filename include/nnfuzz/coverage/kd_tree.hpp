// nnfuzz: KdTreeCoverage — novelty via nanoflann's incremental KD-tree.
#pragma once

#include "../detail/config.hpp"
#include "../detail/nanoflann_shim.hpp"
#include "../detail/row_store.hpp"
#include "threshold.hpp"

#include <memory>

namespace nnfuzz {

namespace detail {

// nanoflann dataset adaptor reading points in place from a RowStore.
struct RowStoreAdaptor {
  const RowStore* store = nullptr;
  std::size_t kdtree_get_point_count() const { return static_cast<std::size_t>(store->size()); }
  float kdtree_get_pt(std::size_t idx, std::size_t dim) const { return store->row(static_cast<Index>(idx))[dim]; }
  template <class BBox>
  bool kdtree_get_bbox(BBox&) const { return false; }
};

// Result set that answers one question: is any point strictly closer than the radius? It stops
// the search at the first such point: after a hit worstDist() turns negative, which prunes every
// remaining node of this sub-tree and of the dynamic index's other sub-trees at their root.
class FirstHitResultSet {
 public:
  using DistanceType = float;
  using IndexType = std::size_t;
  explicit FirstHitResultSet(float radius2) : radius2_(radius2) {}
  void init() {}
  std::size_t size() const { return hit_ ? 1 : 0; }
  bool full() const { return true; }
  bool addPoint(float dist, std::size_t) {
    if (dist < radius2_) {
      hit_ = true;
      return false;
    }
    return true;
  }
  float worstDist() const { return hit_ ? -1.0f : radius2_; }
  bool hit() const { return hit_; }

 private:
  float radius2_;
  bool hit_ = false;
};

}  // namespace detail

/// Coverage policy: a vector is new when its L2 distance to every vector seen so far (including
/// earlier new rows of the same batch) is at least `threshold`; new vectors are remembered.
///
/// Uses nanoflann's dynamic KD-tree: each new vector is inserted incrementally (never a rebuild
/// of the whole index, unlike TensorFuzz's rebuild every 50 additions), and a query stops at the
/// first stored vector inside the radius. Exact, like BruteForceCoverage; faster than it for
/// low-dimensional coverage (≈ below 16 dimensions) and large corpora.
class KdTreeCoverage {
 public:
  /// `threshold`: the L2 radius (not squared; see coverage_threshold_from_squared()).
  /// `leaf_size`: nanoflann's maximum leaf size.
  explicit KdTreeCoverage(float threshold, std::size_t leaf_size = 16)
      : threshold_(detail::checked_threshold("KdTreeCoverage()", threshold)), leaf_size_(leaf_size) {
    if (leaf_size < 1) detail::fail("KdTreeCoverage(): option 'leaf_size' must be >= 1, got ", leaf_size);
  }

  KdTreeCoverage(KdTreeCoverage&&) noexcept = default;
  KdTreeCoverage& operator=(KdTreeCoverage&&) noexcept = default;
  /// Deep copy: the same vectors, in a freshly built index (nanoflann's cannot be copied).
  KdTreeCoverage(const KdTreeCoverage& other) : threshold_(other.threshold_), leaf_size_(other.leaf_size_) {
    if (!other.store_) return;
    reset(other.dim());
    for (Index i = 0; i < other.size(); ++i) insert(other.store_->row(i));
  }
  /// Deep copy (see the copy constructor).
  KdTreeCoverage& operator=(const KdTreeCoverage& other) {
    if (this != &other) {
      KdTreeCoverage copy(other);
      *this = std::move(copy);
    }
    return *this;
  }

  /// Forgets every vector; `dim` is the coverage vector length.
  void reset(Index dim) {
    if (dim < 1) detail::fail("KdTreeCoverage::reset(): coverage dimension must be >= 1, got ", dim);
    index_.reset();
    store_ = std::make_unique<detail::RowStore>(dim);
    adaptor_ = std::make_unique<detail::RowStoreAdaptor>();
    adaptor_->store = store_.get();
    index_ = std::make_unique<Index_>(static_cast<int>(dim), *adaptor_,
                                      nanoflann::KDTreeSingleIndexAdaptorParams(leaf_size_));
  }
  /// Sets is_new(i) for each row and remembers the new ones.
  void observe(const Eigen::Ref<const RowMatrix>& vectors, Mask& is_new) {
    NNFUZZ_ASSERT(index_ && vectors.cols() == store_->cols());
    const float r2 = threshold_ * threshold_;
    is_new.resize(vectors.rows());
    for (Index i = 0; i < vectors.rows(); ++i) {
      const float* q = vectors.row(i).data();
      detail::FirstHitResultSet result(r2);
      if (store_->size() > 0) index_->findNeighbors(result, q, detail::NanoflannSearchParams());
      is_new(i) = !result.hit();
      if (!result.hit()) insert(q);
    }
  }
  /// Stores a vector without the novelty check (used to rebuild an index from known-novel ones).
  void insert(const float* v) {
    const Index id = store_->append(v);
    // nanoflann's range is inclusive: one call per new point.
    index_->addPoints(static_cast<std::size_t>(id), static_cast<std::size_t>(id));
  }
  /// Vectors remembered.
  Index size() const { return store_ ? store_->size() : 0; }
  /// The L2 novelty radius.
  float threshold() const { return threshold_; }
  /// Coverage vector length given to reset().
  Index dim() const { return store_ ? store_->cols() : 0; }
  /// Stored vector i.
  Eigen::Map<const RowVector> vector(Index i) const { return {store_->row(i), store_->cols()}; }

 private:
  using Index_ = nanoflann::KDTreeSingleIndexDynamicAdaptor<nanoflann::L2_Adaptor<float, detail::RowStoreAdaptor, float, std::size_t>,
                                                            detail::RowStoreAdaptor, -1, std::size_t>;
  float threshold_;
  std::size_t leaf_size_;
  // Held by pointer: nanoflann's index is neither copyable nor movable and keeps references to
  // the adaptor, which keeps one to the store.
  std::unique_ptr<detail::RowStore> store_;
  std::unique_ptr<detail::RowStoreAdaptor> adaptor_;
  std::unique_ptr<Index_> index_;
};

}  // namespace nnfuzz
