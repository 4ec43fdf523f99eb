// SPDX-License-Identifier: MIT
// nnfuzz: the files of a sync directory (campaign/sync.hpp's SyncDirectory, `nnfuzz whatsup`,
// `nnfuzz merge`): worker ids, queue-file names, finding signatures, the watermark file, and the
// rule for when a peer's directory is listed again.
//
// Layout. SYNC is shared storage; worker <id> writes only below SYNC/<id>/, and reads the others':
//   SYNC/<id>/lock                 flock of the running worker (a second one with that id is refused)
//   SYNC/<id>/corpus.bin           checkpoint of its whole corpus (campaign/files.hpp's format): resume
//   SYNC/<id>/findings/*.bin       its findings (save_finding()), less those the campaign already had
//   SYNC/<id>/queue/<seq>.bin      the elements it found itself, <seq> = 000000000000, 000000000001, …
//                                  with no gap (a restarted worker numbers after the highest file
//                                  present, never over one); each file a corpus file (campaign/files.hpp's format) of
//                                  the elements new since the previous file, each element a root (parent -1, root =
//                                  itself), with the execution it was found at; the file's executions() is the worker's
//                                  count when it was written
//   SYNC/<id>/sync.bin             watermarks: per worker (itself included), the first queue file
//                                  whose elements corpus.bin may lack. "NNFZSYNC", u32 version 1,
//                                  u32 count, per worker u32 name length + name, u64 next; crc32
//   SYNC/<id>/stats.json           counters for monitors (`nnfuzz whatsup`; campaign/sync_stats.hpp),
//                                  rewritten atomically
//   SYNC/<id>/plot.csv             one line per sync (the header first), appended
// Every binary file is written as campaign/files.hpp writes (temporary file `<name>.tmp.<pid>.<n>`,
// fsync, rename or link, fsync of the directory). A reader opens only the exact final names
// `<seq>.bin` it expects next, so it never sees a temporary file; a file that does not load (a
// torn or corrupted file on a broken file system) is reported with its name, never half-read.
// Only "does not exist" (ENOENT) means "not written yet": any other error on a peer's queue
// (EACCES, a symbolic link loop, EIO) is reported by name in errors() and stats.json. A gap in a
// peer's queue (see SyncOptions::gap_seconds) is waited on, then reported and skipped.
#pragma once

#include "../rng.hpp"
#include "files.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <vector>

namespace nnfuzz {

/// A 64-bit signature of a finding's input (FNV-1a over its parts, input_parts(): per part its
/// kind, size and ids or floats; a dense input is one float part). Two findings of one input have
/// one signature, whichever worker made them.
inline std::uint64_t finding_signature(const Finding& f) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  for (const FindingPart& x : input_parts(f)) {
    const std::uint64_t head[2] = {x.ids ? 1u : 0u, x.size};
    mix(head, sizeof head);
    if (x.ids)
      mix(x.ids, sizeof(TokenId) * x.size);
    else
      mix(x.floats, sizeof(float) * x.size);
  }
  return h;
}

/// The RNG seed of worker `worker_id` in a campaign of seed `seed`: distinct workers explore
/// differently, and one worker's restart is reproducible.
inline std::uint64_t worker_seed(std::uint64_t seed, const std::string& worker_id) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : worker_id) h = (h ^ c) * 1099511628211ull;
  return detail::mix_seed(seed, h);
}

/// True when `id` can name a worker: 1..64 characters of [A-Za-z0-9._-], not starting with '.'.
inline bool is_worker_id(const std::string& id) {
  bool ok = !id.empty() && id.size() <= 64 && id[0] != '.';
  for (char c : id)
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                c == '-');
  return ok;
}

