// SPDX-License-Identifier: MIT
// The release report (regression/report.hpp): its files exist and parse.
#include <catch2/catch.hpp>
#include <nnfuzz/regression/report.hpp>

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
