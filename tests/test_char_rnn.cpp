// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/data/text.hpp>
#include <nnfuzz/models/char_rnn.hpp>
#include <nnfuzz/models/train_char_rnn.hpp>
#include <nnfuzz/models/mlp_file.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <sstream>

#include <unistd.h>

using namespace nnfuzz;
namespace fs = std::filesystem;

namespace {

CharRnn random_net(CharRnnShape shape, std::uint64_t seed) {
  CharRnn net(shape);
  net.init(seed);
  Rng rng(seed + 100);
  auto& p = net.params();
  // Non-zero biases, so that a mix-up of the bias terms shows.
  rng.fill_uniform(p.b_input.data(), p.b_input.size(), -0.3f, 0.3f);
  rng.fill_uniform(p.b_hidden.data(), p.b_hidden.size(), -0.3f, 0.3f);
  rng.fill_uniform(p.b_output.data(), p.b_output.size(), -0.3f, 0.3f);
  // Larger recurrent weights than the default, so that states saturate and differ.
  p.w_hidden *= 3.0f;
  return net;
}

TokenMatrix random_tokens(Index rows, Index cols, Index vocab, std::uint64_t seed) {
  Rng rng(seed);
  TokenMatrix t(rows, cols);
  for (Index i = 0; i < t.size(); ++i) t.data()[i] = static_cast<int>(rng.uniform_index(vocab));
  return t;
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// The GRU in double, one sequence, straight from the equations.
std::vector<std::vector<double>> reference_states(const CharRnn& net, const std::vector<int>& seq,
                                                  std::vector<double> h) {
  const auto& p = net.params();
  const Index H = net.hidden_size(), E = net.embed_size();
  std::vector<std::vector<double>> states;
  for (const int x : seq) {
    std::vector<double> gx(3 * H), gh(3 * H), next(H);
    for (Index j = 0; j < 3 * H; ++j) {
      gx[j] = p.b_input(j);
      for (Index e = 0; e < E; ++e) gx[j] += double(p.embedding(x, e)) * p.w_input(e, j);
      gh[j] = p.b_hidden(j);
      for (Index k = 0; k < H; ++k) gh[j] += h[k] * p.w_hidden(k, j);
    }
    for (Index j = 0; j < H; ++j) {
      const double r = sigmoid(gx[j] + gh[j]), z = sigmoid(gx[H + j] + gh[H + j]);
      const double n = std::tanh(gx[2 * H + j] + r * gh[2 * H + j]);
      next[j] = (1 - z) * n + z * h[j];
    }
    h = next;
    states.push_back(h);
  }
  return states;
}

bool same_bits(const Eigen::Ref<const RowMatrix>& a, const Eigen::Ref<const RowMatrix>& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() && std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0;
}

struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("nnfuzz_char_rnn_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(dir); }
  ~TempDir() { fs::remove_all(dir); }
  std::string file(const char* n) const { return (dir / n).string(); }
};
std::vector<char> slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
void spit(const std::string& p, const std::vector<char>& b) {
  std::ofstream(p, std::ios::binary).write(b.data(), static_cast<std::streamsize>(b.size()));
}
void reseal(std::vector<char>& b) {
  const std::uint32_t crc = detail::crc32_update(0, b.data(), b.size() - 4);
  for (int i = 0; i < 4; ++i) b[b.size() - 4 + static_cast<std::size_t>(i)] = static_cast<char>(crc >> (8 * i));
}

}  // namespace

TEST_CASE("CharRnn: forward pass matches the GRU equations, batch-first with ragged lengths", "[char_rnn]") {
  const CharRnn net = random_net({7, 5, 19}, 1);
  CHECK(net.parameter_count() == 7 * 5 + 5 * 57 + 57 + 19 * 57 + 57 + 19 * 7 + 7);
  TokenMatrix tokens = random_tokens(3, 6, 7, 2);
  Eigen::VectorXi lengths(3);
  lengths << 6, 2, 0;
  tokens(1, 4) = 99;  // past row 1's length: ignored
  CharRnnTrace tr;
  net.forward(tokens, lengths, tr);
  REQUIRE(tr.hidden.rows() == 18);
  REQUIRE(tr.logits.cols() == 7);
  for (Index b = 0; b < 3; ++b) {
    std::vector<int> seq(tokens.row(b).data(), tokens.row(b).data() + lengths(b));
    const auto ref = reference_states(net, seq, std::vector<double>(19, 0.0));
    for (Index t = 0; t < 6; ++t) {
      INFO("row " << b << " step " << t);
      if (t < lengths(b)) {
        for (Index j = 0; j < 19; ++j) CHECK(tr.hidden_at(b, t)(j) == Approx(ref[t][j]).margin(2e-6));
        // logits = h·W_o + b_o
        const RowVector expect = tr.hidden_at(b, t) * net.params().w_output + net.params().b_output;
        CHECK((tr.logits_at(b, t) - expect).cwiseAbs().maxCoeff() < 1e-5f);
      } else {
        CHECK(tr.hidden_at(b, t).isZero(0));
        CHECK(tr.logits_at(b, t).isZero(0));
      }
    }
  }
  CHECK(same_bits(tr.final_state.row(0), tr.hidden_at(0, 5)));
  CHECK(same_bits(tr.final_state.row(1), tr.hidden_at(1, 1)));
  CHECK(tr.final_state.row(2).isZero(0));
  CHECK(tr.hidden_of(1).size() == 6 * 19);

  // From a given initial state.
  RowMatrix h0(3, 19);
  Rng(3).fill_uniform(h0.data(), h0.size(), -1, 1);
  net.forward(tokens, lengths, h0, tr);
  std::vector<double> h0_row(h0.row(0).data(), h0.row(0).data() + 19);
  const auto ref = reference_states(net, std::vector<int>(tokens.row(0).data(), tokens.row(0).data() + 6), h0_row);
  for (Index j = 0; j < 19; ++j) CHECK(tr.hidden_at(0, 5)(j) == Approx(ref[5][j]).margin(2e-6));
  CHECK(same_bits(tr.final_state.row(2), h0.row(2)));
  // Buffers are reused at an unchanged shape.
  const float* before = tr.hidden.data();
  net.forward(tokens, lengths, h0, tr);
  CHECK(tr.hidden.data() == before);
}

TEST_CASE("CharRnn: forward and input errors name the value", "[char_rnn]") {
  const CharRnn net = random_net({7, 5, 8}, 1);
  CharRnnTrace tr;
  TokenMatrix tokens = random_tokens(2, 4, 7, 2);
  Eigen::VectorXi lengths(2);
  lengths << 4, 5;
  REQUIRE_THROWS_WITH(net.forward(tokens, lengths, tr),
                      Catch::Contains("CharRnn::forward()") && Catch::Contains("length 5 of row 1"));
  lengths << 4, 3;
  tokens(1, 2) = 7;
  REQUIRE_THROWS_WITH(net.forward(tokens, lengths, tr),
                      Catch::Contains("token 7 at row 1, column 2") && Catch::Contains("[0, 7)"));
  tokens(1, 2) = -1;
  REQUIRE_THROWS_WITH(net.forward(tokens, lengths, tr), Catch::Contains("token -1"));
  tokens(1, 2) = 0;
  REQUIRE_THROWS_WITH(net.forward(tokens, Eigen::VectorXi::Constant(3, 1), tr),
                      Catch::Contains("2 sequences") && Catch::Contains("3 lengths"));
  REQUIRE_THROWS_WITH(net.forward(tokens, lengths, RowMatrix::Zero(2, 7), tr),
                      Catch::Contains("initial state is 2 x 7") && Catch::Contains("expected 2 x 8"));
  REQUIRE_THROWS_WITH(CharRnn().forward(tokens, lengths, tr), Catch::Contains("no parameters"));
  REQUIRE_THROWS_WITH(CharRnn({1, 4, 4}),
                      Catch::Contains("CharRnn()") && Catch::Contains("'vocab'") && Catch::Contains("got 1"));
  REQUIRE_THROWS_WITH(CharRnn({5, 0, 4}), Catch::Contains("'embed'"));
  REQUIRE_THROWS_WITH(CharRnn({5, 4, 70000}), Catch::Contains("'hidden'") && Catch::Contains("70000"));
  REQUIRE_THROWS_WITH(CharRnn({65536, 4000, 4000}), Catch::Contains("more than 2^28"));
}

TEST_CASE("CharRnn: the affine kernel gives a row the same bits at any batch size", "[char_rnn]") {
  // Shapes with partial packets and tiles of every kind (8, 4, 1 rows; 3, 1 packets, scalar).
  for (const Index cols : {1, 5, 16, 47, 48, 97, 300}) {
    const Index depth = 37;
    RowMatrix a(70, depth), w(depth, cols);
    RowVector bias(cols);
    Rng rng(static_cast<std::uint64_t>(cols));
    rng.fill_uniform(a.data(), a.size(), -1, 1);
    rng.fill_uniform(w.data(), w.size(), -1, 1);
    rng.fill_uniform(bias.data(), bias.size(), -1, 1);
    RowMatrix all(70, cols);
    detail::row_invariant_affine(a.data(), 70, depth, depth, w.data(), cols, bias.data(), all.data(), cols);
    const RowMatrix eigen = (a * w).rowwise() + bias;
    CHECK((all - eigen).cwiseAbs().maxCoeff() < 1e-4f);
    for (const Index rows : {1, 2, 3, 4, 5, 8, 9, 13, 16, 33}) {
      for (const Index first : {Index{0}, Index{3}, 70 - rows}) {
        RowMatrix part(rows, cols);
        detail::row_invariant_affine(a.data() + first * depth, rows, depth, depth, w.data(), cols, bias.data(),
                                     part.data(), cols);
        INFO("cols " << cols << " rows " << rows << " first " << first);
        CHECK(same_bits(part, all.middleRows(first, rows)));
      }
    }
  }
}

TEST_CASE("CharRnn: forward is batch-invariant", "[char_rnn]") {
  for (const Index H : {Index{37}, Index{64}}) {
    const CharRnn net = random_net({23, 9, H}, 5);
    const Index B = 40, T = 17;
    const TokenMatrix tokens = random_tokens(B, T, 23, 6);
    Eigen::VectorXi lengths(B);
    Rng rng(7);
    for (Index b = 0; b < B; ++b) lengths(b) = static_cast<int>(rng.uniform_index(T + 1));
    CharRnnTrace all, one;
    net.forward(tokens, lengths, all);
    for (Index b = 0; b < B; ++b) {
      net.forward(tokens.row(b), lengths.segment(b, 1), one);
      INFO("H " << H << " row " << b << " length " << lengths(b));
      CHECK(same_bits(one.hidden, all.hidden.middleRows(b * T, T)));
      CHECK(same_bits(one.logits, all.logits.middleRows(b * T, T)));
      CHECK(same_bits(one.final_state, all.final_state.row(b)));
    }
    // A sub-batch in another order, padded to another width.
    const Index rows[] = {9, 2, 31, 0, 17};
    TokenMatrix sub = TokenMatrix::Zero(5, T + 4);
    Eigen::VectorXi sub_len(5);
    for (Index k = 0; k < 5; ++k) {
      sub.row(k).head(T) = tokens.row(rows[k]);
      sub_len(k) = lengths(rows[k]);
    }
    net.forward(sub, sub_len, one);
    for (Index k = 0; k < 5; ++k)
      for (Index t = 0; t < sub_len(k); ++t) {
        CHECK(same_bits(one.hidden_at(k, t), all.hidden_at(rows[k], t)));
        CHECK(same_bits(one.logits_at(k, t), all.logits_at(rows[k], t)));
      }
  }
}

TEST_CASE("CharRnn: generate is a pure function of (prompt, noise), at any batch size", "[char_rnn]") {
  const CharRnn net = random_net({31, 8, 40}, 11);
  const Index B = 21, P = 9, n = 25;
  const TokenMatrix prompts = random_tokens(B, P, 31, 12);
  Eigen::VectorXi lengths(B);
  Rng rng(13);
  for (Index b = 0; b < B; ++b) lengths(b) = 1 + static_cast<int>(rng.uniform_index(P));
  RowMatrix noise(B, n);
  rng.fill_uniform(noise.data(), noise.size());
  for (const float temperature : {0.0f, 0.5f, 1.0f, 2.0f}) {
    CharRnnGeneration all, again, one;
    net.generate(prompts, lengths, n, temperature, noise, all);
    net.generate(prompts, lengths, n, temperature, noise, again);
    CHECK(all.tokens == again.tokens);
    CHECK(same_bits(all.hidden, again.hidden));
    for (Index b = 0; b < B; ++b) {
      net.generate(prompts.row(b), lengths.segment(b, 1), n, temperature, noise.row(b), one);
      INFO("temperature " << temperature << " row " << b);
      CHECK(one.tokens == all.tokens.row(b));
      CHECK(same_bits(one.hidden, all.hidden.row(b)));
    }
    // The states generate() reports are forward()'s on the prompt and the fed chars; greedy
    // chars are the argmax of forward()'s logits.
    for (Index b = 0; b < B; b += 5) {
      const Index L = lengths(b);
      TokenMatrix seq(1, L + n - 1);
      seq.row(0).head(L) = prompts.row(b).head(L);
      seq.row(0).tail(n - 1) = all.tokens.row(b).head(n - 1);
      CharRnnTrace tr;
      net.forward(seq, Eigen::VectorXi::Constant(1, static_cast<int>(L + n - 1)), tr);
      for (Index j = 0; j < n; ++j) {
        CHECK(same_bits(all.hidden_at(b, j), tr.hidden_at(0, L - 1 + j)));
        if (temperature == 0) {
          Index best = 0;
          tr.logits_at(0, L - 1 + j).maxCoeff(&best);
          CHECK(all.tokens(b, j) == best);
        }
      }
    }
  }
  // Sampling differs with the noise, and greedy needs no noise.
  CharRnnGeneration a, b, g1, g2;
  net.generate(prompts, lengths, n, 1.0f, noise, a);
  RowMatrix other(B, n);
  Rng(99).fill_uniform(other.data(), other.size());
  net.generate(prompts, lengths, n, 1.0f, other, b);
  CHECK(a.tokens != b.tokens);
  net.generate(prompts, lengths, n, 0.0f, RowMatrix(), g1);
  net.generate(prompts, lengths, n, 0.0f, noise, g2);
  CHECK(g1.tokens == g2.tokens);
}

TEST_CASE("CharRnn: generate draws by inverse CDF in id order", "[char_rnn]") {
  CharRnn net({4, 2, 3});  // all weights zero: the logits are the output bias
  net.params().b_output << std::log(0.1f), std::log(0.2f), std::log(0.3f), std::log(0.4f);
  TokenMatrix prompt = TokenMatrix::Zero(1, 1);
  const Eigen::VectorXi len = Eigen::VectorXi::Ones(1);
  RowMatrix u(1, 6);
  u << 0.0f, 0.05f, 0.15f, 0.35f, 0.65f, 0.9999999f;
  CharRnnGeneration g;
  net.generate(prompt, len, 6, 1.0f, u, g);
  CHECK(g.tokens == (TokenMatrix(1, 6) << 0, 0, 1, 2, 3, 3).finished());
  net.generate(prompt, len, 6, 0.0f, u, g);
  CHECK(g.tokens == TokenMatrix::Constant(1, 6, 3));
  // A low temperature sharpens: 0.4^(1/0.1) dominates.
  net.generate(prompt, len, 6, 0.1f, u, g);
  CHECK(g.tokens.row(0).tail(4) == TokenMatrix::Constant(1, 4, 3));
  net.generate(prompt, len, 0, 1.0f, RowMatrix(1, 0), g);
  CHECK(g.tokens.size() == 0);
}

TEST_CASE("CharRnn: generate errors name the value", "[char_rnn]") {
  const CharRnn net = random_net({6, 3, 4}, 1);
  TokenMatrix prompts = TokenMatrix::Zero(2, 3);
  Eigen::VectorXi len = Eigen::VectorXi::Ones(2);
  RowMatrix noise = RowMatrix::Constant(2, 4, 0.5f);
  CharRnnGeneration g;
  len(1) = 0;
  REQUIRE_THROWS_WITH(net.generate(prompts, len, 4, 1.0f, noise, g), Catch::Contains("CharRnn::generate()") &&
                                                                         Catch::Contains("length 0 of row 1") &&
                                                                         Catch::Contains("[1, 3]"));
  len(1) = 2;
  REQUIRE_THROWS_WITH(net.generate(prompts, len, 5, 1.0f, noise, g), Catch::Contains("noise is 2 x 4, expected 2 x 5"));
  REQUIRE_THROWS_WITH(net.generate(prompts, len, 4, 1.0f, RowMatrix(), g), Catch::Contains("noise is 0 x 0"));
  noise(1, 2) = 1.0f;
  REQUIRE_THROWS_WITH(net.generate(prompts, len, 4, 1.0f, noise, g),
                      Catch::Contains("noise(1, 2) is 1") && Catch::Contains("[0, 1)"));
  noise(1, 2) = std::nanf("");
  REQUIRE_THROWS_WITH(net.generate(prompts, len, 4, 1.0f, noise, g), Catch::Contains("noise(1, 2) is nan"));
  noise(1, 2) = 0.5f;
  REQUIRE_THROWS_WITH(net.generate(prompts, len, 4, -1.0f, noise, g),
                      Catch::Contains("'temperature'") && Catch::Contains("-1"));
  REQUIRE_THROWS_WITH(net.generate(prompts, len, -1, 1.0f, noise, g), Catch::Contains("'n_chars'"));
  prompts(0, 0) = 6;
  REQUIRE_THROWS_WITH(net.generate(prompts, len, 4, 1.0f, noise, g), Catch::Contains("token 6 at row 0, column 0"));
}

TEST_CASE("CharRnn: weights save and load exactly, with the alphabet", "[char_rnn]") {
  TempDir tmp;
  const CharRnn net = random_net({5, 3, 7}, 21);
  save_char_rnn(tmp.file("rnn.bin"), net, "abcd");
  std::string symbols = "junk";
  const CharRnn back = load_char_rnn(tmp.file("rnn.bin"), &symbols);
  CHECK(symbols == "abcd");
  CHECK(back.shape() == net.shape());
  CharRnnParams::zip([](const auto& x, const auto& y) { CHECK(x == y); }, net.params(), back.params());
  CHECK(load_char_rnn(tmp.file("rnn.bin"), CharRnnShape{5, 3, 7}).parameter_count() == net.parameter_count());
  save_char_rnn(tmp.file("plain.bin"), net);
  load_char_rnn(tmp.file("plain.bin"), &symbols);
  CHECK(symbols.empty());
  CHECK(fs::file_size(tmp.file("plain.bin")) + 4 == fs::file_size(tmp.file("rnn.bin")));
  // Nothing but the file is left behind.
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(tmp.dir)) files += e.is_regular_file();
  CHECK(files == 2);
}

