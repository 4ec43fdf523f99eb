// SPDX-License-Identifier: MIT
// Replaces the global operator new of the test program to count allocations (see alloc_tracker.hpp).
#include "alloc_tracker.hpp"

#include <cstdlib>
#include <new>

// Track the largest single allocation, to prove that a file claiming 2 GB of data does not
// make the reader allocate 2 GB. Replacing the global operator new is allowed in a program.
namespace nnfuzz_test {
std::atomic<std::size_t> g_largest_alloc{0};
std::atomic<std::size_t> g_alloc_count{0};
}  // namespace nnfuzz_test
using nnfuzz_test::g_alloc_count;
using nnfuzz_test::g_largest_alloc;

// GCC 12 flags free() on memory from "operator new", not seeing that this new uses malloc.
#if defined(__GNUC__) && !defined(__clang__)
# pragma GCC diagnostic push
# pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
static void* tracked_malloc(std::size_t n) noexcept {
  g_alloc_count.fetch_add(1, std::memory_order_relaxed);
  std::size_t seen = g_largest_alloc.load();
  while (n > seen && !g_largest_alloc.compare_exchange_weak(seen, n)) {
  }
  return std::malloc(n ? n : 1);
}
// Every non-aligned form is replaced, so that no block crosses between this malloc/free pair
// and a sanitizer's own operator new/delete (which would be an alloc-dealloc mismatch).
void* operator new(std::size_t n) {
  if (void* p = tracked_malloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return tracked_malloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return tracked_malloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
# pragma GCC diagnostic pop
#endif
