// SPDX-License-Identifier: MIT
// nnfuzz: what the inference-engine adapters (opencv_dnn.hpp, libtorch.hpp) have in common —
// the options that choose outputs by name, and the Output type holding the named tensors. Needs
// only the core (Eigen); the engines are included by the adapters themselves.
#pragma once

#include "../detail/config.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace nnfuzz {

/// How an engine adapter turns the outputs chosen for coverage into the coverage vector.
enum class CoverageReduce {
  concat,   ///< the values of each chosen output, flattened per input and concatenated
  sum_abs,  ///< one number per chosen output: Σ|x| over its values (TensorFuzz's NaN coverage on "logits")
};

/// The choice of outputs, common to the engine adapters.
struct EngineOutputs {
  /// Outputs whose values make the coverage vector, in this order (at least one).
  std::vector<std::string> coverage;
  /// More outputs to fetch for the objectives (NonFiniteObjective sees these and the coverage
  /// ones, in the order coverage..., outputs...; a name in both is fetched once).
  std::vector<std::string> outputs;
  /// How the coverage outputs become the coverage vector.
  CoverageReduce reduce = CoverageReduce::concat;
  /// Named intermediate outputs in the order the network computes them, the logits last (for
  /// localisation, regression/localize.hpp: the first of them over its tolerance is where two
  /// versions part). Fetched too; NamedOutputs::for_each_tensor visits these first, in this
  /// order, then the other outputs. Empty: the fetch order (coverage..., outputs...).
  std::vector<std::string> layers;
};

/// The reusable output of an engine adapter's evaluate(): every fetched output as a B × K
/// row-major matrix (K = the output's values per input, its non-batch axes flattened; copied out
/// of the engine's buffers into matrices that keep their storage from batch to batch), and the
/// coverage vectors.
struct NamedOutputs {
  RowMatrix coverage;              ///< B × C, per EngineOutputs::coverage and reduce
  std::vector<std::string> names;  ///< the fetched outputs' names
  std::vector<RowMatrix> tensors;  ///< tensors[i] is output names[i], B × K_i
  /// The order for_each_tensor() visits them (indices into names: EngineOutputs::layers first,
  /// then the others); empty: the fetch order.
  std::vector<std::size_t> order;

  /// The output called `name`. Throws std::invalid_argument listing the names there are.
  const RowMatrix& operator[](const std::string& name) const {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return tensors[i];
    std::string have;
    for (const std::string& n : names) have += (have.empty() ? "" : ", ") + n;
    detail::fail("NamedOutputs: no output '", name, "'; fetched: ", have.empty() ? "(none)" : have);
  }
  /// Visits every fetched output (NonFiniteObjective, localisation): EngineOutputs::layers first,
  /// in their order, then the others in the order fetched.
  template <class F>
  void for_each_tensor(F&& f) const {
    if (order.size() != names.size()) {
      for (std::size_t i = 0; i < names.size(); ++i) f(names[i].c_str(), tensors[i]);
      return;
    }
    for (std::size_t i : order) f(names[i].c_str(), tensors[i]);
  }
};

/// A VersionPair logits extractor for engine models: the output called `name` of a
/// NamedOutputs (throws std::invalid_argument naming the outputs there are when it has none).
///
///     nnfuzz::VersionPair pair(nnfuzz::OpenCvDnnModel("v1.onnx", o), nnfuzz::OpenCvDnnModel("v2.onnx", o),
///                              nnfuzz::OutputByName{"logits"});
struct OutputByName {
  std::string name;  ///< the output holding the logits
  /// `out[name]`.
  const RowMatrix& operator()(const NamedOutputs& out) const { return out[name]; }
};

