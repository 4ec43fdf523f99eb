// SPDX-License-Identifier: MIT
// nnfuzz: a character-level GRU language model (TensorFuzz's third target), batch-first and
// batch-invariant, with reproducible sampling and checksummed weights files.
//
// The network: token id -> embedding (vocab x E) -> one GRU layer (hidden H, PyTorch's gate
// equations) -> linear -> logits over the vocabulary. Rows are sequences (batch-first).
//
// Batch invariance. Every product on the forward path (embedding table, recurrent product,
// output layer) goes through detail::row_invariant_affine(), whose sums run over the inner
// dimension in one fixed order per output, with the same instructions for every row; the gate
// nonlinearities go through Eigen's packet functions for every element (no scalar tail that could
// differ from the vectorised body). So a row's logits, hidden states and sampled text are the same
// bits whatever batch it is in and whatever its position there (Eigen's blocked GEMM does not
// promise this: its GEMV path for one row and its coefficient path for small products sum in
// other orders). Results reproduce bit for bit per build (instruction set, FMA or not).
//
// Weights file format (integers little-endian u32, floats IEEE-754 binary32 little-endian):
//   "NNFZRNN1"            8 bytes of magic
//   version               1
//   cell                  1 = GRU
//   vocab, embed, hidden  vocab in [2, 65536], embed and hidden in [1, 65536]
//   symbols               number of symbol bytes: 0 (none stored) or vocab - 1
//   symbol bytes          the alphabet (data/text.hpp: byte of id i + 1), zero-padded to 4 bytes
//   parameters            embedding, w_input, b_input, w_hidden, b_hidden, w_output, b_output
//                         (row-major, shapes as CharRnnParams)
//   crc32                 CRC-32 (zlib's) of every byte before it
#pragma once

#include "../detail/binary_file.hpp"
#include "../detail/config.hpp"
#include "../detail/kernels/gru.hpp"
#include "../input.hpp"  // TokenMatrix
#include "../rng.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace nnfuzz {

/// The sizes of a CharRnn.
struct CharRnnShape {
  Index vocab = 0;   ///< number of token ids (an Alphabet's size(): its bytes and the boundary)
  Index embed = 0;   ///< embedding width E
  Index hidden = 0;  ///< GRU state width H
  /// Same sizes.
  bool operator==(const CharRnnShape& o) const { return vocab == o.vocab && embed == o.embed && hidden == o.hidden; }
  /// Different sizes.
  bool operator!=(const CharRnnShape& o) const { return !(*this == o); }
};

/// The parameters of a CharRnn; also the shape of its gradients and of Adam's moments. Gate
/// columns are ordered r (reset), z (update), n (candidate), H each.
struct CharRnnParams {
  RowMatrix embedding;  ///< vocab x E: row v is token v's embedding
  RowMatrix w_input;    ///< E x 3H: input-to-gates weights
  RowVector b_input;    ///< 1 x 3H: input-to-gates bias
  RowMatrix w_hidden;   ///< H x 3H: state-to-gates weights
  RowVector b_hidden;   ///< 1 x 3H: state-to-gates bias (b_hn sits inside r ⊙ (h·W_hn + b_hn))
  RowMatrix w_output;   ///< H x vocab: state-to-logits weights
  RowVector b_output;   ///< 1 x vocab: logits bias

  /// All-zero parameters of a shape.
  static CharRnnParams zeros(const CharRnnShape& s) {
    CharRnnParams p;
    p.embedding = RowMatrix::Zero(s.vocab, s.embed);
    p.w_input = RowMatrix::Zero(s.embed, 3 * s.hidden);
    p.b_input = RowVector::Zero(3 * s.hidden);
    p.w_hidden = RowMatrix::Zero(s.hidden, 3 * s.hidden);
    p.b_hidden = RowVector::Zero(3 * s.hidden);
    p.w_output = RowMatrix::Zero(s.hidden, s.vocab);
    p.b_output = RowVector::Zero(s.vocab);
    return p;
  }
  /// The shape these parameters have (read from the embedding and the recurrent weights).
  CharRnnShape shape() const { return {embedding.rows(), embedding.cols(), w_hidden.rows()}; }
  /// Calls f(a.x, b.x, ...) for each parameter x, in file order (embedding, w_input, b_input,
  /// w_hidden, b_hidden, w_output, b_output): walks parameters, gradients and moments together.
  template <typename F, typename... P>
  static void zip(F&& f, P&... p) {
    f(p.embedding...);
    f(p.w_input...);
    f(p.b_input...);
    f(p.w_hidden...);
    f(p.b_hidden...);
    f(p.w_output...);
    f(p.b_output...);
  }
  /// Number of floats.
  Index size() const {
    Index n = 0;
    zip([&](const auto& m) { n += m.size(); }, *this);
    return n;
  }
};

