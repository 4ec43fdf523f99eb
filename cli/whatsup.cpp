// SPDX-License-Identifier: MIT
// nnfuzz command-line tool: `nnfuzz whatsup DIR`. Of a campaign directory: its settings, corpus,
// last session and findings grouped. Of a SYNC_DIR, the state of a campaign shared through a
// sync directory (as AFL++'s afl-whatsup): one line per worker from SYNC/<id>/stats.json, the
// totals, and the campaign's bugs: each signature (nnfuzz::bug_signature()) with the findings
// reported under it by all workers (SYNC/<id>/bugs.bin and the finding files,
// nnfuzz::load_bugs()); the finding files are also counted by input (nnfuzz::finding_signature()).
// With --csv: every worker's plot.csv as one CSV (worker,unix_time,...), ordered by time.
// A stats.json that is not an object of the expected types, or holds a count out of range, is
// named. Workers that met errors reading their peers' files (stats.json "errors") are listed.
#include "commands.hpp"

#include <nnfuzz/callbacks.hpp>
#include <nnfuzz/campaign/bugs.hpp>
#include <nnfuzz/campaign/files.hpp>
#include <nnfuzz/campaign/sync.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <signal.h>
#include <unistd.h>

namespace nnfuzz_cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

double num(const json& j, const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0; }

// The keys stats.json may hold and their types; anything else in their place (another program's
// file, a hand edit) is refused naming the file and the key. Counts must be whole numbers in
// [0, 2^63): "executions": 1e300 is not printed as -9223372036854775808.
void check_stats(const json& j, const std::string& path) {
  if (!j.is_object())
    throw std::runtime_error("file '" + path + "' is not a JSON object (a stats.json holds {\"worker\": ..., ...})");
  for (const char* k : {"worker", "host", "last_error"})
    if (j.contains(k) && !j[k].is_string())
      throw std::runtime_error("file '" + path + "': key '" + k + "' is " + j[k].dump() + ", not a string");
  if (j.contains("bug_counts")) {  // [{"signature": "...", "count": n, "files": n}, ...]
    const json& b = j["bug_counts"];
    bool ok = b.is_array();
    for (std::size_t i = 0; ok && i < b.size(); ++i)
      ok = b[i].is_object() && b[i].contains("signature") && b[i]["signature"].is_string() && b[i].contains("count") &&
           b[i]["count"].is_number() && b[i].contains("files") && b[i]["files"].is_number();
    if (!ok)
      throw std::runtime_error("file '" + path + "': key 'bug_counts' is " + b.dump() +
                               ", not an array of {\"signature\": text, \"count\": n, \"files\": n}");
  }
  for (const auto& [k, v] : j.items()) {
    if (k == "worker" || k == "host" || k == "last_error" || k == "bug_counts") continue;
    if (!v.is_number())
      throw std::runtime_error("file '" + path + "': key '" + k + "' is " + v.dump() + ", not a number");
  }
  for (const char* k : {"executions", "corpus", "imported", "exported", "findings", "pid", "errors", "bad_files"}) {
    const double v = num(j, k);
    if (!(v >= 0 && v < 9223372036854775808.0) || v != std::floor(v))
      throw std::runtime_error("file '" + path + "': key '" + k + "' is " + j[k].dump() +
                               ", not a count (a whole number in [0, 2^63))");
  }
}

std::string this_host() {
  char host[256] = {0};
  return ::gethostname(host, sizeof host - 1) == 0 ? host : "";
}

// done, dead (its pid is gone on this host), stale (no update for `stale` seconds) or alive.
std::string status_of(const json& j, double now, double stale) {
  if (num(j, "finished") != 0) return "done";
  if (j.value("host", "") == this_host() && num(j, "pid") <= 2147483647.0 &&
      ::kill(static_cast<pid_t>(num(j, "pid")), 0) != 0 && errno == ESRCH)
    return "dead";
  if (now - num(j, "updated_time") > stale) return "stale";
  return "alive";
}

std::string age(double seconds) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(0);
  if (seconds < 0) return "-";
  if (seconds < 120)
    s << seconds << " s";
  else if (seconds < 7200)
    s << seconds / 60 << " min";
  else
    s << seconds / 3600 << " h";
  return s.str();
}

