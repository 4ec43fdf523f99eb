// SPDX-License-Identifier: MIT
// nnfuzz: the one place that knows nanoflann's version differences (internal).
#pragma once

#include <nanoflann.hpp>

#if !defined(NANOFLANN_VERSION) || NANOFLANN_VERSION < 0x140
# error "nnfuzz needs nanoflann >= 1.4 (Debian 12's libnanoflann-dev 1.4.3 reports 0x142)"
#endif

namespace nnfuzz {
namespace detail {

#if NANOFLANN_VERSION >= 0x150
using NanoflannSearchParams = nanoflann::SearchParameters;  // renamed in 1.5
#else
using NanoflannSearchParams = nanoflann::SearchParams;
#endif

// A built static index's tree, point order and bounding box (members renamed in 1.5).
template <class Tree>
auto nanoflann_root(const Tree& t) {
#if NANOFLANN_VERSION >= 0x150
  return t.root_node_;
#else
  return t.root_node;
#endif
}
template <class Tree>
const auto& nanoflann_order(const Tree& t) {
#if NANOFLANN_VERSION >= 0x150
  return t.vAcc_;
#else
  return t.vAcc;
#endif
}
template <class Tree>
const auto& nanoflann_bbox(const Tree& t) {
#if NANOFLANN_VERSION >= 0x150
  return t.root_bbox_;
#else
  return t.root_bbox;
#endif
}

}  // namespace detail
}  // namespace nnfuzz
