// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/corpus.hpp>

#include <algorithm>

using nnfuzz::Corpus;
using nnfuzz::Index;
using nnfuzz::RowVector;

TEST_CASE("Corpus: elements keep their input, coverage and lineage", "[corpus]") {
  Corpus c(3, 2);
  const float in0[] = {1, 2, 3}, cov0[] = {0.5f, -1};
  const float in1[] = {4, 5, 6}, cov1[] = {7, 8};
  REQUIRE(c.add(in0, cov0, -1, 0, 0, 0) == 0);
  REQUIRE(c.add(in1, cov1, 0, 0, 1, 300) == 1);
  REQUIRE(c.size() == 2);
  CHECK(c.input(1)(2) == 6);
  CHECK(c.coverage(0)(1) == -1);
  CHECK(c.entry(1).parent == 0);
  CHECK(c.entry(1).depth == 1);
  CHECK(c.entry(1).execution == 300);
  c.mark_picked(1);
  c.mark_picked(1);
  CHECK(c.entry(1).times_picked == 2);
  CHECK(c.memory_bytes() == 2 * (5 * sizeof(float) + sizeof(nnfuzz::CorpusEntry)));
  c.reset(4, 1);
  CHECK(c.empty());
  CHECK(c.input_dim() == 4);
}

TEST_CASE("Corpus: rows never move while the corpus grows", "[corpus]") {
  const Index d = 784;
  Corpus c(d, 10);
  RowVector in(d), cov(10);
  const float* first = nullptr;
  for (Index i = 0; i < 5000; ++i) {  // several 4 MiB chunks
    in.setConstant(float(i));
    cov.setConstant(float(-i));
    c.add(in.data(), cov.data(), i - 1, 0, i, std::uint64_t(i));
    if (i == 0) first = c.input(0).data();
  }
  CHECK(c.input(0).data() == first);
  for (Index i : {Index(0), Index(1336), Index(1337), Index(4999)}) {
    CHECK(c.input(i)(d - 1) == float(i));
    CHECK(c.coverage(i)(9) == float(-i));
  }
}

TEST_CASE("Corpus: reset() to the same shape writes into the memory it already has", "[corpus]") {
  // Why: a Fuzzer run again (a unit test's loop, a benchmark) should not fault its corpus's
  // pages in again; reserved memory stays bounded by the largest corpus so far.
  const Index d = 784;
  Corpus c(d, 10);
  RowVector in(d), cov(10);
  auto fill = [&](Index n, float base) {
    for (Index i = 0; i < n; ++i) {
      in.setConstant(base + float(i));
      cov.setConstant(-base - float(i));
      c.add(in.data(), cov.data(), i - 1, 0, i, std::uint64_t(i));
    }
  };
  fill(3000, 0);  // two chunks of 1,024 rows and part of a third
  const float* first = c.input(0).data();
  const std::size_t reserved = c.memory_bytes();
  c.reset(d, 10);
  CHECK(c.empty());
  fill(10, 100000);
  CHECK(c.input(0).data() == first);  // the same chunk, reused
  CHECK(c.size() == 10);
  CHECK(c.input(9)(d - 1) == 100009.0f);
  CHECK(c.coverage(9)(0) == -100009.0f);
  CHECK(c.memory_bytes() < reserved);  // counts rows in use, not the chunks kept
  c.reset(d + 1, 10);                  // another width: the chunks go
  fill(0, 0);
  in.resize(d + 1);
  in.setConstant(7);
  c.add(in.data(), cov.data(), -1, 0, 0, 0);
  CHECK(c.input(0)(d) == 7.0f);
}

TEST_CASE("Corpus: add_from() copies an element of either kind through the same calls", "[corpus]") {
  // Dense: floats_data() is the row, tokens_data() is none.
  Corpus d(3, 1);
  const float in[] = {1, 2, 3}, cov[] = {9};
  d.add(in, cov, -1, 0, 0, 5);
  CHECK(d.floats_data(0)[2] == 3);
  CHECK(d.tokens_data(0) == nullptr);
  CHECK(d.describe_inputs() == "3 floats");
  Corpus d2;
  d2.reset_like(d);
  REQUIRE(d2.same_shape(d));
  d2.add_from(d, 0, -1, 0, 0, 7);
  CHECK(d2.input(0) == d.input(0));
  CHECK(d2.coverage(0)(0) == 9);
  CHECK(d2.entry(0).execution == 7);

  // Structured: a token part and a float part; a layout with only tokens has no float cells.
  const nnfuzz::InputLayout layout = nnfuzz::InputLayout().tokens("prompt", 10, 4).floats("noise", 2);
  Corpus s(layout, 1);
  const float f[] = {0.25f, -0.5f};
  const nnfuzz::TokenId t[] = {3, 1, 4, 0, 3};  // ids padded to max_len 4, then the length 3
  s.add_cells(f, t, cov, -1, 0, 0, 0);
  CHECK(s.describe_inputs() == layout.describe());
  CHECK(!s.same_shape(d));
  Corpus s2;
  s2.reset_like(s);
  s2.add_from(s, 0, -1, 0, 0, 0);
  CHECK(s2.floats_data(0)[1] == -0.5f);
  CHECK(std::equal(t, t + 5, s2.tokens_data(0)));
  CHECK(s2.view(0).tokens_data()[2] == 4);

  const nnfuzz::InputLayout only_tokens = nnfuzz::InputLayout().tokens("prompt", 10, 4);
  Corpus o(only_tokens, 1);
  o.add_cells(nullptr, t, cov, -1, 0, 0, 0);
  CHECK(o.floats_data(0) == nullptr);
  Corpus o2;
  o2.reset_like(o);
  o2.add_from(o, 0, -1, 0, 0, 0);
  CHECK(std::equal(t, t + 5, o2.tokens_data(0)));
}