TEST_CASE("CharRnn: malformed weights files are errors naming the file", "[char_rnn]") {
  TempDir tmp;
  const CharRnn net = random_net({5, 3, 7}, 21);
  const std::string good = tmp.file("good.bin");
  save_char_rnn(good, net, "abcd");
  const std::vector<char> bytes = slurp(good);

  REQUIRE_THROWS_WITH(load_char_rnn(tmp.file("missing.bin")), Catch::Contains("load_char_rnn()") &&
                                                                  Catch::Contains("missing.bin") &&
                                                                  Catch::Contains("does not exist"));
  REQUIRE_THROWS_WITH(load_char_rnn(tmp.dir.string()), Catch::Contains("not a regular file"));
  // Another architecture.
  REQUIRE_THROWS_WITH(load_char_rnn(good, CharRnnShape{5, 3, 8}),
                      Catch::Contains("load_char_rnn()") && Catch::Contains(good) &&
                          Catch::Contains("hidden 7; expected vocab 5, embed 3, hidden 8"));
  // An Mlp weights file, and something else.
  Mlp<float> mlp({4, 3});
  save_mlp(tmp.file("mlp.bin"), mlp);
  REQUIRE_THROWS_WITH(load_char_rnn(tmp.file("mlp.bin")),
                      Catch::Contains("mlp.bin") && Catch::Contains("is an Mlp weights file"));
  std::vector<char> b = bytes;
  b[3] = 'X';
  spit(tmp.file("magic.bin"), b);
  REQUIRE_THROWS_WITH(load_char_rnn(tmp.file("magic.bin")),
                      Catch::Contains("magic.bin") && Catch::Contains("bad magic"));
  // A flipped bit anywhere after the magic: the CRC says so.
  for (const std::size_t at : {std::size_t{12}, std::size_t{40}, bytes.size() / 2, bytes.size() - 5}) {
    b = bytes;
    b[at] = static_cast<char>(b[at] ^ 0x10);
    spit(tmp.file("flip.bin"), b);
    INFO("byte " << at);
    REQUIRE_THROWS_WITH(load_char_rnn(tmp.file("flip.bin")),
                        Catch::Contains("flip.bin") && Catch::Contains("corrupted: CRC-32"));
  }
  b = std::vector<char>(bytes.begin(), bytes.end() - 100);
  spit(tmp.file("short.bin"), b);
  REQUIRE_THROWS_WITH(load_char_rnn(tmp.file("short.bin")), Catch::Contains("short.bin") && Catch::Contains("CRC"));
  spit(tmp.file("tiny.bin"), std::vector<char>(bytes.begin(), bytes.begin() + 10));
  REQUIRE_THROWS_WITH(load_char_rnn(tmp.file("tiny.bin")), Catch::Contains("tiny.bin") && Catch::Contains("truncated"));
  // Consistent CRC but a header that does not match the payload (hidden 7 -> 8).
  b = bytes;
  b[24] = 8;
  reseal(b);
  spit(tmp.file("arch.bin"), b);
  REQUIRE_THROWS_WITH(load_char_rnn(tmp.file("arch.bin")),
                      Catch::Contains("arch.bin") && Catch::Contains("hidden 8") && Catch::Contains("(truncated)"));
  b = bytes;
  b[24] = 0;
  reseal(b);
  spit(tmp.file("zero.bin"), b);
  REQUIRE_THROWS_WITH(load_char_rnn(tmp.file("zero.bin")),
                      Catch::Contains("absurd sizes") && Catch::Contains("hidden 0"));
  b = bytes;
  b[8] = 2;
  reseal(b);
  spit(tmp.file("version.bin"), b);
  REQUIRE_THROWS_WITH(load_char_rnn(tmp.file("version.bin")), Catch::Contains("format version 2"));
  b = bytes;
  b[12] = 2;
  reseal(b);
  spit(tmp.file("cell.bin"), b);
  REQUIRE_THROWS_WITH(load_char_rnn(tmp.file("cell.bin")), Catch::Contains("cell type 2"));
  b = bytes;
  b[28] = 3;
  reseal(b);
  spit(tmp.file("symbols.bin"), b);
  REQUIRE_THROWS_WITH(load_char_rnn(tmp.file("symbols.bin")),
                      Catch::Contains("stores 3 symbols for a vocabulary of 5"));
  b = bytes;
  const float inf = std::numeric_limits<float>::infinity();
  std::memcpy(&b[b.size() - 8], &inf, 4);
  reseal(b);
  spit(tmp.file("inf.bin"), b);
  REQUIRE_THROWS_WITH(load_char_rnn(tmp.file("inf.bin")), Catch::Contains("non-finite value in parameter b_output"));
  b = bytes;
  b.insert(b.end() - 4, {0, 0, 0, 0});
  reseal(b);
  spit(tmp.file("trailing.bin"), b);
  REQUIRE_THROWS_WITH(load_char_rnn(tmp.file("trailing.bin")), Catch::Contains("(trailing bytes)"));

  // The writer refuses what the loader would refuse, and leaves the old file alone.
  CharRnn bad = net;
  bad.params().w_hidden(2, 3) = std::nanf("");
  REQUIRE_THROWS_WITH(save_char_rnn(good, bad),
                      Catch::Contains("save_char_rnn()") && Catch::Contains("w_hidden") && Catch::Contains(good));
  REQUIRE_THROWS_WITH(save_char_rnn(good, net, "abc"), Catch::Contains("3 symbols for a vocabulary of 5"));
  REQUIRE_THROWS_WITH(save_char_rnn(good, CharRnn()), Catch::Contains("no parameters"));
  REQUIRE_THROWS_WITH(save_char_rnn(tmp.file("no/such/dir/x.bin"), net),
                      Catch::Contains("save_char_rnn()") && Catch::Contains("cannot create"));
  CHECK(slurp(good) == bytes);
}

