// SPDX-License-Identifier: MIT
// nnfuzz command-line tool: seed inputs from a directory of PNG images, an IDX file, a .npy
// file or a CSV file, as rows of floats.
#pragma once

#include "shared/scale.hpp"

#include <nnfuzz/fuzz_types.hpp>

#include <string>
#include <vector>

namespace nnfuzz_cli {

/// The value range inputs live in (--scale LO,HI), the experiment drivers' type too: bytes (PNG,
/// IDX, uint8 .npy) map 0..255 onto it; float seeds (.npy, CSV) must already lie in it.
using Scale = nnfuzz_flags::Scale;

/// Parses "LO,HI" (or the names 01 = 0,1 and pm1 = -1,1); throws UsageError naming --scale and the value.
Scale parse_scale(const std::string& text);

/// Seeds read from a file or directory.
struct Seeds {
  nnfuzz::RowMatrix rows;                   ///< one seed per row
  std::vector<std::string> names;           ///< where each row came from ("digit3.png", "row 7", ...)
  int height = 0, width = 0, channels = 0;  ///< image geometry when the seeds are images (PNG, IDX 3-d), else 0
  std::string kind;                         ///< "png", "idx", "npy" or "csv"
};

/// Reads the seeds at `path`: a directory of *.png (sorted by name; gray or RGB, RGB as
/// channel-first planes), an IDX file of unsigned bytes (raw or gzip), a little-endian .npy file
/// (float32, float64 or uint8; C order) or a CSV of numbers (one seed per line; a first line
/// that is not numbers is a header). Throws UsageError naming the file, the row and the value
/// for anything it cannot take (a missing file, no seeds, rows of different widths, a float
/// outside `scale` or not finite).
Seeds load_seeds(const std::string& path, const Scale& scale);

}  // namespace nnfuzz_cli
