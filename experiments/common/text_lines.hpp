// SPDX-License-Identifier: MIT
// Text lines for PaddleOCR's models: a word drawn in a TrueType font (stb_truetype.h) and turned
// into the models' input, either at its drawn size or by PaddleOCR's own preprocessing. Shared by
// tests/realmodels/ocr_check.cpp and experiments/ocr_blacklist.cpp. Include it in one
// translation unit after `#define STB_TRUETYPE_IMPLEMENTATION` and <stb/stb_truetype.h>.
#pragma once

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace ex {

/// A font file read whole, and stb_truetype's view of it.
struct Font {
  std::vector<unsigned char> ttf;
  stbtt_fontinfo info{};
  /// Reads `path`; throws std::runtime_error naming it when it cannot be read or is no font.
  explicit Font(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read font '" + path + "'");
    ttf.assign(std::istreambuf_iterator<char>(in), {});
    if (ttf.empty() || !stbtt_InitFont(&info, ttf.data(), stbtt_GetFontOffsetForIndex(ttf.data(), 0)))
      throw std::runtime_error("'" + path + "' is not a TrueType font");
  }
  Font(const Font&) = delete;  // info points into ttf
  Font& operator=(const Font&) = delete;
};

// A word in 32-pixel DejaVu glyphs, black on white, as a grey image cropped to the font's line box
// (ascent to descent) and 4 pixels either side of the ink: what a detector's text box gives.
struct Gray {
  int h = 0, w = 0;
  std::vector<unsigned char> px;
};
inline Gray draw(const stbtt_fontinfo& font, const std::string& word) {
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
inline std::vector<float> render(const stbtt_fontinfo& font, const std::string& word, int H, int W, bool rotate,
                                 bool paddle) {
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

/// PaddleOCR's ppocr_keys_v1.txt as CTC classes after the blank: its lines, then " ".
inline std::vector<std::string> read_keys(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read the key file '" + path + "'");
  std::vector<std::string> keys;
  for (std::string line; std::getline(in, line);) keys.push_back(line);
  if (keys.empty()) throw std::runtime_error("the key file '" + path + "' is empty");
  keys.push_back(" ");
  return keys;
}

}  // namespace ex