TEST_CASE("CharRnn: BPTT gradients match finite differences", "[char_rnn]") {
  const float dropout = GENERATE(0.0f, 0.3f);
  INFO("dropout " << dropout);
  const CharRnn base = random_net({6, 4, 5}, 31);
  const TokenMatrix tokens = random_tokens(3, 5, 6, 32);
  const TokenMatrix targets = random_tokens(3, 5, 6, 33);
  Eigen::VectorXi lengths(3);
  lengths << 5, 3, 0;
  RowMatrix h0(3, 5);
  Rng(34).fill_uniform(h0.data(), h0.size(), -0.5f, 0.5f);
  CharRnn net = base;
  CharRnnParams g, g2;
  CharRnnWorkspace ws;
  const float loss = char_rnn_gradients(net, tokens, lengths, targets, h0, g, ws, nullptr, dropout, 77);
  CHECK(loss > 0.5f);
  const RowMatrix d_initial = ws.d_initial;
  // Central differences of the loss (in double around float parameters: step 1e-2).
  auto numeric = [&](float& x) {
    const float x0 = x, h = 1e-2f;
    x = x0 + h;
    const double up = char_rnn_gradients(net, tokens, lengths, targets, h0, g2, ws, nullptr, dropout, 77);
    x = x0 - h;
    const double down = char_rnn_gradients(net, tokens, lengths, targets, h0, g2, ws, nullptr, dropout, 77);
    x = x0;
    return (up - down) / (2.0 * static_cast<double>(h));
  };
  const char* names[] = {"embedding", "w_input", "b_input", "w_hidden", "b_hidden", "w_output", "b_output"};
  int which = 0, checked = 0;
  double worst = 0;
  CharRnnParams::zip(
      [&](auto& p, const auto& gp) {
        for (Index i = 0; i < p.size(); ++i) {
          const double n = numeric(p.data()[i]);
          INFO(names[which] << "[" << i << "]");
          CHECK(gp.data()[i] == Approx(n).margin(2e-4).epsilon(0.01));
          worst = std::max(worst, std::abs(gp.data()[i] - n));
          ++checked;
        }
        ++which;
      },
      net.params(), g);
  CHECK(checked == net.parameter_count());
  // Row 2 has length 0: its initial state gets no gradient; the others do.
  CHECK(d_initial.row(2).isZero(0));
  for (Index b = 0; b < 2; ++b)
    for (Index j = 0; j < 5; ++j) {
      float& x = h0(b, j);
      const float x0 = x;
      x = x0 + 1e-2f;
      const double up = char_rnn_gradients(net, tokens, lengths, targets, h0, g2, ws, nullptr, dropout, 77);
      x = x0 - 1e-2f;
      const double down = char_rnn_gradients(net, tokens, lengths, targets, h0, g2, ws, nullptr, dropout, 77);
      x = x0;
      CHECK(d_initial(b, j) == Approx((up - down) / 2e-2).margin(2e-4).epsilon(0.01));
    }
  CHECK(worst < 1e-4);  // measured: 1.1e-5
  TokenMatrix bad = targets;
  bad(1, 2) = 6;
  REQUIRE_THROWS_WITH(char_rnn_gradients(net, tokens, lengths, bad, h0, g2, ws),
                      Catch::Contains("char_rnn_gradients()") && Catch::Contains("target 6 at row 1, column 2"));
  REQUIRE_THROWS_WITH(char_rnn_gradients(net, tokens, lengths, targets, h0, g2, ws, nullptr, 1.0f),
                      Catch::Contains("'dropout'") && Catch::Contains("got 1"));
  if (dropout > 0) {  // another mask, another loss
    const float other = char_rnn_gradients(net, tokens, lengths, targets, h0, g2, ws, nullptr, dropout, 78);
    CHECK(other != loss);
  }
}

