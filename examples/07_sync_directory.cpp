// SPDX-License-Identifier: MIT
// A campaign shared by several workers through a sync directory (docs/scaling.md): each worker
// is an ordinary fuzzer run with a SyncDirectory stage, which writes the corpus elements it finds
// to SYNC/<worker>/queue/ and admits the other workers' elements that are new to its coverage.
// Here two workers run one after the other in one process (on a cluster: one process per node
// or array task, the same directory on shared storage); the second starts from what the first
// found and reaches the planted NaN sooner.   Usage: 07_sync_directory [DIR]
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/campaign/sync.hpp>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <string>

// The model: the mean of 16 inputs, NaN when it lands in (0.80, 0.83), far from the seeds.
struct BandModel {
  struct Output {
    nnfuzz::RowMatrix coverage, y;
    template <class F>
    void for_each_tensor(F&& f) const {
      f("y", y);
    }
  };
  nnfuzz::Index input_dim() const { return 16; }
  void evaluate(const Eigen::Ref<const nnfuzz::RowMatrix>& batch, Output& out) const {
    out.coverage = batch.rowwise().mean();
    out.y = ((out.coverage.array() - 0.80f) * (out.coverage.array() - 0.83f)).sqrt().matrix();
  }
};

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  const bool own_dir = argc < 2;
  const std::string dir = own_dir ? (fs::temp_directory_path() / "nnfuzz_07_sync").string() : argv[1];
  if (own_dir) fs::remove_all(dir);
  nnfuzz::SyncOptions sync_options;
  sync_options.interval_executions = 1000;  // sync by executions: the same run every time
  nnfuzz::FuzzResult last;
  for (const char* worker : {"0", "1"}) {
    nnfuzz::FuzzOptions options;
    options.batch_size = 50;
    options.max_executions = worker[0] == '0' ? 20000 : 100000;  // worker 0 stops early
    options.seed = worker[0] == '0' ? 1 : 2;
    auto fuzzer = nnfuzz::make_fuzzer(BandModel{}, nnfuzz::RecentSampler(), nnfuzz::GaussianMutator(0.02f),
                                      nnfuzz::KdTreeCoverage(0.002f), nnfuzz::NonFiniteObjective(), options);
    nnfuzz::SyncDirectory sync(dir, worker, sync_options);  // a stage and a callback in one
    last = fuzzer.run(nnfuzz::RowMatrix::Constant(2, 16, 0.1f), sync);
    std::cout << "worker " << worker << ": " << last.stats.executions << " executions, corpus "
              << last.stats.corpus_size << ", imported " << last.stats.imported << ", "
              << (last.found() ? "found the NaN: " + last.findings.front().what : std::string("no NaN")) << "\n";
  }
  std::cout << "workers in " << dir << ": " << nnfuzz::sync_workers(dir).size() << "\n";
  if (own_dir) fs::remove_all(dir);
  return last.found() && last.stats.imported > 0 ? 0 : 1;
}
