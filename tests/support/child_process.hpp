// SPDX-License-Identifier: MIT
// A forked child process with a pipe back to the parent, for the kill tests.
#pragma once

#include <catch2/catch.hpp>
#include <nnfuzz/nnfuzz.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <sys/types.h>
#include <unistd.h>

namespace nnfuzz_test {

/// A child process and the parent's end of its pipe.
struct Child {
  pid_t pid;
  int read_fd;
};

/// Runs body(write_fd) in a child process that then exits 0.
template <typename Body>
Child fork_with_pipe(Body body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    body(fds[1]);
    std::_Exit(0);
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

/// Everything a child wrote on its pipe, until it closed its end.
inline std::string read_all_and_close(int fd) {
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) got.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return got;
}

/// Callback that writes each finding's execution on a pipe, one a line, as a printer would print
/// it (pass it after the saver: what it reports must already be on disk).
struct PipeReporter {
  int fd;
  void on_finding(const nnfuzz::Finding& f, const nnfuzz::FuzzStats&) const {
    const std::string line = std::to_string(f.execution) + "\n";
    if (::write(fd, line.data(), line.size()) < 0) std::_Exit(3);
  }
};

/// The executions a PipeReporter wrote on the pipe read by `fd` (closed).
inline std::vector<std::uint64_t> read_reported(int fd) {
  const std::string got = read_all_and_close(fd);
  std::vector<std::uint64_t> reported;
  for (std::size_t at = 0, nl; (nl = got.find('\n', at)) != std::string::npos; at = nl + 1)
    reported.push_back(std::stoull(got.substr(at, nl - at)));
  return reported;
}

}  // namespace nnfuzz_test
