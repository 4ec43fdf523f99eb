// SPDX-License-Identifier: MIT
// nnfuzz: IDX file I/O (the MNIST format) and MNIST-style datasets.
//
// Only unsigned-byte IDX (type code 0x08) is supported: it is what MNIST, Fashion-MNIST and
// EMNIST ship, and it is all nnfuzz needs for seed corpora. Files may be raw or gzip
// compressed; gzip is detected by its magic bytes, never by the file name.
//
// The reader treats every file as untrusted: it validates the header, never allocates more
// than the header promises, and never allocates a large buffer the file cannot back (a
// 20-byte file claiming 2 GB of data fails without allocating 2 GB).
//
// Needs zlib (link with -lz).
#pragma once

#include "../detail/binary_file.hpp"
#include "../detail/config.hpp"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#if defined(_WIN32)
# include <process.h>
#else
# include <unistd.h>
#endif

namespace nnfuzz {

/// An unsigned-byte IDX array: `dims` (outermost first) and the bytes in row-major order.
/// A valid array has 1 to 4 dimensions, none of them 0, and `data.size()` equal to their
/// product.
struct IdxArray {
  /// Sizes of the dimensions, outermost first (e.g. {N, 28, 28} for MNIST images).
  std::vector<std::uint32_t> dims;
  /// Row-major elements (the last dimension varies fastest).
  std::vector<std::uint8_t> data;
};

namespace detail {

/// IDX allows at most this many bytes of data: far above any real data set, and low enough
/// that a corrupted header cannot ask for an absurd allocation.
constexpr std::uint64_t idx_max_bytes = std::uint64_t{1} << 31;
/// IDX stores the number of dimensions in one byte; more than 4 is never a real data set.
constexpr std::size_t idx_max_dims = 4;
/// Read granularity: the buffer for input of unknown size (gzip, pipes) starts at this size
/// and doubles as data arrives; also the most one inflate()/gzwrite call handles.
constexpr std::size_t idx_chunk = std::size_t{1} << 20;

/// "0x0D" for 13.
inline std::string hex_byte(unsigned v) {
  static const char digits[] = "0123456789ABCDEF";
  return std::string("0x") + digits[(v >> 4) & 0xF] + digits[v & 0xF];
}

/// Human name of an IDX type code, for error messages.
inline const char* idx_type_name(unsigned code) {
  switch (code) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "short";
    case 0x0C:
      return "int";
    case 0x0D:
      return "float";
    case 0x0E:
      return "double";
    default:
      return "not an IDX type";
  }
}

/// "60000 x 28 x 28".
inline std::string dims_string(const std::vector<std::uint32_t>& dims) {
  std::string s;
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? " x " : "") + std::to_string(dims[i]);
  return s;
}

/// Product of the dims, or 0 if it exceeds idx_max_bytes (checked per step, so it cannot
/// overflow even with four dims of 2^32 - 1).
inline std::uint64_t idx_element_count(const std::vector<std::uint32_t>& dims) {
  std::uint64_t n = 1;
  for (std::uint32_t d : dims) {
    if (d == 0) return 0;
    if (n > idx_max_bytes / d) return 0;
    n *= d;
  }
  return n;
}

