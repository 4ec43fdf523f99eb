// SPDX-License-Identifier: MIT
// nnfuzz: detection of the optional callback hooks and stages, and their compile-time checks
// (internal; the hooks are documented in callbacks.hpp, stages in stages.hpp).
#pragma once

#include "../../corpus.hpp"
#include "../../fuzz_types.hpp"
#include "../traits.hpp"

#include <type_traits>
#include <utility>

namespace nnfuzz {
namespace detail {
// Optional callback hooks (ensmallen style): each may return void or bool; true stops the run.
#define NNFUZZ_HOOK(hook, args_decl, args)                                                      \
 template <typename C, typename = void>                                                         \
 struct has_##hook : std::false_type {};                                                        \
 template <typename C>                                                                          \
 struct has_##hook<C, void_t<decltype(std::declval<C&>().hook args_decl)>> : std::true_type {}; \
 template <typename C, typename... A>                                                           \
 bool call_##hook(C& c, A&&... a) {                                                             \
  if constexpr (has_##hook<C>::value) {                                                         \
   if constexpr (std::is_same<decltype(c.hook(std::forward<A>(a)...)), bool>::value)            \
    return c.hook(std::forward<A>(a)...);                                                       \
   else                                                                                         \
    c.hook(std::forward<A>(a)...);                                                              \
  }                                                                                             \
  return false;                                                                                 \
 }
NNFUZZ_HOOK(on_start, (std::declval<const FuzzStats&>()), )
NNFUZZ_HOOK(on_batch, (std::declval<const FuzzStats&>()), )
NNFUZZ_HOOK(on_new_coverage, (std::declval<const FuzzStats&>(), Index{0}), )
NNFUZZ_HOOK(on_finding, (std::declval<const Finding&>(), std::declval<const FuzzStats&>()), )
NNFUZZ_HOOK(on_end, (std::declval<const FuzzStats&>()), )
NNFUZZ_HOOK(on_corpus, (std::declval<const Corpus&>(), std::declval<const FuzzStats&>()), )
#undef NNFUZZ_HOOK

// A member whose name is a known hook, whatever its signature (non-template, non-overloaded).
#define NNFUZZ_NAMED(name)                 \
 template <typename C, typename = void>    \
 struct names_##name : std::false_type {}; \
 template <typename C>                     \
 struct names_##name<C, void_t<decltype(&C::name)>> : std::true_type {};
NNFUZZ_NAMED(on_start)
NNFUZZ_NAMED(on_batch)
NNFUZZ_NAMED(on_new_coverage)
NNFUZZ_NAMED(on_finding)
NNFUZZ_NAMED(on_end)
NNFUZZ_NAMED(on_corpus)
NNFUZZ_NAMED(on_import)
// Likely misspellings of the hooks: a callback that defines one of them is refused.
NNFUZZ_NAMED(on_findings)
NNFUZZ_NAMED(on_found)
NNFUZZ_NAMED(on_find)
NNFUZZ_NAMED(on_new_finding)
NNFUZZ_NAMED(on_crash)
NNFUZZ_NAMED(on_begin)
NNFUZZ_NAMED(on_finish)
NNFUZZ_NAMED(on_stop)
NNFUZZ_NAMED(on_iteration)
NNFUZZ_NAMED(on_batches)
NNFUZZ_NAMED(on_coverage)
NNFUZZ_NAMED(on_new_coverages)
NNFUZZ_NAMED(on_new)
NNFUZZ_NAMED(on_starts)
NNFUZZ_NAMED(on_ends)
#undef NNFUZZ_NAMED

// A stage: `perform(Context&)`, returning void or bool (true stops the run); see stages.hpp.
template <typename S, typename Context, typename = void>
struct has_perform : std::false_type {};
template <typename S, typename Context>
struct has_perform<S, Context, void_t<decltype(std::declval<S&>().perform(std::declval<Context&>()))>>
    : std::true_type {};
template <typename S, typename Context>
bool call_perform(S& s, Context& ctx) {
  if constexpr (has_perform<S, Context>::value) {
    if constexpr (std::is_same<decltype(s.perform(ctx)), bool>::value)
      return s.perform(ctx);
    else
      s.perform(ctx);
  }
  return false;
}

/// Compile-time checks of one callback or stage type passed to run()/resume(); `Context` is
/// the fuzzer's FuzzContext.
template <typename C, typename Context>
constexpr void check_callback() {
  static_assert(
      has_on_start<C>::value || has_on_batch<C>::value || has_on_new_coverage<C>::value || has_on_finding<C>::value ||
          has_on_end<C>::value || has_on_corpus<C>::value || has_perform<C, Context>::value,
      "nnfuzz: a callback passed to run() has none of the hooks on_start(const FuzzStats&), "
      "on_batch(const FuzzStats&), on_new_coverage(const FuzzStats&, Index), "
      "on_finding(const Finding&, const FuzzStats&), on_corpus(const Corpus&, const FuzzStats&), "
      "on_end(const FuzzStats&) with these parameters (see callbacks.hpp), and it is no stage (perform(ctx), see "
      "stages.hpp)");
  static_assert(!(names_on_start<C>::value && !has_on_start<C>::value),
                "nnfuzz: callback member on_start has the wrong parameters: on_start(const nnfuzz::FuzzStats&)");
  static_assert(!(names_on_batch<C>::value && !has_on_batch<C>::value),
                "nnfuzz: callback member on_batch has the wrong parameters: on_batch(const nnfuzz::FuzzStats&)");
  static_assert(!(names_on_new_coverage<C>::value && !has_on_new_coverage<C>::value),
                "nnfuzz: callback member on_new_coverage has the wrong parameters: "
                "on_new_coverage(const nnfuzz::FuzzStats&, nnfuzz::Index added)");
  static_assert(!(names_on_finding<C>::value && !has_on_finding<C>::value),
                "nnfuzz: callback member on_finding has the wrong parameters: "
                "on_finding(const nnfuzz::Finding&, const nnfuzz::FuzzStats&)");
  static_assert(!(names_on_end<C>::value && !has_on_end<C>::value),
                "nnfuzz: callback member on_end has the wrong parameters: on_end(const nnfuzz::FuzzStats&)");
  static_assert(!(names_on_corpus<C>::value && !has_on_corpus<C>::value),
                "nnfuzz: callback member on_corpus has the wrong parameters: "
                "on_corpus(const nnfuzz::Corpus&, const nnfuzz::FuzzStats&)");
  static_assert(!(names_on_import<C>::value && !has_perform<C, Context>::value),
                "nnfuzz: on_import() is no longer a callback hook: elements found elsewhere join through a stage, "
                "whose perform(ctx) calls ctx.admit(incoming) (see stages.hpp; SyncDirectory is one)");
  static_assert(!(names_on_findings<C>::value || names_on_found<C>::value || names_on_find<C>::value ||
                  names_on_new_finding<C>::value || names_on_crash<C>::value),
                "nnfuzz: callback defines on_findings/on_found/on_find/on_new_finding/on_crash, which is not a hook: "
                "did you mean on_finding(const nnfuzz::Finding&, const nnfuzz::FuzzStats&)?");
  static_assert(!(names_on_begin<C>::value || names_on_starts<C>::value),
                "nnfuzz: callback defines on_begin/on_starts, which is not a hook: did you mean on_start(const "
                "nnfuzz::FuzzStats&)?");
  static_assert(!(names_on_finish<C>::value || names_on_stop<C>::value || names_on_ends<C>::value),
                "nnfuzz: callback defines on_finish/on_stop/on_ends, which is not a hook: did you mean on_end(const "
                "nnfuzz::FuzzStats&)?");
  static_assert(!(names_on_iteration<C>::value || names_on_batches<C>::value),
                "nnfuzz: callback defines on_iteration/on_batches, which is not a hook: did you mean on_batch(const "
                "nnfuzz::FuzzStats&)?");
  static_assert(!(names_on_coverage<C>::value || names_on_new_coverages<C>::value || names_on_new<C>::value),
                "nnfuzz: callback defines on_coverage/on_new_coverages/on_new, which is not a hook: did you mean "
                "on_new_coverage(const nnfuzz::FuzzStats&, nnfuzz::Index added)?");
}

}  // namespace detail
}  // namespace nnfuzz
