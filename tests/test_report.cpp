// SPDX-License-Identifier: MIT
// The release report (regression/report.hpp): its files exist and parse, its pictures decode.
#include <catch2/catch.hpp>
#include <nnfuzz/regression/report.hpp>

// The encoder of regression/png.hpp (stb_image_write, compiled here), and stb_image to decode
// what it wrote. Without stb (libstb-dev) the picture test is left out.
#if __has_include(<stb/stb_image_write.h>) && __has_include(<stb/stb_image.h>)
# define NNFUZZ_TEST_HAVE_STB 1
# define STB_IMAGE_WRITE_IMPLEMENTATION
# include <nnfuzz/regression/png.hpp>
# define STB_IMAGE_IMPLEMENTATION
# include <stb/stb_image.h>
#endif

#include "support/temp_dir.hpp"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace nnfuzz;

namespace {
std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}
std::vector<std::string> fields(const std::string& line) {  // no quoted fields in these files
  std::vector<std::string> out;
  std::stringstream s(line);
  for (std::string f; std::getline(s, f, ',');) out.push_back(f);
  return out;
}
// A localisation over dense1, relu1, logits whose first diverging tensor is `first` (-1: none).
Localization at(Index first) {
  Localization l;
  const char* names[] = {"dense1", "relu1", "logits"};
  for (Index i = 0; i < 3; ++i) {
    TensorDivergence t;
    t.name = names[i];
    t.tolerance = Tolerance::float16(1);
    t.error.size = 4;
    t.error.max_units = i == first ? 3.0 : 0.5;
    t.error.exceeded = i == first ? 1 : 0;
    t.sqnr_db = 40;
    l.tensors.push_back(t);
  }
  l.first = first;
  return l;
}
}  // namespace

TEST_CASE("write_regression_report: report.md, metrics.csv, layers.csv and a chart that parse", "[report]") {
  nnfuzz_test::TempDir tmp("nnfuzz_report");
  RowMatrix a(3, 2), b(3, 2);
  a << 0, 0, 1, 0, 0, 2;
  b << 0, 0, 0, 1, 0, 2;
  CandidateReport half;
  half.name = "float16";
  half.data = logit_metrics(a, b);
  half.findings = logit_metrics(a.middleRows(1, 1), b.middleRows(1, 1));
  half.where = {at(2), at(0), at(2), at(-1)};
  MetricGate gate;
  gate.min_top1_agreement = 0.99;
  half.gate = gate.violations(half.data);
  half.gated = true;
  CandidateReport same;
  same.name = "retrained, v2";  // a comma: quoted in the CSV
  same.data = logit_metrics(a, a);
  same.gated = true;
  const std::string dir = (tmp.dir / "report").string();
  const ReportFiles files = write_regression_report(dir, {half, same}, "digits");

  const std::vector<std::string> m = lines_of(files.metrics_csv);
  REQUIRE(m.size() == 4);  // header, float16 data and findings, the other's data
  CHECK(fields(m[0]).size() == 14);
  CHECK(m[1].rfind("float16,data,3,0.666667,1,1,0.333333,", 0) == 0);
  CHECK(fields(m[1]).size() == 14);
  CHECK(m[2].rfind("float16,findings,1,0,1,", 0) == 0);
  CHECK(m[3].rfind("\"retrained, v2\",data,3,1,0,0,0,", 0) == 0);

  const std::vector<std::string> l = lines_of(files.layers_csv);
  REQUIRE(l.size() == 4);  // header + three tensors of float16
  CHECK(l[0] == "candidate,tensor,units,inputs,first_diverging,mean_max_error,max_error,median_sqnr_db");
  CHECK(l[1] == "float16,dense1,ulps,4,1,1.125,3,40");  // (3 + 0.5 x 3) / 4
  CHECK(l[3] == "float16,logits,ulps,4,2,1.75,3,40");   // (3 + 0.5 + 3 + 0.5) / 4

  std::ifstream md_in(files.markdown);
  const std::string md((std::istreambuf_iterator<char>(md_in)), {});
  CHECK_THAT(
      md, Catch::StartsWith("# digits\n") && Catch::Contains("## float16") &&
              Catch::Contains("**Gate: failed** — top-1 agreement 0.666667 < 0.99") &&
              Catch::Contains("- `dense1`: 1 finding\n- `logits`: 2 findings\n- none over its tolerance: 1 finding") &&
              Catch::Contains("![per-layer error of float16](layers-float16.svg)") &&
              Catch::Contains("## retrained, v2\n\n**Gate: passed.**") && Catch::Contains("No findings localised."));
  REQUIRE(files.charts.size() == 1);
  std::ifstream svg_in(files.charts[0]);
  const std::string svg((std::istreambuf_iterator<char>(svg_in)), {});
  CHECK_THAT(svg, Catch::StartsWith("<svg xmlns=\"http://www.w3.org/2000/svg\"") && Catch::EndsWith("</svg>\n") &&
                      Catch::Contains(">logits</text>") && Catch::Contains("#c0392b"));
  // A directory that cannot be made is named.
  const std::string file = (tmp.dir / "a_file").string();
  std::ofstream(file) << "x";
  CHECK_THROWS_WITH(write_regression_report(file + "/sub", {half}),
                    Catch::Contains("write_regression_report()") && Catch::Contains(file));
}