/// An IDX file opened for reading, raw or gzip. Reads fail (throw) on I/O errors, on corrupted
/// or truncated gzip streams and on bytes after the gzip stream that are not another gzip
/// member; a short count means a clean end of the data.
///
/// A file whose first two bytes are the gzip magic (1f 8b) is decompressed with zlib's
/// inflate(); anything else is read as is. Sniffing from the bytes already read (never
/// rewinding) works for pipes too. Concatenated gzip members are one stream (RFC 1952).
class IdxSource {
 public:
  explicit IdxSource(const std::string& path) : path_(path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (st.type() == fs::file_type::not_found) fail("read_idx(): file '", path, "' does not exist");
    if (ec) fail("read_idx(): file '", path, "' cannot be accessed: ", ec.message());
    if (fs::is_directory(st)) fail("read_idx(): '", path, "' is a directory, not an IDX file");
    if (fs::is_regular_file(st)) {
      const std::uintmax_t size = fs::file_size(path, ec);
      if (!ec) file_size_ = static_cast<std::int64_t>(size);
    }
    errno = 0;
    file_.reset(std::fopen(path.c_str(), "rbe"));  // e: close-on-exec
    if (!file_) {
      const int err = errno;
      fail("read_idx(): file '", path, "' cannot be opened: ", err ? errno_text(err) : "out of memory");
    }
    // Small files are common: size the input buffer to the file.
    in_.resize(file_size_ >= 0 ? static_cast<std::size_t>(std::clamp<std::int64_t>(file_size_, 4096, 128 * 1024))
                               : std::size_t{128} * 1024);
  }
  IdxSource(const IdxSource&) = delete;
  IdxSource& operator=(const IdxSource&) = delete;
  ~IdxSource() {
    if (inflating_) inflateEnd(&z_);
  }

  /// True for a gzip file. Valid after the first read(), which looks at the magic bytes.
  bool gzip() const { return mode_ == Mode::gzip; }
  /// Size of a raw regular file in bytes; -1 when unknown (gzip, pipe). Valid after read().
  std::int64_t raw_size() const { return gzip() ? -1 : file_size_; }

  /// Reads up to n bytes into buf; fewer only at the end of the (decompressed) data.
  std::size_t read(std::uint8_t* buf, std::size_t n) {
    if (mode_ == Mode::unknown) sniff();
    return gzip() ? inflate_into(buf, n) : copy_into(buf, n);
  }

 private:
  enum class Mode { unknown, raw, gzip };
  struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };

  // Makes input available in in_[in_pos_, in_len_); false at the end of the file.
  bool refill() {
    if (in_pos_ < in_len_) return true;
    if (at_eof_) return false;
    in_pos_ = 0;
    in_len_ = std::fread(in_.data(), 1, in_.size(), file_.get());
    if (in_len_ < in_.size()) end_of_file();  // fread stops short only at the end or on an error
    return in_len_ > 0;
  }
  void end_of_file() {
    if (std::ferror(file_.get())) {
      const int err = errno;
      fail("read_idx(): file '", path_, "' cannot be read: ", errno_text(err));
    }
    at_eof_ = true;
  }

  void sniff() {
    refill();
    const bool magic = in_len_ >= 2 && in_[0] == 0x1f && in_[1] == 0x8b;
    mode_ = magic ? Mode::gzip : Mode::raw;
    if (!magic) return;
    if (inflateInit2(&z_, 15 + 16) != Z_OK)  // 15 + 16: a 32 KiB window, gzip wrapper only
      fail("read_idx(): gzip file '", path_, "' cannot be read: zlib is out of memory");
    inflating_ = true;
  }

  std::size_t copy_into(std::uint8_t* buf, std::size_t n) {
    std::size_t total = 0;
    while (total < n) {
      if (in_pos_ < in_len_) {
        const std::size_t k = std::min(n - total, in_len_ - in_pos_);
        std::memcpy(buf + total, in_.data() + in_pos_, k);
        in_pos_ += k;
        total += k;
      } else if (at_eof_) {
        break;
      } else if (n - total >= in_.size()) {  // large reads go straight to the caller's buffer
        const std::size_t got = std::fread(buf + total, 1, n - total, file_.get());
        if (got < n - total) end_of_file();
        total += got;
      } else {
        refill();
      }
    }
    return total;
  }

  std::size_t inflate_into(std::uint8_t* buf, std::size_t n) {
    std::size_t total = 0;
    while (total < n && !stream_done_) {
      if (z_.avail_in == 0) {
        if (!refill()) fail("read_idx(): gzip file '", path_, "' is truncated: the gzip stream ends early");
        take_input();
      }
      // inflate() takes unsigned counts; ask for at most idx_chunk at a time.
      const auto want = static_cast<unsigned>(std::min(n - total, idx_chunk));
      z_.next_out = buf + total;
      z_.avail_out = want;
      const int ret = inflate(&z_, Z_NO_FLUSH);
      total += want - z_.avail_out;
      if (ret == Z_STREAM_END) {
        after_member();
      } else if (ret == Z_MEM_ERROR) {
        fail("read_idx(): gzip file '", path_, "' cannot be read: zlib is out of memory");
      } else if (ret != Z_OK && ret != Z_BUF_ERROR) {  // Z_BUF_ERROR: needs input, fetched above
        fail("read_idx(): gzip file '", path_, "' is corrupted (zlib: ", z_.msg ? z_.msg : "invalid data", ")");
      }
    }
    return total;
  }

  void take_input() {
    z_.next_in = in_.data() + in_pos_;
    z_.avail_in = static_cast<unsigned>(in_len_ - in_pos_);
    in_pos_ = in_len_;
  }

  // After one gzip member: the file ends, or another member starts; anything else is rejected
  // (zlib's gzread would skip it silently).
  void after_member() {
    if (z_.avail_in == 0) {
      if (!refill()) {
        stream_done_ = true;
        return;
      }
      take_input();
    }
    if (z_.next_in[0] == 0x1f) {  // another member; inflate() checks the rest of its header
      inflateReset(&z_);
      return;
    }
    std::uint64_t extra = z_.avail_in;
    z_.avail_in = 0;
    while (extra < idx_chunk && refill()) {  // count, up to a point
      extra += in_len_ - in_pos_;
      in_pos_ = in_len_;
    }
    fail("read_idx(): gzip file '", path_, "' has ", extra >= idx_chunk ? "at least " : "", extra,
         " bytes after the end of its gzip stream that are not gzip data");
  }

  std::string path_;
  std::unique_ptr<std::FILE, FileCloser> file_;
  std::int64_t file_size_ = -1;
  std::vector<std::uint8_t> in_;
  std::size_t in_pos_ = 0, in_len_ = 0;
  bool at_eof_ = false;
  Mode mode_ = Mode::unknown;
  z_stream z_{};
  bool inflating_ = false, stream_done_ = false;
};

