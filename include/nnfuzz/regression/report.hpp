// SPDX-License-Identifier: MIT
// nnfuzz: a release report for candidate versions of a model — per candidate the metrics over
// the data set and over the findings, the gate's verdict, the findings grouped by the first
// diverging tensor, a per-layer error chart (SVG, no library needed) and, for image inputs, a
// picture per finding (seed | found | minimised | magnified difference: PNG, through the encoder
// of regression/png.hpp or your own); plus CSV files.
//
//     nnfuzz::CandidateReport c;
//     c.name = "int8";
//     c.data = nnfuzz::measure_pair(pair, test_images);
//     c.findings = nnfuzz::measure_pair(pair, nnfuzz::finding_inputs(result.findings));
//     c.where = nnfuzz::localize_findings(pair, result.findings, tolerances);
//     c.gate = gate.violations(c.data);
//     c.images.push_back({seeds.row(f.root), f.input, minimised.input});  // per finding, optional
//     nnfuzz::ReportOptions o;
//     o.image = {28, 28, 0.0f, 1.0f};  // rows, cols, pixel range
//     o.write_png = nnfuzz::write_png;  // <nnfuzz/regression/png.hpp> (stb_image_write)
//     nnfuzz::ReportFiles files = nnfuzz::write_regression_report("out/report", {c}, o);
#pragma once

#include "../detail/config.hpp"
#include "../detail/finite.hpp"
#include "localize.hpp"
#include "metrics.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <utility>
#include <sstream>
#include <string>
#include <vector>

