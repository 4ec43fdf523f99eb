// SPDX-License-Identifier: MIT
// nnfuzz: what a sync-directory worker reports for monitors: its counters (SyncCounters), and
// SYNC/<id>/stats.json and plot.csv (read by `nnfuzz whatsup`; docs/scaling.md lists the keys).
#pragma once

#include "../fuzz_types.hpp"
#include "bugs.hpp"
#include "sync_files.hpp"

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace nnfuzz {

/// What a SyncDirectory did, for tests, logs and stats.json.
struct SyncCounters {
  std::uint64_t syncs = 0;               ///< syncs done
  double seconds = 0;                    ///< wall time spent in them (exports, imports, checkpoints, stats)
  double import_seconds = 0;             ///< of which reading other workers' files (queues, findings)
  double import_cpu_seconds = 0;         ///< the CPU time of that reading (this thread's: no time slices of others)
  std::uint64_t exported = 0;            ///< elements written to this worker's queue (this session)
  std::uint64_t queue_files = 0;         ///< queue files of this worker (all sessions): the next <seq>
  std::uint64_t files_read = 0;          ///< queue files of other workers read (this session)
  std::uint64_t offered = 0;             ///< elements in them, handed to the fuzzer (it keeps the new ones)
  std::uint64_t restored = 0;            ///< own elements taken back after a restart (not in corpus.bin)
  std::uint64_t findings = 0;            ///< findings written by this worker (this session)
  std::uint64_t duplicate_findings = 0;  ///< findings not written: the campaign already had the input
  /// Findings not written: a new input, but of a bug that has its files (BugOptions); counted
  /// under the bug (bugs.bin, stats.json "bug_counts").
  std::uint64_t repeat_findings = 0;
  std::uint64_t bad_files = 0;    ///< peer files that did not load (see errors())
  std::uint64_t checkpoints = 0;  ///< corpus.bin writes
  /// Gaps met: in this worker's own queue at a restart (it numbers after the highest file), and
  /// in peers' queues waited on for gap_seconds and skipped (see errors()).
  std::uint64_t gaps = 0;
};

namespace detail {
// What stats.json reports besides the loop's FuzzStats.
struct SyncStatsInput {
  std::string dir, worker;       // the worker's directory and id
  const SyncCounters& counters;  //
  const BugLog& bugs;            // its bugs (every session's)
  const std::vector<std::string>& errors;
  double start_unix = 0;       // when the session started (Unix time)
  double session_seconds = 0;  // wall time since
  std::uint64_t session_executions = 0;
  std::uint64_t findings = 0;         // written by this worker, every session
  double first_finding_seconds = -1;  // -1: none yet
};

// stats.json, by hand (the core has no JSON dependency): a flat object of numbers and strings;
// and one line of plot.csv.
inline void write_sync_stats(const SyncStatsInput& in, const FuzzStats& st, bool finished) {
  namespace fs = std::filesystem;
  const double now = unix_now();
  const double session = in.session_seconds;
  const std::uint64_t session_execs = in.session_executions;
  const SyncCounters& counters_ = in.counters;
  const std::vector<std::string>& errors_ = in.errors;
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  std::string j = "{\n";
  auto num = [&j](const char* k, double v, bool last = false) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", is_finite(v) ? v : -1.0);
    j += std::string("  \"") + k + "\": " + buf + (last ? "\n" : ",\n");
  };
  auto str = [&j](const char* k, const std::string& v) {
    j += std::string("  \"") + k + "\": " + json_string(v) + ",\n";
  };
  str("worker", in.worker);
  str("host", host);
  num("pid", static_cast<double>(::getpid()));
  num("start_time", in.start_unix);
  num("updated_time", now);
  num("seconds", session);
  num("executions", static_cast<double>(st.executions));
  num("session_executions", static_cast<double>(session_execs));
  num("execs_per_sec", session > 0 ? static_cast<double>(session_execs) / session : 0.0);
  num("corpus", static_cast<double>(st.corpus_size));
  num("coverage", static_cast<double>(st.coverage_size));
  num("findings", static_cast<double>(in.findings));
  num("duplicate_findings", static_cast<double>(counters_.duplicate_findings));
  num("repeat_findings", static_cast<double>(counters_.repeat_findings));
  num("reported_findings", static_cast<double>(in.bugs.findings()));
  num("bugs", static_cast<double>(in.bugs.bugs().size()));
  num("first_finding_seconds", in.first_finding_seconds);
  num("last_new_coverage_time", now - st.seconds_since_new_coverage);
  num("last_new_coverage_execution", static_cast<double>(st.last_new_coverage_execution));
  num("imported", static_cast<double>(st.imported));
  num("offered", static_cast<double>(counters_.offered));
  num("restored", static_cast<double>(counters_.restored));
  num("exported", static_cast<double>(counters_.exported));
  num("queue_files", static_cast<double>(counters_.queue_files));
  num("files_read", static_cast<double>(counters_.files_read));
  num("bad_files", static_cast<double>(counters_.bad_files));
  num("errors", static_cast<double>(errors_.size()));
  num("gaps", static_cast<double>(counters_.gaps));
  str("last_error", errors_.empty() ? std::string() : errors_.back());
  num("syncs", static_cast<double>(counters_.syncs));
  num("sync_seconds", counters_.seconds);
  num("import_seconds", counters_.import_seconds);
  num("import_cpu_seconds", counters_.import_cpu_seconds);
  num("finished", finished ? 1.0 : 0.0);
  j += "  \"bug_counts\": " + bugs_json(in.bugs.bugs(), 100, "  ") + "\n}\n";
  // Atomic (temporary file, rename) but not durable: no fsync, so a slow shared disk does
  // not slow the campaign for a monitor's sake. Best effort, as plot.csv below.
  const std::string path = (fs::path(in.dir) / "stats.json").string(), tmp = temp_name_for(path);
  if (std::FILE* f = std::fopen(tmp.c_str(), "wbx")) {
    const bool ok = std::fwrite(j.data(), 1, j.size(), f) == j.size();
    if ((std::fclose(f) != 0 || !ok || std::rename(tmp.c_str(), path.c_str()) != 0)) std::remove(tmp.c_str());
  }
  // plot.csv: one line, appended with one write() (readers skip a last line without '\n').
  const std::string plot = (fs::path(in.dir) / "plot.csv").string();
  const int fd = ::open(plot.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;  // monitoring must not stop the campaign
  char line[512];
  int n = 0;
  if (::lseek(fd, 0, SEEK_END) == 0)
    n = std::snprintf(line, sizeof line,
                      "unix_time,seconds,executions,execs_per_sec,corpus,coverage,findings,imported,exported\n");
  n += std::snprintf(
      line + n, sizeof line - static_cast<std::size_t>(n), "%.3f,%.3f,%llu,%.1f,%lld,%lld,%llu,%lld,%llu\n", now,
      session, static_cast<unsigned long long>(st.executions),
      session > 0 ? static_cast<double>(session_execs) / session : 0.0, static_cast<long long>(st.corpus_size),
      static_cast<long long>(st.coverage_size), static_cast<unsigned long long>(in.findings),
      static_cast<long long>(st.imported), static_cast<unsigned long long>(counters_.exported));
  if (::write(fd, line, static_cast<std::size_t>(n)) != n) { /* best effort, as above */
  }
  ::close(fd);
}
}  // namespace detail

}  // namespace nnfuzz
