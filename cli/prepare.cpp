// SPDX-License-Identifier: MIT
// Model preparation: runs scripts/prepare_onnx.py (prepare.hpp) and `nnfuzz prepare IN OUT`.
#include "prepare.hpp"

#include "commands.hpp"
#include "engine.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <sstream>
#include <system_error>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace nnfuzz_cli {

namespace fs = std::filesystem;

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The last `n` non-empty lines of `text`.
std::string tail_lines(const std::string& text, int n) {
  std::vector<std::string> lines;
  std::istringstream s(text);
  for (std::string l; std::getline(s, l);)
    if (!l.empty()) lines.push_back(l);
  std::string out;
  for (std::size_t i = lines.size() > static_cast<std::size_t>(n) ? lines.size() - n : 0; i < lines.size(); ++i)
    out += (out.empty() ? "" : "\n  ") + lines[i];
  return out;
}

// Runs argv with stdout and stderr into `log`; returns the exit status (-1: killed by a signal).
int run_logged(const std::vector<std::string>& argv, const fs::path& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    throw UsageError("cannot run '" + argv[0] + "' (NNFUZZ_PYTHON selects another): " + std::strerror(rc) +
                     "; apt-get install python3-onnx python3-numpy");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw UsageError(std::string("waitpid on the preparation: ") + std::strerror(errno));
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string shape_arg(const std::vector<std::int64_t>& shape) {
  std::string s = "N";
  for (std::int64_t d : shape) s += "," + std::to_string(d);
  return s;
}

// FNV-1a, 64 bits: a cache key, not a checksum anyone relies on against tampering.
std::uint64_t fnv1a(const std::string& bytes, std::uint64_t h = 14695981039346656037ULL) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace

std::string prepare_script() {
  if (const char* v = std::getenv("NNFUZZ_PREPARE_SCRIPT")) {
    std::error_code ec;
    if (!fs::is_regular_file(v, ec))
      throw UsageError(std::string("environment variable NNFUZZ_PREPARE_SCRIPT: '") + v + "' is not a file");
    return v;
  }
  std::vector<fs::path> tried;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) tried.push_back(exe.parent_path().parent_path() / "share" / "nnfuzz" / "prepare_onnx.py");
#ifdef NNFUZZ_SOURCE_SCRIPTS
  tried.push_back(fs::path(NNFUZZ_SOURCE_SCRIPTS) / "prepare_onnx.py");
#endif
  std::string list;
  for (const fs::path& p : tried) {
    if (fs::is_regular_file(p, ec)) return p.string();
    list += (list.empty() ? "" : ", ") + p.string();
  }
  throw UsageError("the model preparation script prepare_onnx.py is not installed (looked in: " + list +
                   "); set NNFUZZ_PREPARE_SCRIPT to its path");
}

std::string prepare_python() { return env_or("NNFUZZ_PYTHON", "/usr/bin/python3"); }

void prepare_model(const std::string& in, const std::string& out, const std::vector<std::int64_t>& shape,
                   int declare_batch) {
  std::error_code ec;
  if (!fs::is_regular_file(in, ec)) throw UsageError("model file '" + in + "' does not exist or is not a file");
  if (shape.empty())
    throw UsageError("model file '" + in +
                     "': preparing it needs one input's shape: give --input-shape (e.g. 3,48,192)");
  const fs::path log = fs::temp_directory_path() / ("nnfuzz-prepare-" + std::to_string(::getpid()) + ".log");
  const int rc = run_logged({prepare_python(), prepare_script(), in, out, "--shape", shape_arg(shape), "--rw", "all",
                             "--declare-batch", std::to_string(declare_batch)},
                            log);
  const std::string text = read_all(log);
  fs::remove(log, ec);
  if (rc != 0) {
    std::string hint;
    if (text.find("No module named") != std::string::npos) hint = "; apt-get install python3-onnx python3-numpy";
    throw UsageError("preparing model file '" + in + "' for input shape " + shape_text(shape) + " failed (" +
                     prepare_script() + ", exit status " + std::to_string(rc) + "):\n  " + tail_lines(text, 4) + hint);
  }
}

