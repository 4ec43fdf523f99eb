// SPDX-License-Identifier: MIT
// A forked child process with a pipe back to the parent, for the kill tests.
#pragma once

#include <catch2/catch.hpp>
#include <nnfuzz/nnfuzz.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <grp.h>
#include <sys/types.h>
#include <sys/wait.h>
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

/// Runs body() (returning a std::string) in a child process as an unprivileged user — uid and
/// gid 65534 (nobody) when this process is root, as in CI, where permission bits do not stop
/// root; this process's own user otherwise — and returns what it returned ("exception: <what>"
/// if it threw). Files the test made as root with mode 0700 are then out of the child's reach.
template <typename Body>
std::string run_unprivileged(Body body) {
  const Child c = fork_with_pipe([&](int fd) {
    std::string out;
    if (::geteuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0))
      out = "cannot drop privileges";
    else
      try {
        out = body();
      } catch (const std::exception& e) {
        out = std::string("exception: ") + e.what();
      }
    for (std::size_t at = 0; at < out.size();) {
      const ssize_t n = ::write(fd, out.data() + at, out.size() - at);
      if (n <= 0) std::_Exit(3);
      at += static_cast<std::size_t>(n);
    }
  });
  const std::string got = read_all_and_close(c.read_fd);
  int status = 0;
  ::waitpid(c.pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return got;
}

}  // namespace nnfuzz_test
