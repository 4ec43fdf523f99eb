// SPDX-License-Identifier: MIT
// ocr_blacklist: TensorFuzz's third experiment on a production model nobody here made. PaddleOCR's
// text recogniser (ch_PP-OCRv4_rec_infer.onnx, prepared by scripts/prepare_onnx.py) reads ten
// rendered words; for each, the fuzzer searches within L-inf EPS/255 of the image for one that the
// model reads as a blacklisted word a letter or two away (DEBATE -> DELETE). The recogniser runs
// in OpenCV DNN (OpenCvDnnModel), CtcTextModel decodes its CTC output, BlacklistObjective fires
// on the word and its progress fitness reads the per-step probabilities (char_prob()).
// Coverage: the recogniser's last feature map (swish_17.tmp_0, OpenCV layer onnx_node!p2o.Mul.206).
//
//   ocr_blacklist --rec rec.onnx --keys ppocr_keys_v1.txt [--font DejaVuSans.ttf] [--eps 16]
//                 [--executions 300] [--seed 1] [--batch 10] [--baselines random,fitness,tensorfuzz,default]
//                 [--objective blacklist|differs|misread]   differs: any reading but the word,
//                                                   spaces around it ignored (no fitness);
//                                                   misread: the same, by MisreadObjective (its
//                                                   fitness: the least sure character's doubt)
//                 [--keep-padding]                  mutate the word's columns only (padding stays 0)
//                 [--pictures DIR]                  DIR/<search>-<word>.png per finding: seed | found |
//                                                   difference x 8 (channel 0, the full 320 columns)
// One line per baseline and word, then per baseline: words found (of 10) and the median executions
// to the finding among those found. Exit status: 0; 1 on an error (named).
#define STB_TRUETYPE_IMPLEMENTATION
#include <stb/stb_truetype.h>
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <nnfuzz/regression/png.hpp>

#include <nnfuzz/adapters/opencv_dnn.hpp>
#include <nnfuzz/baselines.hpp>
#include <nnfuzz/objectives/text.hpp>
#include <nnfuzz/targets/ctc_text.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "shared/flags.hpp"
#include "common/text_lines.hpp"

namespace {

// The seed words and the word each must not be read as, fixed before any run: one or two letters
// changed into an English word of the same length.
const char* const kPairs[10][2] = {
    {"DEBATE", "delete"}, {"river", "rover"}, {"coffee", "toffee"}, {"garden", "warden"}, {"market", "marker"},
    {"number", "lumber"}, {"lazy", "hazy"},   {"dog", "dig"},       {"fox", "box"},       {"over", "oven"}};

using Rec = nnfuzz::CtcTextModel<nnfuzz::OpenCvDnnModel>;

// The reading without leading and trailing spaces: noise on the padding right of a word is often
// read as spaces ("DEBATE  "), which --objective differs does not count (rule fixed after a first
// run of random search, before the table's runs).
std::string trimmed(const std::string& t) {
  const auto a = t.find_first_not_of(' ');
  return a == std::string::npos ? std::string() : t.substr(a, t.find_last_not_of(' ') - a + 1);
}

// The recogniser seen through a word's own columns (--keep-padding): the fuzzer's input is the
// 3 x 48 x width pixels PaddleOCR's resize wrote; the padding up to 320 stays 0, as PaddleOCR
// pads after normalising (no camera image has noise there). Rows are expanded into one reused
// 3 x 48 x 320 batch.
class WordColumns {
 public:
  using Output = Rec::Output;
  WordColumns(Rec& rec, int width) : rec_(&rec), width_(width) {}
  nnfuzz::Index input_dim() const { return 3 * 48 * width_; }
  void evaluate(const Eigen::Ref<const nnfuzz::RowMatrix>& x, Output& out) {
    full_.setZero(x.rows(), 3 * 48 * 320);
    for (nnfuzz::Index r = 0; r < x.rows(); ++r)
      for (int line = 0; line < 3 * 48; ++line)
        std::copy_n(x.row(r).data() + line * width_, width_, full_.row(r).data() + line * 320);
    rec_->evaluate(full_, out);
  }
  // The word's columns of a full 3 x 48 x 320 image.
  nnfuzz::RowMatrix crop(const std::vector<float>& img) const {
    nnfuzz::RowMatrix x(1, input_dim());
    for (int line = 0; line < 3 * 48; ++line) std::copy_n(img.data() + line * 320, width_, x.data() + line * width_);
    return x;
  }
  // The word's width in a rendered image: up to the last column holding a non-zero value (its
  // background is white, 1 after normalising; the padding is 0).
  static int word_width(const std::vector<float>& img) {
    int w = 0;
    for (int line = 0; line < 3 * 48; ++line)
      for (int c = 0; c < 320; ++c)
        if (img[static_cast<std::size_t>(line * 320 + c)] != 0.0f) w = std::max(w, c + 1);
    return w;
  }