/// Big-endian 32-bit integer at p.
inline std::uint32_t read_be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

/// Throws unless `a` is a valid IdxArray; `fn` names the caller for the message.
inline void check_idx_array(const IdxArray& a, const char* fn, const std::string& path) {
  if (a.dims.empty() || a.dims.size() > idx_max_dims)
    fail(fn, ": cannot write '", path, "': an IDX array needs 1 to ", idx_max_dims, " dimensions, got ", a.dims.size());
  for (std::size_t i = 0; i < a.dims.size(); ++i)
    if (a.dims[i] == 0)
      fail(fn, ": cannot write '", path, "': dimension ", i, " is 0 (dims ", dims_string(a.dims),
           "); read_idx() rejects empty arrays");
  const std::uint64_t n = idx_element_count(a.dims);
  if (n == 0) fail(fn, ": cannot write '", path, "': dims ", dims_string(a.dims), " exceed 2^31 bytes");
  if (n != a.data.size())
    fail(fn, ": cannot write '", path, "': dims ", dims_string(a.dims), " need ", n, " bytes of data, got ",
         a.data.size());
}

}  // namespace detail

/// Reads an unsigned-byte IDX file, raw or gzip compressed (detected by content).
/// Throws std::invalid_argument, with a message naming the file and the offending value,
/// when the file is missing or unreadable, is not IDX, is not unsigned byte (0x08), has 0 or
/// more than 4 dimensions, has a 0 dimension or more than 2^31 bytes of data, is truncated,
/// has bytes after the data, or is a corrupted gzip stream.
inline IdxArray read_idx(const std::string& path) {
  using detail::fail;
  using detail::hex_byte;
  detail::IdxSource src(path);
  std::uint8_t magic[4];
  const std::size_t got_magic = src.read(magic, 4);  // also tells zlib whether it is gzip
  const char* kind = src.gzip() ? "gzip file '" : "file '";
  // For gzip files every size below is of the decompressed data.
  const char* after = src.gzip() ? " (decompressed)" : "";
  if (got_magic < 4)
    fail("read_idx(): ", kind, path, "' is too short: ", got_magic, " bytes", after,
         ", but an IDX file starts with a 4-byte magic number");
  if (magic[0] != 0 || magic[1] != 0)
    fail("read_idx(): ", kind, path, "' has bad magic bytes ", hex_byte(magic[0]), " ", hex_byte(magic[1]),
         " (an IDX file starts with 0x00 0x00): not an IDX file");
  if (magic[2] != 0x08)
    fail("read_idx(): ", kind, path, "' has type code ", hex_byte(magic[2]), " (", detail::idx_type_name(magic[2]),
         "); only unsigned byte (0x08) is supported");
  const std::size_t ndims = magic[3];
  if (ndims == 0) fail("read_idx(): ", kind, path, "' declares 0 dimensions");
  if (ndims > detail::idx_max_dims)
    fail("read_idx(): ", kind, path, "' declares ", ndims, " dimensions; at most ", detail::idx_max_dims,
         " are supported");

  std::uint8_t header[4 * detail::idx_max_dims];
  const std::size_t header_bytes = 4 * ndims;
  const std::size_t got_header = src.read(header, header_bytes);
  if (got_header < header_bytes)
    fail("read_idx(): ", kind, path, "' is truncated: expected ", header_bytes,
         " bytes of dimensions after the magic, got ", got_header);

  IdxArray a;
  a.dims.resize(ndims);
  for (std::size_t i = 0; i < ndims; ++i) a.dims[i] = detail::read_be32(header + 4 * i);
  const std::uint64_t expected = detail::idx_element_count(a.dims);
  if (expected == 0)
    fail("read_idx(): ", kind, path, "' has absurd dimensions ", detail::dims_string(a.dims),
         " (a dimension is 0 or the data would exceed 2^31 bytes)");

  const std::uint64_t offset = 4 + header_bytes;
  if (src.raw_size() >= 0) {
    // The file size tells us up front whether the data is all there: check before allocating.
    const std::uint64_t size = static_cast<std::uint64_t>(src.raw_size());
    // size < offset only if the file changed while we read it; report that as truncated.
    const std::uint64_t available = size > offset ? size - offset : 0;
    if (available < expected)
      fail("read_idx(): file '", path, "' is truncated: expected ", expected, " bytes of data, got ", available);
    if (available > expected)
      fail("read_idx(): file '", path, "' has ", available - expected, " trailing bytes after the ", expected,
           " bytes of data");
    a.data.resize(static_cast<std::size_t>(expected));
    const std::size_t got = src.read(a.data.data(), a.data.size());
    if (got < expected)  // the file shrank under us
      fail("read_idx(): file '", path, "' is truncated: expected ", expected, " bytes of data, got ", got);
  } else {
    // Unknown size (gzip or a pipe): grow the buffer only as data actually arrives, so a
    // tiny file claiming 2 GB costs at most one chunk before it is found out.
    std::size_t filled = 0;
    while (filled < expected) {
      const std::size_t target =
          static_cast<std::size_t>(std::min<std::uint64_t>(expected, std::max(2 * filled, detail::idx_chunk)));
      a.data.resize(target);
      const std::size_t got = src.read(a.data.data() + filled, target - filled);
      filled += got;
      if (filled < target) break;  // end of data
    }
    if (filled < expected)
      fail("read_idx(): ", kind, path, "' is truncated: expected ", expected, " bytes of data, got ", filled, after);
  }

  // Reading on to the end also makes zlib verify the gzip CRC and length trailer, which it
  // only does once the stream's end is reached.
  std::uint8_t rest[4096];
  std::uint64_t trailing = 0;
  for (std::size_t got; (got = src.read(rest, sizeof rest)) > 0;) {
    trailing += got;
    // Enough to report; do not decompress a gzip bomb to the end just to count it.
    if (trailing >= detail::idx_chunk) break;
  }
  if (trailing > 0)
    fail("read_idx(): ", kind, path, "' has ", trailing >= detail::idx_chunk ? "at least " : "", trailing,
         " trailing bytes", after, " after the ", expected, " bytes of data");
  return a;
}

