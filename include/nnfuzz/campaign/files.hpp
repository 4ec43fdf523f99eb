// SPDX-License-Identifier: MIT
// nnfuzz: persistent campaigns — a corpus directory that survives a kill, resume, replay.
//
// Directory layout (all files little-endian binary, each ending in a CRC-32 of what precedes it,
// each written atomically and durably: temporary file, fsync, rename or link, fsync of the
// directory):
//   DIR/corpus.bin                    the corpus, format version 3 (written; versions 1 and 2 are
//                                     read too): "NNFZCORP", u32 version 3, u32 coverage_dim,
//                                     u64 count, u64 executions (Corpus::executions()), u32 parts
//                                     (0: dense), dense: u32 input_dim; structured: per part u32
//                                     kind (0 floats, 1 tokens), u32 width (max_len), u32 vocab,
//                                     u32 name length + name; u32 state length (at most 2^24) +
//                                     the coverage policy's state (Corpus::coverage_state(), opaque
//                                     here: CalibratedCoverage's radius; 0 bytes for none); then per
//                                     element: i64 parent, i64 root, i64 depth, u64 execution, u64
//                                     times_picked, input floats (the float parts), i32 token cells
//                                     (per token part: max_len ids, then the length), coverage
//                                     floats; crc32
//                                     (version 2: the same without the state; version 1:
//                                     "NNFZCORP", u32 1, u32 input_dim, u32 coverage_dim, u64
//                                     count, elements without token cells)
//   DIR/lock                          held (flock) by the CampaignSaver writing DIR; holds its pid
//   DIR/findings/finding-<execution>-<pid>-<n>.bin
//                                     one finding of a dense model: "NNFZFIND", u32 version 1,
//                                     u32 dim, i64 root, i64 parent, i64 depth, u64 execution,
//                                     u64 run seed, u32 length + bytes of `what`, input floats; crc32
//                                     of a structured model: u32 version 2, u32 parts, the same
//                                     lineage, seed and `what`, then per part u32 kind, u32 count,
//                                     count floats or i32 ids; crc32
// Killing the process at any moment leaves the previous corpus.bin or the new one, never a torn
// file, and every finding a CampaignSaver reported is on disk (and its directory entry synced)
// before the report returns. The writer refuses, before writing anything, what the loader would
// refuse: the two accept exactly the same files.
#pragma once

#include "corpus_file.hpp"
#include "finding_files.hpp"
#include "../detail/binary_file.hpp"
#include "../detail/config.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <sys/file.h>

namespace nnfuzz {

namespace detail {
// An exclusive advisory lock (flock) on DIR/lock, holding the owner's pid; released when the last
// copy goes (or the process dies: the kernel drops it).
inline std::shared_ptr<int> lock_campaign(const char* fn, const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "lock").string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    fail(fn, ": cannot open lock file '", path, "': ", errno_text(err));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {0};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    if (err == EWOULDBLOCK)
      fail(fn, ": campaign directory '", dir, "' is in use by process ",
           n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "?", " (lock file '", path,
           "'); two writers in one directory would overwrite each other's corpus: "
           "give each its own directory");
    fail(fn, ": cannot lock '", path, "': ", errno_text(err));
  }
  const std::string pid = std::to_string(static_cast<long>(getpid()));
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int err = errno;
    ::close(fd);
    fail(fn, ": cannot write lock file '", path, "': ", errno_text(err));
  }
  return std::shared_ptr<int>(new int(fd), [](int* p) {
    ::close(*p);
    delete p;
  });
}
}  // namespace detail

}  // namespace nnfuzz
