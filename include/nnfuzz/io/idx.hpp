// SPDX-License-Identifier: MIT
// nnfuzz 0.1's path of the IDX reader (link nnfuzz::data): a forwarding header, deprecated since 0.2, removed in 0.3
// (CONTRIBUTING.md, "Deprecations"). Include <nnfuzz/data/idx.hpp> instead.
#pragma once

// #warning, not _Pragma("GCC warning"): GCC and Clang drop the latter in headers found through
// -isystem, which is how CMake's imported target hands them to a user.
#if !defined(NNFUZZ_NO_DEPRECATED_HEADER_WARNING)
# if defined(_MSC_VER) && !defined(__clang__)
#  pragma message("nnfuzz/io/idx.hpp is deprecated since nnfuzz 0.2 and goes in 0.3: include <nnfuzz/data/idx.hpp>")
# else
#  warning "nnfuzz/io/idx.hpp is deprecated since nnfuzz 0.2 and goes in 0.3: include <nnfuzz/data/idx.hpp>"
# endif
#endif

#include "../data/idx.hpp"