/// Writes `a` as an unsigned-byte IDX file, gzip compressed if `gzip`. The file is written
/// under a temporary name in the same directory and renamed over `path` once complete, so
/// readers never see a partial file. Throws std::invalid_argument if `a` is not a valid
/// IdxArray (see IdxArray) or on any write, close or rename error.
inline void write_idx(const std::string& path, const IdxArray& a, bool gzip = false) {
  using detail::fail;
  detail::check_idx_array(a, "write_idx()", path);

  std::vector<std::uint8_t> header{0, 0, 0x08, static_cast<std::uint8_t>(a.dims.size())};
  for (std::uint32_t d : a.dims)
    for (int shift = 24; shift >= 0; shift -= 8) header.push_back(static_cast<std::uint8_t>(d >> shift));  // big-endian

  const std::string tmp = detail::temp_name_for(path);
  detail::TempFileGuard guard(tmp);
  if (gzip) {
    gzFile f = gzopen(tmp.c_str(), "wbe");
    if (!f) {
      const int err = errno;
      fail("write_idx(): cannot create '", tmp, "' (for '", path, "'): ", detail::errno_text(err));
    }
    // gzwrite takes an unsigned count: write in chunks. On failure close first (and ignore
    // its result: the write error is the one to report).
    auto write_all = [&](const std::uint8_t* p, std::size_t n) {
      while (n > 0) {
        const unsigned len = static_cast<unsigned>(std::min(n, detail::idx_chunk));
        if (gzwrite(f, p, len) != static_cast<int>(len)) {
          int code = Z_OK;
          const std::string what = gzerror(f, &code);
          const int err = errno;
          gzclose_w(f);
          fail("write_idx(): cannot write '", tmp, "' (for '", path,
               "'): ", code == Z_ERRNO ? detail::errno_text(err) : "zlib: " + what);
        }
        p += len;
        n -= len;
      }
    };
    write_all(header.data(), header.size());
    write_all(a.data.data(), a.data.size());
    // gzclose flushes the last deflate block and the trailer: its result is a write result.
    const int rc = gzclose_w(f);
    if (rc != Z_OK) {
      const int err = errno;
      fail("write_idx(): cannot finish '", tmp, "' (for '", path,
           "'): ", rc == Z_ERRNO ? detail::errno_text(err) : "zlib error " + std::to_string(rc));
    }
  } else {
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) {
      const int err = errno;
      fail("write_idx(): cannot create '", tmp, "' (for '", path, "'): ", detail::errno_text(err));
    }
    const bool wrote = std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
                       std::fwrite(a.data.data(), 1, a.data.size(), f) == a.data.size() && std::fflush(f) == 0;
    const int err = errno;
    // Close even after a failed write, and check close: buffered data may only fail here.
    const bool closed = std::fclose(f) == 0;
    if (!wrote || !closed) {
      const int close_err = errno;
      fail("write_idx(): cannot write '", tmp, "' (for '", path, "'): ", detail::errno_text(wrote ? close_err : err));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    fail("write_idx(): cannot rename '", tmp, "' to '", path, "': ", detail::errno_text(err));
  }
  guard.release();
}