TEST_CASE("CharRnn: bits per char of a uniform model is log2(vocab)", "[char_rnn]") {
  const CharRnn net({8, 3, 4});  // zero weights: uniform predictions
  std::vector<int> stream(1000);
  for (std::size_t i = 0; i < stream.size(); ++i) stream[i] = static_cast<int>(i * 7 % 8);
  CHECK(char_rnn_bits_per_char(net, stream, 3, 33) == Approx(3.0).epsilon(1e-6));
  CHECK(char_rnn_bits_per_char(net, {1, 2}, 64, 1) == Approx(3.0).epsilon(1e-6));
  REQUIRE_THROWS_WITH(char_rnn_bits_per_char(net, {1}),
                      Catch::Contains("char_rnn_bits_per_char()") && Catch::Contains("1 ids"));
  REQUIRE_THROWS_WITH(char_rnn_bits_per_char(net, {1, 9}), Catch::Contains("id 9 at position 1"));
  REQUIRE_THROWS_WITH(char_rnn_bits_per_char(net, stream, 0), Catch::Contains("'lanes'"));
}

TEST_CASE("CharRnn: training on a tiny text drives the loss down, reproducibly", "[char_rnn]") {
  std::vector<std::string> texts;
  const char* animals[] = {"cat", "dog", "cow", "hen"};
  const char* places[] = {"mat", "log", "rug", "bed"};
  for (int i = 0; i < 200; ++i)
    texts.push_back(std::string("the ") + animals[i % 4] + " sat on the " + places[(i / 4) % 4] + ".");
  const Alphabet alphabet = Alphabet::of_texts(texts);
  const std::vector<int> stream = alphabet.encode_texts(texts);
  const std::vector<int> held_out = alphabet.encode_texts({"the dog sat on the rug.", "the hen sat on the mat."});
  CharRnnTrainOptions o;
  o.batch_size = 8;
  o.bptt = 24;
  o.steps = 150;
  o.learning_rate = 1e-2f;
  o.final_learning_rate = 2e-3f;
  o.eval_every = 50;
  o.seed = 3;
  std::ostringstream log;
  o.progress = &log;
  CharRnn a({alphabet.size(), 8, 32});
  a.init(1);
  const double before = char_rnn_bits_per_char(a, held_out);
  const CharRnnTrainReport r = train_char_rnn(a, stream, held_out, o);
  CHECK(r.steps == 150);
  CHECK(r.characters == 150 * 8 * 24);
  REQUIRE(r.history.size() == 3);
  CHECK(r.history[0].step == 50);
  CHECK(r.history[2].step == 150);
  INFO("tiny text: held-out " << before << " -> " << r.held_out_bits_per_char
                              << " bits/char");  // measured: 4.28 -> 0.20
  CHECK(before > 3.5);
  CHECK(r.held_out_bits_per_char < 1.0);
  CHECK(r.train_bits_per_char < 1.2);
  CHECK(log.str().find("held-out") != std::string::npos);
  // Same options, same bits.
  CharRnn b({alphabet.size(), 8, 32});
  b.init(1);
  o.progress = nullptr;
  train_char_rnn(b, stream, held_out, o);
  CharRnnParams::zip([](const auto& x, const auto& y) { CHECK(x == y); }, a.params(), b.params());
  // Two threads: another summation order, as good a model.
  CharRnn c({alphabet.size(), 8, 32});
  c.init(1);
  o.threads = 2;
  o.dropout = 0.1f;
  const CharRnnTrainReport rc = train_char_rnn(c, stream, held_out, o);
  CHECK(rc.held_out_bits_per_char < 1.0);
  // The trained model continues a prompt the way the text does.
  TokenMatrix prompt(1, 12);
  const std::vector<int> p = alphabet.encode_texts({"the cat sat"});  // boundary, then 11 chars
  for (Index t = 0; t < 12; ++t) prompt(0, t) = p[static_cast<std::size_t>(t)];
  CharRnnGeneration g;
  a.generate(prompt, Eigen::VectorXi::Constant(1, 12), 7, 0.0f, RowMatrix(), g);
  CHECK(alphabet.decode(g.tokens.data(), 7) == " on the");
}

