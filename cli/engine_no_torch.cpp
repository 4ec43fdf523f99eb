// SPDX-License-Identifier: MIT
// The command-line tool built without LibTorch: TorchScript files are refused by EngineModel.
#include "engine.hpp"

namespace nnfuzz_cli {

bool have_torch() { return false; }
ModelInfo probe_torch(const std::string& path, const std::vector<std::int64_t>&, const std::vector<std::string>&) {
  throw UsageError("model file '" + path + "': this nnfuzz was built without LibTorch");
}
std::unique_ptr<Backend> open_torch(const std::string& path, const std::vector<std::int64_t>&,
                                    const std::vector<std::string>&, const nnfuzz::EngineOutputs&, const std::string&) {
  throw UsageError("model file '" + path + "': this nnfuzz was built without LibTorch");
}

}  // namespace nnfuzz_cli
