// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include "support/blobs.hpp"
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/models/train.hpp>

#include <sstream>

using namespace nnfuzz;

TEST_CASE("cross_entropy_gradients matches finite differences", "[train]") {
  Mlp<float> net({5, 4, 3, 3});
  net.init_truncated_normal(0, 1);
  Rng rng(2);
  for (auto& l : net.layers()) rng.fill_uniform(l.bias.data(), l.bias.size(), -0.3f, 0.3f);
  RowMatrix x(6, 5);
  rng.fill_uniform(x.data(), x.size(), -1, 1);
  Eigen::VectorXi y(6);
  y << 0, 1, 2, 2, 1, 0;
  MlpTrace<float> t;
  std::vector<DenseLayer<float>> g, g2;
  std::vector<RowMatrix> d;
  cross_entropy_gradients(net, x, y, t, g, d);
  // Central differences; steps small enough that no ReLU input changes sign in this data.
  const float h = 1e-3f;
  int checked = 0;
  for (std::size_t l = 0; l < net.layers().size(); ++l) {
    for (Index i = 0; i < net.layers()[l].weights.size(); i += 3) {
      float& w = net.layers()[l].weights.data()[i];
      const float w0 = w;
      w = w0 + h;
      const float up = cross_entropy_gradients(net, x, y, t, g2, d);
      w = w0 - h;
      const float down = cross_entropy_gradients(net, x, y, t, g2, d);
      w = w0;
      const float numeric = (up - down) / (2 * h);
      INFO("layer " << l << " weight " << i);
      CHECK(g[l].weights.data()[i] == Approx(numeric).margin(2e-3).epsilon(0.02));
      ++checked;
    }
    for (Index i = 0; i < net.layers()[l].bias.size(); ++i) {
      float& b = net.layers()[l].bias.data()[i];
      const float b0 = b;
      b = b0 + h;
      const float up = cross_entropy_gradients(net, x, y, t, g2, d);
      b = b0 - h;
      const float down = cross_entropy_gradients(net, x, y, t, g2, d);
      b = b0;
      CHECK(g[l].bias(i) == Approx((up - down) / (2 * h)).margin(2e-3).epsilon(0.02));
    }
  }
  CHECK(checked > 10);
}

namespace {
using nnfuzz_test::blobs;
}  // namespace

TEST_CASE("train: SGD and Adam learn a separable problem, reproducibly", "[train]") {
  RowMatrix x, xt;
  Eigen::VectorXi y, yt;
  blobs(x, y, 2000, 1);
  blobs(xt, yt, 500, 2);
  for (Optimizer opt : {Optimizer::sgd, Optimizer::adam}) {
    Mlp<float> a({8, 16, 3}), b({8, 16, 3});
    a.init_truncated_normal(0, 5);
    b.init_truncated_normal(0, 5);
    TrainOptions o;
    o.optimizer = opt;
    o.learning_rate = opt == Optimizer::sgd ? 0.1f : 0.01f;
    o.batch_size = 32;
    o.steps = 600;
    o.seed = 9;
    std::ostringstream progress;
    o.progress = &progress;
    const TrainReport r = train(a, x, y, o);
    o.progress = nullptr;
    train(b, x, y, o);
    CHECK(a.layers()[0].weights == b.layers()[0].weights);  // bit for bit
    CHECK(accuracy(a, xt, yt) > 0.95);
    CHECK(r.final_loss < 0.3f);
    CHECK(r.steps == 600);
    CHECK(progress.str().find("step 600/600") != std::string::npos);
  }
}

TEST_CASE("train: bad shapes, labels and options are rejected", "[train]") {
  Mlp<float> net({4, 3});
  RowMatrix x = RowMatrix::Zero(10, 4);
  Eigen::VectorXi y = Eigen::VectorXi::Zero(10);
  TrainOptions o;
  o.batch_size = 5;
  REQUIRE_THROWS_WITH(train(net, x, Eigen::VectorXi::Zero(9), o),
                      Catch::Contains("train()") && Catch::Contains("9 labels"));
  REQUIRE_THROWS_WITH(train(net, RowMatrix::Zero(10, 5), y, o), Catch::Contains("5 columns"));
  y(3) = 7;
  REQUIRE_THROWS_WITH(train(net, x, y, o), Catch::Contains("labels must be in [0, 3)") && Catch::Contains("7"));
  y(3) = 0;
  o.batch_size = 0;
  REQUIRE_THROWS_WITH(train(net, x, y, o), Catch::Contains("batch_size") && Catch::Contains("got 0"));
  o.batch_size = 5;
  o.learning_rate = -1;
  REQUIRE_THROWS_WITH(train(net, x, y, o), Catch::Contains("learning_rate") && Catch::Contains("-1"));
}