int summary(const std::string& sync, double stale, bool as_json) {
  const std::vector<std::string> workers = nnfuzz::sync_workers(sync);
  const double now = nnfuzz::detail::unix_now();
  std::ostringstream table;
  table << "worker      status  executions   exec/s   corpus  imported  exported  findings  last new   updated\n";
  json out{{"sync_directory", sync}, {"workers", json::array()}};
  double execs = 0, rate = 0, sync_s = 0, seconds = 0;
  std::vector<std::string> problems;  // workers that met errors (stats.json "errors", "last_error")
  int alive = 0, listed = 0;
  for (const std::string& w : workers) {
    const std::string path = (fs::path(sync) / w / "stats.json").string();
    std::ifstream in(path);
    if (!in) continue;  // a worker that has not synced yet
    json j;
    try {
      in >> j;
      check_stats(j, path);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("whatsup: cannot read '") + path + "': " + e.what());
    }
    if (num(j, "errors") > 0)
      problems.push_back(w + ": " + std::to_string(static_cast<long long>(num(j, "errors"))) +
                         " error(s) reading other workers' files" +
                         (j.contains("last_error") ? ", the last: " + j["last_error"].get<std::string>() : ""));
    const std::string status = status_of(j, now, stale);
    alive += status == "alive";
    ++listed;
    execs += num(j, "executions");
    if (status == "alive") rate += num(j, "execs_per_sec");
    sync_s += num(j, "sync_seconds");
    seconds += num(j, "seconds");
    out["workers"].push_back({{"worker", w},
                              {"status", status},
                              {"executions", num(j, "executions")},
                              {"executions_per_second", num(j, "execs_per_sec")},
                              {"corpus", num(j, "corpus")},
                              {"imported", num(j, "imported")},
                              {"exported", num(j, "exported")},
                              {"findings", num(j, "findings")},
                              {"errors", num(j, "errors")}});
    table << std::left << std::setw(12) << w << std::setw(8) << status << std::right << std::setw(10)
          << static_cast<long long>(num(j, "executions")) << std::setw(9)
          << nnfuzz::detail::compact_number(num(j, "execs_per_sec")) << std::setw(9)
          << static_cast<long long>(num(j, "corpus")) << std::setw(10) << static_cast<long long>(num(j, "imported"))
          << std::setw(10) << static_cast<long long>(num(j, "exported")) << std::setw(10)
          << static_cast<long long>(num(j, "findings")) << std::setw(10) << age(now - num(j, "last_new_coverage_time"))
          << std::setw(10) << age(now - num(j, "updated_time")) << "\n";
  }
  if (listed == 0) throw UsageError("whatsup: no worker with a stats.json in '" + sync + "'");
  // Finding files across workers, each input once; bugs across workers, by signature.
  std::set<std::uint64_t> unique;
  std::size_t files = 0;
  struct Total {
    std::uint64_t count = 0, files = 0;
    std::set<std::string> workers;
  };
  std::map<std::string, Total> bugs;
  std::vector<std::string> order;  // signatures in the order met (workers sorted)
  std::uint64_t reported = 0;
  for (const std::string& w : workers) {
    const std::string dir = (fs::path(sync) / w).string();
    for (const nnfuzz::SavedFinding& s : nnfuzz::load_findings(dir)) {
      ++files;
      unique.insert(nnfuzz::finding_signature(s.finding));
    }
    for (const nnfuzz::Bug& b : nnfuzz::load_bugs(dir)) {
      auto [it, added] = bugs.try_emplace(b.signature);
      if (added) order.push_back(b.signature);
      it->second.count += b.count;
      it->second.files += b.files.size();
      it->second.workers.insert(w);
      reported += b.count;
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&bugs](const std::string& a, const std::string& b) { return bugs[a].count > bugs[b].count; });
  out["executions"] = execs;
  out["executions_per_second"] = rate;
  out["alive"] = alive;
  out["sync_share"] = seconds > 0 ? sync_s / seconds : 0.0;
  out["unique_findings"] = unique.size();
  out["finding_files"] = files;
  out["findings_reported"] = reported;
  out["bugs"] = json::array();
  for (const std::string& sig : order)
    out["bugs"].push_back({{"signature", sig},
                           {"count", bugs[sig].count},
                           {"files", bugs[sig].files},
                           {"workers", bugs[sig].workers.size()}});
  out["problems"] = problems;
  if (as_json) {
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << table.str();
    std::cout << "\ncampaign " << sync << ": " << listed << " workers (" << alive << " alive), "
              << static_cast<long long>(execs) << " executions, " << nnfuzz::detail::compact_number(rate)
              << " exec/s now, sync " << std::fixed << std::setprecision(2)
              << (seconds > 0 ? 100.0 * sync_s / seconds : 0.0) << "% of the workers' time\n";
    std::cout << "findings: " << unique.size() << " unique input(s) in " << files << " file(s)\n";
    std::cout << "bugs: " << bugs.size() << " signature(s), " << reported << " finding(s) reported\n";
    for (const std::string& sig : order) {
      const Total& t = bugs[sig];
      std::cout << "  " << t.count << " x " << sig << "  (" << t.files << " file(s), " << t.workers.size()
                << " worker(s))\n";
    }
    if (!problems.empty()) {
      std::cout << "errors: " << problems.size() << " worker(s) could not read everything\n";
      for (const auto& p : problems) std::cout << "  " << p << "\n";
    }
  }
  std::cout.flush();
  if (!std::cout) throw std::runtime_error("whatsup: cannot write to the standard output");
  return unique.empty() ? 0 : 1;
}

