// SPDX-License-Identifier: MIT
// Do PaddleOCR's prepared models (scripts/prepare_onnx.py) answer right through OpenCvDnnModel?
// Renders 20 English words (DejaVu Sans through stb_truetype, black on white), runs them as one
// batch per model, and checks, with the thresholds of issue #35 fixed before the runs:
//   cls (48 x 192): 0 degrees for >= 19 of the 20 upright lines, 180 for >= 19 of them rotated;
//   rec (48 x 320): greedy CTC over ppocr_keys_v1.txt (blank 0, the keys, then ' ') reads >= 18
//   of the 20 words exactly.
// Two inputs are measured: the line at its drawn size, and PaddleOCR's own preprocessing
// (resize to height 48, pad with 0); the verdict is the latter's, the models' convention. (The
// first version drew the word at x = 8 on a white 48 x 192 line, uncropped: cls 18/20 upright,
// 'quick' and 'dog' read as 180 degrees, 20/20 rotated; rec 19/20, 'coffee' read 'Coffee'.)
// It prints whether those targets are met; its exit status (0, or 1 below 16/20 on any count, 2 an
// error) is a floor for CI, see kFloor.
//   ocr_check CLS.onnx REC.onnx ppocr_keys_v1.txt FONT.ttf
#define STB_TRUETYPE_IMPLEMENTATION
#include <stb/stb_truetype.h>

#include <nnfuzz/adapters/opencv_dnn.hpp>
#include <nnfuzz/targets/ctc_text.hpp>

#include "common/text_lines.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

const char* const kWords[20] = {"the",    "quick",  "brown",  "fox",    "jumps",  "over",   "lazy",
                                "dog",    "river",  "coffee", "window", "garden", "silver", "planet",
                                "orange", "market", "doctor", "number", "DEBATE", "DELETE"};

nnfuzz::RowMatrix batch_of(const stbtt_fontinfo& font, int H, int W, bool rotate, bool paddle) {
  nnfuzz::RowMatrix b(20, 3 * H * W);
  for (int i = 0; i < 20; ++i) {
    const std::vector<float> v = ex::render(font, kWords[i], H, W, rotate, paddle);
    std::copy(v.begin(), v.end(), b.row(i).data());
  }
  return b;
}

nnfuzz::OpenCvDnnModel model(const std::string& path, std::vector<int> shape, const std::string& output) {
  nnfuzz::OpenCvDnnOptions o;
  o.input_shape = std::move(shape);
  o.select.coverage = {output};
  return nnfuzz::OpenCvDnnModel(path, o);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: ocr_check CLS.onnx REC.onnx ppocr_keys_v1.txt FONT.ttf\n";
    return 2;
  }
  try {
    const ex::Font font_file(argv[4]);
    const stbtt_fontinfo& font = font_file.info;
    auto cls = model(argv[1], {3, 48, 192}, "softmax_0.tmp_0");
    // The recogniser decoded by CtcTextModel (greedy CTC: the best class per step, repeats
    // merged, blanks dropped), as the fuzzing experiment uses it.
    nnfuzz::CtcTextModel<nnfuzz::OpenCvDnnModel> rec(
        model(argv[2], {3, 48, 320}, "softmax_11.tmp_0"),
        nnfuzz::CtcTextOptions{"softmax_11.tmp_0", ex::read_keys(argv[3])});
    nnfuzz::OpenCvDnnModel::Output out;
    nnfuzz::CtcTextModel<nnfuzz::OpenCvDnnModel>::Output read;
    // The exit status is a floor, not the target: a broken preparation or batch reads chance
    // (~10/20 for cls, ~0/20 for rec), and one borderline line (measured: 'dog' upright at
    // p = 0.498 / 0.502) must not fail CI on another CPU's kernels.
    constexpr int kFloor = 16;
    bool met = false;
    for (bool paddle : {false, true}) {
      const char* how = paddle ? "PaddleOCR's resize" : "drawn size";
      // Text direction, as one batch of 20 per orientation.
      int upright = 0, rotated = 0;
      for (bool rotate : {false, true}) {
        cls.evaluate(batch_of(font, 48, 192, rotate, paddle), out);
        const nnfuzz::RowMatrix& p = out["softmax_0.tmp_0"];
        for (int i = 0; i < 20; ++i) {
          const bool right = (p(i, 1) > p(i, 0)) == rotate;
          (rotate ? rotated : upright) += right;
          if (!right)
            std::printf("ocr_check: [%s] cls read '%s'%s as %s (p = %.3f, %.3f)\n", how, kWords[i],
                        rotate ? " rotated" : "", rotate ? "0 degrees" : "180 degrees", p(i, 0), p(i, 1));
        }
      }
      // Recognition.
      rec.evaluate(batch_of(font, 48, 320, false, paddle), read);
      int exact = 0;
      for (int i = 0; i < 20; ++i) {
        const std::string& text = read.texts[static_cast<std::size_t>(i)];
        exact += text == kWords[i];
        if (text != kWords[i]) std::printf("ocr_check: [%s] rec read '%s' as '%s'\n", how, kWords[i], text.c_str());
      }
      std::printf(
          "ocr_check: [%s] cls: %d/20 upright lines as 0 degrees, %d/20 rotated as 180; rec: %d/20 words "
          "exactly\n",
          how, upright, rotated, exact);
      // The verdict is PaddleOCR's own preprocessing (the models' input convention).
      if (paddle) {
        std::printf("ocr_check: issue #35's targets (cls >= 19/20 both ways, rec >= 18/20): %s\n",
                    upright >= 19 && rotated >= 19 && exact >= 18 ? "met" : "NOT met");
        met = upright >= kFloor && rotated >= kFloor && exact >= kFloor;
      }
    }
    return met ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "ocr_check: " << e.what() << "\n";
    return 2;
  }
}
