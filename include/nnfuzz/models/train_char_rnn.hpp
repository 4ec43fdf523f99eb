// SPDX-License-Identifier: MIT
// nnfuzz: training CharRnn language models — truncated backpropagation through time, Adam,
// gradient-norm clipping, held-out bits per character.
//
// The training text is one stream of ids (Alphabet::encode_texts() of data/text.hpp: texts joined
// by the boundary id 0). It is cut into `batch_size` lanes at seeded offsets; each step feeds the
// next `bptt` ids of every lane, predicts each next id, backpropagates through those `bptt` steps
// and carries the final states into the next step (detached), as Karpathy's char-rnn does.
#pragma once

#include "../detail/config.hpp"
#include "../rng.hpp"
#include "char_rnn.hpp"
#include "train.hpp"  // detail::ProgressBar

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

namespace nnfuzz {

namespace detail {

/// Backpropagates one row through gru_step_row(): from ∂loss/∂h' = d_out + carry, writes
/// ∂loss/∂(x·W_i + b_i) to d_in (3H), ∂loss/∂(h·W_h + b_h) to d_rec (3H) and the direct part of
/// ∂loss/∂h, (∂loss/∂h') ⊙ z, to `direct` (H). One pass over the row's gates.
inline void gru_backward_row(const float* d_out, const float* carry, const float* gates, const float* rec,
                             const float* h, Index H, float* d_in, float* d_rec, float* direct) {
  using namespace Eigen::internal;
  const FloatPacket one = pset1<FloatPacket>(1.0f);
  for (Index j = 0; j < H; j += kFloatLanes) {
    const Index k = std::min(kFloatLanes, H - j);
    const FloatPacket dh = padd(load_part(d_out + j, k), load_part(carry + j, k));
    const FloatPacket r = load_part(gates + j, k), z = load_part(gates + H + j, k), n = load_part(gates + 2 * H + j, k);
    // h' = (1 - z) ⊙ n + z ⊙ h;  n = tanh(a_n), a_n = gx_n + r ⊙ hn;  r, z = σ(a_r), σ(a_z)
    const FloatPacket dn = pmul(pmul(dh, psub(one, z)), psub(one, pmul(n, n)));                   // ∂/∂a_n
    const FloatPacket dz = pmul(pmul(dh, psub(load_part(h + j, k), n)), pmul(z, psub(one, z)));   // ∂/∂a_z
    const FloatPacket dr = pmul(pmul(dn, load_part(rec + 2 * H + j, k)), pmul(r, psub(one, r)));  // ∂/∂a_r
    store_part(d_in + j, dr, k);
    store_part(d_in + H + j, dz, k);
    store_part(d_in + 2 * H + j, dn, k);
    store_part(d_rec + j, dr, k);
    store_part(d_rec + H + j, dz, k);
    store_part(d_rec + 2 * H + j, pmul(dn, r), k);
    store_part(direct + j, pmul(dh, z), k);
  }
}

/// out = the sum of the rows of m (a row-major matrix: row by row, vectorised along the row).
inline void column_sums(const RowMatrix& m, RowVector& out) {
  out.setZero(m.cols());
  for (Index i = 0; i < m.rows(); ++i) out += m.row(i);
}

}  // namespace detail

/// Buffers of char_rnn_gradients(); reused across calls (no allocation at an unchanged shape).
struct CharRnnWorkspace {
  CharRnnTrace trace;     ///< the forward pass
  RowMatrix d_logits;     ///< (B·T) x vocab: ∂loss/∂logits
  RowMatrix d_hidden;     ///< (B·T) x H: ∂loss/∂state through the output layer
  RowMatrix d_input;      ///< (B·T) x 3H: ∂loss/∂(x·W_i + b_i)
  RowMatrix d_recurrent;  ///< (B·T) x 3H: ∂loss/∂(h·W_h + b_h)
  RowMatrix h_prev;       ///< (B·T) x H: the state before each step
  RowMatrix d_table;      ///< vocab x 3H: ∂loss/∂(embedding·W_i + b_i)
  RowMatrix d_initial;    ///< B x H: ∂loss/∂(initial state)
  RowMatrix direct;       ///< B x H: working buffer
  RowMatrix w_hidden_t;   ///< 3H x H: W_h transposed
  RowMatrix mask;         ///< (B·T) x H: dropout mask, 0 or 1/(1 - dropout) (with dropout only)
  RowMatrix dropped;      ///< (B·T) x H: the states times the mask (with dropout only)
  RowMatrix logits;       ///< (B·T) x vocab: logits from the dropped states (with dropout only)
};

/// The mean cross entropy (nats per predicted token) of predicting targets(b, t) after
/// tokens(b, 0..t], over t < lengths(b), from `initial_state` (B x H), and its gradient with
/// respect to every parameter (backpropagation through time over the T columns), written to
/// `grads` (resized to the network's shape). ws.d_initial receives the gradient with respect to
/// the initial state. `correct`, if given, is increased by the number of targets that were the
/// argmax. With `dropout` > 0, each state feeds the output layer through inverted dropout: each of
/// its units is zeroed with probability `dropout` (the others scaled by 1/(1 - dropout)), from a
/// mask drawn with Rng(dropout_seed) (the recurrence itself is not dropped); the loss and the
/// gradients are those of that masked network. Exposed for the gradient check; train_char_rnn()
/// uses it. Throws std::invalid_argument for mismatched shapes, ids outside the vocabulary and a
/// dropout outside [0, 1).
inline float char_rnn_gradients(const CharRnn& net, const Eigen::Ref<const TokenMatrix>& tokens,
                                const Eigen::Ref<const Eigen::VectorXi>& lengths,
                                const Eigen::Ref<const TokenMatrix>& targets,
                                const Eigen::Ref<const RowMatrix>& initial_state, CharRnnParams& grads,
                                CharRnnWorkspace& ws, Index* correct = nullptr, float dropout = 0.0f,
                                std::uint64_t dropout_seed = 0) {
  const char* fn = "char_rnn_gradients()";
  if (!(dropout >= 0.0f && dropout < 1.0f)) detail::fail(fn, ": option 'dropout' must be in [0, 1), got ", dropout);
  if (targets.rows() != tokens.rows() || targets.cols() != tokens.cols())
    detail::fail(fn, ": targets are ", targets.rows(), " x ", targets.cols(), ", tokens ", tokens.rows(), " x ",
                 tokens.cols());
  net.forward(tokens, lengths, initial_state, ws.trace);
  const CharRnnTrace& tr = ws.trace;
  const CharRnnParams& p = net.params();
  const Index B = tokens.rows(), T = tokens.cols(), H = net.hidden_size(), G = 3 * H, V = net.vocab_size();
  Index count = 0;
  for (Index b = 0; b < B; ++b) {
    count += lengths(b);
    for (Index t = 0; t < lengths(b); ++t)
      if (targets(b, t) < 0 || targets(b, t) >= V)
        detail::fail(fn, ": target ", targets(b, t), " at row ", b, ", column ", t, " is outside [0, ", V, ")");
  }
  if (grads.shape() != net.shape()) grads = CharRnnParams::zeros(net.shape());
  // The states the output layer sees, and its logits: the trace's, or dropped out.
  const RowMatrix* states = &tr.hidden;
  const RowMatrix* logits = &tr.logits;
  if (dropout > 0) {
    ws.mask.resize(B * T, H);
    Rng(dropout_seed).fill_uniform(ws.mask.data(), ws.mask.size());
    const float keep = 1.0f / (1.0f - dropout);
    ws.mask = (ws.mask.array() >= dropout).cast<float>().matrix() * keep;
    ws.dropped = tr.hidden.cwiseProduct(ws.mask);
    ws.logits.noalias() = ws.dropped * p.w_output;
    ws.logits.rowwise() += p.b_output;
    states = &ws.dropped;
    logits = &ws.logits;
  }
  // Softmax cross entropy, computed after subtracting each row's largest logit.
  ws.d_logits.resize(B * T, V);
  double loss = 0;
  const float scale = count > 0 ? 1.0f / static_cast<float>(count) : 0.0f;
  for (Index b = 0; b < B; ++b)
    for (Index t = 0; t < T; ++t) {
      const Index i = b * T + t;
      auto d = ws.d_logits.row(i);
      if (t >= lengths(b)) {
        d.setZero();
        continue;
      }
      const int y = targets(b, t);
      Index best = 0;
      const float m = logits->row(i).maxCoeff(&best);
      if (correct) *correct += best == y;
      d.array() = (logits->row(i).array() - m).exp();
      const float z = d.sum();
      loss += std::log(z) - ((*logits)(i, y) - m);
      d *= scale / z;
      d(y) -= scale;
    }
  ws.d_hidden.noalias() = ws.d_logits * p.w_output.transpose();
  if (dropout > 0) ws.d_hidden.array() *= ws.mask.array();
  // The state before each step: the initial state, then the previous step's.
  ws.h_prev.resize(B * T, H);
  for (Index b = 0; b < B; ++b)
    for (Index t = 0; t < T; ++t) ws.h_prev.row(b * T + t) = t == 0 ? tr.initial.row(b) : tr.hidden.row(b * T + t - 1);
  ws.d_input.resize(B * T, G);
  ws.d_recurrent.resize(B * T, G);
  ws.d_initial.setZero(B, H);  // the gradient carried back from later steps
  ws.direct.resize(B, H);
  ws.w_hidden_t = p.w_hidden.transpose();
  for (Index t = T; t-- > 0;) {
    for (Index b = 0; b < B; ++b) {
      const Index i = b * T + t;
      if (t >= lengths(b)) {
        ws.d_input.row(i).setZero();
        ws.d_recurrent.row(i).setZero();
        ws.direct.row(b) = ws.d_initial.row(b);
        continue;
      }
      detail::gru_backward_row(ws.d_hidden.row(i).data(), ws.d_initial.row(b).data(), tr.gates.row(i).data(),
                               tr.recurrent.row(i).data(), ws.h_prev.row(i).data(), H, ws.d_input.row(i).data(),
                               ws.d_recurrent.row(i).data(), ws.direct.row(b).data());
    }
    // d_initial = direct + d_recurrent[t] · W_h^T (the kernel beats Eigen's GEMM here: no packing per step)
    detail::row_invariant_affine(ws.d_recurrent.data() + t * G, B, G, T * G, ws.w_hidden_t.data(), H, nullptr,
                                 ws.d_initial.data(), H);
    ws.d_initial += ws.direct;
  }
  grads.w_output.noalias() = states->transpose() * ws.d_logits;
  detail::column_sums(ws.d_logits, grads.b_output);
  grads.w_hidden.noalias() = ws.h_prev.transpose() * ws.d_recurrent;
  detail::column_sums(ws.d_recurrent, grads.b_hidden);
  ws.d_table.setZero(V, G);
  for (Index b = 0; b < B; ++b)
    for (Index t = 0; t < lengths(b); ++t) ws.d_table.row(tokens(b, t)) += ws.d_input.row(b * T + t);
  detail::column_sums(ws.d_table, grads.b_input);
  grads.w_input.noalias() = p.embedding.transpose() * ws.d_table;
  grads.embedding.noalias() = ws.d_table * p.w_input.transpose();
  return static_cast<float>(loss) * scale;
}

/// The model's cross entropy on a stream of ids, in bits per predicted id: every id but the first
/// is predicted from those before it. The stream is cut into `lanes` contiguous parts run side by
/// side, each from the zero state, `chunk` ids at a time (the state carried over); a lane's first
/// ids have little context, so there are at most (size - 1) / 1024 lanes (at least one). On the
/// fortunes' held-out set, 8 lanes read 0.002 bits/char above one lane, 32 lanes 0.007. The
/// boundary id counts as a character (it stands for the `%` line between fortunes).
/// Deterministic for a given stream and lanes. Throws std::invalid_argument for a stream of fewer
/// than 2 ids, lanes or chunk < 1, or ids outside the vocabulary.
inline double char_rnn_bits_per_char(const CharRnn& net, const std::vector<int>& stream, Index lanes = 8,
                                     Index chunk = 128) {
  const char* fn = "char_rnn_bits_per_char()";
  const Index N = static_cast<Index>(stream.size());
  if (N < 2) detail::fail(fn, ": the stream has ", N, " ids, at least 2 are needed");
  if (lanes < 1) detail::fail(fn, ": option 'lanes' must be >= 1, got ", lanes);
  if (chunk < 1) detail::fail(fn, ": option 'chunk' must be >= 1, got ", chunk);
  const Index V = net.vocab_size();
  for (Index i = 0; i < N; ++i)
    if (stream[static_cast<std::size_t>(i)] < 0 || stream[static_cast<std::size_t>(i)] >= V)
      detail::fail(fn, ": id ", stream[static_cast<std::size_t>(i)], " at position ", i, " is outside [0, ", V, ")");
  lanes = std::max<Index>(1, std::min(lanes, (N - 1) / 1024));
  std::vector<Index> begin(static_cast<std::size_t>(lanes)), end(static_cast<std::size_t>(lanes));
  for (Index b = 0; b < lanes; ++b) {
    begin[static_cast<std::size_t>(b)] = b * (N - 1) / lanes;
    end[static_cast<std::size_t>(b)] = (b + 1) * (N - 1) / lanes;  // lane b predicts ids begin+1 .. end
  }
  TokenMatrix tokens(lanes, chunk);
  Eigen::VectorXi lengths(lanes);
  RowMatrix state = RowMatrix::Zero(lanes, net.hidden_size());
  CharRnnTrace tr;
  double bits = 0;
  for (Index at = 0;; at += chunk) {
    bool any = false;
    for (Index b = 0; b < lanes; ++b) {
      const Index from = begin[static_cast<std::size_t>(b)] + at;
      const Index len = std::max<Index>(0, std::min(chunk, end[static_cast<std::size_t>(b)] - from));
      lengths(b) = static_cast<int>(len);
      any |= len > 0;
      for (Index t = 0; t < chunk; ++t) tokens(b, t) = t < len ? stream[static_cast<std::size_t>(from + t)] : 0;
    }
    if (!any) break;
    net.forward(tokens, lengths, state, tr);
    for (Index b = 0; b < lanes; ++b)
      for (Index t = 0; t < lengths(b); ++t) {
        const auto l = tr.logits_at(b, t).array();
        const float m = l.maxCoeff();
        const int y = stream[static_cast<std::size_t>(begin[static_cast<std::size_t>(b)] + at + t + 1)];
        bits += std::log(static_cast<double>((l - m).exp().sum())) - static_cast<double>(l(y) - m);
      }
    state = tr.final_state;
  }
  return bits / std::log(2.0) / static_cast<double>(N - 1);
}

/// Options of train_char_rnn(). Same options, seed, threads and data => the same weights, bit
/// for bit.
struct CharRnnTrainOptions {
  Index batch_size = 64;        ///< lanes: sequences per step
  Index bptt = 100;             ///< ids per lane per step: the truncation of backpropagation through time
  Index steps = 1000;           ///< optimisation steps (at most)
  double max_seconds = 0;       ///< stop after the step that passes this wall time (0: no limit)
  float learning_rate = 2e-3f;  ///< Adam's step size
  /// If > 0, the step size decays geometrically from learning_rate to this over the run: at each
  /// step by the larger of the fraction of `steps` done and, with max_seconds, the fraction of
  /// max_seconds spent (then the weights depend on the machine's speed, not only on the options).
  float final_learning_rate = 0;
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;  ///< Adam's constants
  float dropout = 0;                 ///< fraction of the state units zeroed before the output layer (training only)
  float clip_norm = 5.0f;            ///< the global gradient norm is clipped to this (0: no clipping)
  Index eval_every = 0;              ///< held-out evaluation every this many steps (0: at the end only)
  Index eval_lanes = 8;              ///< lanes of char_rnn_bits_per_char() for the held-out evaluation
  int threads = 1;                   ///< threads, each computing the gradients of a share of the lanes
  std::uint64_t seed = 0;            ///< the lanes' offsets in the stream
  std::ostream* progress = nullptr;  ///< progress bar and evaluation lines (nullptr: silent)
  std::string label = "char-rnn";    ///< name shown on the progress bar
};

/// One evaluation during train_char_rnn().
struct CharRnnEvalPoint {
  Index step = 0;                     ///< steps done
  double seconds = 0;                 ///< wall time since the start (evaluations included)
  double train_bits_per_char = 0;     ///< mean training loss over the last (up to) 100 steps, bits per id
  double held_out_bits_per_char = 0;  ///< char_rnn_bits_per_char() on the held-out stream (NaN: none given)
};

/// What train_char_rnn() measured.
struct CharRnnTrainReport {
  Index steps = 0;                 ///< steps done
  Index characters = 0;            ///< ids trained on (steps x batch x bptt)
  double seconds = 0;              ///< wall time
  double train_bits_per_char = 0;  ///< mean training loss over the last (up to) 100 steps
  double held_out_bits_per_char = std::numeric_limits<double>::quiet_NaN();  ///< at the end (NaN: no held-out stream)
  std::vector<CharRnnEvalPoint> history;                                     ///< every evaluation, the final one last
};

/// Trains `net` on a stream of ids (see the header comment) with Adam and global gradient-norm
/// clipping; evaluates `held_out` (may be empty) every eval_every steps and at the end.
/// Throws std::invalid_argument for a bad option or an id outside the vocabulary.
inline CharRnnTrainReport train_char_rnn(CharRnn& net, const std::vector<int>& train, const std::vector<int>& held_out,
                                         const CharRnnTrainOptions& o) {
  const char* fn = "train_char_rnn()";
  const Index N = static_cast<Index>(train.size()), V = net.vocab_size();
  if (V == 0) detail::fail(fn, ": the network has no parameters (default-constructed)");
  if (N < 2) detail::fail(fn, ": the training stream has ", N, " ids, at least 2 are needed");
  if (o.batch_size < 1) detail::fail(fn, ": option 'batch_size' must be >= 1, got ", o.batch_size);
  if (o.bptt < 1) detail::fail(fn, ": option 'bptt' must be >= 1, got ", o.bptt);
  if (o.steps < 0) detail::fail(fn, ": option 'steps' must be >= 0, got ", o.steps);
  if (!(o.learning_rate > 0) || !detail::is_finite(o.learning_rate))
    detail::fail(fn, ": option 'learning_rate' must be positive, got ", o.learning_rate);
  if (!(o.final_learning_rate >= 0) || !detail::is_finite(o.final_learning_rate))
    detail::fail(fn, ": option 'final_learning_rate' must be >= 0, got ", o.final_learning_rate);
  if (!(o.dropout >= 0 && o.dropout < 1)) detail::fail(fn, ": option 'dropout' must be in [0, 1), got ", o.dropout);
  if (!(o.clip_norm >= 0)) detail::fail(fn, ": option 'clip_norm' must be >= 0, got ", o.clip_norm);
  if (o.eval_every < 0) detail::fail(fn, ": option 'eval_every' must be >= 0, got ", o.eval_every);
  if (o.threads < 1 || o.threads > 256) detail::fail(fn, ": option 'threads' must be in [1, 256], got ", o.threads);
  if (!(o.max_seconds >= 0)) detail::fail(fn, ": option 'max_seconds' must be >= 0, got ", o.max_seconds);
  for (Index i = 0; i < N; ++i)
    if (train[static_cast<std::size_t>(i)] < 0 || train[static_cast<std::size_t>(i)] >= V)
      detail::fail(fn, ": training id ", train[static_cast<std::size_t>(i)], " at position ", i, " is outside [0, ", V,
                   ")");
  if (held_out.size() == 1) detail::fail(fn, ": the held-out stream has 1 id (give none, or at least 2)");

  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  const Index B = o.batch_size, T = o.bptt, H = net.hidden_size();
  Rng rng(o.seed);
  const Index shift = rng.uniform_index(N);
  std::vector<Index> pos(static_cast<std::size_t>(B));
  for (Index b = 0; b < B; ++b) pos[static_cast<std::size_t>(b)] = (shift + b * (N / B)) % N;
  // Threads: contiguous shares of the lanes, each with its own buffers.
  const int parts = static_cast<int>(std::min<Index>(o.threads, B));
  struct Part {
    Index first = 0, rows = 0;
    TokenMatrix tokens, targets;
    Eigen::VectorXi lengths;
    RowMatrix state;
    CharRnnParams grads;
    CharRnnWorkspace ws;
    float loss = 0;
    Index correct = 0;
  };
  std::vector<Part> part(static_cast<std::size_t>(parts));
  for (int k = 0; k < parts; ++k) {
    Part& q = part[static_cast<std::size_t>(k)];
    q.first = B * k / parts;
    q.rows = B * (k + 1) / parts - q.first;
    q.tokens.resize(q.rows, T);
    q.targets.resize(q.rows, T);
    q.lengths = Eigen::VectorXi::Constant(q.rows, static_cast<int>(T));
    q.state = RowMatrix::Zero(q.rows, H);
    q.grads = CharRnnParams::zeros(net.shape());
  }
  CharRnnParams grads = CharRnnParams::zeros(net.shape()), m1 = grads, m2 = grads;
  detail::ProgressBar bar(o.progress, o.label, o.steps);
  std::vector<double> recent(100, 0.0), recent_acc(100, 0.0);
  CharRnnTrainReport rep;
  auto evaluate = [&](Index done) {
    CharRnnEvalPoint e;
    e.step = done;
    e.train_bits_per_char = rep.train_bits_per_char;
    e.held_out_bits_per_char = held_out.empty()
                                   ? std::numeric_limits<double>::quiet_NaN()
                                   : char_rnn_bits_per_char(net, held_out, o.eval_lanes, std::max<Index>(T, 32));
    e.seconds = elapsed();
    rep.history.push_back(e);
    if (o.progress) {
      char line[200];
      std::snprintf(line, sizeof line, "%s: step %lld (%.1f s): train %.3f bits/char, held-out %.3f bits/char",
                    o.label.c_str(), static_cast<long long>(done), e.seconds, e.train_bits_per_char,
                    e.held_out_bits_per_char);
      *o.progress << line << "\n" << std::flush;
    }
  };
  const double log_ratio =
      o.final_learning_rate > 0 ? std::log(static_cast<double>(o.final_learning_rate) / o.learning_rate) : 0.0;
  // Fraction of the run done, for the step-size schedule.
  auto progress = [&](Index done) {
    double f = o.steps > 1 ? static_cast<double>(done) / static_cast<double>(o.steps - 1) : 1.0;
    if (o.max_seconds > 0) f = std::max(f, elapsed() / o.max_seconds);
    return std::min(f, 1.0);
  };
  Index step = 0;
  for (; step < o.steps; ++step) {
    if (o.max_seconds > 0 && elapsed() > o.max_seconds) break;
    for (auto& q : part)
      for (Index r = 0; r < q.rows; ++r) {
        Index& at = pos[static_cast<std::size_t>(q.first + r)];
        for (Index t = 0; t < T; ++t) {
          q.tokens(r, t) = train[static_cast<std::size_t>((at + t) % N)];
          q.targets(r, t) = train[static_cast<std::size_t>((at + t + 1) % N)];
        }
        at = (at + T) % N;
      }
    auto work = [&](Part& q) {
      q.correct = 0;
      // A fresh dropout mask per step and share of lanes.
      const std::uint64_t mask_seed =
          detail::mix_seed(o.seed + 1, static_cast<std::uint64_t>(step * (B + 1) + q.first));
      q.loss = char_rnn_gradients(net, q.tokens, q.lengths, q.targets, q.state, q.grads, q.ws, &q.correct, o.dropout,
                                  mask_seed);
      q.state = q.ws.trace.final_state;
    };
    if (parts == 1) {
      work(part[0]);
    } else {
      std::vector<std::thread> pool;
      for (int k = 1; k < parts; ++k) pool.emplace_back(work, std::ref(part[static_cast<std::size_t>(k)]));
      work(part[0]);
      for (auto& th : pool) th.join();
    }
    // Each part's loss and gradients are means over its rows: weigh them by their rows.
    double loss = 0;
    Index correct = 0;
    for (int k = 0; k < parts; ++k) {
      const Part& q = part[static_cast<std::size_t>(k)];
      const float w = static_cast<float>(q.rows) / static_cast<float>(B);
      loss += static_cast<double>(q.loss) * w;
      correct += q.correct;
      CharRnnParams::zip(
          [&](auto& g, const auto& gq) {
            if (k == 0)
              g = w * gq;
            else
              g += w * gq;
          },
          grads, q.grads);
    }
    double sq = 0;
    CharRnnParams::zip([&](const auto& g) { sq += static_cast<double>(g.squaredNorm()); }, grads);
    const double norm = std::sqrt(sq);
    const float clip = o.clip_norm > 0 && norm > o.clip_norm ? static_cast<float>(o.clip_norm / norm) : 1.0f;
    const double t1 = static_cast<double>(step + 1);
    const float c1 = static_cast<float>(1.0 - std::pow(static_cast<double>(o.beta1), t1));
    const float c2 = static_cast<float>(1.0 - std::pow(static_cast<double>(o.beta2), t1));
    const float lr = static_cast<float>(o.learning_rate * std::exp(log_ratio * progress(step))) * std::sqrt(c2) / c1;
    CharRnnParams::zip(
        [&](auto& p, auto& g, auto& m, auto& v) {
          g *= clip;
          m = o.beta1 * m + (1 - o.beta1) * g;
          v = o.beta2 * v + (1 - o.beta2) * g.cwiseProduct(g);
          p.array() -= lr * m.array() / (v.array().sqrt() + o.epsilon);
        },
        net.params(), grads, m1, m2);
    recent[static_cast<std::size_t>(step % 100)] = loss / std::log(2.0);
    recent_acc[static_cast<std::size_t>(step % 100)] = static_cast<double>(correct) / static_cast<double>(B * T);
    const Index window = std::min<Index>(step + 1, 100);
    rep.train_bits_per_char =
        std::accumulate(recent.begin(), recent.begin() + window, 0.0) / static_cast<double>(window);
    const double acc =
        std::accumulate(recent_acc.begin(), recent_acc.begin() + window, 0.0) / static_cast<double>(window);
    bar.update(step + 1, static_cast<float>(rep.train_bits_per_char), static_cast<float>(acc));
    if (o.eval_every > 0 && (step + 1) % o.eval_every == 0 && step + 1 < o.steps) evaluate(step + 1);
  }
  rep.steps = step;
  rep.characters = step * B * T;
  evaluate(step);
  rep.held_out_bits_per_char = rep.history.back().held_out_bits_per_char;
  rep.seconds = elapsed();
  return rep;
}

}  // namespace nnfuzz