// Every worker's plot.csv as one CSV, ordered by time; a last line without '\n' (being written) is skipped.
int csv(const std::string& sync) {
  std::vector<std::pair<double, std::string>> rows;
  std::string header;
  for (const std::string& w : nnfuzz::sync_workers(sync)) {
    std::ifstream in((fs::path(sync) / w / "plot.csv").string(), std::ios::binary);
    const std::string text{std::istreambuf_iterator<char>(in), {}};
    std::size_t at = text.find('\n');
    if (at == std::string::npos) continue;
    if (header.empty()) header = "worker," + text.substr(0, at);
    for (std::size_t nl; (nl = text.find('\n', at + 1)) != std::string::npos; at = nl) {
      const std::string line = text.substr(at + 1, nl - at - 1);
      rows.emplace_back(std::atof(line.c_str()), w + "," + line);
    }
  }
  if (header.empty()) throw UsageError("whatsup: no plot.csv in the workers of '" + sync + "'");
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::cout << header << "\n";
  for (const auto& r : rows) std::cout << r.second << "\n";
  std::cout.flush();
  if (!std::cout) throw std::runtime_error("whatsup: cannot write to the standard output");
  return 0;
}

bool is_sync_directory(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(fs::path(dir) / "nnfuzz.json", ec)) return false;
  for (const std::string& w : nnfuzz::sync_workers(dir))
    if (fs::exists(fs::path(dir) / w / "stats.json", ec)) return true;
  return false;
}

int run_sync_whatsup(const std::string& sync, bool as_csv, bool as_json, double stale) {
  if (as_csv && as_json) throw UsageError("whatsup: --csv and --json are two outputs: give one");
  return as_csv ? csv(sync) : summary(sync, stale, as_json);
}

int run_whatsup(const std::string& dir, bool as_json) {
  const CampaignSettings s = read_settings(dir);
  std::vector<nnfuzz::SavedFinding> findings;
  json j{{"campaign", dir}, {"model", s.model.path}, {"objective", s.objective}};
  try {
    findings = nnfuzz::load_findings(dir);
    if (fs::exists(fs::path(dir) / "corpus.bin")) {
      const nnfuzz::Corpus c = nnfuzz::load_corpus(dir);
      j["corpus_size"] = c.size();
      j["executions"] = c.executions();
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const json last = read_summary(dir);
  if (!last.is_null())
    j["last_session"] = {{"executions_per_second", last.value("executions_per_second", 0.0)},
                         {"seconds", last.value("seconds", 0.0)}};
  j["findings"] = findings.size();
  j["groups"] = findings_json(findings);
  if (as_json) {
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "campaign " << dir << ": " << s.model.path << ", objective " << s.objective << "\n";
    if (j.contains("corpus_size"))
      std::cout << "  " << j["executions"].get<std::uint64_t>() << " executions, corpus "
                << j["corpus_size"].get<Index>() << "\n";
    if (j.contains("last_session"))
      std::cout << "  last session: " << std::fixed << std::setprecision(1)
                << j["last_session"]["seconds"].get<double>() << " s, " << std::setprecision(0)
                << j["last_session"]["executions_per_second"].get<double>() << " exec/s\n";
    std::cout << "  " << findings.size() << " finding(s)" << (findings.empty() ? "" : ":") << "\n";
    print_groups(std::cout, j["groups"]);
  }
  return findings.empty() ? kNothingFound : kFound;
}

}  // namespace

void add_whatsup_command(CLI::App& app, Command& run) {
  auto target = std::make_shared<std::string>();
  auto wjson = std::make_shared<bool>(false), wcsv = std::make_shared<bool>(false);
  auto stale = std::make_shared<double>(60);
  CLI::App* whatsup = app.add_subcommand(
      "whatsup", "a campaign's state: executions, corpus, findings grouped; of a sync directory, one line per worker");
  whatsup->add_option("DIR", *target, "the campaign directory, or a sync directory (--sync of the workers)")
      ->required();
  whatsup->add_flag("--json", *wjson, "machine-readable output");
  whatsup->add_flag("--csv", *wcsv, "of a sync directory: every worker's plot.csv as one CSV, ordered by time");
  whatsup->add_option("--stale", *stale, "of a sync directory: seconds without an update after which a worker is stale")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  whatsup->callback([=, &run] {
    run = [=] {
      if (is_sync_directory(*target)) return run_sync_whatsup(*target, *wcsv, *wjson, *stale);
      if (*wcsv) throw UsageError("whatsup: --csv is for a sync directory; '" + *target + "' is not one");
      return run_whatsup(*target, *wjson);
    };
  });
}

}  // namespace nnfuzz_cli
