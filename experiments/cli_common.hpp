// SPDX-License-Identifier: MIT
// Shared code of the command-line examples: checked output files and command-line counts.
#pragma once

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

#include "shared/integer_count.hpp"

#include <Eigen/Core>

#include <cstdlib>
#include <sstream>

namespace ex {

/// NNFUZZ_EIGEN_CACHE_SIZES=L1,L2,L3 (bytes): the cache sizes Eigen's matrix products block for,
/// instead of those the CPU reports. Eigen chooses its GEMM blocking, and so the order of its
/// sums, from the caches: two CPUs with other cache sizes train other weights from one seed.
/// scripts/reproduce.sh --quick sets it, so that its tables are the same bits on every x86-64
/// machine. Unset or empty: the CPU's. A malformed value throws std::invalid_argument naming the
/// variable and the value.
inline void pin_eigen_cache_sizes() {
  const char* env = std::getenv("NNFUZZ_EIGEN_CACHE_SIZES");
  if (!env || !*env) return;
  std::istringstream in(env);
  std::ptrdiff_t l[3] = {0, 0, 0};
  char c1 = 0, c2 = 0;
  if (!(in >> l[0] >> c1 >> l[1] >> c2 >> l[2]) || c1 != ',' || c2 != ',' || !(in >> std::ws).eof() || l[0] < 1024 ||
      l[1] < l[0] || l[2] < l[1])
    throw std::invalid_argument(
        std::string("environment variable NNFUZZ_EIGEN_CACHE_SIZES='") + env +
        "' is not L1,L2,L3 in bytes (e.g. 32768,1048576,33554432, each at least the one before)");
  Eigen::setCpuCacheSizes(l[0], l[1], l[2]);
}

/// The reason of the last failed system call, as ": No space left on device" (empty if unknown).
inline std::string errno_reason() { return errno != 0 ? std::string(": ") + std::strerror(errno) : std::string(); }

/// Opens `path` for writing (truncating it). Throws std::runtime_error naming the file if it
/// cannot be created. Finish with close_output(): only that says whether everything was written.
inline std::ofstream open_output(const std::string& path) {
  errno = 0;
  std::ofstream os(path, std::ios::binary);
  if (!os) throw std::runtime_error("cannot create '" + path + "'" + errno_reason());
  return os;
}

/// Flushes and closes a stream opened by open_output(). Throws std::runtime_error naming the file
/// if any write failed (a full disk, a file-size limit), now or earlier.
inline void close_output(std::ofstream& os, const std::string& path) {
  errno = 0;
  os.flush();
  const bool written = static_cast<bool>(os);
  os.close();
  if (!written || os.fail()) throw std::runtime_error("cannot write '" + path + "'" + errno_reason());
}

/// Writes `text` to `path`, checked (see close_output()).
inline void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream os = open_output(path);
  os << text;
  close_output(os, path);
}

/// Throws std::runtime_error if anything written to the standard output was lost (e.g. `> /dev/full`).
inline void check_stdout() {
  errno = 0;
  std::cout.flush();
  if (!std::cout) throw std::runtime_error("cannot write to the standard output" + errno_reason());
}

/// The shared main() of the experiment drivers: parses the command line (CLI11's own exit for
/// --help and usage errors), then runs `body`; an exception is printed as "NAME: what" and
/// gives exit code 1.
template <typename Body>
int driver_main(const char* name, CLI::App& app, int argc, char** argv, Body body) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    body();
  } catch (const std::exception& e) {
    std::cerr << name << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace ex