TEST_CASE("CharRnn: training option errors name the option", "[char_rnn]") {
  CharRnn net({5, 2, 3});
  const std::vector<int> s = {0, 1, 2, 3, 4, 0};
  CharRnnTrainOptions o;
  o.steps = 1;
  o.batch_size = 0;
  REQUIRE_THROWS_WITH(train_char_rnn(net, s, {}, o),
                      Catch::Contains("train_char_rnn()") && Catch::Contains("'batch_size'"));
  o.batch_size = 2;
  o.bptt = 0;
  REQUIRE_THROWS_WITH(train_char_rnn(net, s, {}, o), Catch::Contains("'bptt'"));
  o.bptt = 3;
  o.learning_rate = -1;
  REQUIRE_THROWS_WITH(train_char_rnn(net, s, {}, o), Catch::Contains("'learning_rate'") && Catch::Contains("-1"));
  o.learning_rate = 1e-3f;
  o.threads = 0;
  REQUIRE_THROWS_WITH(train_char_rnn(net, s, {}, o), Catch::Contains("'threads'"));
  o.threads = 1;
  o.dropout = 1;
  REQUIRE_THROWS_WITH(train_char_rnn(net, s, {}, o), Catch::Contains("'dropout'"));
  o.dropout = 0;
  REQUIRE_THROWS_WITH(train_char_rnn(net, {0, 1, 5}, {}, o), Catch::Contains("training id 5 at position 2"));
  REQUIRE_THROWS_WITH(train_char_rnn(net, {0}, {}, o), Catch::Contains("1 ids"));
  const CharRnnTrainReport r = train_char_rnn(net, s, {}, o);
  CHECK(std::isnan(r.held_out_bits_per_char));
  CHECK(r.steps == 1);
}

