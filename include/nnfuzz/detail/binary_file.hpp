// SPDX-License-Identifier: MIT
// nnfuzz: checksummed binary files, written atomically and durably (internal).
//
// Shared by the campaign files (campaign/files.hpp) and the weights files (models/mlp_file.hpp). Needs
// only the C++ and POSIX standard libraries: the CRC-32 is nnfuzz's own (the zlib/IEEE 802.3
// polynomial, bit-compatible with zlib's crc32(), tested against it), with 64-bit lengths, so
// that files past 4 GiB are checksummed over every byte.
#pragma once

#include "config.hpp"

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

namespace nnfuzz {
namespace detail {

/// errno as text, captured by the caller right after the failing call.
inline std::string errno_text(int err) { return std::generic_category().message(err); }

// ---- CRC-32 (reflected, polynomial 0xEDB88320, as zlib and PNG), slicing by 8 ----

inline const std::array<std::array<std::uint32_t, 256>, 8>& crc_tables() {
  static const auto tables = [] {
    std::array<std::array<std::uint32_t, 256>, 8> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[0][i] = c;
    }
    for (std::uint32_t i = 0; i < 256; ++i)
      for (std::size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
    return t;
  }();
  return tables;
}

/// Continues a CRC-32 over `n` bytes (any length; start with crc = 0). Same values as zlib's
/// crc32()/crc32_z().
inline std::uint32_t crc32_update(std::uint32_t crc, const void* data, std::size_t n) {
  const auto& t = crc_tables();
  const auto* p = static_cast<const std::uint8_t*>(data);
  std::uint32_t c = ~crc;
  for (; n >= 8; n -= 8, p += 8) {
    const std::uint32_t lo =
        c ^ (std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24);
    c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^ t[3][p[4]] ^ t[2][p[5]] ^
        t[1][p[6]] ^ t[0][p[7]];
  }
  for (; n > 0; --n, ++p) c = t[0][(c ^ *p) & 0xFF] ^ (c >> 8);
  return ~c;
}

// ---- little-endian fields ----

inline void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
inline void put_u64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
inline void put_floats(std::vector<std::uint8_t>& out, const float* p, Index n) {
  if (n == 0) return;  // p may be null
  const std::size_t at = out.size();
  out.resize(at + 4 * static_cast<std::size_t>(n));
  std::memcpy(out.data() + at, p, 4 * static_cast<std::size_t>(n));  // little-endian hosts only
}
inline std::uint32_t get_u32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) | (std::uint32_t{p[3]} << 24);
}
inline std::uint64_t get_u64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{p[i]} << (8 * i);
  return v;
}
/// Appends the CRC-32 of everything before it.
inline void seal(std::vector<std::uint8_t>& out) { put_u32(out, crc32_update(0, out.data(), out.size())); }

// ---- temporary files, durability ----

/// A unique temporary name next to `path` (`path.tmp.<pid>.<n>`), so that the final rename stays
/// on one file system and a leftover names the process that wrote it.
inline std::string temp_name_for(const std::string& path) {
  static std::atomic<unsigned long> counter{0};
  return path + ".tmp." + std::to_string(static_cast<long>(getpid())) + "." + std::to_string(counter++);
}

