// SPDX-License-Identifier: MIT
// Writes the seed corpora of nnfuzz's libFuzzer harnesses (tests/fuzz/fuzz_*.cpp):
//   <out>/idx/        small valid IDX files, raw and gzip, and truncated variants
//   <out>/weights/    small valid weights files written by nnfuzz::save_mlp, and broken variants
//   <out>/mnist_dir/  inputs of fuzz_mnist_dir (flags, images length, images, labels)
//   <out>/campaign/   inputs of fuzz_campaign (flag byte, then a corpus.bin or a finding file
//                     written by nnfuzz::save_corpus / save_finding, valid and broken)
// The files are produced with the library's own writers, so the corpus follows the formats.
//
// Usage: make_seed_corpus <out>   (the four subdirectories are emptied first)
#include <nnfuzz/campaign/saver.hpp>
#include <nnfuzz/data/idx.hpp>
#include <nnfuzz/models/mlp_file.hpp>
#include <nnfuzz/models/mlp.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "fuzz_support.hpp"

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

Bytes slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void spit(const fs::path& p, const Bytes& b) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

Bytes head(const Bytes& b, std::size_t n) {
  return Bytes(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(std::min(n, b.size())));
}

nnfuzz::IdxArray array(std::vector<std::uint32_t> dims, unsigned seed) {
  std::size_t n = 1;
  for (auto d : dims) n *= d;
  nnfuzz::IdxArray a{std::move(dims), Bytes(n)};
  for (std::size_t i = 0; i < n; ++i) a.data[i] = static_cast<std::uint8_t>((i * 37 + seed * 11) % 256);
  return a;
}

/// The bytes write_idx() produces for `a`.
Bytes idx_bytes(const fs::path& scratch, const nnfuzz::IdxArray& a, bool gzip) {
  const fs::path p = scratch / "a.idx";
  nnfuzz::write_idx(p.string(), a, gzip);
  return slurp(p);
}

Bytes mnist_input(std::uint8_t flags, const Bytes& images, const Bytes& labels) {
  Bytes out{flags};
  const auto n = static_cast<std::uint32_t>(images.size());
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(n >> (8 * i)));
  out.insert(out.end(), images.begin(), images.end());
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

