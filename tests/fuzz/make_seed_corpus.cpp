// Writes the seed corpora of nnfuzz's libFuzzer harnesses (tests/fuzz/fuzz_*.cpp):
//   <out>/idx/        small valid IDX files, raw and gzip, and truncated variants
//   <out>/weights/    small valid weights files written by nnfuzz::save_mlp, and broken variants
//   <out>/mnist_dir/  inputs of fuzz_mnist_dir (flags, images length, images, labels)
// The files are produced with the library's own writers, so the corpus follows the formats.
//
// Usage: make_seed_corpus <out>   (the three subdirectories are emptied first)
#include <nnfuzz/io/idx.hpp>
#include <nnfuzz/io/weights.hpp>
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

Bytes head(const Bytes& b, std::size_t n) { return Bytes(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(std::min(n, b.size()))); }

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

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <out-dir>\n", argv[0]);
    return 2;
  }
  const fs::path out = argv[1];
  const fs::path idx = out / "idx", weights = out / "weights", mnist = out / "mnist_dir", scratch = out / "scratch";
  for (const fs::path& d : {idx, weights, mnist, scratch}) {
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

  fs::remove_all(scratch);
  std::printf("make_seed_corpus: wrote %d seed files under %s\n", files, out.string().c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "make_seed_corpus: %s\n", e.what());
  return 1;
}
