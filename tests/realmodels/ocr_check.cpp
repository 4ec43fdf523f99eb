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

std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path + "'");
  return {std::istreambuf_iterator<char>(in), {}};
}

// A word in 32-pixel DejaVu glyphs, black on white, as a grey image cropped to the font's line box
// (ascent to descent) and 4 pixels either side of the ink: what a detector's text box gives.
struct Gray {
  int h = 0, w = 0;
  std::vector<unsigned char> px;
};
Gray draw(const stbtt_fontinfo& font, const std::string& word) {
  const float scale = stbtt_ScaleForPixelHeight(&font, 32.0f);
  int ascent = 0, descent = 0, gap = 0;
  stbtt_GetFontVMetrics(&font, &ascent, &descent, &gap);
  const int top = static_cast<int>(ascent * scale), height = top - static_cast<int>(descent * scale) + 1;
  const int width = 40 * static_cast<int>(word.size()) + 16;
  Gray g{height, width, std::vector<unsigned char>(static_cast<std::size_t>(height * width), 255)};
  float x = 4;
  int ink_lo = width, ink_hi = 0;
  for (std::size_t i = 0; i < word.size(); ++i) {
    int advance = 0, lsb = 0, x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    stbtt_GetCodepointHMetrics(&font, word[i], &advance, &lsb);
    stbtt_GetCodepointBitmapBox(&font, word[i], scale, scale, &x0, &y0, &x1, &y1);
    const int gw = x1 - x0, gh = y1 - y0;
    std::vector<unsigned char> glyph(static_cast<std::size_t>(std::max(gw * gh, 1)));
    stbtt_MakeCodepointBitmap(&font, glyph.data(), gw, gh, gw, scale, scale, word[i]);
    for (int r = 0; r < gh; ++r)
      for (int c = 0; c < gw; ++c) {
        const int yy = top + y0 + r, xx = static_cast<int>(x) + x0 + c;
        const unsigned char ink = glyph[static_cast<std::size_t>(r * gw + c)];
        if (yy < 0 || yy >= height || xx < 0 || xx >= width || ink == 0) continue;
        unsigned char& p = g.px[static_cast<std::size_t>(yy * width + xx)];
        p = static_cast<unsigned char>(std::min<int>(p, 255 - ink));
        ink_lo = std::min(ink_lo, xx);
        ink_hi = std::max(ink_hi, xx);
      }
    x += advance * scale;
    if (i + 1 < word.size()) x += scale * stbtt_GetCodepointKernAdvance(&font, word[i], word[i + 1]);
  }
  const int lo = std::max(0, ink_lo - 4), hi = std::min(width - 1, ink_hi + 4);
  Gray c{height, hi - lo + 1, {}};
  for (int r = 0; r < height; ++r)
    for (int col = lo; col <= hi; ++col) c.px.push_back(g.px[static_cast<std::size_t>(r * width + col)]);
  return c;
}