/// Every tensor of CharRnn::forward(), rows = sequences, batch-first. Row `b·steps + t` of the
/// per-step matrices belongs to sequence b, step t. Reused across calls: a forward pass at an
/// unchanged batch and length allocates nothing.
struct CharRnnTrace {
  Index batch = 0;          ///< B: sequences
  Index steps = 0;          ///< T: the longest length (the token matrix's columns)
  Eigen::VectorXi lengths;  ///< each sequence's length
  RowMatrix initial;        ///< B x H: the state before the first token
  RowMatrix hidden;         ///< (B·T) x H: the state after token t of sequence b (zero at t >= length)
  RowMatrix logits;         ///< (B·T) x vocab: logits of the token after token t (zero at t >= length)
  RowMatrix final_state;    ///< B x H: the state after each sequence's last token (`initial` for length 0)
  RowMatrix gates;          ///< (B·T) x 3H: r, z, n of each step (for backpropagation)
  RowMatrix recurrent;      ///< (B·T) x 3H: h_{t-1}·W_h + b_h of each step (for backpropagation)
  RowMatrix table;          ///< vocab x 3H: embedding·W_i + b_i, the input part of the gates per token

  /// The state after token t of sequence b (H floats).
  auto hidden_at(Index b, Index t) const { return hidden.row(b * steps + t); }
  /// The logits of the token that follows token t of sequence b (vocab floats).
  auto logits_at(Index b, Index t) const { return logits.row(b * steps + t); }
  /// The states of sequence b as one row of T·H floats (t-major): a coverage vector.
  auto hidden_of(Index b) const {
    return Eigen::Map<const RowVector>(hidden.data() + b * steps * hidden.cols(), steps * hidden.cols());
  }
};

/// What CharRnn::generate() produced, and its working buffers. Reused across calls.
struct CharRnnGeneration {
  TokenMatrix tokens;  ///< B x n_chars: the drawn ids
  RowMatrix hidden;  ///< B x (n_chars·H): block j of row b = the state char j was drawn from (j = 0: after the prompt)
  RowMatrix state;   ///< B x H: working state
  RowMatrix recurrent;  ///< B x 3H: working gate products
  RowMatrix logits;     ///< B x vocab: logits of the last step
  RowMatrix table;      ///< vocab x 3H: embedding·W_i + b_i
  Eigen::VectorXi fed;  ///< B: the ids fed at the last step
  /// Set before generate() to keep `probs` (off by default: it costs vocab exps per drawn char).
  bool keep_probs = false;
  /// With keep_probs: B x (n_chars·vocab), block j of row b = the distribution char j was drawn
  /// from — softmax(logits / temperature), or softmax(logits) when greedy (how close the
  /// alternatives came to the argmax). Computed from the logits the draw already needed.
  RowMatrix probs;

  /// The state char j of row b was drawn from (H floats).
  auto hidden_at(Index b, Index j) const {
    const Index h = tokens.cols() > 0 ? hidden.cols() / tokens.cols() : 0;
    return hidden.row(b).segment(j * h, h);
  }
};

/// A character-level language model: embedding, one GRU layer, linear logits, in float.
///
/// Batch-first and batch-invariant: forward() and generate() give a row the same bits whatever
/// the other rows and the batch size (see the header comment). generate() takes its randomness
/// as an input (one uniform per drawn char), so a generated text is a pure function of (prompt,
/// noise, temperature) and replays bit for bit. The const members may run concurrently on one
/// network, each call with its own trace or generation buffers.
class CharRnn {
 public:
  CharRnn() = default;
  /// A network of the given shape with all parameters zero (see init()). Throws
  /// std::invalid_argument for vocab outside [2, 65536], embed or hidden outside [1, 65536], or
  /// more than 2^28 parameters.
  explicit CharRnn(const CharRnnShape& shape) {
    check_shape("CharRnn()", shape);
    p_ = CharRnnParams::zeros(shape);
  }

