// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/data/text.hpp>

#include <filesystem>
#include <fstream>

#include <unistd.h>

using namespace nnfuzz;
namespace fs = std::filesystem;

namespace {
struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("nnfuzz_text_" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() { fs::remove_all(dir); }
  std::string file(const std::string& n) const { return (dir / n).string(); }
  std::string write(const std::string& n, const std::string& bytes) const {
    std::ofstream(file(n), std::ios::binary) << bytes;
    return file(n);
  }
};
}  // namespace

TEST_CASE("Text: fortunes are split on lines holding only %", "[text]") {
  TempDir tmp;
  const std::string path = tmp.write("small",
                                     "A first fortune.\n"
                                     "%\n"
                                     "Two lines,\n\tthe second indented.\n"
                                     "%\n"
                                     "%\n"  // an empty fortune: skipped
                                     "100% sure: %s is no separator\n"
                                     "%not a separator either\n"
                                     "%\r\n"  // a CRLF separator
                                     "   \n"  // whitespace only: skipped
                                     "%\n"
                                     "Last, with no final newline");
  const auto f = read_fortune_file(path);
  REQUIRE(f.size() == 4);
  CHECK(f[0] == "A first fortune.");
  CHECK(f[1] == "Two lines,\n\tthe second indented.");
  CHECK(f[2] == "100% sure: %s is no separator\n%not a separator either");
  CHECK(f[3] == "Last, with no final newline");
  CHECK(parse_fortunes("%\nx\n%\n") == std::vector<std::string>{"x"});
  CHECK(parse_fortunes("caf\xC3\xA9\n") == std::vector<std::string>{"caf\xC3\xA9"});
}

