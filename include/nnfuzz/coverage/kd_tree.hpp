// SPDX-License-Identifier: MIT
// nnfuzz: KdTreeCoverage — exact novelty with a forest of static KD-trees (nanoflann-built),
// large rebuilds done on a background thread.
#pragma once

#include "../detail/config.hpp"
#include "../detail/nanoflann_shim.hpp"
#include "../detail/row_store.hpp"
#include "radius.hpp"

#include <chrono>
#include <future>
#include <limits>
#include <memory>
#include <system_error>
#include <vector>

namespace nnfuzz {

namespace detail {

// nanoflann dataset adaptor over rows [first, first + count) of a RowStore, through a copy of its
// chunk pointers: safe to read from a builder thread while the owner appends rows (appending may
// reallocate the store's table of chunks, never a chunk).
struct RowRangeAdaptor {
  std::vector<const float*> chunks;
  Index first = 0, count = 0, cols = 0, rows_per_chunk = 1;
  int shift = 0;

  RowRangeAdaptor(const RowStore& store, Index first_row, Index rows)
      : first(first_row),
        count(rows),
        cols(store.cols()),
        rows_per_chunk(store.rows_per_chunk()),
        shift(store.chunk_shift()) {
    const auto used = static_cast<std::size_t>((first_row + rows + rows_per_chunk - 1) >> shift);
    chunks.reserve(used);
    for (std::size_t c = 0; c < used; ++c) chunks.push_back(store.chunk_data(c));
  }
  std::size_t kdtree_get_point_count() const { return static_cast<std::size_t>(count); }
  float kdtree_get_pt(std::size_t idx, std::size_t dim) const {
    const Index r = first + static_cast<Index>(idx);
    return chunks[static_cast<std::size_t>(r >> shift)][(r & (rows_per_chunk - 1)) * cols + static_cast<Index>(dim)];
  }
  template <class BBox>
  bool kdtree_get_bbox(BBox&) const {
    return false;
  }
};

// One static KD-tree over the stored rows [begin(), end()). nanoflann builds it; KdTreeCoverage
// walks it with its own first-hit search (no allocation per query, unlike findNeighbors()).
// It also keeps a copy of its points in leaf order, column by column (point_block_stride()), so
// that a leaf is scanned kPointBlock points at a time from contiguous memory (first_point_below).
struct KdRangeTree {
  using Tree = nanoflann::KDTreeSingleIndexAdaptor<nanoflann::L2_Adaptor<float, RowRangeAdaptor, float, std::size_t>,
                                                   RowRangeAdaptor, -1, std::size_t>;
  RowRangeAdaptor data;  // before `tree`: the tree keeps a reference and is built from it
  Tree tree;
  Index stride;
  std::vector<float> columns;  // coordinate k of the p-th point in leaf order at columns[k * stride + p]
  KdRangeTree(RowRangeAdaptor rows, std::size_t leaf_size)
      : data(std::move(rows)),
        tree(static_cast<int>(data.cols), data, nanoflann::KDTreeSingleIndexAdaptorParams(leaf_size)),
        stride(point_block_stride(data.count)),
        columns(static_cast<std::size_t>(stride * data.cols), 0.0f) {
    const auto& order = nanoflann_order(tree);
    for (Index p = 0; p < data.count; ++p)
      for (Index k = 0; k < data.cols; ++k)
        columns[static_cast<std::size_t>(k * stride + p)] =
            data.kdtree_get_pt(order[static_cast<std::size_t>(p)], static_cast<std::size_t>(k));
  }
  Index begin() const { return data.first; }
  Index end() const { return data.first + data.count; }
  Index size() const { return data.count; }
  // The stored row of the p-th point in leaf order.
  Index row_of(Index p) const {
    return data.first + static_cast<Index>(nanoflann_order(tree)[static_cast<std::size_t>(p)]);
  }
};

}  // namespace detail

/// Coverage policy: a vector is new when its L2 distance to every vector seen so far (including
/// earlier new rows of the same batch) is at least `radius`; new vectors are remembered.
///
/// Exact, like BruteForceCoverage (the two agree on every decision: both decide with
/// detail::squared_distance_below), and far faster than it for low-dimensional coverage and
/// large corpora. A vector with a NaN or infinite element is never new and never stored.
///
/// The stored vectors live in one chunked store; the newest few (up to 4 × leaf_size) are
/// searched directly, the rest by a short list of
/// static KD-trees built by nanoflann over consecutive ranges, each tree larger than all later
/// ones together (a logarithmic method: about log2(N / 64) trees, each vector rebuilt about
/// log2(N / 64) times in all). Each tree also keeps a copy of its vectors in leaf order, column
/// by column (the coverage vectors' memory twice over, a small share of a corpus whose inputs are
/// larger), so that a leaf, and the newest vectors, are scanned eight at a time with vector
/// arithmetic; a vector within rounding of the radius is decided by the exact scalar test, so the
/// decisions stay those of BruteForceCoverage. A query stops at the first stored vector inside the radius; it
/// tries first the vector that answered the previous query (a batch's mutants share a parent,
/// so their coverage vectors cluster), then the newest vectors, then the trees newest first.
///
/// Rebuilds of up to `max_blocking_build` vectors happen inside observe(); larger ones on a
/// background thread (std::async), while the trees they replace keep answering queries, so the
/// fuzz loop never waits for a big rebuild (nanoflann's own dynamic index stalls for ~0.4 s
/// merging its largest sub-tree at 10^6 vectors). Decisions do not depend on when a background
/// rebuild finishes: every search is exact. Pass `max_blocking_build =
/// std::numeric_limits<Index>::max()` to keep everything on the calling thread.
class KdTreeCoverage {
 public:
  /// `radius`: the L2 radius (not squared; see radius_from_squared()).
  /// `leaf_size`: maximum vectors per KD-tree leaf. `max_blocking_build`: largest rebuild done on
  /// the calling thread (16,384 vectors take ~12 ms at 10 dimensions on the reference machine).
  explicit KdTreeCoverage(float radius, std::size_t leaf_size = 16, Index max_blocking_build = 16384)
      : radius_(detail::checked_radius("KdTreeCoverage()", radius)),
        leaf_size_(leaf_size),
        max_blocking_build_(max_blocking_build) {
    if (leaf_size < 1) detail::fail("KdTreeCoverage(): option 'leaf_size' must be >= 1, got ", leaf_size);
    if (max_blocking_build < 1)
      detail::fail("KdTreeCoverage(): option 'max_blocking_build' must be >= 1, got ", max_blocking_build);
  }