namespace {
double env_or(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atof(v) : fallback;
}
}  // namespace

// Hidden (not run by default or by ctest): TensorFuzz's third target trained on Debian's fortunes,
// for measuring bits/char against time. Run with (for example)
//   NNFUZZ_CHAR_RNN_SECONDS=600 NNFUZZ_CHAR_RNN_HIDDEN=384 NNFUZZ_CHAR_RNN_THREADS=2
//   NNFUZZ_CHAR_RNN_SAVE=rnn.bin nnfuzz_tests "[.char_rnn_fortunes]"
// in the environment (also _EMBED, _BATCH, _LR, _FINAL_LR, _DROPOUT, _EVAL_EVERY).
TEST_CASE("CharRnn: train on Debian's fortunes (measurement)", "[.char_rnn_fortunes]") {
  if (!fs::is_directory(default_fortunes_dir())) {
    WARN("no " << default_fortunes_dir() << " (apt-get install fortunes fortunes-min): skipped");
    return;
  }
  const auto text = to_printable_ascii(read_fortunes());
  const TextSplit split = split_held_out(text, 0.05, 0);
  const Alphabet alphabet = Alphabet::of_texts(split.train);
  const std::vector<int> train = alphabet.encode_texts(split.train);
  const std::vector<int> held_out = alphabet.encode_texts(split.held_out);
  std::cout << text.size() << " fortunes; training " << train.size() << " ids, held-out " << held_out.size()
            << " ids; vocabulary " << alphabet.size() << "\n";
  CharRnn net({alphabet.size(), static_cast<Index>(env_or("NNFUZZ_CHAR_RNN_EMBED", 64)),
               static_cast<Index>(env_or("NNFUZZ_CHAR_RNN_HIDDEN", 384))});
  net.init(1);
  CharRnnTrainOptions o;
  o.batch_size = static_cast<Index>(env_or("NNFUZZ_CHAR_RNN_BATCH", 32));
  o.bptt = 100;
  o.steps = std::numeric_limits<Index>::max() / 2;
  o.max_seconds = env_or("NNFUZZ_CHAR_RNN_SECONDS", 60);
  o.learning_rate = static_cast<float>(env_or("NNFUZZ_CHAR_RNN_LR", 3e-3));
  o.final_learning_rate = static_cast<float>(env_or("NNFUZZ_CHAR_RNN_FINAL_LR", 3e-4));
  o.eval_every = static_cast<Index>(env_or("NNFUZZ_CHAR_RNN_EVAL_EVERY", 500));
  o.threads = static_cast<int>(env_or("NNFUZZ_CHAR_RNN_THREADS", 2));
  o.dropout = static_cast<float>(env_or("NNFUZZ_CHAR_RNN_DROPOUT", 0));
  const CharRnnTrainReport r = train_char_rnn(net, train, held_out, o);
  std::cout << "parameters " << net.parameter_count() << ", steps " << r.steps << ", " << r.characters << " chars in "
            << r.seconds << " s (" << static_cast<double>(r.characters) / r.seconds << " chars/s)\n";
  for (const auto& e : r.history)
    std::cout << "  step " << e.step << "  " << e.seconds << " s  train " << e.train_bits_per_char << "  held-out "
              << e.held_out_bits_per_char << " bits/char\n";
  if (const char* path = std::getenv("NNFUZZ_CHAR_RNN_SAVE")) save_char_rnn(path, net, alphabet.symbols());
  CHECK(r.held_out_bits_per_char < std::log2(static_cast<double>(alphabet.size())));
  // Generations: greedy and sampled (temperature 0.8) from a few prompts.
  const std::vector<std::string> prompts = {"", "The ", "Q:\tWhat do you call", "A computer", "Never"};
  const Index n = 160;
  for (const float temperature : {0.0f, 0.8f}) {
    TokenMatrix p = TokenMatrix::Zero(static_cast<Index>(prompts.size()), 32);
    Eigen::VectorXi len(static_cast<Index>(prompts.size()));
    for (std::size_t k = 0; k < prompts.size(); ++k) {
      const std::string clean = to_printable_ascii(prompts[k]);
      const std::vector<int> ids = alphabet.encode(clean);
      p(static_cast<Index>(k), 0) = Alphabet::kBoundary;
      for (std::size_t i = 0; i < ids.size(); ++i) p(static_cast<Index>(k), static_cast<Index>(i) + 1) = ids[i];
      len(static_cast<Index>(k)) = static_cast<int>(ids.size() + 1);
    }
    RowMatrix noise(p.rows(), n);
    Rng(7).fill_uniform(noise.data(), noise.size());
    CharRnnGeneration g;
    net.generate(p, len, n, temperature, noise, g);
    for (std::size_t k = 0; k < prompts.size(); ++k)
      std::cout << "--- temperature " << temperature << ", prompt \"" << to_printable_ascii(prompts[k]) << "\":\n"
                << to_printable_ascii(prompts[k]) << alphabet.decode(g.tokens.row(static_cast<Index>(k)).data(), n)
                << "\n";
  }
  // Generation speed.
  for (const Index b : {1, 16, 64}) {
    TokenMatrix p = TokenMatrix::Zero(b, 1);
    RowMatrix noise(b, 200);
    Rng(8).fill_uniform(noise.data(), noise.size());
    CharRnnGeneration g;
    const auto t0 = std::chrono::steady_clock::now();
    int reps = 0;
    do {
      net.generate(p, Eigen::VectorXi::Ones(b), 200, 1.0f, noise, g);
      ++reps;
    } while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 1.0);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "generate, batch " << b << ": " << static_cast<double>(reps * b * 200) / s << " chars/s\n";
  }
}

