// SPDX-License-Identifier: MIT
// nnfuzz command-line tool: `nnfuzz minimize`: each finding shrunk towards its seed while it still fires.
#include "commands.hpp"

#include <iostream>
#include <memory>

namespace nnfuzz_cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Each finding shrunk towards its seed (minimize()), saved to DIR/minimized/findings/ (replay
// takes those files as findings of DIR).
int run_minimize(const std::string& target, Index budget, bool as_json) {
  bool is_file = false;
  const std::string dir = campaign_of(target, is_file);
  CampaignSettings s = read_settings(dir);
  std::vector<nnfuzz::SavedFinding> findings;
  nnfuzz::Corpus corpus;
  try {
    findings = is_file ? std::vector<nnfuzz::SavedFinding>{nnfuzz::load_finding(target)} : nnfuzz::load_findings(dir);
    if (!findings.empty()) corpus = nnfuzz::load_corpus(dir);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  OpenModels m = open_models(s, 0);
  nnfuzz::FuzzOptions o;
  o.batch_size = s.batch;
  const std::string to = (fs::path(dir) / "minimized").string();
  json rows = json::array();
  int kept = 0;
  with_fuzzer(s, m, o, [&](auto& fuzzer, LabelHook* label) {
    nnfuzz::MinimizeOptions mo;
    mo.confirm_batch_size = s.batch;
    mo.max_executions = budget;
    for (const nnfuzz::SavedFinding& f : findings) {
      if (f.finding.root < 0 || f.finding.root >= corpus.size() || f.finding.input.size() != corpus.input_dim())
        throw UsageError("finding file '" + f.path + "' does not fit the campaign's corpus (seed " +
                         std::to_string(f.finding.root) + ")");
      const nnfuzz::RowVector root = corpus.input(f.finding.root);
      if (label) {
        label->learn(RowMatrix(root));
        label->state->set_root(root);
      }
      const nnfuzz::MinimizeResult r = nnfuzz::minimize(fuzzer.model(), fuzzer.objective(), root, f.finding.input, mo);
      nnfuzz::Finding small = f.finding;
      small.input = r.input;
      const std::string path = nnfuzz::save_finding(to, small, f.run_seed);
      ++kept;
      rows.push_back({{"file", f.path},
                      {"minimized", path},
                      {"l0_before", r.before.l0},
                      {"l0_after", r.after.l0},
                      {"linf_before", r.before.linf},
                      {"linf_after", r.after.linf},
                      {"executions", r.executions}});
      if (!as_json)
        std::cout << f.path << " -> " << path << ": " << r.before.l0 << " -> " << r.after.l0
                  << " elements changed, L-inf " << r.before.linf << " -> " << r.after.linf << " (" << r.executions
                  << " executions)\n";
    }
  });
  if (as_json) std::cout << json{{"campaign", dir}, {"minimized", rows}}.dump(2) << "\n";
  if (!as_json && findings.empty()) std::cout << "no findings in " << dir << "\n";
  return findings.empty() ? kNothingFound : kFound;
}

}  // namespace

void add_minimize_command(CLI::App& app, Command& run) {
  auto target = std::make_shared<std::string>();
  auto min_budget = std::make_shared<Index>(20000);
  auto mjson = std::make_shared<bool>(false);
  CLI::App* minimize = app.add_subcommand("minimize", "shrink each finding towards its seed while it still fires");
  minimize->add_option("TARGET", *target, "a campaign directory, or one finding file in DIR/findings/")->required();
  minimize->add_option("--executions", *min_budget, "model executions per finding")
      ->check(CLI::Range(Index{1000}, Index{1} << 40))
      ->capture_default_str();
  minimize->add_flag("--json", *mjson, "machine-readable output");
  minimize->callback([=, &run] { run = [=] { return run_minimize(*target, *min_budget, *mjson); }; });
}

}  // namespace nnfuzz_cli