  ~KdTreeCoverage() { drop_job(); }
  KdTreeCoverage(KdTreeCoverage&&) noexcept = default;
  /// Move assignment (waits for this object's background rebuild, if one is running).
  KdTreeCoverage& operator=(KdTreeCoverage&& other) noexcept {
    if (this != &other) {
      drop_job();  // before the store it reads is replaced
      radius_ = other.radius_;
      leaf_size_ = other.leaf_size_;
      max_blocking_build_ = other.max_blocking_build_;
      store_ = std::move(other.store_);
      trees_ = std::move(other.trees_);
      scratch_ = std::move(other.scratch_);
      tail_ = std::move(other.tail_);
      witness_ = other.witness_;
      job_ = std::move(other.job_);
      job_first_ = other.job_first_;
      job_last_ = other.job_last_;
      background_rebuilds_ = other.background_rebuilds_;
    }
    return *this;
  }
  /// Deep copy: the same vectors and options, in freshly built trees.
  KdTreeCoverage(const KdTreeCoverage& other)
      : radius_(other.radius_), leaf_size_(other.leaf_size_), max_blocking_build_(other.max_blocking_build_) {
    if (other.dim() == 0) return;
    reset(other.dim());
    for (Index i = 0; i < other.size(); ++i) insert(other.store_.row(i));
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
    drop_job();
    trees_.clear();
    store_.reset(dim);
    witness_ = std::numeric_limits<Index>::max();
    background_rebuilds_ = 0;
    scratch_.assign(static_cast<std::size_t>(dim), 0.0f);
    tail_.assign(static_cast<std::size_t>(tail_stride() * dim), 0.0f);
  }
  /// Sets is_new(i) for each row and remembers the new ones.
  void observe(const Eigen::Ref<const RowMatrix>& vectors, Mask& is_new) {
    NNFUZZ_ASSERT(dim() > 0 && vectors.cols() == dim());
    poll_job();
    is_new.resize(vectors.rows());
    for (Index i = 0; i < vectors.rows(); ++i) {
      const float* q = vectors.row(i).data();
      const bool fresh = detail::all_finite(vectors.row(i)) && !seen(q);
      is_new(i) = fresh;
      if (fresh) insert(q);
    }
  }
  /// Stores a vector without the novelty check (used to rebuild an index from known-novel ones).
  void insert(const float* v) {
    NNFUZZ_ASSERT(dim() > 0);
    const Index p = store_.size() - built_end();  // its place among the newest (< tail_limit())
    store_.append(v);
    for (Index k = 0; k < dim(); ++k) tail_[static_cast<std::size_t>(k * tail_stride() + p)] = v[k];
    if (p + 1 >= tail_limit()) {
      build_now(built_end(), store_.size());
      maintain();
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
  /// Changes the radius for later observe() calls (the stored vectors stay; used by
  /// CalibratedCoverage to hold its acceptance rate).
  void set_radius(float radius) { radius_ = detail::checked_radius("KdTreeCoverage::set_radius()", radius); }
  /// Coverage vector length given to reset() (0 before).
  Index dim() const { return store_.cols(); }
  /// Stored vector i.
  Eigen::Map<const RowVector> vector(Index i) const { return {store_.row(i), store_.cols()}; }
  /// Number of KD-trees searched now (about log2(size() / 64); for tests and benchmarks).
  std::size_t tree_count() const { return trees_.size(); }
  /// True while a background rebuild is running.
  bool rebuilding() const { return job_.valid(); }
  /// Rebuilds started on the background thread so far (since reset()).
  std::size_t background_rebuilds() const { return background_rebuilds_; }
  /// Waits for background rebuilds and installs them, until none is running: afterwards every
  /// tree is larger than all later trees together (at most log2(size() / 64) + 1 trees).
  /// Never needed for correctness; for tests, benchmarks, and before measuring memory.
  void finish_rebuilds() {
    while (job_.valid()) {
      job_.wait();
      poll_job();
    }
  }

 private:
  using Tree = detail::KdRangeTree;
  using Node = typename Tree::Tree::Node;

  Index tail_limit() const { return static_cast<Index>(4 * leaf_size_); }
  Index tail_stride() const { return detail::point_block_stride(tail_limit()); }
  // Rows from here on are not in a tree yet: they are searched directly.
  Index built_end() const { return trees_.empty() ? 0 : trees_.back()->end(); }

  // Is any stored vector strictly closer than the radius? Subtrees are pruned on a lower
  // bound of the distance computed incrementally (nanoflann's arithmetic), with a relative slack
  // for its rounding, so that pruning never drops a vector the exact leaf test would accept.
  bool seen(const float* q) {
    const float r2 = radius_ * radius_;
    const Index d = dim();
    const float prune_above = r2 * (1.0f + 8.0f * static_cast<float>(d + 2) * std::numeric_limits<float>::epsilon());
    // The vector that answered the last query first: a batch's mutants share a parent, so their
    // coverage vectors cluster, and the last witness often answers the next query in O(dim).
    // The answer is the same either way (any stored vector inside the radius decides it).
    if (witness_ < store_.size() && detail::squared_distance_below(q, store_.row(witness_), d, r2)) return true;
    // The newest vectors next (not in a tree yet): they came from the region being mutated now.
    const Index tail_first = built_end();
    const Index hit = detail::first_point_below(tail_.data(), tail_stride(), 0, store_.size() - tail_first, q, d, r2,
                                                [&](Index p) { return store_.row(tail_first + p); });
    if (hit >= 0) {
      witness_ = tail_first + hit;
      return true;
    }
    // Then the trees, smallest (newest) first, for the same reason.
    for (auto t = trees_.rbegin(); t != trees_.rend(); ++t)
      if (seen_in(**t, q, r2, prune_above)) return true;
    return false;
  }

  // nanoflann's exact search (same pruning arithmetic), stopping at the first hit.
  bool seen_in(const Tree& t, const float* q, float r2, float prune_above) {
    const auto& bbox = detail::nanoflann_bbox(t.tree);
    float mind = 0;
    for (Index k = 0; k < dim(); ++k) {
      float& dk = scratch_[static_cast<std::size_t>(k)];
      dk = 0;
      const float lo = bbox[static_cast<std::size_t>(k)].low, hi = bbox[static_cast<std::size_t>(k)].high;
      if (q[k] < lo) dk = (q[k] - lo) * (q[k] - lo);
      if (q[k] > hi) dk = (q[k] - hi) * (q[k] - hi);
      mind += dk;
    }
    if (mind > prune_above) return false;
    return seen_below(detail::nanoflann_root(t.tree), t, q, mind, r2, prune_above);
  }
  bool seen_below(const Node* node, const Tree& t, const float* q, float mind, float r2, float prune_above) {
    if (node->child1 == nullptr && node->child2 == nullptr) {
      const Index hit = detail::first_point_below(
          t.columns.data(), t.stride, static_cast<Index>(node->node_type.lr.left),
          static_cast<Index>(node->node_type.lr.right), q, dim(), r2, [&](Index p) { return store_.row(t.row_of(p)); });
      if (hit < 0) return false;
      witness_ = t.row_of(hit);
      return true;
    }
    const auto k = node->node_type.sub.divfeat;
    const float v = q[k], diff1 = v - node->node_type.sub.divlow, diff2 = v - node->node_type.sub.divhigh;
    const bool low_first = diff1 + diff2 < 0;
    const Node* best = low_first ? node->child1 : node->child2;
    const Node* other = low_first ? node->child2 : node->child1;
    const float cut = low_first ? diff2 * diff2 : diff1 * diff1;
    if (seen_below(best, t, q, mind, r2, prune_above)) return true;
    float& dk = scratch_[static_cast<std::size_t>(k)];
    const float saved = dk;
    const float other_mind = mind + cut - saved;
    dk = cut;
    const bool hit = other_mind <= prune_above && seen_below(other, t, q, other_mind, r2, prune_above);
    dk = saved;
    return hit;
  }

  // Builds one tree over rows [begin, end) on this thread and appends it to the list.
  void build_now(Index begin, Index end) {
    auto tree = std::make_unique<Tree>(detail::RowRangeAdaptor(store_, begin, end - begin), leaf_size_);
    // Replaces the trees that covered [begin, end), if any (they are the last ones).
    while (!trees_.empty() && trees_.back()->begin() >= begin) trees_.pop_back();
    trees_.push_back(std::move(tree));
  }

  // Keeps every tree larger than all later ones together: merges the longest suffix that breaks
  // this, on this thread when small, else in the background (one rebuild at a time; trees that
  // are being merged are left alone until it is installed).
  void maintain() {
    for (;;) {
      const std::size_t from = job_.valid() ? job_last_ + 1 : 0;
      const std::size_t n = trees_.size();
      if (n < from + 2) return;
      Index suffix = trees_[n - 1]->size();  // sizes of trees j+1 .. n-1
      std::size_t pick = n;
      Index pick_size = 0;
      for (std::size_t j = n - 1; j-- > from;) {
        const Index merged = suffix + trees_[j]->size();
        if (trees_[j]->size() <= suffix && (merged <= max_blocking_build_ || !job_.valid())) {
          pick = j;
          pick_size = merged;
        }
        suffix = merged;
      }
      if (pick == n) return;
      const Index begin = trees_[pick]->begin(), end = trees_.back()->end();
      if (pick_size <= max_blocking_build_) {
        build_now(begin, end);
        continue;
      }
      start_job(pick, begin, end);
      return;
    }
  }

  void start_job(std::size_t first_tree, Index begin, Index end) {
    detail::RowRangeAdaptor rows(store_, begin, end - begin);
    const std::size_t leaf = leaf_size_;
    try {
      job_ = std::async(std::launch::async, [rows = std::move(rows), leaf]() mutable {
        return std::make_unique<Tree>(std::move(rows), leaf);
      });
    } catch (const std::system_error&) {  // no thread available: build here
      build_now(begin, end);
      return;
    }
    job_first_ = first_tree;
    job_last_ = trees_.size() - 1;
    ++background_rebuilds_;
  }

  // Installs a finished background rebuild (trees job_first_ .. job_last_ become one).
  void poll_job() {
    if (!job_.valid() || job_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
    trees_[job_first_] = job_.get();  // rethrows the builder's exception, if any
    trees_.erase(trees_.begin() + static_cast<std::ptrdiff_t>(job_first_ + 1),
                 trees_.begin() + static_cast<std::ptrdiff_t>(job_last_ + 1));
    maintain();
  }

  // Waits for a running rebuild and discards it (the trees it would replace stay valid).
  void drop_job() noexcept {
    if (!job_.valid()) return;
    job_.wait();
    try {
      job_.get();
    } catch (...) {
    }
  }

  float radius_;
  std::size_t leaf_size_;
  Index max_blocking_build_;
  detail::RowStore store_;
  std::vector<std::unique_ptr<Tree>> trees_;  // consecutive ranges covering [0, built_end()), largest first
  std::vector<float> scratch_;                // per-dimension distances of the search (no allocation per query)
  std::vector<float> tail_;  // the rows from built_end() on, column by column (tail_stride()): scanned in blocks
  Index witness_ = std::numeric_limits<Index>::max();  // the stored row that answered the last "seen" query
  std::future<std::unique_ptr<Tree>> job_;
  std::size_t job_first_ = 0, job_last_ = 0;
  std::size_t background_rebuilds_ = 0;
};

}  // namespace nnfuzz
