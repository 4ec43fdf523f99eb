// SPDX-License-Identifier: MIT
// Tests for nnfuzz/data/idx.hpp: IDX round trips, MNIST directories, and every malformed input
// the reader must reject with a message naming the function, the file and the bad value.
#include "nnfuzz/data/idx.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "support/alloc_tracker.hpp"

using nnfuzz_test::g_largest_alloc;

namespace {

namespace fs = std::filesystem;
using nnfuzz::IdxArray;
using nnfuzz::read_idx;
using nnfuzz::write_idx;
using Bytes = std::vector<std::uint8_t>;
using Catch::Contains;

/// A fresh directory under the system temp directory, removed with everything in it.
struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device rd;
    const fs::path base = fs::temp_directory_path();
    for (int attempt = 0;; ++attempt) {
      path = base / ("nnfuzz_test_idx_" + std::to_string(rd()) + std::to_string(attempt));
      if (fs::create_directory(path)) break;
    }
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

void write_bytes(const std::string& path, const Bytes& b) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  REQUIRE(out.good());
}

Bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Writes b gzip-compressed with zlib's file API, independently of write_idx().
void write_gz(const std::string& path, const Bytes& b) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, b.data(), static_cast<unsigned>(b.size())) == static_cast<int>(b.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

/// An IDX header with the given type code and dims.
Bytes header(std::uint8_t type, const std::vector<std::uint32_t>& dims) {
  Bytes h{0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (std::uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) h.push_back(static_cast<std::uint8_t>(d >> shift));
  return h;
}

Bytes concat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// Deterministic, not too compressible bytes.
Bytes pattern(std::size_t n, std::uint32_t seed = 1) {
  std::mt19937 rng(seed);
  Bytes b(n);
  for (auto& x : b) x = static_cast<std::uint8_t>(rng() % 7 == 0 ? rng() : 0);
  return b;
}

IdxArray make_array(std::vector<std::uint32_t> dims, std::uint32_t seed = 1) {
  std::size_t n = 1;
  for (auto d : dims) n *= d;
  return IdxArray{std::move(dims), pattern(n, seed)};
}

nnfuzz::Dataset make_small_dataset(int n, int rows, int cols) {
  nnfuzz::Dataset d;
  d.rows = rows;
  d.cols = cols;
  d.images.resize(n, rows * cols);
  d.labels.resize(n);
  for (int i = 0; i < n; ++i) {
    d.labels[i] = (i * 7) % 10;
    for (int j = 0; j < rows * cols; ++j) d.images(i, j) = static_cast<float>((i * 31 + j * 17) % 256) / 255.0f;
  }
  return d;
}

bool has_temp_leftovers(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("IDX round trip, raw and gzip", "[io]") {
  TempDir tmp;
  for (const bool gz : {false, true}) {
    for (const auto& a :
         {make_array({1000}), make_array({7, 28, 28}, 2), make_array({1}), make_array({2, 3, 4, 5}, 3)}) {
      CAPTURE(gz, a.dims.size());
      const std::string path = tmp.file(gz ? "a.gz" : "a");
      write_idx(path, a, gz);
      const Bytes raw = read_bytes(path);
      REQUIRE(raw.size() >= 2);
      CHECK((raw[0] == 0x1f && raw[1] == 0x8b) == gz);
      const IdxArray b = read_idx(path);
      CHECK(b.dims == a.dims);
      CHECK(b.data == a.data);
    }
  }
  CHECK_FALSE(has_temp_leftovers(tmp.path));
}

TEST_CASE("IDX: gzip is detected by content, not by name", "[io]") {
  TempDir tmp;
  const IdxArray a = make_array({4, 5});
  write_idx(tmp.file("compressed-but-no-suffix"), a, true);
  write_idx(tmp.file("raw-but-named.gz"), a, false);
  CHECK(read_idx(tmp.file("compressed-but-no-suffix")).data == a.data);
  CHECK(read_idx(tmp.file("raw-but-named.gz")).data == a.data);
}

TEST_CASE("write_idx replaces an existing file and leaves no temporary behind", "[io]") {
  TempDir tmp;
  const std::string path = tmp.file("x");
  write_idx(path, make_array({100}, 1));
  write_idx(path, make_array({3, 3}, 2));
  CHECK(read_idx(path).dims == std::vector<std::uint32_t>{3, 3});
  CHECK_FALSE(has_temp_leftovers(tmp.path));
}

TEST_CASE("write_idx rejects invalid arrays and unwritable paths", "[io]") {
  TempDir tmp;
  const std::string path = tmp.file("x");
  REQUIRE_THROWS_WITH(write_idx(path, IdxArray{{3, 4}, Bytes(11)}),
                      Contains("write_idx()") && Contains("need 12 bytes of data, got 11"));
  REQUIRE_THROWS_WITH(write_idx(path, IdxArray{{}, Bytes{}}), Contains("write_idx()") && Contains("got 0"));
  REQUIRE_THROWS_WITH(write_idx(path, IdxArray{{1, 1, 1, 1, 1}, Bytes(1)}),
                      Contains("write_idx()") && Contains("got 5"));
  REQUIRE_THROWS_WITH(write_idx(path, IdxArray{{2, 0}, Bytes{}}),
                      Contains("write_idx()") && Contains("dimension 1 is 0"));
  const std::string nowhere = tmp.file("no/such/dir/x");
  for (const bool gz : {false, true})
    REQUIRE_THROWS_WITH(write_idx(nowhere, make_array({4}), gz), Contains("write_idx()") && Contains(nowhere));
  CHECK_FALSE(fs::exists(path));
  CHECK_FALSE(has_temp_leftovers(tmp.path));
}

TEST_CASE("Dataset round trip through save_mnist_dir / load_mnist_dir", "[io]") {
  using nnfuzz::Split;
  for (const bool gz : {false, true}) {
    CAPTURE(gz);
    TempDir tmp;
    const std::string dir = tmp.file("mnist");  // save_mnist_dir creates it
    const nnfuzz::Dataset train = make_small_dataset(13, 5, 4);
    const nnfuzz::Dataset test = make_small_dataset(3, 5, 4);
    nnfuzz::save_mnist_dir(dir, Split::train, train, gz);
    nnfuzz::save_mnist_dir(dir, Split::test, test, gz);
    const std::string suffix = gz ? ".gz" : "";
    CHECK(fs::exists(fs::path(dir) / ("train-images-idx3-ubyte" + suffix)));
    CHECK(fs::exists(fs::path(dir) / ("t10k-labels-idx1-ubyte" + suffix)));

    const nnfuzz::Dataset a = nnfuzz::load_mnist_dir(dir, Split::train);
    const nnfuzz::Dataset b = nnfuzz::load_mnist_dir(dir, Split::test);
    CHECK(a.rows == 5);
    CHECK(a.cols == 4);
    CHECK(a.images == train.images);  // k/255 survives the byte round trip exactly
    CHECK(a.labels == train.labels);
    CHECK(b.images == test.images);
    CHECK(b.labels == test.labels);
  }
}

TEST_CASE("save_mnist_dir rounds and clamps pixels, rejects NaN and bad labels", "[io]") {
  using nnfuzz::Split;
  TempDir tmp;
  const std::string dir = tmp.file("m");
  nnfuzz::Dataset d = make_small_dataset(2, 2, 2);
  d.images(0, 0) = -0.5f;
  d.images(0, 1) = 1.5f;
  d.images(0, 2) = 0.5f / 255.0f + 1e-4f;  // rounds up to 1
  nnfuzz::save_mnist_dir(dir, Split::train, d);
  const IdxArray img = read_idx(tmp.file("m/train-images-idx3-ubyte"));
  CHECK(img.data[0] == 0);
  CHECK(img.data[1] == 255);
  CHECK(img.data[2] == 1);

  d.images(1, 3) = std::numeric_limits<float>::quiet_NaN();
  REQUIRE_THROWS_WITH(nnfuzz::save_mnist_dir(dir, Split::train, d),
                      Contains("save_mnist_dir()") && Contains("pixel 3 of image 1 is NaN"));
  d.images(1, 3) = 0.0f;
  d.labels[1] = 256;
  REQUIRE_THROWS_WITH(nnfuzz::save_mnist_dir(dir, Split::train, d), Contains("save_mnist_dir()") && Contains("256"));
}

TEST_CASE("load_mnist_dir tries the standard names in order", "[io]") {
  using nnfuzz::Split;
  TempDir tmp;
  // Only the dotted, gzipped spelling for images; both spellings for labels.
  write_idx(tmp.file("t10k-images.idx3-ubyte.gz"), make_array({2, 3, 3}), true);
  write_idx(tmp.file("t10k-labels-idx1-ubyte"), IdxArray{{2}, Bytes{4, 2}});
  write_idx(tmp.file("t10k-labels.idx1-ubyte"), IdxArray{{2}, Bytes{9, 9}});
  const nnfuzz::Dataset d = nnfuzz::load_mnist_dir(tmp.path.string(), Split::test);
  CHECK(d.images.rows() == 2);
  CHECK(d.images.cols() == 9);
  CHECK(d.labels[0] == 4);  // from the first name in the list
  CHECK(d.labels[1] == 2);
}

TEST_CASE("Fashion-MNIST from /usr/share/datasets loads", "[data]") {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(fs::path(dir) / "train-images-idx3-ubyte.gz") &&
      !fs::exists(fs::path(dir) / "train-images-idx3-ubyte")) {
    WARN("skipped: no Fashion-MNIST in " << dir);
    return;
  }
  const nnfuzz::Dataset train = nnfuzz::load_mnist_dir(dir, nnfuzz::Split::train);
  const nnfuzz::Dataset test = nnfuzz::load_mnist_dir(dir, nnfuzz::Split::test);
  CHECK(train.images.rows() == 60000);
  CHECK(train.labels.size() == 60000);
  CHECK(test.images.rows() == 10000);
  CHECK(test.labels.size() == 10000);
  CHECK(train.rows == 28);
  CHECK(train.cols == 28);
  CHECK(train.images.cols() == 784);
  CHECK(train.images.minCoeff() >= 0.0f);
  CHECK(train.images.maxCoeff() <= 1.0f);
  CHECK(train.labels.minCoeff() == 0);
  CHECK(train.labels.maxCoeff() == 9);
}

TEST_CASE("read_idx rejects malformed files, naming the file and the value", "[io]") {
  TempDir tmp;
  const Bytes data100 = pattern(100);

  SECTION("missing file") {
    const std::string p = tmp.file("does-not-exist");
    REQUIRE_THROWS_WITH(read_idx(p), Contains("read_idx()") && Contains(p) && Contains("does not exist"));
  }
  SECTION("a directory") {
    REQUIRE_THROWS_WITH(read_idx(tmp.path.string()),
                        Contains("read_idx()") && Contains(tmp.path.string()) && Contains("directory"));
  }
  SECTION("empty file") {
    const std::string p = tmp.file("empty");
    write_bytes(p, {});
    REQUIRE_THROWS_WITH(read_idx(p), Contains("read_idx()") && Contains(p) && Contains("too short: 0 bytes"));
  }
  SECTION("shorter than the magic") {
    const std::string p = tmp.file("short");
    write_bytes(p, {0, 0, 8});
    REQUIRE_THROWS_WITH(read_idx(p), Contains("read_idx()") && Contains(p) && Contains("too short: 3 bytes"));
  }
  SECTION("wrong magic") {
    const std::string p = tmp.file("magic");
    write_bytes(p, concat({0x12, 0x34, 0x08, 0x01, 0, 0, 0, 1}, {7}));
    REQUIRE_THROWS_WITH(read_idx(p), Contains("read_idx()") && Contains(p) && Contains("0x12 0x34"));
  }
  SECTION("wrong type code") {
    const std::string p = tmp.file("float");
    write_bytes(p, concat(header(0x0D, {25}), data100));
    REQUIRE_THROWS_WITH(read_idx(p), Contains("read_idx()") && Contains(p) && Contains("0x0D (float)") &&
                                         Contains("only unsigned byte (0x08) is supported"));
    write_bytes(p, concat(header(0x09, {100}), data100));
    REQUIRE_THROWS_WITH(read_idx(p), Contains("0x09 (signed byte)"));
    write_bytes(p, concat(header(0x42, {100}), data100));
    REQUIRE_THROWS_WITH(read_idx(p), Contains("0x42"));
  }
  SECTION("0 dims") {
    const std::string p = tmp.file("nodims");
    write_bytes(p, concat(header(0x08, {}), data100));
    REQUIRE_THROWS_WITH(read_idx(p), Contains("read_idx()") && Contains(p) && Contains("0 dimensions"));
  }
  SECTION("more than 4 dims") {
    const std::string p = tmp.file("fivedims");
    write_bytes(p, concat(header(0x08, {1, 1, 1, 1, 100}), data100));
    REQUIRE_THROWS_WITH(read_idx(p), Contains("read_idx()") && Contains(p) && Contains("5 dimensions"));
  }
  SECTION("a 0 dim") {
    const std::string p = tmp.file("zerodim");
    write_bytes(p, header(0x08, {10, 0, 10}));
    REQUIRE_THROWS_WITH(read_idx(p),
                        Contains("read_idx()") && Contains(p) && Contains("absurd dimensions 10 x 0 x 10"));
  }
  SECTION("absurd dims") {
    const std::string p = tmp.file("absurd");
    write_bytes(p, concat(header(0x08, {100000, 100000, 100000}), data100));
    REQUIRE_THROWS_WITH(
        read_idx(p), Contains("read_idx()") && Contains(p) && Contains("absurd dimensions 100000 x 100000 x 100000"));
    // Four dims of 2^32 - 1 would overflow 64 bits if multiplied naively.
    write_bytes(p, header(0x08, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}));
    REQUIRE_THROWS_WITH(read_idx(p), Contains("absurd dimensions 4294967295 x"));
    // One byte over the 2^31 limit.
    write_bytes(p, header(0x08, {2147483649u}));
    REQUIRE_THROWS_WITH(read_idx(p), Contains("absurd dimensions 2147483649"));
  }
  SECTION("truncated header") {
    const std::string p = tmp.file("shorthdr");
    write_bytes(p, {0, 0, 8, 3, 0, 0, 0, 5, 0, 0});
    REQUIRE_THROWS_WITH(read_idx(p), Contains("read_idx()") && Contains(p) &&
                                         Contains("expected 12 bytes of dimensions") && Contains("got 6"));
  }
  SECTION("truncated raw data") {
    const std::string p = tmp.file("trunc");
    write_bytes(p, concat(header(0x08, {10, 20}), data100));
    REQUIRE_THROWS_WITH(read_idx(p), Contains("read_idx()") && Contains(p) &&
                                         Contains("truncated: expected 200 bytes of data, got 100"));
  }
  SECTION("trailing bytes") {
    const std::string p = tmp.file("trailing");
    write_bytes(p, concat(header(0x08, {97}), data100));
    REQUIRE_THROWS_WITH(read_idx(p), Contains("read_idx()") && Contains(p) && Contains("3 trailing bytes"));
    write_gz(p, concat(header(0x08, {97}), data100));
    REQUIRE_THROWS_WITH(read_idx(p), Contains("read_idx()") && Contains(p) && Contains("3 trailing bytes"));
  }
  SECTION("bytes after the gzip stream") {
    const std::string p = tmp.file("junk.gz");
    write_gz(p, concat(header(0x08, {10, 10}), data100));
    const Bytes gz = read_bytes(p);
    for (const Bytes& junk : {Bytes{0}, Bytes{'x', 'y', 'z'}, pattern(5000)}) {
      CAPTURE(junk.size());
      write_bytes(p, concat(gz, junk));
      REQUIRE_THROWS_WITH(read_idx(p),
                          Contains("read_idx()") && Contains(p) &&
                              Contains(std::to_string(junk.size()) + " bytes after the end of its gzip stream"));
    }
    // A second gzip member is part of the stream (RFC 1952): here it adds trailing data.
    write_bytes(p, concat(gz, gz));
    REQUIRE_THROWS_WITH(read_idx(p), Contains("read_idx()") && Contains("112 trailing bytes"));
  }
  SECTION("concatenated gzip members are one stream") {
    const std::string a = tmp.file("part-a.gz"), p = tmp.file("two-members.gz");
    write_gz(a, header(0x08, {10, 10}));
    const Bytes first = read_bytes(a);
    write_gz(a, data100);
    write_bytes(p, concat(first, read_bytes(a)));
    const IdxArray arr = read_idx(p);
    CHECK(arr.dims == std::vector<std::uint32_t>{10, 10});
    CHECK(arr.data == data100);
  }
  SECTION("gzip of truncated IDX data") {
    const std::string p = tmp.file("trunc-inside.gz");
    write_gz(p, concat(header(0x08, {10, 20}), data100));
    REQUIRE_THROWS_WITH(read_idx(p), Contains("read_idx()") && Contains(p) &&
                                         Contains("truncated: expected 200 bytes of data, got 100"));
  }
  SECTION("truncated gzip") {
    const std::string p = tmp.file("trunc.gz");
    write_gz(p, concat(header(0x08, {40, 100}), pattern(4000)));
    const Bytes gz = read_bytes(p);
    // Cut in the middle of the deflate stream, then only the 8-byte CRC/length trailer.
    for (const std::size_t cut : {gz.size() / 2, std::size_t{8}, std::size_t{1}}) {
      CAPTURE(cut);
      write_bytes(p, Bytes(gz.begin(), gz.end() - static_cast<std::ptrdiff_t>(cut)));
      REQUIRE_THROWS_WITH(read_idx(p),
                          Contains("read_idx()") && Contains(p) && Contains("truncated: the gzip stream ends early"));
    }
  }
  SECTION("corrupted gzip") {
    const std::string p = tmp.file("flip.gz");
    write_gz(p, concat(header(0x08, {40, 100}), pattern(4000)));
    const Bytes gz = read_bytes(p);
    SECTION("flipped byte in the compressed stream") {
      Bytes bad = gz;
      bad[bad.size() / 2] ^= 0xFF;
      write_bytes(p, bad);
      REQUIRE_THROWS_WITH(read_idx(p), Contains("read_idx()") && Contains(p) && Contains("corrupted (zlib:"));
    }
    SECTION("bad compression method in the gzip header") {
      Bytes bad = gz;
      bad[2] = 7;
      write_bytes(p, bad);
      REQUIRE_THROWS_WITH(read_idx(p), Contains("read_idx()") && Contains(p) && Contains("unknown compression method"));
    }
    SECTION("flipped byte in the CRC") {
      Bytes bad = gz;
      bad[bad.size() - 8] ^= 0x01;
      write_bytes(p, bad);
      REQUIRE_THROWS_WITH(read_idx(p), Contains("read_idx()") && Contains(p) && Contains("incorrect data check"));
    }
    SECTION("flipped byte in the length") {
      Bytes bad = gz;
      bad[bad.size() - 1] ^= 0x01;
      write_bytes(p, bad);
      REQUIRE_THROWS_WITH(read_idx(p), Contains("read_idx()") && Contains(p) && Contains("incorrect length check"));
    }
  }
  SECTION("tiny files claiming 2^31 bytes throw without allocating them") {
    const Bytes lie = concat(header(0x08, {2048, 1024, 1024}), pattern(16));
    const std::string raw = tmp.file("lie");
    const std::string gz = tmp.file("lie.gz");
    write_bytes(raw, lie);
    write_gz(gz, lie);
    REQUIRE(read_bytes(gz).size() < 100);

    g_largest_alloc = 0;
    REQUIRE_THROWS_WITH(read_idx(raw), Contains("read_idx()") && Contains(raw) &&
                                           Contains("expected 2147483648 bytes of data, got 16"));
    CHECK(g_largest_alloc.load() < (std::size_t{1} << 16));

    g_largest_alloc = 0;
    REQUIRE_THROWS_WITH(
        read_idx(gz), Contains("read_idx()") && Contains(gz) && Contains("expected 2147483648 bytes of data, got 16"));
    // One decompression chunk (1 MiB) at most, never the promised 2 GiB.
    CHECK(g_largest_alloc.load() <= (std::size_t{1} << 20));
  }
}

TEST_CASE("load_mnist_dir rejects directories that are not a data set", "[io]") {
  using nnfuzz::Split;
  TempDir tmp;
  const std::string dir = tmp.path.string();

  SECTION("missing directory") {
    const std::string missing = tmp.file("nope");
    REQUIRE_THROWS_WITH(nnfuzz::load_mnist_dir(missing, Split::train),
                        Contains("load_mnist_dir()") && Contains(missing) && Contains("does not exist"));
  }
  SECTION("no data files: the message lists the names tried") {
    REQUIRE_THROWS_WITH(nnfuzz::load_mnist_dir(dir, Split::test),
                        Contains("load_mnist_dir()") && Contains(dir) &&
                            Contains("t10k-images-idx3-ubyte, t10k-images-idx3-ubyte.gz, "
                                     "t10k-images.idx3-ubyte, t10k-images.idx3-ubyte.gz"));
    write_idx(tmp.file("train-images-idx3-ubyte"), make_array({2, 2, 2}));
    REQUIRE_THROWS_WITH(nnfuzz::load_mnist_dir(dir, Split::train),
                        Contains("load_mnist_dir()") && Contains("train-labels-idx1-ubyte.gz"));
  }
  SECTION("count mismatch") {
    write_idx(tmp.file("train-images-idx3-ubyte"), make_array({5, 2, 2}));
    write_idx(tmp.file("train-labels-idx1-ubyte"), make_array({6}));
    REQUIRE_THROWS_WITH(nnfuzz::load_mnist_dir(dir, Split::train),
                        Contains("make_dataset()") && Contains(dir) && Contains("5 images but 6 labels"));
  }
  SECTION("a label that is not a class is reported at load time, naming the file") {
    write_idx(tmp.file("train-images-idx3-ubyte"), make_array({3, 2, 2}));
    nnfuzz::IdxArray labels = make_array({3});
    labels.data = {1, 12, 3};
    write_idx(tmp.file("train-labels-idx1-ubyte"), labels);
    REQUIRE_THROWS_WITH(nnfuzz::load_mnist_dir(dir, Split::train), Contains("make_dataset()") &&
                                                                       Contains("train-labels-idx1-ubyte") &&
                                                                       Contains("label 12 at index 1 is not a class"));
  }
  SECTION("images not 3-d") {
    write_idx(tmp.file("train-images-idx3-ubyte"), make_array({5, 4}));
    write_idx(tmp.file("train-labels-idx1-ubyte"), make_array({5}));
    REQUIRE_THROWS_WITH(nnfuzz::load_mnist_dir(dir, Split::train),
                        Contains("make_dataset()") && Contains("train-images-idx3-ubyte") &&
                            Contains("images must be 3-d") && Contains("got 2-d (5 x 4)"));
  }
  SECTION("labels not 1-d") {
    write_idx(tmp.file("train-images-idx3-ubyte"), make_array({5, 2, 2}));
    write_idx(tmp.file("train-labels-idx1-ubyte"), make_array({5, 1}));
    REQUIRE_THROWS_WITH(nnfuzz::load_mnist_dir(dir, Split::train),
                        Contains("make_dataset()") && Contains("labels must be 1-d") && Contains("got 2-d (5 x 1)"));
  }
  SECTION("a broken file is reported by read_idx()") {
    write_bytes(tmp.file("train-images-idx3-ubyte"), header(0x08, {5, 2, 2}));
    write_idx(tmp.file("train-labels-idx1-ubyte"), make_array({5}));
    REQUIRE_THROWS_WITH(nnfuzz::load_mnist_dir(dir, Split::train), Contains("read_idx()") &&
                                                                       Contains("train-images-idx3-ubyte") &&
                                                                       Contains("expected 20 bytes of data, got 0"));
  }
}
