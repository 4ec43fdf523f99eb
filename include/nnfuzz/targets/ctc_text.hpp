// SPDX-License-Identifier: MIT
// nnfuzz: CtcTextModel — a text recogniser's per-step class probabilities (CTC, as PaddleOCR's
// rec model writes them) decoded into the text the objectives on text read.
#pragma once

#include "../detail/config.hpp"
#include "../detail/traits.hpp"

#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace nnfuzz {

namespace detail {
// Whether a model's Output names its tensors (an engine adapter's NamedOutputs).
template <typename O, typename = void>
struct has_named_outputs : std::false_type {};
template <typename O>
struct has_named_outputs<O, void_t<decltype(std::declval<const O&>()[std::string()])>> : std::true_type {};
// The per-step probabilities: the output called `name`, or `logits` (FunctionModel, Mlp).
template <typename O>
const RowMatrix& ctc_probabilities(const O& out, const std::string& name) {
  if constexpr (has_named_outputs<O>::value)
    return out[name];
  else
    return out.logits;
}
}  // namespace detail

/// Options of CtcTextModel.
struct CtcTextOptions {
  /// The inner model's output of per-step class probabilities: B × (T · C), step-major (step t's
  /// C classes at [t·C, (t+1)·C)), read through `Inner::Output::operator[](name)` (an engine
  /// adapter's NamedOutputs). A model whose Output has no names (FunctionModel over your own
  /// `float*` forward) gives them as its `logits`; leave this empty then.
  std::string probabilities;
  /// The classes after the blank: class k ≥ 1 writes keys[k − 1] (one line of PaddleOCR's
  /// ppocr_keys_v1.txt each, then " "); class 0 is the CTC blank. C = keys.size() + 1.
  std::vector<std::string> keys;
};

/// Model policy over an Inner model (OpenCvDnnModel, LibTorchModel, any model whose Output has
/// `const RowMatrix& operator[](const std::string&) const`, or FunctionModel and any model whose
/// Output has `RowMatrix logits`) that decodes each row greedily: the
/// most probable class per step, repeats merged, blanks dropped (PaddleOCR's CTCLabelDecode).
/// Its Output is the inner Output (coverage, tensors: the coverage and NonFiniteObjective see
/// what they saw) plus what the text objectives (objectives/text.hpp) read:
///   - `texts`: the decoded text per row;
///   - `char_prob(row, pos, c)`: the probability, at the step that wrote byte `pos` of
///     texts[row], of the class that writes the single byte `c` (0 when no key is `c`; NaN past
///     the text), so BlacklistObjective's progress fitness guides the search toward a word;
///   - `step_of(row, pos)`: that step.
/// Keys of several bytes (UTF-8) decode whole; char_prob() answers for one-byte keys only.
template <typename Inner>
class CtcTextModel {
 public:
  /// The inner Output and the decoded texts.
  struct Output : Inner::Output {
    std::vector<std::string> texts;                           ///< the decoded text of each row
    std::vector<std::vector<Index>> steps;                    ///< steps[row][pos]: the step that wrote byte pos
    std::string probabilities;                                ///< the output they were decoded from
    std::shared_ptr<const std::vector<Index>> class_of_byte;  ///< class writing each byte (-1: none)
    Index classes = 0;                                        ///< classes per step

    /// The probability, at the step that wrote byte `pos` of texts[row], of writing byte c.
    float char_prob(Index row, std::size_t pos, char c) const {
      const auto& s = steps[static_cast<std::size_t>(row)];
      if (pos >= s.size()) return std::numeric_limits<float>::quiet_NaN();
      const Index k = (*class_of_byte)[static_cast<unsigned char>(c)];
      return k < 0 ? 0.0f : detail::ctc_probabilities(*this, probabilities)(row, s[pos] * classes + k);
    }
    /// The step that wrote byte `pos` of texts[row] (-1 past the text).
    Index step_of(Index row, std::size_t pos) const {
      const auto& s = steps[static_cast<std::size_t>(row)];
      return pos < s.size() ? s[pos] : -1;
    }
  };

  /// `inner`: the recogniser; `options`: which output holds the probabilities, and the keys.
  /// Throws std::invalid_argument for an empty output name (of a model with named outputs) or
  /// key list, or an empty key.
  CtcTextModel(Inner inner, CtcTextOptions options) : inner_(std::move(inner)), options_(std::move(options)) {
    if (detail::has_named_outputs<typename Inner::Output>::value && options_.probabilities.empty())
      detail::fail("CtcTextModel(): option 'probabilities' is empty");
    if (options_.keys.empty()) detail::fail("CtcTextModel(): option 'keys' is empty");
    auto classes = std::make_shared<std::vector<Index>>(256, -1);
    for (std::size_t k = 0; k < options_.keys.size(); ++k) {
      const std::string& key = options_.keys[k];
      if (key.empty()) detail::fail("CtcTextModel(): key ", k + 1, " (class ", k + 1, ") is empty");
      if (key.size() == 1 && (*classes)[static_cast<unsigned char>(key[0])] < 0)
        (*classes)[static_cast<unsigned char>(key[0])] = static_cast<Index>(k + 1);
    }
    class_of_byte_ = std::move(classes);
  }

  /// Floats per input (the inner model's).
  Index input_dim() const { return inner_.input_dim(); }
  /// The inner model's input shape (DefaultMutator's image patches), when it has one.
  template <typename I = Inner>
  auto input_shape() const -> decltype(std::declval<const I&>().input_shape()) {
    return inner_.input_shape();
  }
  /// Classes per step: keys + the blank.
  Index classes() const { return static_cast<Index>(options_.keys.size()) + 1; }

  /// Runs the inner model, then decodes every row. Throws std::invalid_argument when the
  /// probabilities are not T × classes() per row.
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) {
    inner_.evaluate(batch, out);
    const RowMatrix& p = detail::ctc_probabilities(out, options_.probabilities);
    const Index c = classes();
    if (p.cols() % c != 0 || p.rows() != batch.rows())
      detail::fail("CtcTextModel::evaluate(): output '",
                   options_.probabilities.empty() ? "logits" : options_.probabilities, "' holds ", p.rows(), " x ",
                   p.cols(), " values, not ", batch.rows(), " x (steps x ", c, " classes)");
    out.probabilities = options_.probabilities;
    out.class_of_byte = class_of_byte_;
    out.classes = c;
    const auto rows = static_cast<std::size_t>(batch.rows());
    out.texts.resize(rows);
    out.steps.resize(rows);
    for (Index r = 0; r < batch.rows(); ++r) {
      std::string& text = out.texts[static_cast<std::size_t>(r)];
      std::vector<Index>& steps = out.steps[static_cast<std::size_t>(r)];
      text.clear();
      steps.clear();
      Index last = 0;
      for (Index t = 0; t < p.cols() / c; ++t) {
        Index k = 0;
        p.row(r).segment(t * c, c).maxCoeff(&k);
        if (k != 0 && k != last) {
          const std::string& key = options_.keys[static_cast<std::size_t>(k - 1)];
          text += key;
          steps.insert(steps.end(), key.size(), t);
        }
        last = k;
      }
    }
  }

  /// The inner model.
  Inner& inner() { return inner_; }
  /// The options.
  const CtcTextOptions& options() const { return options_; }

 private:
  Inner inner_;
  CtcTextOptions options_;
  std::shared_ptr<const std::vector<Index>> class_of_byte_;  // class of each one-byte key (-1: none)
};

}  // namespace nnfuzz
