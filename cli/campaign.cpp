// SPDX-License-Identifier: MIT
// Campaign settings (DIR/nnfuzz.json) and the models they name: see campaign.hpp.
#include "campaign.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace nnfuzz_cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json spec_json(const ModelSpec& m) {
  return json{
      {"path", m.path},         {"engine", m.engine}, {"input_shape", m.input_shape}, {"output_names", m.output_names},
      {"coverage", m.coverage}, {"logits", m.logits}, {"sum_abs", m.sum_abs},         {"dtype", m.dtype},
      {"prepare", m.prepare}};
}

ModelSpec spec_from(const json& j) {
  ModelSpec m;
  m.path = j.at("path").get<std::string>();
  m.engine = j.at("engine").get<std::string>();
  m.input_shape = j.at("input_shape").get<std::vector<std::int64_t>>();
  m.output_names = j.at("output_names").get<std::vector<std::string>>();
  m.coverage = j.at("coverage").get<std::string>();
  m.logits = j.at("logits").get<std::string>();
  m.sum_abs = j.at("sum_abs").get<bool>();
  m.dtype = j.at("dtype").get<std::string>();
  m.prepare = j.value("prepare", true);  // absent in campaigns of nnfuzz <= 0.2.0
  return m;
}

}  // namespace

json to_json(const CampaignSettings& s) {
  json j{{"format", "nnfuzz-cli-campaign"},
         {"version", 1},
         {"model", spec_json(s.model)},
         {"against", s.against ? spec_json(*s.against) : json(nullptr)},
         {"objective", s.objective},
         {"scale", {s.scale.lo, s.scale.hi}},
         {"eps", s.eps},
         {"seeds", s.seeds},
         {"image", {{"height", s.height}, {"width", s.width}, {"channels", s.channels}}},
         {"batch", s.batch},
         {"workers", s.workers},
         {"baseline", s.baseline}};
  return j;
}

CampaignSettings read_settings(const std::string& dir) {
  const std::string path = (fs::path(dir) / "nnfuzz.json").string();
  std::ifstream in(path);
  if (!in)
    throw UsageError("'" + dir + "' is not a campaign directory of the nnfuzz command (no readable '" + path + "')");
  try {
    const json j = json::parse(in);
    if (j.at("format") != "nnfuzz-cli-campaign" || j.at("version") != 1)
      throw UsageError("'" + path + "' is not an nnfuzz campaign file of version 1");
    CampaignSettings s;
    s.model = spec_from(j.at("model"));
    if (!j.at("against").is_null()) s.against = spec_from(j.at("against"));
    s.objective = j.at("objective").get<std::string>();
    s.scale.lo = j.at("scale").at(0).get<float>();
    s.scale.hi = j.at("scale").at(1).get<float>();
    s.eps = j.at("eps").get<float>();
    s.seeds = j.at("seeds").get<std::string>();
    s.height = j.at("image").at("height").get<int>();
    s.width = j.at("image").at("width").get<int>();
    s.channels = j.at("image").at("channels").get<int>();
    s.batch = j.at("batch").get<Index>();
    s.workers = j.value("workers", 1);
    s.baseline = j.value("baseline", std::string("default"));  // campaigns made before --baseline: the defaults
    try {
      nnfuzz::parse_baseline(s.baseline);
    } catch (const std::invalid_argument& e) {
      throw UsageError("'" + path + "': " + e.what());
    }
    return s;
  } catch (const json::exception& e) {
    throw UsageError("'" + path + "' is malformed: " + e.what());
  }
}

void write_settings(const std::string& dir, const CampaignSettings& s) {
  const fs::path final_path = fs::path(dir) / "nnfuzz.json";
  const fs::path tmp = fs::path(dir) / ("nnfuzz.json.tmp." + std::to_string(static_cast<long>(getpid())));
  {
    std::ofstream out(tmp);
    out << to_json(s).dump(2) << "\n";
    out.flush();
    if (!out) throw UsageError("option --out: cannot write '" + tmp.string() + "'");
  }
  std::error_code ec;
  fs::rename(tmp, final_path, ec);
  if (ec) throw UsageError("option --out: cannot write '" + final_path.string() + "': " + ec.message());
}

void LabelState::learn(const Eigen::Ref<const RowMatrix>& seeds, const RowMatrix& logits) {
  for (Index r = 0; r < seeds.rows(); ++r) {
    const nnfuzz::RowVector row = seeds.row(r);
    label_of[std::string(reinterpret_cast<const char*>(row.data()),
                         sizeof(float) * static_cast<std::size_t>(row.size()))] = nnfuzz::argmax(logits.row(r));
  }
}

void LabelState::set_root(const Eigen::Ref<const nnfuzz::RowVector>& root) {
  const nnfuzz::RowVector row = root;
  const auto it = label_of.find(
      std::string(reinterpret_cast<const char*>(row.data()), sizeof(float) * static_cast<std::size_t>(row.size())));
  current = it == label_of.end() ? -1 : it->second;
}

void learn_labels(LabelState& label, EngineModel& model, const Eigen::Ref<const RowMatrix>& rows) {
  EngineOutput out;
  for (Index first = 0; first < rows.rows(); first += 100) {
    const Index n = std::min<Index>(100, rows.rows() - first);
    const RowMatrix part = rows.middleRows(first, n);
    model.evaluate(part, out);
    label.learn(part, out.logits());
  }
}

float check_objective(const std::string& o) {
  if (o == "nan" || o == "disagree" || o == "label") return 0;
  if (o == "distance") return 0.5f;
  if (o.rfind("distance:", 0) == 0) {
    const std::string t = o.substr(9);
    try {
      std::size_t used = 0;
      const float v = std::stof(t, &used);
      if (used == t.size() && v > 0 && v < 1) return v;
    } catch (const std::exception&) {
    }
    throw UsageError("option --objective: threshold '" + t + "' of '" + o +
                     "' must be a number in (0, 1) (the largest change of a class probability)");
  }
  throw UsageError("option --objective: '" + o + "' is not an objective (nan, disagree, distance[:T], label)");
}

OpenModels open_models(CampaignSettings& s, Index seed_width) {
  OpenModels m;
  m.a.emplace(s.model, seed_width);
  s.model = m.a->spec();
  if (is_pair_objective(s.objective)) {
    if (!s.against) throw UsageError("option --objective " + s.objective + " needs --against MODEL2 (or --dtype bf16)");
    ModelSpec b = *s.against;
    if (b.input_shape.empty()) b.input_shape = s.model.input_shape;
    m.b.emplace(b, seed_width);
    s.against = m.b->spec();
    if (m.b->input_dim() != m.a->input_dim())
      throw UsageError("option --against: model file '" + s.against->path + "' takes " +
                       std::to_string(m.b->input_dim()) + " floats per input, model file '" + s.model.path + "' " +
                       std::to_string(m.a->input_dim()));
  } else if (s.against) {
    throw UsageError("option --against is only for --objective disagree or distance[:T], not " + s.objective);
  }
  return m;
}

}  // namespace nnfuzz_cli
