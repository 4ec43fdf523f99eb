// SPDX-License-Identifier: MIT
// nnfuzz: structured inputs — token sequences and inputs made of several parts.
//
// Dense float rows (a model with `Index input_dim() const`) are nnfuzz's default input space and
// use none of this. A model whose inputs are token ids, or several tensors, declares its layout
// instead:
//
//     nnfuzz::InputLayout input_layout() const {
//       return nnfuzz::InputLayout().tokens("prompt", /*vocab=*/96, /*max_len=*/64)
//                                   .floats("noise", /*width=*/200);
//     }
//     void evaluate(const nnfuzz::InputBatch& batch, Output& out);
//
// and receives batches that are engine-ready: per token part a B × max_len row-major int32
// matrix of ids (padded with 0 past each row's length) and a vector of B lengths; per float part
// a B × width row-major float matrix. Every part is contiguous.
#pragma once

#include "detail/config.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace nnfuzz {

/// Token ids, as stored and as handed to models.
using TokenId = std::int32_t;
/// B × max_len token ids, row-major (one sequence per row).
using TokenMatrix = Eigen::Matrix<TokenId, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// One part of a structured input.
struct InputPart {
  /// What a part holds.
  enum class Kind {
    floats,  ///< `width` floats
    tokens   ///< 1..`width` token ids in [0, vocab)
  };
  std::string name;          ///< for messages and descriptions
  Kind kind = Kind::floats;  ///< floats or tokens
  Index width = 0;           ///< floats per input, or the maximum sequence length
  Index vocab = 0;           ///< token parts: ids are in [0, vocab)
};

/// The parts of a structured input, in order. Built with tokens() / floats().
class InputLayout {
 public:
  /// Adds a token-sequence part: sequences of 1..max_len ids in [0, vocab).
  InputLayout& tokens(std::string name, Index vocab, Index max_len) {
    if (vocab < 1 || vocab > (Index{1} << 30))
      detail::fail("InputLayout::tokens(): option 'vocab' of part '", name, "' must be in [1, 2^30], got ", vocab);
    if (max_len < 1 || max_len > (Index{1} << 24))
      detail::fail("InputLayout::tokens(): option 'max_len' of part '", name, "' must be in [1, 2^24], got ", max_len);
    parts_.push_back({std::move(name), InputPart::Kind::tokens, max_len, vocab});
    return *this;
  }
  /// Adds a part of `width` floats.
  InputLayout& floats(std::string name, Index width) {
    if (width < 1 || width > (Index{1} << 24))
      detail::fail("InputLayout::floats(): option 'width' of part '", name, "' must be in [1, 2^24], got ", width);
    parts_.push_back({std::move(name), InputPart::Kind::floats, width, 0});
    return *this;
  }
  /// The parts, in order.
  const std::vector<InputPart>& parts() const { return parts_; }
  /// Number of parts.
  Index size() const { return static_cast<Index>(parts_.size()); }
  /// Part p.
  const InputPart& part(Index p) const { return parts_.at(static_cast<std::size_t>(p)); }
  /// Sum of the float parts' widths (float cells per stored input).
  Index float_cells() const {
    Index n = 0;
    for (const InputPart& p : parts_) n += p.kind == InputPart::Kind::floats ? p.width : 0;
    return n;
  }
  /// Sum over token parts of max_len + 1 (ids and the length: int cells per stored input).
  Index token_cells() const {
    Index n = 0;
    for (const InputPart& p : parts_) n += p.kind == InputPart::Kind::tokens ? p.width + 1 : 0;
    return n;
  }
  /// Same parts, names included.
  bool operator==(const InputLayout& o) const {
    if (parts_.size() != o.parts_.size()) return false;
    for (std::size_t i = 0; i < parts_.size(); ++i) {
      const InputPart &a = parts_[i], &b = o.parts_[i];
      if (a.name != b.name || a.kind != b.kind || a.width != b.width || a.vocab != b.vocab) return false;
    }
    return true;
  }
  /// Not the same parts.
  bool operator!=(const InputLayout& o) const { return !(*this == o); }
  /// "tokens 'prompt' (vocab 96, max 64) + floats 'noise' (200)".
  std::string describe() const {
    std::string s;
    for (const InputPart& p : parts_) {
      if (!s.empty()) s += " + ";
      s += p.kind == InputPart::Kind::tokens
               ? detail::message("tokens '", p.name, "' (vocab ", p.vocab, ", max ", p.width, ")")
               : detail::message("floats '", p.name, "' (", p.width, ")");
    }
    return s.empty() ? "(no parts)" : s;
  }

