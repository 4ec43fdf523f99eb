// SPDX-License-Identifier: MIT
// Seed readers of the command-line tool (see seeds.hpp). PNG through stb_image (Debian's
// libstb-dev), IDX through nnfuzz's data/idx.hpp, .npy through a small strict reader (xtensor's
// is not packaged with Debian's libxtensor-dev here), CSV by hand.
#include "seeds.hpp"

#include "engine.hpp"

#include <nnfuzz/data/idx.hpp>

#include <stb/stb_image.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace nnfuzz_cli {

namespace fs = std::filesystem;
using nnfuzz::RowMatrix;

Scale parse_scale(const std::string& text) {
  try {
    return Scale::parse(text);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

namespace {

float from_byte(unsigned v, const Scale& s) { return s.lo + (s.hi - s.lo) * (static_cast<float>(v) / 255.0f); }

void check_range(const std::string& path, const std::string& where, float v, const Scale& s) {
  if (!std::isfinite(v) || v < s.lo || v > s.hi) {
    std::ostringstream m;
    m << "seeds '" << path << "': " << where << " holds " << v << ", outside the input range [" << s.lo << ", " << s.hi
      << "] (--scale sets the range; bytes are mapped onto it, floats must already lie in it)";
    throw UsageError(m.str());
  }
}

Seeds load_pngs(std::vector<fs::path> files, const Scale& scale);

Seeds load_png_dir(const std::string& dir, const Scale& scale) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string ext = it->path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (ext == ".png") files.push_back(it->path());
  }
  if (ec) throw UsageError("seeds directory '" + dir + "' cannot be listed: " + ec.message());
  if (files.empty()) throw UsageError("seeds directory '" + dir + "' holds no .png file");
  std::sort(files.begin(), files.end());
  return load_pngs(files, scale);
}

Seeds load_pngs(std::vector<fs::path> files, const Scale& scale) {
  Seeds s;
  s.kind = "png";
  // Gray unless some image has colour: then every image is read as RGB.
  int want = 1;
  for (const fs::path& f : files) {
    int w = 0, h = 0, c = 0;
    if (!stbi_info(f.string().c_str(), &w, &h, &c))
      throw UsageError("seed image '" + f.string() + "' is not a PNG stb_image can read: " + stbi_failure_reason());
    if (c >= 3) want = 3;
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    int w = 0, h = 0, c = 0;
    unsigned char* px = stbi_load(files[i].string().c_str(), &w, &h, &c, want);
    if (!px) throw UsageError("seed image '" + files[i].string() + "' cannot be read: " + stbi_failure_reason());
    if (i == 0) {
      s.width = w;
      s.height = h;
      s.channels = want;
      s.rows.resize(static_cast<Index>(files.size()), static_cast<Index>(w) * h * want);
    } else if (w != s.width || h != s.height) {
      stbi_image_free(px);
      throw UsageError("seed image '" + files[i].string() + "' is " + std::to_string(w) + "x" + std::to_string(h) +
                       ", the first one ('" + files[0].string() + "') " + std::to_string(s.width) + "x" +
                       std::to_string(s.height) + ": all seeds must have one size");
    }
    const Index plane = static_cast<Index>(w) * h;
    for (Index p = 0; p < plane; ++p)
      for (int ch = 0; ch < want; ++ch)  // channel-first planes (NCHW), as exported CNNs take them
        s.rows(static_cast<Index>(i), ch * plane + p) = from_byte(px[p * want + ch], scale);
    stbi_image_free(px);
    s.names.push_back(files[i].filename().string());
  }
  return s;
}

Seeds load_idx_file(const std::string& path, const Scale& scale) {
  nnfuzz::IdxArray a;
  try {
    a = nnfuzz::read_idx(path);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("seeds: ") + e.what());
  }
  Seeds s;
  s.kind = "idx";
  const Index n = a.dims.size() == 1 ? 1 : static_cast<Index>(a.dims[0]);
  const Index d = static_cast<Index>(a.data.size()) / n;
  if (a.dims.size() == 3) {
    s.height = static_cast<int>(a.dims[1]);
    s.width = static_cast<int>(a.dims[2]);
    s.channels = 1;
  }
  s.rows.resize(n, d);
  for (Index i = 0; i < n; ++i) {
    for (Index j = 0; j < d; ++j) s.rows(i, j) = from_byte(a.data[static_cast<std::size_t>(i * d + j)], scale);
    s.names.push_back("item " + std::to_string(i));
  }
  return s;
}