TEST_CASE("CharRnn: a forged weights file whose alphabet repeats a byte is refused at load, naming the file",
          "[char_rnn]") {
  TempDir tmp;
  const CharRnn net = random_net({5, 3, 7}, 21);
  const std::string path = tmp.file("forged.bin");
  save_char_rnn(path, net, "abcd");
  std::vector<char> b = slurp(path);
  REQUIRE(std::string(b.data() + 32, 4) == "abcd");
  b[35] = 'a';  // "abca", the CRC recomputed: only the alphabet is wrong
  const std::uint32_t crc = nnfuzz::detail::crc32_update(0, b.data(), b.size() - 4);
  for (int i = 0; i < 4; ++i) b[b.size() - 4 + static_cast<std::size_t>(i)] = static_cast<char>(crc >> (8 * i));
  std::ofstream(path, std::ios::binary).write(b.data(), static_cast<std::streamsize>(b.size()));
  REQUIRE_THROWS_WITH(load_char_rnn(path), Catch::Contains("load_char_rnn()") && Catch::Contains(path) &&
                                               Catch::Contains("'a'") && Catch::Contains("twice"));
  REQUIRE_THROWS_WITH(save_char_rnn(tmp.file("x.bin"), net, "abca"),
                      Catch::Contains("save_char_rnn()") && Catch::Contains("twice"));
}