/// Removes a temporary file on scope exit unless released (also when an exception unwinds).
class TempFileGuard {
 public:
  explicit TempFileGuard(std::string path) : path_(std::move(path)) {}
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;
  ~TempFileGuard() {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  void release() { path_.clear(); }

 private:
  std::string path_;
};

/// fsyncs the directory holding `path`, so that a rename or link into it survives a power loss.
inline void fsync_parent(const char* fn, const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    fail(fn, ": cannot open directory '", dir, "' to sync it: ", errno_text(err));
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems cannot sync a directory (EINVAL): nothing more can be done there.
  if (rc != 0 && err != EINVAL && err != EROFS) fail(fn, ": cannot sync directory '", dir, "': ", errno_text(err));
}

/// Writes a file atomically and durably, streaming: bytes go to a temporary file next to the
/// target (with a running CRC-32); finish() appends the CRC (unless `seal` is false), flushes,
/// fsyncs, then renames over
/// the target (or, with `no_replace`, links it in and fails if the target exists) and fsyncs
/// the directory. Destroyed without finish(): the temporary file is removed, the target untouched.
class AtomicFile {
 public:
  /// Opens `path`'s temporary file; `fn` names the caller in errors; `seal`: end with the CRC-32.
  AtomicFile(const char* fn, std::string path, bool seal = true)
      : fn_(fn), path_(std::move(path)), tmp_(temp_name_for(path_)), guard_(tmp_), seal_(seal) {
    f_ = std::fopen(tmp_.c_str(), "wbx");
    if (!f_) {
      const int err = errno;
      guard_.release();  // nothing was created
      fail(fn_, ": cannot create '", tmp_, "' (for '", path_, "'): ", errno_text(err));
    }
    std::setvbuf(f_, nullptr, _IOFBF, 1 << 16);
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile() {
    if (f_) std::fclose(f_);
  }
  /// Appends bytes (and checksums them).
  void write(const void* p, std::size_t n) {
    if (n == 0) return;
    crc_ = crc32_update(crc_, p, n);
    if (std::fwrite(p, 1, n, f_) != n) {
      const int err = errno;
      fail(fn_, ": cannot write '", tmp_, "' (for '", path_, "'): ", errno_text(err));
    }
    bytes_ += n;
  }
  /// Appends a byte buffer.
  void write(const std::vector<std::uint8_t>& b) { write(b.data(), b.size()); }
  /// Bytes written so far.
  std::uint64_t bytes() const { return bytes_; }
  /// Seals and publishes the file. With `no_replace`, returns false (and publishes nothing)
  /// when the target already exists.
  bool finish(bool no_replace = false) {
    std::uint8_t c[4];
    for (int i = 0; i < 4; ++i) c[i] = static_cast<std::uint8_t>(crc_ >> (8 * i));
    if ((seal_ && std::fwrite(c, 1, 4, f_) != 4) || std::fflush(f_) != 0 || ::fsync(fileno(f_)) != 0) {
      const int err = errno;
      fail(fn_, ": cannot write '", tmp_, "' (for '", path_, "'): ", errno_text(err));
    }
    const int rc = std::fclose(f_);
    f_ = nullptr;
    if (rc != 0) {
      const int err = errno;
      fail(fn_, ": cannot write '", tmp_, "' (for '", path_, "'): ", errno_text(err));
    }
    if (no_replace) {
      if (::link(tmp_.c_str(), path_.c_str()) != 0) {
        const int err = errno;
        if (err == EEXIST) return false;  // the guard removes the temporary file
        fail(fn_, ": cannot link '", tmp_, "' to '", path_, "': ", errno_text(err));
      }
      std::remove(tmp_.c_str());
      guard_.release();
    } else {
      if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
        const int err = errno;
        fail(fn_, ": cannot rename '", tmp_, "' to '", path_, "': ", errno_text(err));
      }
      guard_.release();
    }
    fsync_parent(fn_, path_);
    return true;
  }

 private:
  const char* fn_;
  std::string path_, tmp_;
  TempFileGuard guard_;
  bool seal_;
  std::FILE* f_ = nullptr;
  std::uint32_t crc_ = 0;
  std::uint64_t bytes_ = 0;
};

/// Writes `bytes` (already sealed, or not: no CRC is added) to `path` atomically and durably.
inline void write_file_atomic(const char* fn, const std::string& path, const std::vector<std::uint8_t>& bytes) {
  AtomicFile file(fn, path, /*seal=*/false);
  file.write(bytes);
  file.finish();
}

/// Removes `*.tmp.<pid>.<n>` files in `dir` left by processes that no longer run (a kill
/// between create and rename). Returns how many were removed. Files of live processes stay.
inline std::size_t remove_stale_temporaries(const std::string& dir) {
  namespace fs = std::filesystem;
  std::size_t removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const auto at = name.rfind(".tmp.");
    if (at == std::string::npos) continue;
    const std::string rest = name.substr(at + 5);  // "<pid>.<n>"
    const auto dot = rest.find('.');
    if (dot == std::string::npos || dot == 0) continue;
    char* end_ptr = nullptr;
    const long pid = std::strtol(rest.c_str(), &end_ptr, 10);
    if (end_ptr != rest.c_str() + dot || pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to judge)
    std::error_code rm;
    if (fs::remove(it->path(), rm)) ++removed;
  }
  return removed;
}

// ---- reading ----