namespace detail {

/// The fetch list: coverage names first, then the other outputs, each once. Fails (naming
/// `who`) when no coverage output is chosen or a name is empty.
inline std::vector<std::string> fetch_list(const char* who, const EngineOutputs& o) {
  if (o.coverage.empty())
    fail(who, ": option 'coverage' is empty: name at least one output (e.g. {\"logits\"} or a hidden layer)");
  std::vector<std::string> all;
  for (const auto* list : {&o.coverage, &o.outputs, &o.layers}) {
    const char* option = list == &o.coverage ? "coverage" : list == &o.outputs ? "outputs" : "layers";
    for (std::size_t i = 0; i < list->size(); ++i) {
      const std::string& n = (*list)[i];
      if (n.empty()) fail(who, ": an output name in option '", option, "' is empty");
      if (list != &o.outputs && std::find(list->begin(), list->begin() + static_cast<std::ptrdiff_t>(i), n) !=
                                    list->begin() + static_cast<std::ptrdiff_t>(i))
        fail(who, ": option '", option, "' names output '", n, "' twice");
      if (std::find(all.begin(), all.end(), n) == all.end()) all.push_back(n);
    }
  }
  return all;
}

/// NamedOutputs::order for a fetch list: the indices of o.layers, then the other outputs;
/// empty when o.layers is.
inline std::vector<std::size_t> visit_order(const EngineOutputs& o, const std::vector<std::string>& fetch) {
  std::vector<std::size_t> order;
  if (o.layers.empty()) return order;
  for (const std::string& n : o.layers)
    order.push_back(static_cast<std::size_t>(std::find(fetch.begin(), fetch.end(), n) - fetch.begin()));
  for (std::size_t i = 0; i < fetch.size(); ++i)
    if (std::find(o.layers.begin(), o.layers.end(), fetch[i]) == o.layers.end()) order.push_back(i);
  return order;
}

/// "{1, 28, 28}": an input shape option, for messages.
template <typename T>
std::string shape_text(const std::vector<T>& shape) {
  std::string s = "{";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "}";
}
/// Floats per input of an engine's input shape (without the batch axis); refuses an empty shape,
/// a dimension below 1 or a product that overflows, naming `who`.
template <typename T>
Index input_size(const char* who, const std::vector<T>& shape) {
  if (shape.empty())
    fail(who,
         ": option 'input_shape' is empty: give the shape of one input without the batch axis, "
         "e.g. {784} or {1, 28, 28}");
  Index size = 1;
  for (T d : shape) {
    if (d < 1) fail(who, ": option 'input_shape' has a dimension ", d, " (each must be >= 1)");
    // The product checked before it is taken: 65536^4 must not wrap to 0 floats per input.
    if (static_cast<std::uint64_t>(d) > static_cast<std::uint64_t>(std::numeric_limits<Index>::max() / size))
      fail(who, ": option 'input_shape' ", shape_text(shape), " holds more than ", std::numeric_limits<Index>::max(),
           " floats per input (the product of its dimensions overflows)");
    size *= static_cast<Index>(d);
  }
  return size;
}
/// The zero probe batch (2 inputs) an adapter's constructor runs once; an input_shape too large
/// to allocate is named (the option and the size), never a bare std::bad_alloc.
template <typename T>
RowMatrix probe_batch(const char* who, const std::vector<T>& shape, Index input_dim) {
  try {
    return RowMatrix::Zero(2, input_dim);
  } catch (const std::bad_alloc&) {
    fail(who, ": option 'input_shape' ", shape_text(shape), " (", input_dim,
         " floats per input) needs a probe batch of 2 x ", input_dim, " floats (",
         static_cast<double>(input_dim) * 8.0 / (1 << 20), " MiB): cannot allocate it");
  }
}
/// "a, b, c" (at most `max` names, then "… (N in all)").
inline std::string join_names(const std::vector<std::string>& names, std::size_t max = 40) {
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < max; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > max) s += message(", ... (", names.size(), " in all)");
  return s.empty() ? "(none)" : s;
}

/// The floats of a batch as one contiguous row-major block: batch.data() itself (the fuzzer's
/// batches always are), or a copy in `scratch` for a caller's strided view. Fails (naming `who`
/// and the engine's word for its model, `what`) when the width is not `input_dim`.
inline const float* contiguous_rows(const char* who, const char* what, const Eigen::Ref<const RowMatrix>& batch,
                                    Index input_dim, RowMatrix& scratch) {
  if (batch.cols() != input_dim)
    fail(who, ": the batch has ", batch.cols(), " columns, the ", what, " takes ", input_dim,
         " (option 'input_shape')");
  if (batch.rows() <= 1 || batch.outerStride() == batch.cols()) return batch.data();
  scratch = batch;
  return scratch.data();
}

/// Fills out.coverage from the first `n_coverage` tensors (their order in the fetch list).
inline void fill_coverage(NamedOutputs& out, std::size_t n_coverage, CoverageReduce reduce) {
  const Index rows = out.tensors.empty() ? 0 : out.tensors[0].rows();
  if (reduce == CoverageReduce::sum_abs) {
    out.coverage.resize(rows, static_cast<Index>(n_coverage));
    for (std::size_t i = 0; i < n_coverage; ++i)
      out.coverage.col(static_cast<Index>(i)) = out.tensors[i].cwiseAbs().rowwise().sum();
    return;
  }
  Index cols = 0;
  for (std::size_t i = 0; i < n_coverage; ++i) cols += out.tensors[i].cols();
  if (n_coverage == 1) {
    out.coverage = out.tensors[0];  // same shape every batch: no reallocation
    return;
  }
  out.coverage.resize(rows, cols);
  Index c = 0;
  for (std::size_t i = 0; i < n_coverage; ++i) {
    out.coverage.middleCols(c, out.tensors[i].cols()) = out.tensors[i];
    c += out.tensors[i].cols();
  }
}

}  // namespace detail
}  // namespace nnfuzz