TEST_CASE("Text: bad fortune files are errors naming the file", "[text]") {
  TempDir tmp;
  const std::string latin1 = tmp.write("latin1", "ok\n%\nline two\ncaf\xE9\n%\n");
  REQUIRE_THROWS_WITH(read_fortune_file(latin1), Catch::Contains("read_fortune_file()") &&
                                                     Catch::Contains("'" + latin1 + "'") &&
                                                     Catch::Contains("not valid UTF-8") && Catch::Contains("0xE9") &&
                                                     Catch::Contains("offset 17") && Catch::Contains("line 4"));
  const std::string empty = tmp.write("empty", "");
  REQUIRE_THROWS_WITH(read_fortune_file(empty), Catch::Contains("read_fortune_file()") &&
                                                    Catch::Contains("'" + empty + "'") && Catch::Contains("is empty"));
  const std::string seps = tmp.write("separators", "%\n%\n  \n%\n");
  REQUIRE_THROWS_WITH(read_fortune_file(seps),
                      Catch::Contains("'" + seps + "'") && Catch::Contains("holds no fortune"));
  REQUIRE_THROWS_WITH(read_fortune_file(tmp.file("missing")),
                      Catch::Contains("read_fortune_file()") && Catch::Contains("does not exist"));
  REQUIRE_THROWS_WITH(read_fortune_file(tmp.dir.string()), Catch::Contains("not a regular file"));
  // Invalid UTF-8 of every kind: overlong, surrogate, above U+10FFFF, truncated, stray continuation.
  for (const char* bad : {"\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "ab\xE2\x82", "\x80", "\xFF"}) {
    INFO(bad);
    CHECK_FALSE(is_valid_utf8(bad));
    CHECK_THROWS_WITH(parse_fortunes(bad, "name"), Catch::Contains("parse_fortunes()") && Catch::Contains("'name'"));
  }
  CHECK(is_valid_utf8("\xF0\x9F\x98\x80 \xE2\x80\x99 \xC3\xA9 plain"));
  std::size_t at = 0;
  CHECK_FALSE(is_valid_utf8("abc\xC3", &at));
  CHECK(at == 3);
}

TEST_CASE("Text: a fortune directory skips indexes, .u8 twins, hidden files and subdirectories", "[text]") {
  TempDir tmp;
  tmp.write("beta", "b1\n%\nb2\n");
  tmp.write("beta.dat", std::string("\x00\x00\x00\x02\xff\xfe", 6));  // binary index: not UTF-8
  fs::create_symlink("beta", tmp.dir / "beta.u8");                    // Debian's twin link
  tmp.write("alpha.u8", "a1\n");                                      // a lone .u8 file is read
  fs::create_symlink("beta", tmp.dir / "gamma");                      // same file, another name
  tmp.write(".hidden", "\xff");
  fs::create_directories(tmp.dir / "off");
  tmp.write("off/rude", "rude\n");
  fs::create_symlink("nowhere", tmp.dir / "dangling");
  const auto files = fortune_files(tmp.dir.string());
  REQUIRE(files.size() == 2);
  CHECK(fs::path(files[0]).filename() == "alpha.u8");
  CHECK(fs::path(files[1]).filename() == "beta");
  CHECK(read_fortunes(tmp.dir.string()) == std::vector<std::string>{"a1", "b1", "b2"});
  REQUIRE_THROWS_WITH(fortune_files(tmp.file("nope")),
                      Catch::Contains("fortune_files()") && Catch::Contains("does not exist"));
  REQUIRE_THROWS_WITH(fortune_files(tmp.file("beta")), Catch::Contains("is not a directory"));
  tmp.write("zeta", "");
  REQUIRE_THROWS_WITH(read_fortunes(tmp.dir.string()),
                      Catch::Contains("read_fortune_file()") && Catch::Contains("zeta") && Catch::Contains("is empty"));
  fs::create_directories(tmp.dir / "nothing");
  REQUIRE_THROWS_WITH(fortune_files(tmp.file("nothing")), Catch::Contains("holds no fortune file"));
}

TEST_CASE("Text: printable ASCII normalisation", "[text]") {
  CHECK(to_printable_ascii("plain text\nline 2") == "plain text\nline 2");
  CHECK(to_printable_ascii("\ttab\r\n") == " tab\n");
  CHECK(to_printable_ascii("whiter *___\b\b\band* fresher") == "whiter *and* fresher");
  CHECK(to_printable_ascii("\b\nx\by") == "\ny");  // never erases a newline
  CHECK(to_printable_ascii("don\xE2\x80\x99t \xE2\x80\x9Cquote\xE2\x80\x9D \xE2\x80\x94 \xE2\x80\xA6") ==
        "don't \"quote\" - ...");
  CHECK(to_printable_ascii("caf\xC3\xA9 \xC3\x9C"
                           "ber Linuxkongre\xC3\x9F \xC2\xA3"
                           "5 \xC3\x97") == "cafe Uber Linuxkongres 5 ");
  CHECK(to_printable_ascii("bell\x07 del\x7F \xF0\x9F\x98\x80 bad\xFF!") == "bell del  bad!");
  CHECK(to_printable_ascii(std::vector<std::string>{"a\tb", "\xC2\xA3\x07", " \t\n"}) ==
        std::vector<std::string>{"a b"});
}

TEST_CASE("Text: the held-out split is seeded, stable and by content", "[text]") {
  std::vector<std::string> texts;
  for (int i = 0; i < 4000; ++i) texts.push_back("fortune number " + std::to_string(i));
  const TextSplit a = split_held_out(texts, 0.05, 7);
  CHECK(a.train.size() + a.held_out.size() == texts.size());
  CHECK(a.held_out.size() > 140);
  CHECK(a.held_out.size() < 260);
  const TextSplit b = split_held_out(texts, 0.05, 7);
  CHECK(a.held_out == b.held_out);
  // The same text goes to the same side whatever the other texts are.
  std::vector<std::string> reversed(texts.rbegin(), texts.rend());
  reversed.resize(2000);
  const TextSplit c = split_held_out(reversed, 0.05, 7);
  for (const auto& t : c.held_out) CHECK(std::find(a.held_out.begin(), a.held_out.end(), t) != a.held_out.end());
  const TextSplit d = split_held_out(texts, 0.05, 8);
  CHECK(d.held_out != a.held_out);
  CHECK(split_held_out(texts, 0.0).held_out.empty());
  REQUIRE_THROWS_WITH(split_held_out(texts, 1.0), Catch::Contains("split_held_out()") &&
                                                      Catch::Contains("'held_out_fraction'") &&
                                                      Catch::Contains("got 1"));
  REQUIRE_THROWS_WITH(split_held_out(texts, -0.1), Catch::Contains("-0.1"));
}

TEST_CASE("Text: Alphabet ids, encode and decode", "[text]") {
  const Alphabet a = Alphabet::of_texts({"hello", "world\n"});
  CHECK(a.symbols() == "\ndehlorw");
  CHECK(a.size() == 9);
  CHECK(a.id('\n') == 1);
  CHECK(a.id('w') == 8);
  CHECK(a.symbol(2) == 'd');
  CHECK(a.contains('o'));
  CHECK_FALSE(a.contains('x'));
  const std::vector<int> ids = a.encode("hello\nworld");
  CHECK(ids == std::vector<int>{4, 3, 5, 5, 6, 1, 8, 6, 7, 5, 2});
  CHECK(a.decode(ids) == "hello\nworld");
  CHECK(a.decode({0, 4, 0}) == "\n%\nh\n%\n");
  CHECK(a.encode_texts({"he", "", "w"}) == std::vector<int>{0, 4, 3, 0, 0, 8, 0});
  CHECK(Alphabet("wrold\nhe").symbols() == a.symbols());
  CHECK(Alphabet().size() == 1);
  REQUIRE_THROWS_WITH(a.encode("hello\nthere"),
                      Catch::Contains("Alphabet::encode()") && Catch::Contains("'t'") && Catch::Contains("position 6"));
  REQUIRE_THROWS_WITH(a.encode("he\x01"), Catch::Contains("0x01") && Catch::Contains("position 2"));
  REQUIRE_THROWS_WITH(a.encode_texts({"hello", "hewx"}), Catch::Contains("Alphabet::encode_texts()") &&
                                                             Catch::Contains("text 1") && Catch::Contains("'x'") &&
                                                             Catch::Contains("position 3"));
  REQUIRE_THROWS_WITH(a.decode({1, 9}), Catch::Contains("Alphabet::decode()") && Catch::Contains("id 9 at position 1"));
  REQUIRE_THROWS_WITH(a.decode({-1}), Catch::Contains("id -1 at position 0"));
  REQUIRE_THROWS_WITH(a.id('z'), Catch::Contains("Alphabet::id()") && Catch::Contains("'z'"));
  REQUIRE_THROWS_WITH(a.symbol(0), Catch::Contains("Alphabet::symbol()") && Catch::Contains("id 0"));
  REQUIRE_THROWS_WITH(Alphabet("abca"), Catch::Contains("Alphabet()") && Catch::Contains("'a' appears twice"));
  // Every byte value works, including NUL and bytes above 0x7F.
  std::string all;
  for (int c = 255; c >= 0; --c) all.push_back(static_cast<char>(c));
  const Alphabet bytes(all);
  CHECK(bytes.size() == 257);
  CHECK(bytes.decode(bytes.encode(all)) == all);
}

TEST_CASE("Text: Debian's fortunes read, normalise and encode", "[text]") {
  if (!fs::is_directory(default_fortunes_dir())) {
    WARN("no " << default_fortunes_dir() << " (apt-get install fortunes fortunes-min): skipped");
    return;
  }
  const auto raw = read_fortunes();
  CHECK(raw.size() > 1000);
  for (const auto& f : fortune_files()) {
    CHECK(f.find(".dat") == std::string::npos);
    CHECK(f.find("/off/") == std::string::npos);
  }
  const auto text = to_printable_ascii(raw);
  const Alphabet a = Alphabet::of_texts(text);
  CHECK(a.size() <= 97);  // 95 printable + newline + boundary
  for (const char c : a.symbols()) CHECK((c == '\n' || (c >= 0x20 && c < 0x7F)));
  const TextSplit s = split_held_out(text);
  CHECK(s.held_out.size() > text.size() / 40);
  CHECK(s.held_out.size() < text.size() / 10);
  CHECK(a.decode(a.encode(s.held_out[0])) == s.held_out[0]);
}
