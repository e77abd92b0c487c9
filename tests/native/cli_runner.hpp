#pragma once
// Runs the built `headroom` (HEADROOM_CLI) as a user would, for the CLI tests.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include "catch.hpp"

struct CliRun {
  int code = -1;    // exit status, -1 when the process did not exit normally
  std::string out;  // what it printed
};

// `args` are passed to the shell as written (quote paths yourself). stderr is merged into `out`
// when `with_stderr`, else dropped, so JSON output parses cleanly.
inline CliRun run_cli(const std::string& args, bool with_stderr) {
  CliRun r;
  std::string cmd = std::string("'") + HEADROOM_CLI + "' " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}
