// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/models/mlp_file.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

using namespace nnfuzz;
namespace fs = std::filesystem;

namespace {
struct TempPath {
  fs::path dir = fs::temp_directory_path() / ("nnfuzz_weights_" + std::to_string(::getpid()));
  TempPath() { fs::create_directories(dir); }
  ~TempPath() { fs::remove_all(dir); }
  std::string file(const char* n) const { return (dir / n).string(); }
};
std::vector<char> slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
void spit(const std::string& p, const std::vector<char>& b) {
  std::ofstream(p, std::ios::binary).write(b.data(), static_cast<std::streamsize>(b.size()));
}
}  // namespace

TEST_CASE("Weights: save and load round trip exactly", "[weights]") {
  TempPath tmp;
  Mlp<float> net({7, 5, 3});
  net.init_uniform(0.25f, 1);
  net.layers()[1].bias << 1, -2, 3;
  save_mlp(tmp.file("w.bin"), net);
  const Mlp<float> back = load_mlp(tmp.file("w.bin"));
  REQUIRE(back.sizes() == net.sizes());
  for (std::size_t l = 0; l < 2; ++l) {
    CHECK(back.layers()[l].weights == net.layers()[l].weights);
    CHECK(back.layers()[l].bias == net.layers()[l].bias);
  }
  CHECK(slurp(tmp.file("w.bin")).size() == 8 + 12 + 12 + 4 * (7 * 5 + 5 + 5 * 3 + 3) + 4);
  for (const auto& e : fs::directory_iterator(tmp.dir)) CHECK(e.path().filename() == "w.bin");  // no temporary left
}

TEST_CASE("Weights: malformed files are rejected with the file and value named", "[weights]") {
  TempPath tmp;
  Mlp<float> net({4, 3, 2});
  net.init_uniform(0.25f, 2);
  const std::string good = tmp.file("good.bin"), bad = tmp.file("bad.bin");
  save_mlp(good, net);
  const std::vector<char> bytes = slurp(good);
  using Catch::Contains;
  REQUIRE_THROWS_WITH(load_mlp(tmp.file("missing.bin")), Contains("load_mlp()") && Contains("missing.bin"));

  auto with = [&](std::vector<char> b) {
    spit(bad, b);
    return bad;
  };
  std::vector<char> b = bytes;
  b.resize(b.size() - 7);
  REQUIRE_THROWS_WITH(load_mlp(with(b)), Contains("load_mlp()") && Contains(bad) && Contains("(truncated)"));
  b = bytes;
  b.push_back(0);
  REQUIRE_THROWS_WITH(load_mlp(with(b)), Contains("trailing bytes"));
  b = bytes;
  b[0] = 'X';
  REQUIRE_THROWS_WITH(load_mlp(with(b)), Contains("bad magic"));
  b = bytes;
  b[8] = 9;
  REQUIRE_THROWS_WITH(load_mlp(with(b)), Contains("format version 9"));
  b = bytes;
  b[12] = 2;
  REQUIRE_THROWS_WITH(load_mlp(with(b)), Contains("scalar type code 2"));
  b = bytes;
  b[16] = 100;
  REQUIRE_THROWS_WITH(load_mlp(with(b)), Contains("claims 100 layers"));
  b = bytes;
  b[20 + 4 + 3] = 0x7f;  // second size becomes ~2^31
  REQUIRE_THROWS_WITH(load_mlp(with(b)), Contains("absurd layer size"));
  b = bytes;
  b[40] ^= 0x10;  // flip one bit of a weight
  REQUIRE_THROWS_WITH(load_mlp(with(b)), Contains("corrupted: CRC-32"));
  REQUIRE_THROWS_WITH(load_mlp(with({'N', 'N'})), Contains("truncated: 2 bytes"));
  net.layers()[0].weights(0, 0) = std::numeric_limits<float>::quiet_NaN();
  REQUIRE_THROWS_WITH(save_mlp(tmp.file("nan.bin"), net), Contains("save_mlp()") && Contains("non-finite"));
  REQUIRE_THROWS_WITH(save_mlp((tmp.dir / "no" / "such" / "dir.bin").string(), Mlp<float>({2, 2})),
                      Contains("save_mlp()") && Contains("cannot create"));
}