namespace nnfuzz {

/// The inputs of one finding, for its picture in the report (rows of the model's input matrix).
struct FindingImages {
  RowVector seed;       ///< the seed its chain started from (the corpus seed `Finding::root`)
  RowVector found;      ///< the finding's input
  RowVector minimised;  ///< minimize()'s result (empty: not minimised, the picture has 3 panels)
};

/// How an input row is drawn as a grey image.
struct ImageShape {
  int rows = 0;     ///< image height in pixels (0: the inputs are not images, no pictures)
  int cols = 0;     ///< image width; rows × cols = the values per input
  float lo = 0.0f;  ///< the value drawn black
  float hi = 1.0f;  ///< the value drawn white
  int zoom = 4;     ///< each pixel drawn zoom × zoom
};

/// An 8-bit grey image, row-major (what a PNG encoder takes).
struct GreyImage {
  int width = 0;                      ///< pixels per row
  int height = 0;                     ///< rows
  std::vector<unsigned char> pixels;  ///< width × height, 0 black … 255 white
};

/// Writes a GreyImage as a PNG file (nnfuzz::write_png of regression/png.hpp, or your own).
using PngWriter = std::function<void(const std::string& path, const GreyImage& image)>;

/// What the report says about one candidate version.
struct CandidateReport {
  std::string name;                   ///< e.g. "int8", "pruned 50%" (file names use a sanitised form)
  RegressionMetrics data;             ///< over the data set (rows 0: not measured)
  RegressionMetrics findings;         ///< over the findings' inputs (rows 0: none)
  std::vector<Localization> where;    ///< one per finding (empty: not localised)
  std::string gate;                   ///< MetricGate::violations() over `data` ("" : passed or no gate)
  bool gated = false;                 ///< a gate was applied (so "" means passed)
  std::vector<FindingImages> images;  ///< per finding, in the order of `where` (empty: no pictures)
};

/// The options of write_regression_report().
struct ReportOptions {
  std::string title = "Regression report";  ///< the report's heading
  ImageShape image;                         ///< how the inputs are drawn (rows 0: no pictures)
  PngWriter write_png;                      ///< the PNG encoder (needed when a candidate has images)
  std::size_t max_pictures = 12;            ///< pictures per candidate at most (the first findings)
};

/// The files write_regression_report() wrote.
struct ReportFiles {
  std::string markdown;               ///< DIR/report.md
  std::string metrics_csv;            ///< DIR/metrics.csv: one row per candidate and set (data, findings)
  std::string layers_csv;             ///< DIR/layers.csv: one row per candidate and tensor
  std::vector<std::string> charts;    ///< DIR/layers-<candidate>.svg, for candidates with localisations
  std::vector<std::string> pictures;  ///< DIR/finding-<candidate>-<i>.png, per finding with images
};

/// The panels side by side (a gap of 2 white pixels between them), each a rows × cols image of
/// one input row drawn from [ranges[i].first, ranges[i].second] to [0, 255], zoom times larger.
/// Throws std::invalid_argument when a panel does not hold rows × cols values.
inline GreyImage side_by_side(const std::vector<RowVector>& panels, const std::vector<std::pair<float, float>>& ranges,
                              int rows, int cols, int zoom = 4) {
  if (rows < 1 || cols < 1 || zoom < 1)
    detail::fail("side_by_side(): an image of ", rows, " x ", cols, " pixels, zoom ", zoom, " (each must be >= 1)");
  if (ranges.size() != panels.size())
    detail::fail("side_by_side(): ", panels.size(), " panels but ", ranges.size(), " ranges");
  const int gap = 2, n = static_cast<int>(panels.size());
  GreyImage img;
  img.width = n * cols * zoom + (n > 0 ? (n - 1) * gap : 0);
  img.height = rows * zoom;
  img.pixels.assign(static_cast<std::size_t>(img.width) * static_cast<std::size_t>(img.height), 255);
  for (int panel = 0; panel < n; ++panel) {
    const RowVector& v = panels[static_cast<std::size_t>(panel)];
    if (v.size() != static_cast<Index>(rows) * cols)
      detail::fail("side_by_side(): panel ", panel, " has ", v.size(), " values, an image of ", rows, " x ", cols,
                   " needs ", static_cast<Index>(rows) * cols);
    const float a = ranges[static_cast<std::size_t>(panel)].first, b = ranges[static_cast<std::size_t>(panel)].second;
    for (int y = 0; y < rows; ++y)
      for (int x = 0; x < cols; ++x) {
        const float u = b > a ? (v(y * cols + x) - a) / (b - a) : 0.0f;
        const float t = detail::is_nan(u) ? 0.0f : std::clamp(u, 0.0f, 1.0f);  // NaN drawn black
        const auto g = static_cast<unsigned char>(std::lround(255 * t));
        for (int dy = 0; dy < zoom; ++dy)
          for (int dx = 0; dx < zoom; ++dx)
            img.pixels[static_cast<std::size_t>((y * zoom + dy) * img.width + panel * (cols * zoom + gap) + x * zoom +
                                                dx)] = g;
      }
  }
  return img;
}

/// The picture of a finding: seed | found | minimised (when given) | |last − seed|, the last
/// panel magnified to fill the grey range (its largest difference drawn white). Throws
/// std::invalid_argument when an input does not hold shape.rows × shape.cols values.
inline GreyImage finding_picture(const RowVector& seed, const RowVector& found, const RowVector& minimised,
                                 const ImageShape& shape) {
  std::vector<RowVector> panels{seed, found};
  if (minimised.size() > 0) panels.push_back(minimised);
  const RowVector& last = panels.back();
  if (last.size() != seed.size())
    detail::fail("finding_picture(): the seed has ", seed.size(), " values, the ",
                 minimised.size() > 0 ? "minimised input " : "finding ", last.size());
  RowVector diff = (last - seed).cwiseAbs();
  const float dmax = std::max(diff.size() > 0 ? diff.maxCoeff() : 0.0f, 1e-6f);
  std::vector<std::pair<float, float>> ranges(panels.size(), {shape.lo, shape.hi});
  panels.push_back(std::move(diff));
  ranges.emplace_back(0.0f, dmax);
  return side_by_side(panels, ranges, shape.rows, shape.cols, shape.zoom);
}

namespace detail {
inline std::string file_safe(const std::string& name) {
  std::string s = name.empty() ? "candidate" : name;
  for (char& c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) c = '_';
  return s;
}
inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}
inline std::string xml_text(const std::string& t) {
  std::string s;
  for (char c : t) s += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return s;
}
inline std::string fmt(double v) {
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}
inline void write_text(const char* fn, const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(fn, ": cannot create '", path, "': ", std::strerror(errno));
  out << text;
  out.flush();
  if (!out) fail(fn, ": cannot write '", path, "'");
}

/// Per tensor (in the order of the first localisation), over the localisations: the mean and the
/// largest max error in units, the median SQNR and how many inputs part there first.
struct LayerSummary {
  std::string name;
  std::string units;
  double mean_units = 0, max_units = 0, median_sqnr_db = 0;
  std::size_t first_here = 0, inputs = 0;
};
inline std::vector<LayerSummary> layer_summaries(const std::vector<Localization>& where) {
  std::vector<LayerSummary> out;
  if (where.empty()) return out;
  for (const TensorDivergence& t : where.front().tensors) {
    LayerSummary s;
    s.name = t.name;
    s.units = t.tolerance.unit_name();
    std::vector<double> sqnr;
    for (const Localization& l : where) {
      for (std::size_t i = 0; i < l.tensors.size(); ++i) {
        const TensorDivergence& u = l.tensors[i];
        if (u.name != t.name) continue;
        s.mean_units += detail::is_finite(u.error.max_units) ? u.error.max_units : 0.0;
        s.max_units = std::max(s.max_units, u.error.max_units);
        if (!detail::is_nan(u.sqnr_db)) sqnr.push_back(u.sqnr_db);
        ++s.inputs;
        if (static_cast<Index>(i) == l.first) ++s.first_here;
      }
    }
    if (s.inputs) s.mean_units /= static_cast<double>(s.inputs);
    s.median_sqnr_db = sqnr.empty() ? std::nan("") : percentile(sqnr, 50);
    out.push_back(s);
  }
  return out;
}

/// A horizontal bar chart of each tensor's mean max error (in its units, log scale when the
/// values span more than two decades), bars over the tolerance in red.
inline std::string layer_chart_svg(const std::string& title, const std::vector<LayerSummary>& layers) {
  const int bar_h = 22, left = 110, width = 360, top = 30;
  const int height = top + bar_h * static_cast<int>(layers.size()) + 30;
  double hi = 0, lo = HUGE_VAL;
  for (const LayerSummary& l : layers) {
    if (detail::is_finite(l.mean_units)) hi = std::max(hi, l.mean_units);
    if (l.mean_units > 0 && detail::is_finite(l.mean_units)) lo = std::min(lo, l.mean_units);
  }
  const bool log_scale = hi > 0 && lo < HUGE_VAL && hi / lo > 100;
  auto length = [&](double v) {
    if (!(v > 0) || hi <= 0) return 0.0;
    if (!detail::is_finite(v)) return static_cast<double>(width);
    if (!log_scale) return width * v / hi;
    const double a = std::log10(lo) - 0.5, b = std::log10(hi);
    return width * std::max(0.02, (std::log10(v) - a) / (b - a));
  };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << left + width + 90 << "\" height=\"" << height
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"4\" y=\"18\" font-weight=\"bold\">" << xml_text(title) << ": mean max error per tensor"
    << (log_scale ? " (log scale)" : "") << "</text>\n";
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const LayerSummary& l = layers[i];
    const int y = top + bar_h * static_cast<int>(i);
    const bool over = l.first_here > 0;
    s << "<text x=\"" << left - 6 << "\" y=\"" << y + 15 << "\" text-anchor=\"end\">" << xml_text(l.name)
      << "</text>\n";
    s << "<rect x=\"" << left << "\" y=\"" << y + 3 << "\" width=\"" << fmt(length(l.mean_units)) << "\" height=\""
      << bar_h - 6 << "\" fill=\"" << (over ? "#c0392b" : "#2e86c1") << "\"/>\n";
    s << "<text x=\"" << left + static_cast<int>(length(l.mean_units)) + 4 << "\" y=\"" << y + 15 << "\">"
      << fmt(l.mean_units) << (l.units[0] ? " " : "") << l.units << "</text>\n";
  }
  s << "<text x=\"4\" y=\"" << height - 8
    << "\" fill=\"#555\">red: the first diverging tensor of some finding</text>\n</svg>\n";
  return s.str();
}
}  // namespace detail

