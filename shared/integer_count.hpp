// SPDX-License-Identifier: MIT
// Integer counts on the command line ("1e6", "2.5e5" taken as integers; negative, fractional and
// too-large counts refused with a message), for the nnfuzz command and the experiment drivers.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include <CLI/CLI.hpp>

namespace nnfuzz_flags {

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

}  // namespace nnfuzz_flags