 private:
  std::vector<InputPart> parts_;
};

/// One structured input, owned: what seeds are given as and what Finding::value holds. Parts in
/// layout order; `tokens[p]` is used for token parts, `floats[p]` for float parts (the other is
/// empty).
struct InputValue {
  std::vector<std::vector<TokenId>> tokens;  ///< per part: the ids (token parts)
  std::vector<RowVector> floats;             ///< per part: the floats (float parts)

  /// An input of `layout` with empty sequences and zero floats.
  explicit InputValue(const InputLayout& layout = InputLayout()) {
    tokens.resize(layout.parts().size());
    floats.resize(layout.parts().size());
    for (std::size_t p = 0; p < layout.parts().size(); ++p)
      if (layout.parts()[p].kind == InputPart::Kind::floats) floats[p] = RowVector::Zero(layout.parts()[p].width);
  }
  /// Same ids and the same float bits.
  bool operator==(const InputValue& o) const { return tokens == o.tokens && floats == o.floats; }
  /// Not equal.
  bool operator!=(const InputValue& o) const { return !(*this == o); }
};

/// Builds a one-part token input.
inline InputValue token_input(std::vector<TokenId> ids) {
  InputValue v;
  v.tokens.push_back(std::move(ids));
  v.floats.emplace_back();
  return v;
}

/// A stored structured input (read-only pointers into the corpus or a batch).
class InputView {
 public:
  InputView() = default;
  /// Views the cells of one input: `f` float cells and `t` int cells laid out as InputLayout says.
  InputView(const InputLayout* layout, const float* f, const TokenId* t) : layout_(layout), f_(f), t_(t) {}
  /// The layout.
  const InputLayout& layout() const { return *layout_; }
  /// Token part p: its length.
  Index length(Index p) const { return t_[token_offset(p) + layout_->part(p).width]; }
  /// Token part p: pointer to its ids (length(p) of them, then padding up to max_len).
  const TokenId* ids(Index p) const { return t_ + token_offset(p); }
  /// Float part p.
  Eigen::Map<const RowVector> floats(Index p) const { return {f_ + float_offset(p), layout_->part(p).width}; }
  /// An owned copy.
  InputValue value() const {
    InputValue v(*layout_);
    for (Index p = 0; p < layout_->size(); ++p) {
      if (layout_->part(p).kind == InputPart::Kind::tokens)
        v.tokens[static_cast<std::size_t>(p)].assign(ids(p), ids(p) + length(p));
      else
        v.floats[static_cast<std::size_t>(p)] = floats(p);
    }
    return v;
  }
  /// All float cells (the float parts, in order); nullptr when there are none.
  const float* floats_data() const { return f_; }
  /// All token cells (per token part: max_len ids, then the length); nullptr when there are none.
  const TokenId* tokens_data() const { return t_; }
  /// Float cells of the part before p (its offset).
  Index float_offset(Index p) const {
    Index o = 0;
    for (Index q = 0; q < p; ++q) o += layout_->part(q).kind == InputPart::Kind::floats ? layout_->part(q).width : 0;
    return o;
  }
  /// Int cells before token part p (its offset).
  Index token_offset(Index p) const {
    Index o = 0;
    for (Index q = 0; q < p; ++q)
      o += layout_->part(q).kind == InputPart::Kind::tokens ? layout_->part(q).width + 1 : 0;
    return o;
  }