  /// The sizes.
  CharRnnShape shape() const { return p_.shape(); }
  /// Number of token ids.
  Index vocab_size() const { return p_.embedding.rows(); }
  /// Embedding width E.
  Index embed_size() const { return p_.embedding.cols(); }
  /// GRU state width H.
  Index hidden_size() const { return p_.w_hidden.rows(); }
  /// Number of trainable parameters.
  Index parameter_count() const { return p_.size(); }
  /// The parameters (read-only).
  const CharRnnParams& params() const { return p_; }
  /// The parameters, for training and loading. Shapes must stay those of shape().
  CharRnnParams& params() { return p_; }

  /// Seeded initialisation: embedding N(0, 1); every weight U(-1/√H, 1/√H) (PyTorch's GRU
  /// default; the output layer too); biases zero. Same seed => same bits.
  void init(std::uint64_t seed) {
    Rng rng(seed);
    const float k = 1.0f / std::sqrt(static_cast<float>(std::max<Index>(hidden_size(), 1)));
    rng.fill_normal(p_.embedding.data(), p_.embedding.size());
    rng.fill_uniform(p_.w_input.data(), p_.w_input.size(), -k, k);
    rng.fill_uniform(p_.w_hidden.data(), p_.w_hidden.size(), -k, k);
    rng.fill_uniform(p_.w_output.data(), p_.w_output.size(), -k, k);
    p_.b_input.setZero();
    p_.b_hidden.setZero();
    p_.b_output.setZero();
  }

  /// Runs B sequences of different lengths from the zero state: `tokens` is B x T_max (row b
  /// holds sequence b in its first lengths(b) columns; the rest is ignored), and fills `trace`
  /// with every state, the logits of each next token and the gates. Throws
  /// std::invalid_argument for a length outside [0, T_max] or an id outside [0, vocab) within a
  /// length, naming the row and column.
  void forward(const Eigen::Ref<const TokenMatrix>& tokens, const Eigen::Ref<const Eigen::VectorXi>& lengths,
               CharRnnTrace& trace) const {
    forward_impl("CharRnn::forward()", tokens, lengths, nullptr, trace);
  }
  /// forward() from given initial states (B x H), e.g. the final_state of the previous chunk of
  /// the same texts (truncated backpropagation through time).
  void forward(const Eigen::Ref<const TokenMatrix>& tokens, const Eigen::Ref<const Eigen::VectorXi>& lengths,
               const Eigen::Ref<const RowMatrix>& initial_state, CharRnnTrace& trace) const {
    if (initial_state.rows() != tokens.rows() || initial_state.cols() != hidden_size())
      detail::fail("CharRnn::forward(): initial state is ", initial_state.rows(), " x ", initial_state.cols(),
                   ", expected ", tokens.rows(), " x ", hidden_size());
    forward_impl("CharRnn::forward()", tokens, lengths, &initial_state, trace);
  }

