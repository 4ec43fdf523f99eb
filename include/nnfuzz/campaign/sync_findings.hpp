// SPDX-License-Identifier: MIT
// nnfuzz: the findings of a campaign shared through a sync directory, as one worker knows them —
// the signatures (finding_signature()) of every finding file any worker wrote, so that a worker
// does not write an input the campaign has already. SyncDirectory (campaign/sync.hpp) owns one.
#pragma once

#include "finding_files.hpp"
#include "sync_files.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <unordered_set>

namespace nnfuzz {
namespace detail {

/// The signatures of a campaign's findings, refreshed from the workers' `findings/` directories.
/// Each directory is listed only when its modification time changed (DirListing, judged by this
/// worker's clock), and each file is read once.
class CampaignFindings {
 public:
  /// Reads the finding files written in SYNC since the last call, by every worker; its own
  /// directory (`self`) only on the first call — the worker adds its own signatures since
  /// (insert()). A directory that cannot be read or listed, or a file that does not load, throws
  /// with `strict`; otherwise `error(message)` is called, for a directory once while its error
  /// stays the same, for a file once (it is not read again), to count and log it.
  template <typename OnError>
  void refresh(const std::string& sync, const std::string& self, bool strict, OnError&& error) {
    namespace fs = std::filesystem;
    for (const std::string& name : sync_workers(sync)) {
      if (name == self && of_.count(name) != 0) continue;
      Worker& w = of_[name];
      const fs::path fdir = fs::path(sync) / name / "findings";
      std::error_code ec;
      const auto t = fs::last_write_time(fdir, ec);
      if (ec) {
        if (ec != std::errc::no_such_file_or_directory)  // EACCES, a loop: not "no findings"
          directory_error(w, strict, error, "read", name, fdir, ec);
        continue;
      }
      if (!w.listing.due(t, std::chrono::steady_clock::now())) continue;
      fs::directory_iterator it(fdir, ec), end;
      if (ec) {
        directory_error(w, strict, error, "list", name, fdir, ec);
        w.listing.forget();
        continue;
      }
      for (; !ec && it != end; it.increment(ec)) {
        if (it->path().extension() != ".bin") continue;  // skips *.tmp.* files being written
        if (!w.files.insert(it->path().filename().string()).second) continue;
        try {
          signatures_.insert(finding_signature(load_finding(it->path().string()).finding));
        } catch (const std::invalid_argument& e) {
          if (strict) throw;
          error(std::string(e.what()));
        }
      }
    }
  }
  /// Adds a signature; false when the campaign had it already.
  bool insert(std::uint64_t signature) { return signatures_.insert(signature).second; }
  /// The finding files of `worker` read so far.
  std::size_t files_of(const std::string& worker) const {
    const auto it = of_.find(worker);
    return it == of_.end() ? 0 : it->second.files.size();
  }

 private:
  struct Worker {
    DirListing listing;           // of its findings/
    std::set<std::string> files;  // finding files already read
    std::string dir_error;        // the last error on its findings/ (reported once)
  };
  template <typename OnError>
  static void directory_error(Worker& w, bool strict, OnError& error, const char* verb, const std::string& name,
                              const std::filesystem::path& fdir, const std::error_code& ec) {
    std::string e = message("SyncDirectory: cannot ", verb, " worker '", name, "''s findings '", fdir.string(),
                            "': ", ec.message());
    if (strict) fail(e);
    if (w.dir_error == e) return;
    w.dir_error = e;
    error(std::move(e));
  }

  std::map<std::string, Worker> of_;
  std::unordered_set<std::uint64_t> signatures_;
};

}  // namespace detail
}  // namespace nnfuzz
