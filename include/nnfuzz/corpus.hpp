// SPDX-License-Identifier: MIT
// nnfuzz: the corpus of inputs the fuzzer mutates.
#pragma once

#include "detail/config.hpp"
#include "detail/row_store.hpp"
#include "input.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace nnfuzz {

/// Bookkeeping of one corpus element. The element's input and coverage vector live in the
/// corpus' row stores, at the same index as the entry.
struct CorpusEntry {
  Index id = 0;                    ///< position in the corpus (0-based, insertion order)
  Index parent = -1;               ///< id of the element it was mutated from; -1 for a seed
  Index root = 0;                  ///< index of the seed (in the seed matrix) its chain starts from
  Index depth = 0;                 ///< mutations from the seed: 0 for a seed
  std::uint64_t execution = 0;     ///< executions done when it was added (0 for seeds)
  std::uint64_t times_picked = 0;  ///< how often a sampler chose it as a parent
  std::uint64_t children = 0;      ///< elements added to the corpus with this one as parent
  /// The objective's fitness of this input (higher = closer to firing; see objectives.hpp,
  /// WithFitness), NaN when the objective has none or the element came from a saved corpus.
  float fitness = std::numeric_limits<float>::quiet_NaN();
};

/// The inputs kept by the fuzzer with their coverage vectors and lineage.
///
/// Dense corpora (the default) hold rows of input_dim() floats: input(i). Structured corpora
/// (models with an InputLayout: token sequences, several parts) hold each input's float parts
/// and token parts (ids padded to max_len, then the length): view(i).
///
/// Memory per element: `4 * (input_dim + coverage_dim)` bytes of rows plus
/// `sizeof(CorpusEntry)` (64 bytes): 3,240 bytes for a 784-pixel MNIST input with a 10-d
/// coverage vector. Rows are stored in 4 MiB chunks (never moved, never reallocated per element).
class Corpus {
 public:
  Corpus() = default;
  /// An empty corpus of inputs of `input_dim` floats and coverage vectors of `coverage_dim`.
  Corpus(Index input_dim, Index coverage_dim) { reset(input_dim, coverage_dim); }

  /// An empty corpus of structured inputs of `layout`.
  Corpus(const InputLayout& layout, Index coverage_dim) { reset(layout, coverage_dim); }

  /// Drops every element and sets the dimensions (dense inputs).
  void reset(Index input_dim, Index coverage_dim) { reset_shape(false, InputLayout(), input_dim, 0, coverage_dim); }
  /// Drops every element and sets the layout (structured inputs).
  void reset(const InputLayout& layout, Index coverage_dim) {
    reset_shape(true, layout, layout.float_cells(), layout.token_cells(), coverage_dim);
  }
  /// True for a corpus of structured inputs (view(), layout()); false for dense rows (input()).
  bool structured() const { return structured_; }
  /// The layout of a structured corpus (empty for a dense one).
  const InputLayout& layout() const { return layout_; }
  /// Structured input of element i.
  InputView view(Index i) const {
    NNFUZZ_ASSERT(structured_);
    return {&layout_, inputs_.cols() > 0 ? inputs_.row(i) : nullptr, tokens_.cols() > 0 ? tokens_.row(i) : nullptr};
  }
  /// Executions of the campaign when this corpus was last brought up to date (0: unknown); saved
  /// with it, so that resume() numbers on from where the session stopped, not from the last
  /// element added.
  std::uint64_t executions() const { return executions_; }
  /// Sets executions().
  void set_executions(std::uint64_t n) { executions_ = n; }
  /// What the coverage policy had learned when this corpus was last brought up to date, as its
  /// save_state() bytes (CalibratedCoverage: the radius and its adaptation), empty when the
  /// policy keeps none or nothing was recorded. Opaque to the corpus; saved with it (corpus.bin
  /// version 3), and Fuzzer::resume() hands it to the policy's restore_state(). reset() and
  /// reset_like() clear it, add_from() does not copy it: a corpus built from other corpora (a
  /// merge, a sync queue file) has none unless one is set.
  const std::vector<std::uint8_t>& coverage_state() const { return coverage_state_; }
  /// Sets coverage_state() (the Fuzzer does whenever it brings the corpus up to date: after each
  /// batch, so before every on_corpus() callback and stage, and at the end of a run);
  /// `set_coverage_state({})` makes resume() start the policy afresh.
  void set_coverage_state(std::vector<std::uint8_t> state) { coverage_state_ = std::move(state); }
  /// Int cells per structured input (token ids and lengths; 0 for a dense corpus).
  Index token_cells() const { return tokens_.cols(); }
  /// The input_dim() float cells of element i, for either kind (a dense row, or a structured
  /// input's float parts together); nullptr when the inputs have none. With tokens_data(), what
  /// code that stores or copies elements needs, with no branch on the input kind.
  const float* floats_data(Index i) const { return inputs_.cols() > 0 ? inputs_.row(i) : nullptr; }
  /// The token_cells() int cells of element i (token ids padded to max_len, then the length, per
  /// token part); nullptr when the inputs have none (a dense corpus).
  const TokenId* tokens_data(Index i) const { return tokens_.cols() > 0 ? tokens_.row(i) : nullptr; }
  /// The inputs' shape in words, for messages: "784 floats", or the layout's describe().
  std::string describe_inputs() const {
    return structured_ ? layout_.describe() : std::to_string(inputs_.cols()) + " floats";
  }

  /// Number of elements.
  Index size() const { return static_cast<Index>(entries_.size()); }
  /// True when there are no elements.
  bool empty() const { return entries_.empty(); }
  /// Floats per input (for a structured corpus: its float cells, the float parts together).
  Index input_dim() const { return inputs_.cols(); }
  /// Floats per coverage vector.
  Index coverage_dim() const { return coverage_.cols(); }