  /// Continues B prompts by n_chars drawn chars each. Row b's prompt is prompts(b, 0..lengths(b))
  /// (lengths(b) >= 1; a text's start is the boundary id 0). Char j of row b is drawn from
  /// softmax(logits / temperature) by inverse CDF at noise(b, j), a uniform in [0, 1): the
  /// smallest id whose cumulative probability (summed in id order) exceeds noise(b, j); with
  /// temperature 0 the first largest logit (greedy; then `noise` may also be empty, 0 columns).
  /// Each drawn char is fed back. Fills out.tokens (B x n_chars) and out.hidden (the state each
  /// char was drawn from). Row b's result depends only on row b's prompt, length and noise: the
  /// same bits at any batch size. Throws std::invalid_argument naming the offending value.
  void generate(const Eigen::Ref<const TokenMatrix>& prompts, const Eigen::Ref<const Eigen::VectorXi>& lengths,
                Index n_chars, float temperature, const Eigen::Ref<const RowMatrix>& noise,
                CharRnnGeneration& out) const {
    const char* fn = "CharRnn::generate()";
    const Index B = prompts.rows(), H = hidden_size(), V = vocab_size();
    check_inputs(fn, prompts, lengths, 1);
    if (n_chars < 0) detail::fail(fn, ": option 'n_chars' must be >= 0, got ", n_chars);
    if (!(temperature >= 0) || !detail::is_finite(temperature))
      detail::fail(fn, ": option 'temperature' must be finite and >= 0, got ", temperature);
    const bool greedy = temperature == 0;
    if (!(greedy && noise.size() == 0) && (noise.rows() != B || noise.cols() != n_chars))
      detail::fail(fn, ": noise is ", noise.rows(), " x ", noise.cols(), ", expected ", B, " x ", n_chars,
                   " (one uniform in [0, 1) per drawn char)");
    if (!greedy)
      for (Index b = 0; b < B; ++b)
        for (Index j = 0; j < n_chars; ++j)
          if (!(noise(b, j) >= 0.0f && noise(b, j) < 1.0f))
            detail::fail(fn, ": noise(", b, ", ", j, ") is ", noise(b, j), ", must be in [0, 1)");
    out.tokens.resize(B, n_chars);
    out.hidden.resize(B, n_chars * H);
    out.state.setZero(B, H);
    out.recurrent.resize(B, 3 * H);
    out.logits.resize(B, V);
    out.fed.resize(B);
    if (out.keep_probs) out.probs.resize(B, n_chars * V);
    if (B == 0 || n_chars == 0) return;
    make_table(out.table);
    const Index longest = lengths.maxCoeff();
    const Index total = longest + n_chars - 1;
    for (Index s = 0; s < total; ++s) {
      bool draw = false;
      for (Index b = 0; b < B; ++b) {
        const Index L = lengths(b);
        out.fed(b) = s < L ? prompts(b, s) : (s - L < n_chars ? out.tokens(b, s - L) : 0);
        draw |= s + 1 >= L && s + 1 - L < n_chars;
      }
      step(out.state, out.fed, out.recurrent, out.table);
      if (!draw) continue;
      detail::row_invariant_affine(out.state.data(), B, H, H, p_.w_output.data(), V, p_.b_output.data(),
                                   out.logits.data(), V);
      for (Index b = 0; b < B; ++b) {
        const Index j = s + 1 - lengths(b);
        if (j < 0 || j >= n_chars) continue;
        out.hidden.row(b).segment(j * H, H) = out.state.row(b);
        out.tokens(b, j) =
            greedy ? argmax(out.logits.row(b).data()) : draw_id(out.logits.row(b).data(), temperature, noise(b, j));
        if (out.keep_probs)
          softmax(out.logits.row(b).data(), greedy ? 1.0f : temperature, out.probs.row(b).data() + j * V);
      }
    }
  }

 private:
  static void check_shape(const char* fn, const CharRnnShape& s) {
    if (s.vocab < 2 || s.vocab > 65536) detail::fail(fn, ": option 'vocab' must be in [2, 65536], got ", s.vocab);
    if (s.embed < 1 || s.embed > 65536) detail::fail(fn, ": option 'embed' must be in [1, 65536], got ", s.embed);
    if (s.hidden < 1 || s.hidden > 65536) detail::fail(fn, ": option 'hidden' must be in [1, 65536], got ", s.hidden);
    const std::uint64_t n =
        static_cast<std::uint64_t>(s.vocab) * static_cast<std::uint64_t>(s.embed + 1 + s.hidden) +
        static_cast<std::uint64_t>(s.embed + s.hidden + 2) * static_cast<std::uint64_t>(3 * s.hidden);
    if (n > detail::kCharRnnMaxParams) detail::fail(fn, ": shape has ", n, " parameters, more than 2^28");
  }

  void check_inputs(const char* fn, const Eigen::Ref<const TokenMatrix>& tokens,
                    const Eigen::Ref<const Eigen::VectorXi>& lengths, int min_length) const {
    if (vocab_size() == 0) detail::fail(fn, ": the network has no parameters (default-constructed)");
    if (lengths.size() != tokens.rows())
      detail::fail(fn, ": ", tokens.rows(), " sequences (token rows) but ", lengths.size(), " lengths");
    for (Index b = 0; b < tokens.rows(); ++b) {
      if (lengths(b) < min_length || lengths(b) > tokens.cols())
        detail::fail(fn, ": length ", lengths(b), " of row ", b, " is outside [", min_length, ", ", tokens.cols(), "]");
      for (Index t = 0; t < lengths(b); ++t)
        if (tokens(b, t) < 0 || tokens(b, t) >= vocab_size())
          detail::fail(fn, ": token ", tokens(b, t), " at row ", b, ", column ", t, " is outside [0, ", vocab_size(),
                       ")");
    }
  }