/// Writes the release report of `candidates` into `dir` (created if missing): report.md (per
/// candidate: the metrics over the data set and the findings, the gate's verdict, the findings
/// grouped by first diverging tensor, a per-layer table and chart), metrics.csv (candidate, set,
/// rows, top1_agreement, disagreements, max_abs_logit, mean_abs_logit, kl_mean, kl_p50, kl_p90,
/// kl_p99, kl_max, sqnr_db, non_finite_rows), layers.csv (candidate, tensor, units, inputs,
/// first_diverging, mean_max_error, max_error, median_sqnr_db) and an SVG chart per candidate with
/// localisations; with options.image and options.write_png, a picture per finding that has
/// images (finding_picture(): seed | found | minimised | magnified difference; at most
/// options.max_pictures per candidate), listed under its localisation. Throws
/// std::invalid_argument naming the file it cannot write, or the option a candidate's images need.
inline ReportFiles write_regression_report(const std::string& dir, const std::vector<CandidateReport>& candidates,
                                           const ReportOptions& options) {
  namespace fs = std::filesystem;
  const std::string& title = options.title;
  for (const CandidateReport& c : candidates) {
    if (c.images.empty()) continue;
    if (options.image.rows < 1 || options.image.cols < 1)
      detail::fail("write_regression_report(): candidate '", c.name, "' has ", c.images.size(),
                   " finding images but option 'image' is ", options.image.rows, " x ", options.image.cols,
                   " pixels: give the inputs' image shape");
    if (!options.write_png)
      detail::fail("write_regression_report(): candidate '", c.name, "' has ", c.images.size(),
                   " finding images but option 'write_png' is empty: pass nnfuzz::write_png "
                   "(<nnfuzz/regression/png.hpp>) or your own encoder");
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir, ec))
    detail::fail("write_regression_report(): cannot create the directory '", dir, "'",
                 ec ? ": " + ec.message() : std::string());
  ReportFiles files;
  files.markdown = (fs::path(dir) / "report.md").string();
  files.metrics_csv = (fs::path(dir) / "metrics.csv").string();
  files.layers_csv = (fs::path(dir) / "layers.csv").string();
  std::ostringstream md, mcsv, lcsv;
  mcsv << "candidate,set,rows,top1_agreement,disagreements,max_abs_logit,mean_abs_logit,kl_mean,kl_p50,kl_p90,kl_p99,"
          "kl_max,sqnr_db,non_finite_rows\n";
  lcsv << "candidate,tensor,units,inputs,first_diverging,mean_max_error,max_error,median_sqnr_db\n";
  md << "# " << title << "\n\n";
  auto metrics_row = [&](const std::string& cand, const char* set, const RegressionMetrics& m) {
    using detail::fmt;
    mcsv << detail::csv_field(cand) << "," << set << "," << m.rows << "," << fmt(m.top1_agreement) << ","
         << m.rows - m.agreements << "," << fmt(m.max_abs_logit) << "," << fmt(m.mean_abs_logit) << ","
         << fmt(m.kl_mean) << "," << fmt(m.kl_p50) << "," << fmt(m.kl_p90) << "," << fmt(m.kl_p99) << ","
         << fmt(m.kl_max) << "," << fmt(m.sqnr_db) << "," << m.non_finite_rows << "\n";
    md << "| " << set << " | " << m.rows << " | " << fmt(m.top1_agreement) << " (" << m.rows - m.agreements
       << " differ) | " << fmt(m.max_abs_logit) << " | " << fmt(m.mean_abs_logit) << " | " << fmt(m.kl_p50) << " / "
       << fmt(m.kl_p99) << " / " << fmt(m.kl_max) << " | " << fmt(m.sqnr_db) << " |\n";
  };
  for (const CandidateReport& c : candidates) {
    md << "## " << c.name << "\n\n";
    if (c.gated) md << (c.gate.empty() ? "**Gate: passed.**\n\n" : "**Gate: failed** — " + c.gate + ".\n\n");
    md << "| set | rows | top-1 agreement | max \\|Δ logit\\| | mean \\|Δ logit\\| | KL p50 / p99 / max | SQNR (dB) |\n"
       << "|---|---|---|---|---|---|---|\n";
    if (c.data.rows > 0) metrics_row(c.name, "data", c.data);
    if (c.findings.rows > 0) metrics_row(c.name, "findings", c.findings);
    md << "\n";
    const std::size_t n_pictures = std::min(c.images.size(), options.max_pictures);
    if (n_pictures > 0)
      md << "Findings, the first " << n_pictures << " of " << c.images.size()
         << " (seed | found | minimised | the difference to the seed, magnified):\n\n";
    for (std::size_t i = 0; i < n_pictures; ++i) {
      const FindingImages& f = c.images[i];
      const std::string png = "finding-" + detail::file_safe(c.name) + "-" + std::to_string(i + 1) + ".png";
      files.pictures.push_back((fs::path(dir) / png).string());
      options.write_png(files.pictures.back(), finding_picture(f.seed, f.found, f.minimised, options.image));
      md << "- finding " << i + 1;
      if (i < c.where.size()) md << ": " << c.where[i].describe();
      md << "\n\n  ![finding " << i + 1 << " of " << c.name << "](" << png << ")\n";
    }
    if (n_pictures > 0) md << "\n";
    if (c.where.empty()) {
      md << "No findings localised.\n\n";
      continue;
    }
    md << "Findings by first diverging tensor:\n\n";
    for (const DivergenceGroup& g : group_by_first_tensor(c.where))
      md << "- " << (g.tensor.empty() ? std::string("none over its tolerance") : "`" + g.tensor + "`") << ": "
         << g.count << " finding" << (g.count == 1 ? "" : "s") << "\n";
    md << "\n| tensor | tolerance | mean max error | largest | median SQNR (dB) | first diverging |\n"
       << "|---|---|---|---|---|---|\n";
    const std::vector<detail::LayerSummary> layers = detail::layer_summaries(c.where);
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const detail::LayerSummary& l = layers[i];
      const std::string units = l.units;
      md << "| " << l.name << " | " << c.where.front().tensors[i].tolerance.describe() << " | "
         << detail::fmt(l.mean_units) << (units.empty() ? "" : " " + units) << " | " << detail::fmt(l.max_units)
         << " | " << detail::fmt(l.median_sqnr_db) << " | " << l.first_here << " |\n";
      lcsv << detail::csv_field(c.name) << "," << detail::csv_field(l.name) << "," << (units.empty() ? "abs" : units)
           << "," << l.inputs << "," << l.first_here << "," << detail::fmt(l.mean_units) << ","
           << detail::fmt(l.max_units) << "," << detail::fmt(l.median_sqnr_db) << "\n";
    }
    const std::string chart = "layers-" + detail::file_safe(c.name) + ".svg";
    files.charts.push_back((fs::path(dir) / chart).string());
    detail::write_text("write_regression_report()", files.charts.back(), detail::layer_chart_svg(c.name, layers));
    md << "\n![per-layer error of " << c.name << "](" << chart << ")\n\n";
  }
  detail::write_text("write_regression_report()", files.markdown, md.str());
  detail::write_text("write_regression_report()", files.metrics_csv, mcsv.str());
  detail::write_text("write_regression_report()", files.layers_csv, lcsv.str());
  return files;
}

/// write_regression_report() with the default options and a title (no pictures).
inline ReportFiles write_regression_report(const std::string& dir, const std::vector<CandidateReport>& candidates,
                                           const std::string& title = "Regression report") {
  ReportOptions o;
  o.title = title;
  return write_regression_report(dir, candidates, o);
}

}  // namespace nnfuzz