 private:
  Rec* rec_;
  int width_;
  nnfuzz::RowMatrix full_;
};

// seed | found | |found - seed| x 8, side by side: channel 0 of two full 3 x 48 x 320 inputs in
// [-1, 1] (the three channels of a grey line are equal), 4 white columns between panels.
nnfuzz::GreyImage picture(const nnfuzz::RowMatrix& seed, const nnfuzz::RowMatrix& found) {
  constexpr int kGap = 4, kW = 320, kH = 48;
  nnfuzz::GreyImage g{3 * kW + 2 * kGap, kH, {}};
  g.pixels.assign(static_cast<std::size_t>(g.width * g.height), 255);
  const auto grey = [](float v) { return static_cast<unsigned char>(std::clamp((v + 1.0f) * 127.5f, 0.0f, 255.0f)); };
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) {
      const float a = seed(0, y * kW + x), b = found(0, y * kW + x);
      unsigned char* row = g.pixels.data() + static_cast<std::size_t>(y * g.width);
      row[x] = grey(a);
      row[kW + kGap + x] = grey(b);
      row[2 * (kW + kGap) + x] = static_cast<unsigned char>(255 - std::min(255.0f, std::abs(b - a) * 127.5f * 8));
    }
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ocr_blacklist: make PaddleOCR's recogniser read a blacklisted word near a rendered one"};
  std::string rec_path, keys_path, font_path = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
  float eps = 16;
  std::uint64_t executions = 300, seed = 1;
  nnfuzz::Index batch = 10;
  std::string objective = "blacklist";
  std::vector<nnfuzz::Baseline> baselines(nnfuzz::kBaselines.begin(), nnfuzz::kBaselines.end());
  app.add_option("--rec", rec_path, "the prepared recogniser (scripts/prepare_onnx.py)")->required();
  app.add_option("--keys", keys_path, "ppocr_keys_v1.txt")->required();
  app.add_option("--font", font_path, "TrueType font of the seed words")->capture_default_str();
  app.add_option("--eps", eps, "L-inf radius around the seed, in pixel levels of 255")
      ->check(CLI::Range(1.0f, 255.0f))
      ->capture_default_str();
  nnfuzz_flags::executions(app, executions, "per word");
  nnfuzz_flags::seed(app, seed, "the master seed: word i's run uses seed * 1000 + i");
  nnfuzz_flags::batch(app, batch);
  nnfuzz_flags::baselines(app, baselines);
  app.add_option("--objective", objective,
                 "blacklist: reads the word's blacklisted twin; differs: reads anything but the word; misread: "
                 "the same with a progress fitness (MisreadObjective)")
      ->check(CLI::IsMember({"blacklist", "differs", "misread"}))
      ->capture_default_str();
  bool keep_padding = false;
  app.add_flag("--keep-padding", keep_padding,
               "mutate the word's own columns only; the padding right of it stays 0 (as PaddleOCR pads)");
  std::string pictures;
  app.add_option("--pictures", pictures, "write DIR/<search>-<word>.png per finding: seed | found | difference x 8");
  CLI11_PARSE(app, argc, argv);
  try {
    const ex::Font font(font_path);
    nnfuzz::OpenCvDnnOptions o;
    o.input_shape = {3, 48, 320};
    o.select.coverage = {"onnx_node!p2o.Mul.206"};  // the layer writing swish_17.tmp_0
    o.select.outputs = {"softmax_11.tmp_0"};
    Rec rec(nnfuzz::OpenCvDnnModel(rec_path, o), nnfuzz::CtcTextOptions{"softmax_11.tmp_0", ex::read_keys(keys_path)});
    nnfuzz::BaselineSettings s;
    s.bounds = nnfuzz::MutationBounds{-1.0f, 1.0f, 2.0f * eps / 255.0f};  // PaddleOCR's inputs span [-1, 1]
    Rec::Output out;
    for (nnfuzz::Baseline b : baselines) {
      int found = 0;
      std::vector<std::uint64_t> at;
      for (int i = 0; i < 10; ++i) {
        const std::vector<float> img = ex::render(font.info, kPairs[i][0], 48, 320, false, true);
        WordColumns columns(rec, keep_padding ? WordColumns::word_width(img) : 320);
        const nnfuzz::RowMatrix seeds = columns.crop(img);
        columns.evaluate(seeds, out);
        const std::string seed_reading = out.texts[0];
        nnfuzz::FuzzOptions fo;
        fo.max_executions = executions;
        fo.batch_size = batch;
        fo.seed = seed * 1000 + static_cast<std::uint64_t>(i);
        const auto run = [&seeds](auto& f) { return f.run(seeds); };
        auto search = [&](auto target) { return nnfuzz::with_baseline(b, columns, std::move(target), s, fo, run); };
        const std::string word = kPairs[i][0];
        const nnfuzz::FuzzResult r =
            objective == "blacklist" ? search(nnfuzz::BlacklistObjective({kPairs[i][1]}))
            : objective == "misread"
                ? search(nnfuzz::MisreadObjective(word))
                : search(nnfuzz::TextPredicateObjective([word](const std::string& t) { return trimmed(t) != word; },
                                                        "reads other than '" + word + "'"));
        std::string reading = "-";
        if (!r.findings.empty()) {
          columns.evaluate(r.findings.front().input, out);
          reading = out.texts[0];
          if (!pictures.empty()) {
            const nnfuzz::RowMatrix full_seed = Eigen::Map<const nnfuzz::RowMatrix>(img.data(), 1, 3 * 48 * 320);
            nnfuzz::RowMatrix full_found = full_seed;
            const nnfuzz::RowVector& x = r.findings.front().input;
            for (int line = 0; line < 3 * 48; ++line)  // the word's columns (all 320 without --keep-padding)
              std::copy_n(x.data() + line * (x.size() / 144), x.size() / 144, full_found.data() + line * 320);
            std::filesystem::create_directories(pictures);
            nnfuzz::write_png(pictures + "/" + nnfuzz::baseline_name(b) + "-" + word + ".png",
                              picture(full_seed, full_found));
          }
          ++found;
          at.push_back(r.findings.front().execution);
        }
        std::printf("%-16s %-7s (read '%s') -> %-7s %s at %llu of %llu executions, read '%s'\n",
                    nnfuzz::baseline_label(b), kPairs[i][0], seed_reading.c_str(),
                    objective == "blacklist" ? kPairs[i][1] : "other", r.findings.empty() ? "not found" : "found",
                    static_cast<unsigned long long>(r.findings.empty() ? 0 : r.findings.front().execution),
                    static_cast<unsigned long long>(r.stats.executions), reading.c_str());
      }
      std::sort(at.begin(), at.end());
      std::printf("== %s: %d of 10 words, median executions to a finding %llu (eps %g/255, %llu per word, seed %llu)\n",
                  nnfuzz::baseline_label(b), found, static_cast<unsigned long long>(at.empty() ? 0 : at[at.size() / 2]),
                  eps, static_cast<unsigned long long>(executions), static_cast<unsigned long long>(seed));
      std::fflush(stdout);
    }
    ex::check_stdout();
  } catch (const std::exception& e) {
    std::cerr << "ocr_blacklist: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
