// SPDX-License-Identifier: MIT
// nnfuzz 0.1's path of fuzz_test(), finds_nothing(): a forwarding header, deprecated since 0.2, removed in 0.3
// (CONTRIBUTING.md, "Deprecations"). Include <nnfuzz/testing/fuzz_test.hpp> instead.
#pragma once

// #warning, not _Pragma("GCC warning"): GCC and Clang drop the latter in headers found through
// -isystem, which is how CMake's imported target hands them to a user.
#if !defined(NNFUZZ_NO_DEPRECATED_HEADER_WARNING)
# if defined(_MSC_VER) && !defined(__clang__)
#  pragma message( \
      "nnfuzz/testing.hpp is deprecated since nnfuzz 0.2 and goes in 0.3: include <nnfuzz/testing/fuzz_test.hpp>")
# else
#  warning "nnfuzz/testing.hpp is deprecated since nnfuzz 0.2 and goes in 0.3: include <nnfuzz/testing/fuzz_test.hpp>"
# endif
#endif

#include "testing/fuzz_test.hpp"