// The model's input, 3 x H x W in [-1, 1] ((x / 255 - 0.5) / 0.5), one of two ways:
//  - `paddle` false: the line at its drawn size (32-pixel glyphs), left-aligned on white;
//  - `paddle` true: PaddleOCR's own preprocessing (predict_cls.py / predict_rec.py
//    resize_norm_img): resized to height H keeping its aspect ratio, width min(ceil(H * w / h), W)
//    (bilinear), normalised, the rest of the width 0.
// `rotate`: turned 180 degrees first.
std::vector<float> render(const stbtt_fontinfo& font, const std::string& word, int H, int W, bool rotate, bool paddle) {
  Gray g = draw(font, word);
  if (rotate) std::reverse(g.px.begin(), g.px.end());
  std::vector<float> plane(static_cast<std::size_t>(H * W), paddle ? 0.0f : 1.0f);
  const auto norm = [](float v) { return (v / 255.0f - 0.5f) / 0.5f; };
  if (!paddle) {
    if (g.w + 8 > W || g.h > H)
      throw std::runtime_error("'" + word + "' does not fit " + std::to_string(W) + " pixels");
    const int y0 = (H - g.h) / 2;
    for (int r = 0; r < g.h; ++r)
      for (int c = 0; c < g.w; ++c)
        plane[static_cast<std::size_t>((y0 + r) * W + 4 + c)] = norm(g.px[static_cast<std::size_t>(r * g.w + c)]);
  } else {
    const int rw = std::min(W, static_cast<int>(std::ceil(H * static_cast<double>(g.w) / g.h)));
    for (int r = 0; r < H; ++r)
      for (int c = 0; c < rw; ++c) {  // bilinear, pixel centres aligned (cv::resize's INTER_LINEAR)
        const double sy = std::clamp((r + 0.5) * g.h / H - 0.5, 0.0, g.h - 1.0);
        const double sx = std::clamp((c + 0.5) * g.w / rw - 0.5, 0.0, g.w - 1.0);
        const int y = static_cast<int>(sy), x = static_cast<int>(sx);
        const int y1 = std::min(y + 1, g.h - 1), x1 = std::min(x + 1, g.w - 1);
        const double fy = sy - y, fx = sx - x;
        const auto at = [&g](int yy, int xx) {
          return static_cast<double>(g.px[static_cast<std::size_t>(yy * g.w + xx)]);
        };
        const double v =
            (1 - fy) * ((1 - fx) * at(y, x) + fx * at(y, x1)) + fy * ((1 - fx) * at(y1, x) + fx * at(y1, x1));
        plane[static_cast<std::size_t>(r * W + c)] = norm(static_cast<float>(v));
      }
  }
  std::vector<float> out;
  for (int ch = 0; ch < 3; ++ch) out.insert(out.end(), plane.begin(), plane.end());
  return out;
}

nnfuzz::RowMatrix batch_of(const stbtt_fontinfo& font, int H, int W, bool rotate, bool paddle) {
  nnfuzz::RowMatrix b(20, 3 * H * W);
  for (int i = 0; i < 20; ++i) {
    const std::vector<float> v = render(font, kWords[i], H, W, rotate, paddle);
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
    const std::vector<unsigned char> ttf = read_bytes(argv[4]);
    stbtt_fontinfo font;
    if (!stbtt_InitFont(&font, ttf.data(), stbtt_GetFontOffsetForIndex(ttf.data(), 0)))
      throw std::runtime_error(std::string("'") + argv[4] + "' is not a TrueType font");
    std::vector<std::string> keys{""};  // 0: the CTC blank
    {
      std::ifstream in(argv[3]);
      if (!in) throw std::runtime_error(std::string("cannot read '") + argv[3] + "'");
      for (std::string line; std::getline(in, line);) keys.push_back(line);
      keys.push_back(" ");
    }

    auto cls = model(argv[1], {3, 48, 192}, "softmax_0.tmp_0");
    auto rec = model(argv[2], {3, 48, 320}, "softmax_11.tmp_0");
    nnfuzz::OpenCvDnnModel::Output out;
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
      // Recognition, greedy CTC: the best class per step, repeats merged, blanks dropped.
      rec.evaluate(batch_of(font, 48, 320, false, paddle), out);
      const nnfuzz::RowMatrix& p = out["softmax_11.tmp_0"];
      const auto classes = static_cast<nnfuzz::Index>(keys.size());
      if (p.cols() % classes != 0)
        throw std::runtime_error("rec output has " + std::to_string(p.cols()) + " values per input, not T x " +
                                 std::to_string(classes));
      int exact = 0;
      for (int i = 0; i < 20; ++i) {
        std::string text;
        nnfuzz::Index last = 0;
        for (nnfuzz::Index step = 0; step < p.cols() / classes; ++step) {
          nnfuzz::Index k = 0;
          p.row(i).segment(step * classes, classes).maxCoeff(&k);
          if (k != 0 && k != last) text += keys[static_cast<std::size_t>(k)];
          last = k;
        }
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
