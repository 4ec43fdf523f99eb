// SPDX-License-Identifier: MIT
// libFuzzer harness: nnfuzz::load_mnist_dir on a directory holding a train-images and a
// train-labels file cut from the input (layout: nnfuzz_fuzz::mnist_header in fuzz_support.hpp).
// A rejection must be std::invalid_argument; anything else is a bug.
#include <nnfuzz/data/idx.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace nnfuzz_fuzz;
  if (size < mnist_header) return 0;
  static TempDir dir("mnist");
  dir.reset();
  const std::uint8_t flags = data[0];
  const std::size_t n = std::uint32_t{data[1]} | (std::uint32_t{data[2]} << 8) | (std::uint32_t{data[3]} << 16) |
                        (std::uint32_t{data[4]} << 24);
  const std::uint8_t* images = data + mnist_header;
  const std::size_t image_bytes = std::min(n, size - mnist_header);
  const auto image_names = nnfuzz::detail::mnist_names(nnfuzz::Split::train, "images");
  const auto label_names = nnfuzz::detail::mnist_names(nnfuzz::Split::train, "labels");
  dir.write(image_names[flags & 3], images, image_bytes);
  if (!(flags & mnist_no_labels))
    dir.write(label_names[(flags >> 2) & 3], images + image_bytes, size - mnist_header - image_bytes);
  try {
    const nnfuzz::Dataset d = nnfuzz::load_mnist_dir(dir.path(), nnfuzz::Split::train);
    // An accepted data set must be consistent.
    if (d.images.rows() != d.labels.size() || d.images.cols() != static_cast<nnfuzz::Index>(d.rows) * d.cols ||
        d.rows <= 0 || d.cols <= 0)
      std::abort();
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