/// Reads a whole file of [min_bytes, max_bytes]. Errors name `fn`, the file and the reason:
/// missing, not a regular file, unreadable (with errno's text), too small or too large.
/// With `magic` (8 bytes), the file's first 8 bytes are checked before the rest is read, and a
/// `head_check(first bytes, file size)` (if given) sees up to its first 64 KiB: a huge file of
/// garbage, or one whose header disagrees with its size, is refused without reading it whole.
/// A path that cannot be examined (EACCES on a directory, a symbolic link loop) names the error.
template <typename HeadCheck = std::nullptr_t>
inline std::vector<std::uint8_t> read_whole_file(const char* fn, const std::string& path, std::uintmax_t min_bytes,
                                                 std::uintmax_t max_bytes, const char* magic = nullptr,
                                                 const char* magic_name = nullptr, HeadCheck head_check = nullptr) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) fail(fn, ": file '", path, "' does not exist");
  if (ec || !fs::exists(st))
    fail(fn, ": cannot examine '", path, "': ", ec ? ec.message() : std::string("unknown type"));
  if (!fs::is_regular_file(st)) fail(fn, ": '", path, "' is not a regular file");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) fail(fn, ": cannot stat '", path, "': ", ec.message());
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    const int err = errno;
    fail(fn, ": cannot open '", path, "': ", errno_text(err));
  }
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{f};
  if (size < min_bytes) fail(fn, ": file '", path, "' is truncated: ", size, " bytes");
  if (magic) {  // the header first: a file of garbage is refused before its body is read
    std::uint8_t head[8];
    if (size < 8 || std::fread(head, 1, 8, f) != 8 || std::memcmp(head, magic, 8) != 0)
      fail(fn, ": file '", path, "' has the wrong magic (expected ", magic_name ? magic_name : std::string(magic, 8),
           ")");
    if constexpr (!std::is_same_v<HeadCheck, std::nullptr_t>) {
      std::vector<std::uint8_t> first(head, head + 8);
      first.resize(static_cast<std::size_t>(std::min<std::uintmax_t>(size, 1u << 16)));
      const std::size_t got = std::fread(first.data() + 8, 1, first.size() - 8, f);
      first.resize(8 + got);
      head_check(first, size);
    }
    std::rewind(f);
  }
  if (size > max_bytes) fail(fn, ": file '", path, "' is too large: ", size, " bytes (at most ", max_bytes, ")");
  std::vector<std::uint8_t> bytes;
  try {
    bytes.resize(static_cast<std::size_t>(size));
  } catch (const std::bad_alloc&) {
    fail(fn, ": file '", path, "' (", size, " bytes) does not fit in memory");
  }
  const std::size_t got = std::fread(bytes.data(), 1, bytes.size(), f);
  if (got != bytes.size()) {
    const int err = std::ferror(f) ? errno : 0;
    fail(fn, ": cannot read '", path, "': got ", got, " of ", size, " bytes", err ? ": " : "",
         err ? errno_text(err) : "");
  }
  return bytes;
}

/// Checks the CRC-32 in the last 4 bytes of `bytes` against the rest.
inline void check_crc(const char* fn, const std::string& path, const std::vector<std::uint8_t>& bytes) {
  const std::uint32_t stored = get_u32(&bytes[bytes.size() - 4]);
  const std::uint32_t actual = crc32_update(0, bytes.data(), bytes.size() - 4);
  if (stored != actual) fail(fn, ": file '", path, "' is corrupted: CRC-32 ", actual, " != stored ", stored);
}

/// Reads a whole checksummed file, checking its 8-byte magic and its CRC-32.
/// The magic is checked before the body is read; `head_check`: see read_whole_file().
template <typename HeadCheck = std::nullptr_t>
inline std::vector<std::uint8_t> read_sealed(const char* fn, const std::string& path, const char magic[8],
                                             std::uintmax_t max_bytes, HeadCheck head_check = nullptr) {
  auto bytes = read_whole_file(fn, path, 16, max_bytes, magic, nullptr, head_check);
  check_crc(fn, path, bytes);
  return bytes;
}

/// Cursor over a sealed file's payload that throws, naming the file, instead of overrunning.
struct Reader {
  const char* fn;
  const std::string& path;
  const std::vector<std::uint8_t>& b;
  std::size_t pos = 12;  // after magic and version
  void need(std::size_t n) const {
    if (pos + n + 4 > b.size()) fail(fn, ": file '", path, "' is truncated at byte ", pos, " (needs ", n, " more)");
  }
  std::uint32_t u32() {
    need(4);
    pos += 4;
    return get_u32(&b[pos - 4]);
  }
  std::uint64_t u64() {
    need(8);
    pos += 8;
    return get_u64(&b[pos - 8]);
  }
  void floats(float* out, Index n) {
    need(4 * static_cast<std::size_t>(n));
    if (n == 0) return;  // out may be null (an input with no float part)
    std::memcpy(out, &b[pos], 4 * static_cast<std::size_t>(n));
    pos += 4 * static_cast<std::size_t>(n);
  }
};

}  // namespace detail
}  // namespace nnfuzz
