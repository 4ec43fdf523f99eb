// SPDX-License-Identifier: MIT
// nnfuzz command-line tool: `nnfuzz merge`: campaign or sync directories merged into one (corpora reduced, findings by
// bug).
#include "commands.hpp"
#include "shared/flags.hpp"

#include <iostream>
#include <memory>

namespace nnfuzz_cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

/// The options of `nnfuzz merge`.
struct MergeArgs {
  std::string out;                  ///< the merged campaign directory (new or empty)
  std::vector<std::string> inputs;  ///< campaign directories of the command, or sync directories
  float radius = 0;                 ///< 0: the first campaign's coverage radius
  std::size_t samples_per_bug = nnfuzz::BugOptions{}.samples_per_bug;
  bool queues = true, json = false;
};

// merge_campaigns() over campaign directories of the command (or sync directories of its
// workers): every campaign must have been made with the same model(s), objective and scale; OUT
// gets the first's nnfuzz.json, so every other subcommand (and `fuzz`, resuming) takes it.
int run_merge(const MergeArgs& a) {
  std::vector<std::string> campaigns;
  for (const std::string& in : a.inputs) {
    std::error_code ec;
    if (!fs::exists(in, ec)) throw UsageError("merge: input directory '" + in + "' does not exist");
    try {
      for (const std::string& d : nnfuzz::detail::merge_sources(in)) campaigns.push_back(d);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("merge: ") + e.what());
    }
  }
  // Campaigns of `nnfuzz fuzz` (an nnfuzz.json each) must agree on what they fuzzed; those of a
  // C++ program (its own sync or campaign directories: no nnfuzz.json) are merged as they are,
  // and OUT gets no nnfuzz.json. One of each is refused: OUT could not say what it is.
  const auto has_settings = [](const std::string& d) {
    std::error_code e;
    return fs::exists(fs::path(d) / "nnfuzz.json", e);
  };
  const bool of_cli = has_settings(campaigns.front());
  std::optional<CampaignSettings> first;
  if (of_cli) first = read_settings(campaigns.front());
  for (std::size_t i = 1; i < campaigns.size(); ++i) {
    if (has_settings(campaigns[i]) != of_cli)
      throw UsageError("merge: campaign '" + campaigns[i] + (of_cli ? "' has no" : "' has an") +
                       " nnfuzz.json, unlike '" + campaigns.front() +
                       "': merge campaigns of the nnfuzz command with each other, those of a program with each other");
    if (!of_cli) continue;
    const std::string differs = campaign_difference(read_settings(campaigns[i]), *first);
    if (!differs.empty())
      throw UsageError("merge: campaign '" + campaigns[i] + "' was not made with the " + differs + " of '" +
                       campaigns.front() + "' (compare their nnfuzz.json)");
  }
  nnfuzz::MergeOptions o;
  o.radius = a.radius;
  if (o.radius <= 0) {
    const json summary = read_summary(campaigns.front());
    if (!summary.is_null()) o.radius = summary.value("coverage_radius", 0.0f);
    if (!(o.radius > 0))
      throw UsageError("merge: campaign '" + campaigns.front() +
                       "' does not say its coverage radius (no session summary): give --radius");
  }
  o.bugs.samples_per_bug = a.samples_per_bug;
  o.read_queues = a.queues;
  std::error_code ec;
  if (fs::exists(a.out, ec) && !fs::is_empty(a.out, ec))
    throw UsageError("merge: OUT '" + a.out + "' is not empty; merge into a new directory");
  check_out_dir(a.out, "merge: OUT");
  nnfuzz::MergeSummary r;
  try {
    r = nnfuzz::merge_campaigns(campaigns, a.out, o);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("merge: ") + e.what());
  }
  if (first) {
    CampaignSettings merged = *first;
    merged.seeds = "merged: " + campaigns.front() + (campaigns.size() > 1 ? " and others" : "");
    write_settings(a.out, merged);
  }
  json bugs = json::array();
  for (const nnfuzz::Bug& b : r.bugs)
    bugs.push_back({{"signature", b.signature}, {"what", b.what}, {"count", b.count}, {"files", b.files.size()}});
  const json summary{{"out", a.out},
                     {"campaigns", r.campaigns},
                     {"radius", o.radius},
                     {"executions", r.executions},
                     {"elements_read", r.elements_read},
                     {"elements_kept", r.elements_kept},
                     {"finding_files_read", r.finding_files_read},
                     {"duplicate_inputs", r.duplicate_inputs},
                     {"finding_files_written", r.finding_files_written},
                     {"findings_reported", r.findings_reported},
                     {"bugs", bugs},
                     {"nnfuzz_json", first.has_value()}};
  if (a.json) {
    std::cout << summary.dump(2) << "\n";
  } else {
    std::cout << "merged " << r.campaigns.size() << " campaign(s), " << r.executions << " executions, into " << a.out
              << ": corpus " << r.elements_kept << " of " << r.elements_read << " elements (radius " << o.radius
              << "), " << r.finding_files_written << " finding file(s) of " << r.finding_files_read << " ("
              << r.duplicate_inputs << " duplicate inputs), " << r.findings_reported << " finding(s) counted\n";
    for (const nnfuzz::Bug& b : r.bugs)
      std::cout << "  " << b.count << " x " << b.what << " (" << b.files.size() << " file(s))\n";
    if (!first)
      std::cout << "  " << a.out << " has no nnfuzz.json (the inputs were not made by `nnfuzz fuzz`): resume it "
                << "with your program (Fuzzer::resume(), a worker's --sync directory)\n";
  }
  return r.finding_files_written > 0 ? kFound : kNothingFound;
}

}  // namespace

void add_merge_command(CLI::App& app, Command& run) {
  auto args = std::make_shared<MergeArgs>();
  MergeArgs& ma = *args;
  CLI::App* merge = app.add_subcommand(
      "merge",
      "merge campaign directories (or sync directories of workers) into one: corpora reduced, findings by bug");
  merge->add_option("OUT", ma.out, "the merged campaign directory (new or empty)")->required();
  merge
      ->add_option("DIR", ma.inputs,
                   "campaign directories of nnfuzz fuzz, or sync directories (--sync of the workers, "
                   "nnfuzz's or your program's), or campaign directories of your program")
      ->required();
  merge
      ->add_option("--radius", ma.radius,
                   "L2 novelty radius the corpora are reduced with (default: the first campaign's coverage radius)")
      ->check(CLI::PositiveNumber);
  nnfuzz_flags::samples_per_bug(*merge, ma.samples_per_bug, "in the merged directory");
  merge->add_flag("!--no-queues", ma.queues, "read only the workers' corpus.bin, not their queue files");
  merge->add_flag("--json", ma.json, "machine-readable output");

  merge->callback([args, &run] { run = [args] { return run_merge(*args); }; });
}

}  // namespace nnfuzz_cli
