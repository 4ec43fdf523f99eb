// SPDX-License-Identifier: MIT
// nnfuzz: training Mlp<float> classifiers — mini-batch SGD or Adam on cross entropy.
#pragma once

#include "../detail/config.hpp"
#include "../rng.hpp"
#include "mlp.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

#include <unistd.h>

namespace nnfuzz {

/// The optimiser of train().
enum class Optimizer {
  sgd,   ///< plain SGD (TensorFuzz's recipes)
  adam,  ///< Adam (Kingma & Ba), for the well-trained variants
};

/// Options of train(). Same options and seed => the same weights, bit for bit.
struct TrainOptions {
  Optimizer optimizer = Optimizer::sgd;                 ///< the update rule
  float learning_rate = 0.01f;                          ///< step size (SGD: 0.01 in TensorFuzz; Adam: 1e-3 is usual)
  Index batch_size = 100;                               ///< examples per step
  Index steps = 1000;                                   ///< optimisation steps (epochs are reshuffled, seeded)
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;  ///< Adam's constants
  float weight_decay = 0;                               ///< L2 penalty coefficient (0: none)
  std::uint64_t seed = 0;                               ///< shuffling seed
  std::ostream* progress = nullptr;                     ///< progress bar target (nullptr: silent)
  std::string label = "train";                          ///< name shown on the progress bar
  /// Called with the network after every optimisation step (empty: none), e.g. to keep pruned
  /// weights at zero (prune.hpp's train_pruned()).
  std::function<void(Mlp<float>&)> after_step;
};

/// What train() measured.
struct TrainReport {
  Index steps = 0;                 ///< steps done
  double seconds = 0;              ///< wall time
  float final_loss = 0;            ///< mean (stable) cross entropy over the last 100 steps
  float final_batch_accuracy = 0;  ///< accuracy over the last 100 steps' batches
};

/// Fraction of rows of `x` whose argmax logit equals `labels`. `Net` is any classifier with a
/// `Trace` type, `forward(x, trace)` and `trace.logits()`: Mlp<float>, Mlp<Eigen::half>, Int8Mlp.
template <typename Net>
double accuracy(const Net& net, const Eigen::Ref<const RowMatrix>& x, const Eigen::Ref<const Eigen::VectorXi>& labels,
                Index batch = 1000) {
  if (x.rows() != labels.size()) detail::fail("accuracy(): ", x.rows(), " inputs but ", labels.size(), " labels");
  if (x.rows() == 0) return 0;
  typename Net::Trace t;
  Index correct = 0;
  for (Index first = 0; first < x.rows(); first += batch) {
    const Index n = std::min(batch, x.rows() - first);
    net.forward(x.middleRows(first, n), t);
    for (Index r = 0; r < n; ++r) {
      Index c = 0;
      t.logits().row(r).template cast<float>().maxCoeff(&c);
      correct += c == labels(first + r);
    }
  }
  return static_cast<double>(correct) / static_cast<double>(x.rows());
}

namespace detail {

/// A progress bar: redrawn in place on a terminal, a plain line every 10% otherwise.
class ProgressBar {
 public:
  ProgressBar(std::ostream* os, std::string label, Index total)
      : os_(os),
        label_(std::move(label)),
        total_(total),
        tty_(os != nullptr && isatty(STDERR_FILENO) && isatty(STDOUT_FILENO)),
        start_(std::chrono::steady_clock::now()) {}
  void update(Index done, float loss, float acc) {
    if (!os_) return;
    const bool last = done == total_;
    const int decile = static_cast<int>(10 * done / std::max<Index>(total_, 1));
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (tty_) {
      if (!last && elapsed - last_draw_ < 0.1) return;
    } else if (!last && decile == last_decile_) {
      return;
    }
    last_draw_ = elapsed;
    last_decile_ = decile;
    const double eta = done > 0 ? elapsed * static_cast<double>(total_ - done) / static_cast<double>(done) : 0;
    char bar[32];
    const int filled = static_cast<int>(20 * done / std::max<Index>(total_, 1));
    for (int i = 0; i < 20; ++i) bar[i] = i < filled ? '#' : '.';
    bar[20] = 0;
    char line[200];
    std::snprintf(line, sizeof line, "%s [%s] step %lld/%lld loss %.4f acc %.3f %s %.0fs", label_.c_str(), bar,
                  static_cast<long long>(done), static_cast<long long>(total_), loss, acc, last ? "took" : "ETA",
                  last ? elapsed : eta);
    *os_ << (tty_ ? "\r" : "") << line << (tty_ && !last ? "" : "\n") << std::flush;
  }