// A strict .npy reader: version 1-3, little-endian float32/float64/uint8, C order, 1-d (one
// seed) or N-d (N seeds of the product of the other dimensions).
Seeds load_npy(const std::string& path, const Scale& scale) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("seeds file '" + path + "' cannot be opened");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& why) {
    return UsageError("seeds file '" + path + "' is not a .npy file nnfuzz reads: " + why);
  };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw bad("no \\x93NUMPY magic");
  const int major = static_cast<unsigned char>(bytes[6]);
  std::size_t hlen = 0, start = 0;
  if (major == 1) {
    hlen = static_cast<unsigned char>(bytes[8]) | (static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw bad("truncated header");
    for (int k = 0; k < 4; ++k) hlen |= static_cast<std::size_t>(static_cast<unsigned char>(bytes[8 + k])) << (8 * k);
    start = 12;
  } else {
    throw bad("format version " + std::to_string(major));
  }
  if (start + hlen > bytes.size()) throw bad("header of " + std::to_string(hlen) + " bytes is truncated");
  const std::string header = bytes.substr(start, hlen);
  auto value_of = [&](const std::string& key) {
    const auto k = header.find("'" + key + "'");
    if (k == std::string::npos) throw bad("header has no '" + key + "'");
    auto v = header.find(':', k);
    if (v == std::string::npos) throw bad("header entry '" + key + "' has no value");
    ++v;
    while (v < header.size() && header[v] == ' ') ++v;
    return v;
  };
  std::size_t v = value_of("descr");
  const auto q = header.find('\'', v + 1);
  if (header[v] != '\'' || q == std::string::npos) throw bad("unreadable 'descr'");
  const std::string descr = header.substr(v + 1, q - v - 1);
  int width = 0;
  if (descr == "<f4")
    width = 4;
  else if (descr == "<f8")
    width = 8;
  else if (descr == "|u1" || descr == "<u1")
    width = 1;
  else
    throw bad("dtype '" + descr + "' (float32 '<f4', float64 '<f8' or uint8 '|u1')");
  v = value_of("fortran_order");
  if (header.compare(v, 5, "False") != 0) throw bad("fortran_order is not False (save a C-ordered array)");
  v = value_of("shape");
  const auto close = header.find(')', v);
  if (header[v] != '(' || close == std::string::npos) throw bad("unreadable 'shape'");
  std::vector<std::uint64_t> dims;
  std::stringstream ss(header.substr(v + 1, close - v - 1));
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto a = item.find_first_not_of(' ');
    if (a == std::string::npos) continue;
    try {
      std::size_t used = 0;
      dims.push_back(std::stoull(item.substr(a), &used));
    } catch (const std::exception&) {
      throw bad("shape entry '" + item + "'");
    }
  }
  if (dims.empty()) throw bad("a 0-d array (no seeds)");
  std::uint64_t count = 1;
  for (std::uint64_t d : dims) {
    if (d == 0) throw bad("a dimension is 0 (no seeds)");
    if (count > (std::uint64_t{1} << 40) / d) throw bad("shape too large");
    count *= d;
  }
  const std::size_t data = start + hlen;
  if (bytes.size() - data != count * static_cast<std::uint64_t>(width))
    throw bad("shape and dtype need " + std::to_string(count * static_cast<std::uint64_t>(width)) +
              " bytes of data, the file holds " + std::to_string(bytes.size() - data));
  const Index n = dims.size() == 1 ? 1 : static_cast<Index>(dims[0]);
  const Index d = static_cast<Index>(count) / n;
  Seeds s;
  s.kind = "npy";
  if (dims.size() == 3) {
    s.height = static_cast<int>(dims[1]);
    s.width = static_cast<int>(dims[2]);
    s.channels = 1;
  }
  s.rows.resize(n, d);
  const char* p = bytes.data() + data;
  for (Index i = 0; i < n; ++i) {
    for (Index j = 0; j < d; ++j) {
      const std::size_t at = static_cast<std::size_t>(i * d + j);
      float x = 0;
      if (width == 1) {
        x = from_byte(static_cast<unsigned char>(p[at]), scale);
      } else if (width == 4) {
        std::memcpy(&x, p + at * 4, 4);
      } else {
        double y = 0;
        std::memcpy(&y, p + at * 8, 8);
        x = static_cast<float>(y);
      }
      if (width != 1) check_range(path, "seed " + std::to_string(i) + ", value " + std::to_string(j), x, scale);
      s.rows(i, j) = x;
    }
    s.names.push_back("row " + std::to_string(i));
  }
  return s;
}