#ifdef NNFUZZ_TEST_HAVE_STB
TEST_CASE("write_regression_report: a PNG per finding (seed | found | minimised | difference) that decodes",
          "[report]") {
  nnfuzz_test::TempDir tmp("nnfuzz_report_png");
  const int rows = 6, cols = 5, zoom = 3;
  RowVector seed = RowVector::Zero(rows * cols), found = seed, small = seed;
  found(7) = 0.5f;
  found(20) = 1.0f;
  small(20) = 1.0f;  // minimised: one pixel left
  CandidateReport c;
  c.name = "int8";
  c.where = {at(1), at(2)};
  c.images = {{seed, found, small}, {seed, found, RowVector()}};  // the second not minimised: 3 panels
  ReportOptions o;
  o.title = "pictures";
  o.image = {rows, cols, 0.0f, 1.0f, zoom};
  o.write_png = write_png;
  const ReportFiles files = write_regression_report((tmp.dir / "report").string(), {c}, o);
  REQUIRE(files.pictures.size() == 2);
  const int gap = 2;
  for (std::size_t i = 0; i < 2; ++i) {
    int w = 0, h = 0, channels = 0;
    unsigned char* px = stbi_load(files.pictures[i].c_str(), &w, &h, &channels, 1);
    REQUIRE(px != nullptr);
    const int panels = i == 0 ? 4 : 3;
    CHECK(w == panels * cols * zoom + (panels - 1) * gap);
    CHECK(h == rows * zoom);
    CHECK(channels == 1);
    const int panel_w = cols * zoom + gap;
    auto at_px = [&](int panel, int value) {  // the top-left screen pixel of input value `value`
      return px[(value / cols) * zoom * w + panel * panel_w + (value % cols) * zoom];
    };
    CHECK(at_px(0, 20) == 0);             // the seed: black
    CHECK(at_px(1, 20) == 255);           // found: white
    CHECK(at_px(1, 7) == 128);            // found: 0.5, mid-grey
    CHECK(at_px(panels - 1, 20) == 255);  // the difference, magnified: its largest value white
    if (i == 0) CHECK(at_px(3, 7) == 0);  // the minimised input's difference no longer has pixel 7
    stbi_image_free(px);
  }
  std::ifstream md_in(files.markdown);
  const std::string md((std::istreambuf_iterator<char>(md_in)), {});
  CHECK_THAT(md, Catch::Contains("![finding 1 of int8](finding-int8-1.png)") &&
                     Catch::Contains("- finding 2: first diverging tensor: logits"));

  // Images without an encoder, or without an image shape: the option is named.
  ReportOptions no_writer = o;
  no_writer.write_png = nullptr;
  CHECK_THROWS_WITH(
      write_regression_report((tmp.dir / "r2").string(), {c}, no_writer),
      Catch::Contains("write_regression_report()") && Catch::Contains("'write_png'") && Catch::Contains("'int8'"));
  ReportOptions no_shape = o;
  no_shape.image.rows = 0;
  CHECK_THROWS_WITH(write_regression_report((tmp.dir / "r3").string(), {c}, no_shape),
                    Catch::Contains("option 'image' is 0 x 5"));
  // An input of the wrong size for the shape.
  CHECK_THROWS_WITH(finding_picture(seed, found, small, {4, 4, 0.0f, 1.0f, 1}), Catch::Contains("side_by_side()") &&
                                                                                    Catch::Contains("has 30 values") &&
                                                                                    Catch::Contains("needs 16"));
}
#endif