/// An MNIST-style labelled image set.
struct Dataset {
  /// N x (rows*cols) pixels in [0, 1] (byte / 255), one image per row, row-major pixels.
  RowMatrix images;
  /// N labels, each 0..255 (0..9 for MNIST and Fashion-MNIST).
  Eigen::VectorXi labels;
  /// Image height in pixels.
  int rows = 0;
  /// Image width in pixels.
  int cols = 0;
};

/// Which half of an MNIST-style data set: "train-*" or "t10k-*" files.
enum class Split {
  train,  ///< train-images / train-labels
  test    ///< t10k-images / t10k-labels
};

namespace detail {

/// File-name stem of a split, as MNIST names its files.
inline const char* split_stem(Split split) { return split == Split::train ? "train" : "t10k"; }

/// The names load_mnist_dir() tries for "images" or "labels", in order.
inline std::vector<std::string> mnist_names(Split split, const std::string& what) {
  const std::string stem = std::string(split_stem(split)) + "-" + what;
  const std::string idx = what == "images" ? "idx3-ubyte" : "idx1-ubyte";
  return {stem + "-" + idx, stem + "-" + idx + ".gz", stem + "." + idx, stem + "." + idx + ".gz"};
}

}  // namespace detail

/// Builds a Dataset from an N x rows x cols image array and an N-element label array.
/// `what` describes where they came from, for error messages. Throws std::invalid_argument
/// if images are not 3-d, labels are not 1-d, the counts differ, or a label is not in
/// [0, classes) (naming the label, its index and `what`).
inline Dataset make_dataset(const IdxArray& images, const IdxArray& labels, const std::string& what, int classes = 10) {
  if (classes < 1 || classes > 256) detail::fail("make_dataset(): option 'classes' must be in [1, 256], got ", classes);
  using detail::fail;
  if (images.dims.size() != 3)
    fail("make_dataset(): ", what, ": images must be 3-d (count x rows x cols), got ", images.dims.size(), "-d (",
         detail::dims_string(images.dims), ")");
  if (labels.dims.size() != 1)
    fail("make_dataset(): ", what, ": labels must be 1-d, got ", labels.dims.size(), "-d (",
         detail::dims_string(labels.dims), ")");
  if (images.dims[0] != labels.dims[0])
    fail("make_dataset(): ", what, ": ", images.dims[0], " images but ", labels.dims[0], " labels");
  // Both arrays come from read_idx() or are otherwise trusted to match their dims; a
  // mismatch here is a caller bug, not bad input.
  if (images.data.size() != detail::idx_element_count(images.dims) || labels.data.size() != labels.dims[0])
    fail("make_dataset(): ", what, ": data sizes (", images.data.size(), " and ", labels.data.size(),
         " bytes) do not match dims ", detail::dims_string(images.dims), " and ", detail::dims_string(labels.dims));
  // Dataset stores rows/cols as int; dims up to 2^31 - 1 per side pass the 2^31 byte limit.
  constexpr std::uint32_t int_max = 0x7FFFFFFF;
  if (images.dims[1] > int_max || images.dims[2] > int_max)
    fail("make_dataset(): ", what, ": image size ", images.dims[1], " x ", images.dims[2], " is too large");

  // Labels are checked here, where the file is known, not later by whoever trains on them.
  for (std::size_t i = 0; i < labels.data.size(); ++i)
    if (labels.data[i] >= classes)
      fail("make_dataset(): ", what, ": label ", static_cast<int>(labels.data[i]), " at index ", i,
           " is not a class (the data set has ", classes, " classes: labels 0..", classes - 1, ")");

  const Index n = images.dims[0];
  const Index pixels = Index{images.dims[1]} * images.dims[2];
  using ByteMatrix = Eigen::Matrix<std::uint8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Dataset d;
  d.rows = static_cast<int>(images.dims[1]);
  d.cols = static_cast<int>(images.dims[2]);
  d.images = Eigen::Map<const ByteMatrix>(images.data.data(), n, pixels).cast<float>() / 255.0f;
  d.labels = Eigen::Map<const Eigen::Matrix<std::uint8_t, Eigen::Dynamic, 1>>(labels.data.data(), n).cast<int>();
  return d;
}