 private:
  const InputLayout* layout_ = nullptr;
  const float* f_ = nullptr;
  const TokenId* t_ = nullptr;
};

/// A batch of structured inputs: rows() inputs, every part contiguous and engine-ready. Storage
/// is allocated by reserve() for a capacity and reused; set_rows() changes how many rows are in
/// use without allocating.
class InputBatch {
 public:
  /// Allocates room for `capacity` inputs of `layout` (all zero, lengths 0); rows() = capacity.
  void reserve(const InputLayout& layout, Index capacity) {
    layout_ = layout;
    capacity_ = rows_ = capacity;
    data_.assign(layout.parts().size(), {});
    for (std::size_t p = 0; p < layout.parts().size(); ++p) {
      const InputPart& part = layout.parts()[p];
      if (part.kind == InputPart::Kind::floats) {
        data_[p].f.assign(static_cast<std::size_t>(capacity * part.width), 0.0f);
      } else {
        data_[p].t.assign(static_cast<std::size_t>(capacity * part.width), 0);
        data_[p].len.assign(static_cast<std::size_t>(capacity), 0);
      }
    }
  }
  /// Uses the first n (<= capacity) rows.
  void set_rows(Index n) {
    NNFUZZ_ASSERT(n >= 0 && n <= capacity_);
    rows_ = n;
  }
  /// Inputs in use.
  Index rows() const { return rows_; }
  /// The layout.
  const InputLayout& layout() const { return layout_; }

  /// Float part p: rows() × width, row-major, contiguous.
  Eigen::Map<const RowMatrix> floats(Index p) const { return {fdata(p), rows_, width(p)}; }
  /// Float part p, writable.
  Eigen::Map<RowMatrix> floats(Index p) { return {const_cast<float*>(fdata(p)), rows_, width(p)}; }
  /// Token part p: rows() × max_len ids, row-major, contiguous, 0 past each row's length.
  Eigen::Map<const TokenMatrix> ids(Index p) const { return {tdata(p), rows_, width(p)}; }
  /// Token part p, writable (keep ids past the length at 0: set_tokens() does).
  Eigen::Map<TokenMatrix> ids(Index p) { return {const_cast<TokenId*>(tdata(p)), rows_, width(p)}; }
  /// Token part p: the rows() lengths.
  Eigen::Map<const Eigen::Matrix<TokenId, Eigen::Dynamic, 1>> lengths(Index p) const { return {ldata(p), rows_}; }
  /// Token part p, row r: its length.
  Index length(Index p, Index r) const { return ldata(p)[r]; }
  /// Token part p, row r: pointer to its ids.
  const TokenId* ids(Index p, Index r) const { return tdata(p) + r * width(p); }

