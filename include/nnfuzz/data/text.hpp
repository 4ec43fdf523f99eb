// SPDX-License-Identifier: MIT
// nnfuzz: text for character-level models — fortune files, an alphabet of bytes, a held-out split.
//
// TensorFuzz's third experiment fuzzes a character-level language model trained on text. This
// header reads Debian's `fortunes` (plain UTF-8 text files under /usr/share/games/fortunes/,
// fortunes separated by lines holding only `%`), normalises the text to printable ASCII and
// newline (to_printable_ascii(), so that the model works on bytes), builds an Alphabet of the
// bytes seen, and splits the fortunes into a training and a held-out set by a seeded hash.
//
// Core header: the C++ standard library and POSIX only.
#pragma once

#include "../detail/binary_file.hpp"
#include "../detail/config.hpp"
#include "../rng.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace nnfuzz {

/// Where Debian's `fortunes`, `fortunes-min` (and other fortune-mod data packages) install their files.
inline const char* default_fortunes_dir() { return "/usr/share/games/fortunes"; }

namespace detail {

/// Upper bound on one fortune file (Debian's largest is 245 KB).
constexpr std::uintmax_t kMaxTextFileBytes = std::uintmax_t{1} << 26;

/// Describes byte `c` for error messages: 'x' when printable ASCII, else 0xNN.
inline std::string describe_byte(unsigned char c) {
  char buf[16];
  if (c >= 0x20 && c < 0x7F)
    std::snprintf(buf, sizeof buf, "'%c'", static_cast<char>(c));
  else
    std::snprintf(buf, sizeof buf, "0x%02X", static_cast<unsigned>(c));
  return buf;
}

/// Decodes one UTF-8 sequence at s[i]; returns its length (1..4) and the code point, or 0 when
/// the bytes there are not valid UTF-8 (stray continuation byte, overlong form, surrogate, code
/// point above U+10FFFF, truncated sequence).
inline std::size_t utf8_decode(std::string_view s, std::size_t i, std::uint32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  std::size_t len;
  std::uint32_t min;
  if (c < 0x80) {
    cp = c;
    return 1;
  } else if ((c & 0xE0) == 0xC0) {
    len = 2, cp = c & 0x1Fu, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3, cp = c & 0x0Fu, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4, cp = c & 0x07u, min = 0x10000;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3Fu);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

/// 64-bit FNV-1a of a byte string.
inline std::uint64_t fnv1a64(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace detail

/// Whether `s` is valid UTF-8 (strict: no overlong forms, surrogates or code points above
/// U+10FFFF). On failure, `*error_offset` (if given) receives the offset of the first bad byte.
inline bool is_valid_utf8(std::string_view s, std::size_t* error_offset = nullptr) {
  for (std::size_t i = 0; i < s.size();) {
    std::uint32_t cp;
    const std::size_t len = detail::utf8_decode(s, i, cp);
    if (len == 0) {
      if (error_offset) *error_offset = i;
      return false;
    }
    i += len;
  }
  return true;
}

namespace detail {

inline std::vector<std::string> parse_fortunes(const char* fn, std::string_view text, const std::string& name) {
  if (text.empty()) fail(fn, ": file '", name, "' is empty");
  std::size_t bad = 0;
  if (!is_valid_utf8(text, &bad)) {
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n');
    fail(fn, ": file '", name, "' is not valid UTF-8: byte ", describe_byte(static_cast<unsigned char>(text[bad])),
         " at offset ", bad, " (line ", line, ")");
  }
  std::vector<std::string> out;
  std::string current;
  auto flush = [&] {
    if (!current.empty() && current.back() == '\n') current.pop_back();
    if (current.find_first_not_of(" \t\r\n\f\v") != std::string::npos) out.push_back(current);
    current.clear();
  };
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t end = text.find('\n', pos);
    const bool last = end == std::string_view::npos;
    if (last) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    if (line == "%" || line == "%\r") {
      flush();
    } else {
      current.append(line.data(), line.size());
      current.push_back('\n');
    }
    pos = last ? text.size() : end + 1;
  }
  flush();
  if (out.empty()) fail(fn, ": file '", name, "' holds no fortune (only separators or whitespace)");
  return out;
}

}  // namespace detail

/// Splits fortune-file text into fortunes: blocks separated by lines holding only `%` (a
/// trailing carriage return is tolerated). Each fortune is its lines joined by '\n', without the
/// newline before the separator; fortunes holding only whitespace are skipped. `name` (a file
/// name) appears in errors. Throws std::invalid_argument when `text` is empty, is not valid
/// UTF-8 (naming the byte, its offset and its line), or holds no fortune.
inline std::vector<std::string> parse_fortunes(std::string_view text, const std::string& name = "<text>") {
  return detail::parse_fortunes("parse_fortunes()", text, name);
}

/// Reads one fortune file (see parse_fortunes()). Throws std::invalid_argument naming the file
/// when it is missing, not a regular file, unreadable, empty, larger than 64 MiB, not valid
/// UTF-8, or holds no fortune.
inline std::vector<std::string> read_fortune_file(const std::string& path) {
  const std::vector<std::uint8_t> bytes =
      detail::read_whole_file("read_fortune_file()", path, 0, detail::kMaxTextFileBytes);
  return detail::parse_fortunes("read_fortune_file()",
                                std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path);
}

/// The fortune files of a directory, in name order: regular files (or links to them) directly in
/// `dir`, except fortune-mod's `.dat` index files, `X.u8` when `X` also exists (in Debian `X.u8`
/// is a link to `X`; elsewhere it is the same text re-encoded), anything whose name starts with
/// '.', and subdirectories (so the offensive `off/` set is never read). A file reached twice
/// through links is listed once. Throws std::invalid_argument when `dir` is not a readable
/// directory or holds no such file.
inline std::vector<std::string> fortune_files(const std::string& dir = default_fortunes_dir()) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    if (!fs::exists(dir, ec))
      detail::fail("fortune_files(): directory '", dir,
                   "' does not exist (Debian: apt-get install fortunes fortunes-min)");
    detail::fail("fortune_files(): '", dir, "' is not a directory");
  }
  std::vector<std::string> names;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  if (ec) detail::fail("fortune_files(): cannot list directory '", dir, "': ", ec.message());
  std::sort(names.begin(), names.end());
  const std::set<std::string> all(names.begin(), names.end());
  auto ends_with = [](const std::string& s, const char* suffix) {
    const std::string x(suffix);
    return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  std::vector<std::string> files;
  std::set<std::string> seen;  // canonical paths
  for (const auto& name : names) {
    if (name.empty() || name[0] == '.' || ends_with(name, ".dat")) continue;
    if (ends_with(name, ".u8") && all.count(name.substr(0, name.size() - 3))) continue;
    const fs::path p = fs::path(dir) / name;
    if (!fs::is_regular_file(p, ec)) continue;  // directories (off/), dangling links, devices
    const std::string canonical = fs::canonical(p, ec).string();
    if (ec || !seen.insert(canonical).second) continue;
    files.push_back(p.string());
  }
  if (files.empty()) detail::fail("fortune_files(): directory '", dir, "' holds no fortune file");
  return files;
}

/// Every fortune of every file of fortune_files(dir), in file-name order then file order, as
/// UTF-8 text (see parse_fortunes()). Errors name the offending file.
inline std::vector<std::string> read_fortunes(const std::string& dir = default_fortunes_dir()) {
  std::vector<std::string> all;
  for (const auto& f : fortune_files(dir)) {
    auto part = read_fortune_file(f);
    all.insert(all.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
  }
  return all;
}

/// Normalises UTF-8 text to printable ASCII (0x20..0x7E) and '\n', the byte-level alphabet the
/// character models use: a tab becomes one space; a backspace erases the character before it (the
/// overstrike `___\b\b\band` of old fortunes becomes `and`); other control characters and '\r' are
/// dropped; typographic quotes, dashes, the ellipsis and the no-break space become their ASCII
/// forms, Latin-1 letters lose their accents (é -> e, ß -> s); every other non-ASCII code point
/// is dropped, as is any byte that is not valid UTF-8.
inline std::string to_printable_ascii(std::string_view utf8) {
  // U+00C0..U+00FF without accents ('\0': drop; × and ÷ have none).
  static constexpr char kLatin1[] = "AAAAAAACEEEEIIIIDNOOOOO\0OUUUUYTsaaaaaaaceeeeiiiidnooooo\0ouuuuyty";
  std::string out;
  out.reserve(utf8.size());
  for (std::size_t i = 0; i < utf8.size();) {
    std::uint32_t cp = 0;
    std::size_t len = detail::utf8_decode(utf8, i, cp);
    if (len == 0) {  // not UTF-8: skip the byte
      ++i;
      continue;
    }
    i += len;
    if (cp == '\n' || (cp >= 0x20 && cp < 0x7F)) {
      out.push_back(static_cast<char>(cp));
    } else if (cp == '\t' || cp == 0xA0) {
      out.push_back(' ');
    } else if (cp == '\b') {
      if (!out.empty() && out.back() != '\n') out.pop_back();
    } else if (cp >= 0xC0 && cp <= 0xFF) {
      if (kLatin1[cp - 0xC0]) out.push_back(kLatin1[cp - 0xC0]);
    } else if (cp == 0x2018 || cp == 0x2019 || cp == 0x201A || cp == 0x2032 || cp == 0xB4) {
      out.push_back('\'');
    } else if (cp == 0x201C || cp == 0x201D || cp == 0x201E || cp == 0x2033 || cp == 0xAB || cp == 0xBB) {
      out.push_back('"');
    } else if (cp == 0x2010 || cp == 0x2011 || cp == 0x2012 || cp == 0x2013 || cp == 0x2014 || cp == 0x2212) {
      out.push_back('-');
    } else if (cp == 0x2026) {
      out += "...";
    }
    // anything else (control characters, other scripts, symbols) is dropped
  }
  return out;
}

/// Applies to_printable_ascii() to every text and drops those left with only whitespace.
inline std::vector<std::string> to_printable_ascii(const std::vector<std::string>& texts) {
  std::vector<std::string> out;
  out.reserve(texts.size());
  for (const auto& t : texts) {
    std::string a = to_printable_ascii(t);
    if (a.find_first_not_of(" \n") != std::string::npos) out.push_back(std::move(a));
  }
  return out;
}

/// A training set and a held-out set of texts.
struct TextSplit {
  std::vector<std::string> train;     ///< the texts for training, in their original order
  std::vector<std::string> held_out;  ///< the held-out texts, in their original order
};

/// Splits texts into training and held-out sets by a seeded hash of each text (FNV-1a mixed with
/// `seed`): a text is held out when its hash, as a number in [0, 1), is below
/// `held_out_fraction`. The split of a text depends only on its content and the seed, not on the
/// order or number of the other texts, and identical texts (fortunes repeated across files) land
/// on the same side. Throws std::invalid_argument for a fraction outside [0, 1).
inline TextSplit split_held_out(const std::vector<std::string>& texts, double held_out_fraction = 0.05,
                                std::uint64_t seed = 0) {
  if (!(held_out_fraction >= 0 && held_out_fraction < 1))
    detail::fail("split_held_out(): option 'held_out_fraction' must be in [0, 1), got ", held_out_fraction);
  TextSplit s;
  for (const auto& t : texts) {
    const std::uint64_t h = detail::mix_seed(detail::fnv1a64(t) ^ seed, 0x5eed);
    const double u = static_cast<double>(h >> 11) * 0x1.0p-53;
    (u < held_out_fraction ? s.held_out : s.train).push_back(t);
  }
  return s;
}

/// The symbols of a character model: a set of bytes, each with an id. Id 0 is reserved for the
/// boundary between texts (the start and end of a fortune, Alphabet::kBoundary); the bytes get ids
/// 1..size()-1 in increasing byte order, so an alphabet is a pure function of its byte set.
class Alphabet {
 public:
  /// The id of the boundary between texts (no byte has it).
  static constexpr int kBoundary = 0;
  /// What decode() writes for a boundary: the separator of fortune files.
  static constexpr const char* kBoundaryText = "\n%\n";

  /// An alphabet of no byte (only the boundary).
  Alphabet() { id_.fill(-1); }
  /// An alphabet of the given bytes (in any order). Throws std::invalid_argument when a byte
  /// appears twice.
  explicit Alphabet(std::string_view bytes) : Alphabet() {
    std::string sorted(bytes);
    std::sort(sorted.begin(), sorted.end(),
              [](char a, char b) { return static_cast<unsigned char>(a) < static_cast<unsigned char>(b); });
    for (std::size_t i = 1; i < sorted.size(); ++i)
      if (sorted[i] == sorted[i - 1])
        detail::fail("Alphabet(): byte ", detail::describe_byte(static_cast<unsigned char>(sorted[i])),
                     " appears twice");
    symbols_ = sorted;
    for (std::size_t i = 0; i < symbols_.size(); ++i)
      id_[static_cast<unsigned char>(symbols_[i])] = static_cast<int>(i) + 1;
  }
  /// The alphabet of every byte that occurs in `texts`.
  static Alphabet of_texts(const std::vector<std::string>& texts) {
    std::array<bool, 256> seen{};
    for (const auto& t : texts)
      for (const char c : t) seen[static_cast<unsigned char>(c)] = true;
    std::string bytes;
    for (int c = 0; c < 256; ++c)
      if (seen[static_cast<std::size_t>(c)]) bytes.push_back(static_cast<char>(c));
    return Alphabet(bytes);
  }

  /// Number of ids, the boundary included: the vocabulary size of a model over this alphabet.
  int size() const { return static_cast<int>(symbols_.size()) + 1; }
  /// The bytes, in id order (byte i has id i + 1).
  const std::string& symbols() const { return symbols_; }
  /// Whether byte `c` has an id.
  bool contains(char c) const { return id_[static_cast<unsigned char>(c)] >= 0; }
  /// The id of byte `c`. Throws std::invalid_argument when `c` is not in the alphabet.
  int id(char c) const {
    const int i = id_[static_cast<unsigned char>(c)];
    if (i < 0)
      detail::fail("Alphabet::id(): character ", detail::describe_byte(static_cast<unsigned char>(c)),
                   " is not in the alphabet");
    return i;
  }
  /// The byte of id `i` (1..size()-1). Throws std::invalid_argument for the boundary or an id
  /// outside the alphabet.
  char symbol(int i) const {
    if (i < 1 || i >= size())
      detail::fail("Alphabet::symbol(): id ", i, " is not a byte id (must be in [1, ", size(), "))");
    return symbols_[static_cast<std::size_t>(i - 1)];
  }

  /// Writes the ids of the bytes of `text` to out[0..text.size()) (no allocation). Throws
  /// std::invalid_argument naming the first byte outside the alphabet and its position.
  void encode(std::string_view text, int* out) const {
    for (std::size_t i = 0; i < text.size(); ++i) {
      const int k = id_[static_cast<unsigned char>(text[i])];
      if (k < 0)
        detail::fail("Alphabet::encode(): character ", detail::describe_byte(static_cast<unsigned char>(text[i])),
                     " at position ", i, " is not in the alphabet");
      out[i] = k;
    }
  }
  /// The ids of the bytes of `text` (see encode(text, out)).
  std::vector<int> encode(std::string_view text) const {
    std::vector<int> ids(text.size());
    encode(text, ids.data());
    return ids;
  }
  /// One stream of ids for a list of texts, each preceded by a boundary and the last followed by
  /// one: `0 t1 0 t2 0 ... tn 0` (the input of train_char_rnn()). Throws std::invalid_argument
  /// naming the text, the byte and its position when a byte is outside the alphabet.
  std::vector<int> encode_texts(const std::vector<std::string>& texts) const {
    std::size_t n = 1;
    for (const auto& t : texts) n += t.size() + 1;
    std::vector<int> ids;
    ids.reserve(n);
    for (std::size_t k = 0; k < texts.size(); ++k) {
      ids.push_back(kBoundary);
      const std::size_t at = ids.size();
      ids.resize(at + texts[k].size());
      try {
        encode(texts[k], ids.data() + at);
      } catch (const std::invalid_argument& e) {
        detail::fail("Alphabet::encode_texts(): text ", k, ": ",
                     std::string(e.what()).substr(std::string("Alphabet::encode(): ").size()));
      }
    }
    ids.push_back(kBoundary);
    return ids;
  }

  /// The text of ids ids[0..n): each byte id becomes its byte, each boundary kBoundaryText.
  /// Throws std::invalid_argument naming the first id outside [0, size()) and its position.
  std::string decode(const int* ids, Index n) const {
    std::string s;
    s.reserve(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i) {
      const int k = ids[i];
      if (k == kBoundary)
        s += kBoundaryText;
      else if (k > 0 && k < size())
        s.push_back(symbols_[static_cast<std::size_t>(k - 1)]);
      else
        detail::fail("Alphabet::decode(): id ", k, " at position ", i, " is outside [0, ", size(), ")");
    }
    return s;
  }
  /// The text of a list of ids (see decode(ids, n)).
  std::string decode(const std::vector<int>& ids) const { return decode(ids.data(), static_cast<Index>(ids.size())); }

 private:
  std::string symbols_;        // byte of id i + 1
  std::array<int, 256> id_{};  // id of each byte, -1 if absent
};

}  // namespace nnfuzz