/// Loads the train or test half of an MNIST-style directory (MNIST, Fashion-MNIST, ...).
/// For each of images and labels it uses the first file that exists among, e.g. for train
/// images: train-images-idx3-ubyte, train-images-idx3-ubyte.gz, train-images.idx3-ubyte,
/// train-images.idx3-ubyte.gz (t10k-* for Split::test). Throws std::invalid_argument if
/// the directory or a file is missing (the message lists the names tried), on any
/// read_idx() error, or if the files do not form a data set (see make_dataset()).
inline Dataset load_mnist_dir(const std::string& dir, Split split) {
  namespace fs = std::filesystem;
  using detail::fail;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    fail("load_mnist_dir(): '", dir, "' is not a directory", fs::exists(dir, ec) ? "" : " (it does not exist)");
  auto find = [&](const std::string& what) {
    const std::vector<std::string> names = detail::mnist_names(split, what);
    for (const std::string& name : names) {
      const fs::path p = fs::path(dir) / name;
      if (fs::exists(p, ec)) return p.string();
    }
    std::string tried;
    for (const std::string& name : names) tried += (tried.empty() ? "" : ", ") + name;
    fail("load_mnist_dir(): directory '", dir, "' has no ", detail::split_stem(split), " ", what, " file; tried ",
         tried);
  };
  const std::string images_path = find("images");
  const std::string labels_path = find("labels");
  return make_dataset(read_idx(images_path), read_idx(labels_path),
                      detail::message("load_mnist_dir('", dir, "', ", detail::split_stem(split), "): images '",
                                      images_path, "', labels '", labels_path, "'"));
}

