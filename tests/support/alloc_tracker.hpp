// SPDX-License-Identifier: MIT
// Allocation tracking for tests: the test program replaces the global operator new.
#pragma once

#include <atomic>
#include <cstddef>

namespace nnfuzz_test {
/// Largest single allocation since last reset (bytes).
extern std::atomic<std::size_t> g_largest_alloc;
/// Number of allocations since last reset.
extern std::atomic<std::size_t> g_alloc_count;
}  // namespace nnfuzz_test
