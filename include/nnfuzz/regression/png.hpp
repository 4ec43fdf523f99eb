// SPDX-License-Identifier: MIT
// nnfuzz: PNG files of the release report's pictures (regression/report.hpp), encoded by
// stb_image_write (Debian: libstb-dev; or any copy of stb_image_write.h on the include path as
// <stb/stb_image_write.h>). Like every stb library it is compiled where one translation unit of
// your program asks for it:
//
//     #define STB_IMAGE_WRITE_IMPLEMENTATION   // in ONE .cpp file, before the include
//     #include <nnfuzz/regression/png.hpp>
//
//     nnfuzz::ReportOptions o;
//     o.image = {28, 28, 0.0f, 1.0f};
//     o.write_png = nnfuzz::write_png;
//     nnfuzz::write_regression_report("out/report", candidates, o);
//
// The rest of nnfuzz never includes this header: the core does not need stb.
#pragma once

#include "../detail/config.hpp"
#include "report.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include <stb/stb_image_write.h>

namespace nnfuzz {

/// Writes `image` as an 8-bit grey PNG file at `path` (stb_image_write). Throws
/// std::invalid_argument naming the file when it cannot be created, encoded or written, or when
/// the image's pixels do not match its size.
inline void write_png(const std::string& path, const GreyImage& image) {
  if (image.width < 1 || image.height < 1 ||
      image.pixels.size() != static_cast<std::size_t>(image.width) * static_cast<std::size_t>(image.height))
    detail::fail("write_png(): '", path, "': an image of ", image.width, " x ", image.height, " pixels holds ",
                 image.pixels.size(), " values");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) detail::fail("write_png(): cannot create '", path, "': ", std::strerror(errno));
  auto append = [](void* os, void* bytes, int n) {
    static_cast<std::ofstream*>(os)->write(static_cast<const char*>(bytes), n);
  };
  if (!stbi_write_png_to_func(append, &out, image.width, image.height, 1, image.pixels.data(), image.width))
    detail::fail("write_png(): stb_image_write cannot encode '", path, "'");
  out.flush();
  if (!out) detail::fail("write_png(): cannot write '", path, "'");
}

}  // namespace nnfuzz