/// Writes `d` into `dir` (created if missing) under the standard names
/// (train-images-idx3-ubyte / train-labels-idx1-ubyte, t10k-* for Split::test; ".gz"
/// appended if `gzip`), each atomically via write_idx(). Pixels become round(v * 255)
/// clamped to 0..255. Throws std::invalid_argument if a pixel is NaN, a label is outside
/// 0..255, the shapes disagree, or on any write error.
inline void save_mnist_dir(const std::string& dir, Split split, const Dataset& d, bool gzip = false) {
  namespace fs = std::filesystem;
  using detail::fail;
  if (d.rows <= 0 || d.cols <= 0 || d.images.cols() != Index{d.rows} * d.cols)
    fail("save_mnist_dir(): images have ", d.images.cols(), " columns, which is not rows x cols = ", d.rows, " x ",
         d.cols);
  if (d.images.rows() != d.labels.size())
    fail("save_mnist_dir(): ", d.images.rows(), " images but ", d.labels.size(), " labels");
  if (d.images.rows() == 0 || d.images.rows() > 0xFFFFFFFF)
    fail("save_mnist_dir(): cannot write ", d.images.rows(), " images");

  IdxArray images;
  images.dims = {static_cast<std::uint32_t>(d.images.rows()), static_cast<std::uint32_t>(d.rows),
                 static_cast<std::uint32_t>(d.cols)};
  images.data.resize(static_cast<std::size_t>(d.images.size()));
  const float* px = d.images.data();  // row-major: the IDX order
  const std::size_t per_image = static_cast<std::size_t>(d.images.cols());
  for (std::size_t i = 0; i < images.data.size(); ++i) {
    if (detail::is_nan(px[i])) fail("save_mnist_dir(): pixel ", i % per_image, " of image ", i / per_image, " is NaN");
    const float v = std::round(px[i] * 255.0f);
    images.data[i] = static_cast<std::uint8_t>(std::clamp(v, 0.0f, 255.0f));
  }
  IdxArray labels;
  labels.dims = {static_cast<std::uint32_t>(d.labels.size())};
  labels.data.resize(static_cast<std::size_t>(d.labels.size()));
  for (Index i = 0; i < d.labels.size(); ++i) {
    if (d.labels[i] < 0 || d.labels[i] > 255)
      fail("save_mnist_dir(): label ", i, " is ", d.labels[i], ", outside 0..255");
    labels.data[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(d.labels[i]);
  }

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail("save_mnist_dir(): cannot create directory '", dir, "': ", ec.message());
  const std::string suffix = gzip ? ".gz" : "";
  write_idx((fs::path(dir) / (detail::mnist_names(split, "images")[0] + suffix)).string(), images, gzip);
  write_idx((fs::path(dir) / (detail::mnist_names(split, "labels")[0] + suffix)).string(), labels, gzip);
}

}  // namespace nnfuzz