  void make_table(RowMatrix& table) const {
    const Index V = vocab_size(), E = embed_size(), G = 3 * hidden_size();
    table.resize(V, G);
    detail::row_invariant_affine(p_.embedding.data(), V, E, E, p_.w_input.data(), G, p_.b_input.data(), table.data(),
                                 G);
  }

  // One step of every row from `state` (in place), feeding ids `fed`.
  void step(RowMatrix& state, const Eigen::VectorXi& fed, RowMatrix& recurrent, const RowMatrix& table) const {
    const Index B = state.rows(), H = hidden_size(), G = 3 * H;
    detail::row_invariant_affine(state.data(), B, H, H, p_.w_hidden.data(), G, p_.b_hidden.data(), recurrent.data(), G);
    for (Index b = 0; b < B; ++b)
      detail::gru_step_row(table.row(fed(b)).data(), recurrent.row(b).data(), state.row(b).data(), H, nullptr,
                           state.row(b).data());
  }

  void forward_impl(const char* fn, const Eigen::Ref<const TokenMatrix>& tokens,
                    const Eigen::Ref<const Eigen::VectorXi>& lengths, const Eigen::Ref<const RowMatrix>* initial_state,
                    CharRnnTrace& tr) const {
    check_inputs(fn, tokens, lengths, 0);
    const Index B = tokens.rows(), T = tokens.cols(), H = hidden_size(), G = 3 * H, V = vocab_size();
    tr.batch = B;
    tr.steps = T;
    tr.lengths = lengths;
    if (initial_state)
      tr.initial = *initial_state;
    else
      tr.initial.setZero(B, H);
    tr.hidden.resize(B * T, H);
    tr.gates.resize(B * T, G);
    tr.recurrent.resize(B * T, G);
    tr.logits.resize(B * T, V);
    tr.final_state.resize(B, H);
    make_table(tr.table);
    for (Index t = 0; t < T; ++t) {
      // Rows of step t - 1 (or the initial states) and of step t, strided through the B x T layout.
      const float* prev = t == 0 ? tr.initial.data() : tr.hidden.data() + (t - 1) * H;
      const Index ld_prev = t == 0 ? H : T * H;
      float* rec = tr.recurrent.data() + t * G;
      detail::row_invariant_affine(prev, B, H, ld_prev, p_.w_hidden.data(), G, p_.b_hidden.data(), rec, T * G);
      for (Index b = 0; b < B; ++b) {
        const Index i = b * T + t;
        if (t < lengths(b)) {
          detail::gru_step_row(tr.table.row(tokens(b, t)).data(), tr.recurrent.row(i).data(), prev + b * ld_prev, H,
                               tr.gates.row(i).data(), tr.hidden.row(i).data());
        } else {
          tr.hidden.row(i).setZero();
          tr.gates.row(i).setZero();
          tr.recurrent.row(i).setZero();
        }
      }
    }
    if (B * T > 0)
      detail::row_invariant_affine(tr.hidden.data(), B * T, H, H, p_.w_output.data(), V, p_.b_output.data(),
                                   tr.logits.data(), V);
    for (Index b = 0; b < B; ++b) {
      for (Index t = lengths(b); t < T; ++t) tr.logits.row(b * T + t).setZero();
      if (lengths(b) > 0)
        tr.final_state.row(b) = tr.hidden.row(b * T + lengths(b) - 1);
      else
        tr.final_state.row(b) = tr.initial.row(b);
    }
  }

  int argmax(const float* logits) const {
    int best = 0;
    for (Index v = 1; v < vocab_size(); ++v)
      if (logits[v] > logits[best]) best = static_cast<int>(v);
    return best;
  }

  // softmax(logits / temperature) into p (vocab floats), summed in id order.
  void softmax(const float* logits, float temperature, float* p) const {
    const Index V = vocab_size();
    const float m = logits[argmax(logits)];
    float total = 0;
    for (Index v = 0; v < V; ++v) total += (p[v] = std::exp((logits[v] - m) / temperature));
    const float inv = 1.0f / total;
    for (Index v = 0; v < V; ++v) p[v] *= inv;
  }