  /// Sets token part p of row r to `n` ids (1 <= n <= max_len), zero-padding the rest.
  void set_tokens(Index p, Index r, const TokenId* ids, Index n) {
    NNFUZZ_ASSERT(n >= 0 && n <= width(p));
    TokenId* row = const_cast<TokenId*>(tdata(p)) + r * width(p);
    std::copy(ids, ids + n, row);
    std::fill(row + n, row + width(p), TokenId{0});
    const_cast<TokenId*>(ldata(p))[r] = static_cast<TokenId>(n);
  }
  /// Copies a stored input into row r.
  void set_row(Index r, const InputView& v) {
    for (Index p = 0; p < layout_.size(); ++p) {
      if (layout_.part(p).kind == InputPart::Kind::tokens)
        set_tokens(p, r, v.ids(p), v.length(p));
      else
        floats(p).row(r) = v.floats(p);
    }
  }
  /// Copies an owned input into row r (sizes are the caller's to check: see check_input()).
  void set_row(Index r, const InputValue& v) {
    for (Index p = 0; p < layout_.size(); ++p) {
      const auto q = static_cast<std::size_t>(p);
      if (layout_.part(p).kind == InputPart::Kind::tokens)
        set_tokens(p, r, v.tokens[q].data(), static_cast<Index>(v.tokens[q].size()));
      else
        floats(p).row(r) = v.floats[q];
    }
  }
  /// Row r as an owned input.
  InputValue value(Index r) const {
    InputValue v(layout_);
    for (Index p = 0; p < layout_.size(); ++p) {
      const auto q = static_cast<std::size_t>(p);
      if (layout_.part(p).kind == InputPart::Kind::tokens)
        v.tokens[q].assign(ids(p, r), ids(p, r) + length(p, r));
      else
        v.floats[q] = floats(p).row(r);
    }
    return v;
  }
  /// Writes row r's cells (InputView layout) to f (float_cells()) and t (token_cells()).
  void pack(Index r, float* f, TokenId* t) const {
    for (Index p = 0; p < layout_.size(); ++p) {
      const Index w = width(p);
      if (layout_.part(p).kind == InputPart::Kind::tokens) {
        std::copy(ids(p, r), ids(p, r) + w, t);
        t[w] = static_cast<TokenId>(length(p, r));
        t += w + 1;
      } else {
        std::copy(fdata(p) + r * w, fdata(p) + (r + 1) * w, f);
        f += w;
      }
    }
  }
  /// True when every float of row r is finite.
  bool row_finite(Index r) const {
    for (Index p = 0; p < layout_.size(); ++p)
      if (layout_.part(p).kind == InputPart::Kind::floats &&
          !detail::all_finite(fdata(p) + r * width(p), static_cast<std::size_t>(width(p))))
        return false;
    return true;
  }

 private:
  struct Part {
    std::vector<float> f;
    std::vector<TokenId> t, len;
  };
  Index width(Index p) const { return layout_.part(p).width; }
  const float* fdata(Index p) const { return data_[static_cast<std::size_t>(p)].f.data(); }
  const TokenId* tdata(Index p) const { return data_[static_cast<std::size_t>(p)].t.data(); }
  const TokenId* ldata(Index p) const { return data_[static_cast<std::size_t>(p)].len.data(); }

  InputLayout layout_;
  Index capacity_ = 0, rows_ = 0;
  std::vector<Part> data_;
};

/// Checks an owned input against a layout: the number of parts, each float part's width and
/// finiteness, each sequence's length (1..max_len) and ids (in [0, vocab)). `who` and `what` name
/// the caller and the input in the message of the std::invalid_argument it throws.
inline void check_input(const char* who, const std::string& what, const InputLayout& layout, const InputValue& v) {
  if (v.tokens.size() != layout.parts().size() || v.floats.size() != layout.parts().size())
    detail::fail(who, ": ", what, " has ", v.tokens.size(), " parts, the model's layout has ", layout.size(), " (",
                 layout.describe(), ")");
  for (Index p = 0; p < layout.size(); ++p) {
    const InputPart& part = layout.part(p);
    const auto q = static_cast<std::size_t>(p);
    if (part.kind == InputPart::Kind::tokens) {
      const auto& ids = v.tokens[q];
      if (ids.empty() || static_cast<Index>(ids.size()) > part.width)
        detail::fail(who, ": ", what, " part '", part.name, "' has ", ids.size(), " tokens (must be 1..", part.width,
                     ")");
      for (std::size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || ids[i] >= part.vocab)
          detail::fail(who, ": ", what, " part '", part.name, "' token ", i, " is ", ids[i], ", outside [0, ",
                       part.vocab, ")");
    } else {
      const RowVector& f = v.floats[q];
      if (f.cols() != part.width)
        detail::fail(who, ": ", what, " part '", part.name, "' has ", f.cols(), " floats, the layout says ",
                     part.width);
      for (Index c = 0; c < f.cols(); ++c)
        if (!detail::is_finite(f(c)))
          detail::fail(who, ": ", what, " part '", part.name, "' element ", c, " is ", f(c), " (must be finite)");
    }
  }
}

}  // namespace nnfuzz