 private:
  std::ostream* os_;
  std::string label_;
  Index total_;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
  double last_draw_ = -1;
  int last_decile_ = -1;
};

}  // namespace detail

/// Gradients of the mean cross entropy of a batch with respect to every weight and bias
/// (backpropagation through ReLU layers; softmax computed stably). Returns the mean loss.
/// Exposed for the gradient check; train() uses it.
inline float cross_entropy_gradients(const Mlp<float>& net, const Eigen::Ref<const RowMatrix>& x,
                                     const Eigen::Ref<const Eigen::VectorXi>& labels, MlpTrace<float>& trace,
                                     std::vector<DenseLayer<float>>& grads, std::vector<RowMatrix>& deltas,
                                     Index* correct = nullptr) {
  net.forward(x, trace);
  const auto& layers = net.layers();
  const std::size_t n = layers.size();
  const Index b = x.rows();
  grads.resize(n);
  deltas.resize(n);
  // dL/dlogits = (softmax - onehot) / B, softmax computed after subtracting the row max.
  RowMatrix& d = deltas[n - 1];
  d = trace.logits();
  float loss = 0;
  for (Index r = 0; r < b; ++r) {
    const int y = labels(r);
    if (y < 0 || y >= d.cols())
      detail::fail("cross_entropy_gradients(): label ", y, " of row ", r, " is outside [0, ", d.cols(), ")");
    Index best = 0;
    const float m = d.row(r).maxCoeff(&best);
    if (correct) *correct += best == y;
    d.row(r).array() = (d.row(r).array() - m).exp();
    const float z = d.row(r).sum();
    loss += std::log(z) - (trace.logits()(r, y) - m);
    d.row(r) /= z;
    d(r, y) -= 1.0f;
  }
  d /= static_cast<float>(b);
  for (std::size_t l = n; l-- > 0;) {
    const RowMatrix& in = l == 0 ? trace.input : trace.post[l - 1];
    grads[l].weights.noalias() = in.transpose() * deltas[l];
    grads[l].bias = deltas[l].colwise().sum();
    if (l > 0) {
      deltas[l - 1].noalias() = deltas[l] * layers[l].weights.transpose();
      deltas[l - 1].array() *= (trace.pre[l - 1].array() > 0).cast<float>();
    }
  }
  return loss / static_cast<float>(b);
}

/// Trains `net` on (x, labels) with mini-batches drawn from seeded, reshuffled epochs.
/// Throws std::invalid_argument for mismatched shapes, labels outside the logits, or bad options.
inline TrainReport train(Mlp<float>& net, const Eigen::Ref<const RowMatrix>& x,
                         const Eigen::Ref<const Eigen::VectorXi>& labels, const TrainOptions& o) {
  if (x.rows() != labels.size()) detail::fail("train(): ", x.rows(), " inputs but ", labels.size(), " labels");
  if (x.cols() != net.input_dim())
    detail::fail("train(): inputs have ", x.cols(), " columns, the network takes ", net.input_dim());
  if (o.batch_size < 1 || o.batch_size > x.rows())
    detail::fail("train(): option 'batch_size' must be in [1, ", x.rows(), "], got ", o.batch_size);
  if (o.steps < 0) detail::fail("train(): option 'steps' must be >= 0, got ", o.steps);
  if (!(o.learning_rate > 0) || !detail::is_finite(o.learning_rate))
    detail::fail("train(): option 'learning_rate' must be positive, got ", o.learning_rate);
  if (labels.size() > 0 && (labels.minCoeff() < 0 || labels.maxCoeff() >= net.output_dim()))
    detail::fail("train(): labels must be in [0, ", net.output_dim(), "), got ", labels.minCoeff(), "..",
                 labels.maxCoeff());

  const auto start = std::chrono::steady_clock::now();
  Rng rng(o.seed);
  std::vector<Index> order(static_cast<std::size_t>(x.rows()));
  std::iota(order.begin(), order.end(), Index{0});
  std::size_t cursor = order.size();
  RowMatrix bx(o.batch_size, x.cols());
  Eigen::VectorXi by(o.batch_size);
  MlpTrace<float> trace;
  std::vector<DenseLayer<float>> grads, m1, m2;
  std::vector<RowMatrix> deltas;
  auto& layers = net.layers();
  if (o.optimizer == Optimizer::adam) {
    for (const auto& l : layers) {
      DenseLayer<float> z;
      z.weights = RowMatrix::Zero(l.weights.rows(), l.weights.cols());
      z.bias = RowVector::Zero(l.bias.cols());
      m1.push_back(z);
      m2.push_back(z);
    }
  }
  detail::ProgressBar bar(o.progress, o.label, o.steps);
  // Running loss/accuracy over the last 100 steps, for the bar and the report.
  std::vector<float> recent_loss(100, 0), recent_acc(100, 0);
  TrainReport rep;
  for (Index step = 0; step < o.steps; ++step) {
    for (Index r = 0; r < o.batch_size; ++r) {
      if (cursor == order.size()) {  // new epoch: Fisher-Yates with our RNG
        for (std::size_t i = order.size(); i > 1; --i)
          std::swap(order[i - 1], order[static_cast<std::size_t>(rng.uniform_index(static_cast<Index>(i)))]);
        cursor = 0;
      }
      const Index k = order[cursor++];
      bx.row(r) = x.row(k);
      by(r) = labels(k);
    }
    Index correct = 0;
    const float loss = cross_entropy_gradients(net, bx, by, trace, grads, deltas, &correct);
    recent_loss[static_cast<std::size_t>(step % 100)] = loss;
    recent_acc[static_cast<std::size_t>(step % 100)] = static_cast<float>(correct) / static_cast<float>(o.batch_size);
    const double t = static_cast<double>(step + 1);
    for (std::size_t l = 0; l < layers.size(); ++l) {
      if (o.weight_decay > 0) grads[l].weights += o.weight_decay * layers[l].weights;
      if (o.optimizer == Optimizer::sgd) {
        layers[l].weights -= o.learning_rate * grads[l].weights;
        layers[l].bias -= o.learning_rate * grads[l].bias;
      } else {
        const float c1 = static_cast<float>(1.0 - std::pow(static_cast<double>(o.beta1), t));
        const float c2 = static_cast<float>(1.0 - std::pow(static_cast<double>(o.beta2), t));
        const float lr = o.learning_rate * std::sqrt(c2) / c1;
        auto adam = [&](auto& p, const auto& g, auto& m, auto& v) {
          m = o.beta1 * m + (1 - o.beta1) * g;
          v = o.beta2 * v + (1 - o.beta2) * g.cwiseProduct(g);
          p.array() -= lr * m.array() / (v.array().sqrt() + o.epsilon);
        };
        adam(layers[l].weights, grads[l].weights, m1[l].weights, m2[l].weights);
        adam(layers[l].bias, grads[l].bias, m1[l].bias, m2[l].bias);
      }
    }
    if (o.after_step) o.after_step(net);
    const Index window = std::min<Index>(step + 1, 100);
    rep.final_loss =
        std::accumulate(recent_loss.begin(), recent_loss.begin() + window, 0.0f) / static_cast<float>(window);
    rep.final_batch_accuracy =
        std::accumulate(recent_acc.begin(), recent_acc.begin() + window, 0.0f) / static_cast<float>(window);
    bar.update(step + 1, rep.final_loss, rep.final_batch_accuracy);
  }
  rep.steps = o.steps;
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return rep;
}

}  // namespace nnfuzz