  // Inverse-CDF draw from softmax(logits / temperature), sums in id order (deterministic).
  int draw_id(const float* logits, float temperature, float u) const {
    const Index V = vocab_size();
    const float m = logits[argmax(logits)];
    float total = 0;
    for (Index v = 0; v < V; ++v) total += std::exp((logits[v] - m) / temperature);
    const float threshold = u * total;
    float cum = 0;
    int last_positive = 0;
    for (Index v = 0; v < V; ++v) {
      const float p = std::exp((logits[v] - m) / temperature);
      cum += p;
      if (p > 0) last_positive = static_cast<int>(v);
      if (cum > threshold) return static_cast<int>(v);
    }
    return last_positive;  // u·total rounded up to total
  }

  CharRnnParams p_;
};

/// Saves a CharRnn to `path` (format in the header comment), atomically and durably, with the
/// alphabet's bytes (`symbols`, the Alphabet::symbols() of data/text.hpp, or empty). Throws
/// std::invalid_argument naming the file for a network with no parameters, a non-finite
namespace detail {
/// The first byte `symbols` holds twice, as text ("'a'" or "0x07"), or "" when none repeats:
/// an alphabet (data/text.hpp's Alphabet) holds each byte once.
inline std::string repeated_symbol(const std::string& symbols) {
  std::string sorted = symbols;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i] == sorted[i - 1]) {
      const auto c = static_cast<unsigned char>(sorted[i]);
      char buf[8];
      std::snprintf(buf, sizeof buf, c >= 0x20 && c < 0x7f ? "'%c'" : "0x%02x", c);
      return buf;
    }
  return {};
}
/// Where a parameter set first holds a NaN or an infinity (file order of CharRnnParams::zip).
struct NonFiniteParam {
  const char* name;
  Index index;
  float value;
};
inline std::optional<NonFiniteParam> first_non_finite(const CharRnnParams& p) {
  const char* const names[] = {"embedding", "w_input", "b_input", "w_hidden", "b_hidden", "w_output", "b_output"};
  std::optional<NonFiniteParam> bad;
  int which = 0;
  CharRnnParams::zip(
      [&](const auto& m) {
        for (Index i = 0; i < m.size() && !bad; ++i)
          if (!is_finite(m.data()[i])) bad = NonFiniteParam{names[which], i, m.data()[i]};
        ++which;
      },
      p);
  return bad;
}
}  // namespace detail

/// parameter, symbols that do not match the vocabulary or repeat a byte, or any I/O error.
inline void save_char_rnn(const std::string& path, const CharRnn& net, const std::string& symbols = "") {
  const char* fn = "save_char_rnn()";
  const CharRnnShape s = net.shape();
  if (s.vocab == 0) detail::fail(fn, ": network has no parameters (file '", path, "')");
  if (!symbols.empty() && static_cast<Index>(symbols.size()) + 1 != s.vocab)
    detail::fail(fn, ": ", symbols.size(), " symbols for a vocabulary of ", s.vocab,
                 " (expected vocab - 1 = ", s.vocab - 1, "; file '", path, "')");
  if (const std::string twice = detail::repeated_symbol(symbols); !twice.empty())
    detail::fail(fn, ": the alphabet holds byte ", twice, " twice (file '", path, "')");
  if (const auto bad = detail::first_non_finite(net.params()))
    detail::fail(fn, ": parameter ", bad->name, " has a non-finite value ", bad->value, " at ", bad->index, " (file '",
                 path, "')");
  std::vector<std::uint8_t> header(detail::kCharRnnMagic, detail::kCharRnnMagic + 8);
  for (const std::uint64_t v : {std::uint64_t{detail::kCharRnnVersion}, std::uint64_t{detail::kCharRnnCellGru},
                                static_cast<std::uint64_t>(s.vocab), static_cast<std::uint64_t>(s.embed),
                                static_cast<std::uint64_t>(s.hidden), static_cast<std::uint64_t>(symbols.size())})
    detail::put_u32(header, static_cast<std::uint32_t>(v));
  header.insert(header.end(), symbols.begin(), symbols.end());
  while (header.size() % 4) header.push_back(0);
  detail::AtomicFile f(fn, path);
  f.write(header);
  CharRnnParams::zip([&](const auto& m) { f.write(m.data(), sizeof(float) * static_cast<std::size_t>(m.size())); },
                     net.params());
  f.finish();
}

