// SPDX-License-Identifier: MIT
// Shared helpers of nnfuzz's libFuzzer harnesses (tests/fuzz/fuzz_*.cpp).
//
// The parsers under test read files by path, so each harness hands them the fuzz input as a
// file: an in-memory file (memfd_create) named by its /proc/self/fd path, one per process and
// rewritten for every input, or a per-process directory under /tmp for the MNIST-directory
// harness. Nothing is left on disk by an input; the directory is removed at exit.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace nnfuzz_fuzz {

/// Aborts (a crash libFuzzer reports) when the harness itself cannot do its job: a broken
/// harness must not look like a parser that accepted or rejected the input.
[[noreturn]] inline void harness_failure(const char* what) {
  std::fprintf(stderr, "nnfuzz fuzz harness: %s: %s\n", what, std::strerror(errno));
  std::abort();
}

/// Writes all of [data, data + size) to fd at offset 0 and truncates the file there.
inline void overwrite_fd(int fd, const std::uint8_t* data, std::size_t size) {
  if (ftruncate(fd, 0) != 0) harness_failure("ftruncate");
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) harness_failure("pwrite");
    done += static_cast<std::size_t>(n);
  }
}

/// A per-process in-memory file; path() opens it anew (its own offset) like any file.
class MemFile {
 public:
  explicit MemFile(const char* name) {
    fd_ = memfd_create(name, MFD_CLOEXEC);
    if (fd_ < 0) harness_failure("memfd_create");
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  ~MemFile() { close(fd_); }
  /// Replaces the file's content with the bytes; returns its path.
  const std::string& write(const std::uint8_t* data, std::size_t size) {
    overwrite_fd(fd_, data, size);
    return path_;
  }

 private:
  int fd_ = -1;
  std::string path_;
};

/// A per-process directory under the temp directory (fixed name: nnfuzz_fuzz_<tag>_<pid>),
/// emptied by reset() and removed when the process exits normally.
class TempDir {
 public:
  explicit TempDir(const char* tag) {
    namespace fs = std::filesystem;
    path_ = fs::temp_directory_path() / (std::string("nnfuzz_fuzz_") + tag + "_" + std::to_string(getpid()));
    reset();
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  /// Deletes everything in the directory (creating it if needed).
  void reset() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    if (ec) harness_failure("remove_all");
    if (!std::filesystem::create_directory(path_, ec) || ec) harness_failure("create_directory");
  }
  /// Writes a file in the directory.
  void write(const std::string& name, const std::uint8_t* data, std::size_t size) {
    const std::string p = (path_ / name).string();
    std::FILE* f = std::fopen(p.c_str(), "wb");
    if (!f) harness_failure("fopen");
    if ((size > 0 && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) harness_failure("fwrite");
  }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

/// fuzz_mnist_dir's input layout, shared with the seed-corpus generator:
///   byte 0      flags: bits 0-1 pick the images file name, bits 2-3 the labels file name
///               (index into mnist_names(): -idx3-ubyte, -idx3-ubyte.gz, .idx3-ubyte,
///               .idx3-ubyte.gz), bit 4 leaves the labels file out
///   bytes 1-4   n, little-endian: the images file is the next min(n, remaining) bytes
///   the rest    the labels file
constexpr std::size_t mnist_header = 5;
constexpr std::uint8_t mnist_no_labels = 0x10;

/// fuzz_campaign's input layout, shared with the seed-corpus generator:
///   byte 0      flags: bit 0 clear: the rest is DIR/corpus.bin (load_corpus); set: the rest is
///               DIR/findings/finding-1-0.bin (load_findings); the other bits are ignored
///   the rest    the file
constexpr std::uint8_t campaign_findings = 0x01;

}  // namespace nnfuzz_fuzz
