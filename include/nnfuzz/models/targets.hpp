// SPDX-License-Identifier: MIT
// nnfuzz 0.1's path of NanTarget, PairTarget: a forwarding header, deprecated since 0.2, removed in 0.3
// (CONTRIBUTING.md, "Deprecations"). Include <nnfuzz/targets/mlp_targets.hpp> instead.
#pragma once

// #warning, not _Pragma("GCC warning"): GCC and Clang drop the latter in headers found through
// -isystem, which is how CMake's imported target hands them to a user.
#if !defined(NNFUZZ_NO_DEPRECATED_HEADER_WARNING)
# if defined(_MSC_VER) && !defined(__clang__)
#  pragma message( \
      "nnfuzz/models/targets.hpp is deprecated since nnfuzz 0.2 and goes in 0.3: include <nnfuzz/targets/mlp_targets.hpp>")
# else
#  warning \
      "nnfuzz/models/targets.hpp is deprecated since nnfuzz 0.2 and goes in 0.3: include <nnfuzz/targets/mlp_targets.hpp>"
# endif
#endif

#include "../targets/mlp_targets.hpp"