/// Loads a network saved by save_char_rnn(); `symbols`, if given, receives the stored alphabet
/// bytes (empty if none were stored). Checks the magic (naming an Mlp weights file as such),
/// the version, the cell type, the sizes, the exact file size they imply, the CRC-32, an
/// alphabet that holds each byte once, and finite parameters. Throws std::invalid_argument naming the file and the
/// offending value; a missing, non-regular or unreadable file says so.
inline CharRnn load_char_rnn(const std::string& path, std::string* symbols = nullptr) {
  const char* fn = "load_char_rnn()";
  const std::vector<std::uint8_t> b =
      detail::read_whole_file(fn, path, 16, detail::kCharRnnMaxParams * 4 + (std::uint64_t{1} << 20));
  if (std::memcmp(b.data(), detail::kCharRnnMagic, 8) != 0) {
    if (std::memcmp(b.data(), "NNFZMLP1", 8) == 0)
      detail::fail(fn, ": file '", path,
                   "' is an Mlp weights file (magic NNFZMLP1; load it with load_mlp()), not a CharRnn (NNFZRNN1)");
    detail::fail(fn, ": file '", path, "' is not a CharRnn weights file (bad magic; expected NNFZRNN1)");
  }
  detail::check_crc(fn, path, b);
  detail::Reader in{fn, path, b, 8};
  const std::uint32_t version = in.u32();
  if (version != detail::kCharRnnVersion)
    detail::fail(fn, ": file '", path, "' has format version ", version, ", this nnfuzz reads version ",
                 detail::kCharRnnVersion);
  const std::uint32_t cell = in.u32();
  if (cell != detail::kCharRnnCellGru)
    detail::fail(fn, ": file '", path, "' has cell type ", cell, " (only 1 = GRU is supported)");
  CharRnnShape s;
  s.vocab = in.u32();
  s.embed = in.u32();
  s.hidden = in.u32();
  if (s.vocab < 2 || s.vocab > 65536 || s.embed < 1 || s.embed > 65536 || s.hidden < 1 || s.hidden > 65536)
    detail::fail(fn, ": file '", path, "' has absurd sizes: vocab ", s.vocab, ", embed ", s.embed, ", hidden ",
                 s.hidden);
  const std::uint32_t n_symbols = in.u32();
  if (n_symbols != 0 && n_symbols + 1 != s.vocab)
    detail::fail(fn, ": file '", path, "' stores ", n_symbols, " symbols for a vocabulary of ", s.vocab);
  const std::uint64_t params =
      static_cast<std::uint64_t>(s.vocab) * static_cast<std::uint64_t>(s.embed + 1 + s.hidden) +
      static_cast<std::uint64_t>(s.embed + s.hidden + 2) * static_cast<std::uint64_t>(3 * s.hidden);
  const std::uint64_t expected = in.pos + (n_symbols + 3) / 4 * 4 + 4 * params + 4;
  if (b.size() != expected)
    detail::fail(fn, ": file '", path, "' has ", b.size(), " bytes, its header (vocab ", s.vocab, ", embed ", s.embed,
                 ", hidden ", s.hidden, ") implies ", expected,
                 b.size() < expected ? " (truncated)" : " (trailing bytes)");
  const std::string stored(reinterpret_cast<const char*>(&b[in.pos]), n_symbols);
  if (const std::string twice = detail::repeated_symbol(stored); !twice.empty())
    detail::fail(fn, ": file '", path, "' stores an alphabet that holds byte ", twice,
                 " twice (a forged or corrupted file: each symbol names one token id)");
  if (symbols) *symbols = stored;
  in.pos += (n_symbols + 3) / 4 * 4;
  CharRnn net(s);
  CharRnnParams::zip([&](auto& m) { in.floats(m.data(), m.size()); }, net.params());
  if (const auto bad = detail::first_non_finite(net.params()))
    detail::fail(fn, ": file '", path, "' has a non-finite value in parameter ", bad->name, " at ", bad->index);
  return net;
}

/// load_char_rnn() that also checks the network has the expected shape: a file of another
/// architecture is an error naming the file and both shapes.
inline CharRnn load_char_rnn(const std::string& path, const CharRnnShape& expected, std::string* symbols = nullptr) {
  CharRnn net = load_char_rnn(path, symbols);
  const CharRnnShape s = net.shape();
  if (s != expected)
    detail::fail("load_char_rnn(): file '", path, "' holds a CharRnn of vocab ", s.vocab, ", embed ", s.embed,
                 ", hidden ", s.hidden, "; expected vocab ", expected.vocab, ", embed ", expected.embed, ", hidden ",
                 expected.hidden);
  return net;
}

}  // namespace nnfuzz
