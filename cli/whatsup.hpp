// SPDX-License-Identifier: MIT
// nnfuzz command-line tool: `nnfuzz whatsup` of a sync directory (workers of `--sync`), see
// whatsup.cpp. The campaign-directory view is run_whatsup() in main.cpp.
#pragma once

#include <string>

namespace nnfuzz_cli {

/// True when DIR is a sync directory: no nnfuzz.json, and a worker subdirectory with a stats.json.
bool is_sync_directory(const std::string& dir);

/// Prints the workers, totals and bugs of the sync directory SYNC (or, with `as_csv`, every
/// worker's plot.csv as one CSV; with `as_json`, the summary as JSON). A worker without an update
/// for `stale` seconds is "stale". Returns 1 when the workers found something, 0 when not;
/// throws UsageError (no worker, no plot.csv) or std::runtime_error (an unreadable stats.json,
/// named) otherwise.
int run_sync_whatsup(const std::string& sync, bool as_csv, bool as_json, double stale);

}  // namespace nnfuzz_cli
