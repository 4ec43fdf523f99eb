// SPDX-License-Identifier: MIT
// nnfuzz: the input spaces the loop is generic over (internal): dense float rows (a model with
// input_dim()) and structured inputs (a model with an InputLayout: token sequences, several
// parts). Everything that differs between the two lives here, so fuzzer.hpp has one path.
#pragma once

#include "../../corpus.hpp"
#include "../../fuzz_types.hpp"
#include "../../input.hpp"
#include "../config.hpp"
#include "../traits.hpp"

#include <limits>
#include <new>
#include <string>
#include <vector>

namespace nnfuzz {
namespace detail {

template <typename Model, typename Space = input_space_t<Model>>
class InputSpace;

/// Dense rows: a batch is a B×D row-major matrix, an input a RowVector.
template <typename Model>
class InputSpace<Model, DenseInputs> {
 public:
  using Seeds = Eigen::Ref<const RowMatrix>;           ///< what run() takes
  using Value = Eigen::Ref<const RowVector>;           ///< what replay() takes
  using ObjectiveBatch = Eigen::Ref<const RowMatrix>;  ///< what the objective's check() sees
  static constexpr const char* kSeedsHint = "a matrix, one row per input";
  static constexpr const char* kFindingMember = "input";  ///< the Finding member that holds the input

  /// A reusable batch buffer.
  class Buffer {
   public:
    /// Room for `capacity` rows of the model's inputs.
    void reserve(const Model& m, Index capacity) { rows_.resize(capacity, m.input_dim()); }
    /// Room for `n` rows shaped like `other`'s.
    void shape_like(const Buffer& other, Index n) { rows_.resize(n, other.rows_.cols()); }
    /// The first n rows, as the model, mutator and objective take them.
    auto view(Index n) { return rows_.topRows(n); }
    /// Row r := row `from` of `src` (a view of another buffer, or seeds).
    template <typename Rows>
    void copy_row(Index r, const Rows& src, Index from) {
      rows_.row(r) = src.row(from);
    }
    /// Rows [0, n) := seeds [first, first + n).
    void set_seeds(const Seeds& seeds, Index first, Index n) { rows_.topRows(n) = seeds.middleRows(first, n); }
    /// True when every value of row r is finite (a non-finite input is never stored).
    bool row_finite(Index r) const { return row_all_finite(rows_, r); }
    /// Checks what a mutator wrote into the first n rows (nothing to check for floats).
    void check_mutants(Index) const {}
    /// Appends row r to the corpus.
    Index append(Corpus& c, Index r, const float* cov, Index parent, Index root, Index depth,
                 std::uint64_t execution) const {
      return c.add(rows_.row(r).data(), cov, parent, root, depth, execution);
    }
    /// Row r of `rows` (a view of this buffer) into the finding.
    template <typename Rows>
    static void to_finding(Finding& f, const Rows& rows, Index r) {
      f.input = rows.row(r);
    }

   private:
    RowMatrix rows_;
  };

  /// Floats per input (the batch buffer's row width).
  static Index cells(const Model& m) { return m.input_dim(); }
  /// Seeds given.
  static Index count(const Seeds& s) { return s.rows(); }
  /// Checks the seeds: some, the model's width, finite; then the mutator's own check.
  template <typename Mutator>
  static void check_seeds(const Model& m, const Mutator& mutator, const Seeds& seeds) {
    if (seeds.rows() == 0) fail("Fuzzer::run(): no seeds (the seed matrix has 0 rows)");
    if (seeds.cols() != m.input_dim())
      fail("Fuzzer::run(): seeds have ", seeds.cols(), " columns, the model takes ", m.input_dim(), " inputs per row");
    if (!all_finite(seeds)) {
      for (Index r = 0; r < seeds.rows(); ++r)
        for (Index c = 0; c < seeds.cols(); ++c)
          if (!is_finite(seeds(r, c)))
            fail("Fuzzer::run(): seed ", r, " element ", c, " is ", seeds(r, c), " (seeds must be finite)");
    }
    if constexpr (has_check_seeds<Mutator>::value) mutator.check_seeds(seeds);
  }
  /// Checks one input given to replay() and copies it into rows [0, n) of `buf`.
  static void fill_replay(const Model& m, const Value& input, Buffer& buf, Index n) {
    if (input.cols() != m.input_dim())
      fail("Fuzzer::replay(): input has ", input.cols(), " elements, the model takes ", m.input_dim());
    buf.reserve(m, n);
    for (Index r = 0; r < n; ++r) buf.copy_row(r, input, 0);
  }
  /// A finding's input, as replay() takes it.
  static Value finding_input(const Finding& f) { return f.input; }
  /// Stored element i, as the mutator takes it.
  static auto stored(const Corpus& c, Index i) { return c.input(i); }
  /// Starts an empty corpus for the model's inputs.
  static void reset_corpus(Corpus& c, const Model& m, Index coverage_dim) { c.reset(m.input_dim(), coverage_dim); }
  /// Throws unless the corpus holds inputs the model takes (`who` names the caller).
  static void check_corpus(const char* who, const Model& m, const Corpus& c) {
    if (c.structured() || c.input_dim() != m.input_dim())
      fail(who, ": corpus inputs have ", c.structured() ? c.layout().describe() : message(c.input_dim(), " elements"),
           ", the model takes ", m.input_dim());
  }
  /// Throws unless element i of `c` is finite (an element handed over by a stage).
  static void check_element(const char* who, const Corpus& c, Index i) {
    if (!all_finite(c.input(i).data(), static_cast<std::size_t>(c.input_dim())))
      fail(who, ": element ", i, " has a non-finite input value");
  }
};

/// Structured inputs (InputLayout): a batch is an InputBatch, an input an InputValue.
template <typename Model>
class InputSpace<Model, StructuredInputs> {
 public:
  using Seeds = std::vector<InputValue>;
  using Value = InputValue;
  using ObjectiveBatch = InputBatch;
  static constexpr const char* kSeedsHint = "a std::vector<nnfuzz::InputValue>";
  static constexpr const char* kFindingMember = "value";  ///< the Finding member that holds the input