/// The worker directories of a sync directory (names that can be worker ids), sorted. A missing
/// directory has none.
inline std::vector<std::string> sync_workers(const std::string& sync_dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(sync_dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    if (!it->is_directory(e2)) continue;
    const std::string name = it->path().filename().string();
    if (is_worker_id(name)) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// The name of queue file `seq` ("000000000042.bin").
inline std::string sync_queue_name(std::uint64_t seq) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%012llu.bin", static_cast<unsigned long long>(seq));
  return buf;
}

namespace detail {
constexpr char kSyncMagic[8] = {'N', 'N', 'F', 'Z', 'S', 'Y', 'N', 'C'};

inline double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
// Appends `elements` of `from` to `to` (same shape), as roots.
inline void append_elements(const Corpus& from, Corpus& to) {
  for (Index k = 0; k < from.size(); ++k) {
    const Index root = to.size();
    to.add_from(from, k, -1, root, 0, from.entry(k).execution);
  }
}
inline std::string shape_of(const Corpus& c) {
  return c.describe_inputs() + message(" with coverage vectors of ", c.coverage_dim());
}

// "000000000042.bin" -> 42 (exactly the names sync_queue_name() makes).
inline bool parse_queue_name(const std::string& name, std::uint64_t& seq) {
  if (name.size() < 16 || name.size() > 24 || name.compare(name.size() - 4, 4, ".bin") != 0) return false;
  std::uint64_t v = 0;
  for (std::size_t i = 0; i + 4 < name.size(); ++i) {
    const char c = name[i];
    if (c < '0' || c > '9' || v > (~std::uint64_t{0} - 9) / 10) return false;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (sync_queue_name(v) != name) return false;
  seq = v;
  return true;
}

// The numbers of the queue files (<seq>.bin) in queue directory `q`; `ec` says whether it could
// be listed.
inline std::set<std::uint64_t> queue_numbers(const std::string& q, std::error_code& ec) {
  std::set<std::uint64_t> present;
  ec.clear();
  for (std::filesystem::directory_iterator it(q, ec), end; !ec && it != end; it.increment(ec)) {
    std::uint64_t seq = 0;
    if (parse_queue_name(it->path().filename().string(), seq)) present.insert(seq);
  }
  return present;
}

// Whether a peer's directory must be listed again, from its modification time, judged by this
// worker's clock only: the peer's clock (which sets the time, or the file server's) may be
// far ahead or behind. A directory is listed again while its time differs from the last one
// seen, and until one listing was made kSettleSeconds (this worker's steady clock) after that
// time was first seen: two writes within the time's granularity (1 s or 2 s on some file
// systems) leave the same time, and the second is caught by that later listing.
struct DirListing {
  using Clock = std::chrono::steady_clock;
  static constexpr double kSettleSeconds = 2.0;
  std::filesystem::file_time_type time{};
  Clock::time_point seen{};
  bool known = false, settled = false;
  // True when the directory, whose time is now `t`, must be listed; call before listing it.
  bool due(std::filesystem::file_time_type t, Clock::time_point now) {
    if (!known || t != time) {
      known = true;
      settled = false;
      time = t;
      seen = now;
      return true;
    }
    if (settled) return false;
    settled = std::chrono::duration<double>(now - seen).count() >= kSettleSeconds;
    return true;
  }
  void forget() { known = false; }
};

// sync.bin of worker directory `dir`: per worker, the first queue file whose elements
// corpus.bin may lack. Empty when the file does not exist; a bad file throws, naming it.
inline std::map<std::string, std::uint64_t> read_watermarks(const char* fn, const std::string& dir) {
  std::map<std::string, std::uint64_t> out;
  const std::string path = (std::filesystem::path(dir) / "sync.bin").string();
  if (!std::filesystem::exists(path)) return out;
  const auto bytes = read_sealed(fn, path, kSyncMagic, 1u << 24);
  Reader r{fn, path, bytes};
  r.pos = 8;
  if (const std::uint32_t v = r.u32(); v != 1) fail(fn, ": file '", path, "' has format version ", v);
  const std::uint32_t n = r.u32();
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t len = r.u32();
    r.need(len);
    std::string name(reinterpret_cast<const char*>(&bytes[r.pos]), len);
    r.pos += len;
    out[name] = r.u64();
  }
  return out;
}
// Writes sync.bin of worker directory `dir` atomically (campaign/files.hpp's way).
inline void write_watermarks(const std::string& dir, const std::map<std::string, std::uint64_t>& w) {
  std::vector<std::uint8_t> out(kSyncMagic, kSyncMagic + 8);
  put_u32(out, 1);
  put_u32(out, static_cast<std::uint32_t>(w.size()));
  for (const auto& [name, next] : w) {
    put_u32(out, static_cast<std::uint32_t>(name.size()));
    out.insert(out.end(), name.begin(), name.end());
    put_u64(out, next);
  }
  seal(out);
  write_file_atomic("SyncDirectory", (std::filesystem::path(dir) / "sync.bin").string(), out);
}
}  // namespace detail

}  // namespace nnfuzz