/// fuzz_campaign's input: the flag byte, then the file.
Bytes campaign_input(std::uint8_t flags, const Bytes& file) {
  Bytes out{flags};
  out.insert(out.end(), file.begin(), file.end());
  return out;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <out-dir>\n", argv[0]);
    return 2;
  }
  const fs::path out = argv[1];
  const fs::path idx = out / "idx", weights = out / "weights", mnist = out / "mnist_dir", campaign = out / "campaign",
                 roundtrip = out / "roundtrip", scratch = out / "scratch";
  for (const fs::path& d : {idx, weights, mnist, campaign, roundtrip, scratch}) {
    fs::remove_all(d);
    fs::create_directories(d);
  }
  int files = 0;
  auto put = [&](const fs::path& p, const Bytes& b) {
    spit(p, b);
    ++files;
  };

  // IDX: 1-, 2-, 3- and 4-d arrays, raw and gzip, plus cuts in the header and in the data.
  const std::vector<std::pair<const char*, nnfuzz::IdxArray>> arrays = {
      {"1d", array({10}, 1)}, {"2d", array({3, 5}, 2)}, {"3d", array({2, 4, 4}, 3)}, {"4d", array({1, 2, 3, 2}, 4)}};
  for (const auto& [name, a] : arrays) {
    for (const bool gz : {false, true}) {
      const Bytes b = idx_bytes(scratch, a, gz);
      const std::string stem = std::string(name) + (gz ? ".gz" : ".raw");
      put(idx / (stem + ".idx"), b);
      put(idx / (stem + ".cut_header"), head(b, gz ? b.size() / 3 : 6));
      put(idx / (stem + ".cut_data"), head(b, b.size() - 3));
    }
  }
  {
    Bytes b = idx_bytes(scratch, arrays[0].second, false);
    b.push_back(0x42);
    put(idx / "1d.raw.trailing", b);
  }

  // Weights: two small networks saved by save_mlp, truncated, with a flipped byte (CRC fails).
  for (const auto& sizes : std::vector<std::vector<nnfuzz::Index>>{{3, 2}, {4, 3, 2}, {2, 3, 3, 1}}) {
    nnfuzz::Mlp<float> net(sizes);
    net.init_uniform(0.5f, 7 + sizes.size());
    std::string stem = "mlp";
    for (nnfuzz::Index s : sizes) stem += "_" + std::to_string(s);
    const fs::path p = scratch / "w.bin";
    nnfuzz::save_mlp(p.string(), net);
    const Bytes b = slurp(p);
    put(weights / (stem + ".bin"), b);
    put(weights / (stem + ".cut_header"), head(b, 22));
    put(weights / (stem + ".cut_params"), head(b, b.size() - 6));
    Bytes flipped = b;
    flipped[flipped.size() / 2] ^= 0x01;
    put(weights / (stem + ".bad_crc"), flipped);
  }

  // MNIST directories: 3 images of 4 x 4 with 3 labels, raw and gzip, under each name variant.
  {
    const Bytes images = idx_bytes(scratch, array({3, 4, 4}, 5), false);
    const Bytes images_gz = idx_bytes(scratch, array({3, 4, 4}, 5), true);
    const Bytes labels = idx_bytes(scratch, array({3}, 6), false);
    const Bytes labels_gz = idx_bytes(scratch, array({3}, 6), true);
    const Bytes labels_4 = idx_bytes(scratch, array({4}, 6), false);
    put(mnist / "raw", mnist_input(0x00, images, labels));
    put(mnist / "gz", mnist_input(0x05, images_gz, labels_gz));
    put(mnist / "names", mnist_input(0x0E, images, labels_gz));
    put(mnist / "count_mismatch", mnist_input(0x00, images, labels_4));
    put(mnist / "labels_missing", mnist_input(nnfuzz_fuzz::mnist_no_labels, images, {}));
    put(mnist / "swapped", mnist_input(0x00, labels, images));
    put(mnist / "cut_images", mnist_input(0x00, head(images, images.size() - 5), labels));
    put(mnist / "cut_labels", mnist_input(0x00, images, head(labels_gz, labels_gz.size() - 4)));
  }

  // Campaign directories: a 5-element corpus (6-float inputs, 2-float coverage; two seeds and
  // three mutants; a coverage state), one finding; each valid, truncated (header, payload) and with a bad CRC.
  {
    nnfuzz::Corpus c(6, 2);
    // {parent, root, depth, execution} of each element: 0 and 1 seeds, 2 <- 0, 3 <- 2, 4 <- 1.
    const std::int64_t lineage[5][4] = {{-1, 0, 0, 0}, {-1, 1, 0, 0}, {0, 0, 1, 7}, {2, 0, 2, 19}, {1, 1, 1, 23}};
    for (int i = 0; i < 5; ++i) {
      float in[6], cov[2];
      for (int k = 0; k < 6; ++k) in[k] = 0.125f * static_cast<float>(i * 6 + k) - 1.0f;
      cov[0] = static_cast<float>(i);
      cov[1] = -0.5f * static_cast<float>(i);
      c.add(in, cov, lineage[i][0], lineage[i][1], lineage[i][2], static_cast<std::uint64_t>(lineage[i][3]));
    }
    c.mark_picked(0);
    c.mark_picked(0);
    c.mark_picked(2);
    // A coverage-policy state in the header (corpus.bin version 3): opaque bytes to the loader.
    c.set_coverage_state({'N', 'N', 'F', 'Z', 'C', 'A', 'L', 'B', 1, 0, 0, 0, 2, 0, 0, 0});
    const fs::path cdir = scratch / "campaign";
    nnfuzz::save_corpus(cdir.string(), c);
    const Bytes corpus = slurp(cdir / "corpus.bin");

    nnfuzz::Finding f;
    f.input.resize(6);
    for (int k = 0; k < 6; ++k) f.input[k] = 0.25f * static_cast<float>(k) - 0.5f;
    f.root = 0;
    f.parent = 3;
    f.depth = 3;
    f.execution = 42;
    f.what = "non-finite in 'y'";
    const Bytes finding = slurp(nnfuzz::save_finding(cdir.string(), f, 1234));

    for (const auto& [stem, flags, b] : {std::make_tuple("corpus", std::uint8_t{0x00}, corpus),
                                         std::make_tuple("finding", nnfuzz_fuzz::campaign_findings, finding)}) {
      const std::string s = stem;
      put(campaign / (s + ".bin"), campaign_input(flags, b));
      put(campaign / (s + ".cut_header"), campaign_input(flags, head(b, 20)));
      put(campaign / (s + ".cut_payload"), campaign_input(flags, head(b, b.size() - 7)));
      Bytes flipped = b;
      flipped[flipped.size() / 2] ^= 0x01;
      put(campaign / (s + ".bad_crc"), campaign_input(flags, flipped));
    }
    // The right file under the wrong name: wrong magic either way.
    put(campaign / "corpus_as_finding", campaign_input(nnfuzz_fuzz::campaign_findings, corpus));
  }

  // fuzz_roundtrip: descriptions of a corpus (flag 0: widths, count, then per element lineage
  // and float bits) and of a finding (flag 1), with a NaN and an Inf among the floats.
  {
    auto f32 = [](Bytes& b, float v) {
      std::uint32_t u;
      std::memcpy(&u, &v, 4);
      for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::uint8_t>(u >> (8 * i)));
    };
    Bytes corpus{0x00, 2, 0, 2};  // input width 3, coverage width 1, 2 elements
    for (int e = 0; e < 2; ++e) {
      corpus.insert(corpus.end(), {static_cast<std::uint8_t>(e == 0 ? 0xff : 0), 0, static_cast<std::uint8_t>(e)});
      for (float v : {0.25f, -1.5f, 3.0f}) f32(corpus, v);
      f32(corpus, e == 0 ? std::numeric_limits<float>::quiet_NaN() : 2.0f);
      for (int b : {7, 0, 0, 0, 1}) corpus.push_back(static_cast<std::uint8_t>(b));
    }
    put(roundtrip / "corpus", corpus);
    Bytes finding{0x01, 3};  // width 4
    for (float v : {0.5f, std::numeric_limits<float>::infinity(), 0.0f, -2.0f}) f32(finding, v);
    for (int b : {0, 0xff, 1, 9, 0, 0, 0, 3, int{'N'}, int{'a'}, int{'N'}})
      finding.push_back(static_cast<std::uint8_t>(b));
    put(roundtrip / "finding", finding);
    // A structured corpus: one token part (vocab 10, max_len 4), coverage width 1, 2 elements.
    Bytes structured{0x02, 0, 1, 9, 3, 0, 2};
    for (int e = 0; e < 2; ++e) {
      f32(structured, 0.5f);                                                                // the spare float cell
      for (int b : {3, 1, 4, 0, 3, 0}) structured.push_back(static_cast<std::uint8_t>(b));  // ids, pad, length
      f32(structured, 1.0f + static_cast<float>(e));                                        // coverage
      for (int b : {5, 0, 0, 0}) structured.push_back(static_cast<std::uint8_t>(b));
    }
    put(roundtrip / "structured", structured);
    put(roundtrip / "zero_width", Bytes{0x00, 255, 0, 1});
  }

  fs::remove_all(scratch);
  std::printf("make_seed_corpus: wrote %d seed files under %s\n", files, out.string().c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "make_seed_corpus: %s\n", e.what());
  return 1;
}
