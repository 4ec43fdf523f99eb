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

/// Rewrites an integer count given in scientific or decimal notation ("1e6", "2.5e5", "100.0") as
/// plain digits ("1000000", ...); plain integers and text that is not a number are left alone
/// (CLI11's conversion reports the latter). Returns an error for a value that is negative, not a
/// whole number ("1.5e0") or larger than `max_count` (by default the largest 64-bit count: a
/// plain "18446744073709551616" too, which CLI11 alone would take).
inline std::string integer_count_text(std::string& text,
                                      std::uint64_t max_count = std::numeric_limits<std::uint64_t>::max()) {
  std::size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) ++i;
  std::string digits;
  long fraction = 0;
  bool point = false;
  for (; i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || (text[i] == '.' && !point)); ++i) {
    if (text[i] == '.') {
      point = true;
    } else {
      digits += text[i];
      fraction += point;
    }
  }
  long exponent = 0;
  const bool has_exponent = i < text.size() && (text[i] == 'e' || text[i] == 'E');
  if (has_exponent) {
    std::size_t j = i + 1;
    const bool negative_exponent = j < text.size() && text[j] == '-';
    if (j < text.size() && (text[j] == '-' || text[j] == '+')) ++j;
    if (j == text.size()) return {};
    for (; j < text.size(); ++j) {
      if (!std::isdigit(static_cast<unsigned char>(text[j]))) return {};  // not a number: left to CLI11
      exponent = std::min(exponent * 10 + (text[j] - '0'), 100000L);
    }
    if (negative_exponent) exponent = -exponent;
    i = text.size();
  }
  if (digits.empty() || i != text.size()) return {};
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));  // leading zeros
  const std::string why = "'" + text + "' ";
  if (negative && !digits.empty()) return why + "is negative (a count is 0 or more)";
  // Past the largest 64-bit count: CLI11 would saturate or wrap it (2^64 taken as "no end").
  auto too_large = [&](const std::string& d) {
    const std::string max = std::to_string(max_count);
    return d.size() > max.size() || (d.size() == max.size() && d > max);
  };
  if (!point && !has_exponent) {  // a plain integer: CLI11 converts it, once it fits
    if (too_large(digits)) return why + "is too large (at most " + std::to_string(max_count) + ")";
    return {};
  }
  if (!digits.empty()) {
    const long shift = exponent - fraction;  // the value is digits * 10^shift
    if (shift < 0) {
      const std::size_t drop = static_cast<std::size_t>(-shift);
      if (drop > digits.size() || digits.find_first_not_of('0', digits.size() - drop) != std::string::npos)
        return why + "is not a whole number (counts take integers, also written as 1e6 or 2.5e5)";
      digits.resize(digits.size() - drop);
    } else {
      if (digits.size() + static_cast<std::size_t>(std::min(shift, 100L)) > 20)
        return why + "is too large (at most " + std::to_string(max_count) + ")";
      digits.append(static_cast<std::size_t>(shift), '0');
      if (too_large(digits)) return why + "is too large (at most " + std::to_string(max_count) + ")";
    }
  }
  text = digits.empty() ? "0" : digits;
  return {};
}

/// CLI11 transform for integer count options: accepts "1e6", "2.5e5", "100.0" as integers and
/// refuses "1.5e0", "-5" and a count past `max_count` (the largest value of the option's type:
/// integer_count<int>() for an int option) with a clear message (see integer_count_text()).
template <typename T = std::uint64_t>
inline CLI::Validator integer_count() {
  static_assert(std::is_integral_v<T>, "integer_count<T>(): T is the option's integer type");
  const auto max_count = static_cast<std::uint64_t>(std::numeric_limits<T>::max());
  return CLI::Validator([max_count](std::string& text) { return integer_count_text(text, max_count); }, "",
                        "INTEGER_COUNT");
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
