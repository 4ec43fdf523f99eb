// SPDX-License-Identifier: MIT
// nnfuzz command-line tool: `nnfuzz replay`: run a campaign's findings again (do they still fire?).
#include "commands.hpp"

#include <iostream>
#include <memory>
#include <optional>

namespace nnfuzz_cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

int run_replay(const std::string& target, bool as_json) {
  bool is_file = false;
  const std::string dir = campaign_of(target, is_file);
  CampaignSettings s = read_settings(dir);
  std::vector<nnfuzz::SavedFinding> findings;
  try {
    findings = is_file ? std::vector<nnfuzz::SavedFinding>{nnfuzz::load_finding(target)} : nnfuzz::load_findings(dir);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  OpenModels m = open_models(s, 0);
  nnfuzz::FuzzOptions o;
  o.batch_size = s.batch;
  int fired = 0;
  json rows = json::array();
  with_fuzzer(s, m, o, [&](auto& fuzzer, LabelHook* label) {
    std::optional<nnfuzz::Corpus> corpus;
    for (const nnfuzz::SavedFinding& f : findings) {
      if (f.finding.input.size() != fuzzer.model().input_dim())
        throw UsageError("finding file '" + f.path + "' holds an input of " + std::to_string(f.finding.input.size()) +
                         " values, the model takes " + std::to_string(fuzzer.model().input_dim()));
      if (label) {
        if (!corpus) corpus = nnfuzz::load_corpus(dir);
        const RowMatrix root = corpus->input(f.finding.root);
        label->learn(root);
        label->state->set_root(root.row(0));
      }
      const bool again = fuzzer.replay(f.finding.input);
      fired += again;
      rows.push_back({{"file", f.path}, {"what", f.finding.what}, {"fires", again}});
      if (!as_json)
        std::cout << f.path << ": " << (again ? "fires again" : "does not fire") << " (" << f.finding.what << ")\n";
    }
  });
  if (as_json)
    std::cout << json{{"campaign", dir}, {"findings", findings.size()}, {"fire_again", fired}, {"replayed", rows}}.dump(
                     2)
              << "\n";
  else
    std::cout << fired << " of " << findings.size() << " finding(s) fire again\n";
  return fired > 0 ? kFound : kNothingFound;
}

}  // namespace

void add_replay_command(CLI::App& app, Command& run) {
  auto target = std::make_shared<std::string>();
  auto rjson = std::make_shared<bool>(false);
  CLI::App* replay = app.add_subcommand("replay", "run a campaign's findings again: do they still fire?");
  replay->add_option("TARGET", *target, "a campaign directory, or one finding file in DIR/findings/")->required();
  replay->add_flag("--json", *rjson, "machine-readable output");
  replay->callback([=, &run] { run = [=] { return run_replay(*target, *rjson); }; });
}

}  // namespace nnfuzz_cli