std::string prepared_copy(const std::string& in, const std::vector<std::int64_t>& shape) {
  std::string root = env_or("NNFUZZ_CACHE_DIR", "");
  if (root.empty()) {
    const std::string xdg = env_or("XDG_CACHE_HOME", "");
    const std::string home = env_or("HOME", "");
    root = !xdg.empty() ? xdg + "/nnfuzz" : !home.empty() ? home + "/.cache/nnfuzz" : "";
  }
  if (root.empty()) root = (fs::temp_directory_path() / ("nnfuzz-cache-" + std::to_string(::getuid()))).string();
  const fs::path dir = fs::path(root) / "prepared";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec))
    throw UsageError("cache directory '" + dir.string() + "' (NNFUZZ_CACHE_DIR sets it) cannot be created");
  char key[17];
  std::snprintf(
      key, sizeof key, "%016llx",
      static_cast<unsigned long long>(fnv1a(read_all(prepare_script()), fnv1a(shape_arg(shape), fnv1a(read_all(in))))));
  const fs::path copy = dir / (fs::path(in).stem().string() + "-" + key + ".onnx");
  if (fs::is_regular_file(copy, ec)) return copy.string();
  // Another process may prepare the same file at once: each writes its own name, rename() is atomic.
  const fs::path tmp = copy.string() + "." + std::to_string(::getpid()) + ".tmp";
  prepare_model(in, tmp.string(), shape);
  fs::rename(tmp, copy, ec);
  if (ec) throw UsageError("cannot write the prepared copy '" + copy.string() + "': " + ec.message());
  return copy.string();
}

void add_prepare_command(CLI::App& app, Command& run) {
  struct Options {
    std::string in, out;
    std::vector<std::string> shape;
    int declare_batch = 2;
    bool check = true;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "prepare", "rewrite an exported ONNX file that OpenCV DNN refuses into one it loads and runs at any batch size");
  cmd->add_option("IN", opt->in, "the ONNX file as exported")->required();
  cmd->add_option("OUT", opt->out, "the prepared ONNX file to write")->required();
  cmd->add_option("--input-shape", opt->shape,
                  "one input's shape without the batch axis, e.g. 3,48,192 (default: from the file, when it says)")
      ->delimiter(',');
  cmd->add_option("--declare-batch", opt->declare_batch,
                  "the batch size written into the input's declared shape (OpenCV picks broadcast axes from it; "
                  "the file still runs at any batch)")
      ->check(CLI::Range(2, 4096))
      ->capture_default_str();
  cmd->add_flag("!--no-check", opt->check,
                "do not load OUT in OpenCV and compare a batch of 3 with its rows run alone");
  cmd->callback([opt, &run] {
    run = [opt] {
      std::vector<std::int64_t> shape = parse_shape(opt->shape);
      if (shape.empty()) shape = probe_opencv(opt->in).input_shape;
      if (fs::absolute(opt->in) == fs::absolute(opt->out))
        throw UsageError("nnfuzz prepare: OUT '" + opt->out + "' is IN; write the prepared model to another file");
      prepare_model(opt->in, opt->out, shape, opt->declare_batch);
      std::cout << "prepared " << opt->out << " from " << opt->in << " (input N x " << shape_text(shape) << ")\n";
      if (!opt->check) return kNothingFound;
      const ModelInfo info = probe_opencv(opt->out);
      nnfuzz::EngineOutputs select;
      select.coverage = {info.outputs.front()};
      for (std::size_t i = 1; i < info.outputs.size(); ++i) select.outputs.push_back(info.outputs[i]);
      std::unique_ptr<Backend> net;
      std::string per_row;  // why OpenCV cannot run a batch of it ("" = it can)
      try {
        net = open_opencv(opt->out, shape, select, false, [&](const std::string& why) { per_row = why; });
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("the prepared file still does not load: ") + e.what());
      }
      if (!per_row.empty()) {
        std::cout << "checked: OpenCV loads it, but it does not run batches right; nnfuzz fuzz runs it one input "
                     "per forward() (slower)\n  "
                  << per_row << "\n";
        return kNothingFound;
      }
      // A batch of 3 against its rows run alone: a preparation that baked in a batch size fails here.
      RowMatrix x(3, net->input_dim());
      std::mt19937 g(20261205);
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      for (Index i = 0; i < x.size(); ++i) x.data()[i] = u(g);
      nnfuzz::NamedOutputs all, one;
      net->evaluate(x, all);
      double worst = 0, scale = 0;
      for (Index r = 0; r < 3; ++r) {
        net->evaluate(x.row(r), one);
        for (std::size_t t = 0; t < all.tensors.size(); ++t) {
          worst = std::max(worst,
                           static_cast<double>((all.tensors[t].row(r) - one.tensors[t].row(0)).cwiseAbs().maxCoeff()));
          scale = std::max(scale, static_cast<double>(one.tensors[t].cwiseAbs().maxCoeff()));
        }
      }
      std::cout << "checked: OpenCV loads it; outputs";
      for (const std::string& n : info.outputs) std::cout << " " << n;
      std::cout << "; a batch of 3 matches its rows run alone (max |difference| " << worst << ")\n";
      if (!(worst <= 1e-4 * std::max(1.0, scale)))
        throw UsageError("the prepared file '" + opt->out +
                         "' answers differently in a batch of 3 than row by row (max |difference| " +
                         std::to_string(worst) + "): do not fuzz it at batch > 1 (--batch 1)");
      return kNothingFound;
    };
  });
}

}  // namespace nnfuzz_cli
