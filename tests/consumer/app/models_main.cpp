// SPDX-License-Identifier: MIT
// nnfuzz consumer test of nnfuzz::data (the IDX reader with gzip, the one part that needs zlib)
// and of the models and targets (core): a gzip IDX file written and read back, a small float
// network saved and loaded back, its NaN target fuzzed for a few batches.
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/data/idx.hpp>
#include <nnfuzz/models/mlp_file.hpp>
#include <nnfuzz/targets/mlp_targets.hpp>

#include <cstdio>
#include <filesystem>

int main() {
  const std::string idx_path =
      (std::filesystem::temp_directory_path() / ("nnfuzz_data_" + std::to_string(::getpid()) + ".idx.gz")).string();
  nnfuzz::IdxArray images;
  images.dims = {2, 2, 2};
  images.data = {0, 1, 2, 3, 4, 5, 6, 255};
  nnfuzz::write_idx(idx_path, images, /*gzip=*/true);
  const nnfuzz::IdxArray back_images = nnfuzz::read_idx(idx_path);
  std::filesystem::remove(idx_path);
  if (back_images.dims != images.dims || back_images.data != images.data) {
    std::printf("FAIL: the gzip IDX file did not read back\n");
    return 1;
  }
  nnfuzz::Mlp<float> net({8, 6, 3});
  net.init_uniform(0.5f, 7);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("nnfuzz_models_" + std::to_string(::getpid()) + ".bin")).string();
  nnfuzz::save_mlp(path, net);
  const nnfuzz::Mlp<float> back = nnfuzz::load_mlp(path);
  std::filesystem::remove(path);
  nnfuzz::FuzzOptions o;
  o.max_executions = 2000;
  o.batch_size = 100;
  auto fuzzer = nnfuzz::make_fuzzer(nnfuzz::NanTarget(back), o);
  const auto r = fuzzer.run(nnfuzz::RowMatrix::Constant(2, 8, 0.5f));
  std::printf("nnfuzz models consumer: %llu executions, corpus %lld\n",
              static_cast<unsigned long long>(r.stats.executions), static_cast<long long>(r.stats.corpus_size));
  return r.stats.executions == 2000 ? 0 : 1;
}