Seeds load_csv(const std::string& path, const Scale& scale) {
  std::ifstream in(path);
  if (!in) throw UsageError("seeds file '" + path + "' cannot be opened");
  std::vector<std::vector<float>> rows;
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    std::vector<float> row;
    std::stringstream ss(line);
    std::string cell;
    bool numeric = true;
    while (std::getline(ss, cell, ',')) {
      try {
        std::size_t used = 0;
        const float x = std::stof(cell, &used);
        if (cell.find_first_not_of(" \t", used) != std::string::npos) throw std::invalid_argument("");
        row.push_back(x);
      } catch (const std::exception&) {
        if (std::isnan(std::strtof(cell.c_str(), nullptr)) && cell.find("nan") != std::string::npos) {
          row.push_back(std::nanf(""));
          continue;
        }
        if (rows.empty() && number == 1) {
          numeric = false;  // a header line
          break;
        }
        throw UsageError("seeds file '" + path + "': line " + std::to_string(number) + ": '" + cell +
                         "' is not a number");
      }
    }
    if (!numeric) continue;
    if (!rows.empty() && row.size() != rows[0].size())
      throw UsageError("seeds file '" + path + "': line " + std::to_string(number) + " has " +
                       std::to_string(row.size()) + " values, the first row " + std::to_string(rows[0].size()));
    for (std::size_t j = 0; j < row.size(); ++j)
      check_range(path, "line " + std::to_string(number) + ", column " + std::to_string(j + 1), row[j], scale);
    rows.push_back(std::move(row));
  }
  if (rows.empty()) throw UsageError("seeds file '" + path + "' holds no rows of numbers");
  Seeds s;
  s.kind = "csv";
  s.rows.resize(static_cast<Index>(rows.size()), static_cast<Index>(rows[0].size()));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (std::size_t j = 0; j < rows[i].size(); ++j) s.rows(static_cast<Index>(i), static_cast<Index>(j)) = rows[i][j];
    s.names.push_back("line " + std::to_string(i + 1));
  }
  return s;
}

}  // namespace

Seeds load_seeds(const std::string& path, const Scale& scale) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) throw UsageError("option --seeds: '" + path + "' does not exist");
  if (fs::is_directory(st)) return load_png_dir(path, scale);
  std::string name = fs::path(path).filename().string();
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto ends = [&](const std::string& e) {
    return name.size() >= e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0;
  };
  if (ends(".npy")) return load_npy(path, scale);
  if (ends(".csv") || ends(".txt")) return load_csv(path, scale);
  if (ends(".png")) {
    return load_pngs({fs::path(path)}, scale);  // one image
  }
  // Anything else: IDX (MNIST's names have no extension, or end in -ubyte, .idx, .gz).
  return load_idx_file(path, scale);
}

}  // namespace nnfuzz_cli