  /// A reusable batch buffer.
  class Buffer {
   public:
    void reserve(const Model& m, Index capacity) { batch_.reserve(m.input_layout(), capacity); }
    void shape_like(const Buffer& other, Index n) {
      if (batch_.rows() != n || batch_.layout() != other.batch_.layout()) batch_.reserve(other.batch_.layout(), n);
    }
    InputBatch& view(Index n) {
      batch_.set_rows(n);
      return batch_;
    }
    template <typename Rows>
    void copy_row(Index r, const Rows& src, Index from) {
      batch_.set_row(r, src.value(from));
    }
    void copy_row(Index r, const InputValue& v, Index) { batch_.set_row(r, v); }
    void copy_row(Index r, const InputView& v, Index) { batch_.set_row(r, v); }
    void set_seeds(const Seeds& seeds, Index first, Index n) {
      for (Index r = 0; r < n; ++r) batch_.set_row(r, seeds[static_cast<std::size_t>(first + r)]);
    }
    bool row_finite(Index r) const { return batch_.row_finite(r); }
    // Structured mutants reach the model only with lengths in [1, max_len] and ids in
    // [0, vocab): a mutator's bug must not become an out-of-range embedding lookup in the
    // user's model.
    void check_mutants(Index n) const {
      const InputLayout& layout = batch_.layout();
      for (Index p = 0; p < layout.size(); ++p) {
        const InputPart& part = layout.part(p);
        if (part.kind != InputPart::Kind::tokens) continue;
        for (Index r = 0; r < n; ++r) {
          const Index len = batch_.length(p, r);
          if (len < 1 || len > part.width)
            fail("Fuzzer::run(): the mutator gave row ", r, " of part '", part.name, "' length ", len, " (must be 1..",
                 part.width, ")");
          const TokenId* ids = batch_.ids(p, r);
          for (Index i = 0; i < len; ++i)
            if (ids[i] < 0 || ids[i] >= part.vocab)
              fail("Fuzzer::run(): the mutator wrote token ", ids[i], " at position ", i, " of row ", r, " of part '",
                   part.name, "', outside [0, ", part.vocab, ")");
        }
      }
    }
    Index append(Corpus& c, Index r, const float* cov, Index parent, Index root, Index depth,
                 std::uint64_t execution) const {
      return c.add(batch_, r, cov, parent, root, depth, execution);
    }
    static void to_finding(Finding& f, const InputBatch& rows, Index r) { f.value = rows.value(r); }

   private:
    InputBatch batch_;
  };

  static Index cells(const Model& m) {
    const InputLayout layout = m.input_layout();
    if (layout.size() == 0) fail("Fuzzer::run(): the model's input_layout() has no parts");
    return layout.float_cells() + layout.token_cells();
  }
  static Index count(const Seeds& s) { return static_cast<Index>(s.size()); }
  template <typename Mutator>
  static void check_seeds(const Model& m, const Mutator& mutator, const Seeds& seeds) {
    if (seeds.empty()) fail("Fuzzer::run(): no seeds (the seed vector is empty)");
    const InputLayout layout = m.input_layout();
    for (std::size_t i = 0; i < seeds.size(); ++i) check_input("Fuzzer::run()", message("seed ", i), layout, seeds[i]);
    if constexpr (has_check_seeds_structured<Mutator>::value) mutator.check_seeds(seeds);
  }
  static void fill_replay(const Model& m, const Value& input, Buffer& buf, Index n) {
    check_input("Fuzzer::replay()", "the input", m.input_layout(), input);
    buf.reserve(m, n);
    for (Index r = 0; r < n; ++r) buf.copy_row(r, input, 0);
  }
  static const Value& finding_input(const Finding& f) { return f.value; }
  static InputView stored(const Corpus& c, Index i) { return c.view(i); }
  static void reset_corpus(Corpus& c, const Model& m, Index coverage_dim) { c.reset(m.input_layout(), coverage_dim); }
  static void check_corpus(const char* who, const Model& m, const Corpus& c) {
    if (!c.structured() || c.layout() != m.input_layout())
      fail(who, ": the corpus holds ", c.structured() ? c.layout().describe() : message(c.input_dim(), " floats"),
           ", the model takes ", m.input_layout().describe());
  }
  static void check_element(const char* who, const Corpus& c, Index i) {
    check_input(who, message("element ", i), c.layout(), c.view(i).value());
  }
};

}  // namespace detail
}  // namespace nnfuzz
