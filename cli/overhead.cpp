// SPDX-License-Identifier: MIT
// How much the nnfuzz command costs over the same fuzz written in C++ against the same adapter
// (issue 27: within 5%). Runs, interleaved, `repeats` times each: (a) make_fuzzer(OpenCvDnnModel)
// .run(seeds) in this process, (b) `nnfuzz fuzz` on the same model, seeds, seed and budget, and
// reports the medians of the loop's executions per second (FuzzStats, and the command's --json)
// and of the wall time (the command's includes starting the process, loading the model and the
// seeds, and writing its campaign directory).
//
//   nnfuzz_cli_overhead NNFUZZ MODEL.onnx SEEDS.npy [EXECUTIONS] [REPEATS] [WORKDIR]
#include "seeds.hpp"

#include <nnfuzz/adapters/opencv_dnn.hpp>
#include <nnfuzz/nnfuzz.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: nnfuzz_cli_overhead NNFUZZ MODEL.onnx SEEDS.npy [EXECUTIONS] [REPEATS] [WORKDIR]\n";
    return 2;
  }
  const std::string nnfuzz_exe = argv[1], model = argv[2], seeds_path = argv[3];
  const std::uint64_t executions = argc > 4 ? std::stoull(argv[4]) : 200000;
  const int repeats = argc > 5 ? std::stoi(argv[5]) : 5;
  const std::string work = argc > 6 ? argv[6] : "cli-overhead";
  namespace fs = std::filesystem;
  fs::create_directories(work);
  const nnfuzz::RowMatrix seeds = nnfuzz_cli::load_seeds(seeds_path, {}).rows;
  using Clock = std::chrono::steady_clock;
  std::vector<double> lib_rate, cli_rate, lib_wall, cli_wall;
  for (int k = 0; k < repeats; ++k) {
    {
      const auto t0 = Clock::now();
      nnfuzz::OpenCvDnnOptions o;
      o.input_shape = {static_cast<int>(seeds.cols())};
      o.select.coverage = {"logits"};
      o.select.outputs = {"hidden"};
      nnfuzz::FuzzOptions fo;
      fo.max_executions = executions;
      fo.seed = 1;
      auto fuzzer = nnfuzz::make_fuzzer(nnfuzz::OpenCvDnnModel(model, o), fo);
      const nnfuzz::FuzzResult r = fuzzer.run(seeds);
      lib_wall.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      lib_rate.push_back(r.stats.executions_per_second);
    }
    {
      const std::string out = work + "/run" + std::to_string(k);
      fs::remove_all(out);
      const std::string cmd = "'" + nnfuzz_exe + "' fuzz '" + model + "' --seeds '" + seeds_path + "' --out '" + out +
                              "' --executions " + std::to_string(executions) + " --seed 1 --json -q > '" + out +
                              ".json'";
      const auto t0 = Clock::now();
      const int rc = std::system(cmd.c_str());
      cli_wall.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      std::ifstream in(out + ".json");
      const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
      if (j.is_discarded() || (rc != 0 && WEXITSTATUS(rc) > 1)) {
        std::cerr << "nnfuzz_cli_overhead: '" << cmd << "' failed (status " << rc << ")\n";
        return 2;
      }
      cli_rate.push_back(j["executions_per_second"].get<double>());
    }
    std::cout << "repeat " << k + 1 << ": C++ " << lib_rate.back() << " exec/s (" << lib_wall.back() << " s), nnfuzz "
              << cli_rate.back() << " exec/s (" << cli_wall.back() << " s)\n";
  }
  const double lr = median(lib_rate), cr = median(cli_rate), lw = median(lib_wall), cw = median(cli_wall);
  std::cout << "medians of " << repeats << ", " << executions << " executions each, " << seeds.rows() << " seeds, "
            << model << ":\n"
            << "  loop:  C++ " << lr << " exec/s, nnfuzz " << cr << " exec/s: the command runs at " << 100.0 * cr / lr
            << "% of the C++ loop's speed\n"
            << "  wall:  C++ " << lw << " s, nnfuzz " << cw
            << " s (process, model and seed loading, campaign files): " << 100.0 * (cw / lw - 1.0) << "% more\n";
  return 0;
}