  /// Input of element i.
  Eigen::Map<const RowVector> input(Index i) const { return {inputs_.row(i), inputs_.cols()}; }
  /// Coverage vector of element i.
  Eigen::Map<const RowVector> coverage(Index i) const { return {coverage_.row(i), coverage_.cols()}; }
  /// Lineage and counters of element i.
  const CorpusEntry& entry(Index i) const {
    NNFUZZ_ASSERT(i >= 0 && i < size());
    return entries_[static_cast<std::size_t>(i)];
  }
  /// All entries, in insertion order.
  const std::vector<CorpusEntry>& entries() const { return entries_; }

  /// Appends an element (input_dim() and coverage_dim() floats) and returns its id.
  Index add(const float* input, const float* coverage, Index parent, Index root, Index depth, std::uint64_t execution) {
    if (inputs_.cols() == 0) {  // a structured input with no float part: keep the stores aligned
      inputs_.append_uninitialized();
      input = nullptr;
    }
    if (input) inputs_.append(input);
    return push_entry(coverage, parent, root, depth, execution);
  }

  /// Appends a structured element from its cells (InputView layout) and returns its id.
  Index add_cells(const float* floats, const TokenId* tokens, const float* coverage, Index parent, Index root,
                  Index depth, std::uint64_t execution) {
    NNFUZZ_ASSERT(structured_);
    if (tokens_.cols() > 0) std::copy(tokens, tokens + tokens_.cols(), tokens_.append_uninitialized());
    return add(floats, coverage, parent, root, depth, execution);
  }
  /// Appends row r of a structured batch and returns its id.
  Index add(const InputBatch& batch, Index r, const float* coverage, Index parent, Index root, Index depth,
            std::uint64_t execution) {
    NNFUZZ_ASSERT(structured_);
    float* f = inputs_.append_uninitialized();
    TokenId* t = tokens_.cols() > 0 ? tokens_.append_uninitialized() : scratch_tokens();
    batch.pack(r, f, t);
    return push_entry(coverage, parent, root, depth, execution);
  }

  /// Appends element k of `src` (a corpus of the same shape: same_shape()) and returns its id.
  Index add_from(const Corpus& src, Index k, Index parent, Index root, Index depth, std::uint64_t execution) {
    NNFUZZ_ASSERT(same_shape(src));
    if (tokens_.cols() > 0)
      std::copy(src.tokens_data(k), src.tokens_data(k) + tokens_.cols(), tokens_.append_uninitialized());
    return add(src.floats_data(k), src.coverage(k).data(), parent, root, depth, execution);
  }
  /// True when `o` holds inputs and coverage vectors shaped like this corpus' (add_from() works).
  bool same_shape(const Corpus& o) const {
    return structured_ == o.structured_ && input_dim() == o.input_dim() && token_cells() == o.token_cells() &&
           coverage_dim() == o.coverage_dim() && (!structured_ || layout_ == o.layout_);
  }
  /// Empties this corpus and gives it the shape of `o` (no-op on the shape when it has it already).
  void reset_like(const Corpus& o) {
    reset_shape(o.structured_, o.layout_, o.input_dim(), o.token_cells(), o.coverage_dim());
  }

  /// Reserves room for n entries' bookkeeping (rows grow in chunks anyway).
  void reserve(Index n) { entries_.reserve(static_cast<std::size_t>(n)); }

  /// Sets how often element i was picked (restoring a saved corpus).
  void set_times_picked(Index i, std::uint64_t n) { entries_[static_cast<std::size_t>(i)].times_picked = n; }
  /// Records that a sampler picked element i.
  void mark_picked(Index i) { ++entries_[static_cast<std::size_t>(i)].times_picked; }
  /// Sets the fitness of element i (the Fuzzer does, when its objective has a fitness).
  void set_fitness(Index i, float fitness) { entries_[static_cast<std::size_t>(i)].fitness = fitness; }

  /// Bytes of rows and entries in use (what the docs' per-element figure counts).
  std::size_t memory_bytes() const {
    return static_cast<std::size_t>(size()) *
           (sizeof(float) * static_cast<std::size_t>(input_dim() + token_cells() + coverage_dim()) +
            sizeof(CorpusEntry));
  }

 private:
  // The one reset: both kinds' stores, with the cells per input the layout (or a dense width) gives.
  void reset_shape(bool structured, const InputLayout& layout, Index float_cells, Index token_cells,
                   Index coverage_dim) {
    structured_ = structured;
    executions_ = 0;
    layout_ = layout;
    inputs_.reset(float_cells);
    tokens_.reset(token_cells);
    coverage_.reset(coverage_dim);
    entries_.clear();
    coverage_state_.clear();
  }
  // Appends the coverage vector and the entry, once the input's cells are stored.
  Index push_entry(const float* coverage, Index parent, Index root, Index depth, std::uint64_t execution) {
    CorpusEntry e;
    e.id = size();
    e.parent = parent;
    e.root = root;
    e.depth = depth;
    e.execution = execution;
    coverage_.append(coverage);
    if (parent >= 0 && parent < size()) ++entries_[static_cast<std::size_t>(parent)].children;
    entries_.push_back(e);
    return e.id;
  }
  TokenId* scratch_tokens() {
    scratch_.resize(1);
    return scratch_.data();
  }
  bool structured_ = false;
  std::uint64_t executions_ = 0;
  InputLayout layout_;
  detail::RowStore inputs_;
  detail::BasicRowStore<TokenId> tokens_;
  detail::RowStore coverage_;
  std::vector<TokenId> scratch_;
  std::vector<CorpusEntry> entries_;
  std::vector<std::uint8_t> coverage_state_;  // the coverage policy's save_state(), opaque
};

}  // namespace nnfuzz
