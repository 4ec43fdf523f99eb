// SPDX-License-Identifier: MIT
// nnfuzz: append-only row storage in large chunks (internal).
#pragma once

#include "config.hpp"

#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#if defined(__linux__)
# include <sys/mman.h>
#endif

namespace nnfuzz {
namespace detail {

/// Frees a chunk of allocate_chunk().
struct ChunkFree {
  void operator()(void* p) const noexcept { std::free(p); }
};

/// Uninitialised memory for `bytes` of rows. On Linux a chunk of 2 MiB or more is aligned to
/// 2 MiB and advised for transparent huge pages (MADV_HUGEPAGE; a hint, ignored where THP is
/// off), so that writing a corpus's rows faults once per 2 MiB instead of once per 4 KiB page:
/// measured in a VM (`bench_user`), the first touch of 80 MB took 224 ms in 4 KiB pages and
/// 136 ms in huge pages. Throws std::bad_alloc.
inline void* allocate_chunk(std::size_t bytes) {
  void* p = nullptr;
#if defined(__linux__)
  constexpr std::size_t kHugePage = std::size_t{2} << 20;
  if (bytes >= kHugePage) {
    const std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    p = std::aligned_alloc(kHugePage, rounded);
    if (p) (void)madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure changes nothing
  } else {
    p = std::malloc(bytes);
  }
#else
  p = std::malloc(bytes);
#endif
  if (!p) throw std::bad_alloc();
  return p;
}

/// Append-only store of fixed-width rows of T (float: inputs and coverage vectors; int32: token ids), grown in large
/// chunks so that appending never moves existing rows (pointers stay valid: the KD-tree reads rows in place) and never
/// reallocates per row. Chunks are allocated uninitialised (allocate_chunk()): the OS backs a page
/// only when a row is written to it, so an unused chunk costs address space, not memory.
/// reset() to the same width keeps the chunks for the next rows: a Fuzzer run again (a unit
/// test's loop, a benchmark) writes into memory that is already backed instead of faulting it in
/// again; release() gives it back.
template <typename T>
class BasicRowStore {
  static_assert(std::is_trivial<T>::value, "BasicRowStore<T>: rows are raw memory (float, int32)");

 public:
  /// Bytes per chunk aimed at (4 MiB): large enough that growth is rare.
  static constexpr std::size_t kChunkBytes = std::size_t{4} << 20;

  BasicRowStore() = default;
  BasicRowStore(BasicRowStore&&) noexcept = default;
  BasicRowStore& operator=(BasicRowStore&&) noexcept = default;
  /// Deep copy of the rows in use.
  BasicRowStore(const BasicRowStore& other) { *this = other; }
  /// Deep copy of the rows in use.
  BasicRowStore& operator=(const BasicRowStore& other) {
    if (this == &other) return *this;
    reset(other.cols_);
    for (Index i = 0; i < other.size_; ++i) append(other.row(i));
    return *this;
  }
  /// A store of rows with `cols` floats each.
  explicit BasicRowStore(Index cols) { reset(cols); }

  /// Drops every row and sets the width. The chunks stay allocated when the width is unchanged
  /// (see the class comment); release() frees them.
  void reset(Index cols) {
    NNFUZZ_ASSERT(cols >= 0);
    size_ = 0;
    if (cols == cols_ && !chunks_.empty()) return;
    cols_ = cols;
    chunks_.clear();
    // A power of two (at least 64) rows per chunk, so that finding a row is a shift and a mask.
    const std::size_t row_bytes = sizeof(T) * static_cast<std::size_t>(cols > 0 ? cols : 1);
    shift_ = 6;
    while ((std::size_t{2} << shift_) * row_bytes <= kChunkBytes) ++shift_;
    rows_per_chunk_ = Index{1} << shift_;
  }
  /// Drops every row and frees every chunk (the width stays).
  void release() {
    size_ = 0;
    chunks_.clear();
  }

  /// Number of rows stored.
  Index size() const { return size_; }
  /// Floats per row.
  Index cols() const { return cols_; }
  /// Rows per chunk (a power of two; the rows of one chunk are contiguous).
  Index rows_per_chunk() const { return rows_per_chunk_; }
  /// log2(rows_per_chunk()): row i is in chunk i >> chunk_shift().
  int chunk_shift() const { return shift_; }
  /// Number of chunks that hold rows (chunks kept for reuse after reset() are not counted).
  std::size_t chunk_count() const { return static_cast<std::size_t>((size_ + rows_per_chunk_ - 1) >> shift_); }

  /// Pointer to row i (valid until reset()).
  const T* row(Index i) const {
    NNFUZZ_ASSERT(i >= 0 && i < size_);
    return chunks_[static_cast<std::size_t>(i >> shift_)].get() + (i & (rows_per_chunk_ - 1)) * cols_;
  }
  /// Mutable pointer to row i.
  T* row(Index i) {
    NNFUZZ_ASSERT(i >= 0 && i < size_);
    return chunks_[static_cast<std::size_t>(i >> shift_)].get() + (i & (rows_per_chunk_ - 1)) * cols_;
  }
  /// Start of chunk c (rows c * rows_per_chunk() onwards); stays valid while rows are appended.
  const T* chunk_data(std::size_t c) const { return chunks_[c].get(); }

  /// Contiguous rows [first, first + count) of chunk c, as a matrix view.
  Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> chunk(std::size_t c) const {
    const Index first = static_cast<Index>(c) * rows_per_chunk_;
    const Index count = std::min(rows_per_chunk_, size_ - first);
    return {chunks_[c].get(), count, cols_};
  }

  /// Appends a row of cols() values and returns its index.
  Index append(const T* values) {
    T* dst = append_uninitialized();
    std::copy(values, values + cols_, dst);
    return size_ - 1;
  }

  /// Appends a row and returns a pointer to fill it.
  T* append_uninitialized() {
    if (size_ == static_cast<Index>(chunks_.size()) * rows_per_chunk_) {
      // Uninitialised on purpose (see class comment).
      chunks_.emplace_back(static_cast<T*>(allocate_chunk(chunk_bytes())));
    }
    ++size_;
    return row(size_ - 1);
  }

  /// Bytes reserved by the chunks, including those kept for reuse (address space; resident
  /// memory is what was written).
  std::size_t reserved_bytes() const { return chunks_.size() * chunk_bytes(); }

 private:
  std::size_t chunk_bytes() const {
    return sizeof(T) * static_cast<std::size_t>(rows_per_chunk_ * (cols_ > 0 ? cols_ : 1));
  }

  Index cols_ = 0;
  Index size_ = 0;
  Index rows_per_chunk_ = 64;
  int shift_ = 6;  // log2(rows_per_chunk_)
  std::vector<std::unique_ptr<T, ChunkFree>> chunks_;
};

/// Rows of floats.
using RowStore = BasicRowStore<float>;

}  // namespace detail
}  // namespace nnfuzz
