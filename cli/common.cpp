// SPDX-License-Identifier: MIT
// nnfuzz command-line tool: what several subcommands share (commands.hpp).
#include "commands.hpp"

#include <fstream>
#include <iostream>
#include <system_error>

namespace nnfuzz_cli {

namespace fs = std::filesystem;
using nlohmann::json;

json findings_json(const std::vector<nnfuzz::SavedFinding>& saved) {
  std::vector<nnfuzz::Finding> all;
  for (const auto& s : saved) all.push_back(s.finding);
  json groups = json::array();
  for (const nnfuzz::FindingGroup& g : nnfuzz::group_findings(all))
    groups.push_back({{"what", g.what},
                      {"root", g.root},
                      {"count", g.count},
                      {"first_file", saved[g.first].path},
                      {"first_execution", saved[g.first].finding.execution}});
  return groups;
}

void print_groups(std::ostream& os, const json& groups) {
  for (const json& g : groups)
    os << "  " << g["count"].get<std::size_t>() << " x " << g["what"].get<std::string>() << " (seed "
       << g["root"].get<Index>() << "; first at execution " << g["first_execution"].get<std::uint64_t>() << ": "
       << g["first_file"].get<std::string>() << ")\n";
}

// --out (or merge's OUT, `option` names it) must be a directory nnfuzz can write: checked before
// any model is loaded.
void check_out_dir(const std::string& out, const std::string& option) {
  if (out.empty()) throw UsageError(option + " is empty");
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw UsageError(option + ": cannot create directory '" + out + "': " + ec.message());
  if (!fs::is_directory(out, ec)) throw UsageError(option + ": '" + out + "' is not a directory");
  const fs::path probe = fs::path(out) / ".nnfuzz-write-test";
  std::FILE* f = std::fopen(probe.string().c_str(), "w");
  if (!f) throw UsageError(option + ": directory '" + out + "' is not writable");
  std::fclose(f);
  fs::remove(probe, ec);
}

void write_text(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream o(tmp, std::ios::binary);
    o << text;
    if (!o) throw UsageError("cannot write '" + tmp.string() + "'");
  }
  fs::rename(tmp, path);
}

std::string campaign_difference(const CampaignSettings& x, const CampaignSettings& y) {
  const json a = to_json(x), b = to_json(y);
  for (const char* k : {"model", "against", "objective", "scale", "baseline"})
    if (a.at(k) != b.at(k)) return k == std::string("scale") ? "scale (input range)" : k;
  return "";
}

// The campaign directory a FILE argument belongs to (DIR/findings/x.bin -> DIR).
std::string campaign_of(const std::string& path, bool& is_file) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw UsageError("'" + path + "' does not exist");
  is_file = !fs::is_directory(path, ec);
  if (!is_file) return path;
  const fs::path dir = fs::absolute(path).parent_path();
  if (dir.filename() != "findings")
    throw UsageError("'" + path + "' is not a finding file of a campaign directory (DIR/findings/*.bin)");
  // DIR/minimized/findings/x.bin (nnfuzz minimize) belongs to DIR too.
  const fs::path owner = dir.parent_path();
  if (owner.filename() == "minimized" && !fs::exists(owner / "nnfuzz.json", ec)) return owner.parent_path().string();
  return owner.string();
}

// The last session's summary of a campaign directory (what `fuzz --json` printed): DIR/session.json
// in a sync worker's directory (its stats.json is SyncDirectory's), else DIR/stats.json; null when
// there is none.
json read_summary(const fs::path& dir) {
  for (const char* name : {"session.json", "stats.json"}) {
    std::ifstream in(dir / name);
    if (!in) continue;
    json j = json::parse(in, nullptr, false);
    if (!j.is_discarded() && j.contains("executions_per_second")) return j;
  }
  return nullptr;
}

std::vector<std::int64_t> parse_shape(const std::vector<std::string>& parts) {
  std::vector<std::int64_t> shape;
  for (const std::string& p : parts) {
    try {
      std::size_t used = 0;
      const long long v = std::stoll(p, &used);
      if (used != p.size() || v < 1) throw std::invalid_argument("");
      shape.push_back(v);
    } catch (const std::exception&) {
      throw UsageError("option --input-shape: '" + p + "' is not a positive whole number");
    }
  }
  return shape;
}

}  // namespace nnfuzz_cli
