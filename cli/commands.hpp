// SPDX-License-Identifier: MIT
// nnfuzz command-line tool: the subcommands (one file each: fuzz.cpp, replay.cpp, minimize.cpp,
// whatsup.cpp, show.cpp, merge.cpp, convert.cpp, prepare.cpp; main.cpp only parses) and what several of them share
// (common.cpp).
#pragma once

#include "campaign.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace nnfuzz_cli {

/// Exit statuses of every subcommand (docs/cli.md).
constexpr int kNothingFound = 0, kFound = 1, kError = 2;

/// What the parsed subcommand runs: set by its callback during CLI::App::parse(), called after.
using Command = std::function<int()>;

/// Each adds its subcommand, with its options, to `app`; when it is the one parsed, `run` is set.
void add_fuzz_command(CLI::App& app, Command& run);
void add_replay_command(CLI::App& app, Command& run);
void add_minimize_command(CLI::App& app, Command& run);
void add_whatsup_command(CLI::App& app, Command& run);
void add_show_command(CLI::App& app, Command& run);
void add_merge_command(CLI::App& app, Command& run);
void add_convert_command(CLI::App& app, Command& run);
void add_prepare_command(CLI::App& app, Command& run);

/// The findings grouped by bug, as JSON (what, count, files).
nlohmann::json findings_json(const std::vector<nnfuzz::SavedFinding>& saved);
/// Prints findings_json()'s groups, one line each.
void print_groups(std::ostream& os, const nlohmann::json& groups);
/// Throws UsageError, naming `option`, when `out` cannot be a campaign directory.
void check_out_dir(const std::string& out, const std::string& option = "option --out");
/// Writes `text` to `path` atomically.
void write_text(const std::filesystem::path& path, const std::string& text);
/// What must agree between campaigns merged (and workers of one sync directory): the model(s),
/// the objective and the input range. Returns the first that differs ("" when none does).
std::string campaign_difference(const CampaignSettings& x, const CampaignSettings& y);
/// The campaign directory a FILE argument belongs to (DIR/findings/x.bin -> DIR); `is_file` says
/// which it was. Throws UsageError for anything else.
std::string campaign_of(const std::string& path, bool& is_file);
/// --input-shape's parts as positive dimensions; throws UsageError naming the option and the part.
std::vector<std::int64_t> parse_shape(const std::vector<std::string>& parts);
/// The last session's summary of a campaign directory (what `fuzz --json` printed), or null.
nlohmann::json read_summary(const std::filesystem::path& dir);

}  // namespace nnfuzz_cli
