// SPDX-License-Identifier: MIT
// A fresh temporary directory per test process, removed at the end of the scope.
#pragma once

#include <filesystem>
#include <string>

#include <unistd.h>

namespace nnfuzz_test {

/// `<tmp>/<tag>_<pid>`, emptied on construction and removed on destruction.
struct TempDir {
  std::filesystem::path dir;
  explicit TempDir(const std::string& tag)
      : dir(std::filesystem::temp_directory_path() / (tag + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

}  // namespace nnfuzz_test
