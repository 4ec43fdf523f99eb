// SPDX-License-Identifier: MIT
// nnfuzz command-line tool: `nnfuzz show`: one PNG per finding group (seed | found | difference).
#include "commands.hpp"

#include <stb/stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <memory>

namespace nnfuzz_cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// One PNG per finding group: seed | found | difference magnified (images only).
int run_show(const std::string& dir, const std::string& out_dir, int zoom, bool as_json) {
  const CampaignSettings s = read_settings(dir);
  if (s.height <= 0 || s.width <= 0)
    throw UsageError("campaign directory '" + dir + "': its seeds ('" + s.seeds +
                     "') were not images, so there is nothing to draw (nnfuzz whatsup lists the findings)");
  std::vector<nnfuzz::SavedFinding> findings;
  nnfuzz::Corpus corpus;
  try {
    findings = nnfuzz::load_findings(dir);
    if (!findings.empty()) corpus = nnfuzz::load_corpus(dir);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const std::string to = out_dir.empty() ? (fs::path(dir) / "show").string() : out_dir;
  std::error_code ec;
  fs::create_directories(to, ec);
  if (ec) throw UsageError("option --png-dir: cannot create '" + to + "': " + ec.message());
  std::vector<nnfuzz::Finding> all;
  for (const auto& f : findings) all.push_back(f.finding);
  const auto groups = nnfuzz::group_findings(all);
  const int h = s.height, w = s.width, c = s.channels, gap = 2;
  const Index plane = static_cast<Index>(h) * w;
  json written = json::array();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const nnfuzz::Finding& f = all[groups[g].first];
    if (f.input.size() != plane * c || f.root >= corpus.size())
      throw UsageError("finding '" + findings[groups[g].first].path + "' does not fit the seed images' size");
    const nnfuzz::RowVector seed = corpus.input(f.root);
    const nnfuzz::RowVector diff = (f.input - seed).cwiseAbs();
    const float dmax = std::max(diff.maxCoeff(), 1e-12f);
    const int W = (3 * w + 2 * gap) * zoom, H = h * zoom;
    std::vector<unsigned char> img(static_cast<std::size_t>(W) * H * c, 255);
    auto put = [&](int panel, const nnfuzz::RowVector& v, bool magnify) {
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          for (int ch = 0; ch < c; ++ch) {
            const float val = v(ch * plane + y * w + x);
            const float unit = magnify ? val / dmax : (val - s.scale.lo) / (s.scale.hi - s.scale.lo);
            const auto px = static_cast<unsigned char>(std::lround(255.0f * std::clamp(unit, 0.0f, 1.0f)));
            for (int dy = 0; dy < zoom; ++dy)
              for (int dx = 0; dx < zoom; ++dx)
                img[(static_cast<std::size_t>(y * zoom + dy) * W + (panel * (w + gap) + x) * zoom + dx) * c + ch] = px;
          }
    };
    put(0, seed, false);
    put(1, f.input, false);
    put(2, diff, true);
    const std::string path = (fs::path(to) / ("group-" + std::to_string(g + 1) + ".png")).string();
    if (!stbi_write_png(path.c_str(), W, H, c, img.data(), W * c)) throw UsageError("cannot write '" + path + "'");
    written.push_back({{"png", path}, {"what", f.what}, {"count", groups[g].count}, {"max_abs_difference", dmax}});
    if (!as_json)
      std::cout << path << ": " << groups[g].count << " x " << f.what << " (seed " << f.root
                << " | found | difference x" << std::setprecision(3) << 1.0f / dmax << ", max |d| " << dmax << ")\n";
  }
  if (as_json) std::cout << json{{"campaign", dir}, {"groups", written}}.dump(2) << "\n";
  if (!as_json && groups.empty()) std::cout << "no findings in " << dir << "\n";
  return groups.empty() ? kNothingFound : kFound;
}

}  // namespace

void add_show_command(CLI::App& app, Command& run) {
  auto target = std::make_shared<std::string>();
  auto png_dir = std::make_shared<std::string>();
  auto zoom = std::make_shared<int>(4);
  auto sjson = std::make_shared<bool>(false);
  CLI::App* show =
      app.add_subcommand("show", "PNGs of a campaign's findings (seed | found | difference), one per group");
  show->add_option("DIR", *target, "the campaign directory")->required();
  show->add_option("--png-dir", *png_dir, "where to write them (default DIR/show)");
  show->add_option("--zoom", *zoom, "pixels per input pixel")->check(CLI::Range(1, 64))->capture_default_str();
  show->add_flag("--json", *sjson, "machine-readable output");

  show->callback([=, &run] { run = [=] { return run_show(*target, *png_dir, *zoom, *sjson); }; });
}

}  // namespace nnfuzz_cli
